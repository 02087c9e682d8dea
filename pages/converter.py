"""Metric converter & glossary: one engine's number in every other engine's terms."""

import numpy as np
import streamlit as st

from specviz import figures, glossary, grids, theory, ui
from specviz.share import Param, by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

PAGE, URL = "converter", "converter"
SPEC = (
    Param("metric", "mean_tokens", "choice", choices=tuple(theory.METRICS)),
    Param("value", 2.5, "float", 0.0, 65.0),
    Param("k", 4, "int", 1, 64),
    Param("conv", "c", "choice", choices=tuple(grids.C_CONVENTIONS)),
    Param("ratio", 8.0, "float", 1e-3, 1e4),
)
P = by_key(SPEC)


st.title("Metric converter & glossary")
st.caption(
    "Engines report the same acceptance behaviour under different names and definitions. Enter any one "
    "of them with K and read off the rest (i.i.d. model with per-token acceptance α)."
)
ui.restore(PAGE, SPEC)

# Laid out top to bottom: inputs, numbers, chart; sent chart first (the widgets' values are in session_state
# already), so a fresh browser starts loading plotly before any other element (docs/performance.md).
inputs, numbers = st.container(), st.container()
view = ui.values(PAGE, SPEC)
try:
    converted = theory.convert_metric(view["value"], view["k"], view["metric"])
except ValueError as exc:
    with numbers:
        ui.show_error(exc)
else:
    alpha, k = float(converted["alpha"]), view["k"]
    grid = np.linspace(0.0, 1.0, 201)
    series = {theory.METRICS[m].label: y for m, y in theory.convert_metric(grid, k, "alpha").items()}
    point = {theory.METRICS[m].label: float(y) for m, y in converted.items()}
    st.plotly_chart(figures.metrics_vs_alpha(grid, series, point), key="fig_metrics")
    with numbers:
        cols = st.columns(len(converted))
        for col, (name, value) in zip(cols, converted.items(), strict=True):
            m = theory.METRICS[name]
            col.metric(m.label, f"{float(value):.4f}", help=f"{m.description}; range {m.allowed}")
        st.caption(
            f"E[N] = {float(converted['mean_tokens']):.4f} tokens per round at K = {k} ⇔ α = {alpha:.4f}. "
            "Per-position view: a vLLM per-position acceptance rate at position i (0-based) is α^(i+1) = "
            + ", ".join(f"{alpha ** (i + 1):.3f}" for i in range(min(k, 8)))
            + ("…" if k > 8 else "")
            + "."
        )

col_metric, col_value, col_k = inputs.columns([2, 1, 1])
with col_metric:
    ui.selectbox(
        PAGE,
        P["metric"],
        "I have this metric",
        format_func=lambda m: f"{theory.METRICS[m].label} — {theory.METRICS[m].description}",
    )
with col_value:
    ui.number_input(
        PAGE,
        P["value"],
        "value",
        step=0.01,
        format="%.4f",
        help="Allowed range depends on the metric and K: "
        + "; ".join(f"{m.label}: {m.allowed}" for m in theory.METRICS.values()),
    )
with col_k:
    ui.number_input(PAGE, P["k"], "K (draft length)")

st.subheader("Speed ratio conventions")
col_conv, col_ratio = st.columns(2)
with col_conv:
    ui.radio(PAGE, P["conv"], "I have", format_func=grids.C_CONVENTIONS.get, horizontal=True)
with col_ratio:
    ui.number_input(PAGE, P["ratio"], "value", format="%.4g")
view = ui.values(PAGE, SPEC)
try:
    c = float(grids.to_c(view["ratio"], view["conv"]))
except ValueError as exc:
    ui.show_error(exc)
else:
    c1, c2 = st.columns(2)
    c1.metric("c = T_target / T_draft (specviz)", f"{c:.4g}")
    c2.metric("c_L = T_draft / T_target (Leviathan et al.)", f"{float(theory.c_to_leviathan(c)):.4g}")

st.subheader("Glossary: what each engine calls it")
ui.static_table(glossary.engine_terms())

ui.publish(PAGE, SPEC, URL)

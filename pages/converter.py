"""Metric converter & glossary: one engine's number in every other engine's terms."""

import numpy as np
import streamlit as st

from specviz.app import figures, grids, router, ui
from specviz.app.share import Param, by_key
from specviz.core import glossary, theory

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)


def label(metric: str) -> str:
    """A metric's short name in the session's language."""
    return ui.t(f"metric.{metric}.label")


def glossary_table():
    """The glossary with its definitions and headers in the session's language (engine terms stay as engines spell them)."""
    table = glossary.engine_terms()
    for column in ("definition", "ours"):
        table[column] = [ui.t(f"glossary.{i}.{column}") for i in range(len(table))]
    return table.rename(columns={col: ui.t(f"glossary.col.{col}") for col in table.columns})


PAGE, URL = "converter", "converter"
SPEC = (
    Param("metric", "mean_tokens", "choice", choices=tuple(theory.METRICS)),
    Param("value", 2.5, "float", 0.0, 65.0),
    Param("k", 4, "int", 1, 64),
    Param("conv", "c", "choice", choices=tuple(grids.C_CONVENTIONS)),
    Param("ratio", 8.0, "float", 1e-3, 1e4),
)
P = by_key(SPEC)


st.title(ui.t("conv.title"))
st.caption(ui.t("conv.intro"))
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
    series = {label(m): y for m, y in theory.convert_metric(grid, k, "alpha").items()}
    point = {label(m): float(y) for m, y in converted.items()}
    fig = figures.metrics_vs_alpha(grid, series, point, lang=ui.language())
    fig.update_layout(xaxis_title=ui.t("conv.axis_alpha"), yaxis_title=ui.t("conv.axis_value"))
    ui.chart(fig, key="fig_metrics")
    with numbers:
        cols = st.columns(len(converted))
        for col, (name, value) in zip(cols, converted.items(), strict=True):
            col.metric(
                label(name),
                f"{float(value):.4f}",
                help=ui.t(
                    "conv.metric_help", what=ui.t(f"metric.{name}.description"), range=theory.METRICS[name].allowed
                ),
            )
        st.caption(
            ui.t(
                "conv.per_position",
                en=f"{float(converted['mean_tokens']):.4f}",
                k=k,
                alpha=f"{alpha:.4f}",
                rates=", ".join(f"{alpha ** (i + 1):.3f}" for i in range(min(k, 8))) + ("…" if k > 8 else ""),
            )
        )

col_metric, col_value, col_k = inputs.columns([2, 1, 1])
with col_metric:
    ui.selectbox(
        PAGE,
        P["metric"],
        ui.t("conv.have_metric"),
        format_func=lambda m: f"{label(m)} — {ui.t(f'metric.{m}.description')}",
    )
with col_value:
    ui.number_input(
        PAGE,
        P["value"],
        ui.t("conv.value"),
        step=0.01,
        format="%.4f",
        help=ui.t("conv.value_help", ranges="; ".join(f"{label(n)}: {m.allowed}" for n, m in theory.METRICS.items())),
    )
with col_k:
    ui.number_input(PAGE, P["k"], ui.t("conv.k"))

st.subheader(ui.t("conv.conventions"))
col_conv, col_ratio = st.columns(2)
with col_conv:
    ui.radio(PAGE, P["conv"], ui.t("conv.have"), format_func=lambda v: ui.t(f"conv.convention.{v}"), horizontal=True)
with col_ratio:
    ui.number_input(PAGE, P["ratio"], ui.t("conv.value"), format="%.4g")
view = ui.values(PAGE, SPEC)
try:
    c = float(grids.to_c(view["ratio"], view["conv"]))
except ValueError as exc:
    ui.show_error(exc)
else:
    c1, c2 = st.columns(2)
    c1.metric(ui.t("conv.c_ours"), f"{c:.4g}")
    c2.metric(ui.t("conv.c_l"), f"{float(theory.c_to_leviathan(c)):.4g}")

st.subheader(ui.t("conv.glossary"))
ui.static_table(glossary_table())

ui.publish(PAGE, SPEC, URL)

"""Metric converter & glossary: one engine's number in every other engine's terms."""

import streamlit as st

from specviz.app import figures, router, ui
from specviz.app.scenarios import converter as scenarios
from specviz.app.scenarios.converter import SPEC
from specviz.app.share import by_key
from specviz.base.i18n import N_
from specviz.core import glossary, theory

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)


METRICS = {  # metric -> (short name, description)
    "alpha": (N_("α"), N_("per-token acceptance probability")),
    "acceptance_rate": (
        N_("draft acceptance rate"),
        N_("accepted / drafted draft tokens (vLLM draft acceptance rate, llama.cpp accept %)"),
    ),
    "mean_tokens": (
        N_("mean acceptance length"),
        N_("tokens per round, bonus token counted = E[N] (vLLM, SGLang accept len, Spec-Bench)"),
    ),
    "mean_tokens_no_bonus": (
        N_("accepted drafts per round"),
        N_("mean acceptance length without the bonus token = E[N] − 1"),
    ),
    "system_efficiency": (
        N_("system efficiency"),
        N_("E[N] / (K + 1) (vLLM V0 system efficiency, SGLang chain accept rate)"),
    ),
}
GLOSSARY_COLUMNS = {
    "name": N_("name"),
    "metric": N_("metric"),
    "stack": N_("serving stack"),
    "definition": N_("definition"),
    "ours": N_("ours"),
}


def label(metric: str) -> str:
    """A metric's short name in the session's language."""
    return ui.t(METRICS[metric][0])


def description(metric: str) -> str:
    """What a metric measures, in the session's language."""
    return ui.t(METRICS[metric][1])


def glossary_table():
    """The glossary with its definitions and headers in the session's language (each stack's terms as it spells them)."""
    table = glossary.stack_terms()
    table["stack"] = [ui.t(text) for text in table["stack"]]  # names, and a few words around some
    table["definition"] = [ui.t(text) for text in table["definition"]]
    table["ours"] = [ui.t(text) for text in table["ours"]]
    return table.rename(columns={col: ui.t(GLOSSARY_COLUMNS[col]) for col in table.columns})


PAGE, URL = scenarios.PAGE, "converter"
P = by_key(SPEC)


st.title(ui.t("Metric converter & glossary"))
st.caption(
    ui.t(
        "Serving stacks report the same acceptance behaviour under different names and definitions. Enter any one of them with K and read off the rest (i.i.d. model with per-token acceptance α)."
    )
)
ui.restore(PAGE, SPEC)

# Laid out top to bottom: inputs, numbers, chart; sent chart first (the widgets' values are in session_state
# already), so a fresh browser starts loading plotly before any other element (docs/performance.md).
inputs, numbers = st.container(), st.container()
s = scenarios.scenario(ui.values(PAGE, SPEC))
try:
    converted = scenarios.converted(s)
except ValueError as exc:
    with numbers:
        ui.show_error(exc)
else:
    alpha, k = float(converted["alpha"]), s.k
    grid, curves = scenarios.curves(k)
    series = {label(m): y for m, y in curves.items()}
    point = {label(m): float(y) for m, y in converted.items()}
    fig = figures.metrics_vs_alpha(grid, series, point, lang=ui.language())
    fig.update_layout(xaxis_title=ui.t("α (per-token acceptance)"), yaxis_title=ui.t(N_("value")))
    ui.chart(fig, key="fig_metrics")
    with numbers:
        cols = st.columns(len(converted))
        for col, (name, value) in zip(cols, converted.items(), strict=True):
            col.metric(
                label(name),
                f"{float(value):.4f}",
                help=ui.t("{what}; range {range}", what=description(name), range=theory.METRICS[name].allowed),
            )
        st.caption(
            ui.t(
                "E[N] = {en} tokens per round at K = {k} ⇔ α = {alpha}. Per-position view: a vLLM per-position acceptance rate at position i (0-based) is α^(i+1) = {rates}.",
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
        format_func=lambda m: f"{label(m)} — {description(m)}",
    )
with col_value:
    ui.number_input(
        PAGE,
        P["value"],
        step=0.01,
        format="%.4f",
        help=ui.t(
            "Allowed range depends on the metric and K: {ranges}",
            ranges="; ".join(f"{label(n)}: {m.allowed}" for n, m in theory.METRICS.items()),
        ),
    )
with col_k:
    ui.number_input(PAGE, P["k"])

st.subheader(ui.t("Speed ratio conventions"))
col_conv, col_ratio = st.columns(2)
with col_conv:
    ui.radio(PAGE, P["conv"], horizontal=True)
with col_ratio:
    ui.number_input(PAGE, P["ratio"], format="%.4g")
try:
    c, c_l = scenarios.ratios(scenarios.scenario(ui.values(PAGE, SPEC)))
except ValueError as exc:
    ui.show_error(exc)
else:
    c1, c2 = st.columns(2)
    c1.metric(ui.t("c = T_target / T_draft (specviz)"), f"{c:.4g}")
    c2.metric(ui.t("c_L = T_draft / T_target (Leviathan et al.)"), f"{c_l:.4g}")

st.subheader(ui.t("Glossary: what each serving stack calls it"))
ui.static_table(
    glossary_table(),
    {ui.t("metric"): ui.Col(missing=N_("not one of the converter's inputs"))},
    code=(ui.t(GLOSSARY_COLUMNS["name"]), ui.t(GLOSSARY_COLUMNS["metric"])),
)

ui.publish(PAGE, SPEC, URL)

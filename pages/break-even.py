"""Break-even & optimal K: where speculation stops paying, and the best draft length."""

import numpy as np
import streamlit as st

from specviz.app import figures, grids, router, ui
from specviz.app.share import Param, by_key
from specviz.core import chapter, theory

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "breakeven", "break-even"
N_ALPHA, N_C = 201, 121  # grid resolution (α axis, c axis)
SPEC = (
    Param("conv", "c", "choice", choices=tuple(grids.C_CONVENTIONS)),
    Param("curves", [2.0, 4.0, 8.0, 16.0, 32.0], "floats", 1e-3, 1e4, max_items=16),
    Param("k_max", 32, "int", 2, 64),
    Param("c_min", 0.5, "float", 1e-3, 1e4, log=True),
    Param("c_max", 100.0, "float", 1e-3, 1e4, log=True),
    Param("v", 0.0, "float", 0.0, 2.0),
    Param("o", 0.0, "float", 0.0, 5.0),
    Param("f_alpha", 0.8, "float", 0.0, 1.0),
    Param("f_c", 10.0, "float", 1e-3, 1e4, log=True),
    Param("opt_map", "K*(α, c)", "choice", choices=("K*(α, c)", "Speedup at K*")),
    Param("view", "Break-even frontier", "choice", choices=("Break-even frontier", "Optimal K", "Chapter numbers")),
)
P = by_key(SPEC)
CURVE_CHOICES = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 16.0, 32.0, 64.0, 100.0]


def key(name: str) -> str:
    return ui.key(PAGE, name)


def flip_convention() -> None:
    """Keep every speed-ratio control meaning the same ratio when the convention flips."""
    s = st.session_state
    s[key("c_min")], s[key("c_max")] = 1.0 / s[key("c_max")], 1.0 / s[key("c_min")]
    s[key("f_c")] = 1.0 / s[key("f_c")]


@ui.cached
def frontier(k_max, curves, conv, v, o):
    ks = np.arange(1, k_max + 1)
    return ks, {f"{conv} = {x:g}": theory.break_even_alpha(ks, float(grids.to_c(x, conv)), v, o) for x in curves}


@ui.cached
def frontier_map(k_max, c_lo, c_hi, conv, v, o):
    return grids.break_even_grid(np.arange(1, k_max + 1), grids.log_axis(c_lo, c_hi, N_C, conv), conv, v, o)


@ui.cached
def optimum_maps(c_lo, c_hi, conv, k_max, v, o):
    alpha = np.linspace(0.0, 1.0, N_ALPHA)
    return grids.optimal_k_grids(alpha, grids.log_axis(c_lo, c_hi, N_C, conv), conv, k_max, v, o)


CHAPTER_COLUMNS = {
    f"be.col.{name}"
    for name in (
        "E[N] chapter",
        "E[N] computed",
        "speedup chapter",
        "speedup computed",
        "matches",
        "quantity",
        "chapter",
        "computed",
    )
}


def headed(table):
    """A chapter table with its headers (and row names) in the session's language; α, c, K stay symbols."""
    table = table.rename(columns={c: ui.t(f"be.col.{c}") for c in table.columns if f"be.col.{c}" in CHAPTER_COLUMNS})
    matches = ui.t("be.col.matches")
    table[matches] = [ui.t("be.yes") if m else ui.t("be.no") for m in table[matches]]
    quantity = ui.t("be.col.quantity")
    if quantity in table.columns:
        names = {"speedup, K = 4": "be.q.speedup_k4", "speedup, K = 8": "be.q.speedup_k8"}
        table[quantity] = [ui.t(names[q]) if q in names else q for q in table[quantity]]
    return table


def sidebar_controls(conv: str) -> None:
    """The controls, drawn after the open tab (their values are read from session_state before)."""
    with st.sidebar:
        st.header(ui.t("be.controls"))
        ui.radio(
            PAGE,
            P["conv"],
            ui.t("common.convention"),
            on_change=flip_convention,
            format_func=lambda v: ui.t(f"conv.convention.{v}"),
        )
        ui.multiselect(PAGE, P["curves"], ui.t("be.curves", conv=conv), CURVE_CHOICES, accept_new_options=True)
        ui.slider(PAGE, P["k_max"], ui.t("be.k_max"))
        c_min_col, c_max_col = st.columns(2)
        with c_min_col:
            ui.number_input(PAGE, P["c_min"], ui.t("common.min", conv=conv), format="%.4g")
        with c_max_col:
            ui.number_input(PAGE, P["c_max"], ui.t("common.max", conv=conv), format="%.4g")
        st.subheader(ui.t("common.cost_model"))
        ui.number_input(PAGE, P["v"], ui.t("common.v"), step=0.01, format="%.3f")
        ui.number_input(PAGE, P["o"], ui.t("common.o"), step=0.05, format="%.3f")


def frontier_tab(view: dict, conv: str) -> None:
    """α*(K, c): curves for chosen c and the map over (K, c), side by side."""
    try:
        curves = sorted({float(x) for x in view["curves"]})
    except TypeError as exc:
        raise ValueError(ui.t("be.curves_not_numbers", error=exc)) from exc
    ks, alpha_star = frontier(view["k_max"], curves, conv, view["v"], view["o"])
    be_map = frontier_map(view["k_max"], view["c_min"], view["c_max"], conv, view["v"], view["o"])
    left, right = st.columns(2)
    with left:
        ui.chart(figures.break_even_curves(ks, alpha_star, lang=ui.language()), key="fig_curves")
        st.caption(ui.t("be.curves_caption"))
    with right:
        ui.chart(figures.break_even_map(be_map, lang=ui.language()), key="fig_be_map")
        ui.csv_download(ui.t("be.dl_frontier"), be_map.tidy, "break_even.csv", key="dl_be")


def optimum_tab(view: dict, conv: str) -> None:
    """K*(α, c) or the speedup at K* (one map at a time, chosen by a radio), then f(K) for one (α, c)."""
    v, o, k_max = view["v"], view["o"], view["k_max"]
    k_map, s_map = optimum_maps(view["c_min"], view["c_max"], conv, k_max, v, o)
    opt_radio = st.empty()  # filled after the map: a fresh browser loads plotly before the radio's code
    if view["opt_map"] == "K*(α, c)":
        ui.chart(figures.optimal_k_map(k_map, lang=ui.language()), key="fig_kstar")
    else:
        ui.chart(
            figures.grid_figure(s_map, break_even=True, title=ui.t("be.s_at_kstar"), lang=ui.language()),
            key="fig_sstar",
        )
    with opt_radio:
        ui.radio(
            PAGE,
            P["opt_map"],
            ui.t("be.map"),
            horizontal=True,
            label_visibility="collapsed",
            format_func=lambda v: ui.t("be.s_at_kstar") if v == "Speedup at K*" else v,
        )
    ui.csv_download(
        ui.t("be.dl_kstar"),
        lambda: k_map.tidy().assign(speedup_at_optimal_k=s_map.z.ravel()),
        "optimal_k.csv",
        key="dl_kstar",
    )

    st.subheader(ui.t("be.f_of_k"))
    col_a, col_c = st.columns(2)
    with col_a:
        ui.number_input(PAGE, P["f_alpha"], "α", step=0.01, format="%.4f")
    with col_c:
        ui.number_input(PAGE, P["f_c"], conv, format="%.4g")
    alpha, c = ui.values(PAGE, SPEC)["f_alpha"], float(grids.to_c(ui.values(PAGE, SPEC)["f_c"], conv))
    ks = np.arange(1, k_max + 1)
    s_of_k = theory.speedup(alpha, c, ks, v, o)
    best = theory.optimal_k(alpha, c, k_max, v, o)
    k_star = int(best.k)
    if k_star == 0:
        st.metric(
            ui.t("be.optimal_k"),
            ui.t("be.dont"),
            delta=ui.t("be.best_below", k_max=k_max, s=f"{float(s_of_k.max()):.3f}"),
            delta_color="off",
        )
    else:
        st.metric(ui.t("be.optimal_k"), str(k_star), delta=f"S = {float(best.speedup):.3f}×", delta_color="off")
    ui.chart(figures.speedup_vs_k(ks, s_of_k, k_star, float(best.speedup), lang=ui.language()), key="fig_fk")


def chapter_tab(view: dict, conv: str) -> None:
    """The source chapter's printed values beside the same quantities from specviz.core.theory (no control applies)."""
    st.caption(ui.t("be.chapter_caption"))
    numbers = {"α": "g", "c": "g", "computed": ".4f", "E[N] computed": ".4f", "speedup computed": ".4f"}
    numbers = {
        ui.t(f"be.col.{name}") if f"be.col.{name}" in CHAPTER_COLUMNS else name: f for name, f in numbers.items()
    }
    t44, ex2 = st.columns(2)
    with t44:
        st.markdown(ui.t("be.t44"))
        ui.static_table(headed(chapter.table_4_4()), numbers)
    with ex2:
        st.markdown(ui.t("be.ex2"))
        ui.static_table(headed(chapter.exercise_2()), numbers)
    st.markdown(ui.t("be.t53"))
    ui.static_table(headed(chapter.table_5_3()), numbers)


TABS = {"Break-even frontier": frontier_tab, "Optimal K": optimum_tab, "Chapter numbers": chapter_tab}

st.title(ui.t("be.title"))
st.caption(ui.t("be.intro"))
ui.restore(PAGE, SPEC)

conv = st.session_state[key("conv")]
# One tab's content per script run (lazy tabs): a link opens with the frontier's two charts to draw.
TAB_KEYS = {
    "Break-even frontier": "be.tab.frontier",
    "Optimal K": "be.tab.optimum",
    "Chapter numbers": "be.tab.chapter",
}
ui.show_open_tab(PAGE, P["view"], TABS, ui.values(PAGE, SPEC), conv, format_func=lambda v: ui.t(TAB_KEYS[v]))
# The controls are sent after the open tab's charts: a fresh browser loads plotly's code first.
sidebar_controls(conv)
ui.publish(PAGE, SPEC, URL)

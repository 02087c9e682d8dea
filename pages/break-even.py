"""Break-even & optimal K: where speculation stops paying, and the best draft length."""

import numpy as np
import streamlit as st

from specviz import chapter, figures, grids, theory, ui
from specviz.share import Param, by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

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


def sidebar_controls(conv: str) -> None:
    """The controls, drawn after the open tab (their values are read from session_state before)."""
    with st.sidebar:
        st.header("Controls")
        ui.radio(
            PAGE, P["conv"], "Speed-ratio convention", on_change=flip_convention, format_func=grids.C_CONVENTIONS.get
        )
        ui.multiselect(
            PAGE, P["curves"], f"{conv} values for the frontier curves", CURVE_CHOICES, accept_new_options=True
        )
        ui.slider(PAGE, P["k_max"], "K max")
        c_min_col, c_max_col = st.columns(2)
        with c_min_col:
            ui.number_input(PAGE, P["c_min"], f"{conv} min", format="%.4g")
        with c_max_col:
            ui.number_input(PAGE, P["c_max"], f"{conv} max", format="%.4g")
        st.subheader("Measured-cost model")
        ui.number_input(PAGE, P["v"], "v — extra verify cost per drafted token", step=0.01, format="%.3f")
        ui.number_input(PAGE, P["o"], "o — fixed overhead per round (target steps)", step=0.05, format="%.3f")


def frontier_tab(view: dict, conv: str) -> None:
    """α*(K, c): curves for chosen c and the map over (K, c), side by side."""
    try:
        curves = sorted({float(x) for x in view["curves"]})
    except TypeError as exc:
        raise ValueError(f"frontier values must be numbers: {exc}") from exc
    ks, alpha_star = frontier(view["k_max"], curves, conv, view["v"], view["o"])
    be_map = frontier_map(view["k_max"], view["c_min"], view["c_max"], conv, view["v"], view["o"])
    left, right = st.columns(2)
    with left:
        st.plotly_chart(figures.break_even_curves(ks, alpha_star), key="fig_curves")
        st.caption(
            "Above a curve speculation is faster than the target alone. A curve that stops or is missing "
            "never pays off at those K (in the basic model: whenever c ≤ 1)."
        )
    with right:
        st.plotly_chart(figures.break_even_map(be_map), key="fig_be_map")
        ui.csv_download("Download α*(K, c) (CSV)", be_map.tidy, "break_even.csv", key="dl_be")


def optimum_tab(view: dict, conv: str) -> None:
    """K*(α, c) or the speedup at K* (one map at a time, chosen by a radio), then f(K) for one (α, c)."""
    v, o, k_max = view["v"], view["o"], view["k_max"]
    k_map, s_map = optimum_maps(view["c_min"], view["c_max"], conv, k_max, v, o)
    opt_radio = st.empty()  # filled after the map: a fresh browser loads plotly before the radio's code
    if view["opt_map"] == "K*(α, c)":
        st.plotly_chart(figures.optimal_k_map(k_map), key="fig_kstar")
    else:
        st.plotly_chart(figures.grid_figure(s_map, break_even=True, title="Speedup at K*"), key="fig_sstar")
    with opt_radio:
        ui.radio(PAGE, P["opt_map"], "Map", horizontal=True, label_visibility="collapsed")
    ui.csv_download(
        "Download K* and S(K*) (CSV)",
        lambda: k_map.tidy().assign(speedup_at_optimal_k=s_map.z.ravel()),
        "optimal_k.csv",
        key="dl_kstar",
    )

    st.subheader("f(K) for one (α, c)")
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
            "Optimal K",
            "don't speculate",
            delta=f"best S over K = 1..{k_max} is {float(s_of_k.max()):.3f}× ≤ 1",
            delta_color="off",
        )
    else:
        st.metric("Optimal K", str(k_star), delta=f"S = {float(best.speedup):.3f}×", delta_color="off")
    st.plotly_chart(figures.speedup_vs_k(ks, s_of_k, k_star, float(best.speedup)), key="fig_fk")


def chapter_tab(view: dict, conv: str) -> None:
    """The source chapter's printed values beside the same quantities from specviz.theory (no control applies)."""
    st.caption("Printed values from the source chapter beside the same quantities from specviz.theory.")
    numbers = {"α": "g", "c": "g", "computed": ".4f", "E[N] computed": ".4f", "speedup computed": ".4f"}
    t44, ex2 = st.columns(2)
    with t44:
        st.markdown("**Table 4.4 — E[N]**")
        ui.static_table(chapter.table_4_4(), numbers)
    with ex2:
        st.markdown("**Exercise 2 — c = 8, α = 0.7**")
        ui.static_table(chapter.exercise_2(), numbers)
    st.markdown("**Table 5.3 — speedup**")
    ui.static_table(chapter.table_5_3(), numbers)


TABS = {"Break-even frontier": frontier_tab, "Optimal K": optimum_tab, "Chapter numbers": chapter_tab}

st.title("Break-even & optimal K")
st.caption(
    "Speculation pays only when E[N] > 1 + vK + o + K/c. These views show where that line runs and "
    "which draft length K gets the most out of a given (α, c)."
)
ui.restore(PAGE, SPEC)

conv = st.session_state[key("conv")]
# One tab's content per script run (lazy tabs): a link opens with the frontier's two charts to draw.
ui.show_open_tab(PAGE, P["view"], TABS, ui.values(PAGE, SPEC), conv)
# The controls are sent after the open tab's charts: a fresh browser loads plotly's code first.
sidebar_controls(conv)
ui.publish(PAGE, SPEC, URL)

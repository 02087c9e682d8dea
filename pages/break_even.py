"""Break-even & optimal K: where speculation stops paying, and the best draft length."""

import numpy as np
import streamlit as st

from specviz import chapter, figures, grids, theory, ui
from specviz.share import Param

PAGE, URL = "breakeven", "break-even"
N_ALPHA, N_C = 201, 121  # grid resolution (α axis, c axis)
SPEC = (
    Param("conv", "c", "choice", choices=tuple(grids.C_CONVENTIONS)),
    Param("curves", [2.0, 4.0, 8.0, 16.0, 32.0], "floats", 1e-3, 1e4),
    Param("k_max", 32, "int", 2, 64),
    Param("c_min", 0.5, "float", 1e-3, 1e4, log=True),
    Param("c_max", 100.0, "float", 1e-3, 1e4, log=True),
    Param("v", 0.0, "float", 0.0, 2.0),
    Param("o", 0.0, "float", 0.0, 5.0),
    Param("f_alpha", 0.8, "float", 0.0, 1.0),
    Param("f_c", 10.0, "float", 1e-3, 1e4, log=True),
)
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


st.title("Break-even & optimal K")
st.caption(
    "Speculation pays only when E[N] > 1 + vK + o + K/c. These views show where that line runs and "
    "which draft length K gets the most out of a given (α, c)."
)
ui.restore(PAGE, SPEC)

with st.sidebar:
    st.header("Controls")
    st.radio(
        "Speed-ratio convention",
        SPEC[0].choices,
        key=key("conv"),
        on_change=flip_convention,
        format_func=grids.C_CONVENTIONS.get,
    )
    conv = st.session_state[key("conv")]
    st.multiselect(f"{conv} values for the frontier curves", CURVE_CHOICES, key=key("curves"), accept_new_options=True)
    st.slider("K max", 2, 64, key=key("k_max"))
    c_min_col, c_max_col = st.columns(2)
    c_min_col.number_input(f"{conv} min", 1e-3, 1e4, key=key("c_min"), format="%.4g")
    c_max_col.number_input(f"{conv} max", 1e-3, 1e4, key=key("c_max"), format="%.4g")
    st.subheader("Measured-cost model")
    st.number_input("v — extra verify cost per drafted token", 0.0, 2.0, key=key("v"), step=0.01, format="%.3f")
    st.number_input("o — fixed overhead per round (target steps)", 0.0, 5.0, key=key("o"), step=0.05, format="%.3f")

view = ui.values(PAGE, SPEC)
v, o = view["v"], view["o"]
try:
    curves = sorted({float(x) for x in view["curves"]})
    ks, alpha_star = frontier(view["k_max"], curves, conv, v, o)
    be_map = frontier_map(view["k_max"], view["c_min"], view["c_max"], conv, v, o)
    k_map, s_map = optimum_maps(view["c_min"], view["c_max"], conv, view["k_max"], v, o)
except (ValueError, TypeError) as exc:
    ui.show_error(exc if isinstance(exc, ValueError) else ValueError(f"frontier values must be numbers: {exc}"))
    ui.publish(PAGE, SPEC, URL)
    st.stop()

st.header("Break-even frontier α*(K, c)")
left, right = st.columns(2)
with left:
    st.plotly_chart(figures.break_even_curves(ks, alpha_star), key="fig_curves")
    st.caption(
        "Above a curve speculation is faster than the target alone. A curve that stops or is missing "
        "never pays off at those K (in the basic model: whenever c ≤ 1)."
    )
with right:
    st.plotly_chart(figures.break_even_map(be_map), key="fig_be_map")
    st.download_button(
        "Download α*(K, c) (CSV)", be_map.tidy().to_csv(index=False), "break_even.csv", "text/csv", key="dl_be"
    )

st.header("Optimal draft length K*(α, c)")
left, right = st.columns(2)
with left:
    st.plotly_chart(figures.optimal_k_map(k_map), key="fig_kstar")
    st.download_button(
        "Download K* and S(K*) (CSV)",
        k_map.tidy().assign(speedup_at_optimal_k=s_map.z.ravel()).to_csv(index=False),
        "optimal_k.csv",
        "text/csv",
        key="dl_kstar",
    )
with right:
    st.plotly_chart(figures.grid_figure(s_map, break_even=True, title="Speedup at K*"), key="fig_sstar")

st.subheader("f(K) for one (α, c)")
col_a, col_c = st.columns(2)
col_a.number_input("α", 0.0, 1.0, key=key("f_alpha"), step=0.01, format="%.4f")
col_c.number_input(conv, 1e-3, 1e4, key=key("f_c"), format="%.4g")
view = ui.values(PAGE, SPEC)
try:
    c = float(grids.to_c(view["f_c"], conv))
    s_of_k = theory.speedup(view["f_alpha"], c, ks, v, o)
    best = theory.optimal_k(view["f_alpha"], c, view["k_max"], v, o)
except ValueError as exc:
    ui.show_error(exc)
else:
    k_star = int(best.k)
    if k_star == 0:
        st.metric(
            "Optimal K",
            "don't speculate",
            delta=f"best S over K = 1..{view['k_max']} is {float(s_of_k.max()):.3f}× ≤ 1",
            delta_color="off",
        )
    else:
        st.metric("Optimal K", str(k_star), delta=f"S = {float(best.speedup):.3f}×", delta_color="off")
    st.plotly_chart(figures.speedup_vs_k(ks, s_of_k, k_star, float(best.speedup)), key="fig_fk")

st.header("The chapter's numbers, recomputed")
st.caption("Printed values from the source chapter beside the same quantities from specviz.theory.")
NUMBER = st.column_config.NumberColumn(format="%.4f")
t44, ex2 = st.columns(2)
t44.markdown("**Table 4.4 — E[N]**")
t44.dataframe(chapter.table_4_4(), hide_index=True, key="tab44", column_config={"E[N] computed": NUMBER})
ex2.markdown("**Exercise 2 — c = 8, α = 0.7**")
ex2.dataframe(chapter.exercise_2(), hide_index=True, key="ex2", column_config={"computed": NUMBER})
st.markdown("**Table 5.3 — speedup**")
st.dataframe(
    chapter.table_5_3(),
    hide_index=True,
    key="tab53",
    column_config={"E[N] computed": NUMBER, "speedup computed": NUMBER},
)

ui.publish(PAGE, SPEC, URL)

"""Design space: E[N] and speedup maps over α, K and c, and a point inspector."""

import streamlit as st

from specviz import figures, grids, theory, ui
from specviz.share import Param

PAGE, URL = "design", "design-space"
N_ALPHA, N_C = 201, 121  # grid resolution (α axis, c axis)
C_KEYS = ("c_min", "c_max", "c_fix", "i_c")  # controls holding a speed ratio in the chosen convention
SPEC = (
    Param("view", "Heatmap", "choice", choices=("Heatmap", "3-D surface")),
    Param("conv", "c", "choice", choices=tuple(grids.C_CONVENTIONS)),
    Param("alpha", (0.0, 1.0), "range", 0.0, 1.0),
    Param("c_min", 1.0, "float", 1e-3, 1e4, log=True),
    Param("c_max", 100.0, "float", 1e-3, 1e4, log=True),
    Param("k", 4, "int", 1, 64),
    Param("k_max", 16, "int", 2, 64),
    Param("c_fix", 8.0, "float", 1e-3, 1e4, log=True),
    Param("v", 0.0, "float", 0.0, 2.0),
    Param("o", 0.0, "float", 0.0, 5.0),
    Param("i_alpha", 0.8, "float", 0.0, 1.0),
    Param("i_c", 10.0, "float", 1e-3, 1e4, log=True),
    Param("i_k", 4, "int", 1, 64),
)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def flip_convention() -> None:
    """Keep every speed-ratio control meaning the same ratio when the convention flips."""
    s = st.session_state
    s[key("c_min")], s[key("c_max")] = 1.0 / s[key("c_max")], 1.0 / s[key("c_min")]
    for name in ("c_fix", "i_c"):
        s[key(name)] = 1.0 / s[key(name)]


@ui.cached
def expected_tokens_map(a_lo, a_hi, k_max):
    return grids.expected_tokens_grid(grids.lin_axis(a_lo, a_hi, N_ALPHA, "α"), grids.np.arange(1, k_max + 1))


@ui.cached
def speedup_c_map(a_lo, a_hi, c_lo, c_hi, conv, k, v, o):
    alpha, c = grids.lin_axis(a_lo, a_hi, N_ALPHA, "α"), grids.log_axis(c_lo, c_hi, N_C, conv)
    return grids.speedup_alpha_c_grid(alpha, c, conv, k, v, o)


@ui.cached
def speedup_k_map(a_lo, a_hi, k_max, c, v, o):
    return grids.speedup_alpha_k_grid(grids.lin_axis(a_lo, a_hi, N_ALPHA, "α"), grids.np.arange(1, k_max + 1), c, v, o)


st.title("Design space")
st.caption("How E[N] and the speedup depend on α, K and c. Black line: S = 1 — left of it speculation is slower.")
ui.restore(PAGE, SPEC)

with st.sidebar:
    st.header("Maps")
    st.radio("Chart type", SPEC[0].choices, key=key("view"), horizontal=True)
    st.radio(
        "Speed-ratio convention",
        SPEC[1].choices,
        key=key("conv"),
        on_change=flip_convention,
        format_func=grids.C_CONVENTIONS.get,
    )
    conv = st.session_state[key("conv")]
    st.slider("α range", 0.0, 1.0, key=key("alpha"), step=0.01)
    c_min_col, c_max_col = st.columns(2)
    c_min_col.number_input(f"{conv} min", 1e-3, 1e4, key=key("c_min"), format="%.4g")
    c_max_col.number_input(f"{conv} max", 1e-3, 1e4, key=key("c_max"), format="%.4g")
    st.slider("K for the (α, c) map", 1, 64, key=key("k"))
    st.slider("K max for the (α, K) maps", 2, 64, key=key("k_max"))
    st.number_input(f"{conv} for the (α, K) map", 1e-3, 1e4, key=key("c_fix"), format="%.4g")
    st.subheader("Measured-cost model")
    st.caption("S = E[N] / (1 + vK + o + K/c). Leave both at 0 for the basic model.")
    st.number_input("v — extra verify cost per drafted token", 0.0, 2.0, key=key("v"), step=0.01, format="%.3f")
    st.number_input("o — fixed overhead per round (target steps)", 0.0, 5.0, key=key("o"), step=0.05, format="%.3f")

view = ui.values(PAGE, SPEC)
mode = "heatmap" if view["view"] == "Heatmap" else "surface"
a_lo, a_hi = view["alpha"]
try:
    c_fix = float(grids.to_c(view["c_fix"], conv))
    en = expected_tokens_map(a_lo, a_hi, view["k_max"])
    s_c = speedup_c_map(a_lo, a_hi, view["c_min"], view["c_max"], conv, view["k"], view["v"], view["o"])
    s_k = speedup_k_map(a_lo, a_hi, view["k_max"], c_fix, view["v"], view["o"])
except ValueError as exc:
    ui.show_error(exc)
    ui.publish(PAGE, SPEC, URL)
    st.stop()

tab_c, tab_k, tab_en = st.tabs(["Speedup over (α, c)", "Speedup over (α, K)", "E[N] over (α, K)"])
with tab_c:
    st.plotly_chart(
        figures.grid_figure(s_c, mode=mode, break_even=True, title=f"Speedup at K = {view['k']}"), key="fig_s_c"
    )
    st.download_button(
        "Download this grid (CSV)", s_c.tidy().to_csv(index=False), "speedup_alpha_c.csv", "text/csv", key="dl_s_c"
    )
with tab_k:
    st.plotly_chart(
        figures.grid_figure(s_k, mode=mode, break_even=True, title=f"Speedup at {conv} = {view['c_fix']:.4g}"),
        key="fig_s_k",
    )
    st.download_button(
        "Download this grid (CSV)", s_k.tidy().to_csv(index=False), "speedup_alpha_k.csv", "text/csv", key="dl_s_k"
    )
with tab_en:
    st.plotly_chart(figures.grid_figure(en, mode=mode, title="Expected tokens per round"), key="fig_en")
    st.download_button(
        "Download this grid (CSV)", en.tidy().to_csv(index=False), "expected_tokens.csv", "text/csv", key="dl_en"
    )

st.header("Point inspector")
col_a, col_c, col_k = st.columns(3)
col_a.number_input("α", 0.0, 1.0, key=key("i_alpha"), step=0.01, format="%.4f")
col_c.number_input(conv, 1e-3, 1e4, key=key("i_c"), format="%.4g")
col_k.number_input("K", 1, 64, key=key("i_k"))
view = ui.values(PAGE, SPEC)
alpha, k = view["i_alpha"], view["i_k"]
try:
    c = float(grids.to_c(view["i_c"], conv))
    e_n = float(theory.expected_tokens(alpha, k))
    s = float(theory.speedup(alpha, c, k, view["v"], view["o"]))
    a_star = float(theory.break_even_alpha(k, c, view["v"], view["o"]))
    best = theory.optimal_k(alpha, c, 64, view["v"], view["o"])
except ValueError as exc:
    ui.show_error(exc)
else:
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("E[N] tokens per round", f"{e_n:.4f}")
    m2.metric("Speedup S", f"{s:.4f}×", delta=f"{s - 1:+.1%} vs target alone")
    m3.metric(
        "Break-even α*",
        "never pays off" if a_star != a_star else f"{a_star:.4f}",
        help="The α at which S = 1 for this K and c.",
    )
    m4.metric(
        "Optimal K (1..64)",
        "don't speculate" if best.k == 0 else f"{int(best.k)}",
        delta=f"S = {float(best.speedup):.3f}×",
        delta_color="off",
    )
    st.plotly_chart(figures.pmf_figure(theory.accepted_length_pmf(alpha, k), e_n), key="fig_pmf")

ui.publish(PAGE, SPEC, URL)

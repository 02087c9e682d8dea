"""Design space: E[N] and speedup maps over α, K and c, and a point inspector."""

import streamlit as st

from specviz import figures, grids, theory, ui
from specviz.share import Param, by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

PAGE, URL = "design", "design-space"
N_ALPHA, N_C = 201, 121  # grid resolution (α axis, c axis)
C_KEYS = ("c_min", "c_max", "c_fix", "i_c")  # controls holding a speed ratio in the chosen convention
MAPS = ("Speedup over (α, c)", "Speedup over (α, K)", "E[N] over (α, K)")
SPEC = (
    Param("view", "Heatmap", "choice", choices=("Heatmap", "3-D surface")),
    Param("map", MAPS[0], "choice", choices=MAPS),
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
    Param("tab", "Maps", "choice", choices=("Maps", "Point inspector")),
)
P = by_key(SPEC)
K_MAX = int(P["i_k"].hi)  # the inspector's optimal K searches 1..K_MAX


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


def sidebar_controls(conv: str) -> None:
    """The map controls, drawn after the first chart (their values are read from session_state before)."""
    with st.sidebar:
        st.header("Maps")
        ui.radio(PAGE, P["view"], "Chart type", horizontal=True)
        ui.radio(
            PAGE, P["conv"], "Speed-ratio convention", on_change=flip_convention, format_func=grids.C_CONVENTIONS.get
        )
        ui.slider(PAGE, P["alpha"], "α range", step=0.01)
        c_min_col, c_max_col = st.columns(2)
        with c_min_col:
            ui.number_input(PAGE, P["c_min"], f"{conv} min", format="%.4g")
        with c_max_col:
            ui.number_input(PAGE, P["c_max"], f"{conv} max", format="%.4g")
        ui.slider(PAGE, P["k"], "K for the (α, c) map")
        ui.slider(PAGE, P["k_max"], "K max for the (α, K) maps")
        ui.number_input(PAGE, P["c_fix"], f"{conv} for the (α, K) map", format="%.4g")
        st.subheader("Measured-cost model")
        st.caption("S = E[N] / (1 + vK + o + K/c). Leave both at 0 for the basic model.")
        ui.number_input(PAGE, P["v"], "v — extra verify cost per drafted token", step=0.01, format="%.3f")
        ui.number_input(PAGE, P["o"], "o — fixed overhead per round (target steps)", step=0.05, format="%.3f")


def maps_tab(view: dict, conv: str) -> None:
    """One map at a time, chosen by a radio above it (mirrored in the URL), with its CSV."""
    mode = "heatmap" if view["view"] == "Heatmap" else "surface"
    a_lo, a_hi = view["alpha"]
    v, o = view["v"], view["o"]
    shown_radio = st.empty()  # filled after the chart: a fresh browser loads plotly before the radio's code
    if view["map"] == MAPS[0]:
        grid = speedup_c_map(a_lo, a_hi, view["c_min"], view["c_max"], conv, view["k"], v, o)
        break_even, title, file_name, name = True, f"Speedup at K = {view['k']}", "speedup_alpha_c.csv", "s_c"
    elif view["map"] == MAPS[1]:
        grid = speedup_k_map(a_lo, a_hi, view["k_max"], float(grids.to_c(view["c_fix"], conv)), v, o)
        break_even, title = True, f"Speedup at {conv} = {view['c_fix']:.4g}"
        file_name, name = "speedup_alpha_k.csv", "s_k"
    else:
        grid = expected_tokens_map(a_lo, a_hi, view["k_max"])
        break_even, title, file_name, name = False, "Expected tokens per round", "expected_tokens.csv", "en"
    st.plotly_chart(figures.grid_figure(grid, mode=mode, break_even=break_even, title=title), key=f"fig_{name}")
    with shown_radio:
        ui.radio(PAGE, P["map"], "Map", horizontal=True, label_visibility="collapsed")
    ui.csv_download("Download this grid (CSV)", grid.tidy, file_name, key=f"dl_{name}")


def inspector_tab(view: dict, conv: str) -> None:
    """E[N], the speedup, the break-even α and the optimal K at one (α, c, K), and the pmf of N."""
    col_a, col_c, col_k = st.columns(3)
    with col_a:
        ui.number_input(PAGE, P["i_alpha"], "α", step=0.01, format="%.4f")
    with col_c:
        ui.number_input(PAGE, P["i_c"], conv, format="%.4g")
    with col_k:
        ui.number_input(PAGE, P["i_k"], "K")
    view = ui.values(PAGE, SPEC)
    alpha, k, v, o = view["i_alpha"], view["i_k"], view["v"], view["o"]
    c = float(grids.to_c(view["i_c"], conv))
    e_n = float(theory.expected_tokens(alpha, k))
    s = float(theory.speedup(alpha, c, k, v, o))
    a_star = float(theory.break_even_alpha(k, c, v, o))
    best = theory.optimal_k(alpha, c, K_MAX, v, o)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("E[N] tokens per round", f"{e_n:.4f}")
    m2.metric("Speedup S", f"{s:.4f}×", delta=f"{s - 1:+.1%} vs target alone")
    m3.metric(
        "Break-even α*",
        "never pays off" if a_star != a_star else f"{a_star:.4f}",
        help="The α at which S = 1 for this K and c.",
    )
    m4.metric(
        f"Optimal K (1..{K_MAX})",
        "don't speculate" if best.k == 0 else f"{int(best.k)}",
        delta=f"S = {float(best.speedup):.3f}×",
        delta_color="off",
    )
    st.plotly_chart(figures.pmf_figure(theory.accepted_length_pmf(alpha, k), e_n), key="fig_pmf")


TABS = {"Maps": maps_tab, "Point inspector": inspector_tab}

st.title("Design space")
st.caption("How E[N] and the speedup depend on α, K and c. Black line: S = 1 — left of it speculation is slower.")
ui.restore(PAGE, SPEC)

conv = st.session_state[key("conv")]
# One tab's content per script run (lazy tabs): a link opens with one map to send and draw.
ui.show_open_tab(PAGE, P["tab"], TABS, ui.values(PAGE, SPEC), conv)
# The controls are sent after the open tab's chart: a fresh browser loads plotly's code first.
sidebar_controls(conv)
ui.publish(PAGE, SPEC, URL)

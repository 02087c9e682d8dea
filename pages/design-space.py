"""Design space: E[N] and speedup maps over α, K and c, and a point inspector."""

import streamlit as st

from specviz.app import figures, grids, router, ui
from specviz.app.share import Param, by_key
from specviz.base.i18n import N_
from specviz.core import theory

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "design", "design-space"
N_ALPHA, N_C = 201, 121  # grid resolution (α axis, c axis)
C_KEYS = ("c_min", "c_max", "c_fix", "i_c")  # controls holding a speed ratio in the chosen convention
SPEC = (
    Param(
        "view",
        "heatmap",
        "choice",
        choices=("heatmap", "surface"),  # figures.grid_figure's modes
        label=N_("Chart type"),
        labels=(N_("Heatmap"), N_("3-D surface")),
    ),
    Param(
        "map",
        "s_c",
        "choice",
        choices=("s_c", "s_k", "en"),
        label=N_("Map"),
        labels=(N_("Speedup over (α, c)"), N_("Speedup over (α, K)"), N_("E[N] over (α, K)")),
    ),
    Param(
        "conv",
        "c",
        "choice",
        choices=tuple(grids.C_CONVENTIONS),
        label=N_("Speed-ratio convention"),
        labels=(N_("c = T_target / T_draft"), N_("c_L = T_draft / T_target (Leviathan)")),
    ),
    Param("alpha", (0.0, 1.0), "range", 0.0, 1.0, label=N_("α range")),
    Param("c_min", 1.0, "float", 1e-3, 1e4, log=True),
    Param("c_max", 100.0, "float", 1e-3, 1e4, log=True),
    Param("k", 4, "int", 1, 64, label=N_("K for the (α, c) map")),
    Param("k_max", 16, "int", 2, 64, label=N_("K max for the (α, K) maps")),
    Param("c_fix", 8.0, "float", 1e-3, 1e4, log=True),
    Param("v", 0.0, "float", 0.0, 2.0, label=N_("v — extra verify cost per drafted token")),
    Param("o", 0.0, "float", 0.0, 5.0, label=N_("o — fixed overhead per round (target steps)")),
    Param("i_alpha", 0.8, "float", 0.0, 1.0),
    Param("i_c", 10.0, "float", 1e-3, 1e4, log=True),
    Param("i_k", 4, "int", 1, 64),
    Param("tab", "maps", "choice", choices=("maps", "inspector"), labels=(N_("Maps"), N_("Point inspector"))),
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
        st.header(ui.t("Maps"))
        ui.radio(PAGE, P["view"], horizontal=True)
        ui.radio(
            PAGE,
            P["conv"],
            on_change=flip_convention,
        )
        ui.slider(PAGE, P["alpha"], step=0.01)
        c_min_col, c_max_col = st.columns(2)
        with c_min_col:
            ui.number_input(PAGE, P["c_min"], ui.t("{conv} min", conv=conv), format="%.4g")
        with c_max_col:
            ui.number_input(PAGE, P["c_max"], ui.t("{conv} max", conv=conv), format="%.4g")
        ui.slider(PAGE, P["k"])
        ui.slider(PAGE, P["k_max"])
        ui.number_input(PAGE, P["c_fix"], ui.t("{conv} for the (α, K) map", conv=conv), format="%.4g")
        st.subheader(ui.t("Measured-cost model"))
        st.caption(ui.t("S = E[N] / (1 + vK + o + K/c). Leave both at 0 for the basic model."))
        ui.number_input(PAGE, P["v"], step=0.01, format="%.3f")
        ui.number_input(PAGE, P["o"], step=0.05, format="%.3f")


def maps_tab(view: dict, conv: str) -> None:
    """One map at a time, chosen by a radio above it (mirrored in the URL), with its CSV."""
    mode = view["view"]
    a_lo, a_hi = view["alpha"]
    v, o = view["v"], view["o"]
    shown_radio = st.empty()  # filled after the chart: a fresh browser loads plotly before the radio's code
    if view["map"] == "s_c":
        grid = speedup_c_map(a_lo, a_hi, view["c_min"], view["c_max"], conv, view["k"], v, o)
        break_even, title, file_name, name = True, ui.t("Speedup at K = {k}", k=view["k"]), "speedup_alpha_c.csv", "s_c"
    elif view["map"] == "s_k":
        grid = speedup_k_map(a_lo, a_hi, view["k_max"], float(grids.to_c(view["c_fix"], conv)), v, o)
        break_even, title = True, ui.t("Speedup at {conv} = {c}", conv=conv, c=f"{view['c_fix']:.4g}")
        file_name, name = "speedup_alpha_k.csv", "s_k"
    else:
        grid = expected_tokens_map(a_lo, a_hi, view["k_max"])
        break_even, title, file_name, name = False, ui.t("Expected tokens per round"), "expected_tokens.csv", "en"
    ui.chart(
        figures.grid_figure(grid, mode=mode, break_even=break_even, title=title, lang=ui.language()), key=f"fig_{name}"
    )
    with shown_radio:
        ui.radio(
            PAGE,
            P["map"],
            horizontal=True,
            label_visibility="collapsed",
        )
    ui.csv_download(ui.t("Download this grid (CSV)"), grid.tidy, file_name, key=f"dl_{name}")


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
    m1.metric(ui.t("E[N] tokens per round"), f"{e_n:.4f}")
    m2.metric(ui.t("Speedup S"), f"{s:.4f}×", delta=ui.t("{d} vs target alone", d=f"{s - 1:+.1%}"))
    m3.metric(
        ui.t("Break-even α*"),
        ui.t("never pays off") if a_star != a_star else f"{a_star:.4f}",
        help=ui.t("The α at which S = 1 for this K and c."),
    )
    m4.metric(
        ui.t("Optimal K (1..{k_max})", k_max=K_MAX),
        ui.t("don't speculate") if best.k == 0 else f"{int(best.k)}",
        delta=f"S = {float(best.speedup):.3f}×",
        delta_color="off",
    )
    ui.chart(figures.pmf_figure(theory.accepted_length_pmf(alpha, k), e_n, lang=ui.language()), key="fig_pmf")


TABS = {"maps": maps_tab, "inspector": inspector_tab}

st.title(ui.t("Design space"))
st.caption(ui.t("How E[N] and the speedup depend on α, K and c. Black line: S = 1 — left of it speculation is slower."))
ui.restore(PAGE, SPEC)

conv = st.session_state[key("conv")]
# One tab's content per script run (lazy tabs): a link opens with one map to send and draw.
ui.show_open_tab(PAGE, P["tab"], TABS, ui.values(PAGE, SPEC), conv)
# The controls are sent after the open tab's chart: a fresh browser loads plotly's code first.
sidebar_controls(conv)
ui.publish(PAGE, SPEC, URL)

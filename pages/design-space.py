"""Design space: E[N] and speedup maps over α, K and c, and a point inspector."""

import streamlit as st

from specviz.app import figures, grids, router, ui
from specviz.app.share import Param, by_key
from specviz.core import theory

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

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
        st.header(ui.t("ds.maps"))
        ui.radio(PAGE, P["view"], ui.t("ds.chart_type"), horizontal=True, format_func=lambda v: ui.t(f"ds.view.{v}"))
        ui.radio(
            PAGE,
            P["conv"],
            ui.t("common.convention"),
            on_change=flip_convention,
            format_func=lambda v: ui.t(f"conv.convention.{v}"),
        )
        ui.slider(PAGE, P["alpha"], ui.t("ds.alpha_range"), step=0.01)
        c_min_col, c_max_col = st.columns(2)
        with c_min_col:
            ui.number_input(PAGE, P["c_min"], ui.t("common.min", conv=conv), format="%.4g")
        with c_max_col:
            ui.number_input(PAGE, P["c_max"], ui.t("common.max", conv=conv), format="%.4g")
        ui.slider(PAGE, P["k"], ui.t("ds.k"))
        ui.slider(PAGE, P["k_max"], ui.t("ds.k_max"))
        ui.number_input(PAGE, P["c_fix"], ui.t("ds.c_fix", conv=conv), format="%.4g")
        st.subheader(ui.t("common.cost_model"))
        st.caption(ui.t("ds.cost_caption"))
        ui.number_input(PAGE, P["v"], ui.t("common.v"), step=0.01, format="%.3f")
        ui.number_input(PAGE, P["o"], ui.t("common.o"), step=0.05, format="%.3f")


def maps_tab(view: dict, conv: str) -> None:
    """One map at a time, chosen by a radio above it (mirrored in the URL), with its CSV."""
    mode = "heatmap" if view["view"] == "Heatmap" else "surface"
    a_lo, a_hi = view["alpha"]
    v, o = view["v"], view["o"]
    shown_radio = st.empty()  # filled after the chart: a fresh browser loads plotly before the radio's code
    if view["map"] == MAPS[0]:
        grid = speedup_c_map(a_lo, a_hi, view["c_min"], view["c_max"], conv, view["k"], v, o)
        break_even, title, file_name, name = True, ui.t("ds.title_s_k", k=view["k"]), "speedup_alpha_c.csv", "s_c"
    elif view["map"] == MAPS[1]:
        grid = speedup_k_map(a_lo, a_hi, view["k_max"], float(grids.to_c(view["c_fix"], conv)), v, o)
        break_even, title = True, ui.t("ds.title_s_c", conv=conv, c=f"{view['c_fix']:.4g}")
        file_name, name = "speedup_alpha_k.csv", "s_k"
    else:
        grid = expected_tokens_map(a_lo, a_hi, view["k_max"])
        break_even, title, file_name, name = False, ui.t("ds.title_en"), "expected_tokens.csv", "en"
    ui.chart(
        figures.grid_figure(grid, mode=mode, break_even=break_even, title=title, lang=ui.language()), key=f"fig_{name}"
    )
    with shown_radio:
        ui.radio(
            PAGE,
            P["map"],
            ui.t("ds.map"),
            horizontal=True,
            label_visibility="collapsed",
            format_func=lambda v: ui.t(f"ds.map.{MAPS.index(v)}"),
        )
    ui.csv_download(ui.t("ds.dl"), grid.tidy, file_name, key=f"dl_{name}")


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
    m1.metric(ui.t("ds.en"), f"{e_n:.4f}")
    m2.metric(ui.t("ds.s"), f"{s:.4f}×", delta=ui.t("ds.vs", d=f"{s - 1:+.1%}"))
    m3.metric(
        ui.t("ds.a_star"),
        ui.t("ds.never") if a_star != a_star else f"{a_star:.4f}",
        help=ui.t("ds.a_star_help"),
    )
    m4.metric(
        ui.t("ds.k_opt", k_max=K_MAX),
        ui.t("be.dont") if best.k == 0 else f"{int(best.k)}",
        delta=f"S = {float(best.speedup):.3f}×",
        delta_color="off",
    )
    ui.chart(figures.pmf_figure(theory.accepted_length_pmf(alpha, k), e_n, lang=ui.language()), key="fig_pmf")


TABS = {"Maps": maps_tab, "Point inspector": inspector_tab}

st.title(ui.t("ds.title"))
st.caption(ui.t("ds.intro"))
ui.restore(PAGE, SPEC)

conv = st.session_state[key("conv")]
# One tab's content per script run (lazy tabs): a link opens with one map to send and draw.
TAB_KEYS = {"Maps": "ds.tab.maps", "Point inspector": "ds.tab.inspector"}
ui.show_open_tab(PAGE, P["tab"], TABS, ui.values(PAGE, SPEC), conv, format_func=lambda v: ui.t(TAB_KEYS[v]))
# The controls are sent after the open tab's chart: a fresh browser loads plotly's code first.
sidebar_controls(conv)
ui.publish(PAGE, SPEC, URL)

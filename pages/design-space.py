"""Design space: E[N] and speedup maps over α, K and c, and a point inspector."""

import streamlit as st

from specviz.app import figures, router, ui
from specviz.app.scenarios import design as scenarios
from specviz.app.scenarios.design import K_MAX, SPEC, Scenario
from specviz.app.share import by_key

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = scenarios.PAGE, "design-space"
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def flip_convention() -> None:
    """Keep every speed-ratio control meaning the same ratio when the convention flips."""
    s = st.session_state
    s[key("c_min")], s[key("c_max")] = 1.0 / s[key("c_max")], 1.0 / s[key("c_min")]
    for name in ("c_fix", "i_c"):
        s[key(name)] = 1.0 / s[key(name)]


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


def maps_tab(s: Scenario) -> None:
    """One map at a time, chosen by a radio above it (mirrored in the URL), with its CSV."""
    m, conv = s.maps, s.maps.conv
    shown_radio = st.empty()  # filled after the chart: a fresh browser loads plotly before the radio's code
    grid = scenarios.grid(m)
    if m.map == "s_c":
        break_even, title, file_name, name = True, ui.t("Speedup at K = {k}", k=m.k), "speedup_alpha_c.csv", "s_c"
    elif m.map == "s_k":
        break_even, title = True, ui.t("Speedup at {conv} = {c}", conv=conv, c=f"{m.c_fix:.4g}")
        file_name, name = "speedup_alpha_k.csv", "s_k"
    else:
        break_even, title, file_name, name = False, ui.t("Expected tokens per round"), "expected_tokens.csv", "en"
    ui.chart(
        ui.figure(figures.grid_figure, grid, mode=s.chart, break_even=break_even, title=title, lang=ui.language()),
        key=f"fig_{name}",
    )
    with shown_radio:
        ui.radio(
            PAGE,
            P["map"],
            horizontal=True,
            label_visibility="collapsed",
        )
    ui.csv_download(ui.t("Download this grid (CSV)"), grid.tidy, file_name, key=f"dl_{name}")


def inspector_tab(s: Scenario) -> None:
    """E[N], the speedup, the break-even α and the optimal K at one (α, c, K), and the pmf of N."""
    conv = s.point.conv
    col_a, col_c, col_k = st.columns(3)
    with col_a:
        ui.number_input(PAGE, P["i_alpha"], "α", step=0.01, format="%.4f")
    with col_c:
        ui.number_input(PAGE, P["i_c"], conv, format="%.4g")
    with col_k:
        ui.number_input(PAGE, P["i_k"], "K")
    got = scenarios.inspect(scenarios.scenario(ui.values(PAGE, SPEC)).point)
    e_n, speedup, a_star, best = got["e_n"], got["s"], got["a_star"], got["best"]
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(ui.t("E[N] tokens per round"), f"{e_n:.4f}")
    m2.metric(ui.t("Speedup S"), f"{speedup:.4f}×", delta=ui.t("{d} vs target alone", d=f"{speedup - 1:+.1%}"))
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
    ui.chart(ui.figure(figures.pmf_figure, got["pmf"], e_n, lang=ui.language()), key="fig_pmf")


TABS = {"maps": maps_tab, "inspector": inspector_tab}

st.title(ui.t("Design space"))
st.caption(ui.t("How E[N] and the speedup depend on α, K and c. Black line: S = 1 — left of it speculation is slower."))
ui.restore(PAGE, SPEC)

conv = st.session_state[key("conv")]
# One tab's content per script run (lazy tabs): a link opens with one map to send and draw.
ui.show_open_tab(PAGE, P["tab"], TABS, scenarios.scenario(ui.values(PAGE, SPEC)))
# The controls are sent after the open tab's chart: a fresh browser loads plotly's code first.
sidebar_controls(conv)
ui.publish(PAGE, SPEC, URL)

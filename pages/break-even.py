"""Break-even & optimal K: where speculation stops paying, and the best draft length."""

import streamlit as st

from specviz.app import figures, router, ui
from specviz.app.scenarios import breakeven as scenarios
from specviz.app.scenarios.breakeven import CURVE_CHOICES, SPEC, Scenario
from specviz.app.share import by_key
from specviz.base.i18n import N_
from specviz.core import chapter

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = scenarios.PAGE, "break-even"
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def flip_convention() -> None:
    """Keep every speed-ratio control meaning the same ratio when the convention flips."""
    s = st.session_state
    s[key("c_min")], s[key("c_max")] = 1.0 / s[key("c_max")], 1.0 / s[key("c_min")]
    s[key("f_c")] = 1.0 / s[key("f_c")]


CHAPTER_COLUMNS = {
    "E[N] chapter": N_("E[N] chapter"),
    "E[N] computed": N_("E[N] computed"),
    "speedup chapter": N_("speedup chapter"),
    "speedup computed": N_("speedup computed"),
    "matches": N_("matches"),
    "quantity": N_("quantity"),
    "chapter": N_("chapter"),
    "computed": N_("computed"),
}  #: a chapter table's column -> its heading


def headed(table):
    """A chapter table with its headers (and row names) in the session's language; α, c, K stay symbols."""
    table = table.rename(columns={c: ui.t(CHAPTER_COLUMNS[c]) for c in table.columns if c in CHAPTER_COLUMNS})
    matches = ui.t("matches")
    table[matches] = [ui.t("yes") if m else ui.t("no") for m in table[matches]]
    quantity = ui.t("quantity")
    if quantity in table.columns:
        names = {
            "speedup, K = 4": N_("speedup, K = 4"),
            "speedup, K = 8": N_("speedup, K = 8"),
            "break-even α, K = 4": N_("break-even α, K = 4"),
        }
        table[quantity] = [ui.t(names[q]) if q in names else q for q in table[quantity]]
    return table


def sidebar_controls(conv: str) -> None:
    """The controls, drawn after the open tab (their values are read from session_state before)."""
    with st.sidebar:
        st.header(ui.t("Controls"))
        ui.radio(
            PAGE,
            P["conv"],
            on_change=flip_convention,
        )
        ui.multiselect(
            PAGE,
            P["curves"],
            ui.t("{conv} values for the frontier curves", conv=conv),
            CURVE_CHOICES,
            accept_new_options=True,
        )
        ui.slider(PAGE, P["k_max"])
        c_min_col, c_max_col = st.columns(2)
        with c_min_col:
            ui.number_input(PAGE, P["c_min"], ui.t("{conv} min", conv=conv), format="%.4g")
        with c_max_col:
            ui.number_input(PAGE, P["c_max"], ui.t("{conv} max", conv=conv), format="%.4g")
        st.subheader(ui.t("Measured-cost model"))
        ui.number_input(PAGE, P["v"], step=0.01, format="%.3f")
        ui.number_input(PAGE, P["o"], step=0.05, format="%.3f")


def frontier_tab(s: Scenario) -> None:
    """α*(K, c): curves for chosen c and the map over (K, c), side by side."""
    ks, alpha_star = scenarios.frontier(s.axes, scenarios.curves(s))
    be_map = scenarios.frontier_map(s.axes)
    left, right = st.columns(2)
    with left:
        ui.chart(ui.figure(figures.break_even_curves, ks, alpha_star, lang=ui.language()), key="fig_curves")
        st.caption(
            ui.t(
                "Above a curve speculation is faster than the target alone. A curve that stops or is missing never pays off at those K (in the basic model: whenever c ≤ 1)."
            )
        )
    with right:
        ui.chart(ui.figure(figures.break_even_map, be_map, lang=ui.language()), key="fig_be_map")
        ui.csv_download(ui.t("Download α*(K, c) (CSV)"), be_map.tidy, "break_even.csv", key="dl_be")


def optimum_tab(s: Scenario) -> None:
    """K*(α, c) or the speedup at K* (one map at a time, chosen by a radio), then f(K) for one (α, c)."""
    conv, k_max = s.axes.conv, s.axes.k_max
    k_map, s_map = scenarios.optimum_maps(s.axes)
    opt_radio = st.empty()  # filled after the map: a fresh browser loads plotly before the radio's code
    if s.opt_map == "kstar":
        ui.chart(ui.figure(figures.optimal_k_map, k_map, lang=ui.language()), key="fig_kstar")
    else:
        ui.chart(
            ui.figure(figures.grid_figure, s_map, break_even=True, title=ui.t("Speedup at K*"), lang=ui.language()),
            key="fig_sstar",
        )
    with opt_radio:
        ui.radio(
            PAGE,
            P["opt_map"],
            horizontal=True,
            label_visibility="collapsed",
        )
    ui.csv_download(
        ui.t("Download K* and S(K*) (CSV)"),
        lambda: k_map.tidy().assign(speedup_at_optimal_k=s_map.z.ravel()),
        "optimal_k.csv",
        key="dl_kstar",
    )

    st.subheader(ui.t("f(K) for one (α, c)"))
    col_a, col_c = st.columns(2)
    with col_a:
        ui.number_input(PAGE, P["f_alpha"], "α", step=0.01, format="%.4f")
    with col_c:
        ui.number_input(PAGE, P["f_c"], conv, format="%.4g")
    ks, s_of_k, best = scenarios.f_of_k(scenarios.scenario(ui.values(PAGE, SPEC)))
    k_star = int(best.k)
    if k_star == 0:
        st.metric(
            ui.t("Optimal K"),
            ui.t("don't speculate"),
            delta=ui.t("best S over K = 1..{k_max} is {s}× ≤ 1", k_max=k_max, s=f"{float(s_of_k.max()):.3f}"),
            delta_color="off",
        )
    else:
        st.metric(ui.t("Optimal K"), str(k_star), delta=f"S = {float(best.speedup):.3f}×", delta_color="off")
    ui.chart(ui.figure(figures.speedup_vs_k, ks, s_of_k, k_star, float(best.speedup), lang=ui.language()), key="fig_fk")


def chapter_tab(s: Scenario) -> None:
    """The source chapter's printed values beside the same quantities from specviz.core.theory (no control applies)."""
    st.caption(ui.t("Printed values from the source chapter beside the same quantities from specviz.core.theory."))
    numbers = {"α": "g", "c": "g", "computed": ".4f", "E[N] computed": ".4f", "speedup computed": ".4f"}
    numbers = {ui.t(CHAPTER_COLUMNS[name]) if name in CHAPTER_COLUMNS else name: f for name, f in numbers.items()}
    t44, ex2 = st.columns(2)
    with t44:
        st.markdown(ui.t("**Table 4.4 — E[N]**"))
        ui.static_table(headed(chapter.table_4_4()), numbers)
    with ex2:
        st.markdown(ui.t("**Exercise 2 — c = 8, α = 0.7**"))
        ui.static_table(headed(chapter.exercise_2()), numbers)
    st.markdown(ui.t("**Table 5.3 — speedup**"))
    ui.static_table(headed(chapter.table_5_3()), numbers)


TABS = {"frontier": frontier_tab, "optimum": optimum_tab, "chapter": chapter_tab}

st.title(ui.t("Break-even & optimal K"))
st.caption(
    ui.t(
        "Speculation pays only when E[N] > 1 + vK + o + K/c. These views show where that line runs and which draft length K gets the most out of a given (α, c)."
    )
)
ui.restore(PAGE, SPEC)

conv = st.session_state[key("conv")]
# One tab's content per script run (lazy tabs): a link opens with the frontier's two charts to draw.
ui.show_open_tab(PAGE, P["view"], TABS, scenarios.scenario(ui.values(PAGE, SPEC)))
# The controls are sent after the open tab's charts: a fresh browser loads plotly's code first.
sidebar_controls(conv)
ui.publish(PAGE, SPEC, URL)

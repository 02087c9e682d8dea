"""Drafting strategies: token trees — how many tokens a tree buys over a chain, and which tree to draft."""

import numpy as np
import streamlit as st

from specviz import figures, theory, trees, ui
from specviz.share import Param, by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

PAGE, URL = "strategies", "strategies"
BUDGETS = [1, 2, 4, 8, 16, 32, 64]
P_SOURCES = ("geometric from α", "typed")
VIEWS = ("Optimal tree", "Shapes by budget", "Budget × depth", "Hardware-aware", "Engine flags")
SPEC = (
    Param("p_src", "geometric from α", "choice", choices=P_SOURCES),
    Param("alpha", 0.6, "float", 0.0, 1.0),
    Param("ranks", 4, "int", 1, 16),
    Param("p", "0.6, 0.2, 0.1", "text", hi=400),
    Param("budget", 16, "int", 1, 128),
    Param("depth", 6, "int", 1, 16),
    Param("c", 20.0, "float", 1.0, 1000.0, log=True),
    Param("v", 0.02, "float", 0.0, 2.0),
    Param("view", "Optimal tree", "choice", choices=VIEWS),
)
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def chosen_p(view: dict) -> np.ndarray:
    """Positional acceptance p_1, p_2, …: a geometric profile from α, or as typed (ValueError if invalid)."""
    if view["p_src"] == "typed":
        return trees.parse_p(view["p"])
    return trees.geometric_p(view["alpha"], view["ranks"])


@ui.cached
def table(p: tuple, budgets: tuple, depth: int):
    return trees.optimal_tree_table(list(p), list(budgets), depth)


@ui.cached
def shapes(p: tuple, budgets: tuple, depth: int):
    return trees.shapes_by_budget(list(p), list(budgets), depth)


def tree_section(view: dict, p: np.ndarray) -> None:
    tree = trees.optimal_tree(p, view["budget"], view["depth"])
    f, chain_f = trees.expected_tokens(tree, p), float(theory.expected_tokens(p[0], min(view["budget"], view["depth"])))
    left, right = st.columns(2)
    left.metric("Optimal tree: tokens per round", f"{f:.3f}", delta=f"{tree.describe()}", delta_color="off")
    right.metric(
        "Chain of the same budget (depth-capped)",
        f"{chain_f:.3f}",
        delta=f"tree buys {f / chain_f:.2f}×",
        delta_color="off",
    )
    x, y = tree.layout()
    labels = [str(r) if r else "•" for r in tree.ranks]
    st.plotly_chart(figures.tree_figure(x, y, tree.parents, trees.path_probabilities(tree, p), labels), key="fig_tree")
    st.caption("Each node is a draft token labelled by its rank among its siblings; colour = the chance it is reached.")


def shapes_section(view: dict, p: np.ndarray) -> None:
    frame = shapes(tuple(p), tuple(b for b in BUDGETS if b <= 64), view["depth"])
    st.plotly_chart(figures.tokens_by_budget(frame), key="fig_shapes")
    st.caption(
        f"Depth at most {view['depth']}. The chain stops gaining once the budget exceeds the depth; trees spend "
        "the budget on siblings instead."
    )
    ui.csv_download("Download (CSV)", lambda: frame, "tree_shapes.csv", key="dl_shapes")


def table_section(view: dict, p: np.ndarray) -> None:
    frame = table(tuple(p), tuple(BUDGETS), view["depth"])
    wide = frame.pivot(index="budget", columns="depth", values="expected_tokens")
    st.dataframe(wide.style.format("{:.3f}"), width="stretch")
    st.caption("Expected tokens per round of the optimal tree, by budget (rows) and maximum depth (columns).")


def hardware_section(view: dict, p: np.ndarray) -> None:
    c, v = view["c"], view["v"]
    tree, s = trees.best_tree_for_hardware(p, 1.0 / c, lambda n: 1.0 + v * (n - 1), view["budget"], view["depth"])
    shown = "do not speculate" if tree.drafts == 0 else tree.describe()
    st.metric("Best tree for this cost model", shown, delta=f"speedup {s:.2f}×", delta_color="off")
    st.caption(
        f"A round costs depth · T_draft (T_draft = T_target / c = {1 / c:.3g} target steps) plus one target "
        f"forward over n + 1 positions, 1 + v·n target steps (v = {v:g}); the best tree maximises tokens per "
        "unit of time, up to the budget and depth chosen."
    )


def engine_section(view: dict, p: np.ndarray) -> None:
    try:
        tree, depth, topk = trees.best_topk(p, view["budget"], view["depth"])
    except ValueError as exc:
        st.warning(f"Budget / Maximum depth: {exc}. Raise the maximum depth or lower the budget.")
        return
    f = trees.expected_tokens(tree, p)
    st.markdown(f"**SGLang (EAGLE)**: the best top-k tree of {view['budget']} drafts, F = {f:.3f}")
    st.code(trees.sglang_flags(depth, topk, view["budget"]), language="bash")
    st.caption("SGLang counts the root in --speculative-num-draft-tokens: it is the budget plus one.")


SECTIONS = dict(
    zip(VIEWS, (tree_section, shapes_section, table_section, hardware_section, engine_section), strict=True)
)


def sidebar_controls() -> None:
    with st.sidebar:
        st.header("Acceptance by rank")
        ui.radio(PAGE, P["p_src"], "p from")
        if st.session_state[key("p_src")] == "typed":
            st.text_input("p_1, p_2, … (comma-separated, sum ≤ 1)", key=key("p"), max_chars=int(P["p"].hi))
        else:
            ui.slider(PAGE, P["alpha"], "α (p_r = α (1 − α)^(r−1))", step=0.01)
            ui.slider(PAGE, P["ranks"], "Ranks")
        st.header("Tree")
        ui.slider(PAGE, P["budget"], "Budget (draft tokens per round)")
        ui.slider(PAGE, P["depth"], "Maximum depth")
        st.header("Cost model")
        ui.number_input(PAGE, P["c"], "c = T_target / T_draft", format="%.4g")
        ui.number_input(PAGE, P["v"], "v (extra verify cost per token)", step=0.01, format="%.3f")


st.title("Drafting strategies")
st.caption(
    "Engines draft trees, not only chains: several candidates per position, verified in one target forward. "
    "Under positional acceptance (the target takes the draft's r-th choice with probability p_r) a tree's "
    "expected tokens per round follow from its shape; Sequoia's dynamic program finds the best shape."
)
ui.restore(PAGE, SPEC)
view = ui.values(PAGE, SPEC)
try:
    p = chosen_p(view)
except ValueError as exc:
    ui.show_error(exc)
    p = trees.geometric_p(P["alpha"].default, P["ranks"].default)
st.caption("p = " + ", ".join(f"{x:.3f}" for x in p))
ui.show_open_tab(PAGE, P["view"], SECTIONS, view, p)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

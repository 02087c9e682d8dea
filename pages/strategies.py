"""Drafting strategies: token trees — how many tokens a tree buys over a chain, and which tree to draft."""

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app import figures, profiles, router, ui
from specviz.app.scenarios import strategies as scenarios
from specviz.app.scenarios.strategies import HEADS, PAIR_DRAFT, SPEC, Scenario
from specviz.app.share import by_key
from specviz.core import configs, heads, policies, trees

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "strategies", "strategies"
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def tree_section(s: Scenario) -> None:
    tree, f, chain_f = scenarios.optimal(s.tree)
    left, right = st.columns(2)
    left.metric(
        ui.t("Optimal tree: tokens per round"), f"{f:.3f}", delta=ui.message(tree.describe()), delta_color="off"
    )
    right.metric(
        ui.t("Chain of the same budget (depth-capped)"),
        f"{chain_f:.3f}",
        delta=ui.t("tree buys {ratio}×", ratio=f"{f / chain_f:.2f}"),
        delta_color="off",
    )
    x, y = tree.layout()
    labels = [str(r) if r else "•" for r in tree.ranks]
    reached = trees.path_probabilities(tree, np.asarray(s.tree.p))
    ui.chart(ui.figure(figures.tree_figure, x, y, tree.parents, reached, labels, lang=ui.language()), key="fig_tree")
    st.caption(
        ui.t("Each node is a draft token labelled by its rank among its siblings; colour = the chance it is reached.")
    )


def shapes_section(s: Scenario) -> None:
    frame = scenarios.shapes(s.tree)
    ui.chart(ui.figure(figures.tokens_by_budget, frame, lang=ui.language()), key="fig_shapes")
    st.caption(
        ui.t(
            "Depth at most {depth}. The chain stops gaining once the budget exceeds the depth; trees spend the budget on siblings instead.",
            depth=s.tree.depth,
        )
    )
    ui.csv_download(ui.t("Download (CSV)"), lambda: frame, "tree_shapes.csv", key="dl_shapes")


def table_section(s: Scenario) -> None:
    frame = scenarios.table(s.tree)
    wide = frame.pivot(index="budget", columns="depth", values="expected_tokens").rename(columns="depth {}".format)
    depths = {d: ui.Col(ui.t("depth {depth}", depth=d.split()[1])) for d in wide.columns}
    ui.table(wide.reset_index(), {"budget": ui.Col(ui.t("budget"), kind="int")} | depths, key=key("tbl_budget"))
    st.caption(ui.t("Expected tokens per round of the optimal tree, by budget (rows) and maximum depth (columns)."))


def pair_on_gpu() -> None:
    """Draw the pair, GPU, context, batch, draft and engine profile controls (the scenario's ``pair``)."""
    c1, c2, c3, c4 = st.columns([3, 2, 1, 1])
    with c1:
        ui.selectbox(PAGE, P["pair"])
    with c2:
        ui.selectbox(PAGE, P["gpu"])
    with c3:
        ui.number_input(PAGE, P["ctx"])
    with c4:
        ui.number_input(PAGE, P["batch"])
    pair = scenarios.PAIR_ROWS.loc[st.session_state[key("pair")]]
    c1, c2 = st.columns(2)
    with c1:
        draft_control(pair)
    with c2:
        profiles.profile_controls(PAGE, P["engine"], P["eng_terms"])


def draft_control(pair: pd.Series) -> None:
    """The draft selectbox: the pair's draft model, or a head trained for its target. A head of another
    target (from a link, or left from another pair) is reported and replaced by the pair's draft."""
    offered = (PAIR_DRAFT, *(h for h in heads.heads_for(pair["target"]) if h in scenarios.SEQUENTIAL_HEADS))
    chosen = st.session_state[key("draft")]
    if chosen not in offered:
        st.warning(
            ui.t(
                "The head {head} drafts for {trained}, not for this pair's target {target}: drafting with the pair's draft model {draft} instead.",
                head=chosen,
                trained=HEADS.loc[chosen, "target"],
                target=pair["target"],
                draft=pair["draft"],
            ),
            icon=":material/warning:",
        )
        st.session_state[key("draft")] = PAIR_DRAFT

    def label(draft: str) -> str:
        if draft == PAIR_DRAFT:
            return ui.t("the pair's draft model: {draft}", draft=pair["draft"])
        return ui.t("{head} ({kind} head)", head=draft, kind=heads.KIND_NAMES[HEADS.loc[draft, "kind"]])

    st.selectbox(ui.t(P["draft"].label), offered, key=key("draft"), format_func=label)


def hardware_section(s: Scenario) -> None:
    ui.radio(PAGE, P["cost"], horizontal=True)
    if s.cost == "gpu":
        pair_on_gpu()
    tree, speedup, costs = scenarios.best_tree(s)
    how = scenarios.cost_model_text(s, costs)
    best = ui.t("do not speculate") if tree.drafts == 0 else ui.message(tree.describe())
    delta = ui.t("speedup {s}×", s=f"{speedup:.2f}")
    st.metric(ui.t("Best tree for this cost model"), best, delta=delta, delta_color="off")
    st.caption(
        ui.t(
            "{how}; the best tree maximises tokens per unit of time, up to the budget and depth chosen (sidebar).",
            how=how,
        )
    )
    if s.cost == "gpu":
        st.caption(s.pair.profile.caption())


def engine_section(s: Scenario) -> None:
    view, p = {"budget": s.tree.budget, "depth": s.tree.depth}, np.asarray(s.tree.p)  # the flag writer's names
    try:
        tree, depth, topk = trees.best_topk(p, view["budget"], view["depth"])
    except ValueError as exc:
        st.warning(
            ui.t("Budget / Maximum depth: {exc}. Raise the maximum depth or lower the budget.", exc=ui.message(exc))
        )
        return
    f = trees.expected_tokens(tree, p)
    st.markdown(
        ui.t("**SGLang (EAGLE)**: the best top-k tree of {budget} drafts, F = {f}", budget=view["budget"], f=f"{f:.3f}")
    )
    st.code(configs.sglang.tree_flags(depth, topk, view["budget"]), language="bash")
    st.caption(ui.t("SGLang counts the root in --speculative-num-draft-tokens: it is the budget plus one."))


def chosen_trace(s: Scenario) -> tuple[policies.Trace, str]:
    """(trace, what it is): synthetic from the controls, the live page's, or the uploaded file (ValueError naming it)."""
    if s.trace_src != "upload":
        return scenarios.chosen_trace(s, live_run)
    upload = ui.file_uploader(
        ui.t("Trace file (python -m specviz bench --trace FILE)"), ["jsonl"], key=key("trace_file")
    )
    return scenarios.uploaded_trace(upload)


def policies_section(s: Scenario) -> None:
    ui.radio(PAGE, P["trace_src"], horizontal=True)
    if s.trace_src == "synthetic":
        c1, c2, c3, c4, c5 = st.columns(5)
        with c1:
            ui.number_input(PAGE, P["t_alpha"], step=0.01)
        with c2:
            ui.number_input(PAGE, P["k_max"])
        with c3:
            ui.number_input(PAGE, P["rounds"])
        with c4:
            ui.number_input(PAGE, P["seed"])
        with c5:
            ui.selectbox(
                PAGE,
                P["confidence"],
                help=ui.t(
                    "calibrated: the draft's confidence q(x) ~ Beta with mean α, and a position is accepted with probability q(x), so confidence rules have something to read; flat: q(x) = α always (confidence carries nothing)."
                ),
            )
    trace, what = chosen_trace(s)
    c1, c2, c3, c4, c5 = st.columns(5)
    with c1:
        ui.number_input(PAGE, P["hf_start"])
    with c2:
        ui.number_input(PAGE, P["hf_thr"], step=0.05)
    with c3:
        ui.number_input(PAGE, P["p_min"], step=0.05)
    with c4:
        ui.number_input(PAGE, P["sdpp"], step=0.05)
    with c5:
        ui.number_input(PAGE, P["o"], step=0.01)
    from_live = s.trace_src == "live"
    if not from_live:
        ui.radio(PAGE, P["pol_cost"], horizontal=True)
    c, v, o = s.c, s.v, s.rules.o
    where = ui.t("c and v from the sidebar")
    if from_live:  # that run's measured costs
        c, v, o = scenarios.run_costs(live_run().frame())
        where = ui.t("measured by that run")
    elif s.pol_cost == "gpu":  # c, v and o of the pair's round at K_max, by the engine profile
        pair_on_gpu()
        c, v, o = scenarios.round_costs(s.pair, trace.k_max)
        where = ui.t(
            "the roofline model: {target} + {draft} on {gpu}, batch {batch}, context {ctx}; o is the profile's round cost",
            target=s.pair.target,
            draft=s.pair.draft,
            gpu=s.pair.gpu,
            batch=s.pair.batch,
            ctx=s.pair.ctx,
        )
    got = scenarios.compared(s.rules, trace, c, v, o)
    frame = got["frame"]
    st.caption(
        ui.t(
            "Trace — {what}. Costs: c = {c}, v = {v}, o = {o} ({where}).",
            what=what,
            c=f"{c:.4g}",
            v=f"{v:.3g}",
            o=f"{o:.3g}",
            where=where,
        )
    )
    priced = s.pair.profile.caption() if s.pol_cost == "gpu" and not from_live else None
    if priced:  # every figure below is priced by the roofline with this profile
        st.caption(priced)
    ui.chart(ui.figure(figures.policy_bars, frame, lang=ui.language()), key="fig_policies")
    table = frame.round(3).assign(
        policy=frame["policy"].map(ui.message),  # the rules' labels are i18n.Phrase
        kind=frame["kind"].map(lambda k: ui.t(scenarios.KINDS[k]) if k in scenarios.KINDS else k),
    )
    ui.table(table, scenarios.POLICY_COLUMNS, key=key("tbl_policies"))
    left, right = st.columns(2)
    with left:
        ui.chart(ui.figure(figures.k_over_rounds, got["ks"], lang=ui.language()), key="fig_k_rounds")
    with right:
        ui.chart(
            ui.figure(figures.draft_length_histogram, got["ks"], trace.k_max, lang=ui.language()), key="fig_k_hist"
        )
    ui.selectbox(PAGE, P["sweep"])
    figure = ui.figure(
        figures.policy_sweep, got["swept"], s.rules.sweep, got["best"], got["oracle"], lang=ui.language()
    )
    ui.chart(figure, key="fig_policy_sweep")
    st.caption(
        ui.t(
            "Where the line sits below the best static K the rule loses to a fixed K; near 1 it drafts almost nothing (a threshold too high), and a threshold of 0 drafts K_max every round."
        )
    )
    if priced:
        st.caption(priced)


def ngram_section(s: Scenario) -> None:
    c1, c2 = st.columns([1, 1])
    with c1:
        ui.radio(PAGE, P["ng_src"], horizontal=True)
    with c2:
        ui.number_input(
            PAGE,
            P["ng_c"],
            format="%.4g",
            help=ui.t(
                "The lookup costs about 0.04 ms on the bundled prompts and the bundled target's step about 6 ms (performance.md, ngram), so c ≈ 150 there."
            ),
        )
    if st.session_state[key("ng_src")] == "text":
        ui.text_box(PAGE, P["ng_text"], area=True, height=150)
    texts = s.ngram.texts()
    if not any(len(t.encode("utf-8")) > 1 for t in texts):
        raise ValueError(ui.t("text: type at least two characters for prompt lookup to search"))
    frame = scenarios.ngram_table(s.ngram)
    ui.chart(ui.figure(figures.ngram_by_k, frame, lang=ui.language()), key="fig_ngram")
    ui.table(frame.round(3), scenarios.NGRAM_COLUMNS, key=key("tbl_ngram"))
    st.caption(
        ui.t(
            "Prompt lookup replayed against the text itself, as if the target wrote exactly this text: each round drafts what followed the earliest earlier occurrence of the last n bytes (transformers: n = 2, then 1; vLLM: n = 5) and accepts the leading bytes that match. It measures how much the text repeats, not a model. The button below runs the real target."
        )
    )
    c1, c2 = st.columns([1, 3])
    with c1:
        ui.number_input(PAGE, P["ng_k"])
    run_clicked = c2.button(
        ui.t("Run the bundled target with n-gram drafts and with its draft model"), icon=":material/play_arrow:"
    )
    if run_clicked:
        st.session_state[key("ngram_runs")] = run_both(texts if s.ngram.source == "text" else None, s.ng_k)
    frame = st.session_state.get(key("ngram_runs"))
    if frame is not None:
        drafters = frame["drafter"].map(lambda d: ui.t(scenarios.DRAFTERS[d]) if d in scenarios.DRAFTERS else d)
        ui.table(frame.assign(drafter=drafters), scenarios.RUN_COLUMNS, key=key("tbl_ngram_runs"))
        st.caption(
            ui.t(
                "Greedy, 64 new tokens per prompt, each against target-only decoding on this server (the Live benchmark page's engine and queue). The lookup's cost is measured, not taken as zero."
            )
        )


def live_run():
    """The live page's last run in this session (None before one)."""
    from specviz.app import live

    return live.last_run(st.session_state)


def run_both(texts: tuple[str, ...] | None, k: int):
    """The n-gram drafter against the bundled draft model at K (:func:`specviz.app.live.compare_ngram_to_draft`),
    with a progress bar."""
    from specviz.app import live

    bar = st.progress(0.0, text=ui.t("Starting…"))
    frame = live.compare_ngram_to_draft(
        k, texts[0] if texts else None, lambda share, pair: bar.progress(share, text=pair)
    )
    bar.empty()
    return frame


SECTIONS = dict(
    zip(
        scenarios.VIEWS,
        (
            tree_section,
            shapes_section,
            table_section,
            hardware_section,
            engine_section,
            policies_section,
            ngram_section,
        ),
        strict=True,
    )
)


def sidebar_controls() -> None:
    with st.sidebar:
        st.header(ui.t("Acceptance by rank"))
        ui.radio(PAGE, P["p_src"])
        if st.session_state[key("p_src")] == "typed":
            ui.text_box(PAGE, P["p"])
        elif st.session_state[key("p_src")] == "library":
            ui.number_input(PAGE, P["run"])
            st.caption(
                ui.t(
                    "A tree run's measured p̂ (bench --tree, or the Live page's draft trees); a chain run gives p_1 = α."
                )
            )
        elif st.session_state[key("p_src")] == "live":
            st.caption(ui.t("Run draft trees on the Live benchmark page; its p̂ appears here."))
        else:
            ui.slider(PAGE, P["alpha"], step=0.01)
            ui.slider(PAGE, P["ranks"])
        st.header(ui.t("Tree"))
        ui.slider(PAGE, P["budget"])
        ui.slider(PAGE, P["depth"])
        st.header(ui.t("Cost model"))
        ui.number_input(PAGE, P["c"], format="%.4g")
        ui.number_input(PAGE, P["v"], step=0.01, format="%.3f")


st.title(ui.t("Drafting strategies"))
st.caption(
    ui.t(
        "Serving stacks draft trees, not only chains: several candidates per position, verified in one target forward. Under positional acceptance (the target takes the draft's r-th choice with probability p_r) a tree's expected tokens per round follow from its shape; Sequoia's dynamic program finds the best shape."
    )
)
ui.restore(PAGE, SPEC)
view = ui.values(PAGE, SPEC)
try:
    p, source = scenarios.chosen_p(view, live_run)
except ValueError as exc:
    ui.show_error(exc)
    p, source = trees.geometric_p(P["alpha"].default, P["ranks"].default), ui.t("the default profile")
st.caption(ui.t("p ({source}) = {values}", source=ui.message(source), values=", ".join(f"{x:.3f}" for x in p)))
ui.show_open_tab(PAGE, P["view"], SECTIONS, scenarios.scenario(view, p))
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

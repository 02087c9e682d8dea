"""Drafting strategies: token trees — how many tokens a tree buys over a chain, and which tree to draft."""

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app import figures, profiles, router, ui
from specviz.app.share import Param, by_key
from specviz.base.i18n import N_
from specviz.core import hardware, heads, policies, theory, tree_pricing, trees
from specviz.engine import bench
from specviz.engine.models import ngram

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "strategies", "strategies"
BUDGETS = [1, 2, 4, 8, 16, 32, 64]
P_SOURCES = ("geometric", "typed", "library", "live")  #: where p comes from (slugs: a link names them)
COSTS = ("cv", "gpu")  #: where a round's cost comes from (slugs: a link names them)
COST_LABELS = (N_("c and v"), N_("a pair on a GPU"))
PAIRS = tuple(hardware.preset_pairs()["name"])
PAIR_ROWS = hardware.preset_pairs().set_index("name")
HEADS = heads.load_heads()
#: the heads that draft one tree level per forward (EAGLE, EAGLE-3, MTP): the trees below price a
#: level per draft forward, which a Medusa head (every position in one pass) does not do
SEQUENTIAL_HEADS = tuple(HEADS.index[~HEADS["kind"].isin(heads.PARALLEL)])
PAIR_DRAFT = "pair"  #: the draft choice "the preset pair's draft model"
HEAD_KINDS = {"eagle": "EAGLE", "eagle3": "EAGLE-3", "mtp": "MTP"}  #: a head's kind -> its name
GPUS = tuple(hardware.load_catalog()[1].index)
VIEWS = ("tree", "shapes", "budget_depth", "hardware", "flags", "policies", "ngram")  #: the tabs (slugs)
VIEW_LABELS = (
    N_("Optimal tree"),
    N_("Shapes by budget"),
    N_("Budget × depth"),
    N_("Hardware-aware"),
    N_("Engine flags"),
    N_("Draft-length policies"),
    N_("N-gram drafts"),
)
NGRAM_SOURCES = ("bundled", "text")
TRACE_SOURCES = ("synthetic", "upload", "live")  #: where the trace comes from
CONFIDENCE = ("calibrated", "flat")
LIVE_RUN = N_("the live page's last run")
#: The names of policies.SWEEPS' rules (a link carries the rule's name)
SWEEP_LABELS = {
    "llama.cpp p_min": N_("llama.cpp p_min"),
    "HF confidence threshold": N_("HF confidence threshold"),
    "SpecDec++ threshold": N_("SpecDec++ threshold"),
}
SPEC = (
    Param(
        "p_src",
        "geometric",
        "choice",
        choices=P_SOURCES,
        label=N_("p from"),
        labels=(N_("geometric from α"), N_("typed"), N_("a run in the library"), LIVE_RUN),
    ),
    Param("alpha", 0.6, "float", 0.0, 1.0, label=N_("α (p_r = α (1 − α)^(r−1))")),
    Param("ranks", 4, "int", 1, 16, label=N_("Ranks")),
    Param("p", "0.6, 0.2, 0.1", "text", hi=400, label=N_("p_1, p_2, … (comma-separated, sum ≤ 1)")),
    Param("run", 1, "int", 1, 2**31 - 1, label=N_("Run id (the Measured data page lists them)")),
    Param("budget", 16, "int", 1, 128, label=N_("Budget (draft tokens per round)")),
    Param("depth", 6, "int", 1, 16, label=N_("Maximum depth")),
    Param("c", 20.0, "float", 1.0, 1000.0, log=True, label=N_("c = T_target / T_draft")),
    Param("v", 0.02, "float", 0.0, 2.0, label=N_("v (extra verify cost per token)")),
    Param("cost", "cv", "choice", choices=COSTS, label=N_("Cost of a round from"), labels=COST_LABELS),
    Param("pair", PAIRS[0], "choice", choices=PAIRS, label=N_("Pair")),
    Param("gpu", "H100-SXM5-80GB", "choice", choices=GPUS, label=N_("GPU")),
    Param("ctx", 1024, "int", 16, 131072, log=True, label=N_("Context")),
    Param("batch", 1, "int", 1, 256, log=True, label=N_("Batch")),
    Param("draft", PAIR_DRAFT, "choice", choices=(PAIR_DRAFT, *SEQUENTIAL_HEADS), label=N_("Draft")),
    profiles.engine_param(),  # a catalogue profile, or custom with its terms in eng_terms
    profiles.terms_param(),
    Param(
        "trace_src",
        "synthetic",
        "choice",
        choices=TRACE_SOURCES,
        label=N_("Trace"),
        labels=(N_("synthetic"), N_("an uploaded trace"), LIVE_RUN),
    ),
    Param("t_alpha", 0.8, "float", 0.01, 0.99, label=N_("α (mean acceptance)")),
    Param("k_max", 16, "int", 1, policies.MAX_TRACE_K, label=N_("K_max")),
    Param("rounds", 20000, "int", 100, policies.MAX_TRACE_ROUNDS, log=True, label=N_("Rounds")),
    Param("seed", 0, "int", 0, 2**31 - 1, label=N_("Seed")),
    Param(
        "confidence",
        "calibrated",
        "choice",
        choices=CONFIDENCE,
        label=N_("Draft confidence"),
        labels=(N_("calibrated"), N_("flat")),
    ),
    Param("o", 0.0, "float", 0.0, 2.0, label=N_("o (overhead per round)")),
    Param("hf_start", 20, "int", 1, 64, label=N_("HF heuristic: start K")),
    Param("hf_thr", 0.4, "float", 0.0, 1.0, label=N_("HF confidence threshold")),
    Param("p_min", 0.75, "float", 0.0, 1.0, label=N_("llama.cpp p_min")),
    Param("sdpp", 0.7, "float", 0.0, 1.0, label=N_("SpecDec++ threshold")),
    Param(
        "sweep",
        "llama.cpp p_min",
        "choice",
        choices=tuple(policies.SWEEPS),
        label=N_("Sweep one rule's parameter from 0 to 1"),
        labels=tuple(SWEEP_LABELS[name] for name in policies.SWEEPS),
    ),
    Param("pol_cost", "cv", "choice", choices=COSTS, label=N_("Costs from"), labels=COST_LABELS),
    Param(
        "ng_src",
        "bundled",
        "choice",
        choices=NGRAM_SOURCES,
        label=N_("Text"),
        labels=(N_("bundled prompts"), N_("my text")),
    ),
    Param("ng_text", "", "text", hi=20000, label=N_("Text (UTF-8 bytes are the tokens)")),
    Param("ng_c", 150.0, "float", 1.0, 10000.0, log=True, label=N_("c = T_target / T_lookup")),
    Param("ng_k", 8, "int", 1, 16, label=N_("K for the run")),
    Param("view", "tree", "choice", choices=VIEWS, labels=VIEW_LABELS),
)
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def shown(frame: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """``frame`` for display: the columns named in ``columns`` (canonical name -> msgid of its heading) renamed."""
    return frame.rename(columns={name: ui.t(k) for name, k in columns.items()})


def chosen_p(view: dict) -> tuple[np.ndarray, str]:
    """(p_1, p_2, …, where it came from): a geometric profile from α, as typed, or measured by a tree run
    in the library or on the live page (ValueError saying why a source cannot give one)."""
    if view["p_src"] == "typed":
        return trees.parse_p(view["p"]), ui.t("typed")
    if view["p_src"] == "geometric":
        return (
            trees.geometric_p(view["alpha"], view["ranks"]),
            ui.t("geometric from α = {alpha}", alpha=f"{view['alpha']:g}"),
        )
    if view["p_src"] == "library":
        engine = ui.library()
        if engine is None:
            raise ValueError(ui.t("the run library cannot be opened, so p cannot come from a run"))
        frame = ui.load_runs(engine, ui.library_runs(engine), [view["run"]])
        return trees.p_from_measurements(frame, ui.t("run {run}", run=view["run"]))
    result = live_run()
    if result is None or not result.rows:
        raise ValueError(
            ui.t("the live page has no finished run in this session yet: run one there (draft trees), or type p")
        )
    return trees.p_from_measurements(result.frame(), ui.t(N_("the live page's last run")))


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
    ui.chart(
        figures.tree_figure(x, y, tree.parents, trees.path_probabilities(tree, p), labels, lang=ui.language()),
        key="fig_tree",
    )
    st.caption(
        ui.t("Each node is a draft token labelled by its rank among its siblings; colour = the chance it is reached.")
    )


def shapes_section(view: dict, p: np.ndarray) -> None:
    frame = shapes(tuple(p), tuple(b for b in BUDGETS if b <= 64), view["depth"])
    ui.chart(figures.tokens_by_budget(frame, lang=ui.language()), key="fig_shapes")
    st.caption(
        ui.t(
            "Depth at most {depth}. The chain stops gaining once the budget exceeds the depth; trees spend the budget on siblings instead.",
            depth=view["depth"],
        )
    )
    ui.csv_download(ui.t("Download (CSV)"), lambda: frame, "tree_shapes.csv", key="dl_shapes")


def table_section(view: dict, p: np.ndarray) -> None:
    frame = table(tuple(p), tuple(BUDGETS), view["depth"])
    wide = frame.pivot(index="budget", columns="depth", values="expected_tokens")
    wide = wide.rename_axis(index=ui.t("budget"), columns=ui.t("depth"))
    st.dataframe(wide.style.format("{:.3f}"), width="stretch")
    st.caption(ui.t("Expected tokens per round of the optimal tree, by budget (rows) and maximum depth (columns)."))


def pair_on_gpu() -> tuple[dict, str, str]:
    """Draw the pair, GPU, context, batch, draft and engine profile controls; return (the page's
    values, the target, the draft: the pair's draft model or a head of its target)."""
    c1, c2, c3, c4 = st.columns([3, 2, 1, 1])
    with c1:
        ui.selectbox(PAGE, P["pair"])
    with c2:
        ui.selectbox(PAGE, P["gpu"])
    with c3:
        ui.number_input(PAGE, P["ctx"])
    with c4:
        ui.number_input(PAGE, P["batch"])
    pair = PAIR_ROWS.loc[st.session_state[key("pair")]]
    c1, c2 = st.columns(2)
    with c1:
        draft_control(pair)
    with c2:
        profiles.engine_controls(PAGE, P["engine"], P["eng_terms"])
    view = ui.values(PAGE, SPEC)
    return view, pair["target"], pair["draft"] if view["draft"] == PAIR_DRAFT else view["draft"]


def draft_control(pair: pd.Series) -> None:
    """The draft selectbox: the pair's draft model, or a head trained for its target. A head of another
    target (from a link, or left from another pair) is reported and replaced by the pair's draft."""
    offered = (PAIR_DRAFT, *(h for h in heads.heads_for(pair["target"]) if h in SEQUENTIAL_HEADS))
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
        return ui.t("{head} ({kind} head)", head=draft, kind=HEAD_KINDS[HEADS.loc[draft, "kind"]])

    st.selectbox(ui.t(P["draft"].label), offered, key=key("draft"), format_func=label)


@ui.cached
def level_costs(target: str, draft: str, gpu: str, batch: int, ctx: int, most: int, engine: str) -> dict:
    """tree_pricing.level_costs with the profile ``engine`` (:func:`profiles.engine_key`)."""
    return tree_pricing.level_costs(target, draft, gpu, batch, ctx, most, profiles.efficiency_of_key(engine))


def hardware_section(view: dict, p: np.ndarray) -> None:
    ui.radio(PAGE, P["cost"], horizontal=True)
    if view["cost"] == "cv":
        c, v = view["c"], view["v"]
        tree, s = trees.best_tree_for_hardware(p, 1.0 / c, lambda n: 1.0 + v * (n - 1), view["budget"], view["depth"])
        how = ui.t(
            "A round costs depth · T_draft (T_draft = T_target / c = {t_draft} target steps) plus one target forward over n + 1 positions, 1 + v·n target steps (v = {v}, set in the sidebar)",
            t_draft=f"{1 / c:.3g}",
            v=f"{v:g}",
        )
    else:
        view, target, draft = pair_on_gpu()
        engine = profiles.engine_key(view["engine"], view["eng_terms"])
        costs = level_costs(target, draft, view["gpu"], view["batch"], view["ctx"], view["budget"], engine)
        tree, s = tree_pricing.priced_tree(p, costs, view["budget"], view["depth"])
        n = view["budget"] + 1
        how = ui.t(
            "The roofline model for {target} verified and {draft} drafting on one {gpu} (bf16, batch {batch}, context {ctx}): a draft forward over one token takes {t_draft} ms, the target's forward over 1 / {n} tokens {t_one} / {t_n} ms, a round's fixed cost {t_round} ms. Each level of the tree is drafted by one forward over the nodes it extends, and all its nodes are verified in one forward",
            target=target,
            draft=draft,
            gpu=view["gpu"],
            batch=view["batch"],
            ctx=view["ctx"],
            t_draft=f"{float(costs['t_draft'][0]) * 1e3:.2f}",
            n=n,
            t_one=f"{float(costs['t_target']) * 1e3:.2f}",
            t_n=f"{float(costs['t_verify'][n - 2]) * 1e3:.2f}",
            t_round=f"{float(costs['o'] * costs['t_target']) * 1e3:.3g}",
        )
    best = ui.t("do not speculate") if tree.drafts == 0 else ui.message(tree.describe())
    st.metric(ui.t("Best tree for this cost model"), best, delta=ui.t("speedup {s}×", s=f"{s:.2f}"), delta_color="off")
    st.caption(
        ui.t(
            "{how}; the best tree maximises tokens per unit of time, up to the budget and depth chosen (sidebar).",
            how=how,
        )
    )
    if view["cost"] == "gpu":
        st.caption(profiles.caption(view["engine"], view["eng_terms"]))


def engine_section(view: dict, p: np.ndarray) -> None:
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
    st.code(trees.sglang_flags(depth, topk, view["budget"]), language="bash")
    st.caption(ui.t("SGLang counts the root in --speculative-num-draft-tokens: it is the budget plus one."))


@ui.cached
def synthetic(alpha: float, k_max: int, rounds: int, seed: int, confidence: str) -> policies.Trace:
    return policies.synthetic_trace(alpha, k_max, rounds, np.random.default_rng(seed), confidence)


@ui.parsed_upload(max_entries=4)
def parsed_trace(data: bytes, name: str) -> policies.Trace:
    return policies.parse_trace(data, name)


def chosen_trace(view: dict) -> tuple[policies.Trace, str]:
    """(trace, what it is): synthetic from the controls, or the uploaded file (ValueError naming it)."""
    if view["trace_src"] == "synthetic":
        args = (view["t_alpha"], view["k_max"], view["rounds"], view["seed"], view["confidence"])
        return synthetic(*args), ui.t(
            "synthetic: {rounds} rounds, α = {alpha}, K_max = {k_max}, {confidence} confidences, seed {seed}",
            rounds=f"{view['rounds']:,}",
            alpha=f"{view['t_alpha']:g}",
            k_max=view["k_max"],
            confidence=ui.t(P["confidence"].choice_label(view["confidence"])),
            seed=view["seed"],
        )
    if view["trace_src"] == "live":
        result = live_run()
        if result is None or result.trace is None:
            raise ValueError(
                ui.t(
                    "trace: the live page has no recorded trace in this session: run it with 'Record the greedy trace' ticked (greedy, chains), or choose synthetic"
                )
            )
        return result.trace, ui.t(
            "the live page's last run: {rounds} positions of greedy output, K_max = {k_max}",
            rounds=f"{result.trace.rounds:,}",
            k_max=result.trace.k_max,
        )
    upload = st.file_uploader(
        ui.t("Trace file (python -m specviz bench --trace FILE)"), type=["jsonl"], key=key("trace_file")
    )
    if upload is None:
        raise ValueError(
            ui.t("trace: upload a trace file written by python -m specviz bench --trace, or choose synthetic")
        )
    trace = parsed_trace(upload.getvalue(), upload.name)
    what = (
        N_("{name}: {count} positions, K_max = {k_max}")
        if trace.positional
        else N_("{name}: {count} rounds, K_max = {k_max}")
    )
    return trace, ui.t(what, name=upload.name, count=f"{trace.rounds:,}", k_max=trace.k_max)


def run_costs(frame) -> tuple[float, float, float]:
    """c, v, o measured by a run: medians over its greedy cells."""
    greedy = frame[frame["temperature"] == 0]
    return tuple(float(greedy[name].median()) for name in ("c_used", "v", "o"))


def chosen_rules(view: dict, k_max: int) -> list[policies.Policy]:
    return [
        policies.hf_heuristic(view["hf_start"]),
        policies.hf_confidence(view["hf_thr"], k_max),
        policies.llamacpp_pmin(view["p_min"], k_max),
        policies.llamacpp_pmin(view["p_min"], k_max, keep_crossing=False),
        policies.specdecpp(view["sdpp"], k_max),
    ]


def policies_section(view: dict, p: np.ndarray) -> None:
    ui.radio(PAGE, P["trace_src"], horizontal=True)
    if view["trace_src"] == "synthetic":
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
    trace, what = chosen_trace(ui.values(PAGE, SPEC))
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
    live_run = view["trace_src"] == "live"
    if not live_run:
        ui.radio(PAGE, P["pol_cost"], horizontal=True)
    view = ui.values(PAGE, SPEC)
    c, v, o = view["c"], view["v"], view["o"]
    where = ui.t("c and v from the sidebar")
    if live_run:  # that run's measured costs
        c, v, o = run_costs(live_run().frame())
        where = ui.t("measured by that run")
    elif view["pol_cost"] == "gpu":  # c, v and o of the pair's round at K_max, by the engine profile
        view, target, draft = pair_on_gpu()
        eff = profiles.efficiency(view["engine"], view["eng_terms"])
        costs = hardware.pair_costs(target, draft, view["gpu"], view["batch"], view["ctx"], trace.k_max, efficiency=eff)
        c, v, o = float(costs["c"]), float(costs["v"]), float(costs["o"])
        where = ui.t(
            "the roofline model: {target} + {draft} on {gpu}, batch {batch}, context {ctx}; o is the profile's round cost",
            target=target,
            draft=draft,
            gpu=view["gpu"],
            batch=view["batch"],
            ctx=view["ctx"],
        )
    rules = chosen_rules(view, trace.k_max)
    frame = compared(trace, tuple(rules), c, v, o)
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
    priced = profiles.caption(view["engine"], view["eng_terms"]) if view["pol_cost"] == "gpu" and not live_run else None
    if priced:  # every figure below is priced by the roofline with this profile
        st.caption(priced)
    ui.chart(figures.policy_bars(frame, lang=ui.language()), key="fig_policies")
    table = frame.round(3).assign(
        policy=frame["policy"].map(ui.message),  # the rules' labels are i18n.Phrase
        kind=frame["kind"].map(lambda k: ui.t(KINDS[k]) if k in KINDS else k),
    )
    st.dataframe(shown(table, POLICY_COLUMNS), hide_index=True, width="stretch")
    ks = {r.label: policies.replay(r, trace, c, v, o).k for r in rules}
    left, right = st.columns(2)
    with left:
        ui.chart(figures.k_over_rounds(ks, lang=ui.language()), key="fig_k_rounds")
    with right:
        ui.chart(figures.draft_length_histogram(ks, trace.k_max, lang=ui.language()), key="fig_k_hist")
    ui.selectbox(PAGE, P["sweep"])
    view = ui.values(PAGE, SPEC)
    swept = policies.sweep(view["sweep"], np.linspace(0, 1, 21), trace, c, v, o)
    best = float(frame.loc[frame.kind == "best static K", "speedup"].iloc[0])
    oracle = float(frame.loc[frame.kind == "oracle", "speedup"].iloc[0])
    ui.chart(figures.policy_sweep(swept, view["sweep"], best, oracle, lang=ui.language()), key="fig_policy_sweep")
    st.caption(
        ui.t(
            "Where the line sits below the best static K the rule loses to a fixed K; near 1 it drafts almost nothing (a threshold too high), and a threshold of 0 drafts K_max every round."
        )
    )
    if priced:
        st.caption(priced)


def compared(trace: policies.Trace, rules: tuple, c: float, v: float, o: float):
    return policies.compare(trace, list(rules), c, v, o)


@ui.cached
def ngram_table(texts: tuple[str, ...], c: float, v: float):
    return ngram.lookup_table([list(t.encode("utf-8")) for t in texts], range(1, 17), c, v)


def ngram_section(view: dict, p: np.ndarray) -> None:
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
    view = ui.values(PAGE, SPEC)
    texts = tuple(bench.load_prompts()) if view["ng_src"] == "bundled" else (view["ng_text"],)
    if not any(len(t.encode("utf-8")) > 1 for t in texts):
        raise ValueError(ui.t("text: type at least two characters for prompt lookup to search"))
    frame = ngram_table(texts, view["ng_c"], view["v"])
    ui.chart(figures.ngram_by_k(frame, lang=ui.language()), key="fig_ngram")
    st.dataframe(shown(frame.round(3), NGRAM_COLUMNS), hide_index=True, width="stretch")
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
        st.session_state[key("ngram_runs")] = run_both(texts if view["ng_src"] == "text" else None, view["ng_k"])
    frame = st.session_state.get(key("ngram_runs"))
    if frame is not None:
        drafters = frame["drafter"].map(lambda d: ui.t(DRAFTERS[d]) if d in DRAFTERS else d)
        st.dataframe(shown(frame.assign(drafter=drafters), RUN_COLUMNS), hide_index=True, width="stretch")
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


#: Display names of the tables' columns (canonical name -> msgid); a CSV keeps the canonical names.
POLICY_COLUMNS = {
    "policy": N_("policy"),
    "kind": N_("kind"),
    "speedup": N_("speedup"),
    "tokens_per_round": N_("tokens_per_round"),
    "drafts_per_round": N_("drafts_per_round"),
    "wasted_per_round": N_("wasted_per_round"),
}
KINDS = {
    "rule": N_("rule"),
    "best static K": N_("best static K"),
    "oracle": N_("oracle"),
}  #: policies.compare's kinds -> their names
NGRAM_COLUMNS = {
    "rule": N_("rule"),
    "rounds": N_("rounds"),
    "proposal_share": N_("proposal_share"),
    "alpha": N_("alpha"),
    "tokens_per_round": N_("tokens_per_round"),
    "speedup": N_("speedup"),
}
RUN_COLUMNS = {
    "drafter": N_("drafter"),
    "E[N] measured": N_("E[N] measured"),
    "speedup": N_("speedup"),
    "greedy_exact": N_("greedy_exact"),
}
DRAFTERS = {"n-gram (prompt lookup)": N_("n-gram (prompt lookup)"), "bundled draft model": N_("bundled draft model")}

SECTIONS = dict(
    zip(
        VIEWS,
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
        "Engines draft trees, not only chains: several candidates per position, verified in one target forward. Under positional acceptance (the target takes the draft's r-th choice with probability p_r) a tree's expected tokens per round follow from its shape; Sequoia's dynamic program finds the best shape."
    )
)
ui.restore(PAGE, SPEC)
view = ui.values(PAGE, SPEC)
try:
    p, source = chosen_p(view)
except ValueError as exc:
    ui.show_error(exc)
    p, source = trees.geometric_p(P["alpha"].default, P["ranks"].default), ui.t("the default profile")
st.caption(ui.t("p ({source}) = {values}", source=ui.message(source), values=", ".join(f"{x:.3f}" for x in p)))
ui.show_open_tab(PAGE, P["view"], SECTIONS, view, p)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

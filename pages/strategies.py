"""Drafting strategies: token trees — how many tokens a tree buys over a chain, and which tree to draft."""

import numpy as np
import pandas as pd
import streamlit as st

from specviz import bench, figures, hardware, policies, theory, trees, ui
from specviz.models import ngram
from specviz.share import Param, by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

PAGE, URL = "strategies", "strategies"
BUDGETS = [1, 2, 4, 8, 16, 32, 64]
P_SOURCES = ("geometric from α", "typed", "a run in the library", "the live page's last run")
COSTS = ("c and v", "a pair on a GPU")
PAIRS = tuple(hardware.preset_pairs()["name"])
GPUS = tuple(hardware.load_catalog()[1].index)
VIEWS = (
    "Optimal tree",
    "Shapes by budget",
    "Budget × depth",
    "Hardware-aware",
    "Engine flags",
    "Draft-length policies",
    "N-gram drafts",
)
NGRAM_SOURCES = ("bundled prompts", "my text")
TRACE_SOURCES = ("synthetic", "an uploaded trace", "the live page's last run")
CONFIDENCE = ("calibrated", "flat")
SPEC = (
    Param("p_src", "geometric from α", "choice", choices=P_SOURCES),
    Param("alpha", 0.6, "float", 0.0, 1.0),
    Param("ranks", 4, "int", 1, 16),
    Param("p", "0.6, 0.2, 0.1", "text", hi=400),
    Param("run", 1, "int", 1, 2**31 - 1),
    Param("budget", 16, "int", 1, 128),
    Param("depth", 6, "int", 1, 16),
    Param("c", 20.0, "float", 1.0, 1000.0, log=True),
    Param("v", 0.02, "float", 0.0, 2.0),
    Param("cost", "c and v", "choice", choices=COSTS),
    Param("pair", PAIRS[0], "choice", choices=PAIRS),
    Param("gpu", "H100-SXM5-80GB", "choice", choices=GPUS),
    Param("ctx", 1024, "int", 16, 131072, log=True),
    Param("batch", 1, "int", 1, 256, log=True),
    Param("trace_src", "synthetic", "choice", choices=TRACE_SOURCES),
    Param("t_alpha", 0.8, "float", 0.01, 0.99),
    Param("k_max", 16, "int", 1, 64),
    Param("rounds", 20000, "int", 100, 200000, log=True),
    Param("seed", 0, "int", 0, 2**31 - 1),
    Param("confidence", "calibrated", "choice", choices=CONFIDENCE),
    Param("o", 0.0, "float", 0.0, 2.0),
    Param("hf_start", 20, "int", 1, 64),
    Param("hf_thr", 0.4, "float", 0.0, 1.0),
    Param("p_min", 0.75, "float", 0.0, 1.0),
    Param("sdpp", 0.7, "float", 0.0, 1.0),
    Param("sweep", "llama.cpp p_min", "choice", choices=tuple(policies.SWEEPS)),
    Param("pol_cost", "c and v", "choice", choices=COSTS),
    Param("ng_src", "bundled prompts", "choice", choices=NGRAM_SOURCES),
    Param("ng_text", "", "text", hi=20000),
    Param("ng_c", 150.0, "float", 1.0, 10000.0, log=True),
    Param("ng_k", 8, "int", 1, 16),
    Param("view", "Optimal tree", "choice", choices=VIEWS),
)
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def chosen_p(view: dict) -> tuple[np.ndarray, str]:
    """(p_1, p_2, …, where it came from): a geometric profile from α, as typed, or measured by a tree run
    in the library or on the live page (ValueError saying why a source cannot give one)."""
    if view["p_src"] == "typed":
        return trees.parse_p(view["p"]), "typed"
    if view["p_src"] == "geometric from α":
        return trees.geometric_p(view["alpha"], view["ranks"]), f"geometric from α = {view['alpha']:g}"
    if view["p_src"] == "a run in the library":
        engine = ui.library()
        if engine is None:
            raise ValueError("the run library cannot be opened, so p cannot come from a run")
        frame = ui.load_runs(engine, ui.library_runs(engine), [view["run"]])
        return trees.p_from_measurements(frame, f"run {view['run']}")
    result = st.session_state.get("live.result")
    if result is None or not result.rows:
        raise ValueError(
            "the live page has no finished run in this session yet: run one there (draft trees), or type p"
        )
    return trees.p_from_measurements(result.frame(), "the live page's last run")


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


def pair_on_gpu() -> tuple[dict, pd.Series]:
    """Draw the pair, GPU, context and batch controls; return (the page's values, the preset pair's row)."""
    c1, c2, c3, c4 = st.columns([3, 2, 1, 1])
    with c1:
        ui.selectbox(PAGE, P["pair"], "Pair")
    with c2:
        ui.selectbox(PAGE, P["gpu"], "GPU")
    with c3:
        ui.number_input(PAGE, P["ctx"], "Context")
    with c4:
        ui.number_input(PAGE, P["batch"], "Batch")
    view = ui.values(PAGE, SPEC)
    return view, hardware.preset_pairs().set_index("name").loc[view["pair"]]


def hardware_section(view: dict, p: np.ndarray) -> None:
    ui.radio(PAGE, P["cost"], "Cost of a round from", horizontal=True)
    if view["cost"] == "c and v":
        c, v = view["c"], view["v"]
        t_draft, t_verify = 1.0 / c, (lambda n: 1.0 + v * (n - 1))
        how = (
            f"A round costs depth · T_draft (T_draft = T_target / c = {1 / c:.3g} target steps) plus one target "
            f"forward over n + 1 positions, 1 + v·n target steps (v = {v:g}, set in the sidebar)"
        )
    else:
        view, pair = pair_on_gpu()
        b, ctx = view["batch"], view["ctx"]
        t_draft = float(hardware.step_time(pair["draft"], view["gpu"], b, ctx, 1))
        t_verify = step_times(pair["target"], view["gpu"], b, ctx, view["budget"] + 1)
        how = (
            f"The Hardware & batch page's roofline model for {pair['target']} verified and {pair['draft']} drafting "
            f"on one {view['gpu']} (bf16, batch {b}, context {ctx}): a draft step takes {t_draft * 1e3:.2f} ms, the "
            f"target's forward over 1 / {view['budget'] + 1} tokens {t_verify(1) * 1e3:.2f} / "
            f"{t_verify(view['budget'] + 1) * 1e3:.2f} ms"
        )
    tree, s = trees.best_tree_for_hardware(p, t_draft, t_verify, view["budget"], view["depth"])
    shown = "do not speculate" if tree.drafts == 0 else tree.describe()
    st.metric("Best tree for this cost model", shown, delta=f"speedup {s:.2f}×", delta_color="off")
    st.caption(how + "; the best tree maximises tokens per unit of time, up to the budget and depth chosen (sidebar).")


def step_times(model: str, gpu: str, batch: int, ctx: int, most: int):
    """t(n): the roofline seconds of one forward over n = 1..most tokens (computed once per view)."""
    times = np.atleast_1d(hardware.step_time(model, gpu, batch, ctx, np.arange(1, most + 1)))
    return lambda n: float(times[n - 1])


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


@ui.cached
def synthetic(alpha: float, k_max: int, rounds: int, seed: int, confidence: str) -> policies.Trace:
    return policies.synthetic_trace(alpha, k_max, rounds, np.random.default_rng(seed), confidence)


def chosen_trace(view: dict) -> tuple[policies.Trace, str]:
    """(trace, what it is): synthetic from the controls, or the uploaded file (ValueError naming it)."""
    if view["trace_src"] == "synthetic":
        args = (view["t_alpha"], view["k_max"], view["rounds"], view["seed"], view["confidence"])
        return synthetic(*args), (
            f"synthetic: {view['rounds']:,} rounds, α = {view['t_alpha']:g}, K_max = {view['k_max']}, "
            f"{view['confidence']} confidences, seed {view['seed']}"
        )
    if view["trace_src"] == "the live page's last run":
        result = st.session_state.get("live.result")
        if result is None or result.trace is None:
            raise ValueError(
                "trace: the live page has no recorded trace in this session: run it with "
                "'Record the greedy trace' ticked (greedy, chains), or choose synthetic"
            )
        return result.trace, (
            f"the live page's last run: {result.trace.rounds:,} positions of greedy output, K_max = {result.trace.k_max}"
        )
    upload = st.file_uploader(
        "Trace file (python -m specviz bench --trace FILE)", type=["jsonl"], key=key("trace_file")
    )
    if upload is None:
        raise ValueError("trace: upload a trace file written by python -m specviz bench --trace, or choose synthetic")
    trace = policies.parse_trace(upload.getvalue().decode("utf-8", errors="replace"), upload.name)
    return (
        trace,
        f"{upload.name}: {trace.rounds:,} {'positions' if trace.positional else 'rounds'}, K_max = {trace.k_max}",
    )


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
    ui.radio(PAGE, P["trace_src"], "Trace", horizontal=True)
    if view["trace_src"] == "synthetic":
        c1, c2, c3, c4, c5 = st.columns(5)
        with c1:
            ui.number_input(PAGE, P["t_alpha"], "α (mean acceptance)", step=0.01)
        with c2:
            ui.number_input(PAGE, P["k_max"], "K_max")
        with c3:
            ui.number_input(PAGE, P["rounds"], "Rounds")
        with c4:
            ui.number_input(PAGE, P["seed"], "Seed")
        with c5:
            ui.selectbox(PAGE, P["confidence"], "Draft confidence", help=CONFIDENCE_HELP)
    trace, what = chosen_trace(ui.values(PAGE, SPEC))
    c1, c2, c3, c4, c5 = st.columns(5)
    with c1:
        ui.number_input(PAGE, P["hf_start"], "HF heuristic: start K")
    with c2:
        ui.number_input(PAGE, P["hf_thr"], "HF confidence threshold", step=0.05)
    with c3:
        ui.number_input(PAGE, P["p_min"], "llama.cpp p_min", step=0.05)
    with c4:
        ui.number_input(PAGE, P["sdpp"], "SpecDec++ threshold", step=0.05)
    with c5:
        ui.number_input(PAGE, P["o"], "o (overhead per round)", step=0.01)
    live_run = view["trace_src"] == "the live page's last run"
    if not live_run:
        ui.radio(PAGE, P["pol_cost"], "Costs from", horizontal=True)
    view = ui.values(PAGE, SPEC)
    c, v, o = view["c"], view["v"], view["o"]
    where = "c and v from the sidebar"
    if live_run:  # that run's measured costs
        c, v, o = run_costs(st.session_state["live.result"].frame())
        where = "measured by that run"
    elif view["pol_cost"] == "a pair on a GPU":
        view, pair = pair_on_gpu()
        costs = hardware.pair_costs(pair["target"], pair["draft"], view["gpu"], view["batch"], view["ctx"], trace.k_max)
        c, v = float(costs["c"]), float(costs["v"])
        where = f"the roofline model: {view['pair']} on {view['gpu']}, batch {view['batch']}, context {view['ctx']}"
    rules = chosen_rules(view, trace.k_max)
    frame = compared(trace, tuple(rules), c, v, o)
    st.caption(f"Trace — {what}. Costs: c = {c:.4g}, v = {v:.3g}, o = {o:.3g} ({where}).")
    st.plotly_chart(figures.policy_bars(frame), key="fig_policies")
    st.dataframe(frame.round(3), hide_index=True, width="stretch")
    ks = {r.label: policies.replay(r, trace, c, v, o).k for r in rules}
    left, right = st.columns(2)
    with left:
        st.plotly_chart(figures.k_over_rounds(ks), key="fig_k_rounds")
    with right:
        st.plotly_chart(figures.draft_length_histogram(ks, trace.k_max), key="fig_k_hist")
    ui.selectbox(PAGE, P["sweep"], "Sweep one rule's parameter from 0 to 1")
    view = ui.values(PAGE, SPEC)
    swept = policies.sweep(view["sweep"], np.linspace(0, 1, 21), trace, c, v, o)
    best = float(frame.loc[frame.kind == "best static K", "speedup"].iloc[0])
    oracle = float(frame.loc[frame.kind == "oracle", "speedup"].iloc[0])
    st.plotly_chart(figures.policy_sweep(swept, view["sweep"], best, oracle), key="fig_policy_sweep")
    st.caption(
        "Where the line sits below the best static K the rule loses to a fixed K; near 1 it drafts almost "
        "nothing (a threshold too high), and a threshold of 0 drafts K_max every round."
    )


def compared(trace: policies.Trace, rules: tuple, c: float, v: float, o: float):
    return policies.compare(trace, list(rules), c, v, o)


@ui.cached
def ngram_table(texts: tuple[str, ...], c: float, v: float):
    return ngram.lookup_table([list(t.encode("utf-8")) for t in texts], range(1, 17), c, v)


def ngram_section(view: dict, p: np.ndarray) -> None:
    c1, c2 = st.columns([1, 1])
    with c1:
        ui.radio(PAGE, P["ng_src"], "Text", horizontal=True)
    with c2:
        ui.number_input(PAGE, P["ng_c"], "c = T_target / T_lookup", format="%.4g", help=NGRAM_C_HELP)
    if st.session_state[key("ng_src")] == "my text":
        st.text_area(
            "Text (UTF-8 bytes are the tokens)", key=key("ng_text"), height=150, max_chars=int(P["ng_text"].hi)
        )
    view = ui.values(PAGE, SPEC)
    texts = tuple(bench.load_prompts()) if view["ng_src"] == "bundled prompts" else (view["ng_text"],)
    if not any(len(t.encode("utf-8")) > 1 for t in texts):
        raise ValueError("text: type at least two characters for prompt lookup to search")
    frame = ngram_table(texts, view["ng_c"], view["v"])
    st.plotly_chart(figures.ngram_by_k(frame), key="fig_ngram")
    st.dataframe(frame.round(3), hide_index=True, width="stretch")
    st.caption(
        "Prompt lookup replayed against the text itself, as if the target wrote exactly this text: each round "
        "drafts what followed the earliest earlier occurrence of the last n bytes (transformers: n = 2, then 1; "
        "vLLM: n = 5) and accepts the leading bytes that match. It measures how much the text repeats, not a "
        "model. The button below runs the real target."
    )
    c1, c2 = st.columns([1, 3])
    with c1:
        ui.number_input(PAGE, P["ng_k"], "K for the run")
    run_clicked = c2.button(
        "Run the bundled target with n-gram drafts and with its draft model", icon=":material/play_arrow:"
    )
    if run_clicked:
        st.session_state[key("ngram_runs")] = run_both(texts if view["ng_src"] == "my text" else None, view["ng_k"])
    frame = st.session_state.get(key("ngram_runs"))
    if frame is not None:
        st.dataframe(frame, hide_index=True, width="stretch")
        st.caption(
            "Greedy, 64 new tokens per prompt, each against target-only decoding on this server (the Live benchmark "
            "page's engine and queue). The lookup's cost is measured, not taken as zero."
        )


def run_both(texts: tuple[str, ...] | None, k: int):
    """Measure ``bundled-target+ngram`` and ``bundled`` at K on the bundled prompts (``texts`` None) or the
    given text, through the live page's queue and worker; a table of α̂, E[N], c and the speedup."""
    from specviz import live

    limits = live.limits_from_env()
    rows, bar = [], st.progress(0.0, text="Starting…")
    for i, pair in enumerate(("bundled-target+ngram", "bundled")):
        values = {p.key: p.default for p in live.controls(limits)} | {
            "pair": pair,
            "ks": [k],
            "temps": [0.0],
            "new_tokens": min(64, limits.max_new_tokens),
            "prompts": "custom" if texts else "bundled",
            "text": texts[0] if texts else "",
        }
        run = live.LiveRun(live.make_request(values, limits))
        live.execute(run, lambda i=i, run=run, pair=pair: bar.progress((i + live.progress_bar(run)[0]) / 2, text=pair))
        if not run.rows:
            raise ValueError(f"{pair}: no cell finished ({run.stopped or 'no result'})")
        row = run.frame().iloc[0]
        rows.append(
            {
                "drafter": "n-gram (prompt lookup)" if "+ngram" in pair else "bundled draft model",
                "α̂": row["alpha"],
                "E[N] measured": row["mean_accepted_tokens"],
                "c": row["c_used"],
                "speedup": row["speedup"],
                "greedy_exact": row["greedy_exact"],
            }
        )
    bar.empty()
    return pd.DataFrame(rows).round(3)


NGRAM_C_HELP = (
    "The lookup costs about 0.04 ms on the bundled prompts and the bundled target's step about 6 ms "
    "(performance.md, ngram), so c ≈ 150 there."
)

CONFIDENCE_HELP = (
    "calibrated: the draft's confidence q(x) ~ Beta with mean α, and a position is accepted with probability "
    "q(x), so confidence rules have something to read; flat: q(x) = α always (confidence carries nothing)."
)

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
        st.header("Acceptance by rank")
        ui.radio(PAGE, P["p_src"], "p from")
        if st.session_state[key("p_src")] == "typed":
            st.text_input("p_1, p_2, … (comma-separated, sum ≤ 1)", key=key("p"), max_chars=int(P["p"].hi))
        elif st.session_state[key("p_src")] == "a run in the library":
            ui.number_input(PAGE, P["run"], "Run id (the Measured data page lists them)")
            st.caption(
                "A tree run's measured p̂ (bench --tree, or the Live page's draft trees); a chain run gives p_1 = α."
            )
        elif st.session_state[key("p_src")] == "the live page's last run":
            st.caption("Run draft trees on the Live benchmark page; its p̂ appears here.")
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
    p, source = chosen_p(view)
except ValueError as exc:
    ui.show_error(exc)
    p, source = trees.geometric_p(P["alpha"].default, P["ranks"].default), "the default profile"
st.caption(f"p ({source}) = " + ", ".join(f"{x:.3f}" for x in p))
ui.show_open_tab(PAGE, P["view"], SECTIONS, view, p)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

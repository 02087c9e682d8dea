"""Drafting strategies: token trees — how many tokens a tree buys over a chain, and which tree to draft."""

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app import figures, router, ui
from specviz.app.share import Param, by_key
from specviz.core import hardware, policies, theory, trees
from specviz.engine import bench
from specviz.engine.models import ngram

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

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
#: Catalogue keys of the choices' labels (the stored value, and the URL's, stays the English choice).
LABELS = {
    "geometric from α": "strat.p_src.geometric",
    "typed": "strat.p_src.typed",
    "a run in the library": "strat.p_src.library",
    "the live page's last run": "strat.live_run",
    "c and v": "strat.cost.cv",
    "a pair on a GPU": "strat.cost.gpu",
    "Optimal tree": "strat.view.tree",
    "Shapes by budget": "strat.view.shapes",
    "Budget × depth": "strat.view.table",
    "Hardware-aware": "strat.view.hardware",
    "Engine flags": "strat.view.engine",
    "Draft-length policies": "strat.view.policies",
    "N-gram drafts": "strat.view.ngram",
    "bundled prompts": "strat.ng_src.bundled",
    "my text": "strat.ng_src.mine",
    "synthetic": "strat.trace_src.synthetic",
    "an uploaded trace": "strat.trace_src.upload",
    "calibrated": "strat.confidence.calibrated",
    "flat": "strat.confidence.flat",
    "llama.cpp p_min": "strat.p_min",
    "HF confidence threshold": "strat.hf_thr",
    "SpecDec++ threshold": "strat.sdpp",
}
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
    Param("k_max", 16, "int", 1, policies.MAX_TRACE_K),
    Param("rounds", 20000, "int", 100, policies.MAX_TRACE_ROUNDS, log=True),
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


def label(choice: str) -> str:
    """A choice's label in the session's language (a choice without a catalogue key shows as it is)."""
    return ui.t(LABELS[choice]) if choice in LABELS else choice


def shown(frame: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """``frame`` for display: the columns named in ``columns`` (canonical name -> catalogue key) renamed."""
    return frame.rename(columns={name: ui.t(k) for name, k in columns.items()})


def chosen_p(view: dict) -> tuple[np.ndarray, str]:
    """(p_1, p_2, …, where it came from): a geometric profile from α, as typed, or measured by a tree run
    in the library or on the live page (ValueError saying why a source cannot give one)."""
    if view["p_src"] == "typed":
        return trees.parse_p(view["p"]), ui.t("strat.p_src.typed")
    if view["p_src"] == "geometric from α":
        return (
            trees.geometric_p(view["alpha"], view["ranks"]),
            ui.t("strat.source.geometric", alpha=f"{view['alpha']:g}"),
        )
    if view["p_src"] == "a run in the library":
        engine = ui.library()
        if engine is None:
            raise ValueError(ui.t("strat.err.no_library"))
        frame = ui.load_runs(engine, ui.library_runs(engine), [view["run"]])
        return trees.p_from_measurements(frame, ui.t("strat.source.run", run=view["run"]))
    result = live_run()
    if result is None or not result.rows:
        raise ValueError(ui.t("strat.err.no_live_run"))
    return trees.p_from_measurements(result.frame(), ui.t("strat.live_run"))


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
    left.metric(ui.t("strat.tree_metric"), f"{f:.3f}", delta=ui.message(tree.describe()), delta_color="off")
    right.metric(
        ui.t("strat.chain_metric"),
        f"{chain_f:.3f}",
        delta=ui.t("strat.tree_buys", ratio=f"{f / chain_f:.2f}"),
        delta_color="off",
    )
    x, y = tree.layout()
    labels = [str(r) if r else "•" for r in tree.ranks]
    ui.chart(
        figures.tree_figure(x, y, tree.parents, trees.path_probabilities(tree, p), labels, lang=ui.language()),
        key="fig_tree",
    )
    st.caption(ui.t("strat.tree_caption"))


def shapes_section(view: dict, p: np.ndarray) -> None:
    frame = shapes(tuple(p), tuple(b for b in BUDGETS if b <= 64), view["depth"])
    ui.chart(figures.tokens_by_budget(frame, lang=ui.language()), key="fig_shapes")
    st.caption(ui.t("strat.shapes_caption", depth=view["depth"]))
    ui.csv_download(ui.t("strat.dl"), lambda: frame, "tree_shapes.csv", key="dl_shapes")


def table_section(view: dict, p: np.ndarray) -> None:
    frame = table(tuple(p), tuple(BUDGETS), view["depth"])
    wide = frame.pivot(index="budget", columns="depth", values="expected_tokens")
    wide = wide.rename_axis(index=ui.t("strat.col.budget"), columns=ui.t("strat.col.depth"))
    st.dataframe(wide.style.format("{:.3f}"), width="stretch")
    st.caption(ui.t("strat.table_caption"))


def pair_on_gpu() -> tuple[dict, pd.Series]:
    """Draw the pair, GPU, context and batch controls; return (the page's values, the preset pair's row)."""
    c1, c2, c3, c4 = st.columns([3, 2, 1, 1])
    with c1:
        ui.selectbox(PAGE, P["pair"], ui.t("strat.pair"))
    with c2:
        ui.selectbox(PAGE, P["gpu"], ui.t("strat.gpu"))
    with c3:
        ui.number_input(PAGE, P["ctx"], ui.t("strat.ctx"))
    with c4:
        ui.number_input(PAGE, P["batch"], ui.t("strat.batch"))
    view = ui.values(PAGE, SPEC)
    return view, hardware.preset_pairs().set_index("name").loc[view["pair"]]


def hardware_section(view: dict, p: np.ndarray) -> None:
    ui.radio(PAGE, P["cost"], ui.t("strat.cost_from"), horizontal=True, format_func=label)
    if view["cost"] == "c and v":
        c, v = view["c"], view["v"]
        t_draft, t_verify = 1.0 / c, (lambda n: 1.0 + v * (n - 1))
        how = ui.t("strat.how_cv", t_draft=f"{1 / c:.3g}", v=f"{v:g}")
    else:
        view, pair = pair_on_gpu()
        b, ctx = view["batch"], view["ctx"]
        t_draft = float(hardware.step_time(pair["draft"], view["gpu"], b, ctx, 1))
        t_verify = step_times(pair["target"], view["gpu"], b, ctx, view["budget"] + 1)
        how = ui.t(
            "strat.how_gpu",
            target=pair["target"],
            draft=pair["draft"],
            gpu=view["gpu"],
            batch=b,
            ctx=ctx,
            t_draft=f"{t_draft * 1e3:.2f}",
            n=view["budget"] + 1,
            t_one=f"{t_verify(1) * 1e3:.2f}",
            t_n=f"{t_verify(view['budget'] + 1) * 1e3:.2f}",
        )
    tree, s = trees.best_tree_for_hardware(p, t_draft, t_verify, view["budget"], view["depth"])
    best = ui.t("strat.no_spec") if tree.drafts == 0 else ui.message(tree.describe())
    st.metric(ui.t("strat.best_tree"), best, delta=ui.t("strat.speedup_delta", s=f"{s:.2f}"), delta_color="off")
    st.caption(ui.t("strat.hw_caption", how=how))


def step_times(model: str, gpu: str, batch: int, ctx: int, most: int):
    """t(n): the roofline seconds of one forward over n = 1..most tokens (computed once per view)."""
    times = np.atleast_1d(hardware.step_time(model, gpu, batch, ctx, np.arange(1, most + 1)))
    return lambda n: float(times[n - 1])


def engine_section(view: dict, p: np.ndarray) -> None:
    try:
        tree, depth, topk = trees.best_topk(p, view["budget"], view["depth"])
    except ValueError as exc:
        st.warning(ui.t("strat.topk_warning", exc=ui.message(exc)))
        return
    f = trees.expected_tokens(tree, p)
    st.markdown(ui.t("strat.sglang", budget=view["budget"], f=f"{f:.3f}"))
    st.code(trees.sglang_flags(depth, topk, view["budget"]), language="bash")
    st.caption(ui.t("strat.sglang_caption"))


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
            "strat.trace.synthetic",
            rounds=f"{view['rounds']:,}",
            alpha=f"{view['t_alpha']:g}",
            k_max=view["k_max"],
            confidence=label(view["confidence"]),
            seed=view["seed"],
        )
    if view["trace_src"] == "the live page's last run":
        result = live_run()
        if result is None or result.trace is None:
            raise ValueError(ui.t("strat.err.no_trace"))
        return result.trace, ui.t("strat.trace.live", rounds=f"{result.trace.rounds:,}", k_max=result.trace.k_max)
    upload = st.file_uploader(ui.t("strat.trace_file"), type=["jsonl"], key=key("trace_file"))
    if upload is None:
        raise ValueError(ui.t("strat.err.no_upload"))
    trace = parsed_trace(upload.getvalue(), upload.name)
    what = "strat.trace.upload_positions" if trace.positional else "strat.trace.upload_rounds"
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
    ui.radio(PAGE, P["trace_src"], ui.t("strat.trace"), horizontal=True, format_func=label)
    if view["trace_src"] == "synthetic":
        c1, c2, c3, c4, c5 = st.columns(5)
        with c1:
            ui.number_input(PAGE, P["t_alpha"], ui.t("strat.t_alpha"), step=0.01)
        with c2:
            ui.number_input(PAGE, P["k_max"], ui.t("strat.k_max"))
        with c3:
            ui.number_input(PAGE, P["rounds"], ui.t("strat.rounds"))
        with c4:
            ui.number_input(PAGE, P["seed"], ui.t("strat.seed"))
        with c5:
            ui.selectbox(
                PAGE, P["confidence"], ui.t("strat.confidence"), help=ui.t("strat.confidence_help"), format_func=label
            )
    trace, what = chosen_trace(ui.values(PAGE, SPEC))
    c1, c2, c3, c4, c5 = st.columns(5)
    with c1:
        ui.number_input(PAGE, P["hf_start"], ui.t("strat.hf_start"))
    with c2:
        ui.number_input(PAGE, P["hf_thr"], ui.t("strat.hf_thr"), step=0.05)
    with c3:
        ui.number_input(PAGE, P["p_min"], ui.t("strat.p_min"), step=0.05)
    with c4:
        ui.number_input(PAGE, P["sdpp"], ui.t("strat.sdpp"), step=0.05)
    with c5:
        ui.number_input(PAGE, P["o"], ui.t("strat.o"), step=0.01)
    live_run = view["trace_src"] == "the live page's last run"
    if not live_run:
        ui.radio(PAGE, P["pol_cost"], ui.t("strat.costs_from"), horizontal=True, format_func=label)
    view = ui.values(PAGE, SPEC)
    c, v, o = view["c"], view["v"], view["o"]
    where = ui.t("strat.where.sidebar")
    if live_run:  # that run's measured costs
        c, v, o = run_costs(live_run().frame())
        where = ui.t("strat.where.run")
    elif view["pol_cost"] == "a pair on a GPU":
        view, pair = pair_on_gpu()
        costs = hardware.pair_costs(pair["target"], pair["draft"], view["gpu"], view["batch"], view["ctx"], trace.k_max)
        c, v = float(costs["c"]), float(costs["v"])
        where = ui.t("strat.where.roofline", pair=view["pair"], gpu=view["gpu"], batch=view["batch"], ctx=view["ctx"])
    rules = chosen_rules(view, trace.k_max)
    frame = compared(trace, tuple(rules), c, v, o)
    st.caption(ui.t("strat.policies_caption", what=what, c=f"{c:.4g}", v=f"{v:.3g}", o=f"{o:.3g}", where=where))
    ui.chart(figures.policy_bars(frame, lang=ui.language()), key="fig_policies")
    table = frame.round(3).assign(
        policy=frame["policy"].map(ui.message),  # the rules' labels are i18n.Phrase
        kind=frame["kind"].map(lambda k: ui.t(f"strat.kind.{k}") if k in KINDS else k),
    )
    st.dataframe(shown(table, POLICY_COLUMNS), hide_index=True, width="stretch")
    ks = {r.label: policies.replay(r, trace, c, v, o).k for r in rules}
    left, right = st.columns(2)
    with left:
        ui.chart(figures.k_over_rounds(ks, lang=ui.language()), key="fig_k_rounds")
    with right:
        ui.chart(figures.draft_length_histogram(ks, trace.k_max, lang=ui.language()), key="fig_k_hist")
    ui.selectbox(PAGE, P["sweep"], ui.t("strat.sweep"), format_func=label)
    view = ui.values(PAGE, SPEC)
    swept = policies.sweep(view["sweep"], np.linspace(0, 1, 21), trace, c, v, o)
    best = float(frame.loc[frame.kind == "best static K", "speedup"].iloc[0])
    oracle = float(frame.loc[frame.kind == "oracle", "speedup"].iloc[0])
    ui.chart(figures.policy_sweep(swept, view["sweep"], best, oracle, lang=ui.language()), key="fig_policy_sweep")
    st.caption(ui.t("strat.sweep_caption"))


def compared(trace: policies.Trace, rules: tuple, c: float, v: float, o: float):
    return policies.compare(trace, list(rules), c, v, o)


@ui.cached
def ngram_table(texts: tuple[str, ...], c: float, v: float):
    return ngram.lookup_table([list(t.encode("utf-8")) for t in texts], range(1, 17), c, v)


def ngram_section(view: dict, p: np.ndarray) -> None:
    c1, c2 = st.columns([1, 1])
    with c1:
        ui.radio(PAGE, P["ng_src"], ui.t("strat.ng_src"), horizontal=True, format_func=label)
    with c2:
        ui.number_input(PAGE, P["ng_c"], ui.t("strat.ng_c"), format="%.4g", help=ui.t("strat.ng_c_help"))
    if st.session_state[key("ng_src")] == "my text":
        ui.text_box(PAGE, P["ng_text"], ui.t("strat.ng_text"), area=True, height=150)
    view = ui.values(PAGE, SPEC)
    texts = tuple(bench.load_prompts()) if view["ng_src"] == "bundled prompts" else (view["ng_text"],)
    if not any(len(t.encode("utf-8")) > 1 for t in texts):
        raise ValueError(ui.t("strat.err.ng_short"))
    frame = ngram_table(texts, view["ng_c"], view["v"])
    ui.chart(figures.ngram_by_k(frame, lang=ui.language()), key="fig_ngram")
    st.dataframe(shown(frame.round(3), NGRAM_COLUMNS), hide_index=True, width="stretch")
    st.caption(ui.t("strat.ng_caption"))
    c1, c2 = st.columns([1, 3])
    with c1:
        ui.number_input(PAGE, P["ng_k"], ui.t("strat.ng_k"))
    run_clicked = c2.button(ui.t("strat.ng_run"), icon=":material/play_arrow:")
    if run_clicked:
        st.session_state[key("ngram_runs")] = run_both(texts if view["ng_src"] == "my text" else None, view["ng_k"])
    frame = st.session_state.get(key("ngram_runs"))
    if frame is not None:
        drafters = frame["drafter"].map(lambda d: ui.t(DRAFTERS[d]) if d in DRAFTERS else d)
        st.dataframe(shown(frame.assign(drafter=drafters), RUN_COLUMNS), hide_index=True, width="stretch")
        st.caption(ui.t("strat.ng_run_caption"))


def live_run():
    """The live page's last run in this session (None before one)."""
    from specviz.app import live

    return live.last_run(st.session_state)


def run_both(texts: tuple[str, ...] | None, k: int):
    """The n-gram drafter against the bundled draft model at K (:func:`specviz.app.live.compare_ngram_to_draft`),
    with a progress bar."""
    from specviz.app import live

    bar = st.progress(0.0, text=ui.t("strat.starting"))
    frame = live.compare_ngram_to_draft(
        k, texts[0] if texts else None, lambda share, pair: bar.progress(share, text=pair)
    )
    bar.empty()
    return frame


#: Display names of the tables' columns (canonical name -> catalogue key); a CSV keeps the canonical names.
POLICY_COLUMNS = {
    name: f"strat.col.{name}"
    for name in ("policy", "kind", "speedup", "tokens_per_round", "drafts_per_round", "wasted_per_round")
}
KINDS = ("rule", "best static K", "oracle")  #: policies.compare's kinds, shown as strat.kind.<kind>
NGRAM_COLUMNS = {name: f"strat.col.{name}" for name in ("rule", "rounds", "proposal_share", "alpha")} | {
    "tokens_per_round": "strat.col.tokens_per_round",
    "speedup": "strat.col.speedup",
}
RUN_COLUMNS = {
    "drafter": "strat.col.drafter",
    "E[N] measured": "strat.col.en_measured",
    "speedup": "strat.col.speedup",
    "greedy_exact": "strat.col.greedy_exact",
}
DRAFTERS = {"n-gram (prompt lookup)": "strat.drafter.ngram", "bundled draft model": "strat.drafter.model"}

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
        st.header(ui.t("strat.h.acceptance"))
        ui.radio(PAGE, P["p_src"], ui.t("strat.p_from"), format_func=label)
        if st.session_state[key("p_src")] == "typed":
            ui.text_box(PAGE, P["p"], ui.t("strat.p_typed"))
        elif st.session_state[key("p_src")] == "a run in the library":
            ui.number_input(PAGE, P["run"], ui.t("strat.run"))
            st.caption(ui.t("strat.run_caption"))
        elif st.session_state[key("p_src")] == "the live page's last run":
            st.caption(ui.t("strat.live_caption"))
        else:
            ui.slider(PAGE, P["alpha"], ui.t("strat.alpha"), step=0.01)
            ui.slider(PAGE, P["ranks"], ui.t("strat.ranks"))
        st.header(ui.t("strat.h.tree"))
        ui.slider(PAGE, P["budget"], ui.t("strat.budget"))
        ui.slider(PAGE, P["depth"], ui.t("strat.depth"))
        st.header(ui.t("strat.h.cost"))
        ui.number_input(PAGE, P["c"], ui.t("strat.c"), format="%.4g")
        ui.number_input(PAGE, P["v"], ui.t("strat.v"), step=0.01, format="%.3f")


st.title(ui.t("strat.title"))
st.caption(ui.t("strat.intro"))
ui.restore(PAGE, SPEC)
view = ui.values(PAGE, SPEC)
try:
    p, source = chosen_p(view)
except ValueError as exc:
    ui.show_error(exc)
    p, source = trees.geometric_p(P["alpha"].default, P["ranks"].default), ui.t("strat.source.default")
st.caption(ui.t("strat.p_caption", source=ui.message(source), values=", ".join(f"{x:.3f}" for x in p)))
ui.show_open_tab(PAGE, P["view"], SECTIONS, view, p, format_func=label)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

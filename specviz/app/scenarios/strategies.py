"""The Drafting strategies page's scenario (p, the tree, a round's costs, a trace, rules, a text) and what it prices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from specviz.app import profiles, ui
from specviz.app.share import Param, by_key
from specviz.base.i18n import N_
from specviz.core import hardware, heads, policies, theory, tree_pricing, trees
from specviz.engine import bench
from specviz.engine.models import ngram

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
GPUS = tuple(hardware.load_catalog()[1].index)
VIEWS = ("tree", "shapes", "budget_depth", "hardware", "flags", "policies", "ngram")  #: the tabs (slugs)
VIEW_LABELS = (
    N_("Optimal tree"),
    N_("Shapes by budget"),
    N_("Budget × depth"),
    N_("Hardware-aware"),
    N_("Serving-stack flags"),
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
    profiles.profile_param(),  # a catalogue profile, or custom with its terms in eng_terms
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
    Param("view", "tree", "choice", choices=VIEWS, labels=VIEW_LABELS, aliases=(("Engine flags", "flags"),)),
)
#: Display names of the tables' columns (canonical name -> msgid); a CSV keeps the canonical names.
POLICY_COLUMNS = {  #: each column's heading (a msgid) and format
    "policy": ui.Col(N_("policy"), kind="text"),
    "kind": ui.Col(N_("kind"), kind="text"),
    "speedup": ui.Col(N_("speedup"), "×"),
    "tokens_per_round": ui.Col(N_("tokens_per_round")),
    "drafts_per_round": ui.Col(N_("drafts_per_round")),
    "wasted_per_round": ui.Col(N_("wasted_per_round")),
}
KINDS = {
    "rule": N_("rule"),
    "best static K": N_("best static K"),
    "oracle": N_("oracle"),
}  #: policies.compare's kinds -> their names
NGRAM_COLUMNS = {
    "rule": ui.Col(N_("rule"), kind="text"),
    "k": ui.Col("K", kind="int"),
    "rounds": ui.Col(N_("rounds"), kind="int"),
    "proposal_share": ui.Col(N_("proposal_share"), kind="percent", digits=1),
    "alpha": ui.Col(N_("alpha")),
    "tokens_per_round": ui.Col(N_("tokens_per_round")),
    "speedup": ui.Col(N_("speedup"), "×"),
}
RUN_COLUMNS = {
    "drafter": ui.Col(N_("drafter"), kind="text"),
    "E[N] measured": ui.Col(N_("E[N] measured")),
    "speedup": ui.Col(N_("speedup"), "×"),
    "greedy_exact": ui.Col(N_("greedy_exact"), kind="bool"),
}
DRAFTERS = {"n-gram (prompt lookup)": N_("n-gram (prompt lookup)"), "bundled draft model": N_("bundled draft model")}

SWEEP_VALUES = np.linspace(0, 1, 21)  #: the values a swept rule's parameter takes


@dataclass(frozen=True)
class Tree:
    """Positional acceptance p_1, p_2, … and the tree's budget (draft tokens per round) and most depth."""

    p: tuple[float, ...]
    budget: int
    depth: int


@dataclass(frozen=True)
class PairOnGpu:
    """A preset pair's target and draft (its draft model or a head of its target) on a GPU, priced by a profile."""

    target: str
    draft: str
    gpu: str
    batch: int
    ctx: int
    profile: profiles.Profile


@dataclass(frozen=True)
class SyntheticTrace:
    """A synthetic acceptance trace: mean α, K_max, rounds, seed and how the draft's confidence is drawn."""

    alpha: float
    k_max: int
    rounds: int
    seed: int
    confidence: str


@dataclass(frozen=True)
class Rules:
    """The draft-length rules' parameters, the overhead per round and the rule whose parameter is swept."""

    hf_start: int
    hf_thr: float
    p_min: float
    sdpp: float
    o: float
    sweep: str


@dataclass(frozen=True)
class NgramText:
    """What prompt lookup replays: the bundled prompts or a typed text, at c and v."""

    source: str  #: "bundled" or "text"
    text: str
    c: float
    v: float

    def texts(self) -> tuple[str, ...]:
        return tuple(bench.load_prompts()) if self.source == "bundled" else (self.text,)


@dataclass(frozen=True)
class Scenario:
    """The page's inputs, one part per view."""

    tree: Tree
    c: float  #: T_target / T_draft
    v: float  #: extra verify cost per token
    cost: str  #: a round's cost from "cv" or "gpu"
    pair: PairOnGpu
    trace_src: str  #: "synthetic", "upload" or "live"
    trace: SyntheticTrace
    rules: Rules
    pol_cost: str  #: the policies' costs from "cv" or "gpu"
    ngram: NgramText
    ng_k: int  #: K of the n-gram run


def pair_draft(view: dict, pair: pd.Series) -> str:
    """The draft the controls choose for ``pair``: a head trained for its target, else its draft model."""
    offered = [h for h in heads.heads_for(pair["target"]) if h in SEQUENTIAL_HEADS]
    return view["draft"] if view["draft"] != PAIR_DRAFT and view["draft"] in offered else pair["draft"]


def scenario(view: dict, p) -> Scenario:
    """The page's scenario from its controls' ``view`` and the acceptance profile ``p``."""
    pair = PAIR_ROWS.loc[view["pair"]]
    profile = profiles.Profile.of(view["engine"], view["eng_terms"])
    on_gpu = PairOnGpu(pair["target"], pair_draft(view, pair), view["gpu"], view["batch"], view["ctx"], profile)
    trace = SyntheticTrace(view["t_alpha"], view["k_max"], view["rounds"], view["seed"], view["confidence"])
    rules = Rules(view["hf_start"], view["hf_thr"], view["p_min"], view["sdpp"], view["o"], view["sweep"])
    return Scenario(
        tree=Tree(tuple(float(x) for x in p), view["budget"], view["depth"]),
        c=view["c"],
        v=view["v"],
        cost=view["cost"],
        pair=on_gpu,
        trace_src=view["trace_src"],
        trace=trace,
        rules=rules,
        pol_cost=view["pol_cost"],
        ngram=NgramText(view["ng_src"], view["ng_text"], view["ng_c"], view["v"]),
        ng_k=view["ng_k"],
    )


def chosen_p(view: dict, live_run) -> tuple[np.ndarray, str]:
    """(p_1, p_2, …, where it came from): a geometric profile from α, as typed, or measured by a tree run
    in the library or on the live page (``live_run()``; ValueError saying why a source cannot give one)."""
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
def table(t: Tree) -> pd.DataFrame:
    """Expected tokens per round of the optimal tree by budget (:data:`BUDGETS`) and depth."""
    return trees.optimal_tree_table(list(t.p), list(BUDGETS), t.depth)


@ui.cached
def shapes(t: Tree) -> pd.DataFrame:
    """Tokens per round of a chain and of the best trees by budget, at most ``t.depth`` deep."""
    return trees.shapes_by_budget(list(t.p), [b for b in BUDGETS if b <= 64], t.depth)


def optimal(t: Tree) -> tuple[trees.Tree, float, float]:
    """(the optimal tree of the budget, its expected tokens per round, a depth-capped chain's of that budget)."""
    p = np.asarray(t.p)
    tree = trees.optimal_tree(p, t.budget, t.depth)
    return tree, trees.expected_tokens(tree, p), float(theory.expected_tokens(p[0], min(t.budget, t.depth)))


@ui.cached
def level_costs(pair: PairOnGpu, most: int) -> dict:
    """tree_pricing.level_costs of the pair on its GPU with its profile."""
    args = (pair.target, pair.draft, pair.gpu, pair.batch, pair.ctx, most)
    return tree_pricing.level_costs(*args, pair.profile.efficiency())


def best_tree(s: Scenario) -> tuple[trees.Tree, float, dict | None]:
    """(the best tree for the cost model, its speedup, the level costs on a GPU or None for c and v)."""
    p, t = np.asarray(s.tree.p), s.tree
    if s.cost == "cv":
        c, v = s.c, s.v
        tree, speedup = trees.best_tree_for_hardware(p, 1.0 / c, lambda n: 1.0 + v * (n - 1), t.budget, t.depth)
        return tree, speedup, None
    costs = level_costs(s.pair, t.budget)
    return (*tree_pricing.priced_tree(p, costs, t.budget, t.depth), costs)


def cost_model_text(s: Scenario, costs: dict | None) -> str:
    """How :func:`best_tree` priced a round, in this session's language (``costs``: its level costs, or None)."""
    if costs is None:
        return ui.t(
            "A round costs depth · T_draft (T_draft = T_target / c = {t_draft} target steps) plus one target forward over n + 1 positions, 1 + v·n target steps (v = {v}, set in the sidebar)",
            t_draft=f"{1 / s.c:.3g}",
            v=f"{s.v:g}",
        )
    n = s.tree.budget + 1
    return ui.t(
        "The roofline model for {target} verified and {draft} drafting on one {gpu} (bf16, batch {batch}, context {ctx}): a draft forward over one token takes {t_draft} ms, the target's forward over 1 / {n} tokens {t_one} / {t_n} ms, a round's fixed cost {t_round} ms. Each level of the tree is drafted by one forward over the nodes it extends, and all its nodes are verified in one forward",
        target=s.pair.target,
        draft=s.pair.draft,
        gpu=s.pair.gpu,
        batch=s.pair.batch,
        ctx=s.pair.ctx,
        t_draft=f"{float(costs['t_draft'][0]) * 1e3:.2f}",
        n=n,
        t_one=f"{float(costs['t_target']) * 1e3:.2f}",
        t_n=f"{float(costs['t_verify'][n - 2]) * 1e3:.2f}",
        t_round=f"{float(costs['o'] * costs['t_target']) * 1e3:.3g}",
    )


@ui.parsed_upload(max_entries=4)
def parsed_trace(data: bytes, name: str) -> policies.Trace:
    return policies.parse_trace(data, name)


def chosen_trace(s: Scenario, live_run) -> tuple[policies.Trace, str]:
    """(trace, what it is): synthetic from the controls, or the live page's (``live_run()``; ValueError naming it)."""
    if s.trace_src == "synthetic":
        t = s.trace
        return synthetic(t), ui.t(
            "synthetic: {rounds} rounds, α = {alpha}, K_max = {k_max}, {confidence} confidences, seed {seed}",
            rounds=f"{t.rounds:,}",
            alpha=f"{t.alpha:g}",
            k_max=t.k_max,
            confidence=ui.t(by_key(SPEC)["confidence"].choice_label(t.confidence)),
            seed=t.seed,
        )
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


def uploaded_trace(upload) -> tuple[policies.Trace, str]:
    """(trace, what it is) of an uploaded trace file (ValueError when there is none, or naming what is wrong)."""
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


@ui.cached
def synthetic(t: SyntheticTrace) -> policies.Trace:
    return policies.synthetic_trace(t.alpha, t.k_max, t.rounds, np.random.default_rng(t.seed), t.confidence)


@ui.cached
def round_costs(pair: PairOnGpu, k: int) -> tuple[float, float, float]:
    """c, v and o of the pair's round at K = ``k`` on its GPU, by its profile."""
    eff = pair.profile.efficiency()
    costs = hardware.pair_costs(pair.target, pair.draft, pair.gpu, pair.batch, pair.ctx, k, efficiency=eff)
    return float(costs["c"]), float(costs["v"]), float(costs["o"])


def run_costs(frame) -> tuple[float, float, float]:
    """c, v, o measured by a run: medians over its greedy cells."""
    greedy = frame[frame["temperature"] == 0]
    return tuple(float(greedy[name].median()) for name in ("c_used", "v", "o"))


def chosen_rules(r: Rules, k_max: int) -> list[policies.Policy]:
    return [
        policies.hf_heuristic(r.hf_start),
        policies.hf_confidence(r.hf_thr, k_max),
        policies.llamacpp_pmin(r.p_min, k_max),
        policies.llamacpp_pmin(r.p_min, k_max, keep_crossing=False),
        policies.specdecpp(r.sdpp, k_max),
    ]


def compared(r: Rules, trace: policies.Trace, c: float, v: float, o: float) -> dict:
    """The rules replayed on ``trace`` at c, v, o: the comparison table, each rule's K per round, the
    swept rule's speedups and the best static K's and the oracle's speedups."""
    rules = chosen_rules(r, trace.k_max)
    frame = policies.compare(trace, rules, c, v, o)
    return dict(
        frame=frame,
        ks={rule.label: policies.replay(rule, trace, c, v, o).k for rule in rules},
        swept=policies.sweep(r.sweep, SWEEP_VALUES, trace, c, v, o),
        best=float(frame.loc[frame.kind == "best static K", "speedup"].iloc[0]),
        oracle=float(frame.loc[frame.kind == "oracle", "speedup"].iloc[0]),
    )


@ui.cached
def ngram_table(n: NgramText) -> pd.DataFrame:
    """Prompt lookup replayed on the text (its UTF-8 bytes the tokens) for K = 1..16."""
    return ngram.lookup_table([list(t.encode("utf-8")) for t in n.texts()], range(1, 17), n.c, n.v)

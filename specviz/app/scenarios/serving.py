"""The Serving page's scenario (a replica, its traffic and service levels) and the sweep over loads it prices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from specviz.app import profiles, ui
from specviz.base import i18n
from specviz.core import acceptance, hardware, serving, trees
from specviz.core import profiles as stack_profiles

PAIRS = hardware.preset_pairs(heads=True).set_index("name")
CUSTOM = "custom"  #: the pair choice "custom (choose target and draft)"


@dataclass(frozen=True)
class LengthsSpec:
    """A prompt or output length distribution as the controls give it."""

    dist: str  #: "fixed" or "uniform"
    lo: int  #: the length, or the lowest
    hi: int | None  #: the highest (None when fixed)
    name: str  #: what it counts, in the session's language (named in an error)

    def lengths(self) -> serving.Lengths:
        if self.dist == "fixed":
            return serving.Lengths.fixed(self.lo, name=self.name)
        return serving.Lengths.uniform(self.lo, self.hi, name=self.name)


@dataclass(frozen=True)
class Replica:
    """What prices the cost grid: the pair on its GPUs, the options (chains, a tree) and the lengths."""

    target: str
    draft: str
    gpu: str
    dtype: str
    profile: profiles.Profile
    tp: int
    max_seqs: int
    alpha: float
    k_max: int
    tree: int  #: a tree's draft tokens (0: chains only)
    depth: int  #: the tree's most depth
    lang: str  #: the tree option's label is in it
    prompt: LengthsSpec
    output: LengthsSpec
    chunk: int  #: prefill chunk, tokens per step
    decay: str = ""  #: a fitted α(L)'s link text "a;b" ("" : α at every context)
    kv: str = "unified"  #: llama-server's KV layout ("unified" for every other stack)


@dataclass(frozen=True)
class Scenario:
    """The page's inputs: the replica, the traffic and the service levels."""

    replica: Replica
    mode: str  #: "open" (requests per second) or "closed" (concurrent users)
    loads: tuple[float, ...]  #: request rates or user counts, sorted
    think: float  #: a user's think time between requests, s
    ttft: float  #: TTFT limit, s
    tpot: float  #: TPOT limit, ms
    goal: float  #: the target rate the GPU count is for, requests/s
    price: float = 0.0  #: USD per GPU-hour (0: the catalogue's dated price of the GPU, where it has one)


def chosen_pair(view: dict) -> tuple:
    """(target, draft): the preset pair, or the two catalogue choices."""
    if view["pair"] != CUSTOM:
        return PAIRS.loc[view["pair"], "target"], PAIRS.loc[view["pair"], "draft"]
    hardware.check_pair(view["target"], view["draft"])
    return view["target"], view["draft"]


def kv_layout(view: dict) -> str:
    """The KV layout priced: the control's for a llama.cpp profile, one cache for every other stack."""
    return view["kv"] if view["engine"] in serving.SLOT_STACKS else "unified"


def lengths(view: dict, which: str) -> LengthsSpec:
    """The prompt (``p``) or output (``g``) length distribution of the controls."""
    name = ui.t("prompt tokens") if which == "p" else ui.t("output tokens")
    uniform = view[f"{which}_dist"] == "uniform"
    return LengthsSpec(view[f"{which}_dist"], view[f"{which}_len"], view[f"{which}_hi"] if uniform else None, name)


def scenario(view: dict, lang: str) -> Scenario:
    """The page's scenario from its controls (a custom pair that cannot pair raises ValueError)."""
    target, draft = chosen_pair(view)
    replica = Replica(
        target=target,
        draft=draft,
        gpu=view["gpu"],
        dtype=view["dtype"],
        profile=profiles.Profile.of(view["engine"], view["eng_terms"]),
        tp=view["tp"],
        max_seqs=view["max_seqs"],
        alpha=view["alpha"],
        k_max=view["k_max"],
        tree=view["tree"],
        depth=view["t_depth"],
        lang=lang,
        prompt=lengths(view, "p"),
        output=lengths(view, "g"),
        chunk=view["chunk"],
        decay=view["alpha_l"].strip(),
        kv=kv_layout(view),
    )
    loads = view["rates"] if view["mode"] == "open" else view["users"]
    return Scenario(
        replica,
        view["mode"],
        tuple(sorted(loads)),
        view["think"],
        view["ttft"],
        view["tpot"],
        view["goal"],
        view["price"],
    )


def options(
    alpha: float, k_max: int, budget: int, depth: int, lang: str, decay: str = "", prompt=None, output=None
) -> list:
    """No speculation, chains of K = 1 … K max and, with a budget, the Sequoia-optimal tree of that many
    draft tokens under the geometric positional acceptance of α (as Drafting strategies draws it).

    ``decay`` (a fit's link text, :class:`specviz.core.acceptance.DecayFit`) replaces α by α(L): chains
    take the token-weighted E[N] over the decode contexts of ``prompt`` and ``output``, a tree α at their
    mean decode context."""
    if decay:
        fit = acceptance.DecayFit.from_param(decay)
        chains = serving.chain_options(fit, k_max, prompt=prompt, output=output)
        alpha = float(fit.alpha(serving.decode_context(prompt, output)))
    else:
        chains = serving.chain_options(alpha, k_max)
    if not budget:
        return chains
    p = trees.geometric_p(alpha, 8)
    tree = trees.optimal_tree(p, budget, depth)
    label = i18n.text(lang, "tree of {n} (depth {d})", n=tree.drafts, d=tree.depth)
    return [*chains, serving.tree_option(tree, p, label)]


@ui.cached
def grid(r: Replica):
    """The cost grid of every option (cached: the sweep reuses it for every load)."""
    prompt, output = r.prompt.lengths(), r.output.lengths()
    stack = r.profile.name
    return serving.cost_grid(
        r.target,
        r.draft,
        r.gpu,
        options(r.alpha, r.k_max, r.tree, r.depth, r.lang, r.decay, prompt, output),
        prompt,
        output,
        dtype=r.dtype,
        tp=r.tp,
        stack=stack if stack in stack_profiles.profile_names() else None,
        efficiency=r.profile.efficiency(),
        prefill=serving.PREFILL.get(stack, "mixed"),
        chunk_tokens=r.chunk,
        max_seqs=r.max_seqs,
        kv=r.kv,
    )


@ui.cached
def sweep(s: Scenario) -> tuple:
    """(grid, output lengths, every load × K, best K by load, largest rates); raises ValueError on bad input.
    Cached: a rerun with the same scenario (any widget elsewhere, a tab) does not solve the queues again."""
    _, output = s.replica.prompt.lengths(), s.replica.output.lengths()  # a bad prompt length is named first
    priced = grid(s.replica)
    frame = serving.steady_state(priced, output, list(s.loads), mode=s.mode, think_s=s.think)
    sla = dict(ttft_s=s.ttft, tpot_s=s.tpot / 1e3)
    best = serving.best_by_load(frame, **sla)
    rates = serving.max_rate(priced, output, **sla)
    return priced, output, frame, best, rates


@ui.cached
def stops_paying(r: Replica, top: float, ttft: float, tpot_ms: float) -> float | None:
    """:func:`specviz.core.serving.stops_paying_rate` of the replica (cached: the headline asks on every rerun)."""
    return serving.stops_paying_rate(grid(r), r.output.lengths(), top, ttft_s=ttft, tpot_s=tpot_ms / 1e3)


def headline(s: Scenario, priced, best: pd.DataFrame, rates: pd.DataFrame) -> dict:
    """The answers: the largest rates with and without speculation (rows of ``rates``), whether speculation
    meets the SLA (``option``: the best one's label, None where no K meets it), the GPUs for the target rate
    each way, the rate from which speculation stops paying (up to the largest rate any option meets the SLA
    at, so it agrees with the two largest rates) and how many loads are overloaded."""
    plain = rates.iloc[0]
    spec = rates.iloc[1:].sort_values(["max_rps", "k"], ascending=[False, True], kind="stable").iloc[0]
    need = [serving.gpus_needed(s.goal, r, priced.gpus) for r in (plain["max_rps"], spec["max_rps"])]
    meets = bool(np.isfinite(spec["max_rps"]))
    top = float(np.nanmax(rates["max_rps"])) if rates["max_rps"].notna().any() else float("nan")
    stops = stops_paying(s.replica, top, s.ttft, s.tpot)
    return dict(
        plain=plain,
        spec=spec,
        option=spec["option"] if meets else None,
        meets=meets,
        need=need,
        stops=None if stops is None else stops / priced.gpus,  # per GPU, as the largest rates
        over=best["overloaded"].sum(),
        cost=cost(s, plain["max_rps_per_gpu"], spec["max_rps_per_gpu"]),
    )


def price_per_gpu_hour(s: Scenario) -> tuple[float, str, str] | None:
    """(USD per GPU-hour, its date, its source): the typed price (no date or source), else the catalogue's
    dated one for the replica's GPU; None where there is neither."""
    return (s.price, "", "") if s.price > 0 else serving.gpu_price(s.replica.gpu)


def with_cost(best: pd.DataFrame, usd_per_gpu_hour: float | None) -> pd.DataFrame:
    """:func:`serving.best_by_load` rows with USD per million output tokens at the best option (``usd``) and
    without speculation (``usd_plain``), NaN where overloaded; unchanged without a price."""
    if not usd_per_gpu_hour:
        return best
    cost = {
        name: serving.usd_per_million_tokens(usd_per_gpu_hour, 1, best[col].fillna(0.0).to_numpy(float))
        for name, col in (("usd", "per_gpu"), ("usd_plain", "per_gpu_plain"))
    }
    return best.assign(**cost).replace(np.inf, np.nan)


def cost(s: Scenario, plain_rps_per_gpu: float, spec_rps_per_gpu: float) -> dict | None:
    """USD per million output tokens at the largest rate per GPU meeting the SLA, without and with speculation:
    the cheapest each way (a GPU serving fewer requests costs the same per hour), at the typed price or the
    catalogue's dated one; None where there is neither."""
    typed = s.price > 0
    found = price_per_gpu_hour(s)
    if found is None:
        return None
    price, date, source = found
    output = s.replica.output.lengths()
    tokens = float(np.sum(output.values * output.weights))
    each = [serving.usd_per_million_tokens(price, 1, rps * tokens) for rps in (plain_rps_per_gpu, spec_rps_per_gpu)]
    return dict(plain=float(each[0]), spec=float(each[1]), price=price, date=date, source=source, typed=typed)

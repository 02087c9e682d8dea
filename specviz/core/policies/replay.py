"""Policies replayed on a trace: per-round drafts, tokens and cost, comparisons and parameter sweeps.

A rule drafting k where the trace accepted a gets min(k, a) accepted plus one token, for 1 + v·k + o
target steps of verify plus (draft forwards)/c.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core import theory
from specviz.core.policies.rules import Policy, constant, hf_confidence, llamacpp_pmin, oracle, specdecpp
from specviz.core.policies.traces import Trace


@dataclass(frozen=True)
class Replay:
    """A policy replayed on a trace, per round; ``speedup`` = Σ tokens / Σ cost (target steps)."""

    policy: str
    k: np.ndarray  # (rounds,) drafts verified (0: a plain target step)
    draft_steps: np.ndarray  # (rounds,)
    accepted: np.ndarray  # (rounds,)
    tokens: np.ndarray  # (rounds,) accepted + 1
    cost: np.ndarray  # (rounds,) target steps

    @property
    def speedup(self) -> float:
        return float(self.tokens.sum() / self.cost.sum())

    @property
    def tokens_per_round(self) -> float:
        return float(self.tokens.mean())

    @property
    def drafted_per_round(self) -> float:
        return float(self.draft_steps.mean())

    @property
    def wasted(self) -> int:
        """Draft forwards whose token was not accepted."""
        return int((self.draft_steps - self.accepted).sum())


def _cost(k: np.ndarray, steps: np.ndarray, c: float, v: float, o: float) -> np.ndarray:
    """Target steps per round: 1 + v·k + o + steps/c (k = 0: one plain target step plus the draft forwards)."""
    return np.where(k > 0, 1.0 + v * k + o, 1.0) + steps / c


def replay(policy: Policy, trace: Trace, c: float, v: float = 0.0, o: float = 0.0) -> Replay:
    """Run ``policy`` over ``trace`` at costs c, v, o (a positional trace walks row → row + accepted + 1)."""
    c = float(theory.check_positive(c, "c"))
    v, o = float(theory.check_nonnegative(v, "v")), float(theory.check_nonnegative(o, "o"))
    q, top, a = np.asarray(trace.q_token), np.asarray(trace.q_top), np.asarray(trace.accepted)
    if not policy.stateful:
        k_all, steps_all = policy.lengths(q, top, a, policy.budget(trace.k_max))
        if not trace.positional:
            acc = np.minimum(k_all, a)
            return Replay(policy.label, k_all, steps_all, acc, acc + 1, _cost(k_all, steps_all, c, v, o))
    visited, ks = _walk(policy, trace, None if policy.stateful else k_all.tolist())
    k = np.asarray(ks, dtype=np.int64)
    steps = k if policy.stateful else steps_all[visited]
    acc = np.minimum(k, a[visited])
    return Replay(policy.label, k, steps, acc, acc + 1, _cost(k, steps, c, v, o))


def _walk(policy: Policy, trace: Trace, k_all: list[int] | None) -> tuple[np.ndarray, list[int]]:
    """(rows visited, drafts verified at each) of a walk over the trace."""
    accepted, segments = trace.accepted.tolist(), trace.segments().tolist()
    start = min(policy.params.get("start", 1), trace.k_max)
    transient = policy.params.get("transient", False)
    rows, ks, budget, row = [], [], start, 0
    while row < trace.rounds:
        if transient and rows and segments[row] != segments[rows[-1]]:
            budget = start
        k = budget if k_all is None else k_all[row]
        rows.append(row)
        ks.append(k)
        got = min(k, accepted[row])
        if k_all is None:
            budget = min(budget + 2, trace.k_max) if got == k else max(1, budget - 1)
        if not trace.positional:
            row += 1
        elif row + got + 1 < trace.rounds and segments[row + got + 1] == segments[row]:
            row += got + 1
        else:  # the segment's output ends here: the next prompt's first position
            row = _next(segments, row)
    return np.asarray(rows, dtype=np.int64), ks


def compare(trace: Trace, rules: Sequence[Policy], c: float, v: float = 0.0, o: float = 0.0) -> pd.DataFrame:
    """Each rule, the best constant K (1..K_max) and the oracle replayed on ``trace``, one row each."""
    static = [replay(constant(k), trace, c, v, o) for k in range(1, trace.k_max + 1)]
    best = max(static, key=lambda r: r.speedup)
    rows = [(replay(rule, trace, c, v, o), "rule") for rule in rules]
    rows += [(best, "best static K"), (replay(oracle(), trace, c, v, o), "oracle")]
    return pd.DataFrame(
        {
            "policy": pd.Series([r.policy for r, _ in rows], dtype=object),  # labels keep their i18n.Phrase
            "kind": [kind for _, kind in rows],
            "speedup": [r.speedup for r, _ in rows],
            "tokens_per_round": [r.tokens_per_round for r, _ in rows],
            "drafts_per_round": [r.drafted_per_round for r, _ in rows],
            "wasted_per_round": [r.wasted / len(r.k) for r, _ in rows],
        }
    )


#: The rules a :func:`sweep` can vary: name → build(parameter value, K_max).
SWEEPS = {
    "llama.cpp p_min": lambda x, k: llamacpp_pmin(x, n_max=k),
    "HF confidence threshold": lambda x, k: hf_confidence(x, k),
    "SpecDec++ threshold": lambda x, k: specdecpp(x, k),
}


def sweep(name: str, values: Sequence[float], trace: Trace, c: float, v: float = 0.0, o: float = 0.0) -> pd.DataFrame:
    """One :data:`SWEEPS` rule's speedup, drafts and tokens per round at each parameter value."""
    if name not in SWEEPS:
        raise Message("sweep: {name!r} is not one of {allowed}", name=name, allowed=list(SWEEPS))
    results = [replay(SWEEPS[name](float(x), trace.k_max), trace, c, v, o) for x in values]
    return pd.DataFrame(
        {
            "value": np.asarray(values, dtype=float),
            "speedup": [r.speedup for r in results],
            "drafts_per_round": [r.drafted_per_round for r in results],
            "tokens_per_round": [r.tokens_per_round for r in results],
        }
    )


def _next(segments: list[int], row: int) -> int:
    """The first row of the next segment after ``row``'s (len(segments) if none)."""
    return next((r for r in range(row + 1, len(segments)) if segments[r] != segments[row]), len(segments))

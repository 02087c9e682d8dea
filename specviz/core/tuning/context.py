"""A tune over prompt lengths: its points per context, the best K by load and context K*(C, L), and the
measured acceptance at each context."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from specviz.core import theory
from specviz.core.tuning.analysis import Answer, analyse
from specviz.core.tuning.fit import Profile

K_COLUMNS = ("context", "prompt_tokens", "concurrency", "k", "tokens_per_s", "gain")
ACCEPTANCE_COLUMNS = ("context", "prompt_tokens", "k", "mean_tokens", "alpha")


def context_of(point: dict) -> int:
    """The prompt length a point was padded to (0: the prompts as given; a point from before contexts)."""
    return int(point.get("context", 0))


def contexts(points: Sequence[dict]) -> list[int]:
    return sorted({context_of(p) for p in points})


def at_context(points: Sequence[dict], n: int) -> list[dict]:
    return [p for p in points if context_of(p) == n]


def prompt_tokens(points: Sequence[dict]) -> float:
    """Mean prompt tokens the server counted over ``points`` (NaN where it reported none)."""
    x = [p["prompt_tokens"] for p in points if isinstance(p.get("prompt_tokens"), int | float)]
    return float(np.mean(x)) if x else math.nan


def analyse_by_context(points: Sequence[dict], profile: Profile | None = None) -> dict[int, Answer]:
    """:func:`analyse` of each context's points, every context on its own: T0, o and r all move with L."""
    return {n: analyse(at_context(points, n), profile) for n in contexts(points)}


def k_by_context(points: Sequence[dict], answers: dict[int, Answer]) -> pd.DataFrame:
    """K*(C, L): per context and load the best K, its tokens/s and the gain over K = 0 (columns :data:`K_COLUMNS`)."""
    rows = []
    for n, a in answers.items():
        tokens = prompt_tokens(at_context(points, n))
        for c in a.choices:
            gain = c.tokens_per_s / c.without_s - 1.0 if c.without_s > 0 else math.nan
            rows.append((n, tokens, c.concurrency, c.k, c.tokens_per_s, gain))
    return pd.DataFrame(rows, columns=list(K_COLUMNS))


def acceptance_by_context(points: Sequence[dict]) -> pd.DataFrame:
    """Per context, at the largest K measured with counters: E[N] = 1 + Σ u_i over that point's shares and the
    α with E[N](α, K) = E[N] (the chapter's geometric model), beside the prompt tokens the server counted."""
    rows = []
    for n in contexts(points):
        at = [p for p in at_context(points, n) if p.get("shares")]
        if not at:
            continue
        p = max(at, key=lambda q: (len(q["shares"]), -q["concurrency"]))
        k = len(p["shares"])
        mean = 1.0 + float(np.sum(p["shares"]))
        alpha = float(theory.alpha_from_mean_tokens(min(max(mean, 1.0), k + 1.0), k))
        rows.append((n, prompt_tokens(at_context(points, n)), k, mean, alpha))
    return pd.DataFrame(rows, columns=list(ACCEPTANCE_COLUMNS))

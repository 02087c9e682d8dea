"""What a tuned server's tokens cost: per load, the best K within a TPOT limit against no speculation, in USD
per million output tokens, and the cheapest (K, load) of the whole tune."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core.serving.cost import SECONDS_PER_HOUR, usd_per_million_tokens

COST_COLUMNS = (
    "concurrency", "k", "tokens_per_s", "per_user", "usd_per_m", "plain_tokens_per_s", "plain_per_user",
    "plain_usd_per_m", "saving",
)  # fmt: skip


def priced(table: pd.DataFrame, usd_per_hour: float, gpus: int) -> pd.DataFrame:
    """``table`` (:attr:`Answer.table`) with tokens/s per GPU, per user (1 / TPOT) and USD per million output
    tokens = USD per GPU-hour × GPUs / (tokens/s × 3600) × 10⁶; Message where price or GPUs is not > 0."""
    cost = usd_per_million_tokens(usd_per_hour, gpus, table["tokens_per_s"].to_numpy(float))
    return table.assign(
        per_gpu=table["tokens_per_s"] / gpus,
        per_user=1.0 / table["tpot_s"],
        usd_per_m=np.broadcast_to(cost, len(table)),
    )


def _meets(frame: pd.DataFrame, tpot_sla_s: float | None) -> pd.Series:
    """Rows whose predicted TPOT is within the limit (every row where there is none)."""
    if tpot_sla_s is None:
        return pd.Series(True, index=frame.index)
    if not (math.isfinite(tpot_sla_s) and tpot_sla_s > 0):
        raise Message("TPOT limit must be a number of milliseconds > 0; got {value}", value=f"{tpot_sla_s * 1e3:g}")
    return frame["tpot_s"] <= tpot_sla_s


def cost_by_load(frame: pd.DataFrame, tpot_sla_s: float | None = None) -> pd.DataFrame:
    """Per load: the fastest K within the TPOT limit (ties: the shorter; NaN: none), its tokens/s, per user and
    cost, the same at K = 0 (NaN where it misses the limit) and the saving 1 − cost / cost at K = 0."""
    ok = frame[_meets(frame, tpot_sla_s)]
    rows = []
    for c in sorted(frame["concurrency"].unique()):
        at = ok[ok["concurrency"] == c].sort_values(["tokens_per_s", "k"], ascending=[False, True], kind="stable")
        best = at.iloc[0] if len(at) else None
        plain = at[at["k"] == 0]
        plain = plain.iloc[0] if len(plain) else None

        def get(row, key):
            return math.nan if row is None else float(row[key])

        cost, plain_cost = get(best, "usd_per_m"), get(plain, "usd_per_m")
        rows.append(
            (int(c), get(best, "k"), get(best, "tokens_per_s"), get(best, "per_user"), cost)
            + (get(plain, "tokens_per_s"), get(plain, "per_user"), plain_cost, 1.0 - cost / plain_cost)
        )
    return pd.DataFrame(rows, columns=list(COST_COLUMNS))


def cheapest(frame: pd.DataFrame, tpot_sla_s: float | None = None) -> tuple[pd.Series | None, pd.Series | None]:
    """(cheapest (K, load) within the TPOT limit, cheapest at K = 0), None where none meets it: one price per
    hour, so the cheapest serves the most tokens/s (ties: the lighter load, then the shorter draft)."""
    ok = frame[_meets(frame, tpot_sla_s)].sort_values(
        ["tokens_per_s", "concurrency", "k"], ascending=[False, True, True], kind="stable"
    )
    plain = ok[ok["k"] == 0]
    return (ok.iloc[0] if len(ok) else None), (plain.iloc[0] if len(plain) else None)


def tokens_per_s_at_cost(usd_per_hour: float, usd_per_m) -> np.ndarray:
    """Tokens/s per GPU at which ``usd_per_hour`` buys a million tokens for ``usd_per_m``: price / (cost × 3600)
    × 10⁶. Cost depends on tokens/s per GPU alone: an iso-cost line on that Pareto is horizontal."""
    return usd_per_hour / (np.asarray(usd_per_m, dtype=float) * SECONDS_PER_HOUR) * 1e6

"""A tune's points as one answer (a line per load, the best K, the tiers) and its leave-one-load-out check."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specviz.core.tuning.fit import OWN, LoadFit, Profile, fit_load, pooled_profile, predict, profile_at
from specviz.core.tuning.schedule import Choice, best_k, tiers

KS_PREDICTED = tuple(range(0, 9))  #: draft lengths a tune predicts, measured or not


@dataclass(frozen=True)
class Answer:
    """What a tune found: ``table`` has a row per (K, concurrency) predicted, with the measured figures beside."""

    fits: tuple[LoadFit, ...]
    profile: Profile | None  #: o and r pooled over the loads measured at K = 0 and two K or more
    choices: tuple[Choice, ...]  #: the best K per load, from the fitted lines
    tiers: tuple[tuple[int, int], ...]
    table: pd.DataFrame  #: k, concurrency, tpot_s, tokens_per_s, measured_tpot_s, measured_tokens_per_s


def _shares(points: Sequence[dict]) -> list[float]:
    """The longest per-position series among ``points`` (the largest K measured sees the most positions)."""
    return max((p.get("shares") or [] for p in points), key=len, default=[])


def _at(points: Sequence[dict], c: int) -> list[dict]:
    return [p for p in points if p["concurrency"] == c and p.get("failed", 0) < p.get("requests", 1)]


def _mean(points: Sequence[dict], key: str) -> float:
    x = [p[key] for p in points if p.get(key) is not None and math.isfinite(p[key])]
    return float(np.mean(x)) if x else math.nan


def analyse(points: Sequence[dict], profile: Profile | None = None, ks: Sequence[int] = KS_PREDICTED) -> Answer:
    """Fit every load; where a load lacks K = 0 or a second K, carry o and r from the nearest loads (``profile_at``;
    else ``profile``)."""
    loads = sorted({int(p["concurrency"]) for p in points})
    own = [fit_load(_at(points, c), c) for c in loads if _fits_alone(_at(points, c))]
    pooled = pooled_profile(own, "this tune") if any(f.how == OWN for f in own) else None

    def carry(c: int) -> Profile | None:  # the nearest loads' o and r where this tune fitted some, else ``profile``
        return profile_at(own, c, "this tune") if pooled else profile

    fits = [next((f for f in own if f.concurrency == c), None) or fit_load(_at(points, c), c, carry(c)) for c in loads]
    rows, choices = [], []
    for f in fits:
        at = _at(points, f.concurrency)
        shares, ttft, n = _shares(at), _mean(at, "ttft_s"), _mean(at, "output_tokens")
        measured = {int(q["k"]): q for q in at}
        ttfts = [_mean([measured[k]], "ttft_s") if k in measured else ttft for k in ks]  # TTFT grows with the draft
        p = predict(f, shares, ks, np.nan_to_num(ttfts, nan=ttft), n)  # the rows the choice below is read from
        for k, tpot, tps in zip(p["k"], p["tpot_s"], p["tokens_per_s"], strict=True):
            m = measured.get(int(k), {})
            rows.append(
                {
                    "k": int(k),
                    "concurrency": f.concurrency,
                    "tpot_s": float(tpot),
                    "tokens_per_s": float(tps),
                    "measured_tpot_s": m.get("tpot_s", math.nan),
                    "measured_tokens_per_s": m.get("tokens_per_s", math.nan),
                }
            )
        choices.append(best_k(f, shares, ks, np.nan_to_num(ttfts, nan=ttft), n))
    return Answer(tuple(fits), pooled or profile, tuple(choices), tuple(tiers(choices)), pd.DataFrame(rows))


def _fits_alone(points: Sequence[dict]) -> bool:
    """K = 0 and two speculative K measured at this load."""
    ks = {p["k"] for p in points}
    return 0 in ks and len(ks - {0}) >= 2


def single_k_errors(points: Sequence[dict]) -> pd.DataFrame:
    """Leave one load out: each load's every K predicted from each single K there, o and r from the other loads."""
    loads = sorted({int(p["concurrency"]) for p in points})
    rows = []
    for c in loads:
        others = [fit_load(_at(points, o), o) for o in loads if o != c and _fits_alone(_at(points, o))]
        if not others:
            continue
        carried = profile_at(others, c, f"loads other than {c}")
        at = _at(points, c)
        for anchor in [p for p in at if p["k"] > 0 and p.get("shares")]:
            f = fit_load([anchor], c, carried)
            ks = [int(p["k"]) for p in at]
            pred = predict(f, anchor["shares"], ks, anchor["ttft_s"], anchor["output_tokens"])
            for p, tpot, tps in zip(at, pred["tpot_s"], pred["tokens_per_s"], strict=True):
                if p is anchor:
                    continue
                rows.append(
                    {
                        "concurrency": c,
                        "anchor_k": int(anchor["k"]),
                        "k": int(p["k"]),
                        "tpot_err": float(tpot / p["tpot_s"] - 1.0),
                        "tokens_per_s_err": float(tps / p["tokens_per_s"] - 1.0),
                    }
                )
    return pd.DataFrame(rows, columns=["concurrency", "anchor_k", "k", "tpot_err", "tokens_per_s_err"])


def confirm(prior: Answer, points: Sequence[dict]) -> pd.DataFrame:
    """An earlier tune's predictions beside what ``points`` measured at the same (K, load): the confirm step."""
    measured = pd.DataFrame(
        [
            {"k": int(p["k"]), "concurrency": int(p["concurrency"]), "tpot": p["tpot_s"], "tps": p["tokens_per_s"]}
            for p in points
        ]
    )
    if measured.empty:
        return pd.DataFrame(
            columns=["k", "concurrency", "tpot_s", "measured_tpot_s", "tokens_per_s", "measured_tokens_per_s", "error"]
        )
    both = prior.table[["k", "concurrency", "tpot_s", "tokens_per_s"]].merge(measured, on=["k", "concurrency"])
    both = both.rename(columns={"tpot": "measured_tpot_s", "tps": "measured_tokens_per_s"})
    return both.assign(error=both["tokens_per_s"] / both["measured_tokens_per_s"] - 1.0)


def next_to_measure(answer: Answer, k_now: int) -> list[tuple[int, int, float]]:
    """(load, K, predicted gain over K now) where the best predicted K is not the server's: what to run next."""
    out = []
    for c in answer.choices:
        now = answer.table[(answer.table["concurrency"] == c.concurrency) & (answer.table["k"] == k_now)]
        if c.k != k_now and len(now):
            out.append((c.concurrency, c.k, c.tokens_per_s / float(now["tokens_per_s"].iloc[0]) - 1.0))
    return out

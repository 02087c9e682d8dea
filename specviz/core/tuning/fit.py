"""A measured server's round cost as a line in K per load, and what it predicts at the K not measured.

At C requests in flight a round costs R(K) = T0 (1 + o + r K) (K ≥ 1), R(0) = T0: the target step T0, a fixed
extra o and r per drafted token, in target steps (chapter §4's 1 + v K + K/c + o). A point gives R(K) = TPOT ·
E[N](K); a greedy chain's first K drafts do not depend on K, so E[N](K) = 1 + Σ_{i≤K} u_i from the shares u_i of
drafts accepting ≥ i tokens at any K' ≥ K, geometric beyond K'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specviz.base.i18n import N_, Message

OWN = N_("fitted from this load's points")  #: a line fitted from its own load alone


@dataclass(frozen=True)
class LoadFit:
    """The round-cost line at one load: T0 seconds, o and r in target steps, and from which points."""

    concurrency: int
    t0_s: float  #: target-only step, s
    overhead: float  #: o
    per_token: float  #: r
    measured_ks: tuple[int, ...]  #: the K whose points the fit used
    how: str  #: :data:`OWN` or which figures came from elsewhere (a msgid)

    def round_s(self, k) -> np.ndarray:
        """R(K) = T0 (1 + o + r K) for K ≥ 1, T0 at K = 0; seconds, broadcast over ``k``."""
        k = np.asarray(k, dtype=float)
        return np.where(k > 0, self.t0_s * (1.0 + self.overhead + self.per_token * k), self.t0_s)


def mean_tokens(shares: Sequence[float], k) -> np.ndarray:
    """E[N](K) = 1 + Σ_{i≤K} u_i from shares u_1..u_P; beyond P the last conditional u_P / u_(P−1) repeats."""
    u = np.clip(np.asarray(shares, dtype=float), 0.0, 1.0)  # (P,)
    k = np.asarray(k, dtype=int)
    if u.size == 0:
        return np.ones(k.shape)
    prev = u[-2] if u.size > 1 else 1.0
    q = min(u[-1] / prev, 1.0) if prev > 0 else 0.0  # conditional acceptance at the last position
    extra = max(int(k.max(initial=0)) - u.size, 0)
    tail = u[-1] * q ** np.arange(1, extra + 1)  # (extra,)
    cum = np.concatenate([[1.0], 1.0 + np.cumsum(np.concatenate([u, tail]))])  # E[N] at K = 0..P+extra
    return cum[np.clip(k, 0, None)]


@dataclass(frozen=True)
class Profile:
    """A round's shape carried between loads or tunes: o, r in target steps, o in seconds (NaN: unknown), which
    a load without K = 0 takes: a round's fixed work grows far less with the batch than the target's step."""

    overhead: float
    per_token: float
    source: str  #: where the figures come from (a tune's name and loads, or "default")
    overhead_s: float = math.nan


def _round_steps(points: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(K, R(K)) of speculative points, R = TPOT · E[N] in seconds; points without drafts' shares are left out."""
    ks, rs = [], []
    for p in points:
        if p["k"] > 0 and p.get("shares") and math.isfinite(p["tpot_s"]):
            ks.append(p["k"])
            rs.append(p["tpot_s"] * float(mean_tokens(p["shares"], p["k"])))
    return np.asarray(ks, dtype=float), np.asarray(rs, dtype=float)


def fit_load(points: Sequence[dict], concurrency: int, profile: Profile | None = None) -> LoadFit:
    """The line R(K) at one load from its points (k, tpot_s, shares): least squares of R/T0 − 1 = o + r K with
    K = 0 and two K; with one K, r (else o = 0) from ``profile``; without K = 0, o and r from it."""
    base = [p["tpot_s"] for p in points if p["k"] == 0 and math.isfinite(p["tpot_s"])]
    ks, rs = _round_steps(points)
    measured = tuple(sorted({int(p["k"]) for p in points}))
    if base:
        t0 = float(np.mean(base))
        y = rs / t0 - 1.0  # o + r K
        if len(set(ks)) >= 2:
            r, o = np.polyfit(ks, y, 1)
            return LoadFit(concurrency, t0, float(o), float(r), measured, OWN)
        if len(ks) and profile is not None:
            r = profile.per_token
            return LoadFit(concurrency, t0, float(np.mean(y - r * ks)), r, measured, N_("o fitted, r from the profile"))
        if len(ks):  # one draft length and nothing to carry: the line through (0, 0), o taken as 0
            return LoadFit(concurrency, t0, 0.0, float(np.mean(y / ks)), measured, N_("r fitted, o taken as 0"))
        if not len(ks):
            return LoadFit(concurrency, t0, math.nan, math.nan, measured, OWN)
    elif len(ks) and profile is not None:
        r = profile.per_token
        if math.isfinite(profile.overhead_s):  # R = T0 (1 + r K) + o_s: o carried in seconds
            t0 = float(np.mean((rs - profile.overhead_s) / (1.0 + r * ks)))
            o = profile.overhead_s / t0
        else:
            t0, o = float(np.mean(rs / (1.0 + profile.overhead + r * ks))), profile.overhead
        return LoadFit(concurrency, t0, o, r, measured, N_("T0 fitted, o and r from the profile"))
    raise Message(
        "at {c} requests in flight the points measured (K = {ks}) cannot fix the round cost: measure K = 0 and two "
        "draft lengths, or give a profile",
        c=concurrency,
        ks=", ".join(map(str, measured)) or "none",
    )


def pooled_profile(fits: Sequence[LoadFit], source: str) -> Profile:
    """o (in target steps and in seconds, o · T0) and r averaged over the loads fitted from their own points."""
    own = [f for f in fits if f.how == OWN and math.isfinite(f.per_token)]
    if not own:
        raise Message("no load has K = 0 and two draft lengths measured: there is no profile to carry")
    o, r = float(np.mean([f.overhead for f in own])), float(np.mean([f.per_token for f in own]))
    return Profile(o, r, source, float(np.mean([f.overhead * f.t0_s for f in own])))


def profile_at(fits: Sequence[LoadFit], concurrency: int, source: str) -> Profile:
    """o (in seconds) and r at ``concurrency``, linear in log C between the loads fitted from their own points and
    held flat beyond them: the verify's share of r grows with the batch (compute-bound sooner), so the nearest
    loads carry better than the mean of all (leave-one-load-out p90 TPOT 30 % → 24 % on the four-load example)."""
    own = sorted((f for f in fits if f.how == OWN and math.isfinite(f.per_token)), key=lambda f: f.concurrency)
    if not own:
        raise Message("no load has K = 0 and two draft lengths measured: there is no profile to carry")
    x = np.log([f.concurrency for f in own])
    at = math.log(concurrency)
    o_s = float(np.interp(at, x, [f.overhead * f.t0_s for f in own]))
    return Profile(math.nan, float(np.interp(at, x, [f.per_token for f in own])), source, o_s)


def predict(fit: LoadFit, shares: Sequence[float], ks, ttft_s, output_tokens: float) -> dict[str, np.ndarray]:
    """TPOT = R(K) / E[N](K) (s) and a closed loop's tokens/s C n / (TTFT + (n − 1) TPOT) at each K (``ttft_s``:
    one, or one per K)."""
    ks = np.asarray(ks, dtype=int)
    tpot = fit.round_s(ks) / mean_tokens(shares, ks)
    n = max(float(output_tokens), 1.0)
    return {"k": ks, "tpot_s": tpot, "tokens_per_s": fit.concurrency * n / (ttft_s + (n - 1.0) * tpot)}

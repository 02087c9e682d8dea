"""Closed forms of speculative decoding: E[N], speedup, break-even α, optimal K, metric conversions.

Source: Leviathan et al. 2023 (arXiv 2211.17192). ``alpha`` α ∈ [0, 1] per-token acceptance; ``k`` draft
length K ≥ 1 (their γ); ``c`` = T_target / T_draft > 0 (their c_L = 1/c); ``v`` verify cost per drafted token
and ``o`` per-round overhead, in target steps (0 in the basic model). numpy, broadcasting; ValueError names
the parameter, the value and the allowed range.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from specviz.base.i18n import N_, Message, Phrase

__all__ = [
    "METRICS",
    "Metric",
    "OptimalK",
    "acceptance_rate",
    "accepted_length_pmf",
    "alpha_from_acceptance_rate",
    "alpha_from_mean_tokens",
    "break_even_alpha",
    "c_from_leviathan",
    "c_to_leviathan",
    "convert_metric",
    "expected_tokens",
    "expected_tokens_by_position",
    "optimal_k",
    "speedup",
    "speedup_bound",
    "speedup_from_tokens",
    "system_efficiency",
]

_EPS = np.finfo(float).eps
K_LIMIT = 2**31 - 1  #: largest draft length accepted (keeps (K + 1) in exact int64/float arithmetic)


# --------------------------------------------------------------------------------------
# argument checks: one place for every rule, so every message has the same shape
# --------------------------------------------------------------------------------------


def _first_bad(x: np.ndarray, bad: np.ndarray) -> dict:
    """The first offending element of ``x`` as message fields: ``value`` as a person reads it, and ``where``
    (its place, counted from 1) if ``x`` holds more than one."""
    idx = np.argwhere(bad)[0]
    value = _shown((x[tuple(idx)] if x.ndim else x[()]).item())
    if x.ndim == 0:
        return {"value": value}
    return {
        "value": value,
        "where": Phrase("value {n} of {count}", n=int(np.ravel_multi_index(idx, x.shape)) + 1, count=x.size),
    }


def _shown(value: float):
    if value != value:
        return Phrase("not a number")
    if value in (np.inf, -np.inf):
        return Phrase("infinity") if value > 0 else Phrase("minus infinity")
    # exact, as typed: a whole number without ".0" or an exponent, else the shortest repr that reads back
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


def _as_float(x, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise Message("{name} must be a number; got {value!r}", name=name, value=x) from None
    return arr


def check_alpha(alpha, name: str = "alpha") -> np.ndarray:
    """``alpha`` as a float array; ValueError unless every value is in [0, 1]."""
    a = _as_float(alpha, name)
    bad = np.isnan(a) | (a < 0) | (a > 1)
    if bad.any():
        got = _first_bad(a, bad)
        raise Message(
            N_("{name} must be in [0, 1]; got {value} ({where})")
            if "where" in got
            else N_("{name} must be in [0, 1]; got {value}"),
            name=name,
            **got,
        )
    return a


def check_k(k, name: str = "k") -> np.ndarray:
    """``k`` as an int64 array; ValueError unless every value is an integer in [1, K_LIMIT]."""
    kf = _as_float(k, name)
    bad = ~np.isfinite(kf) | (kf < 1) | (kf > K_LIMIT) | (kf != np.floor(kf))
    if bad.any():
        got = _first_bad(kf, bad)
        raise Message(
            N_("{name} must be an integer in [1, {limit}]; got {value} ({where})")
            if "where" in got
            else N_("{name} must be an integer in [1, {limit}]; got {value}"),
            name=name,
            limit=K_LIMIT,
            **got,
        )
    return kf.astype(np.int64)


def check_positive(x, name: str) -> np.ndarray:
    """``x`` as a float array; ValueError unless every value is finite and > 0."""
    a = _as_float(x, name)
    bad = ~np.isfinite(a) | (a <= 0)
    if bad.any():
        got = _first_bad(a, bad)
        raise Message(
            N_("{name} must be a finite number > 0; got {value} ({where})")
            if "where" in got
            else N_("{name} must be a finite number > 0; got {value}"),
            name=name,
            **got,
        )
    return a


def check_nonnegative(x, name: str) -> np.ndarray:
    """``x`` as a float array; ValueError unless every value is finite and ≥ 0."""
    a = _as_float(x, name)
    bad = ~np.isfinite(a) | (a < 0)
    if bad.any():
        got = _first_bad(a, bad)
        raise Message(
            N_("{name} must be a finite number >= 0; got {value} ({where})")
            if "where" in got
            else N_("{name} must be a finite number >= 0; got {value}"),
            name=name,
            **got,
        )
    return a


def _check_in(x, lo, hi, name: str, what: str) -> np.ndarray:
    a = _as_float(x, name)
    bad = np.isnan(a) | (a < lo) | (a > hi)
    if np.any(bad):
        bad = np.broadcast_to(bad, np.broadcast_shapes(a.shape, np.shape(bad)))
        a_b = np.broadcast_to(a, bad.shape)
        got = _first_bad(a_b, bad)
        raise Message(
            N_("{name} must be in {allowed}; got {value} ({where})")
            if "where" in got
            else N_("{name} must be in {allowed}; got {value}"),
            name=name,
            allowed=what,
            **got,
        )
    return a


# --------------------------------------------------------------------------------------
# E[N] and the distribution of N
# --------------------------------------------------------------------------------------


def _expected_tokens(a: np.ndarray, k: np.ndarray) -> np.ndarray:
    """E[N] for checked arguments, as ``expm1((K+1) log α) / expm1(log α)``: no 0/0 near α = 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = np.log1p(a - 1.0)  # 1 - a is exact for a in [0.5, 1] (Sterbenz)
        ratio = np.expm1((k + 1) * log_a) / np.expm1(log_a)
    # a == 1: the ratio is 0/0, the limit is K + 1; a == 0: log = -inf and the ratio is 1.
    return np.where(a == 1.0, (k + 1).astype(float), ratio)


def expected_tokens(alpha, k):
    """Expected tokens per round, E[N] = Σ_{i=0..K} α^i = (1 − α^{K+1}) / (1 − α).

    Leviathan et al. eq. 1, chapter §4.3; K + 1 at α = 1, 1 at α = 0. Returns E[N] ∈ [1, K + 1],
    broadcast over ``alpha`` ∈ [0, 1] and integer ``k`` ≥ 1.
    """
    a = check_alpha(alpha)
    kk = check_k(k)
    return _expected_tokens(a, kk)[()]


def expected_tokens_by_position(acceptance):
    """E[N](K) = 1 + Σ_{i≤K} Π_{j≤i} a_j, K = 1..K_max, from conditional ``acceptance`` (..., K_max) → (..., K_max)."""
    a = check_alpha(acceptance, "acceptance")
    if a.ndim == 0 or a.shape[-1] == 0:
        raise Message(
            "acceptance must list at least one position (shape (..., K_max)); got shape {shape}", shape=a.shape
        )
    return 1.0 + np.cumsum(np.cumprod(a, axis=-1), axis=-1)


def accepted_length_pmf(alpha, k):
    """P(N = i) = α^{i−1}(1 − α), i ≤ K; α^K at i = K + 1: shape ``broadcast(alpha, k).shape + (max K + 1,)``."""
    a = check_alpha(alpha)
    kk = check_k(k)
    a, kk = np.broadcast_arrays(a, kk)
    i = np.arange(1, int(kk.max()) + 2)  # (L,)
    a_, k_ = a[..., None], kk[..., None]  # (..., 1)
    with np.errstate(invalid="ignore"):
        powers = a_ ** (i - 1)  # α^(i-1); 0**0 = 1
    return np.where(i <= k_, powers * (1.0 - a_), np.where(i == k_ + 1, powers, 0.0))


# --------------------------------------------------------------------------------------
# wall-clock speedup
# --------------------------------------------------------------------------------------


def _cost_factor(c: np.ndarray, k, v: np.ndarray, o: np.ndarray) -> np.ndarray:
    return c / (c * (1.0 + v * k + o) + k)


def speedup(alpha, c, k, v=0.0, o=0.0):
    """Wall-clock speedup over target-only decoding, S = E[N] / (1 + vK + o + K/c).

    One round costs T_p (1 + vK + o) + K T_q; v = o = 0 is Leviathan et al. Thm 3.8, S = E[N] c / (c + K)
    (chapter §5.2). ``alpha`` ∈ [0, 1], ``c`` > 0, ``k`` integer ≥ 1, ``v``, ``o`` ≥ 0; broadcasts.
    """
    a = check_alpha(alpha)
    cc = check_positive(c, "c")
    kk = check_k(k)
    vv = check_nonnegative(v, "v")
    oo = check_nonnegative(o, "o")
    return (_expected_tokens(a, kk) * _cost_factor(cc, kk, vv, oo))[()]


def speedup_from_tokens(mean_tokens, c, k, v=0.0, o=0.0, draft_steps=None):
    """S = E[N] / (1 + vK + o + D/c) for ``mean_tokens`` E[N] ∈ [1, K + 1]; D = ``draft_steps`` ∈ [1, K] (default K)."""
    kk = check_k(k)
    m = _check_in(mean_tokens, 1.0, kk + 1.0, "mean_tokens", "[1, K + 1]")
    cc = check_positive(c, "c")
    vv = check_nonnegative(v, "v")
    oo = check_nonnegative(o, "o")
    if draft_steps is None:
        return (m * _cost_factor(cc, kk, vv, oo))[()]
    dd = _check_in(check_k(draft_steps, "draft_steps"), 1, kk, "draft_steps", "[1, K]")
    return (m / (1.0 + vv * kk + oo + dd / cc))[()]


def speedup_bound(c, k, v=0.0, o=0.0):
    """The speedup at α = 1, (K + 1) c / (c(1 + vK + o) + K): below c for v = o = 0 (chapter §5.4)."""
    return speedup(1.0, c, k, v, o)


# --------------------------------------------------------------------------------------
# inverting E[N]: one vectorised root-finder serves break-even and the converters
# --------------------------------------------------------------------------------------


def _dexpected_tokens(a: np.ndarray, k: np.ndarray, e: np.ndarray) -> np.ndarray:
    """dE[N]/dα = (E[N] − (K+1) α^K) / (1 − α), K(K+1)/2 at α = 1; floored at its true minimum 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (e - (k + 1) * a**k) / (1.0 - a)
    d = np.where(a == 1.0, k * (k + 1) / 2.0, d)
    return np.maximum(d, 1.0)  # the true slope is ≥ 1; guards round-off near α = 1


def _solve_expected_tokens(m: np.ndarray, k: np.ndarray, max_iter: int = 200) -> np.ndarray:
    """The α ∈ [0, 1] with E[N](α, K) = m: safeguarded Newton from α = 1 (E[N] convex), bisecting off-bracket."""
    m, k = np.broadcast_arrays(np.asarray(m, float), np.asarray(k))
    shape = m.shape
    m, k = m.ravel(), k.ravel()
    out = np.where(m >= k + 1, 1.0, 0.0)
    active = np.flatnonzero((m > 1.0) & (m < k + 1))
    x = np.ones(active.size)
    lo, hi = np.zeros(active.size), np.ones(active.size)
    ma, ka = m[active], k[active]
    for _ in range(max_iter):
        if active.size == 0:
            break
        e = _expected_tokens(x, ka)
        f = e - ma
        above = f > 0
        hi = np.where(above, x, hi)
        lo = np.where(above, lo, x)
        step = f / _dexpected_tokens(x, ka, e)
        x_new = x - step
        outside = (x_new < lo) | (x_new > hi) | ~np.isfinite(x_new)
        x_new = np.where(outside, 0.5 * (lo + hi), x_new)
        x_new = np.where(f == 0, x, x_new)
        done = (np.abs(x_new - x) <= 2 * _EPS * x_new) | (hi - lo <= 2 * _EPS)
        x = x_new
        out[active[done]] = x[done]
        keep = ~done
        active, x, lo, hi, ma, ka = active[keep], x[keep], lo[keep], hi[keep], ma[keep], ka[keep]
    out[active] = x  # not reached in practice; the bracket is already below 1e-15 wide
    return np.clip(out, 0.0, 1.0).reshape(shape)


def break_even_alpha(k, c, v=0.0, o=0.0):
    """Break-even α*: the root in (0, 1) of E[N](α, K) = 1 + vK + o + K/c (chapter §5.4; exercise 2: K = 4,
    c = 8 gives α* ≈ 0.34); NaN where the right side is ≥ K + 1 (for v = o = 0 exactly when c ≤ 1)."""
    kk = check_k(k)
    cc = check_positive(c, "c")
    vv = check_nonnegative(v, "v")
    oo = check_nonnegative(o, "o")
    d = 1.0 + vv * kk + oo + kk / cc
    d, kb = np.broadcast_arrays(d, kk)
    never = d >= kb + 1
    root = _solve_expected_tokens(np.where(never, 1.0, d), kb)
    return np.where(never, np.nan, root)[()]


# --------------------------------------------------------------------------------------
# optimal draft length
# --------------------------------------------------------------------------------------


_PARALLEL_MIN = 1 << 17  # grid points from which optimal_k splits the work over threads


def _row_blocks(shape: tuple[int, ...]) -> list[slice]:
    size = int(np.prod(shape)) if shape else 1
    workers = min(os.cpu_count() or 1, 8, shape[0] if shape else 1)
    if size < _PARALLEL_MIN or workers < 2:
        return [slice(None)]
    edges = np.linspace(0, shape[0], workers + 1).round().astype(int)
    return [slice(lo, hi) for lo, hi in itertools.pairwise(edges)]


def _argmax_speedup(a, c, v, o, k_max: int, best: np.ndarray, k_star: np.ndarray) -> None:
    """Running argmax of S over K = 1..k_max into ``best``/``k_star`` in place; ties keep the smaller K."""
    s = np.empty(best.shape)
    better = np.empty(best.shape, dtype=bool)
    for kk in range(1, k_max + 1):
        np.multiply(_expected_tokens(a, np.int64(kk)), _cost_factor(c, kk, v, o), out=s)
        np.greater(s, best, out=better)
        np.copyto(k_star, kk, where=better)
        np.copyto(best, s, where=better)


class OptimalK(NamedTuple):
    k: np.ndarray  #: int, K* ∈ {0, 1, ..., k_max}; 0 means "don't speculate"
    speedup: np.ndarray  #: S at K* (1.0 where K* = 0: plain target decoding)


def optimal_k(alpha, c, k_max: int = 32, v=0.0, o=0.0) -> OptimalK:
    """K*(α, c) = argmax_{1 ≤ K ≤ k_max} S(α, c, K), ties to the smaller K; K* = 0 (S = 1) where max S ≤ 1."""
    a = check_alpha(alpha)
    cc = check_positive(c, "c")
    vv = check_nonnegative(v, "v")
    oo = check_nonnegative(o, "o")
    if np.ndim(k_max) != 0:
        raise Message("k_max must be a single integer >= 1; got {value!r}", value=k_max)
    k_max = int(check_k(k_max, "k_max"))
    shape = np.broadcast_shapes(a.shape, cc.shape, vv.shape, oo.shape)
    best = np.full(shape, -np.inf)
    k_star = np.zeros(shape, dtype=np.int64)
    args = [np.reshape(x, (1,) * (len(shape) - x.ndim) + x.shape) for x in (a, cc, vv, oo)]
    blocks = _row_blocks(shape)
    if len(blocks) == 1:
        _argmax_speedup(*args, k_max, best, k_star)
    else:  # numpy releases the GIL inside ufuncs, so row blocks run in parallel on threads
        with ThreadPoolExecutor(len(blocks)) as pool:
            list(
                pool.map(
                    lambda rows: _argmax_speedup(
                        *[x[rows] if x.shape[0] > 1 else x for x in args], k_max, best[rows], k_star[rows]
                    ),
                    blocks,
                )
            )
    no_gain = best <= 1.0
    k_star[no_gain] = 0
    best[no_gain] = 1.0
    return OptimalK(k_star[()], best[()])


# --------------------------------------------------------------------------------------
# metric conversions between engines (docs/design.md §6)
# --------------------------------------------------------------------------------------


def acceptance_rate(alpha, k):
    """Draft acceptance rate r = (E[N] − 1)/K = (α − α^{K+1}) / (K(1 − α)) (vLLM, llama.cpp)."""
    kk = check_k(k)
    return ((expected_tokens(alpha, kk) - 1.0) / kk)[()]


def system_efficiency(alpha, k):
    """vLLM V0 "system efficiency" (= SGLang chain "accept rate"): E[N] / (K + 1) ∈ (0, 1]."""
    kk = check_k(k)
    return (expected_tokens(alpha, kk) / (kk + 1))[()]


def alpha_from_mean_tokens(mean_tokens, k):
    """The α with E[N](α, K) = ``mean_tokens`` ∈ [1, K + 1] (bonus counted: vLLM, SGLang, Spec-Bench)."""
    kk = check_k(k)
    m = _check_in(mean_tokens, 1.0, kk + 1.0, "mean_tokens", "[1, K + 1]")
    return _solve_expected_tokens(m, kk)[()]


def alpha_from_acceptance_rate(rate, k):
    """Inverse of :func:`acceptance_rate`: α from r ∈ [0, 1] via E[N] = 1 + rK."""
    kk = check_k(k)
    r = _check_in(rate, 0.0, 1.0, "rate", "[0, 1]")
    return _solve_expected_tokens(np.minimum(1.0 + r * kk, kk + 1.0), kk)[()]


def c_to_leviathan(c):
    return (1.0 / check_positive(c, "c"))[()]


def c_from_leviathan(c_l):
    return (1.0 / check_positive(c_l, "c_L"))[()]


@dataclass(frozen=True)
class Metric:
    """An engine metric that is a function of E[N] and K."""

    label: str  #: short UI name
    description: str  #: what it counts, with the engines that report it
    allowed: str  #: allowed range, for messages
    to_mean_tokens: Callable | None = None  #: (value, K) -> E[N]; None for α itself
    from_mean_tokens: Callable | None = None  #: (E[N], K) -> value


#: Every metric the converters know, keyed by name.
METRICS: dict[str, Metric] = {
    "alpha": Metric("α", "per-token acceptance probability", "[0, 1]"),
    "acceptance_rate": Metric(
        "draft acceptance rate",
        "accepted / drafted draft tokens (vLLM draft acceptance rate, llama.cpp accept %)",
        "[0, 1]",
        lambda x, k: 1.0 + x * k,
        lambda e, k: (e - 1.0) / k,
    ),
    "mean_tokens": Metric(
        "mean acceptance length",
        "tokens per round, bonus token counted = E[N] (vLLM, SGLang accept len, Spec-Bench)",
        "[1, K + 1]",
        lambda x, k: x,
        lambda e, k: e,
    ),
    "mean_tokens_no_bonus": Metric(
        "accepted drafts per round",
        "mean acceptance length without the bonus token = E[N] − 1",
        "[0, K]",
        lambda x, k: x + 1.0,
        lambda e, k: e - 1.0,
    ),
    "system_efficiency": Metric(
        "system efficiency",
        "E[N] / (K + 1) (vLLM V0 system efficiency, SGLang chain accept rate)",
        "[1/(K + 1), 1]",
        lambda x, k: x * (k + 1),
        lambda e, k: e / (k + 1),
    ),
}


def _metric_bounds(metric: Metric, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if metric.from_mean_tokens is None:
        return np.zeros_like(k, float), np.ones_like(k, float)
    return metric.from_mean_tokens(1.0, k), metric.from_mean_tokens(k + 1.0, k)


def convert_metric(value, k, metric: str) -> dict[str, np.ndarray]:
    """Every metric of :data:`METRICS` (α included) from ``value`` of ``metric`` at draft length ``k``."""
    if metric not in METRICS:
        raise Message("metric must be one of {allowed}; got {value!r}", allowed=sorted(METRICS), value=metric)
    kk = check_k(k)
    m = METRICS[metric]
    lo, hi = _metric_bounds(m, kk)
    x = _check_in(value, lo * (1 - 1e-12), hi * (1 + 1e-12), metric, m.allowed)
    if m.to_mean_tokens is None:
        alpha = check_alpha(value, metric)
    else:
        alpha = _solve_expected_tokens(np.clip(m.to_mean_tokens(x, kk), 1.0, kk + 1.0), kk)
    e = _expected_tokens(alpha, kk)
    out = {"alpha": alpha[()]}
    for name, other in METRICS.items():
        if other.from_mean_tokens is not None:
            out[name] = np.asarray(other.from_mean_tokens(e, kk))[()]
    return out

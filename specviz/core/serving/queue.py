"""The steady state of continuous batching: the level/phase chain solved for every load and option at once."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core.serving.grid import CostGrid
from specviz.core.serving.traffic import MAX_USERS, MODES, Lengths, _check_output


def _steps(grid: CostGrid, upto: int) -> np.ndarray:
    """t(n) (n, nO) at whole batches n = 1 … ``upto``, interpolated on the grid; beyond an option's cap its cap's."""
    n = np.minimum(np.arange(1, upto + 1)[:, None], grid.option_caps())  # (n, nO)
    return np.stack([np.interp(n[:, j], grid.batch, grid.round_s[:, j]) for j in range(grid.round_s.shape[1])], -1)


PREFILL_TAIL = 1e-9  #: the chance of more prompts waiting for their prefill than the chain's phases hold
TAIL_LEVELS = 64  #: levels an open loop's chain runs past the cap before its geometric tail


def _scan_back(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A_m = Σ_{d ≥ 0} c^d·b_{m+d} on the last axis, by doubling; ``b`` (…, M), ``c`` (…) in [0, 1]."""
    a = b.copy()
    cs, s = np.asarray(c, dtype=float)[..., None], 1
    while s < a.shape[-1]:
        a[..., :-s] += cs * a[..., s:]  # the right side is evaluated first: old values
        cs, s = cs * cs, 2 * s
    return a


def _phases(load_p: np.ndarray, most: int) -> int:
    """Phases M: P(m > M) = ρ^(M + 1) < :data:`PREFILL_TAIL` (M/M/1 queue, ρ = λ·p), at most ``most``."""
    rho = float(np.max(load_p, initial=0.0))
    if rho <= 0:
        return 1
    need = np.log(PREFILL_TAIL) / np.log(min(rho, 1 - 1e-6))
    return int(np.clip(np.ceil(need), 1, max(most, 1)))


def _level_chain(arrive: np.ndarray, finish: np.ndarray, prefill_s: np.ndarray, cap: np.ndarray, phases: int):
    """Stationary distribution of continuous batching whose prefills stall the decodes, level by level.

    State (k, m): k requests in the server, m of them waiting for their prefill (one at a time, rate ν = 1/p;
    decodes stall while m > 0); arrivals λ_k, completions μ_k at m = 0, at most ``cap`` decoding. Cut balance
    λ_{k−1}·P(k − 1) = μ_k·P(k, 0); phases (λ_k + ν)·P(k, m) = λ_{k−1}·P(k − 1, m − 1) + ν·P(k, m + 1)
    (+ λ_k·P(k) into m = 1 beyond the cap). Exact for exponential prefills (docs/design.md, "Serving under load").

    ``arrive`` (nL, K + 1, nO) λ_k; ``finish`` (nL or 1, K + 1, nO) μ_k; ``prefill_s`` (nO,) p in s (0: no stall);
    ``cap`` (nO,); ``phases`` M. Returns ``log_level`` ln P(k) + a constant, ``waiting`` E[m | k] (nL, K + 1, nO).
    """
    n_l, levels, n_o = arrive.shape[0], arrive.shape[1] - 1, arrive.shape[2]
    p = np.broadcast_to(np.asarray(prefill_s, dtype=float), (n_o,))
    m = np.arange(1, phases + 1)
    y = np.zeros((n_l, n_o, phases + 1))  # the level's phase distribution, m = 0 … M (sums to 1)
    y[..., 0] = 1.0
    log_level = np.zeros((n_l, levels + 1, n_o))
    waiting = np.zeros((n_l, levels + 1, n_o))
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(1, levels + 1):
            lam_below, lam = arrive[:, k - 1], arrive[:, k]  # (nL, nO)
            top = lam_below / finish[:, k]  # P(k, 0) / P(k − 1)
            # arrivals from below: admitted into a prefill (m − 1 → m) below the cap, waiting (m → m) at it
            below = np.where((k - 1 < cap)[:, None], y[..., :-1], y[..., 1:])  # (nL, nO, M)
            keep = 1.0 / (1.0 + lam * p)  # ν / (λ_k + ν): a waiting prompt's next event is its prefill's end
            a = _scan_back(lam_below[..., None] * p[:, None] * keep[..., None] * below, keep)
            total = top + a.sum(-1)
            full = k >= cap  # (nO,): admissions from the level above, λ_k·P(k) into m = 1
            if full.any():
                admit = np.where(full, lam * p * keep, 0.0)  # λ / (λ + ν) where the option is full
                total = total / (1.0 - admit)
                a[..., 0] += admit * total
            y = np.concatenate([top[..., None], a], axis=-1) / total[..., None]
            y = np.nan_to_num(y)  # a level no load reaches (a closed loop's beyond its users)
            log_level[:, k] = log_level[:, k - 1] + np.log(total)
            waiting[:, k] = y[..., 1:] @ m
    return log_level, waiting


def _level_moments(log_level, waiting, cap: np.ndarray, tail=None):
    """(P(level) (nL, K + 1, nO), E[decoding], E[prefill waiting], E[sequence waiting] (nL, nO)) of the chain;
    ``tail`` (nL, nO) < 1: an open loop's geometric ratio beyond level K."""
    top = np.max(np.where(np.isfinite(log_level), log_level, -np.inf), axis=1, keepdims=True)
    w = np.exp(log_level - top)  # (nL, K + 1, nO)
    k = np.arange(w.shape[1])[None, :, None]
    decoding = (w * (np.minimum(k, cap) - waiting)).sum(1)
    prefill = (w * waiting).sum(1)
    queued = (w * np.maximum(k - cap, 0)).sum(1)
    total = w.sum(1)
    if tail is not None:
        r, last, kk = tail, w[:, -1], w.shape[1] - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            mass = last * r / (1 - r)
            total = total + mass
            decoding = decoding + mass * (np.minimum(kk, cap) - waiting[:, -1])
            prefill = prefill + mass * waiting[:, -1]
            queued = queued + mass * (kk - cap) + last * r / (1 - r) ** 2
    return w / total[:, None], decoding / total, prefill / total, queued / total


def steady_state(
    grid: CostGrid, output: Lengths, loads, *, mode: Literal["open", "closed"] = "open", think_s: float = 0.0
) -> pd.DataFrame:
    """Every load × option at steady state, one row each.

    μ(n) = min(n, cap) / (R·t(n)), R = E[G − 1] / E[N]; each prompt stalls the decodes for p and goes first
    (:func:`_level_chain`); without prompts, a symmetric queue's product form (Kelly 1979, *Reversibility and
    Stochastic Networks*, §3.3). Open: Poisson λ, overloaded (metrics NaN) where λ·(1/μ(cap) + p) ≥ 1, geometric
    past cap + :data:`TAIL_LEVELS`. Closed: N users, λ_k = (N − k) / (``think_s`` + τ/2 + ``chunks``·τ),
    X = Σ_k λ_k·P(k), a fixed point in τ. Little's law, L decoding, F awaiting a prefill, W a sequence:
    D = L / X, TPOT = D / E[G − 1], τ = ITL = D / R, TTFT = τ/2 + ``chunks``·τ + (F + W) / X, in s.
    ``loads``: λ (requests/s) or N (whole, ≤ :data:`MAX_USERS`). Columns: load, option, k, batch (L), round_s (τ),
    tpot_s, itl_s, ttft_s, queue_s, rps, tokens_per_s, tokens_per_s_per_gpu, tokens_per_s_per_user, overloaded,
    queued (closed: N > cap). Message on a bad mode, load or think time.
    """
    if mode not in MODES:
        raise Message("mode must be one of {allowed}; got {value!r}", allowed=", ".join(MODES), value=mode)
    _check_output(output)
    lam = np.atleast_1d(np.asarray(loads, dtype=float))
    if lam.size == 0:
        raise Message("no load is chosen: give at least one request rate or number of users")
    good = np.isfinite(lam) & (lam > 0)
    if lam.ndim != 1 or not good.all():
        raise Message("loads must be finite numbers > 0; got {value}", value=lam[~good][:1])
    if mode == "closed" and ((lam != np.round(lam)) | (lam > MAX_USERS)).any():
        bad = lam[(lam != np.round(lam)) | (lam > MAX_USERS)][0]
        raise Message("users must be whole numbers in 1..{most}; got {value}", most=MAX_USERS, value=bad)
    if not (np.isfinite(think_s) and think_s >= 0):
        raise Message("think time must be a number of seconds >= 0; got {value}", value=think_s)
    cap = grid.option_caps()  # (nO,)
    rounds = output.expect(lambda g: g - 1) / grid.mean_tokens  # R (nO,)
    p = grid.prefill_s  # (nO,)

    if mode == "open":
        levels = int(cap.max()) + TAIL_LEVELS
        t = _steps(grid, levels)  # (levels, nO): beyond the cap, the cap's step
        n = np.arange(1, levels + 1)[:, None]
        mu = np.concatenate([np.ones((1, p.size)), np.minimum(n, cap) / (rounds * t)])[None]  # (1, K + 1, nO)
        mu_cap = mu[0, -1]
        overloaded = lam[:, None] * (1.0 / mu_cap + p) >= 1  # (nL, nO)
        x = np.where(overloaded, 0.5 / (1.0 / mu_cap + p), lam[:, None])  # a stable stand-in, reported NaN
        arrive = np.broadcast_to(x[:, None, :], (lam.size, levels + 1, p.size))
        log_level, waiting = _level_chain(arrive, mu, p, cap, _phases(x * p, int(cap.max())))
        ratio = np.exp(log_level[:, -1] - log_level[:, -2])
        _, busy, pre, queue_n = _level_moments(log_level, waiting, cap, np.minimum(ratio, 1 - 1e-9))
        queued = np.zeros_like(overloaded)
    else:
        users = lam.astype(int)
        most = int(users.max())
        t = _steps(grid, most)  # (most, nO)
        i = np.arange(1, most + 1)[:, None]
        mu = np.concatenate([np.ones((1, p.size)), np.minimum(i, cap) / (rounds * t)])[None]  # (1, most + 1, nO)
        outside = np.maximum(users[:, None, None] - np.arange(most + 1)[None, :, None], 0)  # (nL, most + 1, 1)
        running = np.minimum(users[:, None], cap)  # (nL, nO)
        tau = np.take_along_axis(t, running - 1, axis=0)  # first guess: every user decoding (nL, nO)
        x = running / (rounds * tau)
        for _ in range(12):  # the round τ sets when prompts join, which sets τ: a few passes settle it
            think = think_s + tau / 2 + grid.chunks * tau  # (nL, nO): from a request's end to its prompt
            arrive = outside / think[:, None, :]
            log_level, waiting = _level_chain(arrive, mu, p, cap, _phases(x * p, min(int(cap.max()), most)))
            share, busy, pre, queue_n = _level_moments(log_level, waiting, cap)
            x = (share * arrive).sum(1)  # X = Σ_k λ_k·P(k)
            tau, before = busy / x / rounds, tau
            if np.allclose(tau, before, rtol=1e-12, atol=0):
                break
        overloaded = np.zeros_like(x, dtype=bool)
        queued = users[:, None] > cap  # (nL, nO)
    decode = busy / x  # D (nL, nO)
    tau = decode / rounds
    queue = queue_n / x
    ttft = tau / 2 + grid.chunks * tau + pre / x + queue
    tokens = x * output.mean
    frame = pd.DataFrame(
        {
            "load": np.repeat(lam, len(grid.options)),
            "option": np.tile([o.label for o in grid.options], lam.size),
            "k": np.tile([o.k for o in grid.options], lam.size),
            "batch": busy.ravel(),
            "round_s": tau.ravel(),
            "tpot_s": (tau / grid.mean_tokens).ravel(),
            "itl_s": tau.ravel(),
            "ttft_s": ttft.ravel(),
            "queue_s": queue.ravel(),
            "rps": x.ravel(),
            "tokens_per_s": tokens.ravel(),
            "tokens_per_s_per_gpu": (tokens / grid.gpus).ravel(),
            "tokens_per_s_per_user": (grid.mean_tokens / tau).ravel(),
            "overloaded": np.asarray(overloaded).ravel(),
            "queued": np.asarray(queued).ravel(),
        }
    )
    metrics = [c for c in frame.columns if c not in ("load", "option", "k", "overloaded", "queued")]
    frame.loc[frame["overloaded"], metrics] = np.nan
    return frame

"""The steady state of continuous batching: the level/phase chain solved for every load and option at once."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core.serving.grid import CostGrid
from specviz.core.serving.traffic import MAX_USERS, MODES, Lengths, _check_output


def _steps(grid: CostGrid, upto: int) -> np.ndarray:
    """t(n) (n, nO) at every whole batch n = 1 … ``upto``, linear between the grid's points; beyond the
    cap the cap's (the batch holds at most cap sequences, the rest wait)."""
    n = np.minimum(np.arange(1, upto + 1), grid.cap)
    return np.stack([np.interp(n, grid.batch, grid.round_s[:, j]) for j in range(grid.round_s.shape[1])], -1)


PREFILL_TAIL = 1e-9  #: the chance of more prompts waiting for their prefill than the chain's phases hold
TAIL_LEVELS = 64  #: levels an open loop's chain runs past the cap before its geometric tail


def _scan_back(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A_m = Σ_{d ≥ 0} c^d·b_{m+d} along the last axis (the recurrence A_m = b_m + c·A_{m+1}, A beyond the
    end 0), by doubling: ⌈log2 M⌉ vectorised steps. ``b`` (…, M), ``c`` (…) in [0, 1]."""
    a = b.copy()
    cs, s = np.asarray(c, dtype=float)[..., None], 1
    while s < a.shape[-1]:
        a[..., :-s] += cs * a[..., s:]  # the right side is evaluated first: old values
        cs, s = cs * cs, 2 * s
    return a


def _phases(load_p: np.ndarray, most: int) -> int:
    """Phases of the chain (prompts waiting for their prefill, m = 1 … M): enough that more than M waiting
    has a chance below :data:`PREFILL_TAIL` where the prompts alone load the GPU at ρ = λ·p (an M/M/1
    queue's P(m > M) = ρ^(M + 1)), at most ``most``."""
    rho = float(np.max(load_p, initial=0.0))
    if rho <= 0:
        return 1
    need = np.log(PREFILL_TAIL) / np.log(min(rho, 1 - 1e-6))
    return int(np.clip(np.ceil(need), 1, max(most, 1)))


def _level_chain(arrive: np.ndarray, finish: np.ndarray, prefill_s: np.ndarray, cap: int, phases: int):
    """The stationary distribution of continuous batching with prompts that stall the decodes, level by level.

    A state is (k, m): k requests in the server (waiting for a sequence, prefilling or decoding), m of them
    admitted and waiting for their prefill. Requests arrive at λ_k; beyond the ``cap`` they wait for a
    sequence. Prompts are prefilled one at a time at rate ν = 1/p, and while any waits the decodes stall
    (a prompt's prefill stalls the round it rides in, or runs as a forward of its own); with none waiting,
    the min(k, cap) decoding requests complete at μ_k, and where one waits for a sequence it is admitted.
    The chain moves one level at a time, and only from m = 0 downwards, so each cut between levels
    balances, λ_{k−1}·P(k − 1) = μ_k·P(k, 0), and the phases m ≥ 1 of a level follow from the level
    below: (λ_k + ν)·P(k, m) = λ_{k−1}·P(k − 1, m − 1) + ν·P(k, m + 1) (+ λ_k·P(k) into m = 1 beyond the
    cap, the admissions). Exact for exponential prefills; the model of docs/design.md, "Serving under load".

    ``arrive`` (nL, K + 1, nO): λ_k; ``finish`` (nL or 1, K + 1, nO): μ_k; ``prefill_s`` (nO,): p (0: no
    stall); ``cap``: the most decoding; ``phases``: M (:func:`_phases`). Returns ``log_level`` (nL, K + 1,
    nO), ln P(k) up to a constant per (load, option), and ``waiting``, E[m | k], of the same shape.
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
            below = y[..., :-1] if k - 1 < cap else y[..., 1:]  # (nL, nO, M)
            keep = 1.0 / (1.0 + lam * p)  # ν / (λ_k + ν): a waiting prompt's next event is its prefill's end
            a = _scan_back(lam_below[..., None] * p[:, None] * keep[..., None] * below, keep)
            total = top + a.sum(-1)
            if k >= cap:  # admissions from the level above, λ_k·P(k) into m = 1
                admit = lam * p * keep  # λ / (λ + ν)
                total = total / (1.0 - admit)
                a[..., 0] += admit * total
            y = np.concatenate([top[..., None], a], axis=-1) / total[..., None]
            y = np.nan_to_num(y)  # a level no load reaches (a closed loop's beyond its users)
            log_level[:, k] = log_level[:, k - 1] + np.log(total)
            waiting[:, k] = y[..., 1:] @ m
    return log_level, waiting


def _level_moments(log_level, waiting, cap: int, tail=None):
    """(P(level), E[decoding], E[prefill waiting], E[sequence waiting]) of :func:`_level_chain`'s levels,
    each (nL, nO) but the first (nL, K + 1, nO); ``tail`` (nL, nO) < 1: an open loop's levels beyond K,
    geometric with that ratio (the phases as at K)."""
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
            decoding = decoding + mass * (min(kk, cap) - waiting[:, -1])
            prefill = prefill + mass * waiting[:, -1]
            queued = queued + mass * (kk - cap) + last * r / (1 - r) ** 2
    return w / total[:, None], decoding / total, prefill / total, queued / total


def steady_state(
    grid: CostGrid, output: Lengths, loads, *, mode: Literal["open", "closed"] = "open", think_s: float = 0.0
) -> pd.DataFrame:
    """Every load × option at steady state; one row each.

    Continuous batching with n requests decoding: the step takes t(n) and the n share it alike, so
    requests complete at μ(n) = min(n, cap) / (R·t(n)) (R = E[G − 1] / E[N] rounds each; beyond the cap
    requests wait for a sequence). Prompts come in between: each costs p, during which the decodes stall
    (mixed into the round it rides in, or a forward of its own), and the prompts are served first. The
    state is then the number of requests and how many of them wait for their prefill, whose stationary
    distribution :func:`_level_chain` solves level by level. Without prompts it is the product form of a
    symmetric queue, which depends on the output lengths only through their mean (Kelly 1979,
    *Reversibility and Stochastic Networks*, §3.3); the prompts break that product form: they arrive with
    the requests, so the stalls fall when the batch has just grown, and a fluid stretch of every decode by
    1 / (1 − λ·p) misses 10–25 % of the TPOT where t(n) grows with n (docs/design.md).

    * open loop, Poisson arrivals at λ: overloaded where a full batch cannot keep up, λ·(1/μ(cap) + p) ≥ 1
      (every completion admits a waiting request, whose prompt stalls the batch): the row is flagged and its
      metrics are NaN; beyond the cap plus :data:`TAIL_LEVELS` levels the tail is geometric;
    * closed loop, N users each thinking ``think_s`` and a round's wait before their prompt joins: arrivals
      at (N − k) / (think + τ/2 + the chunk rounds), a state-dependent rate, and X = Σ_k λ_k·P(k) (a fixed
      point in the round τ, 12 passes).

    With L the mean number decoding (stalled or not), F the mean waiting for their prefill and W the mean
    waiting for a sequence (Little's law): decode time D = L / X, TPOT = D / E[G − 1], the round a request
    sees τ = ITL = D / R, TTFT = τ / 2 + the prompt's chunk rounds (``chunks``·τ where mixed) + F / X + W / X.

    ``loads``: rates λ (requests/s, ``mode="open"``) or users N (``"closed"``, whole numbers up to
    :data:`MAX_USERS`). Columns: load, option, k, batch (L, the mean running batch), round_s (τ),
    tpot_s, itl_s, ttft_s, queue_s, rps, tokens_per_s, tokens_per_s_per_gpu, tokens_per_s_per_user,
    overloaded, queued (closed loop: N beyond the cap).
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
    cap = int(grid.cap)
    rounds = output.expect(lambda g: g - 1) / grid.mean_tokens  # R (nO,)
    p = grid.prefill_s  # (nO,)

    if mode == "open":
        levels = cap + TAIL_LEVELS
        t = _steps(grid, levels)  # (levels, nO): beyond the cap, the cap's step
        n = np.arange(1, levels + 1)[:, None]
        mu = np.concatenate([np.ones((1, p.size)), np.minimum(n, cap) / (rounds * t)])[None]  # (1, K + 1, nO)
        mu_cap = mu[0, -1]
        overloaded = lam[:, None] * (1.0 / mu_cap + p) >= 1  # (nL, nO)
        x = np.where(overloaded, 0.5 / (1.0 / mu_cap + p), lam[:, None])  # a stable stand-in, reported NaN
        arrive = np.broadcast_to(x[:, None, :], (lam.size, levels + 1, p.size))
        log_level, waiting = _level_chain(arrive, mu, p, cap, _phases(x * p, cap))
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
        tau = t[np.minimum(users, cap) - 1]  # first guess: every user decoding (nL, nO)
        x = np.minimum(users, cap)[:, None] / (rounds * tau)
        for _ in range(12):  # the round τ sets when prompts join, which sets τ: a few passes settle it
            think = think_s + tau / 2 + grid.chunks * tau  # (nL, nO): from a request's end to its prompt
            arrive = outside / think[:, None, :]
            log_level, waiting = _level_chain(arrive, mu, p, cap, _phases(x * p, min(cap, most)))
            share, busy, pre, queue_n = _level_moments(log_level, waiting, cap)
            x = (share * arrive).sum(1)  # X = Σ_k λ_k·P(k)
            tau, before = busy / x / rounds, tau
            if np.allclose(tau, before, rtol=1e-12, atol=0):
                break
        overloaded = np.zeros_like(x, dtype=bool)
        queued = np.broadcast_to((users > cap)[:, None], x.shape)
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

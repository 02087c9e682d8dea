"""The same server run round by round (the reference the steady state is checked against), and one open-loop point."""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np
import pandas as pd

from specviz.core.serving.queue import TAIL_LEVELS, _phases


def simulate_batching(
    steps,
    prefill_s: float,
    rounds,
    *,
    arrivals=None,
    users: int | None = None,
    prompts: str = "one",
    prefill_draws=None,
    think_draws=None,
) -> pd.DataFrame:
    """Discrete-event simulation of continuous batching, round by round: the reference for :func:`steady_state`.

    Arrived requests take free sequences (FCFS). ``prompts="one"``: a round prefills the first waiting prompt
    alone (decodes stall); ``"all"``: every newly admitted prompt rides beside a decode step, t(n) + p each
    (llama-server's mixed batch); else one decode step t(n). The first token comes with the prompt's round, then
    ``rounds[i]`` decode rounds; closed-loop ``users`` resend as a request ends (after ``think_draws``).
    ``steps`` (cap,) t(n) in s; ``prefill_s`` p in s; ``rounds``, ``arrivals`` (increasing s, open loop),
    ``prefill_draws``, ``think_draws`` (n,). Returns per request: arrival_s, first_s, end_s, decode_s (end − first).
    """
    t = np.asarray(steps, dtype=float)
    cap, n = t.size, len(rounds)
    need = np.asarray(rounds, dtype=int)
    cost = np.full(n, float(prefill_s)) if prefill_draws is None else np.asarray(prefill_draws, dtype=float)
    if (arrivals is None) == (users is None) or prompts not in ("one", "all"):
        raise ValueError("give arrivals (open loop) or users (closed loop), and prompts 'one' or 'all'")
    arrive = np.full(n, np.nan) if arrivals is None else np.asarray(arrivals, dtype=float)
    first, end = np.full(n, np.nan), np.full(n, np.nan)
    left: dict[int, int] = {}
    waiting: deque[int] = deque()
    now, came = 0.0, 0
    if users is not None:
        came = min(int(users), n)
        waiting.extend(range(came))
        arrive[:came] = 0.0
    pending: list[tuple[float, int]] = []  # a closed loop's requests being thought about: (send time, i)
    while came < n or left or waiting or pending:
        while arrivals is not None and came < n and arrive[came] <= now:
            waiting.append(came)
            came += 1
        while pending and pending[0][0] <= now:
            waiting.append(heapq.heappop(pending)[1])
        if not left and not waiting:
            now = arrive[came] if arrivals is not None else pending[0][0]  # idle until the next arrival
            continue
        admitted = []
        while waiting and len(left) + len(admitted) < cap and (prompts == "all" or not admitted):
            admitted.append(waiting.popleft())
        if admitted and prompts == "one":
            now += cost[admitted[0]]
            running = []
        else:
            running = list(left)
            now += (t[len(running) - 1] if running else 0.0) + cost[admitted].sum()
        ended = 0
        for r in running:
            left[r] -= 1
            if left[r] == 0:
                del left[r]
                end[r] = now
                ended += 1
        for r in admitted:
            first[r] = now
            left[r] = int(need[r])
        if users is not None:  # each request that ended sends the next, after its user's think time
            for _ in range(min(ended, n - came)):
                arrive[came] = now + (0.0 if think_draws is None else float(think_draws[came]))
                heapq.heappush(pending, (arrive[came], came))
                came += 1
    return pd.DataFrame({"arrival_s": arrive, "first_s": first, "end_s": end, "decode_s": end - first})


def open_loop_point(price, rate: float, rounds: float, prefill_s: float, mean_tokens: float, cap: int) -> dict:
    """The open loop's steady state for one rate and option, walked state by state: the slow per-point reference.
    ``price(n)``: a round's seconds at batch n. Returns batch, round_s, tpot_s; NaN where overloaded."""
    import math

    overloaded = {"batch": math.nan, "round_s": math.nan, "tpot_s": math.nan}
    cap = int(cap)
    steps = [price(n) for n in range(1, cap + 1)]
    mu = [n / (rounds * steps[n - 1]) for n in range(1, cap + 1)]
    if rate * (1.0 / mu[-1] + prefill_s) >= 1:
        return overloaded
    phases = _phases(np.array([rate * prefill_s]), cap)
    keep = 1.0 / (1.0 + rate * prefill_s)
    admit = rate * prefill_s * keep
    y = [1.0] + [0.0] * phases  # the level's phase distribution
    log_level, decoding = [0.0], [0.0]  # ln P(k) and E[decoding | k]
    for k in range(1, cap + TAIL_LEVELS + 1):
        top = rate / mu[min(k, cap) - 1]
        below = y[:-1] if k - 1 < cap else y[1:]
        a = [0.0] * (phases + 1)  # a[m − 1] for m = 1 … M, a[M] = 0
        for j in range(phases - 1, -1, -1):
            a[j] = rate * prefill_s * keep * below[j] + keep * a[j + 1]
        a = a[:phases]
        total = top + sum(a)
        if k >= cap:
            total /= 1.0 - admit
            a[0] += admit * total
        y = [top / total] + [v / total for v in a]
        log_level.append(log_level[-1] + math.log(total))
        decoding.append(min(k, cap) - sum((j + 1) * v for j, v in enumerate(y[1:])))
    ratio = min(math.exp(log_level[-1] - log_level[-2]), 1 - 1e-9)
    peak = max(log_level)
    w = [math.exp(v - peak) for v in log_level]
    tail = w[-1] * ratio / (1 - ratio)
    total = sum(w) + tail
    busy = (sum(wk * d for wk, d in zip(w, decoding, strict=True)) + tail * decoding[-1]) / total
    tau = busy / rate / rounds
    return {"batch": busy, "round_s": tau, "tpot_s": tau / mean_tokens}

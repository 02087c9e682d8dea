"""llama-server's KV slots: the slot a request takes and the forwards a step over scattered slots runs."""

from __future__ import annotations

from collections import deque

import numpy as np

from specviz.core.serving.traffic import Lengths

#: How a serving stack's KV cache holds its sequences: "unified" (one cache, and every step one forward over the
#: running batch: vLLM, SGLang, TensorRT-LLM, llama-server with ``--kv-unified`` or ``-np`` auto) or "slots"
#: (llama-server started with ``-np N``: one KV stream per slot, and every step one forward per run of
#: consecutive busy slots, :func:`scattered_steps`).
KV_LAYOUTS = ("unified", "slots")
SLOT_STACKS = ("llama.cpp", "llama.cpp-cpu")  #: the stack profiles whose server may keep a KV stream per slot


def scattered_steps(steps) -> np.ndarray:
    """t_S(n) (s) with n = 1 … S of S slots busy, each run of consecutive busy slots a forward of its own.

    llama-server ``-np S`` without ``kv_unified`` splits a batch with ``split_equal(n_ubatch, sequential=true)``
    (llama.cpp b11434, src/llama-kv-cache.cpp ``init_batch``, src/llama-batch.cpp): a ubatch takes consecutive
    slot ids only. With busy slots a uniform n-subset, t_S(n) = Σ_r E[N_r(n)]·t(r), N_r the runs of r slots:
    E[N_r(n)] = (2·C(S − r − 1, n − r) + (S − r − 1)·C(S − r − 2, n − r)) / C(S, n) for r < S, N_S(S) = 1.
    ``steps`` (S,) or (S, nO): t(b) at b = 1 … S contiguous slots; returns the same shape.
    """
    t = np.asarray(steps, dtype=float)
    flat = t.ndim == 1
    t = t[:, None] if flat else t  # (S, nO)
    slots = t.shape[0]
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, slots + 1)))])  # ln m!, m = 0 … S

    def log_choose(m: int, k: np.ndarray) -> np.ndarray:
        ok = (k >= 0) & (k <= m) & (m >= 0)
        kk = np.clip(k, 0, max(m, 0))
        return np.where(ok, log_fact[max(m, 0)] - log_fact[kk] - log_fact[max(m, 0) - kk], -np.inf)

    n = np.arange(1, slots + 1)  # (S,)
    log_all = log_fact[slots] - log_fact[n] - log_fact[slots - n]  # ln C(S, n)
    out = np.zeros_like(t)
    for r in range(1, slots):
        runs = 2 * np.exp(log_choose(slots - r - 1, n - r) - log_all)
        if r <= slots - 2:
            runs += (slots - r - 1) * np.exp(log_choose(slots - r - 2, n - r) - log_all)
        out += runs[:, None] * t[r - 1]
    out[-1] += t[-1]  # every slot busy: one run
    return out[:, 0] if flat else out


def run_lengths(layout) -> tuple[int, ...]:
    """Lengths of a sorted layout's runs of consecutive slot ids, longest first: (2, 1) for {0, 1, 5}."""
    cuts = np.flatnonzero(np.diff(layout) != 1) + 1
    return tuple(sorted((len(r) for r in np.split(np.asarray(layout), cuts)), reverse=True))


def lru_free_slot(last_used, busy) -> int:
    """The free slot of smallest release time ``last_used`` (S,; −1 never used), ties to the highest id (llama.cpp
    b11434, tools/server/server-context.cpp ``get_available_slot``); ValueError when every slot is busy."""
    free = [s for s in range(len(last_used)) if s not in busy]
    if not free:
        raise ValueError("every slot is busy")
    return min(free, key=lambda s: (last_used[s], -s))


def lru_slot_layouts(
    slots: int,
    output: Lengths,
    *,
    rng: np.random.Generator,
    users: int | None = None,
    rate: float | None = None,
    round_s=None,
    prefill_s: float = 0.0,
    mean_tokens: float = 1.0,
    requests: int = 1000,
) -> dict[int, tuple[list[tuple[int, ...]], np.ndarray]]:
    """Busy-slot layouts a load meets on llama-server: n → (distinct sorted layouts, rounds each held).

    A request takes :func:`lru_free_slot`'s slot for max(1, ⌈(G − 1)/E[N]⌉) rounds after its prefill; slots that
    finish in one round release in id order (``update_slots``). Closed loop: ``users`` resend one round after
    their request ends; open loop: Poisson ``rate`` (requests/s), FCFS, timed by ``round_s`` (slots,) and
    ``prefill_s`` (s). ValueError unless exactly one of ``users`` and ``rate`` is given.
    """
    if (users is None) == (rate is None):
        raise ValueError("give users (closed loop) or rate (open loop)")
    step = np.ones(slots) if round_s is None else np.asarray(round_s, dtype=float)
    last_used = np.full(slots, -1.0)
    left: dict[int, int] = {}  # busy slot → rounds still to run
    held: list[dict[tuple[int, ...], int]] = [{} for _ in range(slots)]
    if users is not None:
        waiting = deque([0.0] * int(users))  # every user sends at once
        arrivals = np.empty(0)
    else:
        waiting = deque()
        arrivals = np.cumsum(rng.exponential(1.0 / rate, requests))
    lengths = rng.choice(output.values, size=requests, p=output.weights)
    rounds = np.maximum(1, np.ceil((lengths - 1) / mean_tokens)).astype(int)
    t, started, arrived, returning = 0.0, 0, 0, 0
    while started < requests or left or returning:
        while arrived < arrivals.size and arrivals[arrived] <= t:
            waiting.append(arrivals[arrived])
            arrived += 1
        admitted = 0
        while waiting and len(left) < slots and started < requests:
            slot = lru_free_slot(last_used, left)
            waiting.popleft()
            left[slot] = int(rounds[started])
            started, admitted = started + 1, admitted + 1
        if not left:
            if returning:  # every user between requests
                waiting.extend([t] * returning)
                returning = 0
                continue
            if arrived == arrivals.size:
                break
            t = float(arrivals[arrived])  # idle until the next arrival
            continue
        t += admitted * prefill_s
        layout = tuple(sorted(left))
        counts = held[len(layout) - 1]
        counts[layout] = counts.get(layout, 0) + 1
        t += float(step[len(layout) - 1])
        waiting.extend([t] * returning)  # the users whose request ended a round ago
        returning = 0
        for slot in layout:
            left[slot] -= 1
            if left[slot] == 0:
                del left[slot]
                last_used[slot] = t + slot * 1e-9  # released in id order within the round
                returning += users is not None
    return {
        n + 1: (list(counts), np.array(list(counts.values()), dtype=float)) for n, counts in enumerate(held) if counts
    }

"""Serving under load: traffic and service levels to TTFT, TPOT, throughput and the best K.

A steady-state (fluid) model of continuous batching, built on the roofline of
:mod:`specviz.core.hardware` and an engine profile (:mod:`specviz.core.engines`). Definitions follow
``vllm bench serve`` (vllm/benchmarks/serve.py, ``calculate_metrics``): TTFT, the time to the first
token; TPOT per request = (E2E − TTFT) / (output tokens − 1); ITL, the gap between streamed chunks
(under speculation one chunk carries every token a round accepts, so ITL ≠ TPOT); output throughput =
output tokens / wall time; tokens/s per user = 1 / TPOT.

The model (docs/design.md, "Serving under load"). A request has a prompt of P tokens and an output of
G ≥ 2 tokens; its first token comes with its prefill, the other G − 1 from decode rounds. An option is
one way to decode (:class:`Option`): no speculation (a round is one target step and yields one token
per sequence), or a speculative round (K draft forwards and one verify forward of T tokens per sequence)
that yields E[N] tokens per sequence on average (the chain's E[N](α, K) or a tree's F(T)). With n
requests decoding, a round takes t(n) (the cost model at the decode context L̄), so requests complete at
μ(n) = min(n, cap) / (R·t(n)), R = E[G − 1] / E[N] rounds each. Without prompts continuous batching is a
symmetric queue, whose stationary distribution has product form; each prompt costs p and stalls the
decodes, and since the stalls come with the arrivals, just as the batch grows, the model keeps how many
requests wait for their prefill beside how many are in the server and solves that chain level by level
(:func:`steady_state`): Poisson arrivals at λ (open loop; overloaded, and no number returned, where it
has none) or N users (closed loop). Little's law turns the mean number decoding into TPOT, ITL and
throughput; TTFT adds the round in progress, the prompt's prefill (behind the prompts before it) and any
wait for a free sequence. :func:`simulate_batching` runs the same server round by round, the reference
the model is checked against.

The model predicts means; the tails of a real server (p90, p99) are beyond it.

Everything is vectorised: the cost model is evaluated once on a batch grid for every option
(:func:`cost_grid`, or :func:`grid_from_steps` from measured steps), and :func:`steady_state` solves
every load and option at once.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core import engines, hardware, heads, theory

__all__ = [
    "KV_LAYOUTS",
    "MODES",
    "PREFILL",
    "SLOT_ENGINES",
    "CostGrid",
    "Lengths",
    "Option",
    "batch_cap",
    "best_by_load",
    "chain_options",
    "cost_grid",
    "decode_context",
    "gpus_needed",
    "grid_from_steps",
    "lru_free_slot",
    "lru_slot_layouts",
    "max_rate",
    "mean_tokens_over_context",
    "open_loop_point",
    "prefill_seconds",
    "round_seconds",
    "run_lengths",
    "scattered_steps",
    "simulate_batching",
    "speculation_stops_paying",
    "steady_state",
    "tree_option",
]

MODES = ("open", "closed")  #: Poisson arrivals at a rate, or a fixed number of users
#: How an engine runs a prompt's prefill beside the running decodes: "mixed" (prompt tokens ride in the
#: decode step's batch, chunked to a token budget: vLLM V1's chunked prefill, on by default; TensorRT-LLM's
#: in-flight batching of context and generation requests; llama.cpp's server, whose batch of up to
#: ``n_batch`` tokens takes prompt and generated tokens of every slot) or "separate" (a prefill forward of
#: its own, decodes waiting: SGLang without ``--enable-mixed-chunk``, Hugging Face generation loops).
PREFILL = {
    "vllm": "mixed",
    "tensorrt-llm": "mixed",
    "llama.cpp": "mixed",
    "llama.cpp-cpu": "mixed",
    "sglang": "separate",
    "hf-transformers": "separate",
    "gpt-fast": "separate",
    "mlc-llm": "separate",
    "exllamav2": "separate",
}
#: How an engine's KV cache holds its sequences: "unified" (one cache, and every step one forward over the
#: running batch: vLLM, SGLang, TensorRT-LLM, llama-server with ``--kv-unified`` or ``-np`` auto) or "slots"
#: (llama-server started with ``-np N``: one KV stream per slot, and every step one forward per run of
#: consecutive busy slots, :func:`scattered_steps`).
KV_LAYOUTS = ("unified", "slots")
SLOT_ENGINES = ("llama.cpp", "llama.cpp-cpu")  #: the engine profiles whose server may keep a KV stream per slot
GRID_POINTS = 192  #: batch grid points between 1 and the cap (geometric): interpolation error < 0.1 %
MAX_LENGTH = 1_048_576  #: the longest prompt or output accepted, tokens
MAX_USERS = 10_000  #: the most users of a closed loop (its distribution has a state per user)


# --------------------------------------------------------------------------------------
# traffic: lengths and the context of a decoding sequence
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: ``values`` (n,) integers ≥ 1 with probabilities ``weights`` (n,).

    Build one with :meth:`fixed`, :meth:`uniform` or :meth:`samples` (measured lengths, e.g. a dataset's).
    """

    values: np.ndarray
    weights: np.ndarray

    @staticmethod
    def _checked(values, name: str) -> np.ndarray:
        v = np.asarray(values, dtype=float).ravel()
        bad = ~np.isfinite(v) | (v < 1) | (v > MAX_LENGTH) | (v != np.round(v))
        if v.size == 0 or bad.any():
            shown = v[bad][0] if bad.any() else "none"
            raise Message(
                "{name} must be whole numbers of tokens in [1, {most}]; got {value}",
                name=name,
                most=MAX_LENGTH,
                value=shown,
            )
        return v

    @classmethod
    def fixed(cls, n, name: str = "length") -> Lengths:
        """Every request has ``n`` tokens."""
        return cls(cls._checked([n], name), np.ones(1))

    @classmethod
    def uniform(cls, lo, hi, name: str = "length") -> Lengths:
        """Uniform over the integers lo..hi (inclusive)."""
        lo_, hi_ = cls._checked([lo, hi], name)
        if hi_ < lo_:
            raise Message(
                "{name}: the range {lo}..{hi} is empty (the upper end is below the lower)",
                name=name,
                lo=int(lo_),
                hi=int(hi_),
            )
        v = np.arange(lo_, hi_ + 1)
        return cls(v, np.full(v.size, 1.0 / v.size))

    @classmethod
    def samples(cls, values, name: str = "length") -> Lengths:
        """The empirical distribution of measured lengths."""
        v, counts = np.unique(cls._checked(values, name), return_counts=True)
        return cls(v, counts / counts.sum())

    @property
    def mean(self) -> float:
        return float(self.values @ self.weights)

    def expect(self, f) -> float:
        """E[f(X)] for a vectorised ``f``."""
        return float(np.asarray(f(self.values), dtype=float) @ self.weights)


def _check_output(output: Lengths) -> None:
    if output.values.min() < 2:
        raise Message(
            "output lengths must be at least 2 tokens (TPOT is defined over the tokens after the first); got {value}",
            value=int(output.values.min()),
        )


def decode_context(prompt: Lengths, output: Lengths) -> float:
    """L̄: the mean context of a decode step, over the steps of every request (prompt ⟂ output).

    A request's G − 1 decode steps run at contexts P + 1 … P + G − 1, so, weighting each request by its
    steps, L̄ = E[P] + E[G(G − 1)] / (2·E[G − 1]): long outputs stay in the batch longer (the
    length-biased mean, not E[P] + E[G] / 2).
    """
    _check_output(output)
    return prompt.mean + output.expect(lambda g: g * (g - 1)) / (2.0 * output.expect(lambda g: g - 1))


def _context_density(prompt: Lengths, output: Lengths, points: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Decode-step contexts L (points,) and the share of decode steps at each (sums to 1): a step at
    context L belongs to a request with P < L < P + G."""
    lo = prompt.values.min() + 1
    hi = prompt.values.max() + output.values.max() - 1
    ctx = np.unique(np.round(np.linspace(lo, hi, points)))
    p, g = prompt.values[None, :, None], output.values[None, None, :]
    inside = (ctx[:, None, None] > p) & (ctx[:, None, None] < p + g)  # (nL, nP, nG)
    share = (inside * prompt.weights[None, :, None] * output.weights[None, None, :]).sum(axis=(1, 2))
    return ctx, share / share.sum()


def mean_tokens_over_context(alpha_of_context, k, prompt: Lengths, output: Lengths) -> np.ndarray:
    """E[N] per round of K when α depends on the context: the token-weighted harmonic mean.

    A stretch of ΔL tokens at context L takes ΔL / E[N](α(L), K) rounds, so tokens per round over the
    whole decode is Σ π(L) / Σ π(L) / E[N](α(L), K), with π the share of decode steps at L
    (:func:`decode_context`'s weighting). ``alpha_of_context`` maps an array of contexts to α;
    ``k`` is an array of K ≥ 1. Returns (len(k),); a constant α gives E[N](α, K) exactly.
    """
    ctx, share = _context_density(prompt, output)
    a = theory.check_alpha(np.asarray(alpha_of_context(ctx), dtype=float))
    kk = np.atleast_1d(theory.check_k(k))
    per = theory.expected_tokens(np.broadcast_to(a, ctx.shape)[:, None], kk[None, :])  # (nL, nK)
    return 1.0 / (share[:, None] / per).sum(axis=0)


# --------------------------------------------------------------------------------------
# options and their cost on a batch grid
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One way to decode. ``k`` draft forwards per round (0: no speculation), ``mean_tokens`` per
    sequence and round (E[N] or F(T); 1 without speculation), ``verify_tokens`` per sequence in the
    verify forward (K + 1 for a chain, the tree's nodes + 1), ``draft_tokens`` per draft forward (a tree
    level's width)."""

    label: str
    k: int
    mean_tokens: float
    verify_tokens: int = 1
    draft_tokens: int = 1

    def __post_init__(self):
        if self.k == 0 and (self.mean_tokens != 1.0 or self.verify_tokens != 1):
            raise ValueError("an option without drafts yields one token per round and verifies one")
        if self.k > 0 and not (1.0 <= self.mean_tokens <= self.verify_tokens):
            raise ValueError(f"mean_tokens must be in [1, verify_tokens]; got {self.mean_tokens}")


def chain_options(alpha, k_max: int, *, prompt: Lengths | None = None, output: Lengths | None = None) -> list[Option]:
    """No speculation and chains of K = 1..``k_max``.

    ``alpha``: one number, per-position acceptance a_1, a_2, … (as :func:`hardware.speedup_by_batch`),
    or a function of the context (then ``prompt`` and ``output`` are needed:
    :func:`mean_tokens_over_context`).
    """
    if not (isinstance(k_max, int | np.integer) and 0 <= k_max <= 64):
        raise Message("k_max must be an integer in [0, 64]; got {value!r}", value=k_max)
    ks = np.arange(1, k_max + 1)
    if k_max == 0:
        mean = np.zeros(0)
    elif callable(alpha):
        if prompt is None or output is None:
            raise ValueError("α as a function of context needs the prompt and output lengths")
        mean = mean_tokens_over_context(alpha, ks, prompt, output)
    else:
        mean = hardware._mean_tokens(alpha, k_max)
    options = [Option("K = 0", 0, 1.0)]
    return options + [Option(f"K = {k}", int(k), float(m), int(k) + 1) for k, m in zip(ks, mean, strict=True)]


def tree_option(tree, p, label: str = "tree") -> Option:
    """A token tree as an option (:mod:`specviz.core.trees`): its depth of draft forwards, each over its
    widest level's tokens, F(T) tokens per round under positional acceptance ``p``, and its nodes plus
    the root verified."""
    from specviz.core import trees

    widths = np.bincount(np.asarray(tree.depths)[1:])
    return Option(label, int(tree.depth), float(trees.expected_tokens(tree, p)), tree.drafts + 1, int(widths.max()))


@dataclass(frozen=True)
class CostGrid:
    """The cost model on a batch grid, for every option.

    ``batch`` (nG,) running batches, 0 then 1 … ``cap`` geometric (the step at B < 1 is priced at 1);
    ``round_s`` (nG, nO) seconds of one round (speculative) or step (K = 0) at each batch;
    ``mean_tokens`` (nO,); ``prefill_s`` (nO,) one prompt's prefill cost p and ``chunks`` the rounds it
    spans where prefill rides in decode steps (0 where it is a forward of its own); ``cap`` the largest
    running batch; ``gpus`` of one replica; ``context`` the decode context L̄ it was priced at.
    """

    batch: np.ndarray
    round_s: np.ndarray
    mean_tokens: np.ndarray
    prefill_s: np.ndarray
    chunks: int
    cap: float
    gpus: int
    context: float
    options: tuple[Option, ...] = field(default=())


def _is_model_draft(draft) -> bool:
    return not (isinstance(draft, str) and draft == hardware.NGRAM) and not heads.is_head(draft)


def _draft_forward_model(draft, target):
    """The model a draft forward runs: the draft, a head's draft model, or None (n-gram, Medusa)."""
    if isinstance(draft, str) and draft == hardware.NGRAM:
        return None
    if heads.is_head(draft):
        head = heads.head_spec(draft)
        return None if head["kind"] in heads.PARALLEL else heads.draft_model(head, hardware.model_spec(target))
    return draft


def batch_cap(target, draft, gpu, context, *, dtype="bf16", tp=1, max_seqs: int = 256) -> float:
    """The largest running batch: the engine's sequence limit ``max_seqs`` or what fits in memory.

    A paged KV cache holds the contexts the batch has, B·L̄ tokens at the decode context L̄: memory left
    after the target's and a draft model's weights (per GPU of ``tp``, :data:`hardware.USABLE_MEMORY` of
    HBM), over L̄ times both models' KV bytes per token. 0 where the weights do not fit.
    """
    g = hardware.gpu_spec(gpu)
    free = g["memory_gb"] * 1e9 * hardware.USABLE_MEMORY - hardware.weight_bytes(target, dtype) / tp
    per_token = hardware.kv_bytes_per_token(target, dtype, tp)
    dm = _draft_forward_model(draft, target) if draft is not None else None
    if dm is not None:
        free -= hardware.weight_bytes(dm, dtype) / tp if _is_model_draft(draft) else 0.0
        per_token += hardware.kv_bytes_per_token(dm, dtype, tp)
    fits = max(np.floor(free / (max(context, 1.0) * per_token)), 0.0)
    return float(min(fits, max_seqs))


def prefill_seconds(
    target, draft, gpu, prompt: Lengths, *, mode: str = "mixed", dtype="bf16", tp=1, efficiency=None
) -> float:
    """One prompt's prefill cost p, averaged over the prompt lengths, with the draft's where it has one.

    ``mode`` "mixed" (:data:`PREFILL`): the prompt's P tokens ride in a decode step, which streams the
    weights anyway, so p = E[T(1, 0, P) − T(1, 0, 1)]; "separate": a forward of its own, p = E[T(1, 0, P)].
    A draft model (or a head's draft layer) prefills the prompt too; Medusa heads and n-gram drafts do not.
    """
    if mode not in ("mixed", "separate"):
        raise ValueError(f"mode must be 'mixed' or 'separate'; got {mode!r}")
    kw = dict(dtype=dtype, tp=tp, efficiency=efficiency)
    models = [target] + ([m] if draft is not None and (m := _draft_forward_model(draft, target)) is not None else [])
    total = 0.0
    for model in models:
        full = hardware.step_time(model, gpu, 1, 0, prompt.values, **kw)  # (nP,)
        one = hardware.step_time(model, gpu, 1, 0, 1, **kw) if mode == "mixed" else 0.0
        total += float((np.asarray(full) - one) @ prompt.weights)
    return total


def scattered_steps(steps) -> np.ndarray:
    """The step with n of S slots busy, for n = 1 … S, when each run of consecutive busy slots is a forward
    of its own, from the steps t(b) of b contiguous busy slots.

    llama-server with ``-np S`` (``kv_unified`` off, one KV stream per slot) splits every batch with
    ``split_equal(n_ubatch, sequential=true)`` (llama.cpp b11434, src/llama-kv-cache.cpp ``init_batch``):
    a ubatch takes only slots whose ids follow one another (src/llama-batch.cpp), so a step over busy
    slots {0, 2} is two forwards, of the target and of a draft alike. A request takes the least recently
    used free slot (:func:`lru_free_slot`); where outputs differ in length they end out of order and
    the busy slots spread about as a uniform n-subset does (:func:`lru_slot_layouts`: 1.77 runs for two of
    eight at outputs uniform over 64 … 192, a uniform pair 1.75), which this assumes; where every output
    has one length they walk down the slots side by side, one run. The step is then

        t_S(n) = Σ_r E[N_r(n)]·t(r),

    N_r the number of runs of exactly r busy slots. A given run [i, i + r − 1] needs its r slots busy and
    its neighbours free (one at either end of the row, two inside it), so with C(·,·) binomials

        E[N_r(n)] = (2·C(S − r − 1, n − r) + (S − r − 1)·C(S − r − 2, n − r)) / C(S, n),   r < S,

    and N_S(S) = 1. Σ_r r·E[N_r(n)] = n; where t is linear through the origin the layout costs nothing.

    Parameters
    ----------
    steps : array (S,) or (S, nO)
        t(b) at b = 1 … S contiguous busy slots (seconds), for each option.

    Returns
    -------
    array of the same shape: t_S(n) at n = 1 … S busy slots.
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
    """The lengths of a sorted layout's runs of consecutive slot ids, longest first: (2, 1) for {0, 1, 5}
    (each run a forward of its own on llama-server, :func:`scattered_steps`)."""
    cuts = np.flatnonzero(np.diff(layout) != 1) + 1
    return tuple(sorted((len(r) for r in np.split(np.asarray(layout), cuts)), reverse=True))


def lru_free_slot(last_used, busy) -> int:
    """The slot llama-server gives a request whose prompt no slot holds: the free one released longest ago.

    llama.cpp b11434, tools/server/server-context.cpp ``get_available_slot``: the smallest ``t_last_used``
    (set in ``server_slot::release``, −1 for a slot never used) among the slots not processing, ties to
    the highest id (its comparison is ``<=``), so a fresh server hands out S − 1, S − 2, ….

    Parameters
    ----------
    last_used : array (S,)
        Each slot's last release time, −1 where never used.
    busy : container of int
        The slots processing a request.

    Returns
    -------
    int, the slot chosen; ValueError when every slot is busy.
    """
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
    """Which slots a load keeps busy on llama-server: the layouts its decode rounds meet, by busy count.

    llama-server gives a request whose prompt no slot holds the free slot released longest ago
    (llama.cpp b11434, tools/server/server-context.cpp ``get_available_slot``: the smallest
    ``t_last_used``, set in ``server_slot::release``; −1 for a slot never used; ties to the highest id,
    its comparison being ``<=``). The free slots are so a queue in release order, and a closed loop of
    two users walks down the slots side by side (7 6 5 … 0 7 6 …), where a uniform draw of two of eight
    slots makes them neighbours in 7 draws of 28. Where the step's cost depends on the layout
    (:func:`scattered_steps`), this is the layout a calibration should measure.

    The simulation runs decode rounds: every busy slot advances one round, a request of G output tokens
    holds its slot for max(1, ⌈(G − 1)/E[N]⌉) rounds after its prefill (its first token), and slots that
    finish in the same round are released in id order (``update_slots`` walks them so). A closed loop's
    ``users`` send their next request as the last one ends, and the server takes it after one more round
    of the others (the last token's trip to the client and the request's back); an open loop's Poisson arrivals at ``rate``
    wait first-come first-served for a free slot, in seconds of ``round_s`` and ``prefill_s``.

    Parameters
    ----------
    slots : int
        The server's slots (``-np``).
    output : Lengths
        Output tokens a request.
    rng : numpy.random.Generator
        Draws output lengths (and arrivals).
    users, rate : one of them
        A closed loop's users, or an open loop's requests/s.
    round_s : array (slots,), optional
        Seconds of a round at n = 1 … slots busy slots (an open loop's clock; a closed loop needs none).
    prefill_s : float
        Seconds a prompt's prefill stalls the running rounds.
    mean_tokens : float
        E[N], tokens a sequence gains a round.
    requests : int
        Requests simulated.

    Returns
    -------
    dict n → (layouts, rounds): the distinct sets of n busy slots (sorted tuples) and how many rounds
    each held, for every n that occurred.
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


def round_seconds(
    target, draft, gpu, options, batch, context, *, dtype="bf16", tp=1, efficiency=None, expert_parallel=False
) -> np.ndarray:
    """Seconds of one round of each option (nB, nO) at whole batches ``batch`` (nB,) and ``context``.

    A speculative option's round is t_verify(B, T) + D·t_draft(B) + ``round_overhead_s`` from
    :func:`hardware.pair_costs` (the Hardware page's terms); K = 0 is one target step t_target(B).
    """
    b = np.atleast_1d(np.asarray(batch, dtype=float))[:, None]  # (nB, 1)
    kw = dict(dtype=dtype, efficiency=efficiency, expert_parallel=expert_parallel)
    out = np.empty((b.shape[0], len(options)))
    for j, o in enumerate(options):
        if o.k == 0:
            out[:, j] = hardware.step_time(target, gpu, b[:, 0], context, 1, tp=tp, **kw)
    # one pair_costs call per (draft_tokens, verify rule): chains share K + 1, trees name their T
    groups: dict[tuple, list[int]] = {}
    for i, o in enumerate(options):
        if o.k > 0:
            chain = o.verify_tokens == o.k + 1 and o.draft_tokens == 1
            groups.setdefault((o.draft_tokens, None if chain else i), []).append(i)
    for (width, tree), idx in groups.items():
        ks = np.array([options[i].k for i in idx])[None, :]  # (1, n)
        verify = None if tree is None else options[tree].verify_tokens
        c = hardware.pair_costs(
            target,
            draft,
            gpu,
            b,
            context,
            ks,
            tp_target=tp,
            tp_draft=tp,
            draft_tokens=width,
            verify_tokens=verify,
            **kw,
        )
        t = c["t_verify"] + c["draft_steps"] * c["t_draft"] + c["o"] * c["t_target"]
        out[:, idx] = np.broadcast_to(t, (b.shape[0], len(idx)))
    return out


def cost_grid(
    target,
    draft,
    gpu,
    options,
    prompt: Lengths,
    output: Lengths,
    *,
    dtype="bf16",
    tp=1,
    engine: str | None = None,
    efficiency=None,
    prefill: str | None = None,
    chunk_tokens: int = 2048,
    max_seqs: int = 256,
    expert_parallel=False,
    points: int = GRID_POINTS,
    kv: str = "unified",
) -> CostGrid:
    """Price every option's round on a batch grid at the decode context L̄ (:func:`decode_context`).

    The round of a speculative option is t_verify(B, T) + D·t_draft(B) + ``round_overhead_s`` from
    :func:`hardware.pair_costs` (the same terms as the Hardware page's speedup); K = 0 is t_target(B).
    ``engine`` names the profile (:func:`engines.profile_for`) and the prefill mode (:data:`PREFILL`);
    ``efficiency`` (a profile) and ``prefill`` override them. A prompt spans ⌈P / chunk_tokens⌉ rounds
    where prefill is mixed into decode steps. ``kv`` "slots" (:data:`KV_LAYOUTS`: llama-server's ``-np N``)
    prices a step with n sequences as n of ``cap`` slots scattered (:func:`scattered_steps`).
    """
    if kv not in KV_LAYOUTS:
        raise Message(
            "KV cache layout must be one of {allowed}; got {value!r}", allowed=", ".join(KV_LAYOUTS), value=kv
        )
    options = tuple(options)
    if not options or options[0].k != 0:
        raise ValueError("options must start with the option without speculation (K = 0)")
    eff = hardware.as_efficiency(efficiency) or (engines.profile_for(engine) if engine else None)
    eff = eff or hardware.efficiency_for(hardware.gpu_spec(gpu))
    mode = prefill or PREFILL.get(engine or "", "mixed")
    ctx = float(round(decode_context(prompt, output)))
    cap = batch_cap(target, draft if len(options) > 1 else None, gpu, ctx, dtype=dtype, tp=tp, max_seqs=max_seqs)
    if cap < 1:
        raise Message(
            "the weights and one sequence's KV cache at a context of {ctx} tokens do not fit on the GPU; use more GPUs (tp) or a smaller dtype",
            ctx=round(ctx),
        )
    # whole batches (the roofline prices integers): every one up to ~points, geometric beyond
    batch = np.concatenate([[0.0], np.unique(np.round(np.geomspace(1.0, cap, points)))])  # (nG,)
    kw = dict(dtype=dtype, tp=tp, efficiency=eff, expert_parallel=expert_parallel)
    if kv == "slots":  # every whole batch up to the cap, then the scattered layout's step at the grid's
        every = round_seconds(target, draft, gpu, options, np.arange(1.0, cap + 1), ctx, **kw)  # (cap, nO)
        rounds = scattered_steps(every)[np.maximum(batch, 1.0).astype(int) - 1]  # B < 1 priced at 1
    else:
        rounds = round_seconds(target, draft, gpu, options, np.maximum(batch, 1.0), ctx, **kw)  # B < 1 priced at 1
    spec = [i for i, o in enumerate(options) if o.k > 0]
    kw_p = dict(mode=mode, dtype=dtype, tp=tp, efficiency=eff)
    p_plain = prefill_seconds(target, None, gpu, prompt, **kw_p)
    dm = _draft_forward_model(draft, target) if spec else None
    p = p_plain + (prefill_seconds(dm, None, gpu, prompt, **kw_p) if dm is not None else 0.0)  # the draft's too
    prefill_s = np.array([p_plain] + [p] * (len(options) - 1))
    chunks = int(np.ceil(prompt.mean / chunk_tokens)) if mode == "mixed" else 0
    return CostGrid(
        batch=batch,
        round_s=rounds,
        mean_tokens=np.array([o.mean_tokens for o in options]),
        prefill_s=prefill_s,
        chunks=chunks,
        cap=cap,
        gpus=int(tp),
        context=ctx,
        options=options,
    )


def grid_from_steps(batch, round_s, options, prefill_s, *, context: float, chunks: int = 1, gpus: int = 1) -> CostGrid:
    """A :class:`CostGrid` from step costs measured on an engine rather than priced by the roofline.

    ``batch`` (nB,) the whole batches 1 … cap measured (increasing, starting at 1), ``round_s`` (nB, nO)
    the seconds of one round of each option there, ``prefill_s`` (nO,) one prompt's prefill cost; the cap
    is the largest batch measured. ``context`` is the decode context the steps were measured at.
    """
    b = np.asarray(batch, dtype=float)
    r = np.asarray(round_s, dtype=float)
    options = tuple(options)
    if b.ndim != 1 or b[0] != 1 or (np.diff(b) <= 0).any() or r.shape != (b.size, len(options)):
        raise ValueError(f"batch must rise from 1 and round_s be (batches, options); got {b.shape} and {r.shape}")
    return CostGrid(
        batch=np.concatenate([[0.0], b]),
        round_s=np.vstack([r[:1], r]),  # the step at B < 1 is the step at 1
        mean_tokens=np.array([o.mean_tokens for o in options]),
        prefill_s=np.asarray(prefill_s, dtype=float),
        chunks=chunks,
        cap=float(b[-1]),
        gpus=gpus,
        context=float(context),
        options=options,
    )


# --------------------------------------------------------------------------------------
# the steady state
# --------------------------------------------------------------------------------------


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

    Parameters
    ----------
    arrive : array (nL, K + 1, nO)
        λ_k at levels k = 0 … K.
    finish : array (nL or 1, K + 1, nO)
        μ_k at levels k (k = 0 unused).
    prefill_s : array (nO,)
        p, one prompt's prefill (0: no stall, the product form of a symmetric queue).
    cap : int
        The most sequences decoding.
    phases : int
        M (:func:`_phases`).

    Returns
    -------
    log_level : array (nL, K + 1, nO), ln P(k) up to a constant per (load, option);
    waiting : array (nL, K + 1, nO), E[m | k].
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
    """A discrete-event simulation of continuous batching, round by round: the reference the steady state
    (:func:`steady_state`) is checked against, with none of its assumptions about the distributions.

    Every round, the requests that have arrived take free sequences (first come, first served); with
    ``prompts="one"`` a round prefills the first waiting prompt alone (the decodes stall: the chain of
    :func:`_level_chain`), with ``"all"`` it carries every newly admitted prompt beside one decode step of the
    running requests (llama-server's mixed batch) and lasts t(n) + p per prompt; otherwise it is one decode
    step of the n running requests, t(n). A request's first token comes with its prompt's round, and it
    then needs ``rounds[i]`` decode rounds. A closed loop's ``users`` send the next request as one ends
    (after ``think_draws`` of it, where given).

    Parameters
    ----------
    steps : array (cap,)
        t(n), seconds of a decode round at n = 1 … cap running; cap is the number of sequences.
    prefill_s : float
        p, seconds of one prompt.
    rounds : array (n,) of int ≥ 1
        Decode rounds of each request, in order of arrival.
    arrivals : array (n,), optional
        An open loop's arrival times, increasing (seconds).
    users : int, optional
        A closed loop's users (arrivals None).
    prompts : "one" or "all"
        How a round takes waiting prompts.
    prefill_draws : array (n,), optional
        Each prompt's own prefill seconds (default ``prefill_s`` for every one).
    think_draws : array (n,), optional
        A closed loop: the seconds before request i is sent, after the request it follows ends (default 0).

    Returns
    -------
    DataFrame, one row per request: arrival_s, first_s (its first token), end_s, decode_s (end − first).
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
    """The open loop's steady state for one rate and one option, state by state in Python: the per-point
    reference :func:`steady_state` is checked against (slow: ``price(n)``, the round's seconds at a whole
    batch n, is called for every n = 1 … cap, and the chain of :func:`_level_chain` is walked one level
    and one phase at a time). Returns batch, round_s, tpot_s; NaN where overloaded.
    """
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


# --------------------------------------------------------------------------------------
# what a user asks of it
# --------------------------------------------------------------------------------------


def _meets(frame: pd.DataFrame, ttft_s: float | None, tpot_s: float | None) -> pd.Series:
    ok = ~frame["overloaded"]
    if ttft_s is not None:
        ok &= frame["ttft_s"] <= ttft_s
    if tpot_s is not None:
        ok &= frame["tpot_s"] <= tpot_s
    return ok


def best_by_load(frame: pd.DataFrame, *, ttft_s: float | None = None, tpot_s: float | None = None) -> pd.DataFrame:
    """Per load: the option with the lowest TPOT among those meeting the SLA (ties to the smaller K),
    its TPOT, TPOT without speculation and the speedup TPOT(0) / TPOT(best), and whether any option
    meets the SLA (``meets_sla``; where none does, the lowest TPOT is given). Columns: load, k_best,
    option, tpot_s, tpot_plain_s, speedup, meets_sla, overloaded (every option)."""
    f = frame.assign(meets=_meets(frame, ttft_s, tpot_s))
    rows = []
    for load, g in f.groupby("load", sort=True):
        plain = g[g["k"] == 0].iloc[0]
        pool = g[g["meets"]] if g["meets"].any() else g[~g["overloaded"]]
        if pool.empty:
            rows.append(
                dict(
                    load=load,
                    k_best=np.nan,
                    option="",
                    tpot_s=np.nan,
                    tpot_plain_s=np.nan,
                    speedup=np.nan,
                    meets_sla=False,
                    overloaded=True,
                )
            )
            continue
        best = pool.sort_values(["tpot_s", "k"], kind="stable").iloc[0]
        rows.append(
            dict(
                load=load,
                k_best=int(best["k"]),
                option=best["option"],
                tpot_s=best["tpot_s"],
                tpot_plain_s=plain["tpot_s"],
                speedup=plain["tpot_s"] / best["tpot_s"],
                meets_sla=bool(g["meets"].any()),
                overloaded=False,
            )
        )
    return pd.DataFrame(rows)


def speculation_stops_paying(best: pd.DataFrame) -> float | None:
    """The smallest load from which on no option beats no speculation (:func:`best_by_load`'s k_best is
    0 at it and at every larger load); None where speculation pays up to the largest load."""
    b = best[best["k_best"].notna()].sort_values("load")  # overloaded loads say nothing
    if b.empty:
        return None
    pays = b["k_best"].to_numpy() > 0
    if pays[-1]:
        return None
    last = np.flatnonzero(pays)
    return float(b["load"].iloc[last[-1] + 1 if last.size else 0])


def max_rate(
    grid: CostGrid, output: Lengths, *, ttft_s: float | None = None, tpot_s: float | None = None, points: int = 256
) -> pd.DataFrame:
    """The largest Poisson rate (requests/s, one replica) meeting the SLA, per option and for the best
    option: a geometric sweep of λ up to the rate where the prefill alone saturates the GPUs (1 / p) or
    the cap at the fastest round, refined once between the last rate that meets and the first that does
    not. Columns: option, k, max_rps, max_rps_per_gpu (NaN where no rate meets the SLA)."""
    rounds = output.expect(lambda g: g - 1) / grid.mean_tokens  # R (nO,)
    tau_cap = grid.round_s[-1] + grid.cap * grid.prefill_s / rounds
    hi = float(np.max(grid.cap / (rounds * tau_cap)))  # the throughput at the cap bounds every steady rate
    lam = np.geomspace(hi * 1e-4, hi * 1.001, points)
    frame = steady_state(grid, output, lam, mode="open")
    ok = _meets(frame, ttft_s, tpot_s).to_numpy().reshape(lam.size, -1)  # (nL, nO)
    # the SLA holds below a rate and fails above it (every metric grows with λ): the last rate that meets
    last = np.where(ok.any(axis=0), ok.shape[0] - 1 - np.argmax(ok[::-1], axis=0), -1)
    lo = np.where(last >= 0, lam[np.maximum(last, 0)], np.nan)
    nxt = np.minimum(last + 1, lam.size - 1)
    fine = np.linspace(0.0, 1.0, 33)
    out = lo.copy()
    for j in np.flatnonzero(last >= 0):
        if last[j] == lam.size - 1:
            continue
        cand = lam[last[j]] + fine * (lam[nxt[j]] - lam[last[j]])
        f = steady_state(grid, output, cand, mode="open")
        meets = _meets(f, ttft_s, tpot_s).to_numpy().reshape(cand.size, -1)[:, j]
        out[j] = cand[meets].max() if meets.any() else lo[j]
    frame = pd.DataFrame(
        {
            "option": [o.label for o in grid.options],
            "k": [o.k for o in grid.options],
            "max_rps": out,
            "max_rps_per_gpu": out / grid.gpus,
        }
    )
    return frame


def gpus_needed(rate: float, max_rps: float, gpus_per_replica: int) -> float:
    """GPUs to serve ``rate`` requests/s with replicas that each meet the SLA up to ``max_rps``:
    ⌈rate / max_rps⌉ replicas of ``gpus_per_replica``; NaN where no rate meets it."""
    if not (np.isfinite(rate) and rate > 0):
        raise Message("target rate must be a number of requests/s > 0; got {value}", value=rate)
    if not (np.isfinite(max_rps) and max_rps > 0):
        return float("nan")
    return float(np.ceil(rate / max_rps - 1e-12) * gpus_per_replica)


# --------------------------------------------------------------------------------------
# the schedule as each engine takes it
# --------------------------------------------------------------------------------------


def k_by_batch(grid: CostGrid, output: Lengths) -> pd.DataFrame:
    """The best chain K at each whole running batch 1 … cap (trees left out: the engines' schedules are of
    chains): the K with the lowest TPOT at that batch,
    τ_K(B) / E[N]_K with τ_K(B) = t_K(B) + (B / R_K)·p_K (ties to the smaller K; 0: do not speculate).
    Columns: batch, k, tpot_s."""
    batches = np.arange(1, int(grid.cap) + 1, dtype=float)
    chains = [j for j, o in enumerate(grid.options) if o.k == 0 or (o.verify_tokens == o.k + 1 and o.draft_tokens == 1)]
    rounds = output.expect(lambda g: g - 1) / grid.mean_tokens[chains]
    t = np.stack([np.interp(batches, grid.batch, grid.round_s[:, j]) for j in chains], -1)
    tpot = (t + batches[:, None] * grid.prefill_s[chains] / rounds) / grid.mean_tokens[chains]  # (nB, nO)
    best = tpot.argmin(axis=1)
    ks = np.array([grid.options[j].k for j in chains])
    return pd.DataFrame({"batch": batches.astype(int), "k": ks[best], "tpot_s": tpot[np.arange(batches.size), best]})

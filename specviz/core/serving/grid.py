"""Ways to decode (options) and the cost of their rounds on a batch grid, from the roofline or measured steps."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specviz.base.i18n import Message
from specviz.core import hardware, profiles
from specviz.core.serving.slots import KV_LAYOUTS, scattered_steps
from specviz.core.serving.traffic import Lengths, decode_context, mean_tokens_over_context

#: How a serving stack runs a prompt's prefill beside the running decodes: "mixed" (prompt tokens ride in the
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
#: How a serving stack's KV cache holds its sequences: "unified" (one cache, and every step one forward over the
#: running batch: vLLM, SGLang, TensorRT-LLM, llama-server with ``--kv-unified`` or ``-np`` auto) or "slots"
#: (llama-server started with ``-np N``: one KV stream per slot, and every step one forward per run of
#: consecutive busy slots, :func:`scattered_steps`).
GRID_POINTS = 192  #: batch grid points between 1 and the cap (geometric): interpolation error < 0.1 %


@dataclass(frozen=True)
class Option:
    """One way to decode: ``k`` draft forwards per round (0: none), ``mean_tokens`` E[N] or F(T) per sequence and round,
    ``verify_tokens`` (K + 1 for a chain, nodes + 1 for a tree), ``draft_tokens`` per draft forward (level width)."""

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
    """No speculation and chains of K = 1..``k_max``; ``alpha`` a number, per-position a_1, a_2, …, or a function
    of the context (needs ``prompt`` and ``output``: :func:`mean_tokens_over_context`)."""
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
    """A token tree as an option: depth draft forwards over its widest level, F(T) tokens per round under
    positional acceptance ``p``, nodes + 1 verified."""
    from specviz.core import trees

    widths = np.bincount(np.asarray(tree.depths)[1:])
    return Option(label, int(tree.depth), float(trees.expected_tokens(tree, p)), tree.drafts + 1, int(widths.max()))


@dataclass(frozen=True)
class CostGrid:
    """The cost model on a batch grid: ``batch`` (nG,) 0 then 1 … ``cap`` geometric; ``round_s`` (nG, nO) s a round
    (K = 0: a step); ``mean_tokens``, ``prefill_s`` (p, s) and ``caps`` (largest batch; None: ``cap``) (nO,);
    ``chunks`` rounds a prompt spans when mixed (0: separate); ``gpus`` per replica; ``context`` L̄ in tokens."""

    batch: np.ndarray
    round_s: np.ndarray
    mean_tokens: np.ndarray
    prefill_s: np.ndarray
    chunks: int
    cap: float
    gpus: int
    context: float
    options: tuple[Option, ...] = field(default=())
    caps: np.ndarray | None = None

    def option_caps(self) -> np.ndarray:
        """Each option's largest running batch (nO,), whole sequences."""
        n = self.round_s.shape[1]
        caps = np.full(n, self.cap) if self.caps is None else np.asarray(self.caps, dtype=float)
        return np.floor(caps).astype(int)


def batch_cap(target, draft, gpu, context, *, dtype="bf16", tp=1, max_seqs: int = 256, k: int = 0) -> float:
    """Largest running batch: min(``max_seqs``, :func:`specviz.core.hardware.memory_plan`'s largest batch): the
    weights, and per sequence the KV of ``context`` tokens, with a draft its weights, its KV and the ``k`` + 1
    verify slots."""
    plan = hardware.memory_plan(
        target, draft, gpu, 1, context, k if draft is not None else 0, dtype=dtype, tp_target=tp
    )
    return float(min(plan.max_batch, max_seqs))


def prefill_seconds(
    target, draft, gpu, prompt: Lengths, *, mode: str = "mixed", dtype="bf16", tp=1, efficiency=None
) -> float:
    """One prompt's prefill p (s) over the prompt lengths, a draft model's included (not Medusa's, not n-gram's):
    ``mode`` "mixed" p = E[T(1, 0, P) − T(1, 0, 1)], "separate" p = E[T(1, 0, P)]; ValueError otherwise."""
    if mode not in ("mixed", "separate"):
        raise ValueError(f"mode must be 'mixed' or 'separate'; got {mode!r}")
    kw = dict(dtype=dtype, tp=tp, efficiency=efficiency)
    models = [target] + (
        [m] if draft is not None and (m := hardware.draft_forward_model(draft, target)) is not None else []
    )
    total = 0.0
    for model in models:
        full = hardware.step_time(model, gpu, 1, 0, prompt.values, **kw)  # (nP,)
        one = hardware.step_time(model, gpu, 1, 0, 1, **kw) if mode == "mixed" else 0.0
        total += float((np.asarray(full) - one) @ prompt.weights)
    return total


def round_seconds(
    target, draft, gpu, options, batch, context, *, dtype="bf16", tp=1, efficiency=None, expert_parallel=False
) -> np.ndarray:
    """Seconds (nB, nO) of a round of each option at ``batch`` (nB,): t_verify(B, T) + D·t_draft(B) + o·t_target
    (:func:`hardware.pair_costs`); K = 0: t_target(B)."""
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
    stack: str | None = None,
    efficiency=None,
    prefill: str | None = None,
    chunk_tokens: int = 2048,
    max_seqs: int = 256,
    expert_parallel=False,
    points: int = GRID_POINTS,
    kv: str = "unified",
) -> CostGrid:
    """Every option's round (:func:`round_seconds`) on a batch grid at the decode context L̄ (:func:`decode_context`).
    ``stack`` picks the profile (:func:`profiles.profile_for`) and prefill mode (:data:`PREFILL`); ``efficiency`` and
    ``prefill`` override them. Mixed prefill spans ⌈P / ``chunk_tokens``⌉ rounds. ``kv="slots"`` prices n of ``cap``
    scattered slots (:func:`scattered_steps`). Message on a bad ``kv`` or weights that do not fit."""
    if kv not in KV_LAYOUTS:
        raise Message(
            "KV cache layout must be one of {allowed}; got {value!r}", allowed=", ".join(KV_LAYOUTS), value=kv
        )
    options = tuple(options)
    if not options or options[0].k != 0:
        raise ValueError("options must start with the option without speculation (K = 0)")
    eff = hardware.as_efficiency(efficiency) or (profiles.profile_for(stack) if stack else None)
    eff = eff or hardware.efficiency_for(hardware.gpu_spec(gpu))
    mode = prefill or PREFILL.get(stack or "", "mixed")
    ctx = float(round(decode_context(prompt, output)))
    slots = max(o.verify_tokens for o in options) - 1  # the widest round's verified positions beyond the bonus one
    spec = draft if len(options) > 1 else None
    # a request holds the cache it reaches, E[P] + E[G]: engines reserve it at admission or preempt (docs/design.md)
    reach = float(round(prompt.mean + output.mean))
    spec_cap = batch_cap(target, spec, gpu, reach, dtype=dtype, tp=tp, max_seqs=max_seqs, k=slots)
    # a llama-server's slots are fixed at start (-np), drafting or not; elsewhere no draft leaves room for more
    plain_cap = (
        spec_cap if kv == "slots" else batch_cap(target, None, gpu, reach, dtype=dtype, tp=tp, max_seqs=max_seqs)
    )
    cap = max(spec_cap, plain_cap)
    if spec_cap < 1:
        raise Message(
            "the weights and one sequence's KV cache at a context of {ctx} tokens do not fit on the GPU; use more GPUs (tp) or a smaller dtype",
            ctx=round(reach),
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
    dm = hardware.draft_forward_model(draft, target) if spec else None
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
        caps=np.array([plain_cap] + [spec_cap] * (len(options) - 1)),
    )


def grid_from_steps(batch, round_s, options, prefill_s, *, context: float, chunks: int = 1, gpus: int = 1) -> CostGrid:
    """A :class:`CostGrid` from measured steps: ``batch`` (nB,) rising from 1 (the cap: the last), ``round_s`` (nB, nO)
    seconds, ``prefill_s`` (nO,), ``context`` in tokens; ValueError on other shapes."""
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

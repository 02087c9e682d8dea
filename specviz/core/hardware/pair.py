"""One speculative round priced on hardware: c, v, o and the speedup of a (target, draft) pair."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specviz.base.i18n import Message, Phrase
from specviz.core import heads, theory
from specviz.core.hardware.catalog import NGRAM, efficiency_for, gpu_spec, model_spec
from specviz.core.hardware.roofline import _activation_bytes, _dtype_bytes, _op_time, _peak_flops, step_time
from specviz.core.profiles import Efficiency, as_efficiency


def drafting_method(draft) -> str:
    """How ``draft`` drafts: "ngram" (:data:`NGRAM`), a head's kind (eagle, eagle3, mtp, medusa…), else "model"."""
    if isinstance(draft, str) and draft == NGRAM:
        return "ngram"
    if heads.is_head(draft):
        return str(heads.head_spec(draft)["kind"])
    return "model"


def pair_costs(
    target,
    draft,
    gpu,
    batch,
    context,
    k,
    *,
    dtype="bf16",
    tp_target=1,
    tp_draft=1,
    draft_context=None,
    efficiency=None,
    draft_tokens=1,
    verify_tokens=None,
    expert_parallel=False,
) -> dict[str, np.ndarray]:
    """One round's costs in the terms of :func:`specviz.core.theory.speedup_from_tokens`; broadcasts.

    ``draft``: a model, a head of :mod:`specviz.core.heads`, or :data:`NGRAM`. D = ``k`` draft forwards of
    ``draft_tokens`` (a tree level's width) over ``draft_context`` on ``tp_draft`` GPUs, each + ``draft_overhead_s``
    and without ``seq_overhead_s`` (once per round, in the verify),
    then one verify of T = ``verify_tokens`` (default k + 1); Medusa or n-gram (``overhead_s``): D = 1; P-EAGLE and
    DFlash: D = 1 forward of k (DFlash k + 1) positions. Returns
    t_target, t_draft, t_verify (s), c = t_target / t_draft, v = (t_verify / t_target − 1) / (T − 1),
    o = round_overhead_s / t_target, draft_steps D and nodes T − 1: S = E[N] / (1 + v·(T − 1) + o + D / c).
    """
    kk = theory.check_k(k)
    g, t = gpu_spec(gpu), model_spec(target)
    eff = as_efficiency(efficiency) or efficiency_for(g)
    kw = dict(dtype=dtype, efficiency=eff, expert_parallel=expert_parallel)
    n_verify = kk + 1 if verify_tokens is None else theory.check_k(verify_tokens, "verify_tokens")
    if np.any(n_verify < kk + 1):
        raise Message(
            "verify_tokens must be at least k + 1 (the drafted positions and the bonus one); got {value} for k = {k}",
            value=int(np.min(n_verify)),
            k=int(np.max(kk)),
        )
    t_target = step_time(t, g, batch, context, 1, tp=tp_target, **kw)
    t_verify = step_time(t, g, batch, context, n_verify, tp=tp_target, **kw)
    d_ctx = context if draft_context is None else draft_context
    # A draft forward pays no seq_overhead_s: the per-request host work (scheduling, input preparation) runs once
    # per engine iteration, which the verify pays. vLLM's draft-model and EAGLE proposers share one loop that
    # advances positions and slot mappings on the GPU (vllm-project/vllm@01dd981 vllm/v1/spec_decode/draft_model.py,
    # update_common_attn_metadata); SGLang's EAGLE worker drafts all steps inside one CUDA graph.
    dkw = dict(kw, efficiency=replace(eff, seq_overhead_s=0.0))
    steps = np.asarray(kk, dtype=float)
    if isinstance(draft, str) and draft == NGRAM:
        t_draft, steps = eff.overhead_s + 0.0 * np.asarray(batch, dtype=float), np.ones_like(steps)
    elif heads.is_head(draft):
        head = heads.head_spec(draft)
        if head["kind"] in heads.PARALLEL:
            if np.any(kk > head["medusa_heads"]):
                raise Message(
                    "k must be at most the {n} heads of {head!r}; got {value}",
                    n=int(head["medusa_heads"]),
                    head=draft,
                    value=int(np.max(kk)),
                )
            t_draft = _parallel_head_seconds(head, t, g, batch, n_verify, kk, dtype, tp_target, eff)
            steps = np.ones_like(steps)
        elif head["kind"] in heads.ONE_PASS:  # one forward drafts all K positions (plus DFlash's anchor)
            positions = (kk + heads.ONE_PASS[head["kind"]]) * draft_tokens
            t_draft = step_time(heads.draft_model(head, t), g, batch, d_ctx, positions, tp=tp_draft, **dkw)
            steps = np.ones_like(steps)
        else:
            t_draft = step_time(heads.draft_model(head, t), g, batch, d_ctx, draft_tokens, tp=tp_draft, **dkw)
    else:
        t_draft = step_time(draft, g, batch, d_ctx, draft_tokens, tp=tp_draft, **dkw)
    t_draft = t_draft + eff.draft_overhead_s
    return {
        "t_target": np.asarray(t_target),
        "t_draft": np.asarray(t_draft),
        "t_verify": np.asarray(t_verify),
        "c": np.asarray(t_target / t_draft),
        "v": np.asarray((t_verify / t_target - 1.0) / (n_verify - 1)),
        "o": np.asarray(eff.round_overhead_s / t_target),
        "draft_steps": np.broadcast_to(steps, np.broadcast_shapes(np.shape(steps), np.shape(t_target))),
        "nodes": np.broadcast_to(n_verify - 1, np.broadcast_shapes(np.shape(n_verify), np.shape(t_target))),
    }


def _parallel_head_seconds(head: dict, target: dict, g: dict, batch, tokens, k, dtype, tp, eff: Efficiency):
    """One Medusa pass: k heads' weights (:func:`specviz.core.heads.medusa_weights`) read once, B·T rows."""
    b = np.asarray(batch, dtype=float)
    n = np.asarray(k, dtype=float)
    per_head = heads.medusa_weights(head, target, 1)
    flops = 2.0 * b * tokens * per_head * n / tp
    nbytes = (
        per_head * n * _dtype_bytes(dtype) + b * tokens * n * target["vocab_size"] * _activation_bytes(dtype)
    ) / tp
    peak, bandwidth = _peak_flops(g, dtype), g["bandwidth_tbs"] * 1e12
    return _op_time(flops, nbytes, peak, bandwidth, eff)[0] + eff.layer_overhead_s * n


def round_speedup(mean_tokens, costs: dict) -> np.ndarray:
    """S = E[N] / (1 + v·(T − 1) + o + D / c) by :func:`specviz.core.theory.speedup_from_tokens`."""
    return theory.speedup_from_tokens(
        mean_tokens, costs["c"], costs["nodes"], costs["v"], costs["o"], costs["draft_steps"].astype(int)
    )


#: the parts of a round's cost beyond the one target step it replaces, in :func:`round_terms`'s order
ROUND_TERMS = ("verify", "draft", "overhead")


def round_terms(mean_tokens: float, costs: dict) -> dict[str, float]:
    """One round in target steps (scalar ``costs`` of :func:`pair_costs`): it gains E[N] − 1 tokens over a plain
    step and costs 1 + v·(T − 1) (verifying T tokens, not one) + D / c (drafting) + o (the round's fixed
    overhead); S = E[N] / (1 + verify + draft + overhead), as :func:`round_speedup`. ``largest``: the biggest term."""
    terms = {
        "verify": float(costs["v"]) * float(costs["nodes"]),
        "draft": float(costs["draft_steps"]) / float(costs["c"]),
        "overhead": float(costs["o"]),
    }
    cost = 1.0 + sum(terms.values())
    largest = max(ROUND_TERMS, key=terms.get)
    return terms | {"gained": float(mean_tokens) - 1.0, "speedup": float(mean_tokens) / cost, "largest": largest}


def check_pair(target, draft) -> None:
    """ValueError unless draft and target vocabularies differ by ≤ 128 (padded embeddings: Qwen2.5 has
    151,936 rows below 7B and 152,064 from 7B up)."""
    t, d = model_spec(target), model_spec(draft)
    if abs(t["vocab_size"] - d["vocab_size"]) > 128:
        raise Message(
            "target {target!r} (vocab_size {target_vocab:,}) and draft {draft!r} (vocab_size {draft_vocab:,}) cannot share a tokenizer: a draft must use its target's vocabulary",
            target=t.get("name", Phrase("target")),
            target_vocab=t["vocab_size"],
            draft=d.get("name", Phrase("draft")),
            draft_vocab=d["vocab_size"],
        )

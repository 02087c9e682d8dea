"""Whether a model fits: weight and KV-cache bytes per GPU, the largest batch that fits, and a speculative
setup's memory plan (target, draft, both KV caches and the verify slots)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.core import heads
from specviz.core.hardware.catalog import NGRAM, gpu_spec, model_spec
from specviz.core.hardware.params import _expert_parameters, _n_moe_layers, linear_attention_dims, parameter_count
from specviz.core.hardware.roofline import (
    INDEX_SCALE_BYTES,
    _activation_bytes,
    _check_grid,
    _dtype_bytes,
    kv_heads_per_gpu,
)

USABLE_MEMORY = 0.9  #: fraction of HBM for weights and KV cache (the rest: activations, CUDA context)


def kv_bytes_per_token(model, dtype="bf16", tp=1):
    """KV-cache bytes per cached token on one of ``tp`` GPUs, over the softmax-attention layers (a sliding layer's
    token inside its window): 2·layers·h·head_dim·a (h = :func:`kv_heads_per_gpu`); latent attention:
    layers·(kv_r + rope)·a on every GPU (+ layers·(d_i + 4) with sparse attention's indexer). Linear-attention layers cache nothing per token (:func:`kv_cache_bytes`)."""
    m = model_spec(model)
    _, _, _, tp_ = _check_grid(1, 0, 1, tp)
    layers = m["n_layers"] - m["linear_layers"]
    if m["kv_lora_rank"]:  # latent attention: kv_r + rope values per token and layer, on every GPU
        nbytes = layers * (m["kv_lora_rank"] + m["rope_head_dim"]) * _activation_bytes(dtype)
        if m["sparse_topk"]:  # and the sparse-attention indexer's FP8 key with its scale
            nbytes += layers * (m["index_head_dim"] + INDEX_SCALE_BYTES)
        return np.asarray(nbytes + 0 * tp_)[()]
    heads = kv_heads_per_gpu(m["n_kv_heads"], tp_)
    return np.asarray(2.0 * layers * heads * m["head_dim"] * _activation_bytes(dtype))[()]


def kv_cache_bytes(model, context, dtype="bf16", tp=1):
    """Cache bytes of one sequence of ``context`` tokens on one of ``tp`` GPUs: :func:`kv_bytes_per_token` × L, with a
    sliding layer's share × min(L, W) (what vLLM's hybrid KV-cache manager allocates), plus each linear-attention
    layer's recurrent and convolution state (n_v·d_k·d_v + (kernel − 1)·conv width values, heads split over tp)."""
    m = model_spec(model)
    _, ctx, _, tp_ = _check_grid(1, context, 1, tp)
    per_token = kv_bytes_per_token(m, dtype, tp_)
    attending = m["n_layers"] - m["linear_layers"]
    sliding = per_token * m["sliding_layers"] / attending if attending else 0.0
    total = (per_token - sliding) * ctx + sliding * np.minimum(ctx, m["sliding_window"])
    if m["linear_layers"]:
        _, _, conv = linear_attention_dims(m)
        state = m["linear_v_heads"] * m["linear_k_dim"] * m["linear_v_dim"] + conv * max(m["linear_conv"] - 1, 0)
        total = total + m["linear_layers"] * state * _activation_bytes(dtype) / tp_
    return np.asarray(total)[()]


def weight_bytes(model, dtype="bf16") -> float:
    """Bytes of the weights: :func:`parameter_count` (or the catalogue's ``params``) times the dtype's size."""
    m = model_spec(model)
    params = m.get("params")
    count = float(params) if params is not None and params == params else parameter_count(m)
    if not (m["n_experts"] and m["expert_bits"]):
        return count * _dtype_bytes(dtype)
    experts = _n_moe_layers(m) * _expert_parameters(m, m["n_experts"])  # stored at expert_bits
    return (count - experts) * _dtype_bytes(dtype) + experts * m["expert_bits"] / 8


def fits(model, gpu, batch, context, dtype="bf16", tp=1):
    """Whether weights / tp + B·:func:`kv_cache_bytes` ≤ :data:`USABLE_MEMORY` of a GPU's HBM."""
    g = gpu_spec(gpu)
    b, ctx, _, tp_ = _check_grid(batch, context, 1, tp)
    need = weight_bytes(model, dtype) / tp_ + b * kv_cache_bytes(model, ctx, dtype, tp_)
    return np.asarray(need <= g["memory_gb"] * 1e9 * USABLE_MEMORY)[()]


def max_batch(model, gpu, context, dtype="bf16", tp=1) -> np.ndarray:
    """The largest batch whose KV cache at ``context`` fits beside the weights (0 if the weights don't fit)."""
    g = gpu_spec(gpu)
    _, ctx, _, tp_ = _check_grid(1, context, 1, tp)
    free = g["memory_gb"] * 1e9 * USABLE_MEMORY - weight_bytes(model, dtype) / tp_  # per GPU
    per_seq = kv_cache_bytes(model, np.maximum(ctx, 1), dtype, tp_)
    return np.asarray(np.maximum(np.floor(free / per_seq), 0).astype(int))[()]


def draft_forward_model(draft, target) -> dict | None:
    """The model one draft forward runs: the draft's spec, a head's draft model, or None (n-gram lookup, Medusa)."""
    if isinstance(draft, str) and draft == NGRAM:
        return None
    if heads.is_head(draft):
        head = heads.head_spec(draft)
        return None if head["kind"] in heads.PARALLEL else heads.draft_model(head, model_spec(target))
    return model_spec(draft)


def _draft_weights(draft, target: dict, dtype: str) -> tuple[dict | None, float]:
    """(the model one draft forward runs, or None; the draft's own weight bytes). A head shares the target's
    embedding, and its LM head unless it has a reduced vocabulary (EAGLE-3's ``draft_vocab``): those are not
    counted twice. Medusa: n·(L·h² + h·V) (:func:`specviz.core.heads.medusa_weights`); n-gram lookup: none."""
    dm = draft_forward_model(draft, target)
    if heads.is_head(draft):
        head = heads.head_spec(draft)
        if head["kind"] in heads.PARALLEL:
            return None, heads.medusa_weights(head, target) * _dtype_bytes(dtype)
        own = {k: v for k, v in dm.items() if k != "params"}  # draft_model copies the target's params count
        shared = 2 * dm["vocab_size"] * dm["hidden_size"]  # embedding + LM head, as parameter_count counts them
        lm_head = int(head["draft_vocab"]) * dm["hidden_size"] if head.get("draft_vocab") else 0
        return dm, (parameter_count(own) - shared + lm_head) * _dtype_bytes(dtype)
    return dm, (0.0 if dm is None else weight_bytes(draft, dtype))


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes on the fullest GPU of a speculative setup at batch ``batch`` and context ``context``: the draft sits
    on the target's GPUs (its weights over ``tp_draft`` of them); every sequence holds L + K + 1 target KV slots
    (the K + 1 verified positions are written before acceptance) and L + K draft slots."""

    usable: float  #: HBM × :data:`USABLE_MEMORY`, bytes
    target_weights: float  #: weights / tp_target
    draft_weights: float  #: the draft's own weights / tp_draft (0 for n-gram lookup)
    kv_target: float  #: B · :func:`kv_cache_bytes` of the target at L + K + 1 slots, per GPU
    kv_draft: float  #: B · :func:`kv_cache_bytes` of the draft at L + K slots, per GPU (0 without a draft forward)
    batch: int
    max_batch: int  #: the largest B that fits with speculation (0: the weights alone do not fit)
    max_batch_plain: int  #: the same for the target alone, B·L slots

    @property
    def need(self) -> float:
        return self.target_weights + self.draft_weights + self.kv_target + self.kv_draft

    @property
    def fits(self) -> bool:
        return self.need <= self.usable


def memory_plan(target, draft, gpu, batch: int, context: int, k: int, *, dtype="bf16", tp_target=1, tp_draft=None):
    """:class:`MemoryPlan` of ``target`` with ``draft`` (a model, a head or :data:`NGRAM`; None: no speculation,
    k = 0) on ``gpu``; max batch = ⌊(usable − weights) / per-sequence KV⌋, 0 where the weights do not fit."""
    g, t = gpu_spec(gpu), model_spec(target)
    tp_d = tp_target if tp_draft is None else tp_draft
    usable = g["memory_gb"] * 1e9 * USABLE_MEMORY
    w_t = weight_bytes(t, dtype) / tp_target
    dm, w_d = (None, 0.0) if draft is None else _draft_weights(draft, t, dtype)
    k = 0 if draft is None else int(k)
    w_d = w_d / tp_d
    slots_t = context + k + 1 if k else context
    kv_t = float(kv_cache_bytes(t, slots_t, dtype, tp_target))  # one sequence's target cache
    kv_d = 0.0 if dm is None else float(kv_cache_bytes(dm, context + k, dtype, tp_d))
    per_seq = kv_t + kv_d

    def most(free: float, per: float) -> int:
        return int(max(np.floor(free / per), 0)) if free > 0 else 0

    return MemoryPlan(
        usable=usable,
        target_weights=w_t,
        draft_weights=w_d,
        kv_target=batch * kv_t,
        kv_draft=batch * kv_d,
        batch=int(batch),
        max_batch=most(usable - w_t - w_d, max(per_seq, 1.0)),
        max_batch_plain=int(max_batch(t, g, context, dtype, tp_target)),
    )

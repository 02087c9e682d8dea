"""Whether a model fits: weight and KV-cache bytes per GPU, and the largest batch that fits."""

from __future__ import annotations

import numpy as np

from specviz.core.hardware.catalog import gpu_spec, model_spec
from specviz.core.hardware.params import _expert_parameters, _n_moe_layers, parameter_count
from specviz.core.hardware.roofline import _activation_bytes, _check_grid, _dtype_bytes, kv_heads_per_gpu

USABLE_MEMORY = 0.9  #: fraction of HBM for weights and KV cache (the rest: activations, CUDA context)


def kv_bytes_per_token(model, dtype="bf16", tp=1):
    """KV-cache bytes per token on one of ``tp`` GPUs: 2·n_layers·h·head_dim·a (h = :func:`kv_heads_per_gpu`);
    latent attention: n_layers·(kv_r + rope)·a on every GPU."""
    m = model_spec(model)
    _, _, _, tp_ = _check_grid(1, 0, 1, tp)
    if m["kv_lora_rank"]:  # latent attention: kv_r + rope values per token and layer, on every GPU
        nbytes = m["n_layers"] * (m["kv_lora_rank"] + m["rope_head_dim"]) * _activation_bytes(dtype)
        return np.asarray(nbytes + 0 * tp_)[()]
    heads = kv_heads_per_gpu(m["n_kv_heads"], tp_)
    return np.asarray(2.0 * m["n_layers"] * heads * m["head_dim"] * _activation_bytes(dtype))[()]


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
    """Whether weights / tp + B·L·:func:`kv_bytes_per_token` ≤ :data:`USABLE_MEMORY` of a GPU's HBM."""
    g = gpu_spec(gpu)
    b, ctx, _, tp_ = _check_grid(batch, context, 1, tp)
    need = weight_bytes(model, dtype) / tp_ + b * ctx * kv_bytes_per_token(model, dtype, tp_)
    return np.asarray(need <= g["memory_gb"] * 1e9 * USABLE_MEMORY)[()]


def max_batch(model, gpu, context, dtype="bf16", tp=1) -> np.ndarray:
    """The largest batch whose KV cache at ``context`` fits beside the weights (0 if the weights don't fit)."""
    g = gpu_spec(gpu)
    _, ctx, _, tp_ = _check_grid(1, context, 1, tp)
    free = g["memory_gb"] * 1e9 * USABLE_MEMORY - weight_bytes(model, dtype) / tp_  # per GPU
    per_seq = np.maximum(ctx, 1.0) * kv_bytes_per_token(model, dtype, tp_)
    return np.asarray(np.maximum(np.floor(free / per_seq), 0).astype(int))[()]

"""The roofline time of one decoder forward, operator by operator.

t = max(FLOPs / (peak·e_c), bytes / (bandwidth·e_m)) per operator, summed, plus all-reduces and the engine's
fixed costs (docs/design.md §8, after LLM-Viewer and MagicDec); seconds; every numeric argument broadcasts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.core import moe
from specviz.core.hardware.catalog import efficiency_for, gpu_spec, model_spec
from specviz.core.hardware.params import _attention_parameters, _expert_parameters, _n_moe_layers, linear_attention_dims
from specviz.core.profiles import Efficiency, as_efficiency

#: bytes per element of weights, activations and the KV cache for each dtype
DTYPE_BYTES = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.625,
    "int4-g128": 0.53125,
    "nvfp4": 0.5625,
    "mxfp4": 0.53125,
}
#: 4-bit floating-point weights (E2M1) with block scales: NVFP4 one FP8 E4M3 scale per 16 values, 4 + 8/16 bits
#: (NVIDIA, "Introducing NVFP4 for efficient and accurate low-precision inference", developer blog 2025-06-24);
#: MXFP4 one E8M0 scale per 32 values, 4 + 8/32 bits (OCP Microscaling Formats (MX) v1.0, 2023, §5). On a GPU
#: with FP4 tensor cores (a ``fp4_tflops`` peak: Blackwell) the matrix products run at that peak; elsewhere
#: the weights are dequantised to bf16 in the kernel (vLLM's Marlin FP4 path on Hopper and Ampere), a weight-only
#: quantisation. The KV cache and the stored activations stay bf16 either way.
FP4 = ("nvfp4", "mxfp4")
#: Weight-only quantisations: weights at DTYPE_BYTES (int8 with one scale per output channel; int4 in
#: groups of 32 or 128 input weights, each group with a bf16 scale and zero point, so 4 + 32/g bits:
#: gpt-fast's WeightOnlyInt4Linear, scales_and_zeros of shape (in / groupsize, out, 2), and AWQ's
#: group 128); activations, the KV cache and the arithmetic stay in bf16.
WEIGHT_ONLY = {"int8": "bf16", "int4": "bf16", "int4-g128": "bf16", "nvfp4": "bf16", "mxfp4": "bf16"}
#: the GPU column holding the dense tensor-core peak used for each dtype (fp32 runs at the bf16 rate / 2
#: on tensor cores with TF32 at best; modelled as bf16 / 2)
_PEAK_COLUMN = {"fp32": "bf16_tflops", "bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops"}

LINKS = ("nvlink", "pcie")  #: how a GPU's tensor-parallel peers are linked (:func:`link_kind`)
#: GPUs one NVLink board joins (HGX / DGX A100, H100, H200, B200 and the MI300X platform: 8); a tensor-parallel
#: group beyond it spans nodes
BOARD_GPUS = 8
#: GB/s per direction of one GPU's network card between nodes (DGX H100: one 400 Gb/s ConnectX-7 per GPU,
#: https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html)
NIC_GBS = 50.0
#: bytes of the scale stored with each FP8 indexer key of sparse attention (vLLM's DeepSeek-V3.2 indexer cache:
#: 128 FP8 values and one float32 scale per token, 132 bytes)
INDEX_SCALE_BYTES = 4
#: the operators that stream weights: below 16 bits their kernels reach ``quant_memory`` of ``memory``
WEIGHT_OPERATORS = ("q/k/v/o projections", "MLP", "LM head", "fusion fc")
OPERATORS = ("q/k/v/o projections", "MLP", "attention", "norms & residual", "LM head", "all-reduce", "fusion fc")


def kv_heads_per_gpu(n_kv_heads, tp):
    """K/V heads each of ``tp`` GPUs holds: max(H_kv / tp, 1) (replicated when H_kv < tp)."""
    return np.maximum(n_kv_heads / np.asarray(tp, dtype=float), 1.0)


def _check_grid(batch, context, tokens, tp) -> tuple[np.ndarray, ...]:
    out = []
    for value, name, low in ((batch, "batch", 1), (context, "context", 0), (tokens, "tokens", 1), (tp, "tp", 1)):
        a = np.asarray(value, dtype=float)
        bad = ~np.isfinite(a) | (a < low) | (a != np.floor(a))
        if bad.any():
            first = a[bad].flat[0] if a.ndim else a
            raise Message("{name} must be an integer >= {low}; got {value:g}", name=name, low=low, value=first)
        out.append(a)
    return tuple(out)


def _dtype_bytes(dtype: str) -> float:
    """Bytes per weight of ``dtype``."""
    if dtype not in DTYPE_BYTES:
        raise Message("dtype must be one of {allowed}; got {value!r}", allowed=list(DTYPE_BYTES), value=dtype)
    return DTYPE_BYTES[dtype]


def _compute_dtype(dtype: str) -> str:
    """The dtype of activations, the KV cache and the arithmetic: bf16 under a weight-only quantisation."""
    _dtype_bytes(dtype)  # names the allowed dtypes
    return WEIGHT_ONLY.get(dtype, dtype)


def _activation_bytes(dtype: str) -> float:
    """Bytes per activation and KV-cache value under ``dtype``."""
    return _dtype_bytes(_compute_dtype(dtype))


def _peak_flops(g: dict, dtype: str) -> float:
    fp4 = g.get("fp4_tflops")
    if dtype in FP4 and fp4 is not None and np.isfinite(float(fp4)) and float(fp4) > 0:
        return float(fp4) * 1e12  # FP4 tensor cores; without them the weight-only bf16 path below (:data:`FP4`)
    dtype = _compute_dtype(dtype)
    fp32 = g.get("fp32_tflops")
    if dtype == "fp32" and fp32 is not None and np.isfinite(float(fp32)) and float(fp32) > 0:
        return float(fp32) * 1e12  # a measured fp32 peak (a CPU), not the tensor-core rule below
    value = g.get(_PEAK_COLUMN[dtype])
    if value is None or not np.isfinite(float(value)) or float(value) <= 0:
        gpu = g.get("name", Phrase("(custom)"))
        raise Message(
            "GPU {gpu!r} has no {dtype} tensor-core peak ({column})", gpu=gpu, dtype=dtype, column=_PEAK_COLUMN[dtype]
        )
    return float(value) * 1e12 / (2.0 if dtype == "fp32" else 1.0)


def operator_costs(
    model, gpu, batch, context, tokens, *, dtype="bf16", tp=1, expert_parallel=False
) -> dict[str, tuple]:
    """Per operator: (FLOPs, bytes) of one forward on one of ``tp`` GPUs, summed over layers.

    B = ``batch``, n = ``tokens`` new after L = ``context`` cached; w, a bytes per weight, per activation. Linear:
    2·in·out·B·n / tp FLOPs, (in·out·w + (in + out)·B·n·a) / tp bytes. Attention: 4·B·n·(L + n)·H·hd / tp FLOPs, KV
    read B·(L + n)·2·h·hd·a (h :func:`kv_heads_per_gpu`) + q, output. Norms, residual: 8·B·n·d FLOPs, 4·B·n·d·a bytes
    per layer, every GPU. All-reduce: 2 per layer of B·n·d·a. MoE: :func:`_moe_mlp` (vLLM ``--enable-expert-parallel``).
    A sliding layer attends to min(L + n, W) positions; linear-attention layers: :func:`_linear_attention`.
    """
    m, g = model_spec(model), gpu_spec(gpu)
    b, ctx, n, tp = _check_grid(batch, context, tokens, tp)
    w, a = _dtype_bytes(dtype), _activation_bytes(dtype)
    _peak_flops(g, dtype)  # the GPU must support the dtype
    d, hd, layers = m["hidden_size"], m["head_dim"], m["n_layers"]
    h, h_kv, ffn = m["n_heads"], m["n_kv_heads"], m["intermediate_size"]
    rows = b * n  # (…) tokens processed this step
    kv_heads = kv_heads_per_gpu(h_kv, tp)

    def linear(inp: float, out: float) -> tuple:
        return 2.0 * inp * out * rows / tp, (inp * out * w + (inp + out) * rows * a) / tp

    span = ctx + n  # positions a full-attention layer attends to
    attending = layers - m["linear_layers"]  # softmax-attention layers, full or sliding
    # (…) layer × positions read: a sliding layer reads at most its window
    positions = (attending - m["sliding_layers"]) * span + m["sliding_layers"] * np.minimum(span, m["sliding_window"])
    if m["kv_lora_rank"]:
        proj, attn_flops, attn_bytes = _latent_attention(m, rows, b, span, tp, w, a)
    else:
        q = linear(d, h * hd)
        replicated = kv_heads * tp / h_kv  # 1 when the KV heads split evenly; tp / H_kv when each GPU holds one
        kv = tuple(replicated * x for x in linear(d, 2 * h_kv * hd))  # each GPU projects its own K/V heads
        o = linear(h * hd, d)
        proj = tuple(attending * (x + y + z) for x, y, z in zip(q, kv, o, strict=True))
        attn_flops = 4.0 * rows * positions * h * hd / tp
        attn_bytes = b * positions * 2 * kv_heads * hd * a + attending * 2 * rows * h * hd * a / tp
    if m["linear_layers"]:
        lin_proj, lin_flops, lin_bytes = _linear_attention(m, rows, b, n, tp, linear, a)
        proj, attn_flops, attn_bytes = (
            (proj[0] + lin_proj[0], proj[1] + lin_proj[1]),
            attn_flops + lin_flops,
            (attn_bytes + lin_bytes),
        )
    n_moe = _n_moe_layers(m)
    up = linear(d, (2 if m["mlp"] == "gated" else 1) * ffn)
    down = linear(ffn, d)
    mlp = ((layers - n_moe) * (up[0] + down[0]), (layers - n_moe) * (up[1] + down[1]))
    if n_moe:
        routed = _moe_mlp(m, rows, tp, w, a, expert_parallel)
        mlp = (mlp[0] + n_moe * routed[0], mlp[1] + n_moe * routed[1])
    norms = (layers * 8.0 * rows * d, layers * 4.0 * rows * d * a)  # every GPU normalises the whole hidden state
    head = linear(d, m["vocab_size"])
    comm = (0.0 * rows, np.where(tp > 1, 2.0 * layers * rows * d * a, 0.0))
    costs = {
        "q/k/v/o projections": proj,
        "MLP": mlp,
        "attention": (attn_flops, attn_bytes),
        "norms & residual": norms,
        "LM head": head,
        "all-reduce": comm,
    }
    if m.get("fc_in"):  # a head draft fuses fc_in hidden states (or embeddings) into one before its layer
        costs["fusion fc"] = linear(m["fc_in"] * d, d)
    return costs


def _moe_mlp(m: dict, rows, tp, w: float, a: float, expert_parallel: bool = False) -> tuple:
    """(FLOPs, bytes) of one MoE layer's MLP on one of ``tp`` GPUs, ``rows`` = B·n tokens: k experts per token at
    2·3·d·d_e FLOPs; 3·d·d_e weights (``expert_bits``, MXFP4 4.25, or w) per distinct expert touched
    (:func:`specviz.core.moe.experts_touched`) / tp, or with ``expert_parallel`` on the busiest GPU
    (:func:`specviz.core.moe.experts_on_busiest_rank`); shared experts every token; router d·E."""
    d, e, k, de = m["hidden_size"], m["n_experts"], m["experts_per_token"], m["expert_size"]
    ns, ds = m["n_shared_experts"], m["shared_expert_size"]
    we = m["expert_bits"] / 8 if m["expert_bits"] else w
    flops = 2.0 * rows * (3 * d * (k * de + ns * ds) + d * e) / tp
    ranks = np.asarray(tp, dtype=float)
    if expert_parallel:  # (…) whole experts on the busiest GPU, computed once per distinct (tp, tokens)
        pairs = np.broadcast_arrays(ranks, np.asarray(rows, dtype=float))
        unique, where = np.unique(np.stack([x.ravel() for x in pairs]), axis=1, return_inverse=True)
        each = [moe.experts_on_busiest_rank(e, k, n, int(min(r, e))) for r, n in unique.T]
        routed = _expert_parameters(m, np.asarray(each)[where.ravel()].reshape(pairs[0].shape)) * we
    else:
        routed = _expert_parameters(m, moe.experts_touched(e, k, rows, m.get("expert_load"))) * we / ranks
    weights = routed + (3 * d * ns * ds * w + d * e * w) / tp
    activations = rows * (k * (3 * d + 3 * de) + ns * (3 * d + 3 * ds)) * a / tp
    return flops, weights + activations


def _linear_attention(m: dict, rows, b, n, tp, linear, a: float) -> tuple:
    """Gated DeltaNet layers (Qwen3-Next, Qwen3.5) on one of ``tp`` GPUs: (projections, recurrence FLOPs, bytes).
    A d_k × d_v state per value head: ~6·n_v·d_k·d_v FLOPs a token; read once and written after each of the n new
    tokens (a verify keeps every position's state for the rollback), with the convolution's window."""
    layers, d, nv = m["linear_layers"], m["hidden_size"], m["linear_v_heads"]
    key, value, conv = linear_attention_dims(m)
    parts = (linear(d, 2 * key + 2 * value), linear(d, 2 * nv), linear(value, d))
    proj = tuple(layers * sum(x) for x in zip(*parts, strict=True))
    state = nv * m["linear_k_dim"] * m["linear_v_dim"] + conv * max(m["linear_conv"] - 1, 0)
    flops = layers * 6.0 * rows * nv * m["linear_k_dim"] * m["linear_v_dim"] / tp
    nbytes = layers * b * (1 + n) * state * a / tp
    return proj, flops, nbytes


def _latent_attention(m: dict, rows, b, span, tp, w: float, a: float) -> tuple:
    """MLA (DeepSeek-V2/V3) decode, absorbed form, on one of ``tp`` GPUs: (projections (FLOPs, bytes), attention
    FLOPs, attention bytes) over all layers; cache kv_r + rope per token and layer on every GPU;
    2·H·(kv_r + rope) + 2·H·kv_r FLOPs per token and position. Sparse attention (DeepSeek-V3.2's DSA,
    ``sparse_topk``): the latent attention reads min(L + n, top-k) positions per sequence (the verified tokens'
    selections overlap), and the indexer scores every position, 2·H_i·d_i FLOPs each, reading its FP8 keys
    (d_i bytes + a 4-byte scale, :func:`specviz.core.hardware.memory.kv_bytes_per_token`) on every GPU."""
    layers, d, h = m["n_layers"], m["hidden_size"], m["n_heads"]
    r, rope = m["kv_lora_rank"], m["rope_head_dim"]
    weights = _attention_parameters(m)
    proj = (layers * 2.0 * weights * rows / tp, layers * (weights * w + 4 * d * rows * a) / tp)
    attended = np.minimum(span, m["sparse_topk"]) if m["sparse_topk"] else span
    attn_flops = layers * rows * attended * h * (2 * (r + rope) + 2 * r) / tp
    attn_bytes = layers * (b * attended * (r + rope) * a + 2 * rows * h * (r + rope) * a / tp)
    if m["sparse_topk"]:
        attn_flops = attn_flops + layers * 2.0 * rows * span * m["index_heads"] * m["index_head_dim"]
        attn_bytes = attn_bytes + layers * b * span * (m["index_head_dim"] + INDEX_SCALE_BYTES)
    return proj, attn_flops, attn_bytes


def _fixed_seconds(m: dict, eff: Efficiency, batch) -> np.ndarray:
    """The engine's fixed cost of one forward: per forward, per layer (and per MoE layer) and per sequence."""
    per_layer = eff.layer_overhead_s * m["n_layers"] + eff.moe_layer_overhead_s * _n_moe_layers(m)
    return eff.overhead_s + per_layer + eff.seq_overhead_s * np.asarray(batch, dtype=float)


def _op_time(flops, nbytes, peak: float, bandwidth: float, eff: Efficiency) -> tuple[np.ndarray, np.ndarray]:
    compute, memory = flops / (peak * eff.compute), nbytes / (bandwidth * eff.memory)
    return np.maximum(compute, memory), compute >= memory


def link_kind(gpu, tp=1) -> np.ndarray:
    """``"nvlink"`` where ``tp`` GPUs of ``gpu`` share a peer-to-peer fabric within one board of
    :data:`BOARD_GPUS`, else ``"pcie"`` (≤ 64 GB/s per direction, or a group spanning nodes)."""
    return _link_kind(gpu_spec(gpu), tp)


def _link_kind(g: dict, tp) -> np.ndarray:
    """:func:`link_kind` of a checked GPU spec (the step's hot path checks it once)."""
    fabric = g["interconnect_gbs"] > 64
    return np.where(fabric & (np.asarray(tp) <= BOARD_GPUS), "nvlink", "pcie")[()]


def _allreduce_time(nbytes, tp, g: dict, eff: Efficiency, layers: int) -> np.ndarray:
    """Ring all-reduce: 2 (tp − 1) / tp · bytes / link + 2 · layers · latency (PCIe latency off an
    NVLink board; beyond a board the link is capped at :data:`NIC_GBS`)."""
    tp = np.asarray(tp, dtype=float)
    across = tp > BOARD_GPUS
    link = np.where(across, min(g["interconnect_gbs"], NIC_GBS), g["interconnect_gbs"]) * 1e9 * eff.network
    latency = np.where(_link_kind(g, tp) == "pcie", eff.pcie_allreduce_latency_s, eff.allreduce_latency_s)
    return np.where(tp > 1, 2 * (tp - 1) / tp * nbytes / link + 2 * layers * latency, 0.0)


def _operator_efficiency(name: str, dtype: str, eff: Efficiency) -> Efficiency:
    """``eff`` with ``memory`` × ``quant_memory`` for a :data:`WEIGHT_OPERATORS` member below 16 bits."""
    if name in WEIGHT_OPERATORS and _dtype_bytes(dtype) < 2 and eff.quant_memory < 1:
        return replace(eff, memory=eff.memory * eff.quant_memory)
    return eff


def step_time(
    model,
    gpu,
    batch,
    context,
    tokens,
    *,
    dtype="bf16",
    tp=1,
    efficiency: Efficiency | None = None,
    expert_parallel=False,
):
    """Seconds of one forward of ``tokens`` new tokens for each of ``batch`` sequences over ``context``
    cached ones on ``tp`` GPUs: the operators' roofline times + all-reduces + fixed costs. Broadcasts."""
    g, m = gpu_spec(gpu), model_spec(model)
    eff = as_efficiency(efficiency) or efficiency_for(g)
    peak, bandwidth = _peak_flops(g, dtype), g["bandwidth_tbs"] * 1e12
    costs = operator_costs(m, g, batch, context, tokens, dtype=dtype, tp=tp, expert_parallel=expert_parallel)
    _, _, _, tp_arr = _check_grid(batch, context, tokens, tp)
    total = _fixed_seconds(m, eff, batch)
    for name, (flops, nbytes) in costs.items():
        if name == "all-reduce":
            total = total + _allreduce_time(nbytes, tp_arr, g, eff, m["n_layers"])
        else:
            total = total + _op_time(flops, nbytes, peak, bandwidth, _operator_efficiency(name, dtype, eff))[0]
    return np.asarray(total)[()]


def step_breakdown(
    model, gpu, batch, context, tokens, *, dtype="bf16", tp=1, efficiency=None, expert_parallel=False
) -> pd.DataFrame:
    """One row per operator of one forward (scalar arguments): flops, bytes, intensity (FLOPs per
    byte), seconds, bound ("compute", "memory", "network" or "overhead")."""
    g, m = gpu_spec(gpu), model_spec(model)
    eff = as_efficiency(efficiency) or efficiency_for(g)
    for value, name in ((batch, "batch"), (context, "context"), (tokens, "tokens"), (tp, "tp")):
        if np.ndim(value):
            raise ValueError(f"step_breakdown takes one {name}; got an array of shape {np.shape(value)}")
    peak, bandwidth = _peak_flops(g, dtype), g["bandwidth_tbs"] * 1e12
    rows = []
    costs = operator_costs(m, g, batch, context, tokens, dtype=dtype, tp=tp, expert_parallel=expert_parallel)
    for name, (flops, nbytes) in costs.items():
        flops, nbytes = float(flops), float(nbytes)
        if name == "all-reduce":
            seconds, bound = float(_allreduce_time(nbytes, np.asarray(float(tp)), g, eff, m["n_layers"])), "network"
        else:
            t, compute_bound = _op_time(flops, nbytes, peak, bandwidth, _operator_efficiency(name, dtype, eff))
            seconds, bound = float(t), "compute" if bool(compute_bound) else "memory"
        rows.append(
            {
                "operator": name,
                "flops": flops,
                "bytes": nbytes,
                "intensity": flops / nbytes if nbytes else np.nan,
                "seconds": seconds,
                "bound": bound,
            }
        )
    overhead = {"operator": "fixed overhead", "flops": 0.0, "bytes": 0.0, "intensity": np.nan}
    rows.append(overhead | {"seconds": float(_fixed_seconds(m, eff, batch)), "bound": "overhead"})
    return pd.DataFrame(rows)


def attainable(gpu, dtype="bf16", efficiency=None) -> tuple[float, float]:
    """(FLOP/s, bytes/s) attainable on ``gpu``: datasheet peak and bandwidth times the efficiencies."""
    g = gpu_spec(gpu)
    eff = as_efficiency(efficiency) or efficiency_for(g)
    return _peak_flops(g, dtype) * eff.compute, g["bandwidth_tbs"] * 1e12 * eff.memory


def ridge_point(gpu, dtype="bf16", efficiency=None) -> float:
    """FLOPs per byte above which an operator is compute-bound on ``gpu`` (attainable figures)."""
    flops, bandwidth = attainable(gpu, dtype, efficiency)
    return flops / bandwidth

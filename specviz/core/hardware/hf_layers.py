"""The layer fields of a Hugging Face ``config.json``: experts (MoE), latent attention (MLA), and which layers
attend to the whole context, to a sliding window, or through a linear recurrence.

Keys are read under the names the 2024–2026 families use (DeepSeek, Qwen2/3-MoE, Qwen3-Next, GLM-4 MoE, Mixtral,
OLMoE, gpt-oss, Llama-4, Gemma-2/3, Mistral, Phi). ``hf_int(config, keys, required, field)`` is
:func:`specviz.core.hardware.hf_config._hf_int`, passed in so that both modules check sizes the same way.
"""

from __future__ import annotations

from collections import Counter

from specviz.base.i18n import Message
from specviz.core.hardware.catalog import _shown

EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
_TOP_K_KEYS = (
    "num_experts_per_tok",
    "experts_per_token",
    "num_experts_per_token",
    "top_k_experts",
    "moe_topk",
    "moe_k",
    "top_k",
)
_EXPERT_WIDTH_KEYS = ("moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size")
#: layer_types values (transformers' names) → our kind of layer
_LAYER_KINDS = {
    "full_attention": "full",
    "attention": "full",
    "global_attention": "full",
    "sliding_attention": "sliding",
    "local_attention": "sliding",
    "chunked_attention": "sliding",  # Llama-4: attends within a chunk, at most attention_chunk_size back
    "linear_attention": "linear",
}


def mixture_of_experts(config: dict, kind: str, hf_int) -> dict:
    """The MoE fields (:data:`~specviz.core.hardware.catalog.MOE_FIELDS`) of ``config``, {} for a dense model.

    Expert width: moe_intermediate_size (DeepSeek, Qwen-MoE, GLM-4 MoE), else intermediate_size (Mixtral, OLMoE,
    gpt-oss, Llama-4). Shared experts: n_shared_experts of the expert width, or one of
    shared_expert_intermediate_size (Qwen2-MoE, Qwen3-Next); Llama-4 always has one. Dense layers:
    first_k_dense_replace, or the count of mlp_only_layers; every n-th layer MoE: moe_layer_freq,
    decoder_sparse_step, interleave_moe_layer_step. gpt-oss's MXFP4 experts: 4.25 bits per weight."""
    experts = hf_int(config, EXPERT_KEYS, False, "n_experts")
    if not experts or experts < 2:
        return {}
    out = {"n_experts": experts, "experts_per_token": hf_int(config, _TOP_K_KEYS, True, "experts_per_token")}
    out["expert_size"] = hf_int(config, (*_EXPERT_WIDTH_KEYS, "intermediate_size"), True, "expert_size")
    shared_width = hf_int(config, ("shared_expert_intermediate_size",), False, "shared_expert_size") or 0
    shared = hf_int(config, ("n_shared_experts", "num_shared_experts"), False, "n_shared_experts")
    if shared is None:
        shared = 1 if shared_width or kind.startswith("llama4") else 0
    out["n_shared_experts"], out["shared_expert_size"] = shared, shared_width if shared else 0
    dense = hf_int(config, ("first_k_dense_replace",), False, "dense_layers")
    only = config.get("mlp_only_layers")
    if dense is None and isinstance(only, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        dense = len(set(only))
    out["dense_layers"] = dense or 0
    every = ("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step")
    flags = config.get("moe_layer_freq")
    if isinstance(flags, list) and flags and all(x in (0, 1) and not isinstance(x, bool) for x in flags):
        # one 0/1 per layer (MiMo): the dense layers counted wherever they sit, the cost being the same
        out["dense_layers"], out["moe_every"] = flags.count(0), 1
    else:
        out["moe_every"] = hf_int(config, every, False, "moe_every") or 1
    quant = config.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        out["expert_bits"] = 4.25  # MXFP4: 4-bit values plus one 8-bit scale per 32
    return out


def attention_layers(config: dict, kind: str, n_layers: int, hf_int) -> dict:
    """Latent-attention sizes (kv_lora_rank, …) and the layer mix (:data:`~specviz.core.hardware.catalog.LAYER_FIELDS`).

    The mix comes from ``layer_types`` when config.json lists it (each entry a kind of :data:`_LAYER_KINDS`; any
    other is refused by name), else from full_attention_interval (Qwen3-Next: every n-th layer full, the rest
    linear), Llama-4's no_rope_layers (chunked attention on the others), sliding_window_pattern (Gemma-3: every
    n-th full), Gemma-2's alternation, Qwen2's
    use_sliding_window with max_window_layers, and else a sliding_window alone (Mistral-7B-v0.1, Phi-3) slides
    every layer."""
    out: dict = {}
    if config.get("kv_lora_rank"):
        nope = hf_int(config, ("qk_nope_head_dim",), True, "nope_head_dim")
        out |= {
            "kv_lora_rank": hf_int(config, ("kv_lora_rank",), True, "kv_lora_rank"),
            "q_lora_rank": hf_int(config, ("q_lora_rank",), False, "q_lora_rank") or 0,
            "rope_head_dim": hf_int(config, ("qk_rope_head_dim",), True, "rope_head_dim"),
            "nope_head_dim": nope,
            "v_head_dim": hf_int(config, ("v_head_dim",), True, "v_head_dim"),
        }
        if config.get("index_topk"):  # DeepSeek-V3.2's sparse attention
            out["sparse_topk"] = hf_int(config, ("index_topk",), True, "sparse_topk")
            out["index_heads"] = hf_int(config, ("index_n_heads",), True, "index_heads")
            out["index_head_dim"] = hf_int(config, ("index_head_dim",), True, "index_head_dim")
    window = hf_int(config, ("sliding_window", "attention_chunk_size"), False, "sliding_window") or 0
    counts = _layer_mix(config, kind, n_layers, window, hf_int)
    if counts["sliding"] and not window:
        raise Message(
            "config.json has {count} sliding-window layers but no sliding_window size", count=counts["sliding"]
        )
    out |= {"sliding_window": window if counts["sliding"] else 0, "sliding_layers": counts["sliding"]}
    out["linear_layers"] = counts["linear"]
    if counts["linear"]:
        for ours, theirs in (
            ("linear_k_heads", "linear_num_key_heads"),
            ("linear_v_heads", "linear_num_value_heads"),
            ("linear_k_dim", "linear_key_head_dim"),
            ("linear_v_dim", "linear_value_head_dim"),
        ):
            out[ours] = hf_int(config, (theirs,), True, ours)
        out["linear_conv"] = hf_int(config, ("linear_conv_kernel_dim",), False, "linear_conv") or 4
    return out


def _layer_mix(config: dict, kind: str, n_layers: int, window: int, hf_int) -> Counter:
    """How many layers are full, sliding and linear attention (a Counter of our kinds)."""
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise Message(
                "config.json layer_types must list one kind per layer ({layers}); got {value}",
                layers=n_layers,
                value=_shown(types),
            )
        unknown = sorted({t for t in types if not isinstance(t, str) or t not in _LAYER_KINDS}, key=str)
        if unknown:
            raise Message(
                "config.json layer_types holds {unknown}; the kinds priced are {known}",
                unknown=unknown,
                known=sorted(_LAYER_KINDS),
            )
        return Counter(_LAYER_KINDS[t] for t in types)
    interval = hf_int(config, ("full_attention_interval",), False, "n_layers")
    if interval:
        full = n_layers // interval
        return Counter(full=full, linear=n_layers - full)
    if not window:
        return Counter(full=n_layers)
    if kind.startswith("llama4"):  # chunked attention on the RoPE layers; every 4th layer (NoPE) is global
        rope = config.get("no_rope_layers")
        chunked = sum(1 for x in rope if x) if isinstance(rope, list) and rope else n_layers - n_layers // 4
        return Counter(full=n_layers - chunked, sliding=chunked)
    pattern = hf_int(config, ("sliding_window_pattern",), False, "n_layers")
    if kind.startswith("gemma3"):
        pattern = pattern or 6
    elif kind == "gemma2":
        pattern = pattern or 2
    if pattern:
        return Counter(full=n_layers // pattern, sliding=n_layers - n_layers // pattern)
    if "use_sliding_window" in config:
        if config["use_sliding_window"] is not True:
            return Counter(full=n_layers)
        full = min(hf_int(config, ("max_window_layers",), False, "n_layers") or 0, n_layers)
        return Counter(full=full, sliding=n_layers - full)
    return Counter(sliding=n_layers)

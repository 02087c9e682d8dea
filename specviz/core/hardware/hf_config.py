"""A model spec from a Hugging Face ``config.json``, checked key by key."""

from __future__ import annotations

import json

from specviz.base.i18n import N_, Message, Phrase
from specviz.core.hardware.catalog import _size, model_spec
from specviz.core.hardware.params import parameter_count

#: config.json keys → our fields, for the architectures we can model (decoder-only, dense MLP)
_HF_KEYS = {
    "n_layers": ("num_hidden_layers", "n_layer"),
    "hidden_size": ("hidden_size", "n_embd"),
    "n_heads": ("num_attention_heads", "n_head"),
    "vocab_size": ("vocab_size",),
}
#: Largest config.json read (bytes): a real one is a few kB (a long id2label table reaches ~100 kB).
CONFIG_MAX_BYTES = 1_000_000
#: the config.json keys of the optional sizes, and those that say a model is a mixture of experts
_FIELD_OF = {keys[0]: field for field, keys in _HF_KEYS.items()} | {
    "num_key_value_heads": "n_kv_heads",
    "head_dim": "head_dim",
    "n_inner": "intermediate_size",
    "intermediate_size": "intermediate_size",
    "max_position_embeddings": "max_context",
}
_EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts")
_GATED = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Gemma2ForCausalLM"}
#: Mixture-of-experts architectures (gated experts), by how config.json names the expert width:
#: "moe" = moe_intermediate_size (intermediate_size is the dense layers'), "ffn" = intermediate_size.
_MOE = {
    "MixtralForCausalLM": "ffn",
    "OlmoeForCausalLM": "ffn",
    "GptOssForCausalLM": "ffn",
    "Llama4ForConditionalGeneration": "ffn",
    "Llama4ForCausalLM": "ffn",
    "Qwen2MoeForCausalLM": "moe",
    "Qwen3MoeForCausalLM": "moe",
    "DeepseekV2ForCausalLM": "moe",
    "DeepseekV3ForCausalLM": "moe",
}
_PLAIN = {"GPT2LMHeadModel", "GPTBigCodeForCausalLM"}
_SUPPORTED = _GATED | _PLAIN | set(_MOE)


def _hf_int(config: dict, keys: tuple[str, ...], required: bool = True, field: str | None = None) -> int | None:
    """The first of ``keys`` set in ``config`` as an int in ``SIZE_LIMITS[field]`` (``field`` defaults to our
    name of ``keys[0]``); None when absent and not ``required``; else ValueError naming the key."""
    key = next((k for k in keys if config.get(k) is not None), None)
    if key is None:
        if required:
            if len(keys) == 1:
                raise Message("config.json lacks {name}", name=keys[0])
            raise Message("config.json lacks {first} or {last}", first=" or ".join(keys[:-1]), last=keys[-1])
        return None
    return _size(
        config[key],
        field or _FIELD_OF[keys[0]],
        key,
        N_("config.json {name} must be an integer from {lo} to {hi}; got {value}"),
    )


def _hf_bool(config: dict, key: str, default: bool) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise Message("config.json {name} must be true or false; got {value!r}", name=key, value=value)
    return value


# tie_word_embeddings when config.json leaves it out: each architecture's transformers default
_TIED_DEFAULT = {"GPT2LMHeadModel": True, "GPTBigCodeForCausalLM": True, "Gemma2ForCausalLM": True}


def from_hf_config(config: dict | str | bytes, name: str = "uploaded") -> dict:
    """A model spec from a Hugging Face ``config.json`` (dict or JSON text); ValueError naming an unmodelled key.

    Llama, Mistral, Qwen2/3, Gemma-2 (gated MLP), GPT-2, GPTBigCode (plain MLP) and the MoE architectures of
    ``_MOE``. Missing keys take transformers' defaults: K/V heads = heads (GPTBigCode ``multi_query``: 1),
    head_dim = hidden_size / heads, GPT-2 MLP = 4·hidden_size, tied embeddings for GPT-2, GPTBigCode, Gemma-2.
    """
    if isinstance(config, str | bytes):
        if len(config) > CONFIG_MAX_BYTES:
            raise Message(
                "config.json holds {size} bytes; at most {most} are read (a model's config.json is a few kB)",
                size=f"{len(config):,}",
                most=f"{CONFIG_MAX_BYTES:,}",
            )
        try:
            config = json.loads(config)
        except ValueError as exc:
            raise Message("config.json is not valid JSON: {cause}", cause=exc) from None
        except RecursionError:  # arrays nested thousands deep
            raise Message(
                "config.json is not valid JSON: {cause}", cause=Phrase("its arrays or objects are nested too deep")
            ) from None
    if not isinstance(config, dict):
        raise Message("config.json must hold a JSON object; got {type}", type=type(config).__name__)
    archs = config.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise Message("config.json architectures must be a list of names; got {value!r}", value=archs)
    arch = archs[0] if archs else None
    if arch not in _SUPPORTED:
        raise Message(
            "architecture {arch!r} is not modelled: supported are {supported} (state-space and encoder-decoder models need operators this model lacks)",
            arch=arch,
            supported=sorted(_SUPPORTED),
        )
    if arch.startswith("Llama4") and isinstance(config.get("text_config"), dict):
        config = config["text_config"] | {"architectures": archs}  # the language model of Llama-4
    expert_keys = [k for k in _EXPERT_KEYS if _hf_int(config, (k,), False, "experts")]
    if arch not in _MOE and expert_keys:
        raise Message(
            "config.json sets {keys} but its architecture {arch!r} is a dense one", keys=expert_keys, arch=arch
        )
    missing = [" or ".join(keys) for keys in _HF_KEYS.values() if all(config.get(k) is None for k in keys)]
    if (arch in _GATED or _MOE.get(arch) == "ffn") and config.get("intermediate_size") is None:
        missing.append("intermediate_size")
    if missing:
        raise Message("config.json lacks {missing}, needed to model {arch}", missing=missing, arch=arch)
    spec = {"name": name} | {field: _hf_int(config, keys) for field, keys in _HF_KEYS.items()}
    multi_query = arch == "GPTBigCodeForCausalLM" and _hf_bool(config, "multi_query", True)
    spec["n_kv_heads"] = 1 if multi_query else _hf_int(config, ("num_key_value_heads",), False) or spec["n_heads"]
    spec["head_dim"] = _hf_int(config, ("head_dim",), False) or spec["hidden_size"] // spec["n_heads"]
    if arch in _PLAIN:
        spec["intermediate_size"] = _hf_int(config, ("n_inner",), False) or 4 * spec["hidden_size"]
        spec["mlp"] = "plain"
    else:
        dense_width = (
            ("intermediate_size_mlp", "intermediate_size") if arch.startswith("Llama4") else ("intermediate_size",)
        )
        spec["intermediate_size"] = _hf_int(config, dense_width, False, "intermediate_size") or _hf_int(
            config, ("moe_intermediate_size",), True, "intermediate_size"
        )
        spec["mlp"] = "gated"
    if arch in _MOE:
        spec |= _hf_moe(config, arch)
    spec["tied_embeddings"] = _hf_bool(config, "tie_word_embeddings", _TIED_DEFAULT.get(arch, False))
    spec["max_context"] = _hf_int(config, ("max_position_embeddings", "n_positions"), False)
    spec = model_spec(spec)
    spec["params"] = parameter_count(spec)
    return spec


def _hf_moe(config: dict, arch: str) -> dict:
    """The MoE and latent-attention fields of an MoE ``config.json`` (keys as transformers names them)."""
    out = {
        "n_experts": _hf_int(config, _EXPERT_KEYS, True, "n_experts"),
        "experts_per_token": _hf_int(config, ("num_experts_per_tok", "experts_per_token"), True, "experts_per_token"),
    }
    width = ("intermediate_size",) if _MOE[arch] == "ffn" else ("moe_intermediate_size",)
    out["expert_size"] = _hf_int(config, width, True, "expert_size")
    if arch.startswith("Llama4"):
        out["n_shared_experts"] = 1  # every Llama-4 MoE layer has one shared expert of the routed width
        out["moe_every"] = _hf_int(config, ("interleave_moe_layer_step",), False, "moe_every") or 1
    elif arch.startswith("Qwen2Moe"):
        shared = _hf_int(config, ("shared_expert_intermediate_size",), False, "shared_expert_size") or 0
        out["n_shared_experts"], out["shared_expert_size"] = (1, shared) if shared else (0, 0)
        out["moe_every"] = _hf_int(config, ("decoder_sparse_step",), False, "moe_every") or 1
    elif arch.startswith("Qwen3Moe"):
        out["moe_every"] = _hf_int(config, ("decoder_sparse_step",), False, "moe_every") or 1
    elif arch.startswith("Deepseek"):
        out["n_shared_experts"] = _hf_int(config, ("n_shared_experts",), False, "n_shared_experts") or 0
        out["dense_layers"] = _hf_int(config, ("first_k_dense_replace",), False, "dense_layers") or 0
        out["moe_every"] = _hf_int(config, ("moe_layer_freq",), False, "moe_every") or 1
        if config.get("kv_lora_rank"):
            for ours, theirs in (
                ("kv_lora_rank", "kv_lora_rank"),
                ("q_lora_rank", "q_lora_rank"),
                ("rope_head_dim", "qk_rope_head_dim"),
                ("nope_head_dim", "qk_nope_head_dim"),
                ("v_head_dim", "v_head_dim"),
            ):
                out[ours] = _hf_int(config, (theirs,), ours != "q_lora_rank", ours) or 0
    quant = config.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        out["expert_bits"] = 4.25  # MXFP4: 4-bit values plus one 8-bit scale per 32
    return out

"""A model spec from a Hugging Face ``config.json``, read by its fields rather than by its architecture's name.

Every decoder-only language model that names its sizes under the usual keys is read: dense or mixture of
experts (:mod:`~specviz.core.hardware.hf_layers`), multi-head or latent attention, full, sliding or linear
(Gated DeltaNet) layers. What specviz cannot price is refused with the key that says so: state-space (Mamba)
layers, encoder-decoder models, a layer kind it does not know, a size it cannot find.
"""

from __future__ import annotations

import json

from specviz.base.i18n import N_, Message, Phrase
from specviz.core.hardware.catalog import _size, model_spec
from specviz.core.hardware.hf_layers import attention_layers, mixture_of_experts
from specviz.core.hardware.params import parameter_count

#: Our required fields → the config.json keys that hold them, the most common first (GPT-2's n_*, ChatGLM's
#: num_layers and padded_vocab_size, T5-style d_model).
_HF_KEYS = {
    "n_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),
    "n_heads": ("num_attention_heads", "n_head", "n_heads", "num_heads"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
}
#: Optional sizes and their keys (absent: each field's default, :func:`from_hf_config`).
_OPTIONAL_KEYS = {
    "n_kv_heads": ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"),
    "head_dim": ("head_dim", "kv_channels", "head_size"),
    "intermediate_size": ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"),
    "max_context": ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length"),
}
#: Largest config.json read (bytes): a real one is a few kB (a long id2label table reaches ~100 kB).
CONFIG_MAX_BYTES = 1_000_000
#: config.json key → our field, for the size limits a value is checked against
_FIELD_OF = {key: field for field, keys in (_HF_KEYS | _OPTIONAL_KEYS).items() for key in keys}
#: Families whose MLP is one GELU/ReLU up and one down projection (by ``model_type``); every other decoder
#: of 2023 on gates its MLP (SwiGLU/GeGLU: gate, up, down).
_PLAIN = {"gpt2", "gpt_bigcode", "opt", "gpt_neox", "gptj", "bloom", "falcon", "phi", "starcoder2"}
#: Families whose config class ties the LM head to the embedding when config.json leaves the key out.
_TIED_DEFAULT = {"gpt2", "gpt_bigcode", "opt", "gemma", "gemma2", "gemma3_text", "gemma3"}
#: Keys that mean state-space (Mamba) layers: their scan is an operator specviz does not price.
_STATE_SPACE_KEYS = (
    "ssm_state_size",
    "mamba_d_state",
    "state_size",
    "mamba_expand",
    "hybrid_override_pattern",
    "layers_block_type",
    "attn_layer_indices",
    "ssm_cfg",
)
#: Keys of attention schemes that change the cost and are not priced yet (a number priced without them would
#: look right and be wrong): refused by name, with what they are.
_UNPRICED = {
    "compress_ratios": N_("compressed attention, as in DeepSeek-V4"),
    "hybrid_layer_pattern": N_("a per-layer mix of attention kinds with their own head counts"),
    "global_head_dim": N_("global layers with a head size of their own"),
    "num_kv_shared_layers": N_("layers that share another layer's KV cache"),
}
_ENCODER_DECODER = (
    "T5",
    "MT5",
    "UMT5",
    "Bart",
    "MBart",
    "Pegasus",
    "Marian",
    "Whisper",
    "LongT5",
    "FSMT",
    "Blenderbot",
)
_ARCH_TYPE = {  # architecture name prefix → model_type, for configs that leave model_type out
    "GPT2": "gpt2",
    "GPTBigCode": "gpt_bigcode",
    "OPT": "opt",
    "GPTNeoX": "gpt_neox",
    "GPTJ": "gptj",
    "Bloom": "bloom",
    "Falcon": "falcon",
    "Phi3": "phi3",
    "PhiMoE": "phimoe",
    "Phi": "phi",
    "Gemma3": "gemma3",
    "Gemma2": "gemma2",
    "Gemma": "gemma",
    "Mistral": "mistral",
    "Llama4": "llama4",
    "Qwen2Moe": "qwen2_moe",
    "Qwen2": "qwen2",
    "Mixtral": "mixtral",
}


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


def _parse(config: dict | str | bytes) -> dict:
    """``config`` as a dict: JSON text of at most :data:`CONFIG_MAX_BYTES` parsed, anything but an object refused."""
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
    return config


def _model_type(config: dict, arch: str | None) -> str:
    """``model_type`` as config.json gives it, else guessed from the architecture's name ("" if neither)."""
    kind = config.get("model_type")
    if isinstance(kind, str) and kind:
        return kind
    return next((t for prefix, t in _ARCH_TYPE.items() if arch and arch.startswith(prefix)), "")


def _refuse_unmodelled(config: dict, arch: str | None) -> None:
    """ValueError naming the key or architecture when the model has layers specviz does not price."""
    if config.get("is_encoder_decoder") is True or (arch and arch.startswith(_ENCODER_DECODER)):
        raise Message(
            "architecture {arch!r} is an encoder-decoder model; specviz prices decoder-only language models",
            arch=arch or "?",
        )
    if arch and any(word in arch for word in ("Mamba", "Jamba", "Rwkv", "RecurrentGemma", "Xlstm")):
        raise Message(
            "architecture {arch!r} has state-space or recurrent layers, which specviz does not price", arch=arch
        )
    key = next((k for k in _UNPRICED if config.get(k) not in (None, [], "", 0)), None)
    if key is not None:
        raise Message(
            "config.json sets {key} ({what}), which specviz does not price yet", key=key, what=Phrase(_UNPRICED[key])
        )
    key = next((k for k in _STATE_SPACE_KEYS if config.get(k) not in (None, [], "")), None)
    if key is not None:
        raise Message(
            "config.json sets {key}: state-space (Mamba) layers are not priced; linear-attention (Gated DeltaNet) and sliding-window layers are",
            key=key,
        )


def from_hf_config(config: dict | str | bytes, name: str = "uploaded") -> dict:
    """A model spec from a Hugging Face ``config.json`` (dict or JSON text); ValueError naming what it cannot read.

    A multimodal config is read through its ``text_config``. Missing keys take transformers' defaults: K/V heads
    = heads (GPTBigCode ``multi_query``: 1), head_dim = hidden_size / heads, a plain MLP (GPT-2, OPT, GPT-NeoX,
    Falcon, …) 4·hidden_size wide, the LM head tied for GPT-2, GPTBigCode, OPT and Gemma and untied otherwise.
    """
    top = _parse(config)
    archs = top.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise Message("config.json architectures must be a list of names; got {value!r}", value=archs)
    arch = archs[0] if archs else None
    text = top.get("text_config")
    config = (text | {"architectures": archs}) if isinstance(text, dict) else top
    _refuse_unmodelled(config, arch)
    kind = _model_type(config, arch) or _model_type(top, arch)
    missing = [" or ".join(keys) for keys in _HF_KEYS.values() if all(config.get(k) is None for k in keys)]
    plain = kind in _PLAIN
    moe = mixture_of_experts(config, kind, _hf_int)
    widths = _OPTIONAL_KEYS["intermediate_size"]
    if not plain and not moe and all(config.get(k) is None for k in widths):
        missing.append(" or ".join(widths))
    if missing:
        raise Message("config.json lacks {missing}, needed to model {arch}", missing=missing, arch=arch or kind or "?")
    spec = {"name": name} | {field: _hf_int(config, keys) for field, keys in _HF_KEYS.items()}
    multi_query = kind == "gpt_bigcode" and _hf_bool(config, "multi_query", True)
    kv_heads = _hf_int(config, _OPTIONAL_KEYS["n_kv_heads"], False, "n_kv_heads")
    spec["n_kv_heads"] = 1 if multi_query else kv_heads or spec["n_heads"]
    spec["head_dim"] = _hf_int(config, _OPTIONAL_KEYS["head_dim"], False, "head_dim") or (
        spec["hidden_size"] // spec["n_heads"]
    )
    dense = ("intermediate_size_mlp", *widths) if kind.startswith("llama4") else widths
    width = _hf_int(config, dense, False, "intermediate_size")
    if plain:
        spec["intermediate_size"], spec["mlp"] = width or 4 * spec["hidden_size"], "plain"
    else:
        spec["intermediate_size"], spec["mlp"] = width or moe["expert_size"], "gated"
    spec |= moe | attention_layers(config, kind, spec["n_layers"], _hf_int)
    spec["tied_embeddings"] = _hf_bool(config, "tie_word_embeddings", kind in _TIED_DEFAULT)
    spec["max_context"] = _hf_int(config, _OPTIONAL_KEYS["max_context"], False, "max_context")
    spec = model_spec(spec)
    spec["params"] = parameter_count(spec)
    return spec

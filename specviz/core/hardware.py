"""What c and v are on real hardware: a roofline over the operators of one decoder forward.

A forward of ``tokens`` new tokens for each of ``batch`` sequences over ``context`` cached tokens
is a list of operators (the linear layers, attention, the norms, the LM head). Each takes

.. math::  t = \\max\\Big(\\frac{\\text{FLOPs}}{\\text{peak}\\cdot e_c},\\;
                         \\frac{\\text{bytes}}{\\text{bandwidth}\\cdot e_m}\\Big)

and a step is their sum, plus the tensor-parallel all-reduces and a fixed per-step overhead
(docs/design.md §8, after LLM-Viewer and MagicDec). Then, for a draft length K,

* T_target = step(target, B, L, 1), T_draft = step(draft, B, L_draft, 1),
  T_verify = step(target, B, L, K + 1);
* c = T_target / T_draft and v = (T_verify / T_target − 1) / K, the measured-cost model's inputs;
* S(K) = E[N](K) / (1 + vK + K/c) (:func:`specviz.core.theory.speedup_from_tokens`).

Every numeric argument broadcasts. Models and GPUs are catalogue names (``data/catalog``) or
dicts with the catalogue's columns. Invalid input raises ValueError naming the field, the value
and what is allowed. numpy and pandas only.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.base.paths import DATA
from specviz.core import configs, heads, moe, theory
from specviz.core.engines import DEFAULT_EFFICIENCY, Efficiency, as_efficiency

CATALOG_DIR = DATA / "catalog"
CALIBRATION_DIR = DATA / "calibration"  #: python -m specviz calibrate

#: bytes per element of weights, activations and the KV cache for each dtype
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.625, "int4-g128": 0.53125}
#: Weight-only quantisations: weights at DTYPE_BYTES (int8 with one scale per output channel; int4 in
#: groups of 32 or 128 input weights, each group with a bf16 scale and zero point, so 4 + 32/g bits:
#: gpt-fast's WeightOnlyInt4Linear, scales_and_zeros of shape (in / groupsize, out, 2), and AWQ's
#: group 128); activations, the KV cache and the arithmetic stay in bf16.
WEIGHT_ONLY = {"int8": "bf16", "int4": "bf16", "int4-g128": "bf16"}
#: the GPU column holding the dense tensor-core peak used for each dtype (fp32 runs at the bf16 rate / 2
#: on tensor cores with TF32 at best; modelled as bf16 / 2)
_PEAK_COLUMN = {"fp32": "bf16_tflops", "bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops"}

MODEL_FIELDS = (
    "n_layers",
    "hidden_size",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "tied_embeddings",
    "mlp",
)
#: Optional fields of a mixture-of-experts model (0 or absent: a dense model). Names follow our catalogue;
#: from_hf_config maps each architecture's config.json keys to them.
MOE_FIELDS = (
    "n_experts",  # E routed experts (n_routed_experts / num_local_experts / num_experts)
    "experts_per_token",  # k (num_experts_per_tok)
    "expert_size",  # width d_e of one routed expert's MLP (moe_intermediate_size; Mixtral: intermediate_size)
    "n_shared_experts",  # experts every token passes through (DeepSeek n_shared_experts; Qwen2-MoE, Llama-4: 1)
    "shared_expert_size",  # width of a shared expert (default expert_size; Qwen2-MoE shared_expert_intermediate_size)
    "dense_layers",  # the first layers with a dense MLP (first_k_dense_replace)
    "moe_every",  # every n-th layer is MoE (moe_layer_freq, decoder_sparse_step, interleave_moe_layer_step)
)
#: Optional fields of multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; 0 or absent: none)
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "nope_head_dim", "v_head_dim")
GPU_FIELDS = ("memory_gb", "bandwidth_tbs", "bf16_tflops", "fp16_tflops", "interconnect_gbs")
LINKS = ("nvlink", "pcie")  #: how a GPU's tensor-parallel peers are linked (:func:`link_kind`)
#: GPUs one NVLink board joins (HGX / DGX A100, H100, H200, B200 and the MI300X platform: 8); a tensor-parallel
#: group beyond it spans nodes
BOARD_GPUS = 8
#: GB/s per direction of one GPU's network card between nodes (DGX H100: one 400 Gb/s ConnectX-7 per GPU,
#: https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html)
NIC_GBS = 50.0
#: the operators that stream weights: below 16 bits their kernels reach ``quant_memory`` of ``memory``
WEIGHT_OPERATORS = ("q/k/v/o projections", "MLP", "LM head", "fusion fc")

#: The integers each size of a model may be, checked before any arithmetic (an uploaded config.json
#: holds what its author typed). The bounds are a few times the largest published decoder (Llama-3.1
#: 405B: 126 layers, 16,384 wide, MLP 53,248; Gemma's 256k vocabulary; Llama-4 Scout's 10M context;
#: DeepSeek-V3's 256 experts), so every real model passes and a typo or a hostile file cannot overflow
#: the parameter and byte counts (:data:`MAX_PARAMETERS`).
SIZE_LIMITS = {
    "n_layers": (1, 1024),
    "hidden_size": (1, 131_072),
    "n_heads": (1, 1024),
    "n_kv_heads": (1, 1024),
    "head_dim": (1, 4096),
    "intermediate_size": (1, 1_048_576),
    "vocab_size": (1, 16_777_216),
    "max_context": (1, 134_217_728),
    "experts": (0, 4096),
    "n_experts": (0, 4096),
    "experts_per_token": (0, 4096),
    "expert_size": (0, 1_048_576),
    "n_shared_experts": (0, 4096),
    "shared_expert_size": (0, 1_048_576),
    "dense_layers": (0, 1024),
    "moe_every": (1, 1024),
    "kv_lora_rank": (0, 131_072),
    "q_lora_rank": (0, 131_072),
    "rope_head_dim": (0, 4096),
    "nope_head_dim": (0, 4096),
    "v_head_dim": (0, 4096),
    "fc_in": (0, 8),
}
#: Most parameters a model may imply (100 trillion: 50 times the largest published model), so that
#: its bytes (parameters × 4 at most) stay exact integers in a float.
MAX_PARAMETERS = 10**14


def efficiency_for(gpu) -> Efficiency:
    """The efficiencies to use on ``gpu``: its own measured ones where it carries them (a calibrated
    machine: figures already attainable, e = 1, with its measured fixed costs), else the defaults."""
    g = gpu_spec(gpu)
    if "overhead_s" not in g:
        return DEFAULT_EFFICIENCY
    return Efficiency(
        compute=1.0, memory=1.0, overhead_s=float(g["overhead_s"]), layer_overhead_s=float(g.get("layer_overhead_s", 0))
    )


# --------------------------------------------------------------------------------------
# catalogues
# --------------------------------------------------------------------------------------


@cache
def _read_catalog(directory: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    root = Path(directory)
    models = pd.read_csv(root / "models.csv").set_index("name", drop=False)
    gpus = pd.read_csv(root / "gpus.csv").set_index("name", drop=False)
    pairs = pd.read_csv(root / "pairs.csv")
    return models, gpus, pairs


def load_catalog(directory: Path = CATALOG_DIR) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(models, gpus) from ``data/catalog``: one row per model / accelerator, indexed by name."""
    models, gpus, _ = _read_catalog(str(directory))
    return models.copy(), gpus.copy()


def preset_pairs(directory: Path = CATALOG_DIR, *, heads: bool = False) -> pd.DataFrame:
    """(target, draft) pairs as papers and engines use them: name, target, draft, source, notes.

    The drafts of ``pairs.csv`` are models of ``models.csv``; with ``heads`` the pairs of
    ``head_pairs.csv`` follow, whose drafts are published heads (:mod:`specviz.core.heads`)."""
    pairs = _read_catalog(str(directory))[2]
    if heads:
        pairs = pd.concat([pairs, _read_head_pairs(str(directory))], ignore_index=True)
    return pairs.copy()


@cache
def _read_head_pairs(directory: str) -> pd.DataFrame:
    return pd.read_csv(Path(directory) / "head_pairs.csv")


def model_spec(model: str | dict) -> dict:
    """A model's architecture as a dict of :data:`MODEL_FIELDS` (plus ``name``), checked.

    ``model`` is a catalogue name or a dict with those fields (e.g. from :func:`from_hf_config`).
    A catalogue model is read and checked once per process (a fit prices thousands of rows).
    """
    if isinstance(model, str):
        return dict(_catalogue_model(model))
    return _checked_model(model)


@cache
def _catalogue_model(name: str) -> dict:
    return _checked_model(name)


def _checked_model(model: str | dict) -> dict:
    if isinstance(model, str):
        models, _ = _read_catalog(str(CATALOG_DIR))[:2]
        if model not in models.index:
            raise Message(
                "model {model!r} is not in the catalogue; choose one of {choices}…",
                model=model,
                choices=sorted(models.index)[:5],
            )
        spec = models.loc[model].to_dict()
    else:
        spec = dict(model)
    missing = [f for f in MODEL_FIELDS if f not in spec or spec[f] is None or spec[f] != spec[f]]
    if missing:
        raise Message("model {model!r} lacks {missing}", model=spec.get("name", Phrase("(unnamed)")), missing=missing)
    for f in MODEL_FIELDS[:7]:
        spec[f] = _size(spec[f], f, f, N_("model field {field} must be an integer from {lo} to {hi}; got {value}"))
    if spec["mlp"] not in ("gated", "plain"):
        raise Message("model field mlp must be 'gated' (SwiGLU) or 'plain' (GELU); got {value!r}", value=spec["mlp"])
    if spec["n_heads"] % spec["n_kv_heads"]:
        raise Message(
            "n_heads {n_heads} must be a multiple of n_kv_heads {n_kv_heads}",
            n_heads=spec["n_heads"],
            n_kv_heads=spec["n_kv_heads"],
        )
    spec["tied_embeddings"] = bool(int(spec["tied_embeddings"]))
    _check_moe_mla(spec)
    # a head draft's fusion linear (fc_in·d → d, EAGLE 2, EAGLE-3 3, MTP's eh_proj 2); 0 for a model
    rule = N_("model field {field} must be an integer from {lo} to {hi}; got {value}")
    spec["fc_in"] = _size(spec["fc_in"], "fc_in", "fc_in", rule) if _given(spec, "fc_in") else 0
    if spec.get("max_context") is not None and spec["max_context"] == spec["max_context"]:
        spec["max_context"] = _size(
            spec["max_context"],
            "max_context",
            "max_context",
            N_("model field {field} must be an integer from {lo} to {hi}; got {value}"),
        )
    return spec


def _given(spec: dict, field: str) -> bool:
    value = spec.get(field)
    return value is not None and value == value and value != ""  # a catalogue's empty cell reads as NaN


def _check_moe_mla(spec: dict) -> None:
    """Fill the optional MoE and MLA fields (0 where absent; moe_every 1; shared width = expert width;
    expert_bits the dtype's) and check them: an MoE model needs 1 ≤ k ≤ E and an expert width, an MLA
    one a rope and a value head size."""
    rule = N_("model field {field} must be an integer from {lo} to {hi}; got {value}")
    for f in MOE_FIELDS + MLA_FIELDS:
        default = 1 if f == "moe_every" else 0
        spec[f] = _size(spec[f], f, f, rule) if _given(spec, f) else default
    if spec["n_experts"]:
        if not (1 <= spec["experts_per_token"] <= spec["n_experts"]) or not spec["expert_size"]:
            raise Message(
                "model {model!r}: an MoE model needs experts_per_token from 1 to n_experts ({e}) and an expert_size; got k = {k}, expert_size = {size}",
                model=spec.get("name", "?"),
                e=spec["n_experts"],
                k=spec["experts_per_token"],
                size=spec["expert_size"],
            )
        spec["shared_expert_size"] = spec["shared_expert_size"] or spec["expert_size"]
    if spec["kv_lora_rank"] and not (spec["rope_head_dim"] and spec["v_head_dim"]):
        raise Message(
            "model {model!r}: latent attention (kv_lora_rank {rank}) needs rope_head_dim and v_head_dim",
            model=spec.get("name", "?"),
            rank=spec["kv_lora_rank"],
        )
    bits = spec.get("expert_bits")
    if _given(spec, "expert_bits"):
        if not (isinstance(bits, int | float | np.number) and not isinstance(bits, bool) and 1 <= float(bits) <= 32):
            raise Message(
                "model field expert_bits must be a number from 1 to 32 (bits per weight); got {value}",
                value=_shown(bits),
            )
        spec["expert_bits"] = float(bits)
    else:
        spec["expert_bits"] = None


def _shown(value, most: int = 60) -> str:
    """``repr(value)`` cut to ``most`` characters: a message quotes the input, never a megabyte of it."""
    big = isinstance(value, int) and abs(value) >= 10**30  # no float holds 10**400, and its digits help nobody
    text = f"{'-' if value < 0 else ''}~10^{int(abs(value).bit_length() * math.log10(2))}" if big else repr(value)
    return text if len(text) <= most else text[: most - 1] + "…"


def _size(value, field: str, name: str, key: str) -> int:
    """``value`` as an int within ``SIZE_LIMITS[field]``, else ValueError (catalogue ``key``) naming
    ``name``, the value and the allowed range. JSON booleans, strings, lists, objects, fractions and
    non-finite numbers are refused before any arithmetic touches them."""
    lo, hi = SIZE_LIMITS[field]
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)
    if not (number and lo <= value <= hi and value == int(value)):  # NaN and ±inf fail the range
        raise Message(key, field=name, name=name, value=_shown(value), lo=lo, hi=f"{hi:,}")
    return int(value)


def gpu_spec(gpu: str | dict) -> dict:
    """An accelerator's figures (:data:`GPU_FIELDS`, fp8 optional) from the catalogue or a dict, checked.

    A name not in the catalogue may be the calibrated machine's (:func:`calibrated_machine`)."""
    if isinstance(gpu, str):
        _, gpus, _ = _read_catalog(str(CATALOG_DIR))
        if gpu in gpus.index:
            return dict(_catalogue_gpu(gpu))
    return _checked_gpu(gpu)


@cache
def _catalogue_gpu(name: str) -> dict:
    return _checked_gpu(name)


def _checked_gpu(gpu: str | dict) -> dict:
    if isinstance(gpu, str):
        _, gpus, _ = _read_catalog(str(CATALOG_DIR))
        local = calibrated_machine() if gpu not in gpus.index else None
        if local is not None and local["name"] == gpu:
            return local
        if gpu not in gpus.index:
            raise Message(
                "GPU {gpu!r} is not in the catalogue; choose one of {choices}", gpu=gpu, choices=sorted(gpus.index)
            )
        spec = gpus.loc[gpu].to_dict()
    else:
        spec = dict(gpu)
    for f in GPU_FIELDS:
        value = spec.get(f)
        if value is None or not (np.isfinite(float(value)) and float(value) > 0):
            raise Message("GPU field {field} must be a finite number > 0; got {value!r}", field=f, value=value)
        spec[f] = float(value)
    return spec


def calibrated_machine(directory: Path | None = None) -> dict | None:
    """The machine ``python -m specviz calibrate`` measured (``machine.json``: its bandwidth, fp32
    peak and fixed costs, as a :func:`gpu_spec` dict), or None where none was written."""
    try:
        return gpu_spec(json.loads((Path(directory or CALIBRATION_DIR) / "machine.json").read_text()))
    except (OSError, ValueError):
        return None


def calibration_steps(directory: Path | None = None) -> pd.DataFrame | None:
    """The forward times ``python -m specviz calibrate`` measured and predicted (``steps.csv``: model,
    batch, tokens, context, measured_s, predicted_s, ratio), or None where none was written."""
    try:
        frame = pd.read_csv(Path(directory or CALIBRATION_DIR) / "steps.csv")
    except (OSError, ValueError):
        return None
    needed = {"model", "batch", "tokens", "context", "measured_s", "predicted_s"}
    return frame if needed <= set(frame.columns) and len(frame) else None


def calibration_errors(frame: pd.DataFrame) -> dict[str, float]:
    """Median |predicted / measured − 1| of calibration cells, overall (``"all"``) and per model."""
    err = (frame["predicted_s"] / frame["measured_s"] - 1).abs()
    return {"all": float(err.median()), **{m: float(e.median()) for m, e in err.groupby(frame["model"])}}


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
    """The first of ``keys`` that ``config`` sets, as an integer in ``SIZE_LIMITS[field]`` (None when
    absent and optional; ``field`` defaults to our name of ``keys``).

    JSON booleans, strings, lists, objects, fractions, non-finite numbers and values outside the range
    raise ValueError naming the key, the value and the range."""
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
    """A model spec from a Hugging Face ``config.json`` (dict or JSON text).

    Dense decoder-only architectures are modelled (Llama, Mistral, Qwen2/3, Gemma-2: gated MLP;
    GPT-2, GPTBigCode: plain MLP). Sizes must be integers >= 1. Keys left out take the
    architecture's transformers default: K/V heads = query heads (GPTBigCode: 1 when ``multi_query``,
    its default), head_dim = hidden_size / heads, GPT-2's MLP = 4 · hidden_size, tied embeddings for
    GPT-2, GPTBigCode and Gemma-2 only. Anything else, or a config that lacks a needed key or holds a
    bad value, raises ValueError naming the key.
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


def parameter_count(model: str | dict) -> int:
    """Parameters implied by the architecture: embeddings, per-layer attention and MLP matrices and
    norms, the final norm and (when untied) the LM head. GPT-2-style models (``mlp`` "plain") also
    have learned positions (max_context × d) and LayerNorm biases. Linear-layer biases are not
    counted (Qwen2's q/k/v biases and GPT-2's are under 0.1 % of any catalogue model)."""
    m = model_spec(model)
    d, ffn, layers = m["hidden_size"], m["intermediate_size"], m["n_layers"]
    gpt2 = m["mlp"] == "plain"
    mlp = (2 if gpt2 else 3) * d * ffn
    norms = (4 if gpt2 else 2) * d  # two norms per layer; LayerNorm has a bias, RMSNorm none
    embed = m["vocab_size"] * d * (1 if m["tied_embeddings"] else 2)
    positions = int(m.get("max_context") or 0) * d if gpt2 else 0
    n_moe = _n_moe_layers(m)
    count = int(
        layers * (_attention_parameters(m) + norms)
        + (layers - n_moe) * mlp
        + n_moe * _moe_layer_parameters(m, m["n_experts"])
        + norms // 2
        + embed
        + positions
    )
    if count > MAX_PARAMETERS:
        raise Message(
            "{model} implies {count} parameters; at most {most} are modelled (check the sizes in its config)",
            model=m.get("name", "?"),
            count=f"{count:.3g}",
            most="1e+14",
        )
    return count


def active_parameter_count(model: str | dict) -> int:
    """Parameters a token passes through: :func:`parameter_count` with k routed experts per MoE layer
    instead of E (the "active" size MoE model cards quote); the total for a dense model."""
    m = model_spec(model)
    n_moe = _n_moe_layers(m)
    if not n_moe:
        return parameter_count(m)
    routed = n_moe * _expert_parameters(m, m["n_experts"] - m["experts_per_token"])
    return parameter_count(m) - routed


def dense_comparator(model: str | dict) -> dict:
    """A dense model with the MoE ``model``'s active parameter count, as a spec dict.

    The rule: keep everything but the MLPs (layers, width d, attention, latent attention included,
    vocabulary, embeddings, context window) and give every layer one gated MLP of width

    .. math::  f = \\frac{(n_{layers} - n_{moe})\\,ffn + n_{moe}\\,(k\\,d_e + n_s d_s + E / 3)}{n_{layers}}

    (rounded), so that 3·d·f·n_layers equals the MLP weights a token passes through (the dense
    layers, k routed and the shared experts, the router d·E): :func:`parameter_count` of the result
    is :func:`active_parameter_count` of ``model`` to within 3·d·n_layers / 2. The experts' own
    storage (``expert_bits``) is not carried: the dense weights are at the dtype. Beside the MoE
    model it isolates what routing does to a step: the same attention and the same bytes per token,
    but every token through the same weights. A dense ``model`` is returned as its own spec.
    """
    m = model_spec(model)
    n_moe = _n_moe_layers(m)
    if not n_moe:
        return m
    layers = m["n_layers"]
    routed = m["experts_per_token"] * m["expert_size"] + m["n_shared_experts"] * m["shared_expert_size"]
    width = ((layers - n_moe) * m["intermediate_size"] + n_moe * (routed + m["n_experts"] / 3)) / layers
    spec = {k: v for k, v in m.items() if k != "params"}  # the catalogue's count is the MoE's total
    spec |= dict.fromkeys(("n_experts", "experts_per_token", "expert_size", "n_shared_experts"), 0)
    spec |= dict(shared_expert_size=0, dense_layers=0, moe_every=1, expert_bits=None, mlp="gated")
    active = active_parameter_count(m)
    spec |= dict(intermediate_size=round(width), name=f"dense {active / 1e9:.3g}B like {m.get('name', '?')}")
    return model_spec(spec)


def with_routing_skew(model, skew: float):
    """``model`` with a skewed expert load (:func:`specviz.core.moe.zipf_load`, Zipf exponent ``skew``)
    for the roofline's count of experts touched; a dense model, or skew 0 (uniform routing), is
    returned as it came."""
    m = model_spec(model)
    if not m["n_experts"] or not skew:
        return model
    return m | {"expert_load": tuple(float(x) for x in moe.zipf_load(m["n_experts"], skew))}


def _n_moe_layers(m: dict) -> int:
    return moe.moe_layers(m["n_layers"], m["dense_layers"], m["moe_every"]) if m["n_experts"] else 0


def _attention_parameters(m: dict) -> int:
    """Weights of one layer's attention: q, k, v, o (GQA); with latent attention (MLA) the down- and
    up-projections instead: d·q_r + q_r·H·(nope + rope) (or d·H·(nope + rope) without q_lora_rank),
    d·(kv_r + rope), kv_r·H·(nope + v) and H·v·d, plus the two latent norms."""
    d, h = m["hidden_size"], m["n_heads"]
    if not m["kv_lora_rank"]:
        return d * m["head_dim"] * (2 * h + 2 * m["n_kv_heads"])
    r, qr, rope, nope, v = (
        m[f] for f in ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "nope_head_dim", "v_head_dim")
    )
    q = d * qr + qr * h * (nope + rope) + qr if qr else d * h * (nope + rope)
    return q + d * (r + rope) + r + r * h * (nope + v) + h * v * d


def _expert_parameters(m: dict, experts) -> int:
    """Weights of ``experts`` routed experts of one MoE layer: 3·d·d_e each (gated)."""
    return 3 * m["hidden_size"] * m["expert_size"] * experts


def _moe_layer_parameters(m: dict, experts) -> int:
    """Weights of one MoE layer's MLP with ``experts`` routed experts (gated: 3·d·d_e each), its
    shared experts and the router (d·E)."""
    d = m["hidden_size"]
    shared = 3 * d * m["n_shared_experts"] * m["shared_expert_size"]
    return int(_expert_parameters(m, experts) + shared + d * m["n_experts"])


# --------------------------------------------------------------------------------------
# one forward as operators
# --------------------------------------------------------------------------------------

OPERATORS = ("q/k/v/o projections", "MLP", "attention", "norms & residual", "LM head", "all-reduce", "fusion fc")


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

    batch B sequences, each with ``tokens`` n new tokens after ``context`` L cached ones:

    * linear layers: FLOPs = 2·in·out·B·n / tp; bytes = in·out·w / tp (weights, read once per step
      whatever B·n) + (in + out)·B·n·a (activations);
    * attention over L + n positions: FLOPs = 4·B·n·(L + n)·H·hd / tp; bytes = the KV cache read,
      B·(L + n)·2·h·hd·a with h = :func:`kv_heads_per_gpu` (KV heads are replicated when
      H_kv < tp, and so are their K/V projections), plus q and output;
    * norms and residual adds: 8·B·n·d FLOPs and 4 reads/writes of B·n·d per layer, on every GPU
      (tensor parallelism replicates them);
    * tensor-parallel all-reduces: 2 per layer of B·n·d·a bytes (time in :func:`step_time`);
    * MoE layers (:func:`_moe_mlp`): with ``expert_parallel`` the routed experts sit whole on the
      ``tp`` GPUs (vLLM's ``--enable-expert-parallel`` with one data-parallel rank) instead of each
      being split over them; attention stays tensor parallel and the MoE output is still all-reduced.
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

    span = ctx + n  # positions attended to
    if m["kv_lora_rank"]:
        proj, attn_flops, attn_bytes = _latent_attention(m, rows, b, span, tp, w, a)
    else:
        q = linear(d, h * hd)
        replicated = kv_heads * tp / h_kv  # 1 when the KV heads split evenly; tp / H_kv when each GPU holds one
        kv = tuple(replicated * x for x in linear(d, 2 * h_kv * hd))  # each GPU projects its own K/V heads
        o = linear(h * hd, d)
        proj = tuple(layers * (x + y + z) for x, y, z in zip(q, kv, o, strict=True))
        attn_flops = layers * 4.0 * rows * span * h * hd / tp
        attn_bytes = layers * (b * span * 2 * kv_heads * hd * a + 2 * rows * h * hd * a / tp)
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
    """(FLOPs, bytes) of one MoE layer's MLP on one of ``tp`` GPUs for ``rows`` = B·n tokens.

    Routed experts: each token through k experts, 2·3·d·d_e FLOPs each; the weights of the distinct
    experts touched, :func:`specviz.core.moe.experts_touched` (uniform routing, or the model's measured
    ``expert_load`` when it carries one, e.g. :func:`specviz.core.moe.zipf_load`), 3·d·d_e each at
    ``expert_bits`` (MXFP4: 4.25) or the dtype's size. Shared experts: every token, their weights
    read once. The router: d·E. Under tensor parallelism every GPU reads 1/tp of each expert touched;
    under expert parallelism a GPU reads the whole experts it holds that are touched, and the layer
    waits for the busiest GPU (:func:`specviz.core.moe.experts_on_busiest_rank`), so at small batch
    expert parallelism reads more per GPU than tensor parallelism and at large batch the same (a
    measured load is not applied there: which GPU holds the hot experts is the placement's choice).
    """
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


def _latent_attention(m: dict, rows, b, span, tp, w: float, a: float) -> tuple:
    """Multi-head latent attention (DeepSeek-V2/V3), decode in the absorbed form, on one of ``tp`` GPUs.

    Returns (projections (FLOPs, bytes), attention FLOPs, attention bytes), summed over layers. The
    cache holds kv_r + rope values per token and layer (the compressed latent and the shared rope
    key), the same on every GPU (engines replicate it across tensor-parallel ranks). Scores and values
    run over the latent: 2·H·(kv_r + rope) + 2·H·kv_r FLOPs per token and position. Projections: the
    weights of :func:`_attention_parameters` (the up-projections absorbed, but still read).
    """
    layers, d, h = m["n_layers"], m["hidden_size"], m["n_heads"]
    r, rope = m["kv_lora_rank"], m["rope_head_dim"]
    weights = _attention_parameters(m)
    proj = (layers * 2.0 * weights * rows / tp, layers * (weights * w + 4 * d * rows * a) / tp)
    attn_flops = layers * rows * span * h * (2 * (r + rope) + 2 * r) / tp
    attn_bytes = layers * (b * span * (r + rope) * a + 2 * rows * h * (r + rope) * a / tp)
    return proj, attn_flops, attn_bytes


def _fixed_seconds(m: dict, eff: Efficiency, batch) -> np.ndarray:
    """The engine's fixed cost of one forward: per forward, per layer and per sequence."""
    return eff.overhead_s + eff.layer_overhead_s * m["n_layers"] + eff.seq_overhead_s * np.asarray(batch, dtype=float)


def _op_time(flops, nbytes, peak: float, bandwidth: float, eff: Efficiency) -> tuple[np.ndarray, np.ndarray]:
    compute, memory = flops / (peak * eff.compute), nbytes / (bandwidth * eff.memory)
    return np.maximum(compute, memory), compute >= memory


def link_kind(gpu, tp=1) -> np.ndarray:
    """How ``tp`` GPUs of ``gpu`` reach each other: ``"nvlink"`` over a peer-to-peer fabric (NVLink,
    NVSwitch, Infinity Fabric) within one board of :data:`BOARD_GPUS`, else ``"pcie"``: GPUs without
    a fabric (64 GB/s per direction or less: PCIe Gen5 x16), and a group larger than a board, whose
    traffic leaves through the network cards on PCIe. Broadcasts over ``tp``."""
    return _link_kind(gpu_spec(gpu), tp)


def _link_kind(g: dict, tp) -> np.ndarray:
    """:func:`link_kind` of a checked GPU spec (the step's hot path checks it once)."""
    fabric = g["interconnect_gbs"] > 64
    return np.where(fabric & (np.asarray(tp) <= BOARD_GPUS), "nvlink", "pcie")[()]


def _allreduce_time(nbytes, tp, g: dict, eff: Efficiency, layers: int) -> np.ndarray:
    """Ring all-reduce: 2 (tp − 1) / tp of the bytes over the link, plus a latency per call:
    ``allreduce_latency_s`` within an NVLink board, ``pcie_allreduce_latency_s`` over PCIe or across
    boards (:func:`link_kind`), where the link is also capped at one network card's
    :data:`NIC_GBS` per GPU."""
    tp = np.asarray(tp, dtype=float)
    across = tp > BOARD_GPUS
    link = np.where(across, min(g["interconnect_gbs"], NIC_GBS), g["interconnect_gbs"]) * 1e9 * eff.network
    latency = np.where(_link_kind(g, tp) == "pcie", eff.pcie_allreduce_latency_s, eff.allreduce_latency_s)
    return np.where(tp > 1, 2 * (tp - 1) / tp * nbytes / link + 2 * layers * latency, 0.0)


def _operator_efficiency(name: str, dtype: str, eff: Efficiency) -> Efficiency:
    """``eff`` for operator ``name``: a weight-streaming operator (:data:`WEIGHT_OPERATORS`) over
    weights stored below 16 bits reaches ``quant_memory`` of ``memory``."""
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
    """Seconds of one forward: ``tokens`` new tokens for each of ``batch`` sequences over ``context``
    cached tokens, on ``tp`` GPUs (tensor parallel; MoE experts whole per GPU with
    ``expert_parallel``): the roofline time of every operator, summed, plus the all-reduces and the
    engine's fixed costs. Broadcasts over batch, context, tokens, tp."""
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
    """One row per operator of one forward (scalar arguments): FLOPs, bytes, arithmetic intensity
    (FLOPs per byte), time in seconds, and whether it is bound by compute or by memory."""
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
    """(FLOP/s, bytes/s) an operator can reach on ``gpu``: the datasheet peak and bandwidth times the efficiencies."""
    g = gpu_spec(gpu)
    eff = as_efficiency(efficiency) or efficiency_for(g)
    return _peak_flops(g, dtype) * eff.compute, g["bandwidth_tbs"] * 1e12 * eff.memory


def ridge_point(gpu, dtype="bf16", efficiency=None) -> float:
    """FLOPs per byte above which an operator is compute-bound on ``gpu`` (attainable figures)."""
    flops, bandwidth = attainable(gpu, dtype, efficiency)
    return flops / bandwidth


# --------------------------------------------------------------------------------------
# the pair: c, v, the speedup and K*
# --------------------------------------------------------------------------------------


NGRAM = "ngram"  #: a draft that looks the continuation up in the context (prompt lookup): no forward


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
    """What one speculative round costs, in the terms of :func:`specviz.core.theory.speedup_from_tokens`.

    ``draft`` is a model (catalogue name or spec), a head of :mod:`specviz.core.heads`, or
    :data:`NGRAM`. A round runs D = ``k`` draft forwards of ``draft_tokens`` tokens per sequence
    (1 for a chain, a tree level's width for a tree), then one verify forward of T =
    ``verify_tokens`` tokens (default k + 1; a tree's node count). A Medusa head drafts every
    position in one pass over its weights (D = 1) on the verify forward's T hidden states; an n-gram
    lookup costs one fixed host step (``overhead_s``, D = 1). Every draft forward also pays the
    engine's ``draft_overhead_s`` (the draft loop's host work between draft steps). MoE models run
    with ``expert_parallel`` as :func:`operator_costs` says.

    Returns t_target, t_draft (one draft forward), t_verify (seconds), c = t_target / t_draft,
    v = (t_verify / t_target − 1) / (T − 1), o = round_overhead_s / t_target and draft_steps D, so
    that S = E[N] / (1 + v·(T − 1) + o + D / c). The draft attends over ``draft_context`` (default:
    the target's ``context``) on ``tp_draft`` GPUs. Broadcasts over batch, context and k.
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
        else:
            t_draft = step_time(heads.draft_model(head, t), g, batch, d_ctx, draft_tokens, tp=tp_draft, **kw)
    else:
        t_draft = step_time(draft, g, batch, d_ctx, draft_tokens, tp=tp_draft, **kw)
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
    """One Medusa pass: k heads' weights (:func:`specviz.core.heads.medusa_weights`) read once and
    applied to B·T hidden states, on ``tp`` GPUs, plus one layer's dispatch cost per head."""
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
    """S = E[N] / (1 + v·(T − 1) + o + D / c) from :func:`pair_costs`'s terms, by the one rule
    :func:`specviz.core.theory.speedup_from_tokens` (K = T − 1 verified draft nodes)."""
    return theory.speedup_from_tokens(
        mean_tokens, costs["c"], costs["nodes"], costs["v"], costs["o"], costs["draft_steps"].astype(int)
    )


def _mean_tokens(alpha, k_max: int) -> np.ndarray:
    """E[N] for K = 1..k_max from a scalar α or per-position a_1..a_m (m ≥ k_max; a_i = α beyond)."""
    a = np.atleast_1d(theory.check_alpha(alpha))
    if a.ndim != 1:
        raise Message(
            "alpha must be one number or a vector of per-position acceptance; got shape {shape}", shape=a.shape
        )
    if a.size < k_max:
        a = np.concatenate([a, np.full(k_max - a.size, a[-1])])  # positions beyond the vector: the last one
    return theory.expected_tokens_by_position(a[:k_max])  # (k_max,)


def speedup_by_batch(
    target,
    draft,
    gpu,
    alpha,
    batch,
    context,
    k_max=8,
    *,
    dtype="bf16",
    tp_target=1,
    tp_draft=1,
    draft_context=None,
    efficiency=None,
    draft_tokens=1,
    verify_tokens=None,
    expert_parallel=False,
) -> pd.DataFrame:
    """Per (batch, context): c, the speedup for every K = 1..k_max, K* and the speedup at K*.

    ``alpha`` is one number, per-position acceptance a_1, a_2, … (E[N] = 1 + Σ_i Π_{j≤i} a_j;
    a vector shorter than k_max repeats its last entry), or a function of the context giving α(L). K* is 0 (do not speculate, speedup 1)
    where no K pays. ``draft_tokens`` and ``verify_tokens`` (a tree's top-k and node count T, the
    same for every K; None: K + 1) and ``expert_parallel`` go to :func:`pair_costs`. Columns: batch, context, c, t_target,
    s_1..s_{k_max}, k_star, speedup_at_k_star.
    """
    if not (isinstance(k_max, int | np.integer) and 1 <= k_max <= 64):
        raise Message("k_max must be an integer in [1, 64]; got {value!r}", value=k_max)
    b = np.atleast_1d(np.asarray(batch, dtype=float))[:, None, None]  # (nB, 1, 1)
    ctx = np.atleast_1d(np.asarray(context, dtype=float))[None, :, None]  # (1, nL, 1)
    ks = np.arange(1, k_max + 1)[None, None, :]  # (1, 1, K)
    costs = pair_costs(
        target,
        draft,
        gpu,
        b,
        ctx,
        ks,
        dtype=dtype,
        tp_target=tp_target,
        tp_draft=tp_draft,
        draft_context=None
        if draft_context is None
        else np.atleast_1d(np.asarray(draft_context, dtype=float))[None, :, None],
        efficiency=efficiency,
        draft_tokens=draft_tokens,
        verify_tokens=verify_tokens,
        expert_parallel=expert_parallel,
    )
    if callable(alpha):  # α(L), e.g. a fitted decay (specviz.core.acceptance.DecayFit): E[N] per context
        a = theory.check_alpha(np.asarray(alpha(ctx[0, :, 0]), dtype=float))  # (nL,)
        mean = theory.expected_tokens(a[None, :, None], ks)  # (1, nL, K)
    else:
        mean = _mean_tokens(alpha, k_max)  # (K,)
    s = round_speedup(mean, costs)  # (nB, nL, K)
    s = np.broadcast_to(s, np.broadcast_shapes(b.shape, ctx.shape, ks.shape))
    best = s.argmax(-1)  # first maximum: ties go to the smaller K
    s_best = np.take_along_axis(s, best[..., None], -1)[..., 0]
    k_star = np.where(s_best > 1.0, best + 1, 0)
    nb, nl = s.shape[:2]
    frame = pd.DataFrame(
        {
            "batch": np.repeat(np.atleast_1d(batch), nl).astype(int),
            "context": np.tile(np.atleast_1d(context), nb).astype(int),
            "c": np.broadcast_to(costs["c"][..., 0], (nb, nl)).ravel(),
            "t_target": np.broadcast_to(costs["t_target"][..., 0], (nb, nl)).ravel(),
        }
    )
    for i in range(k_max):
        frame[f"s_{i + 1}"] = s[..., i].ravel()
    frame["k_star"] = k_star.ravel()
    frame["speedup_at_k_star"] = np.where(k_star > 0, s_best, 1.0).ravel()
    return frame


def check_pair(target, draft) -> None:
    """Raise ValueError unless draft and target can share a tokenizer: vocabulary sizes within 128
    (models pad their embeddings: Qwen2.5 has 151,936 rows below 7B and 152,064 from 7B up)."""
    t, d = model_spec(target), model_spec(draft)
    if abs(t["vocab_size"] - d["vocab_size"]) > 128:
        raise Message(
            "target {target!r} (vocab_size {target_vocab:,}) and draft {draft!r} (vocab_size {draft_vocab:,}) cannot share a tokenizer: a draft must use its target's vocabulary",
            target=t.get("name", Phrase("target")),
            target_vocab=t["vocab_size"],
            draft=d.get("name", Phrase("draft")),
            draft_vocab=d["vocab_size"],
        )


def alpha_from_measurements(frame: pd.DataFrame, per_position: bool = False, what: str | None = None):
    """α for the model from measured rows (a library run, the live page's run; canonical columns).

    ``per_position=False``: the mean of ``alpha_used`` over the rows (one number). ``True``: the
    conditional per-position acceptance a_1;a_2;… of the row with the largest K that has it (a list;
    a position never reached takes the last one that was). ValueError names what is missing, and
    ``what`` the measurements (default "the run"; a :class:`~specviz.base.i18n.Phrase` is shown translated).
    """
    what = Phrase("the run") if what is None else what
    if frame is None or not len(frame):
        raise Message("{what} has no measured rows to take α from", what=what)
    if not per_position:
        alpha = pd.to_numeric(frame.get("alpha_used"), errors="coerce").dropna() if "alpha_used" in frame else []
        if not len(alpha):
            raise Message("{what} has no α (alpha_used) in any row", what=what)
        return float(alpha.mean())
    cells = frame.get("per_position_acceptance")
    rows = frame[cells.notna() & (cells.astype(str).str.strip() != "")] if cells is not None else frame.iloc[:0]
    if not len(rows):
        raise Message("{what} has no per-position acceptance (per_position_acceptance); use its mean α", what=what)
    row = rows.loc[pd.to_numeric(rows["k"], errors="coerce").idxmax()]
    values = [float(x) for x in str(row["per_position_acceptance"]).split(";") if x.strip()]
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        raise Message("{what}: per-position acceptance at K = {k} was never measured (all nan)", what=what, k=row["k"])
    out, last = [], finite[0]
    for v in values:
        last = v if np.isfinite(v) else last
        out.append(float(np.clip(last, 0.0, 1.0)))
    return out


# --------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------

USABLE_MEMORY = 0.9  #: fraction of HBM for weights and KV cache (the rest: activations, CUDA context)


def kv_heads_per_gpu(n_kv_heads, tp):
    """K/V heads each of ``tp`` GPUs holds: max(H_kv / tp, 1) (a head is replicated when H_kv < tp;
    an uneven split counts the mean)."""
    return np.maximum(n_kv_heads / np.asarray(tp, dtype=float), 1.0)


def kv_bytes_per_token(model, dtype="bf16", tp=1):
    """KV cache bytes per token of context on one of ``tp`` GPUs: 2 · n_layers · h · head_dim · bytes,
    h = :func:`kv_heads_per_gpu` (the whole cache when tp = 1)."""
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
    """Whether weights / tp + batch · context · (per-GPU KV bytes per token, :func:`kv_bytes_per_token`)
    fit in ``USABLE_MEMORY`` of one GPU's HBM."""
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


# --------------------------------------------------------------------------------------
# engine configuration
# --------------------------------------------------------------------------------------


def k_schedule(target, draft, gpu, alpha, context, batches, k_max=8, **kw) -> pd.DataFrame:
    """K*(B) at ``context`` for each of ``batches``: columns batch, k (0: speculation does not pay)."""
    frame = speedup_by_batch(target, draft, gpu, alpha, batches, [context], k_max, **kw)
    return pd.DataFrame({"batch": frame["batch"].to_numpy(), "k": frame["k_star"].to_numpy()})


def vllm_speculative_config(target, draft, gpu, alpha, context, batches, k_max=8, *, draft_name=None, **kw) -> dict:
    """vLLM's ``--speculative-config`` for a draft model whose K is K*(B) at ``context``
    (:func:`specviz.core.configs.vllm.speculative_config`)."""
    name = draft_name or (draft if isinstance(draft, str) else model_spec(draft).get("name", "draft"))
    return configs.vllm.speculative_config(
        k_schedule(target, draft, gpu, alpha, context, batches, k_max, **kw), model=name
    )


def llama_cpp_flags(target, draft, gpu, alpha, context, k_max=16, **kw) -> str:
    """llama-server's draft flags for one sequence at K*(B = 1) (:mod:`specviz.core.configs.llamacpp`)."""
    k = int(k_schedule(target, draft, gpu, alpha, context, [1], k_max, **kw)["k"].iloc[0])
    return configs.llamacpp.draft_flags(k) if k > 0 else configs.llamacpp.no_draft()

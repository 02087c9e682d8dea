"""The model and GPU catalogues (``data/catalog``): names or dicts to checked architecture and accelerator specs.

Invalid input raises ValueError naming the field, the value and what is allowed.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.base.paths import DATA
from specviz.core.profiles import DEFAULT_EFFICIENCY, Efficiency

CATALOG_DIR = DATA / "catalog"
CALIBRATION_DIR = DATA / "calibration"  #: python -m specviz calibrate


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
#: Optional fields of layers that are not full softmax attention (0 or absent: every layer attends to the whole
#: context). A sliding layer caches and reads at most ``sliding_window`` positions (Mistral-7B, Gemma-2/3,
#: gpt-oss); a linear-attention layer (Qwen3-Next's and Qwen3.5's Gated DeltaNet) keeps a fixed recurrent state of
#: linear_v_heads × linear_k_dim × linear_v_dim values per sequence instead of a KV cache.
LAYER_FIELDS = (
    "sliding_window",  # W, positions a sliding layer attends to (sliding_window)
    "sliding_layers",  # how many of n_layers slide (layer_types, sliding_window_pattern)
    "linear_layers",  # how many of n_layers are linear attention (layer_types, full_attention_interval)
    "linear_k_heads",  # linear_num_key_heads
    "linear_v_heads",  # linear_num_value_heads
    "linear_k_dim",  # linear_key_head_dim
    "linear_v_dim",  # linear_value_head_dim
    "linear_conv",  # linear_conv_kernel_dim: the short convolution over q, k, v before the recurrence
    "sparse_topk",  # DeepSeek-V3.2 sparse attention (DSA): positions each token attends to (index_topk)
    "index_heads",  # the DSA indexer's heads (index_n_heads)
    "index_head_dim",  # and their size (index_head_dim)
)
NGRAM = "ngram"  #: a draft that looks the continuation up in the context (prompt lookup): no forward
GPU_FIELDS = ("memory_gb", "bandwidth_tbs", "bf16_tflops", "fp16_tflops", "interconnect_gbs")

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
    "sliding_window": (0, 134_217_728),
    "sliding_layers": (0, 1024),
    "linear_layers": (0, 1024),
    "linear_k_heads": (0, 1024),
    "linear_v_heads": (0, 1024),
    "linear_k_dim": (0, 4096),
    "linear_v_dim": (0, 4096),
    "linear_conv": (0, 64),
    "sparse_topk": (0, 134_217_728),
    "index_heads": (0, 1024),
    "index_head_dim": (0, 4096),
}
#: Most parameters a model may imply (100 trillion: 50 times the largest published model), so that
#: its bytes (parameters × 4 at most) stay exact integers in a float.
MAX_PARAMETERS = 10**14


def efficiency_for(gpu) -> Efficiency:
    """``gpu``'s own measured efficiencies (a calibrated machine: e = 1 and its fixed costs), else the defaults."""
    g = gpu_spec(gpu)
    if "overhead_s" not in g:
        return DEFAULT_EFFICIENCY
    return Efficiency(
        compute=1.0, memory=1.0, overhead_s=float(g["overhead_s"]), layer_overhead_s=float(g.get("layer_overhead_s", 0))
    )


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
    """(target, draft) pairs of ``pairs.csv`` (name, target, draft, source, notes); with ``heads`` those of
    ``head_pairs.csv`` too, whose drafts are heads (:mod:`specviz.core.heads`)."""
    pairs = _read_catalog(str(directory))[2]
    if heads:
        pairs = pd.concat([pairs, _read_head_pairs(str(directory))], ignore_index=True)
    return pairs.copy()


@cache
def _read_head_pairs(directory: str) -> pd.DataFrame:
    return pd.read_csv(Path(directory) / "head_pairs.csv")


def model_spec(model: str | dict) -> dict:
    """A model's architecture as a checked dict of :data:`MODEL_FIELDS` (plus ``name``), from a catalogue
    name (read once per process) or a dict (e.g. :func:`from_hf_config`)."""
    if isinstance(model, str):
        return dict(_catalogue_model(model))
    return _checked_model(model)


def is_moe(model: str | dict) -> bool:
    """Whether ``model`` (a catalogue name or fields) is a mixture of experts: more than one expert per MoE layer."""
    experts = model_spec(model).get("n_experts")
    return experts is not None and experts == experts and float(experts) > 1


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
    _check_layers(spec)
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
    """Fill the optional MoE and MLA fields (0; moe_every 1; shared width = expert width) and check them:
    MoE needs 1 ≤ k ≤ E and an expert width, MLA a rope and a value head size."""
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


def _check_layers(spec: dict) -> None:
    """Fill the optional :data:`LAYER_FIELDS` (0) and check them: sliding plus linear layers at most n_layers,
    a window for sliding layers, and the state's sizes for linear ones."""
    rule = N_("model field {field} must be an integer from {lo} to {hi}; got {value}")
    for f in LAYER_FIELDS:
        spec[f] = _size(spec[f], f, f, rule) if _given(spec, f) else 0
    if spec["sliding_layers"] + spec["linear_layers"] > spec["n_layers"]:
        raise Message(
            "model {model!r}: {sliding} sliding and {linear} linear-attention layers exceed its {layers} layers",
            model=spec.get("name", "?"),
            sliding=spec["sliding_layers"],
            linear=spec["linear_layers"],
            layers=spec["n_layers"],
        )
    if spec["sliding_layers"] and not spec["sliding_window"]:
        raise Message(
            "model {model!r}: {sliding} sliding layers need a sliding_window of 1 or more positions",
            model=spec.get("name", "?"),
            sliding=spec["sliding_layers"],
        )
    sizes = ("linear_k_heads", "linear_v_heads", "linear_k_dim", "linear_v_dim")
    if spec["linear_layers"] and not all(spec[f] for f in sizes):
        raise Message(
            "model {model!r}: {linear} linear-attention layers need {fields}",
            model=spec.get("name", "?"),
            linear=spec["linear_layers"],
            fields=[f for f in sizes if not spec[f]],
        )
    if spec["sparse_topk"] and not (spec["kv_lora_rank"] and spec["index_heads"] and spec["index_head_dim"]):
        raise Message(
            "model {model!r}: sparse attention (sparse_topk {topk}) needs latent attention, index_heads and index_head_dim",
            model=spec.get("name", "?"),
            topk=spec["sparse_topk"],
        )


def _shown(value, most: int = 60) -> str:
    """``repr(value)`` cut to ``most`` characters: a message quotes the input, never a megabyte of it."""
    big = isinstance(value, int) and abs(value) >= 10**30  # no float holds 10**400, and its digits help nobody
    text = f"{'-' if value < 0 else ''}~10^{int(abs(value).bit_length() * math.log10(2))}" if big else repr(value)
    return text if len(text) <= most else text[: most - 1] + "…"


def _size(value, field: str, name: str, key: str) -> int:
    """``value`` as an int within ``SIZE_LIMITS[field]``, else ValueError (catalogue ``key``) naming ``name``;
    booleans, strings, containers, fractions and non-finite numbers are refused before any arithmetic."""
    lo, hi = SIZE_LIMITS[field]
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)
    if not (number and lo <= value <= hi and value == int(value)):  # NaN and ±inf fail the range
        raise Message(key, field=name, name=name, value=_shown(value), lo=lo, hi=f"{hi:,}")
    return int(value)


def gpu_spec(gpu: str | dict) -> dict:
    """An accelerator's checked figures (:data:`GPU_FIELDS`, fp8 optional): catalogue or calibrated name, or dict."""
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
    """The machine ``python -m specviz calibrate`` measured (``machine.json``) as a :func:`gpu_spec` dict, or None."""
    try:
        return gpu_spec(json.loads((Path(directory or CALIBRATION_DIR) / "machine.json").read_text()))
    except (OSError, ValueError):
        return None


def calibration_steps(directory: Path | None = None) -> pd.DataFrame | None:
    """The forward times ``python -m specviz calibrate`` measured (``steps.csv``: model, batch, tokens,
    context, measured_s, predicted_s, ratio), or None."""
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

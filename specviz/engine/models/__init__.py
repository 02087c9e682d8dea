"""Draft/target pairs: the bundled byte-level pair, its tokenizer, and the interface the engine drives."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import torch

from specviz.base.i18n import Message
from specviz.base.paths import DATA
from specviz.engine.models import packed
from specviz.engine.models.gpt import GPT, VOCAB_SIZE, GPTConfig

__all__ = [
    "BUNDLED_DIR",
    "GPT",
    "ByteTokenizer",
    "Decodable",
    "GPTConfig",
    "default_dtype",
    "load_pair",
    "packed",
    "plan_free_attention",
    "resolve_device",
]

BUNDLED_DIR = DATA / "models" / "bundled"


@runtime_checkable
class Decodable(Protocol):
    """What :mod:`specviz.engine.decoding` uses of a model (GPT and HFCausalLM satisfy it).

    ``context_length``; ``device``, ``dtype``; ``setup_cache(batch, length)``; ``model(idx, start)``:
    logits (B, T, V) for ``idx`` (B, T) at positions start..start+T−1, overwriting the cache from
    ``start`` on (``start=None``: recompute from 0 without the cache).
    """

    @property
    def context_length(self) -> int: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def dtype(self) -> torch.dtype: ...

    def setup_cache(self, batch: int = 1, length: int | None = None) -> None: ...

    def __call__(self, idx: torch.Tensor, start: int | None = None) -> torch.Tensor: ...


class ByteTokenizer:
    """UTF-8 bytes as token ids 0..255 (invalid sequences decode with U+FFFD)."""

    vocab_size = 256

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


def resolve_device(device: str = "auto") -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; ``"cuda"`` without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise Message(
            "device {device!r} was requested but no CUDA GPU is available; use 'cpu' or 'auto'", device=device
        )
    if not (device == "cpu" or device.startswith("cuda")):
        raise Message("device must be 'auto', 'cpu' or 'cuda[:N]'; got {device!r}", device=device)
    return torch.device(device)


def default_dtype(device: torch.device) -> torch.dtype:
    """fp32 on CPU; bf16 on CUDA where supported, else fp16."""
    if device.type != "cuda":
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def plan_free_attention(device: torch.device) -> None:
    """On CUDA, keep SDPA off cuDNN, which plans every new key length (``benchmarks/round_costs.py``)."""
    if device.type == "cuda":
        torch.backends.cuda.enable_cudnn_sdp(False)


NGRAM_SUFFIXES = ("+ngram", "+ngram-vllm")  #: "TARGET+ngram": the target with the n-gram drafter


def _ngram_pair(spec: str, dev: torch.device, dtype: torch.dtype):
    """``TARGET+ngram`` or ``TARGET+ngram-vllm``, TARGET ``bundled-target``, a pair folder or a HF id."""
    from specviz.engine.models.ngram import NgramDraft

    base, _, kind = spec.rpartition("+")
    rule = "vllm" if kind == "ngram-vllm" else "hf"
    if base in ("bundled-target", "bundled") or (Path(base) / "target" / "model.safetensors").is_file():
        root = BUNDLED_DIR if base in ("bundled-target", "bundled") else Path(base)
        target, tokenizer, vocab = packed.apply(GPT.load(root / "target", dev, dtype)), ByteTokenizer(), VOCAB_SIZE
    else:
        from specviz.engine.models import hf

        target, tokenizer = hf.load_hf_target(base, dev, dtype)
        vocab = target.cfg.vocab_size
    return target, NgramDraft(rule, context_length=target.context_length, vocab_size=vocab, device=dev), tokenizer


def load_pair(spec: str = "bundled", device: str = "cpu", dtype: torch.dtype | None = None):
    """Load ``(target, draft, tokenizer)``, both :class:`Decodable`; our GPTs get
    :func:`~specviz.engine.models.packed.apply`.

    ``spec``: ``"bundled"``, a folder with ``target/`` and ``draft/``, ``"TARGET,DRAFT"`` (Hugging Face
    ids or folders: :func:`specviz.engine.models.hf.load_hf_pair`), or ``"TARGET+ngram"`` /
    ``"TARGET+ngram-vllm"`` (:mod:`specviz.engine.models.ngram`). ``device``: cpu, cuda, cuda:N or
    auto. ``dtype``: default fp32 on CPU, bf16/fp16 on CUDA.
    """
    dev = resolve_device(device)
    dtype = dtype or default_dtype(dev)
    plan_free_attention(dev)
    if spec.endswith(NGRAM_SUFFIXES):
        return _ngram_pair(spec, dev, dtype)
    if "," in spec:  # Hugging Face pair; imported lazily so the app runs without transformers
        from specviz.engine.models import hf

        target_id, _, draft_id = spec.partition(",")
        return hf.load_hf_pair(target_id, draft_id, dev, dtype)
    root = BUNDLED_DIR if spec == "bundled" else Path(spec)
    for part in ("target", "draft"):
        if not (root / part / "model.safetensors").is_file():
            raise Message("pair {spec!r}: no {part}/model.safetensors under {root}", spec=spec, part=part, root=root)
    target = packed.apply(GPT.load(root / "target", dev, dtype))  # oneDNN linears where they pay (CPU fp32)
    draft = packed.apply(GPT.load(root / "draft", dev, dtype))
    return target, draft, ByteTokenizer()

"""Draft/target pairs: the bundled byte-level pair and its tokenizer."""

from __future__ import annotations

from pathlib import Path

import torch

from specviz.models.gpt import GPT, GPTConfig

__all__ = ["BUNDLED_DIR", "GPT", "ByteTokenizer", "GPTConfig", "load_pair", "resolve_device"]

BUNDLED_DIR = Path(__file__).resolve().parents[2] / "data" / "models" / "bundled"


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
        raise ValueError(f"device {device!r} was requested but no CUDA GPU is available; use 'cpu' or 'auto'")
    if not (device == "cpu" or device.startswith("cuda")):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]'; got {device!r}")
    return torch.device(device)


def default_dtype(device: torch.device) -> torch.dtype:
    """fp32 on CPU; bf16 on CUDA where supported, else fp16."""
    if device.type != "cuda":
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def load_pair(spec: str = "bundled", device: str = "cpu", dtype: torch.dtype | None = None):
    """Load ``(target, draft, tokenizer)``.

    Parameters
    ----------
    spec : str
        ``"bundled"`` for the pair shipped in data/models/bundled, a folder with
        ``target/`` and ``draft/`` subfolders in the same format, or ``"TARGET,DRAFT"``:
        two Hugging Face hub ids or local transformers folders (needs the optional
        package transformers; see :func:`specviz.models.hf.load_hf_pair`).
    device : str
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
    dtype : torch.dtype, optional
        Default: fp32 on CPU, bf16/fp16 on CUDA.
    """
    dev = resolve_device(device)
    dtype = dtype or default_dtype(dev)
    if "," in spec:  # Hugging Face pair; imported lazily so the app runs without transformers
        from specviz.models import hf

        target_id, _, draft_id = spec.partition(",")
        return hf.load_hf_pair(target_id, draft_id, dev, dtype)
    root = BUNDLED_DIR if spec == "bundled" else Path(spec)
    for part in ("target", "draft"):
        if not (root / part / "model.safetensors").is_file():
            raise ValueError(f"pair {spec!r}: no {part}/model.safetensors under {root}")
    target = GPT.load(root / "target", dev, dtype)
    draft = GPT.load(root / "draft", dev, dtype)
    return target, draft, ByteTokenizer()

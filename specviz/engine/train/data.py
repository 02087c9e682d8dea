"""The training corpus: the CPython standard library split by file, its bytes, benchmark prompts, batches."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import numpy as np
import torch

SEPARATOR = b"\n\n"  # between concatenated files


def stdlib_root() -> Path:
    """Folder of this interpreter's standard library."""
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files(root: Path | None = None, seed: int = 0, val_fraction: float = 0.05) -> tuple[list[Path], list[Path]]:
    """Stdlib ``.py`` files (no tests, idlelib, site-packages) split by ``seed`` into (train, validation)."""
    root = Path(root) if root else stdlib_root()
    skip = {"test", "tests", "idlelib", "site-packages", "__pycache__"}
    files = sorted(p for p in root.rglob("*.py") if not skip & set(p.relative_to(root).parts))
    if len(files) < 2:
        raise ValueError(f"corpus root {root} holds {len(files)} Python files; need at least 2")
    order = list(range(len(files)))
    random.Random(seed).shuffle(order)
    n_val = max(1, round(val_fraction * len(files)))
    val = sorted(files[i] for i in order[:n_val])
    train = sorted(files[i] for i in order[n_val:])
    return train, val


def load_bytes(files: list[Path]) -> np.ndarray:
    """The files' bytes concatenated with a blank line between them, as uint8."""
    return np.frombuffer(SEPARATOR.join(p.read_bytes() for p in files), dtype=np.uint8)


def make_prompts(files: list[Path], root: Path, n: int = 12, length: int = 192, seed: int = 0) -> list[dict]:
    """``n`` prompts of ``length`` bytes from different ``files``, each at a line start."""
    rng = random.Random(seed)
    order = list(files)
    rng.shuffle(order)
    prompts = []
    for path in order:
        data = path.read_bytes()
        starts = [0] + [i + 1 for i in range(len(data) - length) if data[i] == 10]
        rng.shuffle(starts)
        for s in starts[:20]:
            window = data[s : s + length]
            if len(window) == length and len(window.strip()) > length // 2:
                text = window.decode("utf-8", errors="ignore")
                prompts.append({"source": str(path.relative_to(root)), "offset": s, "text": text})
                break
        if len(prompts) == n:
            break
    return prompts


def batch(
    data: np.ndarray, batch_size: int, seq_len: int, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows: inputs (B, T) and next-byte targets (B, T)."""
    starts = rng.integers(0, len(data) - seq_len - 1, size=batch_size)
    windows = np.stack([data[s : s + seq_len + 1] for s in starts]).astype(np.int64)  # (B, T+1)
    w = torch.from_numpy(windows)
    return w[:, :-1], w[:, 1:]

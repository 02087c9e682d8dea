"""Benchmark prompts, and the text quality of greedy continuations (distinct n-grams)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from specviz.base.i18n import Message
from specviz.base.paths import DATA
from specviz.engine import decoding

PROMPTS_FILE = DATA / "prompts" / "stdlib_validation.jsonl"


def load_prompts(path: str | Path = PROMPTS_FILE) -> list[str]:
    """Prompts from JSON lines (``text`` fields) or text blocks split by ``---`` lines; ValueError if none."""
    path = Path(path)
    if not path.is_file():
        raise Message("prompts file {path!r} does not exist", path=str(path))
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        prompts = [json.loads(line)["text"] for line in text.splitlines() if line.strip()]
    else:
        prompts = [block.strip("\n") for block in text.split("\n---\n")]
    prompts = [p for p in prompts if p.strip()]
    if not prompts:
        raise Message("prompts file {path!r} holds no prompt", path=str(path))
    return prompts


def distinct_ngram_ratio(tokens: list[int], n: int = 4) -> float:
    """Share of distinct n-grams: |{t[i:i+n]}| / (len(t) − n + 1); ValueError for fewer than ``n`` tokens."""
    count = len(tokens) - n + 1
    if n < 1 or count < 1:
        raise ValueError(f"distinct n-grams need n >= 1 and at least n tokens; got n={n}, {len(tokens)} tokens")
    return len({tuple(tokens[i : i + n]) for i in range(count)}) / count


def text_quality(target, prompts: list[torch.Tensor], new_tokens: int = 128, n: int = 4) -> dict:
    """Greedy continuations of ``prompts`` (at most half the context) and their mean :func:`distinct_ngram_ratio`."""
    new_tokens = min(new_tokens, target.context_length // 2)
    keep = target.context_length - new_tokens - 1  # prompt tokens that fit (the engine keeps one position spare)
    ratios = [
        distinct_ngram_ratio(decoding.generate_target_only(target, p[-keep:], new_tokens, 0.0)[0].tolist(), n)
        for p in prompts
    ]
    return {
        f"distinct_{n}gram_ratio": round(float(np.mean(ratios)), 4),
        f"min_distinct_{n}gram_ratio": round(min(ratios), 4),
        "prompts": len(prompts),
        "new_tokens": new_tokens,
    }

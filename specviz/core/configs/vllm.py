"""vLLM's ``--speculative-config`` JSON: ``SpeculativeConfig``'s fields (vllm/config/speculative.py, vLLM 0.34.0).

A K schedule is ``num_speculative_tokens_per_batch_size`` [[start_bs, end_bs, K], …], inclusive ranges
(vllm/v1/spec_decode/dynamic/utils.py); ``num_speculative_tokens`` is the largest K (at least 1).
"""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Message

VERSION = "0.34.0"
#: a draft's kind -> vLLM's ``method`` (``SpeculativeMethod``); 0.34.0 has none for Medusa heads
METHODS = {
    "draft": "draft_model",
    "eagle": "eagle",
    "eagle3": "eagle3",
    "mtp": "deepseek_mtp",
    "ngram": "ngram",
    "dflash": "dflash",
    "peagle": "eagle3",  # with parallel_drafting (vLLM PR #32887): every draft position in one forward
}


def batch_ranges(batches, k_star) -> list[list[int]]:
    """[[start_bs, end_bs, K], …] covering 1..max(batches) without overlap: each batch size takes the
    K* of the largest evaluated batch not above it; neighbouring ranges with the same K merge."""
    bs = np.asarray(batches, dtype=int)
    ks = np.asarray(k_star, dtype=int)
    if bs.ndim != 1 or bs.size == 0 or bs.shape != ks.shape:
        raise ValueError(f"batches and k_star must be 1-D and the same length; got {bs.shape} and {ks.shape}")
    order = np.argsort(bs)
    bs, ks = bs[order], ks[order]
    if bs[0] != 1 or (np.diff(bs) <= 0).any():
        raise ValueError(f"batches must be distinct and start at 1; got {bs.tolist()}")
    ranges: list[list[int]] = []
    for i, (start, k) in enumerate(zip(bs.tolist(), ks.tolist(), strict=True)):
        end = bs[i + 1] - 1 if i + 1 < bs.size else int(bs[-1])
        if ranges and ranges[-1][2] == k:
            ranges[-1][1] = int(end)
        else:
            ranges.append([int(start), int(end), int(k)])
    return ranges


def speculative_config(schedule, *, method: str = "draft_model", model: str | None = None) -> dict:
    """The config for K by running batch (``schedule``: columns ``batch``, ``k``; K = 0: no speculation there)."""
    ranges = batch_ranges(schedule["batch"], schedule["k"])
    config = {"method": method}
    if model:
        config["model"] = model
    config["num_speculative_tokens"] = max(1, max(k for _, _, k in ranges))
    config["num_speculative_tokens_per_batch_size"] = ranges
    return config


def with_head(config: dict, kind: str, target: str | None = None) -> dict:
    """``config`` for a head or n-gram (``kind`` in :data:`METHODS`): MTP's ``model`` is ``target``; n-gram has none.

    Raises ValueError for a kind vLLM has no method for (Medusa): not expressible in vLLM.
    """
    if kind not in METHODS:
        raise Message(
            "vLLM {version} has no speculative method for {kind} drafts: this draft is not expressible in vLLM",
            version=VERSION,
            kind=kind,
        )
    out = {"method": METHODS[kind]} | {k: v for k, v in config.items() if k != "method"}
    if kind == "mtp":
        out["model"] = target
    if kind == "ngram":
        out.pop("model", None)
    if kind == "peagle":
        out["parallel_drafting"] = True
    return out

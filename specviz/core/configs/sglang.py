"""SGLang's server flags: ``ServerArgs.add_cli_args`` (python/sglang/srt/server_args.py, SGLang 0.5.10.post1).

A chain of K is ``--speculative-num-steps K --speculative-eagle-topk 1 --speculative-num-draft-tokens
K + 1``; a top-k tree is steps = depth, top-k, draft tokens = budget + 1 (SGLang counts the root).
"""

from __future__ import annotations

VERSION = "0.5.10.post1"
#: a head's kind -> ``--speculative-algorithm`` (EAGLE-3 heads need their own; other chains run as EAGLE).
#: 0.5.10.post1's choices are EAGLE, EAGLE3, NEXTN, STANDALONE and NGRAM: P-EAGLE and DFlash have none.
ALGORITHMS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "EAGLE"}


def algorithm(kind: str) -> str | None:
    """``--speculative-algorithm`` for a head of ``kind``; None where SGLang has none (not expressible)."""
    return ALGORITHMS.get(kind)


def tree_flags(depth: int, topk: int, budget: int, *, algorithm: str | None = None) -> str:
    """A top-k tree: steps = depth, top-k, draft tokens = budget + 1 (the root); ``algorithm`` first if given."""
    head = f"--speculative-algorithm {algorithm} " if algorithm else ""
    return (
        head
        + f"--speculative-num-steps {depth} --speculative-eagle-topk {topk} --speculative-num-draft-tokens {budget + 1}"
    )


def chain_flags(k: int, *, algorithm: str = "STANDALONE", draft: str | None = None) -> str:
    """One K for every batch (SGLang takes one draft length): a chain of K steps, top-1, K + 1 draft tokens."""
    if k <= 0:
        return "# speculation does not pay here: run without --speculative-algorithm"
    flags = f"--speculative-algorithm {algorithm}"
    if draft:
        flags += f" --speculative-draft-model-path {draft}"
    return flags + " " + tree_flags(k, 1, k)

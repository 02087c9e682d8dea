"""SGLang's server flags: ``ServerArgs.add_cli_args`` (python/sglang/srt/server_args.py, SGLang 0.5.10.post1).

A chain of K is ``--speculative-num-steps K --speculative-eagle-topk 1 --speculative-num-draft-tokens
K + 1``; a top-k tree is steps = depth, top-k, draft tokens = budget + 1 (SGLang counts the root). A K by
batch is ``--speculative-adaptive`` with a config of tiers (sglang/srt/speculative/adaptive_spec_params.py,
SGLang 0.5.23, whose wheel on PyPI the tests read it from).
"""

from __future__ import annotations

from specviz.base.i18n import Message

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


ADAPTIVE_VERSION = "0.5.23"
#: ``adaptive_unsupported_reason`` (sglang/srt/speculative/adaptive_spec_params.py, 0.5.23): other algorithms
#: fall back to static settings with a warning
ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3")


def adaptive_config(tiers) -> dict:
    """``--speculative-adaptive-config``'s JSON for (from batch, K) tiers: batch lower bounds, one candidate
    each so SGLang's EMA cannot move (``_load_adaptive_config``, 0.5.23; a batch is padded to a CUDA graph's)."""
    out: dict[str, dict] = {}
    for start, k in sorted((int(s), int(k)) for s, k in tiers):
        if start < 1 or k < 0:
            raise Message("a tier must start at a batch >= 1 with K >= 0; got ({start}, {k})", start=start, k=k)
        out[str(start)] = {"candidate_steps": [k]}
    if "1" not in out:
        raise Message("the first tier must start at batch 1; got {tiers}", tiers=sorted(out, key=int))
    return out


def adaptive_flags(tiers, *, algorithm: str, config_path: str = "adaptive.json") -> str:
    """Flags for ``adaptive_config(tiers)`` at ``config_path``: EAGLE(3), top-1, a start K among the tiers'."""
    if algorithm not in ADAPTIVE_ALGORITHMS:
        raise Message(
            "not expressible in SGLang: its adaptive draft length runs only with {allowed}; got {algorithm}",
            allowed=" or ".join(ADAPTIVE_ALGORITHMS),
            algorithm=algorithm,
        )
    steps = [int(k) for _, k in sorted(tiers)]
    if not any(steps):
        return chain_flags(0)
    start = next(k for k in steps if k > 0)
    return (
        f"--speculative-algorithm {algorithm} --speculative-adaptive --speculative-adaptive-config {config_path} "
        + tree_flags(start, 1, start)
    )

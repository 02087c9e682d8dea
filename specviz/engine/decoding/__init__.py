"""Target-only and speculative generation with per-round records and timings.

A round: :func:`draft_step` → :func:`target_probs` (one forward over K + 1) → :func:`verify_step`
(:func:`specviz.engine.sampling.verify`, the lab's rule) → :func:`commit_step`, timed by :func:`_round`.
Cache invariant (batch 1): both caches hold ``seq[:-1]``; the last token is pending. Stale entries
past the accepted prefix are overwritten next round; after an all-accepted round the draft is fed
its last draft with the pending token.
"""

from specviz.engine.decoding.batch import generate_target_only_batch, speculative_generate_batch
from specviz.engine.decoding.chain import (
    Cursor,
    Draft,
    Verdict,
    commit_step,
    draft_step,
    policy_draft,
    speculative_generate,
    target_probs,
    verify_step,
)
from specviz.engine.decoding.divergence import Divergence, first_divergence
from specviz.engine.decoding.records import (
    GenerationStats,
    RoundRecord,
    Sampler,
    check_inputs,
    generate_target_only,
    next_token,
    probabilities,
)
from specviz.engine.decoding.records import (
    _Clock as _Clock,  # the engine benchmarks and the GPU tier time with it
)
from specviz.engine.decoding.traces import greedy_trace, sampled_trace
from specviz.engine.decoding.tree import draft_tree, tree_generate, verify_tree

__all__ = [
    "Cursor",
    "Divergence",
    "Draft",
    "GenerationStats",
    "RoundRecord",
    "Sampler",
    "Verdict",
    "check_inputs",
    "commit_step",
    "draft_step",
    "draft_tree",
    "first_divergence",
    "generate_target_only",
    "generate_target_only_batch",
    "greedy_trace",
    "next_token",
    "policy_draft",
    "probabilities",
    "sampled_trace",
    "speculative_generate",
    "speculative_generate_batch",
    "target_probs",
    "tree_generate",
    "verify_step",
    "verify_tree",
]

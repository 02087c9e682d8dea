"""Target-only and speculative generation with per-round records and timings.

Both loops drive any :class:`specviz.engine.models.Decodable` (the bundled GPT, the Hugging
Face adapter) through its cache (written by absolute position) and time only the
decoding loop, synchronising CUDA around every timed region (:class:`_Clock`). A
speculative round is four named steps: :func:`draft_step` (a :class:`Draft` of K
tokens), :func:`target_probs` (one target forward over K + 1 positions),
:func:`verify_step` (:func:`specviz.engine.sampling.verify` — the same rule the lab
simulates — giving a :class:`Verdict`) and :func:`commit_step` (the next
:class:`Cursor`); :func:`_round` times them into a :class:`RoundRecord`.

Cache invariant (batch 1): ``seq`` holds every token so far; both caches hold
valid keys/values for ``seq[:-1]``; the last token is *pending* — fed at the
start of the next forward. After a round that accepted ``a`` of K drafts the
target cache is valid up to the accepted prefix and its stale tail is simply
overwritten next round; the draft cache additionally lacks the last draft when
all K were accepted, so that draft is fed together with the pending token.

One module per job: :mod:`.records` (what a run measured; the target-only baseline), :mod:`.chain`
(the speculative round and loop), :mod:`.traces`, :mod:`.tree`, :mod:`.batch`, :mod:`.divergence`.
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

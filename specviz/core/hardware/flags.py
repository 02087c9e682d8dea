"""Engine flags from K*: vLLM's speculative config and llama-server's draft flags."""

from __future__ import annotations

from specviz.base.i18n import Phrase
from specviz.core.hardware.catalog import model_spec
from specviz.core.hardware.sweeps import batch_schedule, speedup_by_batch


def vllm_speculative_config(target, draft, gpu, alpha, context, batches, k_max=8, *, draft_name=None, **kw) -> dict:
    """vLLM's ``--speculative-config``: a draft model whose K depends on the batch size.

    ``num_speculative_tokens_per_batch_size`` is ``[[start_bs, end_bs, K], …]`` from K*(B) at
    ``context`` (K = 0: no speculation in that range); ``num_speculative_tokens`` is the largest K.
    """
    frame = speedup_by_batch(target, draft, gpu, alpha, batches, [context], k_max, **kw)
    schedule = batch_schedule(frame["batch"], frame["k_star"])
    name = draft_name or (draft if isinstance(draft, str) else model_spec(draft).get("name", "draft"))
    return {
        "method": "draft_model",
        "model": name,
        "num_speculative_tokens": max(1, max(k for _, _, k in schedule)),
        "num_speculative_tokens_per_batch_size": schedule,
    }


def llama_cpp_flags(target, draft, gpu, alpha, context, k_max=16, **kw) -> str:
    """llama-server's draft flags for one sequence: ``--draft-max`` K*(B = 1), ``--draft-min`` 0."""
    k = int(speedup_by_batch(target, draft, gpu, alpha, [1], [context], k_max, **kw)["k_star"].iloc[0])
    if k == 0:
        return Phrase("# speculation does not pay here: run without --model-draft")
    return f"--draft-max {k} --draft-min 0"

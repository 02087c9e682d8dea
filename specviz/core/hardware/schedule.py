"""A pair's K*(B) turned into a serving stack's settings through :mod:`specviz.core.configs`."""

from __future__ import annotations

from specviz.core import configs
from specviz.core.hardware.catalog import model_spec
from specviz.core.hardware.sweeps import k_schedule


def vllm_speculative_config(target, draft, gpu, alpha, context, batches, k_max=8, *, draft_name=None, **kw) -> dict:
    """vLLM's ``--speculative-config`` for a draft model whose K is K*(B) at ``context``
    (:func:`specviz.core.configs.vllm.speculative_config`)."""
    name = draft_name or (draft if isinstance(draft, str) else draft.get("name") or model_spec(draft).get("name"))
    return configs.vllm.speculative_config(
        k_schedule(target, draft, gpu, alpha, context, batches, k_max, **kw), model=name
    )


def llama_cpp_flags(target, draft, gpu, alpha, context, k_max=16, **kw) -> str:
    """llama-server's draft flags for one sequence at K*(B = 1) (:mod:`specviz.core.configs.llamacpp`)."""
    k = int(k_schedule(target, draft, gpu, alpha, context, [1], k_max, **kw)["k"].iloc[0])
    return configs.llamacpp.draft_flags(k) if k > 0 else configs.llamacpp.no_draft()

"""Hugging Face transformers' assisted generation: ``GenerationConfig`` fields and ``generate()`` keywords
(src/transformers/generation/configuration_utils.py, transformers 5.24.0).

Fixed K: ``num_assistant_tokens`` K, schedule "constant", ``assistant_confidence_threshold`` 0, set on the
assistant's own ``generation_config`` (AssistedCandidateGenerator copies it); n-gram: ``prompt_lookup_num_tokens``.
"""

from __future__ import annotations

SCHEDULES = ("constant", "heuristic", "heuristic_transient")  #: ``num_assistant_tokens_schedule``'s values


def assistant_config(k: int, schedule: str = "constant", confidence: float = 0.0) -> dict:
    """The assistant's ``generation_config`` for K drafts a round ("constant" and ``confidence`` 0: exactly K)."""
    if int(k) < 1:
        raise ValueError(f"k must be an integer ≥ 1; got {k!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}; got {schedule!r}")
    return {
        "num_assistant_tokens": int(k),
        "num_assistant_tokens_schedule": schedule,
        "assistant_confidence_threshold": float(confidence),
    }


def generate_kwargs(draft=None, *, ngram_k: int | None = None) -> dict:
    """``generate()`` keywords: the draft model as ``assistant_model``, or n-gram lookup of ``ngram_k`` tokens."""
    if (draft is None) == (ngram_k is None):
        raise ValueError("give exactly one of draft and ngram_k")
    return {"assistant_model": draft} if draft is not None else {"prompt_lookup_num_tokens": int(ngram_k)}

"""TensorRT-LLM's ``speculative_config`` YAML for ``trtllm-serve --extra_llm_api_options``.

``DecodingBaseConfig`` (tensorrt_llm/llmapi/llm_args.py, NVIDIA/TensorRT-LLM 0004396720054fd8e205cbf616f21f0b57c6b412)
and ``get_draft_len_for_batch_size`` (tensorrt_llm/_torch/speculative/utils.py, 011d0933dcb5e592f5fa2626beaf42a96324c578):
a batch b drafts the K of the smallest key ≥ b, 0 above the largest; the smallest key's K is ``max_draft_len``,
none above it, no ``max_concurrency`` beside it. ``decoding_type: DraftTarget`` as NVIDIA's examples write it.
"""

from __future__ import annotations

from specviz.base.i18n import Message
from specviz.core.configs.vllm import batch_ranges


def draft_len_schedule(schedule) -> dict[int, int] | None:
    """``draft_len_schedule`` for K by running batch (columns ``batch``, from 1, and ``k``): one ceiling key per
    run of equal K, so every batch 1 … max(batch) drafts ``schedule``'s K and larger ones 0. None where K = 0
    everywhere; Message where batch 1's K is 0 or below a later K (its smallest key drafts ``max_draft_len``)."""
    ranges = batch_ranges(schedule["batch"], schedule["k"])  # [[first, last, K], …] over 1 … max(batch)
    k1 = ranges[0][2]
    if all(k == 0 for _, _, k in ranges):
        return None
    for first, _, k in ranges:
        if k > k1:
            raise Message(
                "not expressible in TensorRT-LLM: its draft_len_schedule drafts the most at batch 1 "
                "(max_draft_len, at least 1), but this schedule has K = {k} at batch {batch}, above K = {k1} at batch 1",
                k=k,
                batch=first,
                k1=k1,
            )
    if ranges[-1][2] == 0:
        ranges = ranges[:-1]
    return {int(last): int(k) for _, last, k in ranges}


def speculative_config(schedule, *, decoding_type: str = "DraftTarget", model: str | None = None) -> dict | None:
    """The config for K by running batch (``schedule``: columns ``batch``, ``k``; see :func:`draft_len_schedule`,
    whose :class:`Message` it raises); None where K = 0 at every batch."""
    lengths = draft_len_schedule(schedule)
    if lengths is None:
        return None
    config: dict = {"decoding_type": decoding_type, "max_draft_len": next(iter(lengths.values()))}
    if model:
        config["speculative_model"] = model
    config["draft_len_schedule"] = lengths
    return config


def extra_options_yaml(config: dict | None) -> str:
    """``config`` as the YAML of ``--extra_llm_api_options`` (a ``speculative_config`` key)."""
    import yaml

    if config is None:
        return "# speculation does not pay at any batch: leave speculative_config out\n"
    body = yaml.safe_dump({"speculative_config": config}, sort_keys=False)
    if "speculative_model" not in config:  # a draft given as a config.json has no id: the user names it
        return "# add speculative_model: the draft model's path or Hugging Face id (DraftTarget needs one)\n" + body
    return body

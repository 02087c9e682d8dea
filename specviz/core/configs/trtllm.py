"""TensorRT-LLM's ``speculative_config`` YAML for ``trtllm-serve --extra_llm_api_options``: ``DecodingBaseConfig``
(tensorrt_llm/llmapi/llm_args.py at IzzyPutterman/TensorRT-LLM 12bd5aaf, a fork with ``draft_len_schedule``).

``max_draft_len``: K at batch 1; ``draft_len_schedule`` {threshold ≥ 1: K}: a batch ≥ a threshold takes its K
(0: off; key 1 → ``max_draft_len``, no K above it; it excludes ``max_concurrency``, so 0 says off).
``decoding_type: DraftTarget`` as NVIDIA's trtllm-serve examples write it.
"""

from __future__ import annotations

import numpy as np


def speculative_config(schedule, *, decoding_type: str = "DraftTarget", model: str | None = None) -> dict | None:
    """The config for K by running batch (``schedule``: columns ``batch``, ``k``); None where batch 1 has K = 0."""
    batches, ks = np.asarray(schedule["batch"]), np.asarray(schedule["k"])
    order = np.argsort(batches, kind="stable")
    batches, ks = batches[order], ks[order]
    k1 = int(ks[0])
    if k1 <= 0:  # the schedule must start {1: max_draft_len}, max_draft_len >= 1
        return None
    ks = np.minimum(ks, k1)  # no batch may draft more than max_draft_len
    thresholds: dict[int, int] = {}
    for b, k in zip(batches, ks, strict=True):
        if not thresholds or k != list(thresholds.values())[-1]:
            thresholds[int(b)] = int(k)
    config: dict = {"decoding_type": decoding_type, "max_draft_len": k1}
    if model:
        config["speculative_model"] = model
    config["draft_len_schedule"] = thresholds
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

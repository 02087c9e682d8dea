"""What a batch schedule's K = 0 tier costs in each serving stack, and what switching speculation back on costs,
as each stack's source does it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specviz.base.i18n import N_


@dataclass(frozen=True)
class Switching:
    """One stack's handling of K = 0 inside a schedule: while off, back on (msgids), and where that was read."""

    while_off: str
    back_on: str
    source: str


SWITCHING = {
    "vLLM": Switching(
        N_(
            "At K = 0 vLLM still runs the draft over each step's tokens to keep its KV cache in step (about one draft forward per step), so the K = 0 tier costs a little more than no speculation."
        ),
        N_("Switching back on needs no catch-up: the first step at K > 0 proposes the drafts the next one verifies."),
        "vLLM 0.34.0 vllm/v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py _prefill "
        "('this pass only keeps the drafter KV in sync'); standalone_ar/speculator.py propose",
    ),
    "SGLang": Switching(
        N_(
            "At 0 steps SGLang verifies one token (a plain decode) and still runs the draft extend, keeping the draft's KV cache warm (unless SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND is set)."
        ),
        N_("Switching back on costs nothing: drafting resumes on the same step."),
        "sglang 0.5.23 sglang/srt/speculative/eagle_worker_v2.py forward_batch_generation "
        "('_draft_extend below still runs, keeping draft KV warm')",
    ),
    "TensorRT-LLM": Switching(
        N_("At K = 0 TensorRT-LLM runs no draft forward."),
        N_(
            "When K returns, the draft's KV cache lacks every token made while it was off and nothing fills it in: acceptance stays low for the rest of each request that crossed the threshold. Keep K >= 1 in the schedule, or the batch below the threshold."
        ),
        "NVIDIA/TensorRT-LLM 0004396 tensorrt_llm/llmapi/llm_args.py draft_len_schedule ('speculation disabled'); "
        "_torch/speculative/eagle3.py skip_drafting; PR #16888 ('acceptance rate silently collapsed')",
    ),
}


WARM_AT_ZERO = ("vLLM", "SGLang")  #: stacks whose K = 0 tier still runs a draft forward per step (above)


def switches_off(ks: Sequence[int]) -> bool:
    """Whether a schedule's draft lengths turn speculation off at some batch and on at another."""
    return 0 in ks and any(k > 0 for k in ks)

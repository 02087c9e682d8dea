"""The memory plan of a speculative setup: weights, both KV caches and the verify slots against the GPU."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.core import hardware

L8, EAGLE3, L1 = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "meta-llama/Llama-3.2-1B-Instruct",
)
V3, MTP = "deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-MTP"
H100 = "H100-SXM5-80GB"


def test_worked_example_llama_8b_with_its_eagle3_head():
    """B = 32, L = 4096, K = 4, bf16: target KV 2·32 layers·8 KV heads·128·2 B = 131,072 B per token over
    4096 + 4 + 1 slots; the head's one layer 4,096 B per token over 4096 + 4 slots."""
    p = hardware.memory_plan(L8, EAGLE3, H100, 32, 4096, 4)
    assert p.kv_target == 32 * 4101 * 131_072
    assert p.kv_draft == 32 * 4100 * 4_096
    assert p.usable == 80e9 * hardware.USABLE_MEMORY
    assert p.target_weights == hardware.weight_bytes(L8, "bf16")
    assert p.fits and p.need == p.target_weights + p.draft_weights + p.kv_target + p.kv_draft
    assert 0.5e9 < p.draft_weights < 1.0e9  # one layer, fusion 3h → h and a 32k LM head, not the target's 8B


def test_deepseek_v3_mtp_module_counts_its_own_parameters_only():
    """README_WEIGHTS.md (github:deepseek-ai/DeepSeek-V3@0b39205aed0d4b1f9a2798e8551e4059c8f94b0c): the MTP module
    has 11.5B unique parameters, excluding the shared 0.9B embedding and 0.9B output head; fp8 = 1 byte each."""
    p = hardware.memory_plan(V3, MTP, "H200-SXM-141GB", 1, 1024, 1, dtype="fp8", tp_target=8)
    assert p.draft_weights * 8 == pytest.approx(11.5e9, rel=0.02)


def test_ngram_lookup_adds_only_the_verify_slots():
    p = hardware.memory_plan(L8, hardware.NGRAM, H100, 8, 2048, 3)
    assert (p.draft_weights, p.kv_draft) == (0.0, 0.0)
    assert p.kv_target == 8 * (2048 + 4) * 131_072


def test_without_speculation_the_plan_is_the_targets_alone():
    p = hardware.memory_plan(L8, None, H100, 8, 2048, 5)
    assert p.need == p.target_weights + 8 * 2048 * 131_072
    assert p.max_batch == p.max_batch_plain == hardware.max_batch(L8, H100, 2048)


def test_weights_that_do_not_fit_leave_no_batch():
    p = hardware.memory_plan(V3, MTP, H100, 1, 1024, 1, dtype="fp8", tp_target=1)
    assert not p.fits and p.max_batch == 0 and p.max_batch_plain == 0


@settings(max_examples=40, deadline=None)
@given(
    draft=st.sampled_from([EAGLE3, L1, hardware.NGRAM]),
    context=st.integers(1, 131_072),
    k=st.integers(1, 8),
    tp=st.sampled_from([1, 2, 8]),
)
def test_max_batch_is_the_largest_batch_that_fits(draft, context, k, tp):
    """max_batch fits and one more does not; speculation never fits more sequences than the target alone."""
    p = hardware.memory_plan(L8, draft, H100, 1, context, k, tp_target=tp)
    if p.max_batch:
        assert hardware.memory_plan(L8, draft, H100, p.max_batch, context, k, tp_target=tp).fits
    assert not hardware.memory_plan(L8, draft, H100, p.max_batch + 1, context, k, tp_target=tp).fits
    assert p.max_batch <= p.max_batch_plain

"""Head drafts from their config.json (SpecForge's configs, tests/fixtures/hf_configs): the kind, the sizes, a
round priced with them, the memory they take, the engines' flags, and refusals by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from specviz.core import configs, heads
from specviz.core import hardware as hw

CONFIGS = Path(__file__).parents[1] / "fixtures" / "hf_configs"
H200 = "H200-SXM-141GB"


def text(name: str) -> str:
    return (CONFIGS / f"{name}.json").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def qwen3_8b():
    return hw.from_hf_config(text("Qwen__Qwen3-8B"), name="Qwen/Qwen3-8B")


@pytest.mark.parametrize(
    ("name", "kind", "layers", "fc_in", "vocab"),
    [
        ("sgl-project__SpecForge-qwen3-8b-eagle3", "eagle3", 1, 3, 32000),
        ("sgl-project__SpecForge-qwen3-8b-peagle", "peagle", 4, 3, 32000),
        ("sgl-project__SpecForge-qwen3-8b-dflash", "dflash", 5, 5, None),  # 5 target layers fused: target_layer_ids
    ],
)
def test_a_heads_kind_and_sizes_come_from_its_config(qwen3_8b, name, kind, layers, fc_in, vocab):
    head = hw.head_from_config(text(name), qwen3_8b, name=name)
    assert (head["kind"], head["n_layers"], head["fc_in"], head["draft_vocab"]) == (kind, layers, fc_in, vocab)
    assert head["target"] == "Qwen/Qwen3-8B" and heads.is_head(head) and heads.head_spec(head) == head
    heads.check_target(head, "Qwen/Qwen3-8B")
    with pytest.raises(ValueError, match="trained for Qwen/Qwen3-8B"):
        heads.check_target(head, "meta-llama/Llama-3.1-8B-Instruct")


def test_one_pass_drafters_draft_k_positions_in_one_forward(qwen3_8b):
    eagle3 = hw.head_from_config(text("sgl-project__SpecForge-qwen3-8b-eagle3"), qwen3_8b)
    peagle = hw.head_from_config(text("sgl-project__SpecForge-qwen3-8b-peagle"), qwen3_8b)
    dflash = hw.head_from_config(text("sgl-project__SpecForge-qwen3-8b-dflash"), qwen3_8b)
    for k in (3, 7):
        seq = hw.pair_costs(qwen3_8b, eagle3, H200, 1, 2048, k)
        assert float(seq["draft_steps"]) == k  # EAGLE-3: K forwards of one position
        for head, positions in ((peagle, k), (dflash, k + 1)):
            one = hw.pair_costs(qwen3_8b, head, H200, 1, 2048, k)
            assert float(one["draft_steps"]) == 1
            model = heads.draft_model(head, qwen3_8b)
            expected = hw.step_time(model, H200, 1, 2048, positions) + hw.efficiency_for(H200).draft_overhead_s
            assert float(one["t_draft"]) == pytest.approx(expected)


def test_a_mtp_head_is_a_full_attention_block_of_a_hybrid_target():
    target = hw.from_hf_config(text("Qwen__Qwen3.5-122B-A10B"), name="Qwen/Qwen3.5-122B-A10B")
    mtp = hw.head_from_config(text("sgl-project__SpecForge-qwen3.5-122b-a10b-mtp"), target)
    block = heads.draft_model(mtp, target)
    assert (mtp["kind"], block["n_layers"], block["linear_layers"], block["n_experts"]) == ("mtp", 1, 0, 256)
    plan = hw.memory_plan(target, mtp, H200, 8, 4096, 3, tp_target=4)
    assert 0 < plan.draft_weights < plan.target_weights / 20  # one MoE block of 48


def test_engines_take_the_new_kinds_or_say_they_cannot():
    config = {"method": "eagle3", "num_speculative_tokens": 5}
    assert configs.vllm.with_head(config, "peagle")["parallel_drafting"] is True
    assert configs.vllm.with_head(config, "dflash")["method"] == "dflash"
    assert configs.sglang.algorithm("peagle") is None and configs.sglang.algorithm("dflash") is None


def test_what_is_not_a_priced_head_is_refused_by_name(qwen3_8b):
    with pytest.raises(ValueError, match="'DSparkDraftModel' is not a head specviz prices"):
        hw.head_from_config(text("sgl-project__SpecForge-qwen3-8b-dspark"), qwen3_8b)
    with pytest.raises(ValueError, match="hidden size 2048 differs from its target's 4096"):
        hw.head_from_config(text("sgl-project__SpecForge-qwen3.5-35b-a3b-eagle3"), qwen3_8b)
    assert not hw.is_head_config(text("Qwen__Qwen3-8B"))

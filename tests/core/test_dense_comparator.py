"""The dense comparator of an MoE model: same attention and layers, one MLP as wide as the active experts."""

from __future__ import annotations

import pytest

from specviz.core import hardware as hw

MOE = [
    "deepseek-ai/DeepSeek-V3",
    "Qwen/Qwen3-30B-A3B",
    "mistralai/Mixtral-8x7B-v0.1",
    "openai/gpt-oss-20b",
    "meta-llama/Llama-4-Maverick-17B-128E",
]


@pytest.mark.parametrize("name", MOE)
def test_its_parameters_are_the_moe_models_active_ones(name):
    dense, moe = hw.dense_comparator(name), hw.model_spec(name)
    assert dense["n_experts"] == 0 and hw.active_parameter_count(dense) == hw.parameter_count(dense)
    tolerance = 3 * moe["hidden_size"] * moe["n_layers"] / 2  # the width is rounded to an integer
    assert abs(hw.parameter_count(dense) - hw.active_parameter_count(name)) <= tolerance
    assert hw.parameter_count(dense) < hw.parameter_count(name) / 2
    kept = ("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim", "vocab_size", "kv_lora_rank")
    assert {f: dense[f] for f in kept} == {f: moe[f] for f in kept}
    assert hw.kv_bytes_per_token(dense) == hw.kv_bytes_per_token(name)  # the same attention and cache


def test_deepseek_v3s_comparator_is_about_37b_and_a_dense_model_is_itself():
    dense = hw.dense_comparator("deepseek-ai/DeepSeek-V3")
    assert 37e9 < hw.parameter_count(dense) < 38e9  # the model card's "37B activated"
    assert "37.6B" in dense["name"]
    assert hw.dense_comparator("meta-llama/Llama-3.1-8B-Instruct") == hw.model_spec("meta-llama/Llama-3.1-8B-Instruct")


def test_the_dense_comparators_verify_step_costs_less_than_the_moe_ones_at_batch_1():
    """Verifying 5 tokens reads ≈ 37.5 of V3's 256 experts where a decode step reads 8: v is far larger."""
    moe = hw.pair_costs("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-MTP", "H100-SXM5-80GB", 1, 2048, 4)
    dense = hw.pair_costs(
        hw.dense_comparator("deepseek-ai/DeepSeek-V3"), "deepseek-ai/DeepSeek-V3-MTP", "H100-SXM5-80GB", 1, 2048, 4
    )
    assert float(moe["v"]) > 5 * float(dense["v"])

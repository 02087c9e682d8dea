"""Mixture-of-experts and latent-attention pricing (specviz.core.moe, specviz.core.hardware).

The distinct-experts formula at its limits and against a Monte-Carlo of top-k routing (tolerance from
the sample size), with a measured load; the layer rule; an MoE spec's parameter and byte counts
against hand computations; verification reading more experts than a decode step.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specviz.core import hardware as hw
from specviz.core import moe


@given(e=st.integers(1, 512), data=st.data())
def test_one_token_reads_k_experts_and_many_tokens_read_them_all(e, data):
    k = data.draw(st.integers(1, e))
    assert moe.experts_touched(e, k, 1) == pytest.approx(k)
    assert moe.experts_touched(e, k, 0) == 0
    assert moe.experts_touched(e, k, 10**7) == pytest.approx(e)
    m = np.arange(1, 50)
    touched = moe.experts_touched(e, k, m)
    assert np.all(np.diff(touched) >= -1e-9) and np.all(touched <= np.minimum(e, k * m) + 1e-9)


def test_deepseek_v3_routing_by_hand():
    """E = 256, k = 8: one token reads 8 experts, five tokens (K = 4 verified at B = 1) about 37.6."""
    assert moe.experts_touched(256, 8, 5) == pytest.approx(256 * (1 - (1 - 8 / 256) ** 5))
    assert moe.experts_touched(256, 8, 5) == pytest.approx(37.58, abs=0.01)


@pytest.mark.slow
@pytest.mark.parametrize(("e", "k", "m"), [(8, 2, 3), (64, 6, 5), (256, 8, 17), (128, 4, 64)])
def test_the_mean_matches_a_monte_carlo_of_top_k_routing(e, k, m):
    """Each token picks k distinct experts uniformly; the mean count of distinct experts over n trials
    is within 5 standard errors of the formula."""
    rng = np.random.default_rng(0)
    n = 4000
    counts = np.empty(n)
    for i in range(n):
        picks = np.argsort(rng.random((m, e)), axis=1)[:, :k]  # (m, k) distinct experts per token
        counts[i] = np.unique(picks).size
    se = counts.std(ddof=1) / np.sqrt(n)
    assert abs(counts.mean() - moe.experts_touched(e, k, m)) < 5 * se + 1e-9


def test_a_measured_load_reads_fewer_experts_than_uniform_routing():
    e, k = 64, 4
    uniform = np.full(e, 1 / e)
    assert moe.experts_touched(e, k, 7, load=uniform) == pytest.approx(moe.experts_touched(e, k, 7))
    skewed = np.arange(1, e + 1, dtype=float) ** -1.0
    skewed /= skewed.sum()
    assert moe.experts_touched(e, k, 7, load=skewed) < moe.experts_touched(e, k, 7)
    with pytest.raises(ValueError, match="load must be 64 non-negative fractions summing to 1"):
        moe.experts_touched(e, k, 7, load=np.full(e, 0.5))
    with pytest.raises(ValueError, match="top-k must be an integer from 1 to the number of experts"):
        moe.experts_touched(8, 9, 1)


def test_which_layers_are_moe():
    assert moe.moe_layers(61, dense_layers=3) == 58  # DeepSeek-V3: first_k_dense_replace = 3
    assert moe.moe_layers(48, every=2) == 24  # Llama-4 Maverick: every other layer
    assert moe.moe_layers(32) == 32


#: A small MoE with latent attention, sized by hand (not a published model).
TOY = {
    "name": "toy-moe",
    "n_layers": 4,
    "hidden_size": 64,
    "n_heads": 4,
    "n_kv_heads": 4,
    "head_dim": 24,
    "intermediate_size": 256,
    "vocab_size": 1000,
    "tied_embeddings": 0,
    "mlp": "gated",
    "n_experts": 16,
    "experts_per_token": 2,
    "expert_size": 32,
    "n_shared_experts": 1,
    "dense_layers": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 0,
    "rope_head_dim": 8,
    "nope_head_dim": 16,
    "v_head_dim": 16,
}


def test_parameters_of_an_moe_model_with_latent_attention_by_hand():
    d, h = 64, 4
    attn = d * h * (16 + 8) + d * (16 + 8) + 16 + 16 * h * (16 + 16) + h * 16 * d  # q, kv_a, kv norm, kv_b, o
    dense_mlp = 3 * d * 256
    moe_mlp = 3 * d * (16 * 32 + 1 * 32) + d * 16  # routed, shared, router
    norms = 2 * d
    want = 4 * (attn + norms) + 1 * dense_mlp + 3 * moe_mlp + d + 2 * 1000 * d
    assert hw.parameter_count(TOY) == want
    assert hw.active_parameter_count(TOY) == want - 3 * 3 * d * 32 * (16 - 2)


def test_latent_attention_caches_the_latent_on_every_gpu():
    """kv_r + rope values per token and layer, whatever the tensor-parallel size."""
    assert hw.kv_bytes_per_token(TOY, "bf16") == 4 * (16 + 8) * 2
    assert hw.kv_bytes_per_token(TOY, "bf16", tp=4) == 4 * (16 + 8) * 2


def test_verifying_k_plus_one_tokens_reads_more_experts_than_a_decode_step():
    """MoE v at batch 1 exceeds a dense model's of the same shape: the verify step's MLP bytes grow
    with the distinct experts touched."""
    gpu = "H100-SXM5-80GB"
    dense = {k: v for k, v in TOY.items() if k not in hw.MOE_FIELDS} | {"name": "toy-dense", "intermediate_size": 64}
    one = hw.operator_costs(TOY, gpu, 1, 512, 1)["MLP"][1]
    five = hw.operator_costs(TOY, gpu, 1, 512, 5)["MLP"][1]
    d = 64
    expert = 3 * d * 32 * 2  # one routed expert's bytes in bf16
    more = 5 - 1  # tokens
    routed = 3 * expert * (moe.experts_touched(16, 2, 5) - moe.experts_touched(16, 2, 1))  # 3 MoE layers
    moe_activations = 3 * more * 2 * (2 * (3 * d + 3 * 32) + (3 * d + 3 * 32))  # k = 2 routed + 1 shared
    dense_activations = 1 * more * 2 * ((d + 2 * 256) + (256 + d))  # the dense first layer's up and down
    assert five - one == pytest.approx(routed + moe_activations + dense_activations, rel=1e-9)
    d_one, d_five = (hw.operator_costs(dense, gpu, 1, 512, n)["MLP"][1] for n in (1, 5))
    assert (five - one) / one > (d_five - d_one) / d_one


def test_an_moe_spec_is_checked():
    with pytest.raises(ValueError, match="needs experts_per_token from 1 to n_experts"):
        hw.model_spec(TOY | {"experts_per_token": 17})
    with pytest.raises(ValueError, match="latent attention .* needs rope_head_dim and v_head_dim"):
        hw.model_spec(TOY | {"rope_head_dim": 0})
    with pytest.raises(ValueError, match="expert_bits must be a number from 1 to 32"):
        hw.model_spec(TOY | {"expert_bits": 0.5})


#: Total parameters the MoE rows' sources state (data/catalog/models.csv, its source column).
STATED_TOTAL = {
    "deepseek-ai/DeepSeek-V3": 671e9,
    "moonshotai/Kimi-K2-Instruct": 1e12,
    "Qwen/Qwen3-30B-A3B": 30e9,
    "Qwen/Qwen3-235B-A22B": 235e9,
    "Qwen/Qwen1.5-MoE-A2.7B": 14.3e9,
    "mistralai/Mixtral-8x7B-v0.1": 47e9,
    "openai/gpt-oss-20b": 21e9,
    "openai/gpt-oss-120b": 117e9,
    "meta-llama/Llama-4-Scout-17B-16E": 109e9,
    "meta-llama/Llama-4-Maverick-17B-128E": 400e9,
    "allenai/OLMoE-1B-7B-0924": 6.9e9,
    "deepseek-ai/DeepSeek-V2-Lite": 16e9,
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": 480e9,
    "Qwen/Qwen3.5-35B-A3B": 35e9,
    "Qwen/Qwen3.5-122B-A10B": 122e9,
    "Qwen/Qwen3.5-397B-A17B": 397e9,
    "deepseek-ai/DeepSeek-R1": 671e9,
    "deepseek-ai/DeepSeek-V3.2": 685e9,  # with the 14B MTP module, which the count leaves out: within 3 %
    "zai-org/GLM-5": 744e9,
    "MiniMaxAI/MiniMax-M2.5": 230e9,
    "moonshotai/Kimi-K2.5": 1e12,
    "mistralai/Mixtral-8x22B-v0.1": 141e9,
}


@pytest.mark.parametrize("name", sorted(STATED_TOTAL))
def test_the_catalogue_moe_models_have_the_parameters_their_sources_state(name):
    spec = hw.model_spec(name)
    assert spec["n_experts"] > 0
    assert hw.parameter_count(spec) == pytest.approx(STATED_TOTAL[name], rel=0.03)
    assert spec["params"] == hw.parameter_count(spec)
    assert hw.active_parameter_count(spec) < 0.3 * hw.parameter_count(spec)


def test_deepseek_v3_latent_cache_by_hand():
    """61 layers × (kv_lora_rank 512 + rope 64) × 2 bytes in bf16, config_671B.json."""
    assert hw.kv_bytes_per_token("deepseek-ai/DeepSeek-V3", "bf16", tp=8) == 61 * (512 + 64) * 2


def test_an_moe_config_json_reads_like_the_catalogue():
    """from_hf_config on Mixtral-8x7B's config keys gives the catalogue row's counts."""
    cfg = {
        "architectures": ["MixtralForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 32000,
        "tie_word_embeddings": False,
        "max_position_embeddings": 32768,
    }
    spec = hw.from_hf_config(cfg, "mixtral")
    assert spec["params"] == hw.model_spec("mistralai/Mixtral-8x7B-v0.1")["params"]
    deepseek = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "num_hidden_layers": 61,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "moe_layer_freq": 1,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "vocab_size": 129280,
        "tie_word_embeddings": False,
    }
    assert hw.from_hf_config(deepseek, "v3")["params"] == hw.model_spec("deepseek-ai/DeepSeek-V3")["params"]

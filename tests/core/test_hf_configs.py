"""Real config.json files of 2024–2026 models (tests/fixtures/hf_configs, sources in its README) read generically:
sizes against the published counts, the layer mix, the cache each kind of layer holds, and refusals by key."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specviz.core import hardware as hw

CONFIGS = Path(__file__).parents[1] / "fixtures" / "hf_configs"
H200 = "H200-SXM-141GB"


def read(name: str) -> dict:
    return hw.from_hf_config((CONFIGS / f"{name}.json").read_text(encoding="utf-8"), name=name)


# (file, total B, active B, relative tolerance): the makers' published counts. The name's own sizes where the
# maker states no other (Qwen "35B-A3B": 35B total, 3B active; rounded, so a wider tolerance on active).
PUBLISHED = [
    ("Qwen__Qwen3-8B", 8.2, 8.2, 0.02),  # Qwen3 technical report (arXiv 2505.09388) Table 1: 8.2B
    ("Qwen__Qwen3-235B-A22B", 235, 22, 0.03),
    ("Qwen__Qwen3.5-27B", 27, 27, 0.04),
    ("Qwen__Qwen3.5-35B-A3B", 35, 3, 0.15),
    ("openai__gpt-oss-20b", 20.91, None, 0.01),  # gpt-oss model card (arXiv 2508.10925) Table 1
    ("openai__gpt-oss-120b", 116.83, None, 0.01),
    ("deepseek-ai__DeepSeek-V3", 671, 37, 0.03),  # DeepSeek-V3 report (arXiv 2412.19437) abstract
    ("mistralai__Mixtral-8x7B-v0.1", 46.7, 12.9, 0.01),  # https://mistral.ai/news/mixtral-of-experts
    ("meta-llama__Llama-4-Scout-17B-16E-Instruct", 109, 17, 0.02),  # Meta, "The Llama 4 herd" (2025-04-05)
    ("moonshotai__Kimi-K2.5", 1040, 32, 0.03),  # Kimi K2 report (arXiv 2507.20534): 1.04T total, 32B active
]


@pytest.mark.parametrize(("name", "total", "active", "tol"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_counts_match_the_published_ones(name, total, active, tol):
    spec = read(name)
    assert spec["params"] / 1e9 == pytest.approx(total, rel=tol)
    if active is not None:
        assert hw.active_parameter_count(spec) / 1e9 == pytest.approx(active, rel=tol)


def test_the_layer_mix_is_read_from_each_familys_keys():
    oss = read("openai__gpt-oss-20b")  # layer_types: sliding and full alternate, a 128-token window
    assert (oss["sliding_layers"], oss["sliding_window"], oss["linear_layers"]) == (12, 128, 0)
    qwen = read("Qwen__Qwen3.5-35B-A3B")  # text_config.layer_types: 3 Gated DeltaNet layers to 1 full
    assert (qwen["n_layers"], qwen["linear_layers"], qwen["sliding_layers"]) == (40, 30, 0)
    assert (qwen["linear_k_heads"], qwen["linear_v_heads"], qwen["linear_k_dim"], qwen["linear_v_dim"]) == (
        16,
        32,
        128,
        128,
    )
    scout = read("meta-llama__Llama-4-Scout-17B-16E-Instruct")  # chunked attention on 3 layers in 4
    assert (scout["sliding_layers"], scout["sliding_window"]) == (36, 8192)
    dsa = read("deepseek-ai__DeepSeek-V3.2")
    assert (dsa["sparse_topk"], dsa["index_heads"], dsa["index_head_dim"]) == (2048, 64, 128)
    assert read("Qwen__Qwen3-8B")["sliding_layers"] == 0  # sliding_window set, use_sliding_window false


def test_a_sliding_layer_caches_its_window_and_a_linear_layer_a_fixed_state():
    oss = read("openai__gpt-oss-20b")
    per_token = float(hw.kv_bytes_per_token(oss))
    assert float(hw.kv_cache_bytes(oss, 100)) == pytest.approx(100 * per_token)  # inside the window: every layer
    grows = float(hw.kv_cache_bytes(oss, 20_000) - hw.kv_cache_bytes(oss, 10_000))
    assert grows == pytest.approx(10_000 * per_token / 2)  # past it only the 12 full layers of 24 grow
    qwen = read("Qwen__Qwen3.5-35B-A3B")
    state = float(hw.kv_cache_bytes(qwen, 0))  # 30 layers × (32·128·128 + 3·(2·16·128 + 32·128)) values × 2 B
    assert state == pytest.approx(30 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2)
    assert float(hw.kv_bytes_per_token(qwen)) == 2 * 10 * 2 * 256 * 2  # 10 full layers, 2 KV heads of 256


def test_long_context_costs_follow_the_attention_kind():
    oss = read("openai__gpt-oss-20b")
    full = hw.model_spec(oss | {"sliding_layers": 0, "sliding_window": 0})
    long = dict(batch=1, context=100_000, tokens=1)
    assert hw.step_time(oss, H200, **long) < hw.step_time(full, H200, **long)
    assert hw.step_time(oss, H200, 1, 64, 1) == pytest.approx(hw.step_time(full, H200, 1, 64, 1))  # within W
    v32, v3 = read("deepseek-ai__DeepSeek-V3.2"), read("deepseek-ai__DeepSeek-V3")
    attention = {
        name: hw.operator_costs(m, H200, 1, 128_000, 1, tp=8)["attention"][1] for name, m in (("v32", v32), ("v3", v3))
    }
    # sparse: 2,048 latent rows and 132-byte indexer keys against 128k latent rows of 1,152 bytes
    assert attention["v32"] < attention["v3"] / 5


def test_verifying_on_linear_layers_writes_a_state_per_position():
    qwen = read("Qwen__Qwen3.5-27B")
    one, five = (hw.operator_costs(qwen, H200, 8, 0, n)["attention"][1] for n in (1, 5))
    assert five / one == pytest.approx(6 / 2, rel=0.01)  # read once, write n: (1 + 5) / (1 + 1); + 16 full layers


@pytest.mark.parametrize(
    ("name", "key"),
    [("nvidia__Nemotron-H-56B-Base-8K", "ssm_state_size"), ("deepseek-ai__DeepSeek-V4-Flash", "compress_ratios")],
)
def test_what_is_not_priced_is_refused_by_its_key(name, key):
    with pytest.raises(ValueError, match=key):
        read(name)


def test_an_unknown_layer_kind_is_named():
    config = json.loads((CONFIGS / "openai__gpt-oss-20b.json").read_text(encoding="utf-8"))
    config["layer_types"][3] = "mamba"
    with pytest.raises(ValueError, match=r"layer_types holds \['mamba'\]"):
        hw.from_hf_config(config)


def test_every_fixture_prices_or_refuses_in_words():
    for path in sorted(CONFIGS.glob("*.json")):
        try:
            spec = hw.from_hf_config(path.read_text(encoding="utf-8"), name=path.stem)
        except ValueError as exc:
            assert "config.json" in str(exc), (path.name, str(exc))
            continue
        t = hw.step_time(spec, H200, np.array([1, 8, 64]), 4096, 4, tp=8)
        assert np.all(np.isfinite(t)) and np.all(np.diff(t) >= 0), path.name

"""The roofline cost model (specviz.core.hardware): hand-computed cases, properties, catalogues, engine configs."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from _tiers import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from specviz.core import hardware as hw
from specviz.core import theory

SETTINGS = settings(max_examples=examples(100), deadline=None)
EXACT = hw.Efficiency(compute=1.0, memory=1.0, network=1.0, overhead_s=0.0, allreduce_latency_s=0.0)
MODELS, GPUS = hw.load_catalog()
PAIRS = hw.preset_pairs()


# ------------------------------------------------------------------------------------------
# catalogues
# ------------------------------------------------------------------------------------------


def test_catalogues_hold_the_models_gpus_and_pairs_the_page_offers():
    assert len(MODELS) >= 25 and len(GPUS) >= 8 and len(PAIRS) >= 8
    families = set(MODELS["family"])
    assert {"Llama-2", "Llama-3.1", "Llama-3.2", "Qwen2.5", "Mistral", "Vicuna", "TinyLlama", "GPT-2"} <= families
    assert {"specviz/bundled-target", "specviz/bundled-draft"} <= set(MODELS.index)
    for gpu in ("A100", "H100", "H200-SXM-141GB", "L4-24GB", "L40S", "4090", "MI300X"):
        assert any(gpu in name for name in GPUS.index), gpu
    assert MODELS["source"].notna().all() and GPUS["source"].notna().all() and PAIRS["source"].notna().all()
    for _, pair in PAIRS.iterrows():  # a pair shares a tokenizer, so its vocabularies match
        gap = abs(int(MODELS.loc[pair.target, "vocab_size"]) - int(MODELS.loc[pair.draft, "vocab_size"]))
        assert gap <= 128, pair["name"]  # Qwen2.5 pads its embedding to 152,064 from 7B up, 151,936 below


@pytest.mark.parametrize("name", list(MODELS.index))
def test_every_catalogue_model_has_the_parameters_its_architecture_implies(name):
    """The published parameter count agrees with the config fields (1.5 %: biases, rounding)."""
    assert hw.parameter_count(name) == pytest.approx(MODELS.loc[name, "params"], rel=0.015)


def test_datasheet_figures_the_hand_checks_rely_on():
    a100 = hw.gpu_spec("A100-SXM4-80GB")
    assert (a100["bandwidth_tbs"], a100["bf16_tflops"], a100["memory_gb"]) == (2.039, 312.0, 80.0)
    assert hw.weight_bytes("meta-llama/Llama-2-7b-hf", "fp16") == pytest.approx(13.5e9, rel=0.01)
    assert hw.kv_bytes_per_token("meta-llama/Llama-2-7b-hf", "fp16") == 2 * 32 * 32 * 128 * 2  # 0.5 MiB
    assert hw.kv_bytes_per_token("meta-llama/Llama-3.1-8B-Instruct", "bf16") == 128 * 1024  # GQA: 8 KV heads


# ------------------------------------------------------------------------------------------
# hand-computed step times
# ------------------------------------------------------------------------------------------


def test_llama2_7b_at_batch_1_streams_its_weights_once_per_step():
    """≈ 13.5 GB / 2.039 TB/s ≈ 6.6 ms on an A100-80GB: the weights, read once, dominate."""
    t = hw.step_time("meta-llama/Llama-2-7b-hf", "A100-SXM4-80GB", 1, 128, 1, dtype="fp16", efficiency=EXACT)
    assert t == pytest.approx(13.48e9 / 2.039e12, rel=0.02)
    verify = hw.step_time("meta-llama/Llama-2-7b-hf", "A100-SXM4-80GB", 1, 128, 5, dtype="fp16", efficiency=EXACT)
    assert verify / t == pytest.approx(1.0, abs=0.01)  # 5 tokens cost what 1 does
    with_overhead = hw.step_time("meta-llama/Llama-2-7b-hf", "A100-SXM4-80GB", 1, 128, 1, dtype="fp16")
    eff = hw.DEFAULT_EFFICIENCY
    assert with_overhead == pytest.approx(13.48e9 / (2.039e12 * eff.memory) + eff.overhead_s, rel=0.02)


def test_at_batch_256_the_linear_layers_are_compute_bound():
    table = hw.step_breakdown("meta-llama/Llama-2-7b-hf", "A100-SXM4-80GB", 256, 128, 1, dtype="fp16")
    bound = dict(zip(table["operator"], table["bound"], strict=True))
    assert bound["q/k/v/o projections"] == bound["MLP"] == "compute"
    assert bound["attention"] == "memory"  # the KV cache: intensity ~ 1 FLOP/byte whatever B
    small = hw.step_breakdown("meta-llama/Llama-2-7b-hf", "A100-SXM4-80GB", 1, 128, 1, dtype="fp16")
    assert set(small["bound"]) == {"memory", "network", "overhead"}
    intensity = dict(zip(table["operator"], table["intensity"], strict=True))
    assert intensity["MLP"] > hw.ridge_point("A100-SXM4-80GB", "fp16") > intensity["attention"]


def test_breakdown_sums_to_the_step_time():
    args = ("Qwen/Qwen2.5-7B-Instruct", "H100-SXM5-80GB", 16, 4096, 3)
    table = hw.step_breakdown(*args, tp=2)
    assert table["seconds"].sum() == pytest.approx(hw.step_time(*args, tp=2), rel=1e-9)
    assert table.loc[table.operator == "all-reduce", "seconds"].iloc[0] > 0


# ------------------------------------------------------------------------------------------
# properties
# ------------------------------------------------------------------------------------------

NAMES = sorted(set(PAIRS.target) | set(PAIRS.draft))


@SETTINGS
@given(
    model=st.sampled_from(NAMES),
    gpu=st.sampled_from(sorted(GPUS.index)),
    b=st.integers(1, 1024),
    ctx=st.integers(0, 131072),
    n=st.integers(1, 17),
)
def test_step_time_never_falls_as_batch_context_or_tokens_grow(model, gpu, b, ctx, n):
    t = hw.step_time(model, gpu, b, ctx, n)
    assert t > 0
    assert hw.step_time(model, gpu, b + 1, ctx, n) >= t
    assert hw.step_time(model, gpu, b, ctx + 1, n) >= t
    assert hw.step_time(model, gpu, b, ctx, n + 1) >= t


@SETTINGS
@given(model=st.sampled_from(NAMES), b=st.integers(1, 8), k=st.integers(1, 8))
def test_verifying_k_plus_1_tokens_costs_one_step_at_long_context(model, b, k):
    """The KV read does not grow with the tokens verified, so t_verify / t_target → 1 as L grows."""
    costs = hw.pair_costs(model, model, "H100-SXM5-80GB", b, np.array([1024, 16384, 1 << 20]), k)
    ratio = costs["t_verify"] / costs["t_target"]
    assert (np.diff(ratio) <= 1e-12).all() and ratio[-1] < 1.05


@SETTINGS
@given(model=st.sampled_from(NAMES), b=st.integers(1, 64), ctx=st.integers(0, 8192))
def test_tensor_parallel_2_halves_the_weight_streaming(model, b, ctx):
    assume(hw.model_spec(model)["n_kv_heads"] >= 2)  # one K/V head is replicated, not split
    one = hw.operator_costs(model, "H100-SXM5-80GB", b, ctx, 1, tp=1)
    two = hw.operator_costs(model, "H100-SXM5-80GB", b, ctx, 1, tp=2)
    for op in ("q/k/v/o projections", "MLP", "LM head"):
        assert float(two[op][1]) == pytest.approx(float(one[op][1]) / 2, rel=1e-12)  # bytes
        assert float(two[op][0]) == pytest.approx(float(one[op][0]) / 2, rel=1e-12)  # FLOPs


@SETTINGS
@given(alpha=st.floats(0.05, 0.95), pair=st.sampled_from(list(PAIRS["name"])))
def test_per_position_acceptance_equal_to_alpha_is_scalar_alpha(alpha, pair):
    row = PAIRS.set_index("name").loc[pair]
    args = (row.target, row.draft, "H100-SXM5-80GB")
    scalar = hw.speedup_by_batch(*args, alpha, [1, 32], [512, 8192], 8)
    vector = hw.speedup_by_batch(*args, [alpha] * 8, [1, 32], [512, 8192], 8)
    np.testing.assert_allclose(scalar.to_numpy(float), vector.to_numpy(float), rtol=1e-12)


def test_speedup_is_the_measured_cost_model_with_the_roofline_c_and_v():
    frame = hw.speedup_by_batch(
        "meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-7b-hf", "H100-SXM5-80GB", 0.8, [4], [2048], 6, tp_target=4
    )
    costs = hw.pair_costs(
        "meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-7b-hf", "H100-SXM5-80GB", 4, 2048, np.arange(1, 7), tp_target=4
    )
    want = theory.speedup(0.8, costs["c"], np.arange(1, 7), costs["v"])
    np.testing.assert_allclose(frame[[f"s_{k}" for k in range(1, 7)]].to_numpy()[0], want, rtol=1e-12)
    assert frame.k_star.iloc[0] == int(np.argmax(want)) + 1


def test_k_star_falls_from_batch_1_to_512_for_the_preset_pairs_with_billion_parameter_targets():
    """Bigger batches make the target's step compute-bound, so verifying K + 1 tokens costs more.

    Not for small targets (GPT-2 XL, the bundled pair): at B = 1 their steps, and their drafts'
    even more, are mostly the fixed per-step overhead, so c is small there and *grows* with B as
    the target's own work grows faster than the draft's; K* then rises with B. In between, K* of
    the large pairs is flat while both steps are weight-bound, falls as the target turns
    compute-bound, and can rise by one again near B = 512 where the draft (TinyLlama, 160M) turns
    compute-bound too and c grows back (Llama-2 13B + TinyLlama: 6 … 6, 4, 3, 3, 4).
    """
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    for _, pair in PAIRS.iterrows():
        frame = hw.speedup_by_batch(pair.target, pair.draft, "H100-SXM5-80GB", 0.8, batches, [512], 8)
        k, c = frame.k_star.to_numpy(), frame.c.to_numpy()
        if MODELS.loc[pair.target, "params"] >= 5e9:
            assert k[0] >= 1 and k[-1] < k[0], (pair["name"], k.tolist())
        else:
            assert c[-1] > c[0], (pair["name"], c.tolist())


# ------------------------------------------------------------------------------------------
# memory and engine configurations
# ------------------------------------------------------------------------------------------


def test_memory_fit_and_the_largest_batch_agree():
    assert not hw.fits("meta-llama/Llama-2-70b-hf", "A100-SXM4-80GB", 1, 4096)  # 138 GB of bf16 weights
    assert hw.fits("meta-llama/Llama-2-70b-hf", "A100-SXM4-80GB", 1, 4096, tp=2)
    for model, gpu, ctx in (
        ("meta-llama/Llama-3.1-8B-Instruct", "L4-24GB", 8192),
        ("Qwen/Qwen2.5-7B-Instruct", "H200-SXM-141GB", 32768),
    ):
        b = int(hw.max_batch(model, gpu, ctx))
        assert b > 0 and hw.fits(model, gpu, b, ctx) and not hw.fits(model, gpu, b + 1, ctx)
    assert hw.max_batch("meta-llama/Llama-3.1-405B-Instruct", "H100-SXM5-80GB", 4096) == 0


def test_kv_heads_fewer_than_gpus_are_replicated_in_memory_and_traffic():
    """Qwen2.5-7B has 4 KV heads: at TP 8 every GPU still holds one, not half of one."""
    model, gpu, ctx = "Qwen/Qwen2.5-7B-Instruct", "H100-SXM5-80GB", 32768
    full = hw.kv_bytes_per_token(model)
    assert hw.kv_bytes_per_token(model, tp=4) == full / 4 and hw.kv_bytes_per_token(model, tp=8) == full / 4
    for tp in (4, 8):
        b = int(hw.max_batch(model, gpu, ctx, tp=tp))
        assert hw.fits(model, gpu, b, ctx, tp=tp) and not hw.fits(model, gpu, b + 1, ctx, tp=tp)
    free = 80e9 * hw.USABLE_MEMORY - hw.weight_bytes(model) / 8
    assert hw.max_batch(model, gpu, ctx, tp=8) == int(free // (ctx * full / 4))
    kv = lambda tp: hw.operator_costs(model, gpu, 1, ctx, 1, tp=tp)["attention"][1]
    assert kv(8) == pytest.approx(kv(4), rel=0.01)  # the cache read per GPU stops shrinking at TP 4


def test_vllm_config_has_vllms_keys_and_ranges_that_cover_every_batch():
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    config = hw.vllm_speculative_config(
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "H100-SXM5-80GB",
        0.75,
        2048,
        batches,
        tp_target=4,
    )
    assert set(config) == {"method", "model", "num_speculative_tokens", "num_speculative_tokens_per_batch_size"}
    assert config["model"] == "meta-llama/Llama-3.2-1B-Instruct"
    ranges = config["num_speculative_tokens_per_batch_size"]
    assert ranges[0][0] == 1 and ranges[-1][1] == 512
    for (_, end, _), (start, _, _) in itertools.pairwise(ranges):
        assert start == end + 1  # no gap, no overlap
    assert config["num_speculative_tokens"] == max(k for *_, k in ranges) >= 1
    json.dumps(config)  # plain JSON types


def test_llama_cpp_flags_for_one_sequence():
    flags = hw.llama_cpp_flags(
        "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "RTX-4090-24GB", 0.8, 4096
    )
    k = flags.split()[1]
    assert flags == f"--spec-draft-n-max {k} --spec-draft-n-min {k} --spec-draft-p-min 0" and int(k) >= 1


# ------------------------------------------------------------------------------------------
# uploaded config.json and bad input
# ------------------------------------------------------------------------------------------


def test_a_llama_config_json_gives_the_catalogues_architecture():
    config = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
    }
    spec = hw.from_hf_config(json.dumps(config), name="mine")
    row = hw.model_spec("meta-llama/Llama-3.1-8B-Instruct")
    assert {f: spec[f] for f in hw.MODEL_FIELDS} == {f: row[f] for f in hw.MODEL_FIELDS}
    assert spec["params"] == pytest.approx(8.03e9, rel=0.01)
    assert hw.step_time(spec, "H100-SXM5-80GB", 1, 128, 1) == hw.step_time(
        "meta-llama/Llama-3.1-8B-Instruct", "H100-SXM5-80GB", 1, 128, 1
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"architectures": ["MambaForCausalLM"]}, "'MambaForCausalLM' has state-space or recurrent layers"),
        ({"architectures": ["MixtralForCausalLM"], "hidden_size": 8}, r"lacks \['num_hidden_layers or n_layer"),
        ({"architectures": ["LlamaForCausalLM"], "hidden_size": 8}, r"lacks \['num_hidden_layers or n_layer"),
        ({"architectures": ["T5ForConditionalGeneration"]}, "encoder-decoder"),
        ("{not json", "config.json is not valid JSON"),
    ],
)
def test_configs_we_cannot_model_say_what_is_missing(config, message):
    with pytest.raises(ValueError, match=message):
        hw.from_hf_config(config if isinstance(config, str) else json.dumps(config))


LLAMA_MINI = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 1000,
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": "4096"}, "config.json hidden_size must be an integer from 1 to 131,072; got '4096'"),
        ({"num_hidden_layers": 0}, "num_hidden_layers must be an integer from 1 to 1,024; got 0"),
        ({"num_attention_heads": True}, "num_attention_heads must be an integer from 1 to 1,024; got True"),
        ({"intermediate_size": 1e400}, "intermediate_size must be an integer from 1 to 1,048,576; got inf"),
        ({"vocab_size": 12.5}, "vocab_size must be an integer from 1 to 16,777,216; got 12.5"),
        ({"num_key_value_heads": [8]}, r"num_key_value_heads must be an integer from 1 to 1,024; got \[8\]"),
        (
            {"max_position_embeddings": "4k"},
            "max_position_embeddings must be an integer from 1 to 134,217,728; got '4k'",
        ),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings must be true or false; got 'no'"),
        ({"architectures": "LlamaForCausalLM"}, "architectures must be a list of names"),
        ({"architectures": [{"name": 1}]}, "architectures must be a list of names"),
    ],
)
def test_config_values_of_the_wrong_type_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        hw.from_hf_config(json.dumps(LLAMA_MINI | change))


def test_config_defaults_follow_each_architecture():
    llama = hw.from_hf_config(LLAMA_MINI)
    assert (llama["n_kv_heads"], llama["head_dim"], llama["tied_embeddings"]) == (4, 64, False)
    gemma = hw.from_hf_config(LLAMA_MINI | {"architectures": ["Gemma2ForCausalLM"]})
    assert gemma["tied_embeddings"] and gemma["params"] == llama["params"] - 1000 * 256
    bigcode = {"architectures": ["GPTBigCodeForCausalLM"], "n_embd": 256, "n_head": 4, "n_layer": 2, "vocab_size": 1000}
    assert hw.from_hf_config(bigcode)["n_kv_heads"] == 1  # multi_query defaults to true
    assert hw.from_hf_config(bigcode | {"multi_query": False})["n_kv_heads"] == 4
    assert hw.from_hf_config(bigcode)["intermediate_size"] == 1024


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: hw.step_time("nope/model", "H200-SXM-141GB", 1, 1, 1), "model 'nope/model' is not in the catalogue"),
        (
            lambda: hw.step_time("meta-llama/Llama-3.1-8B-Instruct", "H300", 1, 1, 1),
            "GPU 'H300' is not in the catalogue",
        ),
        (
            lambda: hw.step_time("meta-llama/Llama-3.1-8B-Instruct", "H200-SXM-141GB", 0, 1, 1),
            "batch must be an integer >= 1; got 0",
        ),
        (
            lambda: hw.step_time("meta-llama/Llama-3.1-8B-Instruct", "H200-SXM-141GB", 1, -5, 1),
            "context must be an integer >= 0; got -5",
        ),
        (
            lambda: hw.step_time("meta-llama/Llama-3.1-8B-Instruct", "H200-SXM-141GB", 1, 1, 1.5),
            "tokens must be an integer >= 1; got 1.5",
        ),
        (
            lambda: hw.step_time("meta-llama/Llama-3.1-8B-Instruct", "H200-SXM-141GB", 1, 1, 1, dtype="int3"),
            "dtype must be one of",
        ),
        (lambda: hw.step_time("meta-llama/Llama-3.1-8B-Instruct", "A100-SXM4-80GB", 1, 1, 1, dtype="fp8"), "no fp8"),
        (lambda: hw.Efficiency(memory=1.5), r"efficiency.memory must be in \(0, 1\]; got 1.5"),
        (
            lambda: hw.speedup_by_batch(
                "openai-community/gpt2", "openai-community/gpt2", "H200-SXM-141GB", 0.8, [1], [1], 0
            ),
            r"k_max must be an integer in \[1, 64\]",
        ),
    ],
)
def test_bad_input_names_the_field_the_value_and_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_alpha_from_measured_rows_mean_or_per_position():
    import pandas as pd

    frame = pd.DataFrame(
        {
            "k": [2, 4, 3],
            "alpha_used": [0.6, 0.8, np.nan],
            "per_position_acceptance": ["0.9;0.8", "0.9;nan;0.7;nan", ""],
        }
    )
    assert hw.alpha_from_measurements(frame) == pytest.approx(0.7)
    assert hw.alpha_from_measurements(frame, per_position=True) == [0.9, 0.9, 0.7, 0.7]
    with pytest.raises(ValueError, match="run 7 has no per-position acceptance"):
        hw.alpha_from_measurements(frame.assign(per_position_acceptance=""), True, "run 7")
    with pytest.raises(ValueError, match="run 7 has no measured rows"):
        hw.alpha_from_measurements(frame.iloc[:0], False, "run 7")


def test_a_scalar_draft_context_is_one_context_for_every_column():
    args = ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 0.7)
    scalar = hw.speedup_by_batch(*args, [1, 8], [4096], 4, draft_context=4096)
    listed = hw.speedup_by_batch(*args, [1, 8], [4096], 4, draft_context=[4096])
    pd.testing.assert_frame_equal(scalar, listed)


MINI = {
    "name": "mini",
    "n_layers": 2,
    "hidden_size": 256,
    "n_heads": 4,
    "n_kv_heads": 4,
    "head_dim": 64,
    "intermediate_size": 512,
    "vocab_size": 1000,
    "mlp": "gated",
    "tied_embeddings": False,
}


def test_weight_only_int4_reads_5_bits_a_weight_and_keeps_a_bf16_kv_cache():
    # gpt-fast's int4 (groups of 32, a bf16 scale and zero each): 4 + 32/32 bits per weight
    bf16 = hw.operator_costs(MINI, "H100-SXM5-80GB", 1, 0, 1, dtype="bf16")
    int4 = hw.operator_costs(MINI, "H100-SXM5-80GB", 1, 0, 1, dtype="int4")
    d, ffn = MINI["hidden_size"], MINI["intermediate_size"]
    layers, acts = MINI["n_layers"], (2 * d + 3 * ffn) * 2.0  # gate+up and down: inputs and outputs, bf16
    assert float(int4["MLP"][1]) == pytest.approx(layers * (3 * d * ffn * 0.625 + acts))
    assert float(bf16["MLP"][1]) == pytest.approx(layers * (3 * d * ffn * 2.0 + acts))
    assert hw.kv_bytes_per_token(MINI, "int4") == hw.kv_bytes_per_token(MINI, "bf16")

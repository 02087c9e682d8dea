"""Errors and notes of specviz.core.theory, specviz.core.hardware and specviz.app.grids in both languages.

Each case: the English text a person reads for one bad input (tests and the command line read it),
and the Chinese text is Chinese and quotes the same numbers and inputs.
"""

from __future__ import annotations

import pickle
import re

import pandas as pd
import pytest

from specviz.app import grids
from specviz.base import i18n
from specviz.core import hardware as hw
from specviz.core import theory

CJK = re.compile(r"[\u4e00-\u9fff]")
LLAMA_70B, LLAMA_1B, QWEN = (
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen2.5-0.5B-Instruct",
)
SPEC = hw.model_spec(LLAMA_70B)
CUSTOM_GPU = {"memory_gb": 1, "bandwidth_tbs": 1, "bf16_tflops": 1, "fp16_tflops": 1, "interconnect_gbs": 1}
LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10}

#: (call, the English text a person reads, pieces the Chinese text must quote too)
CASES = [
    (
        lambda: theory.check_alpha(1.5),
        "alpha must be in [0, 1]; got 1.5",
        ["alpha", "1.5"],
    ),
    (
        lambda: theory.check_alpha([0.1, 2], "acceptance"),
        "acceptance must be in [0, 1]; got 2.0 at index (1,)",
        ["acceptance", "2.0", "(1,)"],
    ),
    (
        lambda: theory.expected_tokens("x", 2),
        "alpha must be a number; got 'x'",
        ["'x'"],
    ),
    (
        lambda: theory.check_k(0),
        "k must be an integer in [1, 2147483647]; got 0.0",
        ["2147483647", "0.0"],
    ),
    (
        lambda: theory.expected_tokens(0.5, [1, 2.5]),
        "k must be an integer in [1, 2147483647]; got 2.5 at index (1,)",
        ["2.5", "(1,)"],
    ),
    (
        lambda: theory.speedup(0.5, 0, 2),
        "c must be a finite number > 0; got 0.0",
        ["c", "0.0"],
    ),
    (
        lambda: theory.check_positive([1, -1], "c"),
        "c must be a finite number > 0; got -1.0 at index (1,)",
        ["-1.0", "(1,)"],
    ),
    (
        lambda: theory.break_even_alpha(4, 8, v=-1),
        "v must be a finite number >= 0; got -1.0",
        ["-1.0"],
    ),
    (
        lambda: theory.speedup(0.5, 2, 3, o=[0, -2]),
        "o must be a finite number >= 0; got -2.0 at index (1,)",
        ["-2.0", "(1,)"],
    ),
    (
        lambda: theory.alpha_from_mean_tokens(7, 4),
        "mean_tokens must be in [1, K + 1]; got 7.0",
        ["mean_tokens", "[1, K + 1]", "7.0"],
    ),
    (
        lambda: theory.speedup_from_tokens([1, 7], 8, 4),
        "mean_tokens must be in [1, K + 1]; got 7.0 at index (1,)",
        ["7.0", "(1,)"],
    ),
    (
        lambda: theory.expected_tokens_by_position([]),
        "acceptance must list at least one position (shape (..., K_max)); got shape (0,)",
        ["(0,)", "K_max"],
    ),
    (
        lambda: theory.optimal_k(0.5, 2, k_max=[1, 2]),
        "k_max must be a single integer >= 1; got [1, 2]",
        ["k_max", "[1, 2]"],
    ),
    (
        lambda: theory.convert_metric(0.5, 4, "bogus"),
        "metric must be one of ['acceptance_rate', 'alpha', 'mean_tokens', 'mean_tokens_no_bonus', "
        "'system_efficiency']; got 'bogus'",
        ["'bogus'", "'system_efficiency'"],
    ),
    (
        lambda: theory.alpha_from_acceptance_rate(2, 3),
        "rate must be in [0, 1]; got 2.0",
        ["2.0"],
    ),
    (
        lambda: theory.c_from_leviathan(0),
        "c_L must be a finite number > 0; got 0.0",
        ["c_L"],
    ),
    (
        lambda: grids.to_c(2, "x"),
        "convention must be one of ['c', 'c_L']; got 'x'",
        ["'x'"],
    ),
    (
        lambda: grids.log_axis(0, 1, 5, "c"),
        "c min must be a finite number > 0; got 0.0",
        ["0.0"],
    ),
    (
        lambda: grids.log_axis(5, 1, 5, "c"),
        "c min must be below c max; got 5 and 1",
        ["5", "1"],
    ),
    (
        lambda: grids.lin_axis(0.5, 0.25, 5, "α"),
        "α min must be below α max; got 0.5 and 0.25",
        ["α", "0.5", "0.25"],
    ),
    (
        lambda: hw.Efficiency(compute=0),
        "efficiency.compute must be in (0, 1]; got 0",
        ["efficiency.compute", "0"],
    ),
    (
        lambda: hw.Efficiency(overhead_s=-1),
        "efficiency.overhead_s must be a finite number >= 0; got -1",
        ["-1"],
    ),
    (
        lambda: hw.model_spec("nope"),
        "model 'nope' is not in the catalogue; choose one of ['JackFram/llama-160m', 'JackFram/llama-68m', "
        "'Qwen/Qwen1.5-MoE-A2.7B', 'Qwen/Qwen2.5-0.5B-Instruct', 'Qwen/Qwen2.5-1.5B-Instruct']…",
        ["'nope'", "'JackFram/llama-160m'"],
    ),
    (lambda: hw.model_spec({"name": "x"}), None, ["'x'", "'n_layers'"]),
    (
        lambda: hw.model_spec({k: v for k, v in SPEC.items() if k not in ("name", "mlp")}),
        "model '(unnamed)' lacks ['mlp']",
        ["['mlp']", "未命名"],
    ),
    (
        lambda: hw.model_spec(SPEC | {"n_layers": 0.5}),
        "model field n_layers must be an integer from 1 to 1,024; got 0.5",
        ["n_layers", "0.5"],
    ),
    (
        lambda: hw.model_spec(SPEC | {"mlp": "moe"}),
        "model field mlp must be 'gated' (SwiGLU) or 'plain' (GELU); got 'moe'",
        ["'moe'", "'gated'", "'plain'"],
    ),
    (
        lambda: hw.model_spec(SPEC | {"n_kv_heads": 7}),
        "n_heads 64 must be a multiple of n_kv_heads 7",
        ["64", "7"],
    ),
    (
        lambda: hw.gpu_spec("nope"),
        None,
        ["'nope'", "'H100-SXM5-80GB'"],
    ),
    (
        lambda: hw.gpu_spec({"name": "g", "memory_gb": 1}),
        "GPU field bandwidth_tbs must be a finite number > 0; got None",
        ["bandwidth_tbs", "None"],
    ),
    (
        lambda: hw.from_hf_config("{bad"),
        None,
        ["config.json", "line 1 column 2"],
    ),
    (
        lambda: hw.from_hf_config("[1]"),
        "config.json must hold a JSON object; got list",
        ["list"],
    ),
    (
        lambda: hw.from_hf_config({"architectures": "x"}),
        "config.json architectures must be a list of names; got 'x'",
        ["architectures", "'x'"],
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["T5"]}),
        "architecture 'T5' is not modelled: supported are ['DeepseekV2ForCausalLM', 'DeepseekV3ForCausalLM', "
        "'GPT2LMHeadModel', 'GPTBigCodeForCausalLM', 'Gemma2ForCausalLM', 'GptOssForCausalLM', 'Llama4ForCausalLM', "
        "'Llama4ForConditionalGeneration', 'LlamaForCausalLM', 'MistralForCausalLM', 'MixtralForCausalLM', "
        "'OlmoeForCausalLM', 'Qwen2ForCausalLM', 'Qwen2MoeForCausalLM', 'Qwen3ForCausalLM', 'Qwen3MoeForCausalLM'] "
        "(state-space and encoder-decoder models need operators this model lacks)",
        ["'T5'", "'LlamaForCausalLM'"],
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["LlamaForCausalLM"], "num_experts": 8}),
        "config.json sets ['num_experts'] but its architecture 'LlamaForCausalLM' is a dense one",
        ["['num_experts']", "'LlamaForCausalLM'"],
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["LlamaForCausalLM"], "hidden_size": 8}),
        "config.json lacks ['num_hidden_layers or n_layer', 'num_attention_heads or n_head', 'vocab_size', "
        "'intermediate_size'], needed to model LlamaForCausalLM",
        ["'vocab_size'", "LlamaForCausalLM"],
    ),
    (
        lambda: hw.from_hf_config(LLAMA_CONFIG | {"num_hidden_layers": 2.5, "intermediate_size": 4}),
        "config.json num_hidden_layers must be an integer from 1 to 1,024; got 2.5",
        ["num_hidden_layers", "2.5"],
    ),
    (
        lambda: hw.from_hf_config(
            {"architectures": ["GPTBigCodeForCausalLM"], "n_embd": 8, "n_layer": 2, "n_head": 2, "vocab_size": 10}
            | {"multi_query": "yes"}
        ),
        "config.json multi_query must be true or false; got 'yes'",
        ["multi_query", "'yes'"],
    ),
    (lambda: hw._hf_int({}, ("a",)), "config.json lacks a", ["a"]),
    (lambda: hw._hf_int({}, ("a", "b")), "config.json lacks a or b", ["a", "b"]),
    (
        lambda: hw.step_time(LLAMA_70B, "H100-SXM5-80GB", [1, 2.5], 10, 1),
        "batch must be an integer >= 1; got 2.5",
        ["batch", "2.5"],
    ),
    (
        lambda: hw.kv_bytes_per_token(LLAMA_70B, "int3"),
        "dtype must be one of ['fp32', 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'int4-g128']; got 'int3'",
        ["'int3'", "'int4-g128'"],
    ),
    (
        lambda: hw.step_time(LLAMA_70B, CUSTOM_GPU, 1, 10, 1, dtype="fp8"),
        "GPU '(custom)' has no fp8 tensor-core peak (fp8_tflops)",
        ["fp8", "fp8_tflops", "自定义"],
    ),
    (
        lambda: hw.speedup_by_batch(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", [[0.5]], [1], [10]),
        "alpha must be one number or a vector of per-position acceptance; got shape (1, 1)",
        ["(1, 1)"],
    ),
    (
        lambda: hw.speedup_by_batch(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", 0.5, [1], [10], 65),
        "k_max must be an integer in [1, 64]; got 65",
        ["65", "[1, 64]"],
    ),
    (
        lambda: hw.check_pair(LLAMA_70B, QWEN),
        f"target '{LLAMA_70B}' (vocab_size 128,256) and draft '{QWEN}' (vocab_size 151,936) cannot share a "
        "tokenizer: a draft must use its target's vocabulary",
        [LLAMA_70B, QWEN, "128,256", "151,936"],
    ),
    (
        lambda: hw.alpha_from_measurements(pd.DataFrame()),
        "the run has no measured rows to take α from",
        ["α"],
    ),
    (
        lambda: hw.alpha_from_measurements(pd.DataFrame({"k": [1]}), what="run 3"),
        "run 3 has no α (alpha_used) in any row",
        ["run 3", "alpha_used"],
    ),
    (
        lambda: hw.alpha_from_measurements(pd.DataFrame({"k": [1]}), True, "run 3"),
        "run 3 has no per-position acceptance (per_position_acceptance); use its mean α",
        ["run 3", "per_position_acceptance"],
    ),
    (
        lambda: hw.alpha_from_measurements(
            pd.DataFrame({"k": [1, 2], "per_position_acceptance": ["0.5", "nan;nan"]}), True
        ),
        "the run: per-position acceptance at K = 2 was never measured (all nan)",
        ["K = 2", "nan"],
    ),
]


@pytest.mark.parametrize(
    ("call", "english", "quoted"), CASES, ids=[f"{(c[1] or '')[:50]}-{i}" for i, c in enumerate(CASES)]
)
def test_an_error_keeps_its_english_and_reads_in_chinese(call, english, quoted):
    with pytest.raises(ValueError) as info:
        call()
    exc = info.value
    assert isinstance(exc, i18n.Message)
    if english is not None:
        assert str(exc) == english
    assert i18n.translated("zh", exc.msgid)
    zh = exc.text("zh")
    assert CJK.search(zh), zh
    for piece in quoted:
        assert piece in zh, (piece, zh)
    assert pickle.loads(pickle.dumps(exc)).text("zh") == zh  # st.cache_data and process pools keep it


def test_a_wrapped_json_error_keeps_the_parser_message():
    with pytest.raises(ValueError, match=r"^config.json is not valid JSON: Expecting property name") as info:
        hw.from_hf_config("{bad")
    assert info.value.__cause__ is None and info.value.__suppress_context__  # still `from None`
    assert info.value.text("zh").startswith("config.json 不是有效的 JSON：Expecting property name")


def test_a_translated_run_name_and_axis_name_read_in_chinese():
    """The defaults the library fills in itself ("the run", "c min") are phrases, so they follow the language."""
    with pytest.raises(ValueError) as info:
        hw.alpha_from_measurements(None)
    assert "该次运行" in info.value.text("zh") and "the run" not in info.value.text("zh")
    with pytest.raises(ValueError) as info:
        grids.log_axis(1, -1, 5, "c")
    assert str(info.value) == "c max must be a finite number > 0; got -1.0"
    assert "最大值" in info.value.text("zh") and "-1.0" in info.value.text("zh")


def test_the_llama_cpp_note_is_a_phrase_with_its_english_text():
    note = hw.llama_cpp_flags(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", 0.0, 2048)
    assert note == "# speculation does not pay here: run without --model-draft" and isinstance(note, i18n.Phrase)
    assert note.msgid == "# speculation does not pay here: run without --model-draft" and i18n.translated(
        "zh", note.msgid
    )
    zh = i18n.localized(note, "zh")
    assert zh.startswith("# ") and CJK.search(zh) and "--model-draft" in zh
    assert hw.llama_cpp_flags(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", 0.9, 2048).startswith("--spec-draft-n-max ")

"""Errors and notes of specviz.core.theory, specviz.core.hardware and specviz.app.grids in both languages.

Each case: the message's key and fields for one bad input, and the values read the same in English and
in Chinese (tests/_messages.py).
"""

from __future__ import annotations

import pickle
from json import JSONDecodeError

import pandas as pd
import pytest
from _messages import Raised, caught, expect, inner

from specviz.app import grids
from specviz.core import hardware as hw
from specviz.core import theory

LLAMA_70B, LLAMA_1B, QWEN = (
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen2.5-0.5B-Instruct",
)
SPEC = hw.model_spec(LLAMA_70B)
CUSTOM_GPU = {"memory_gb": 1, "bandwidth_tbs": 1, "bf16_tflops": 1, "fp16_tflops": 1, "interconnect_gbs": 1}
LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10}

#: (call, msgid, fields, what both the English and the Chinese text show)
CASES = [
    (
        lambda: theory.check_alpha(1.5),
        "{name} must be in [0, 1]; got {value}",
        {"name": "alpha", "value": "1.5"},
        ("alpha", "1.5"),
    ),
    (
        lambda: theory.check_alpha([0.1, 2], "acceptance"),
        "{name} must be in [0, 1]; got {value} ({where})",
        {"name": "acceptance", "value": "2", "where": inner("value {n} of {count}", n=2, count=2)},
        ("acceptance", "2"),
    ),
    (  # not "got nan at index (0,)": the value and its place in plain words
        lambda: theory.check_alpha([float("nan")]),
        "{name} must be in [0, 1]; got {value} ({where})",
        {"name": "alpha", "value": inner("not a number"), "where": inner("value {n} of {count}", n=1, count=1)},
        ("alpha",),
    ),
    (
        lambda: theory.check_positive([[1.0, float("inf")]], "c"),
        "{name} must be a finite number > 0; got {value} ({where})",
        {"name": "c", "value": inner("infinity"), "where": inner("value {n} of {count}", n=2, count=2)},
        ("c",),
    ),
    (
        lambda: theory.expected_tokens("x", 2),
        "{name} must be a number; got {value!r}",
        {"name": "alpha", "value": "x"},
        ("'x'", "alpha"),
    ),
    (
        lambda: theory.check_k(0),
        "{name} must be an integer in [1, {limit}]; got {value}",
        {"name": "k", "limit": 2147483647, "value": "0"},
        ("2147483647", "0"),
    ),
    (
        lambda: theory.expected_tokens(0.5, [1, 2.5]),
        "{name} must be an integer in [1, {limit}]; got {value} ({where})",
        {"name": "k", "limit": 2147483647, "value": "2.5", "where": inner("value {n} of {count}", n=2, count=2)},
        ("2.5", "2147483647"),
    ),
    (
        lambda: theory.speedup(0.5, 0, 2),
        "{name} must be a finite number > 0; got {value}",
        {"name": "c", "value": "0"},
        ("c", "0"),
    ),
    (
        lambda: theory.check_positive([1, -1], "c"),
        "{name} must be a finite number > 0; got {value} ({where})",
        {"name": "c", "value": "-1", "where": inner("value {n} of {count}", n=2, count=2)},
        ("-1",),
    ),
    (
        lambda: theory.break_even_alpha(4, 8, v=-1),
        "{name} must be a finite number >= 0; got {value}",
        {"name": "v", "value": "-1"},
        ("-1",),
    ),
    (
        lambda: theory.speedup(0.5, 2, 3, o=[0, -2]),
        "{name} must be a finite number >= 0; got {value} ({where})",
        {"name": "o", "value": "-2", "where": inner("value {n} of {count}", n=2, count=2)},
        ("-2",),
    ),
    (
        lambda: theory.alpha_from_mean_tokens(7, 4),
        "{name} must be in {allowed}; got {value}",
        {"name": "mean_tokens", "allowed": "[1, K + 1]", "value": "7"},
        ("mean_tokens", "[1, K + 1]", "7"),
    ),
    (
        lambda: theory.speedup_from_tokens([1, 7], 8, 4),
        "{name} must be in {allowed}; got {value} ({where})",
        {
            "name": "mean_tokens",
            "allowed": "[1, K + 1]",
            "value": "7",
            "where": inner("value {n} of {count}", n=2, count=2),
        },
        ("7", "mean_tokens", "[1, K + 1]"),
    ),
    (
        lambda: theory.expected_tokens_by_position([]),
        "acceptance must list at least one position (shape (..., K_max)); got shape {shape}",
        {"shape": (0,)},
        ("(0,)", "K_max"),
    ),
    (
        lambda: theory.optimal_k(0.5, 2, k_max=[1, 2]),
        "k_max must be a single integer >= 1; got {value!r}",
        {"value": [1, 2]},
        ("k_max", "[1, 2]"),
    ),
    (
        lambda: theory.convert_metric(0.5, 4, "bogus"),
        "metric must be one of {allowed}; got {value!r}",
        {
            "allowed": ["acceptance_rate", "alpha", "mean_tokens", "mean_tokens_no_bonus", "system_efficiency"],
            "value": "bogus",
        },
        ("'bogus'", "'system_efficiency'"),
    ),
    (
        lambda: theory.alpha_from_acceptance_rate(2, 3),
        "{name} must be in {allowed}; got {value}",
        {"name": "rate", "allowed": "[0, 1]", "value": "2"},
        ("2", "rate", "[0, 1]"),
    ),
    (
        lambda: theory.c_from_leviathan(0),
        "{name} must be a finite number > 0; got {value}",
        {"name": "c_L", "value": "0"},
        ("c_L", "0"),
    ),
    (
        lambda: grids.to_c(2, "x"),
        "convention must be one of {allowed}; got {value!r}",
        {"allowed": ["c", "c_L"], "value": "x"},
        ("'x'", "['c', 'c_L']"),
    ),
    (
        lambda: grids.log_axis(0, 1, 5, "c"),
        "{name} must be a finite number > 0; got {value}",
        {"name": inner("{name} min", name="c"), "value": "0"},
        ("0",),
    ),
    (
        lambda: grids.log_axis(5, 1, 5, "c"),
        "{name} min must be below {name} max; got {lo:g} and {hi:g}",
        {"name": "c", "lo": 5.0, "hi": 1.0},
        ("5", "1"),
    ),
    (
        lambda: grids.lin_axis(0.5, 0.25, 5, "α"),
        "{name} min must be below {name} max; got {lo:g} and {hi:g}",
        {"name": "α", "lo": 0.5, "hi": 0.25},
        ("α", "0.5", "0.25"),
    ),
    (
        lambda: hw.Efficiency(compute=0),
        "efficiency.{name} must be in (0, 1]; got {value}",
        {"name": "compute", "value": 0},
        ("efficiency.compute", "0"),
    ),
    (
        lambda: hw.Efficiency(overhead_s=-1),
        "efficiency.{name} must be a finite number >= 0; got {value}",
        {"name": "overhead_s", "value": -1},
        ("-1", "overhead_s"),
    ),
    (
        lambda: hw.model_spec("nope"),
        "model {model!r} is not in the catalogue; choose one of {choices}…",
        {
            "model": "nope",
            "choices": [
                "JackFram/llama-160m",
                "JackFram/llama-68m",
                "MiniMaxAI/MiniMax-M2.5",
                "MiniMaxAI/MiniMax-M3",
                "Qwen/Qwen1.5-MoE-A2.7B",
            ],
        },
        ("'nope'", "'JackFram/llama-160m'"),
    ),
    (
        lambda: hw.model_spec({"name": "x"}),
        "model {model!r} lacks {missing}",
        {
            "model": "x",
            "missing": [
                "n_layers",
                "hidden_size",
                "n_heads",
                "n_kv_heads",
                "head_dim",
                "intermediate_size",
                "vocab_size",
                "tied_embeddings",
                "mlp",
            ],
        },
        ("'x'", "'n_layers'"),
    ),
    (
        lambda: hw.model_spec({k: v for k, v in SPEC.items() if k not in ("name", "mlp")}),
        "model {model!r} lacks {missing}",
        {"model": inner("(unnamed)"), "missing": ["mlp"]},
        ("['mlp']",),
    ),
    (
        lambda: hw.model_spec(SPEC | {"n_layers": 0.5}),
        "model field {field} must be an integer from {lo} to {hi}; got {value}",
        {"field": "n_layers", "name": "n_layers", "value": "0.5", "lo": 1, "hi": "1,024"},
        ("n_layers", "0.5", "1,024"),
    ),
    (
        lambda: hw.model_spec(SPEC | {"mlp": "moe"}),
        "model field mlp must be 'gated' (SwiGLU) or 'plain' (GELU); got {value!r}",
        {"value": "moe"},
        ("'moe'", "'gated'", "'plain'"),
    ),
    (
        lambda: hw.model_spec(SPEC | {"n_kv_heads": 7}),
        "n_heads {n_heads} must be a multiple of n_kv_heads {n_kv_heads}",
        {"n_heads": 64, "n_kv_heads": 7},
        ("64", "7"),
    ),
    (
        lambda: hw.gpu_spec("nope"),
        "GPU {gpu!r} is not in the catalogue; choose one of {choices}",
        {
            "gpu": "nope",
            "choices": list,  # the GPU catalogue, sorted
        },
        ("'nope'", "'H100-SXM5-80GB'"),
    ),
    (
        lambda: hw.gpu_spec({"name": "g", "memory_gb": 1}),
        "GPU field {field} must be a finite number > 0; got {value!r}",
        {"field": "bandwidth_tbs", "value": None},
        ("bandwidth_tbs", "None"),
    ),
    (
        lambda: hw.from_hf_config("{bad"),
        "config.json is not valid JSON: {cause}",
        {
            "cause": Raised(
                JSONDecodeError, "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
            )
        },
        ("config.json", "line 1 column 2"),
    ),
    (
        lambda: hw.from_hf_config("[1]"),
        "config.json must hold a JSON object; got {type}",
        {"type": "list"},
        ("list",),
    ),
    (
        lambda: hw.from_hf_config({"architectures": "x"}),
        "config.json architectures must be a list of names; got {value!r}",
        {"value": "x"},
        ("architectures", "'x'"),
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["T5"], "is_encoder_decoder": True}),
        "architecture {arch!r} is an encoder-decoder model; specviz prices decoder-only language models",
        {"arch": "T5"},
        ("'T5'",),
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["JambaForCausalLM"]}),
        "architecture {arch!r} has state-space or recurrent layers, which specviz does not price",
        {"arch": "JambaForCausalLM"},
        ("'JambaForCausalLM'",),
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["NemotronHForCausalLM"], "ssm_state_size": 128}),
        "config.json sets {key}: state-space (Mamba) layers are not priced; linear-attention (Gated DeltaNet) and sliding-window layers are",
        {"key": "ssm_state_size"},
        ("ssm_state_size",),
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["DeepseekV4ForCausalLM"], "compress_ratios": [0, 4, 128]}),
        "config.json sets {key} ({what}), which specviz does not price yet",
        {"key": "compress_ratios", "what": inner("compressed attention, as in DeepSeek-V4")},
        ("compress_ratios",),
    ),
    (
        lambda: hw.from_hf_config({"architectures": ["LlamaForCausalLM"], "hidden_size": 8}),
        "config.json lacks {missing}, needed to model {arch}",
        {
            "missing": [
                "num_hidden_layers or n_layer or num_layers or n_layers",
                "num_attention_heads or n_head or n_heads or num_heads",
                "vocab_size or padded_vocab_size",
                "intermediate_size or ffn_hidden_size or n_inner or ffn_dim",
            ],
            "arch": "LlamaForCausalLM",
        },
        ("'vocab_size or padded_vocab_size'", "LlamaForCausalLM"),
    ),
    (
        lambda: hw.from_hf_config(LLAMA_CONFIG | {"num_hidden_layers": 2.5, "intermediate_size": 4}),
        "config.json {name} must be an integer from {lo} to {hi}; got {value}",
        {"field": "num_hidden_layers", "name": "num_hidden_layers", "value": "2.5", "lo": 1, "hi": "1,024"},
        ("num_hidden_layers", "2.5", "1,024"),
    ),
    (
        lambda: hw.from_hf_config(
            {"architectures": ["GPTBigCodeForCausalLM"], "n_embd": 8, "n_layer": 2, "n_head": 2, "vocab_size": 10}
            | {"multi_query": "yes"}
        ),
        "config.json {name} must be true or false; got {value!r}",
        {"name": "multi_query", "value": "yes"},
        ("multi_query", "'yes'"),
    ),
    (lambda: hw._hf_int({}, ("a",)), "config.json lacks {name}", {"name": "a"}, ("a",)),
    (
        lambda: hw._hf_int({}, ("a", "b")),
        "config.json lacks {first} or {last}",
        {"first": "a", "last": "b"},
        ("a", "b"),
    ),
    (
        lambda: hw.step_time(LLAMA_70B, "H100-SXM5-80GB", [1, 2.5], 10, 1),
        "{name} must be an integer >= {low}; got {value:g}",
        {"name": "batch", "low": 1, "value": 2.5},
        ("batch", "2.5", "1"),
    ),
    (
        lambda: hw.kv_bytes_per_token(LLAMA_70B, "int3"),
        "dtype must be one of {allowed}; got {value!r}",
        {"allowed": ["fp32", "bf16", "fp16", "fp8", "int8", "int4", "int4-g128", "nvfp4", "mxfp4"], "value": "int3"},
        ("'int3'", "['fp32', 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'int4-g128', 'nvfp4', 'mxfp4']"),
    ),
    (
        lambda: hw.step_time(LLAMA_70B, CUSTOM_GPU, 1, 10, 1, dtype="fp8"),
        "GPU {gpu!r} has no {dtype} tensor-core peak ({column})",
        {"gpu": inner("(custom)"), "dtype": "fp8", "column": "fp8_tflops"},
        ("fp8_tflops",),
    ),
    (
        lambda: hw.speedup_by_batch(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", [[0.5]], [1], [10]),
        "alpha must be one number or a vector of per-position acceptance; got shape {shape}",
        {"shape": (1, 1)},
        ("(1, 1)",),
    ),
    (
        lambda: hw.speedup_by_batch(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", 0.5, [1], [10], 65),
        "k_max must be an integer in [1, 64]; got {value!r}",
        {"value": 65},
        ("65", "[1, 64]"),
    ),
    (
        lambda: hw.check_pair(LLAMA_70B, QWEN),
        "target {target!r} (vocab_size {target_vocab:,}) and draft {draft!r} (vocab_size {draft_vocab:,}) cannot share a tokenizer: a draft must use its target's vocabulary",
        {
            "target": "meta-llama/Llama-3.1-70B-Instruct",
            "target_vocab": 128256,
            "draft": "Qwen/Qwen2.5-0.5B-Instruct",
            "draft_vocab": 151936,
        },
        ("128,256", "151,936", "'meta-llama/Llama-3.1-70B-Instruct'", "'Qwen/Qwen2.5-0.5B-Instruct'"),
    ),
    (
        lambda: hw.alpha_from_measurements(pd.DataFrame()),
        "{what} has no measured rows to take α from",
        {"what": inner("the run")},
        ("α",),
    ),
    (
        lambda: hw.alpha_from_measurements(pd.DataFrame({"k": [1]}), what="run 3"),
        "{what} has no α (alpha_used) in any row",
        {"what": "run 3"},
        ("run 3", "alpha_used"),
    ),
    (
        lambda: hw.alpha_from_measurements(pd.DataFrame({"k": [1]}), True, "run 3"),
        "{what} has no per-position acceptance (per_position_acceptance); use its mean α",
        {"what": "run 3"},
        ("run 3", "per_position_acceptance"),
    ),
    (
        lambda: hw.alpha_from_measurements(
            pd.DataFrame({"k": [1, 2], "per_position_acceptance": ["0.5", "nan;nan"]}), True
        ),
        "{what}: per-position acceptance at K = {k} was never measured (all nan)",
        {"what": inner("the run"), "k": 2},
        ("K = 2", "nan"),
    ),
]


@pytest.mark.parametrize(
    ("call", "msgid", "fields", "shows"), CASES, ids=[f"{c[1][:50]}-{i}" for i, c in enumerate(CASES)]
)
def test_an_error_names_its_values_in_english_and_chinese(call, msgid, fields, shows):
    exc = caught(call)
    expect(exc, msgid, fields, shows)
    assert pickle.loads(pickle.dumps(exc)).text("zh") == exc.text("zh")  # st.cache_data and process pools keep it


def test_a_wrapped_json_error_keeps_the_parser_message():
    exc = caught(hw.from_hf_config, "{bad")
    assert exc.__cause__ is None and exc.__suppress_context__  # still `from None`
    parser = str(exc.fields["cause"])
    assert str(exc).endswith(parser) and exc.text("zh").endswith(parser)  # the parser's own text, untranslated


def test_a_translated_run_name_and_axis_name_read_in_chinese():
    """The defaults the library fills in itself ("the run", "c max") are phrases, so they follow the language."""
    expect(
        caught(hw.alpha_from_measurements, None),
        "{what} has no measured rows to take α from",
        {"what": inner("the run")},
    )
    assert "the run" not in caught(hw.alpha_from_measurements, None).text("zh")
    expect(
        caught(grids.log_axis, 1, -1, 5, "c"),
        "{name} must be a finite number > 0; got {value}",
        {"name": inner("{name} max", name="c"), "value": "-1"},
        ("-1",),
    )


def test_the_llama_cpp_note_is_a_phrase():
    note = hw.llama_cpp_flags(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", 0.0, 2048)
    expect(note, "# speculation does not pay here: run without --model-draft", {}, ("--model-draft",))
    assert note.text("zh").startswith("# ")  # still a shell comment
    assert hw.llama_cpp_flags(LLAMA_70B, LLAMA_1B, "H100-SXM5-80GB", 0.9, 2048).startswith("--spec-draft-n-max ")

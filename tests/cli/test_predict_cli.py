"""`python -m specviz predict`: a pair priced on a GPU with an engine profile, equal to the library's."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specviz import cli
from specviz.core import hardware, heads, profiles, theory

ROOT = Path(__file__).resolve().parents[2]
VICUNA, EAGLE, MEDUSA = "lmsys/vicuna-7b-v1.3", "yuhuili/EAGLE-Vicuna-7B-v1.3", "FasterDecoding/medusa-vicuna-7b-v1.3"


def predict(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["predict", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def predicted(capsys, *argv: str) -> dict:
    code, out, err = predict(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_a_model_draft_equals_speedup_by_batch_with_the_profile(capsys):
    argv = ["--target", "meta-llama/Llama-3.1-70B-Instruct", "--draft", "meta-llama/Llama-3.2-1B-Instruct"]
    out = predicted(capsys, *argv, "--gpu", "H100-SXM5-80GB", "--tp", "4", "--profile", "vllm", "--alpha", "0.7")
    out |= {"argv": argv}
    eff = profiles.profile("vllm")
    want = hardware.speedup_by_batch(
        argv[1], argv[3], "H100-SXM5-80GB", 0.7, [1], [1024], 8, tp_target=4, tp_draft=4, efficiency=eff
    )
    rows = pd.DataFrame(out["rows"])
    np.testing.assert_allclose(rows["speedup"], want[[f"s_{k}" for k in range(1, 9)]].iloc[0], rtol=1e-12)
    np.testing.assert_allclose(rows["c"], want["c"].iloc[0], rtol=1e-12)
    assert out["k_star"] == [
        {"batch": 1, "k_star": int(want["k_star"].iloc[0]), "speedup_at_k_star": want["speedup_at_k_star"].iloc[0]}
    ]
    costs = hardware.pair_costs(argv[1], argv[3], "H100-SXM5-80GB", 1, 1024, 8, tp_target=4, tp_draft=4, efficiency=eff)
    assert rows["v"].iloc[-1] == pytest.approx(float(costs["v"]), rel=1e-12)
    assert (
        out["profile"]["name"] == "vllm"
        and out["profile"]["fitted_on"] == profiles.load_profiles().loc["vllm", "fitted_on"]
    )
    assert out["profile"]["terms"]["layer_overhead_s"] == eff.layer_overhead_s


def test_the_engine_changes_the_answer_as_the_library_says(capsys):
    argv = ["--target", VICUNA, "--draft", "double7/vicuna-68m", "--alpha", "0.8", "--batch", "1,32"]
    roofline = pd.DataFrame(predicted(capsys, *argv)["rows"])
    eager = pd.DataFrame(predicted(capsys, *argv, "--profile", "hf-transformers")["rows"])
    costs = hardware.pair_costs(
        VICUNA, "double7/vicuna-68m", "H100-SXM5-80GB", 32, 1024, 3, efficiency=profiles.profile("hf-transformers")
    )
    row = eager[(eager.batch == 32) & (eager.k == 3)].iloc[0]
    assert (row.c, row.v, row.o) == pytest.approx((float(costs["c"]), float(costs["v"]), float(costs["o"])), rel=1e-12)
    assert row.o > 0 and roofline["o"].eq(0).all()  # only the eager profile has a round overhead
    assert not np.allclose(roofline["speedup"], eager["speedup"])


def test_a_head_tree_with_tau_prices_draft_and_verify_tokens(capsys):
    argv = ["--target", VICUNA, "--draft", EAGLE, "--gpu", "A100-SXM4-80GB", "--profile", "sglang", "--tau", "3.2"]
    out = predicted(capsys, *argv, "--k-max", "5", "--draft-tokens", "4", "--verify-tokens", "16", "--batch", "8")
    rows = pd.DataFrame(out["rows"])
    costs = hardware.pair_costs(
        VICUNA,
        EAGLE,
        "A100-SXM4-80GB",
        8,
        1024,
        np.arange(1, 6),
        efficiency=profiles.profile("sglang"),
        draft_tokens=4,
        verify_tokens=16,
    )
    alpha = theory.alpha_from_mean_tokens(3.2, 5)
    mean = theory.expected_tokens(alpha, np.arange(1, 6))
    np.testing.assert_allclose(rows["speedup"], hardware.round_speedup(mean, costs), rtol=1e-12)
    assert rows["mean_tokens"].iloc[-1] == pytest.approx(3.2)  # E[N](k_max) is the measured τ
    assert (rows["verify_tokens"] == 16).all() and rows["t_draft_ms"].iloc[0] == pytest.approx(1e3 * costs["t_draft"])
    draft_spec = heads.draft_model(heads.head_spec(EAGLE), hardware.model_spec(VICUNA))
    sglang = profiles.profile("sglang")
    per_forward = replace(sglang, seq_overhead_s=0.0)  # the per-request cost is the verify's, once a round
    one = hardware.step_time(draft_spec, "A100-SXM4-80GB", 8, 1024, 4, efficiency=per_forward) + sglang.draft_overhead_s
    assert rows["t_draft_ms"].iloc[0] == pytest.approx(1e3 * float(one))  # the forward and the draft loop's cost


def test_medusa_and_ngram_draft_once_per_round(capsys):
    medusa = pd.DataFrame(
        predicted(capsys, "--target", VICUNA, "--draft", MEDUSA, "--alpha", "0.6", "--k-max", "5")["rows"]
    )
    ngram = pd.DataFrame(predicted(capsys, "--target", VICUNA, "--draft", "ngram", "--alpha", "0.6")["rows"])
    assert (medusa["draft_steps"] == 1).all() and (ngram["draft_steps"] == 1).all()
    assert ngram["t_draft_ms"].iloc[0] == pytest.approx(1e3 * profiles.DEFAULT_EFFICIENCY.overhead_s)


def test_custom_engine_terms_are_a_profile(capsys):
    terms = "overhead_s=0.002,layer_overhead_s=0.0001,round_overhead_s=0.001"
    out = predicted(capsys, "--target", VICUNA, "--draft", EAGLE, "--alpha", "0.7", "--profile-terms", terms)
    eff = profiles.decode_terms(terms)
    costs = hardware.pair_costs(VICUNA, EAGLE, "H100-SXM5-80GB", 1, 1024, 8, efficiency=eff)
    assert out["profile"]["name"] == "custom" and out["profile"]["terms"]["round_overhead_s"] == 0.001
    assert out["rows"][-1]["o"] == pytest.approx(float(costs["o"]), rel=1e-12)
    code, _, err = predict(
        capsys, "--target", VICUNA, "--draft", EAGLE, "--alpha", "0.7", "--profile-terms", "memory=2"
    )
    assert code == 2 and "memory" in err and "(0, 1]" in err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--profile", "warp-drive"], ["engine must be one of", "'vllm'", "'hf-transformers'", "warp-drive"]),
        (["--gpu", "TPU-v9"], ["GPU 'TPU-v9' is not in the catalogue", "H100-SXM5-80GB"]),
        (["--draft", "no/such-model"], ["--draft", "no/such-model", "double7/vicuna-68m", EAGLE, "'ngram'"]),
        (["--target", "no/such-model"], ["--target", "no/such-model", VICUNA]),
        (
            ["--draft", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"],
            ["--draft", "was trained for meta-llama/Llama-3.1-8B-Instruct", "cannot draft for lmsys"],
        ),
        (["--draft", "Qwen/Qwen2.5-0.5B-Instruct"], ["cannot share a tokenizer"]),
        (["--draft", MEDUSA], ["--k-max must be at most the 5 heads"]),
        (["--verify-tokens", "4"], ["--verify-tokens must be at least --k-max + 1 = 9"]),
    ],
)
def test_bad_input_exits_2_naming_the_field_and_the_choices(capsys, extra, says):
    argv = {"--target": VICUNA, "--draft": "double7/vicuna-68m", "--alpha": "0.7"}
    argv |= dict(zip(extra[::2], extra[1::2], strict=True))
    code, out, err = predict(capsys, *[x for pair in argv.items() for x in pair])
    assert code == 2 and not out
    assert all(s in err for s in says), err


def test_bad_numbers_are_argparse_errors(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["predict", "--target", VICUNA, "--draft", "ngram", "--alpha", "0.7", "--tau", "2"])
    assert stop.value.code == 2 and "not allowed with argument --alpha" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["predict", "--target", VICUNA, "--draft", "ngram", "--alpha", "0.7", "--k-max", "0"])
    assert "--k-max: expected an integer >= 1" in capsys.readouterr().err
    code, _, err = predict(capsys, "--target", VICUNA, "--draft", "ngram", "--tau", "12")
    assert code == 2 and "--tau must be in [1, --k-max + 1 = 9]" in err


def test_table_and_csv_say_which_profile_priced_the_pair(capsys):
    argv = [
        "--target",
        VICUNA,
        "--draft",
        EAGLE,
        "--alpha",
        "0.7",
        "--engine",
        "tensorrt-llm",
        "--batch",
        "1,64",
    ]  # the old name
    code, table, _ = predict(capsys, *argv)
    row = profiles.load_profiles().loc["tensorrt-llm"]
    assert code == 0 and "engine profile: tensorrt-llm (TensorRT-LLM; fitted on" in table
    assert row["fitted_on"] in table and row["source"] in table and "B = 64: K* = " in table
    code, text, _ = predict(capsys, *argv, "--format", "csv")
    frame = pd.read_csv(io.StringIO(text))
    assert len(frame) == 16 and (frame["profile"] == "tensorrt-llm").all() and set(frame["batch"]) == {1, 64}


@pytest.mark.slow
def test_python_m_specviz_predict_prints_json():
    done = subprocess.run(
        [sys.executable, "-m", "specviz", "predict", "--target", VICUNA, "--draft", "ngram", "--tau", "2.5"]
        + ["--k-max", "4", "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["inputs"]["tau"] == 2.5 and out["profile"]["name"] == profiles.DEFAULT_PROFILE
    assert [r["k"] for r in out["rows"]] == [1, 2, 3, 4] and out["rows"][-1]["mean_tokens"] == pytest.approx(2.5)


CONFIGS = ROOT / "tests" / "fixtures" / "hf_configs"


def test_a_target_and_a_head_given_as_config_files_are_priced_as_the_library_prices_them(capsys):
    target, head = CONFIGS / "Qwen__Qwen3-8B.json", CONFIGS / "sgl-project__SpecForge-qwen3-8b-peagle.json"
    argv = ["--target", str(target), "--draft", str(head), "--gpu", "H200-SXM-141GB", "--alpha", "0.7"]
    out = predicted(capsys, *argv, "--k-max", "4", "--batch", "1,16")
    t = hardware.from_hf_config(target.read_text(), str(target))
    h = hardware.head_from_config(head.read_text(), t, str(head))
    want = hardware.pair_costs(
        t, h, "H200-SXM-141GB", 16, 1024, 3, efficiency=profiles.profile(profiles.DEFAULT_PROFILE)
    )
    row = next(r for r in out["rows"] if r["batch"] == 16 and r["k"] == 3)
    assert row["draft_steps"] == 1 and row["t_draft_ms"] == pytest.approx(float(want["t_draft"]) * 1e3)
    assert out["inputs"]["draft"] == str(head)


def test_a_config_file_that_cannot_draft_is_refused_naming_the_option(capsys):
    dspark = CONFIGS / "sgl-project__SpecForge-qwen3-8b-dspark.json"
    code, _, err = predict(
        capsys, "--target", str(CONFIGS / "Qwen__Qwen3-8B.json"), "--draft", str(dspark), "--alpha", "0.7"
    )
    assert code != 0 and "--draft" in err and "DSparkDraftModel" in err, err

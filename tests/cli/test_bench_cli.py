"""`python -m specviz bench` and `prompts` on a tiny random pair: the CSV, interruption, errors, --dtype, CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from specviz import cli
from specviz.core import trees
from specviz.data import measurements
from specviz.engine import bench
from specviz.engine.models.gpt import GPT, GPTConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair")
    torch.manual_seed(0)
    GPT(GPTConfig(2, 2, 64, block_size=256)).save(root / "target")
    torch.manual_seed(1)
    GPT(GPTConfig(1, 2, 32, block_size=256)).save(root / "draft")
    prompts = root / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["def main():\n    ", "import os\n"]))
    return root, prompts


def run_bench(tiny_pair, tmp_path, *extra):
    root, prompts = tiny_pair
    out = tmp_path / "results.csv"
    code = cli.main(
        [
            "bench",
            "--pair",
            str(root),
            "--k",
            "1,2",
            "--temperature",
            "0,1",
            "--new-tokens",
            "8",
            "--repeats",
            "1",
            "--prompts",
            str(prompts),
            "--device",
            "cpu",
            "--out",
            str(out),
            *extra,
        ]
    )
    return code, out


@pytest.mark.slow
def test_bench_writes_schema_csv(tiny_pair, tmp_path, capsys):
    code, out = run_bench(tiny_pair, tmp_path, "--label", "tiny")
    assert code == 0
    df = pd.read_csv(out)
    assert len(df) == 4 and sorted(zip(df.k, df.temperature, strict=False)) == [(1, 0.0), (1, 1.0), (2, 0.0), (2, 1.0)]
    assert {"label", "k", "alpha", "mean_accepted_tokens", "acceptance_rate"} <= set(df.columns)
    assert set(df.columns) <= set(measurements.COLUMNS) | set(measurements.BENCH_COLUMNS)
    assert (df.label == "tiny").all() and (df.runs == 2).all()
    assert (df.dtype == "float32").all() and (df.device == "cpu").all()  # --dtype auto on CPU
    assert df.alpha.between(0, 1).all() and df.acceptance_rate.between(0, 1).all()
    assert (df.mean_accepted_tokens >= 1).all() and (df.mean_accepted_tokens <= df.k + 1).all()
    assert (df.c > 0).all() and (df.speedup > 0).all() and (df.t_verify_ms > 0).all()
    assert df[df.temperature == 0].greedy_exact.astype(bool).all()
    assert df[df.temperature == 1].greedy_exact.isna().all()
    printed = capsys.readouterr().out
    assert "predicted_speedup_basic" in printed and "wrote 4 rows" in printed
    loaded, report = measurements.load_measurements(out)  # the upload path accepts our own output as is
    assert report.rows_loaded == 4 and not report.row_errors and not report.mapped
    assert loaded["alpha_source"].eq("alpha").all()
    assert loaded["predicted_speedup"].to_numpy() == pytest.approx(df["predicted_speedup_basic"].to_numpy())


def test_interrupt_keeps_finished_cells(tiny_pair, tmp_path, monkeypatch, capsys):
    real = bench.measure_runs
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bench.cell, "measure_runs", flaky)
    code, out = run_bench(tiny_pair, tmp_path)
    assert code == 0
    assert len(pd.read_csv(out)) == 1
    assert "keeping the 1 finished cell" in capsys.readouterr().err


def test_missing_or_corrupt_weights_are_clear_errors(tiny_pair, tmp_path, capsys):
    root, prompts = tiny_pair
    assert (
        cli.main(["bench", "--pair", str(tmp_path), "--prompts", str(prompts), "--out", str(tmp_path / "x.csv")]) == 2
    )
    assert "no target/model.safetensors" in capsys.readouterr().err
    broken = tmp_path / "broken"
    for part in ("target", "draft"):
        (broken / part).mkdir(parents=True)
        (broken / part / "config.json").write_text((root / part / "config.json").read_text())
        (broken / part / "model.safetensors").write_bytes(b"\x00" * 64)
    assert cli.main(["bench", "--pair", str(broken), "--prompts", str(prompts), "--out", str(tmp_path / "y.csv")]) == 2
    assert "model.safetensors is missing or corrupt" in capsys.readouterr().err
    assert not (tmp_path / "y.csv").exists()


def test_bad_arguments(tiny_pair, tmp_path, capsys):
    root, _prompts = tiny_pair
    with pytest.raises(SystemExit):
        cli.main(["bench", "--k", "0,2"])
    assert "integers >= 1" in capsys.readouterr().err
    assert cli.main(["bench", "--pair", str(root), "--prompts", str(tmp_path / "none.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_prompts_come_from_validation_files(tmp_path):
    corpus = tmp_path / "lib"
    corpus.mkdir()
    for i in range(20):
        (corpus / f"mod{i}.py").write_text("".join(f"def f{j}(x):\n    return x + {j}\n" for j in range(40)))
    out = tmp_path / "p.jsonl"
    assert cli.main(["prompts", "--corpus", str(corpus), "--out", str(out), "--n", "3", "--length", "64"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    from specviz.engine.train import corpus_files

    _, val = corpus_files(corpus)
    assert len(rows) == 1  # 20 files × 5 % = 1 validation file, one prompt per file
    assert rows[0]["source"] in {p.name for p in val} and len(rows[0]["text"].encode()) == 64
    assert bench.load_prompts(out) == [rows[0]["text"]]


def test_dtype_option_sets_the_weights_dtype(tiny_pair, tmp_path):
    code, out = run_bench(tiny_pair, tmp_path, "--dtype", "bfloat16", "--k", "2", "--temperature", "0")
    assert code == 0
    df = pd.read_csv(out)
    assert len(df) == 1 and df.dtype.tolist() == ["bfloat16"]
    assert 0 <= df.alpha.iloc[0] <= 1 and df.t_verify_ms.iloc[0] > 0


def test_dtype_choices_and_unsupported_dtype(tiny_pair, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--dtype", "float64"])
    assert "invalid choice: 'float64'" in capsys.readouterr().err

    def no_half(x, w, b=None):  # what a torch build without half-precision CPU kernels raises
        if x.dtype == torch.float16:
            raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
        return real_linear(x, w, b)

    real_linear = torch.nn.functional.linear
    monkeypatch.setattr(torch.nn.functional, "linear", no_half)
    code, out = run_bench(tiny_pair, tmp_path, "--dtype", "float16")
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "dtype float16 is not supported on device 'cpu'" in err and "not implemented for 'Half'" in err
    assert cli.bench.resolve_dtype("float32", "cpu") is torch.float32 and cli.bench.resolve_dtype("auto", "cpu") is None


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_bench_cli_on_cuda(tiny_pair, tmp_path, dtype):
    """`python -m specviz bench --device cuda --dtype …` in its own process: the CSV says CUDA, the GPU and the dtype."""
    if dtype == "bfloat16" and not torch.cuda.is_bf16_supported(including_emulation=False):
        pytest.skip(f"{torch.cuda.get_device_name()} has no native bfloat16")
    root, prompts = tiny_pair
    out = tmp_path / f"cuda-{dtype}.csv"
    argv = ["--pair", str(root), "--k", "1,2", "--temperature", "0,1", "--new-tokens", "16", "--repeats", "2"]
    argv += ["--prompts", str(prompts), "--device", "cuda", "--dtype", dtype, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "specviz", "bench", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    df = pd.read_csv(out)
    assert sorted(zip(df.k, df.temperature, strict=True)) == [(1, 0.0), (1, 1.0), (2, 0.0), (2, 1.0)]
    assert (df.dtype == dtype).all() and df.device.str.startswith("cuda").all()
    assert df.hardware.str.contains(torch.cuda.get_device_name(), regex=False).all()
    assert df.alpha.between(0, 1).all() and (df.runs == 4).all()
    assert (df.t_target_ms > 0).all() and (df.t_draft_ms > 0).all() and (df.t_verify_ms > 0).all()
    assert (df.mean_accepted_tokens >= 1).all() and (df.mean_accepted_tokens <= df.k + 1).all()
    assert f"wrote 4 rows to {out}" in done.stdout


@pytest.mark.slow
def test_bench_tree_rows_are_predicted_from_their_tree(tiny_pair, tmp_path, capsys):
    code, out = run_bench(tiny_pair, tmp_path, "--tree", "chain:2", "optimal:6,3", "--tree-p", "0.5,0.2")
    assert code == 0
    df = pd.read_csv(out)
    assert df.tree.tolist() == [
        "chain:2 (2 drafts, depth 2)",
        "optimal:6,3 (6 drafts, depth 3)",
    ] * 2 and df.temperature.tolist() == [0, 0, 1, 1]
    assert df.k.tolist() == [2, 6, 2, 6] and df.tree_depth.tolist() == [2, 3, 2, 3]
    assert df[df.temperature == 0].greedy_exact.astype(bool).all()
    assert (df.predicted_tokens_per_round >= 1).all() and (df.predicted_tokens_per_round <= df.tree_depth + 1).all()
    for row in df.itertuples():  # F at the row's own measured p̂, recomputed from its tree_p
        p = [float(x) for x in row.tree_p.split(";")]
        tree = trees.parse_shape(row.tree.split()[0], [0.5, 0.2])
        assert row.predicted_tokens_per_round == pytest.approx(trees.expected_tokens(tree, p), abs=1e-3)
    assert "tree" in capsys.readouterr().out.splitlines()[0]
    loaded, report = measurements.load_measurements(out)
    assert report.rows_loaded == 4 and not report.row_errors
    f, c, d = df.predicted_tokens_per_round, df.c, df.tree_depth
    assert loaded.predicted_speedup.to_numpy() == pytest.approx((f * c / (c + d)).to_numpy())  # S = F / (1 + D/c)


def test_bench_tree_without_p_measures_it_by_a_pilot_run(tiny_pair, tmp_path, capsys):
    code, out = run_bench(tiny_pair, tmp_path, "--tree", "topk:2,2,4", "--temperature", "0")
    assert code == 0 and pd.read_csv(out).tree.tolist() == ["topk:2,2,4 (4 drafts, depth 2)"]
    assert "T = 0: p measured by a pilot run (32 drafts, depth 4)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tree", "weird:3"], "tree: 'weird:3' is not a draft shape"),
        (["--tree", "chain:0"], "every number an integer >= 1"),
        (["--tree", "chain:17"], "has depth 17; at most 16"),
        (["--tree", "optimal:8,3", "--tree-p", "0.7,0.5"], "p must sum to at most 1"),
        (["--tree", "chain:2", "--batch-size", "2"], "--tree drafts trees at batch size 1"),
    ],
)
def test_bench_tree_bad_shapes_are_named(tiny_pair, tmp_path, capsys, extra, message):
    code, out = run_bench(tiny_pair, tmp_path, *extra)
    assert code == 2 and not out.exists()
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_bench_trace_writes_a_replayable_greedy_trace(tiny_pair, tmp_path, capsys):
    from specviz.core import policies

    trace_file = tmp_path / "trace.jsonl"
    code, out = run_bench(tiny_pair, tmp_path, "--temperature", "0", "--trace", str(trace_file))
    assert code == 0 and "wrote the greedy trace (16 positions × K_max = 2, 2 prompts)" in capsys.readouterr().out
    trace = policies.load_trace(trace_file)
    assert trace.positional and trace.k_max == 2 and trace.segments().tolist() == [0] * 8 + [1] * 8
    # replaying K = 2 walks each prompt's rounds: the CSV's tokens per round for K = 2, prompt by prompt
    replayed = policies.replay(policies.constant(2), trace, c=10)
    row = pd.read_csv(out).query("k == 2").iloc[0]
    assert replayed.tokens_per_round == pytest.approx(row.mean_accepted_tokens)
    code, _ = run_bench(tiny_pair, tmp_path, "--temperature", "1", "--trace", str(trace_file))
    assert code == 0 and "wrote the sampled trace (" in capsys.readouterr().out
    sampled = policies.load_trace(trace_file)
    assert not sampled.positional and sampled.k_max == 2 and set(sampled.segments().tolist()) == {0, 1}
    assert np.nanmax(sampled.p_token) <= 1 and (sampled.q_top >= sampled.q_token - 1e-6).all()
    code, _ = run_bench(tiny_pair, tmp_path, "--tree", "chain:2", "--trace", str(trace_file))
    assert code == 2 and "--trace records traces of chains at batch size 1" in capsys.readouterr().err


@pytest.mark.slow
def test_the_specviz_command_is_python_m_specviz(tmp_path):
    """pyproject.toml's console script (installed by requirements-dev.txt's ``-e .``) runs the same CLI from any folder."""
    import shutil

    command = shutil.which("specviz")
    if command is None:
        pytest.skip("the specviz command is not installed: pip install -r requirements-dev.txt (or pip install -e .)")
    done = subprocess.run([command, "bench", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    via_module = subprocess.run(
        [sys.executable, "-m", "specviz", "bench", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and via_module.returncode == 0, done.stderr + via_module.stderr
    assert done.stdout == via_module.stdout and "--k K" in done.stdout

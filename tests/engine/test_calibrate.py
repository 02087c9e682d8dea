"""python -m specviz calibrate: microbenchmarks, the measured grid, and a prediction that never sees it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from specviz import cli
from specviz.core import hardware
from specviz.engine import calibrate
from specviz.engine.models.gpt import GPT, GPTConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=64)


@pytest.fixture(scope="module")
def tiny() -> GPT:
    torch.manual_seed(0)
    return GPT(TINY).eval()


@pytest.mark.slow
def test_a_small_grid_is_measured_and_predicted(tiny):
    gpu, frame = calibrate.calibrate({"tiny": tiny}, [1, 2], [1, 3], [8, 62], repeats=1, stream_mb=8)
    assert hardware.gpu_spec(gpu)["bandwidth_tbs"] > 0 and gpu["fp32_tflops"] > 0
    assert gpu["overhead_s"] >= 0 and gpu["layer_overhead_s"] >= 0
    # context 62 + 3 tokens exceeds the 64-position block: those cells are skipped
    assert len(frame) == 2 * 2 * 2 - 2 and not ((frame.context == 62) & (frame.tokens == 3)).any()
    assert (frame.measured_s > 0).all() and (frame.predicted_s > 0).all()
    np.testing.assert_allclose(frame.ratio, frame.predicted_s / frame.measured_s)


def test_the_prediction_never_sees_the_measured_step_times(tiny, monkeypatch):
    """Change every measured time: the predictions stay the same (no fitting to what is predicted)."""
    figures = dict(
        decode_bandwidth=lambda w, mb: 2e10, decode_matmul_rate=lambda w: 5e10, engine_overheads=lambda: (1e-4, 2e-5)
    )
    for name, fn in figures.items():
        monkeypatch.setattr(calibrate, name, fn)
    monkeypatch.setattr(calibrate, "forward_seconds", lambda *a, **k: 1.0)
    _, first = calibrate.calibrate({"tiny": tiny}, [1, 4], [1, 2], [8], repeats=1)
    monkeypatch.setattr(calibrate, "forward_seconds", lambda *a, **k: 0.001)
    gpu, second = calibrate.calibrate({"tiny": tiny}, [1, 4], [1, 2], [8], repeats=1)
    pd.testing.assert_series_equal(first.predicted_s, second.predicted_s)
    # and the prediction is the roofline with the machine's own figures and fixed costs
    spec = calibrate.model_spec_of(tiny, "tiny")
    want = hardware.step_time(spec, gpu, 4, 8, 2, dtype="fp32", efficiency=hardware.efficiency_for(gpu))
    assert second.loc[(second.batch == 4) & (second.tokens == 2), "predicted_s"].iloc[0] == pytest.approx(want)
    assert hardware.efficiency_for(gpu).overhead_s == 1e-4 and hardware.efficiency_for(gpu).compute == 1.0


def test_our_gpt_as_a_hardware_model_has_its_parameter_count(tiny):
    spec = calibrate.model_spec_of(tiny, "tiny")
    assert hardware.parameter_count(spec) == tiny.num_params()


@pytest.mark.slow
def test_cli_writes_the_machine_and_the_grid(tiny, tmp_path, capsys):
    tiny.save(tmp_path / "pair" / "target")
    tiny.save(tmp_path / "pair" / "draft")
    argv = ["calibrate", "--pair", str(tmp_path / "pair"), "--out", str(tmp_path / "cal")]
    argv += ["--batches", "1", "--tokens", "1,2", "--contexts", "8", "--repeats", "1"]
    assert cli.main(argv) == 0
    assert "median |predicted / measured - 1|" in capsys.readouterr().out
    machine = hardware.calibrated_machine(tmp_path / "cal")
    assert machine is not None and machine["name"].startswith("this machine")
    steps = pd.read_csv(tmp_path / "cal" / "steps.csv")
    assert set(steps.model) == {"target", "draft"} and len(steps) == 4
    assert json.loads((tmp_path / "cal" / "machine.json").read_text())["source"].startswith("python -m specviz")


def test_cli_names_a_missing_pair(tmp_path, capsys):
    assert cli.main(["calibrate", "--pair", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    assert "config.json is missing" in capsys.readouterr().err
    assert hardware.calibrated_machine(tmp_path / "nowhere") is None


def test_verify_cost_and_k_star_by_batch_from_the_tables(tiny):
    frame = pd.DataFrame(
        {
            "model": "target",
            "batch": 1,
            "context": 8,
            "tokens": [1, 2, 3, 5],
            "measured_s": [1.0, 1.1, 1.3, 1.8],
            "predicted_s": [1.0, 1.0, 1.2, 1.6],
        }
    )
    v = calibrate.verify_cost(frame, "target")
    assert v.k.tolist() == [1, 2, 4]
    np.testing.assert_allclose(v.v_measured, [0.1, 0.15, 0.2])
    np.testing.assert_allclose(v.v_predicted, [0.0, 0.1, 0.15])
    with pytest.raises(ValueError, match="no one-token step of draft"):
        calibrate.verify_cost(frame.assign(model="draft", tokens=[2, 3, 5, 9]), "draft")

    spec = calibrate.model_spec_of(tiny, "tiny")
    gpu = {
        "name": "cpu",
        "memory_gb": 8,
        "bandwidth_tbs": 0.02,
        "fp32_tflops": 0.05,
        "bf16_tflops": 0.1,
        "fp16_tflops": 0.1,
        "interconnect_gbs": 1,
        "overhead_s": 1e-4,
        "layer_overhead_s": 1e-5,
    }
    batched = pd.DataFrame(
        {
            "batch_size": [1, 1, 8, 8, 2, 2, 2],
            "temperature": 0.0,
            "k": [4, 2, 2, 4, 4, 2, 2],  # rows in any order; K = 2 twice at B = 2 (its median counts)
            "alpha": 0.8,
            "speedup": [1.8, 1.5, 0.9, 0.7, 1.6, 1.2, 2.0],
        }
    )
    table = calibrate.k_star_by_batch(batched, spec, spec, gpu, 8)
    assert table.batch.tolist() == [1, 2, 8] and table.k_star_measured.tolist() == [4, 2, 0]
    roofline = hardware.speedup_by_batch(spec, spec, gpu, 0.8, [1], [8], 4, dtype="fp32").iloc[0]
    s2, s4 = roofline["s_2"], roofline["s_4"]  # the prediction chooses among the benchmarked K only
    assert table.k_star_predicted.iloc[0] == (0 if max(s2, s4) <= 1 else 2 if s2 >= s4 else 4)

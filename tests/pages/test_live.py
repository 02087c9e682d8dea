"""The live benchmark: limits, pair checks, the run queue, cell details, and the page end to end (AppTest)."""

from __future__ import annotations

import itertools
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from _apps import click, open_app, shown_errors
from streamlit.testing.v1 import AppTest

from specviz.app import live
from specviz.app.share import by_key
from specviz.core import policies, trees
from specviz.data import measurements, store
from specviz.engine import bench, decoding
from specviz.engine.models import load_pair

ROOT = Path(__file__).resolve().parents[2]
TINY = {"ks": "1,2", "temps": "0", "new_tokens": "16", "n_prompts": "2"}  # the tiny configuration

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----------------------------------------------------------------------------- limits and checks


def test_limits_defaults_hosted_and_overrides():
    assert live.limits_from_env({}) == live.Limits()
    hosted = live.limits_from_env({"SPECVIZ_HOSTED": "1", "SPECVIZ_HF_ALLOWLIST": "gpt2-large,gpt2; a/t , a/d"})
    assert hosted.hosted and hosted.max_new_tokens == 256 and hosted.max_wall_s == 120
    assert hosted.hf_allowlist == ("gpt2-large,gpt2", "a/t,a/d")
    assert live.limits_from_env({"SPECVIZ_MAX_NEW_TOKENS": "64", "SPECVIZ_MAX_WALL_S": "2.5"}).max_wall_s == 2.5
    for env, name in (
        ({"SPECVIZ_MAX_REPEATS": "0"}, "SPECVIZ_MAX_REPEATS"),
        ({"SPECVIZ_MAX_CELLS": "many"}, "SPECVIZ_MAX_CELLS"),
        ({"SPECVIZ_HF_ALLOWLIST": "gpt2"}, "SPECVIZ_HF_ALLOWLIST"),
    ):
        with pytest.raises(ValueError, match=name):
            live.limits_from_env(env)


HOSTED = live.Limits(hosted=True, hf_allowlist=("gpt2-large,gpt2",))


@pytest.mark.parametrize("spec", ["/etc,/tmp", "./models", "~/x,~/y", "C:/m,C:/d", str(ROOT) + ",gpt2"])
def test_hosted_mode_refuses_local_paths(spec):
    with pytest.raises(ValueError, match="not allowed on this hosted deployment"):
        live.check_pair(spec, HOSTED)


def refusal(spec: str, limits: live.Limits) -> str:
    """check_pair's message for ``spec``, with the value it quotes replaced by VALUE."""
    with pytest.raises(ValueError) as info:
        live.check_pair(spec, limits)
    return str(info.value).replace(repr(spec.replace(" ", "")), "VALUE")


def test_hosted_mode_gives_one_message_whatever_exists_on_disk(monkeypatch):
    """Hosted, a refused pair's message is the same whether its parts exist on the server or not.

    Was a defect: 'data,pages' (folders of the working directory) was refused as "local paths are not
    allowed" and 'nonexist1,nonexist2' as "not on this deployment's allow-list": an existence oracle.
    """
    monkeypatch.chdir(ROOT)
    assert Path("data").is_dir() and Path("pages").is_dir() and not Path("nonexist1").exists()
    specs = ["data,pages", "nonexist1,nonexist2", "data", "nonexist1", "/etc,/tmp", "/nonexist,/nope", "gpt2,data"]
    messages = {spec: refusal(spec, HOSTED) for spec in specs}
    assert len(set(messages.values())) == 1, messages
    assert (
        messages["data,pages"]
        == "pair VALUE is not allowed on this hosted deployment; allowed: 'bundled', 'bundled-target+ngram', 'gpt2-large,gpt2'"
    )
    # an allow-listed id that is also a folder here would load the folder: refused with that same message
    shadowed = replace(HOSTED, hf_allowlist=("gpt2-large,gpt2", "data,pages"))
    with pytest.raises(ValueError, match="^pair 'data,pages' is not allowed on this hosted deployment; allowed: "):
        live.check_pair("data,pages", shadowed)
    assert live.check_pair("gpt2-large,gpt2", shadowed) == "gpt2-large,gpt2"


def test_hosted_mode_allows_bundled_and_the_allow_list_only():
    assert live.check_pair("bundled", HOSTED) == "bundled"
    assert live.check_pair(" gpt2-large, gpt2 ", HOSTED) == "gpt2-large,gpt2"
    with pytest.raises(
        ValueError, match=r"not allowed.*allowed: 'bundled', 'bundled-target\+ngram', 'gpt2-large,gpt2'"
    ):
        live.check_pair("meta-llama/Llama-3-70B,meta-llama/Llama-3-8B", HOSTED)
    # not hosted: any pair is passed on to the loader
    assert live.check_pair("/some/folder", live.Limits()) == "/some/folder"
    with pytest.raises(ValueError, match="empty"):
        live.check_pair("  ", live.Limits())


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (dict(ks=[]), "K values"),
        (dict(ks=[0]), "K values"),
        (dict(temperatures=[3.0]), "temperatures"),
        (dict(new_tokens=2000), "new tokens"),
        (dict(repeats=0), "repeats"),
        (dict(prompts=["  "]), "prompts"),
        (dict(ks=list(range(1, 17)), temperatures=[0.0, 0.5, 1.0, 0.7, 0.2]), "cells"),
    ],
)
def test_request_over_the_caps_names_the_field(args, field):
    request = dict(ks=[1, 2], temperatures=[0.0], new_tokens=16, repeats=1, prompts=["def f():"]) | args
    with pytest.raises(ValueError, match=field):
        live.check_request(**request, limits=live.Limits())


# ----------------------------------------------------------------------------- the run queue


@pytest.mark.slow
def test_run_queue_serialises_and_reports_waiting():
    queue, spans, waits = live.RunQueue(), [], []

    def job(name: str) -> None:
        with queue.hold(name, on_wait=waits.append, poll_s=0.05):
            t0 = time.monotonic()
            time.sleep(0.3)
            spans.append((t0, time.monotonic()))

    threads = [threading.Thread(target=job, args=(f"run {i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    (_a0, a1), (b0, _b1) = sorted(spans)
    assert a1 <= b0, "two runs overlapped"
    assert waits and all(w.startswith("Queued behind another run (run ") for w in waits)
    assert queue.busy() is None


def test_run_queue_is_released_when_the_holder_is_interrupted():
    queue = live.RunQueue()
    with pytest.raises(KeyboardInterrupt), queue.hold("a"):
        raise KeyboardInterrupt  # what a Stop does to the script thread
    with queue.hold("b", poll_s=0.01) as waited:
        assert waited < 0.5


# ----------------------------------------------------------------------------- cell details


@pytest.fixture(scope="module")
def pair():
    return load_pair("bundled")


@pytest.mark.slow
def test_cell_details_from_real_runs(pair):
    target, draft, tok = pair
    prompts = [torch.tensor(tok.encode("class Parser:\n    def __init__(self"), dtype=torch.long)]
    runs = bench.measure_runs(target, draft, prompts, 3, 0.0, 24, 2)
    counts = live.n_counts(runs, 3)
    assert counts.shape == (4,) and counts.sum() == sum(len(r.speculative.rounds) for r in runs)
    emitted = sum(len(x.emitted) for r in runs for x in r.speculative.rounds)
    assert sum((i + 1) * c for i, c in enumerate(counts)) == emitted >= 2 * 24
    cost = live.cost_breakdown(runs, 3)
    assert cost["basic_model_ms"] == pytest.approx(cost["t_target_ms"] + 3 * cost["t_draft_ms"])
    assert all(cost[k] > 0 for k in ("draft_ms", "verify_ms", "other_ms"))
    segments = live.text_segments(tok, runs[0].speculative.rounds)
    generated = tok.decode(runs[0].speculative_tokens.tolist())
    assert "".join(text for _, text in segments)[: len(generated)] == generated
    kinds = [k for k, _ in segments]
    assert set(kinds) <= {"accepted", "correction", "bonus"} and all(a != b for a, b in itertools.pairwise(kinds))
    html = live.segments_html("<prompt & more>", [("accepted", "<b>x</b>")])
    assert "&lt;prompt &amp; more&gt;" in html and "&lt;b&gt;x&lt;/b&gt;" in html and "<b>" not in html


def test_first_divergence_margin(pair):
    target, _, tok = pair
    prompt = torch.tensor(tok.encode("import os\n"), dtype=torch.long)
    out, _ = decoding.generate_target_only(target, prompt, 20, 0.0)
    assert decoding.first_divergence(target, prompt, out, out.clone()) is None
    wrong = out.clone()
    wrong[7] = (wrong[7] + 1) % 256
    div = decoding.first_divergence(target, prompt, out, wrong)
    with torch.inference_mode():
        logits = target(torch.cat([prompt, out[:7]]).view(1, -1))[0, -1].float()
    top2 = torch.topk(logits, 2).values
    assert (div.position, div.expected, div.got) == (7, int(out[7]), int(wrong[7]))
    assert div.margin == pytest.approx(float(top2[0] - top2[1]))
    assert int(logits.argmax()) == int(out[7]) and div.near_tie is (div.margin < 1e-3)


# ----------------------------------------------------------------------------- controls and requests


def test_controls_take_their_defaults_and_bounds_from_the_limits():
    capped = by_key(live.controls(live.Limits(max_new_tokens=50, max_prompts=2, max_repeats=3)))
    assert (capped["new_tokens"].default, capped["new_tokens"].hi) == (50, 50)
    assert (capped["n_prompts"].default, capped["n_prompts"].hi) == (2, 2)
    assert capped["repeats"].hi == 3 and capped["dtype"].choices == live.DTYPES
    default = by_key(live.controls(live.Limits()))
    assert (default["new_tokens"].default, default["new_tokens"].hi, default["n_prompts"].hi) == (96, 1024, 12)


def test_make_request_checks_and_resolves_the_controls():
    values = {p.key: p.default for p in live.controls(live.Limits())}
    req = live.make_request(values | {"temps": [1.0, 0.0]}, live.Limits())
    assert req.prompts == tuple(bench.load_prompts()[:4]) and req.temperatures == (0.0, 1.0)
    assert (req.ks, req.cells, req.max_wall_s) == ((1, 2, 4, 6), 8, 900.0)
    assert req.device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert req.meta() == {
        "label": "live: bundled",
        "source": "specviz live page",
        "target_model": "bundled/target",
        "draft_model": "bundled/draft",
    }
    custom = live.make_request(values | {"prompts": "custom", "text": "def f():", "pair": "a/t, a/d"}, live.Limits())
    assert custom.prompts == ("def f():",) and custom.pair == "a/t,a/d"
    assert (custom.meta()["target_model"], custom.meta()["draft_model"]) == ("a/t", "a/d")
    with pytest.raises(ValueError, match="dtype: 'int8'"):
        live.make_request(values | {"dtype": "int8"}, live.Limits())
    with pytest.raises(ValueError, match="new tokens: 2000"):
        live.make_request(values | {"new_tokens": 2000}, live.Limits())


def test_dtype_names_and_device_summary():
    assert live.torch_dtype("auto") is None and live.torch_dtype("bfloat16") is torch.bfloat16
    with pytest.raises(ValueError, match="dtype: 'half'"):
        live.torch_dtype("half")
    assert live.gpu_summary("cpu") is None
    if not torch.cuda.is_available():
        assert live.gpu_summary("auto") is None


# ----------------------------------------------------------------------------- the run controller


def tiny_request(**changes) -> live.Request:
    """Two prompts, so every cell has two runs and a Stop can land between them."""
    request = live.Request(
        pair="bundled",
        device="cpu",
        dtype="auto",
        prompts=("def parse(text):\n    ", "import os\n"),
        ks=(1, 2),
        temperatures=(0.0,),
        new_tokens=6,
        repeats=1,
        seed=0,
        max_wall_s=120.0,
    )
    return replace(request, **changes)


@pytest.fixture(scope="module")
def worker():
    """A worker thread of its own (not the page's), loading the bundled pair once for the module."""
    return live.Worker()


@pytest.mark.slow
def test_sweep_reports_progress_as_cell_and_run(pair):
    target, draft, tok = pair
    seen = []
    rows = bench.sweep(
        target, draft, tok, ["def f(x):", "import os\n"], [1, 3], [0.0, 1.0], 4, 1, on_progress=seen.append
    )
    # (cell, run, runs done): before each of the 4 cells × 2 runs, then once after the last run
    before = [(1, 1, 0), (1, 2, 1), (2, 1, 2), (2, 2, 3), (3, 1, 4), (3, 2, 5), (4, 1, 6), (4, 2, 7)]
    assert [(p.cell, p.run, p.done) for p in seen] == [*before, (4, 2, 8)]
    assert all((p.cells, p.runs, p.total) == (4, 2, 8) for p in seen)
    for p in seen:  # each report names the cell that is running, whatever the loop order
        assert (p.k, p.temperature) == (rows.k.iloc[p.cell - 1], rows.temperature.iloc[p.cell - 1])
    assert (seen[0].fraction, seen[3].fraction, seen[-1].fraction) == (0.0, 3 / 8, 1.0)


@pytest.mark.slow
def test_two_runs_serialise_through_the_process_wide_queue(worker):
    first, second = live.LiveRun(tiny_request(ks=(1,))), live.LiveRun(tiny_request(ks=(1,)))
    waits: list[str] = []

    def first_tick() -> None:  # keep the first run going until the second has said it is queued
        deadline = time.monotonic() + 30
        while not waits and time.monotonic() < deadline:
            time.sleep(0.05)

    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(live.execute, first, first_tick, worker=worker)
        assert _eventually(lambda: first.submitted is not None)
        b = pool.submit(live.execute, second, on_wait=waits.append, worker=worker)
        a.result(60), b.result(60)
    assert waits and all(w.startswith("Queued behind another run (a run of 1 cell,") for w in waits)
    assert second.submitted >= first.started + first.seconds  # the second left the queue after the first ended
    assert [len(r.rows) for r in (first, second)] == [1, 1] and first.done and second.done
    assert first.stopped is None and second.stopped is None
    assert live.RUN_QUEUE.busy() is None


def _eventually(condition, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.slow
def test_stop_keeps_the_finished_cells(worker, monkeypatch):
    run = live.LiveRun(tiny_request(ks=(1, 2, 3)))
    real_measure, cells = bench.measure_runs, []

    def measure_runs(*args, **kwargs):
        cells.append(args[3])  # K
        if len(cells) == 2:  # the second cell waits for the Stop, then asks before its first run
            assert _eventually(lambda: run.stop_requested)
        return real_measure(*args, **kwargs)

    def tick() -> None:
        if len(cells) == 2:
            raise KeyboardInterrupt  # what the Stop button does to the page's script, in its progress tick

    monkeypatch.setattr(bench.cell, "measure_runs", measure_runs)
    with pytest.raises(KeyboardInterrupt):
        live.execute(run, tick, worker=worker, poll_s=0.01)
    assert [row["k"] for row in run.rows] == [1] and [d["k"] for d in run.details] == [1]
    assert cells == [1, 2] and run.stopped == "stopped"  # the third cell never started
    assert live.RUN_QUEUE.busy() is None
    run.interrupted(by_stop_button=True)  # what the page's next script run records
    assert run.done and run.stopped == "stopped by you"
    assert run.frame().k.tolist() == [1]


@pytest.mark.slow
def test_wall_time_cap_stops_between_runs_and_keeps_finished_cells(worker, monkeypatch):
    now = [100.0]
    run = live.LiveRun(tiny_request(ks=(1, 2), max_wall_s=5.0), clock=lambda: now[0])
    real_measure = bench.measure_runs

    def slow_cell(*args, **kwargs):  # every cell "takes" 6 s of the fake clock
        runs = real_measure(*args, **kwargs)
        now[0] += 6.0
        return runs

    monkeypatch.setattr(bench.cell, "measure_runs", slow_cell)
    live.execute(run, worker=worker)
    assert run.stopped == "the wall-time cap of 5 s was reached"
    assert [row["k"] for row in run.rows] == [1] and run.done and run.seconds == 6.0
    assert live.RUN_QUEUE.busy() is None


def test_progress_bar_reads_the_sweeps_report():
    now = [10.0]
    run = live.LiveRun(tiny_request(), clock=lambda: now[0])
    run.submitted = 7.0
    assert live.progress_bar(run) == (0.0, "Loading the pair and warming up… 3 s")
    run.started = 8.0  # loaded; warming up until the sweep's first report
    assert live.progress_bar(run)[0] == 0.0
    run.progress = bench.Progress(cell=2, cells=4, run=1, runs=2, k=3, temperature=0.7, done=2)
    assert live.progress_bar(run) == (0.25, "Cell 2/4 (K = 3, T = 0.7): run 1/2 · 2 s elapsed")
    run.progress = replace(run.progress, cell=4, run=2, done=8)
    assert live.progress_bar(run) == (1.0, "Finishing the last cell…")


def test_an_error_keeps_finished_cells_or_else_the_previous_results():
    previous = live.LiveRun(tiny_request())
    previous.rows.append({"k": 1})
    assert live.kept_after_error(live.LiveRun(tiny_request()), previous, RuntimeError("no such model")) is previous
    assert live.kept_after_error(previous, previous, ValueError("bad request")) is previous  # no new run began
    assert live.kept_after_error(None, None, ValueError("bad request")) is None
    partial = live.LiveRun(tiny_request())
    partial.rows.append({"k": 1})
    assert live.kept_after_error(partial, previous, RuntimeError("out of memory")) is partial
    assert partial.done and partial.stopped == "an error in a later cell: out of memory"


def test_what_the_page_shows_about_a_run_comes_in_the_sessions_language():
    now = [10.0]
    run = live.LiveRun(tiny_request(), clock=lambda: now[0])
    run.started, run.progress = 8.0, bench.Progress(cell=2, cells=4, run=1, runs=2, k=3, temperature=0.7, done=2)
    assert live.progress_bar(run, "zh") == (0.25, "单元 2/4（K = 3，T = 0.7）：第 1/2 次运行 · 已用 2 s")
    run.interrupted(by_stop_button=True)
    assert (run.stopped, run.stopped_text(), run.stopped_text("zh")) == ("stopped by you",) * 2 + ("由你手动停止",)
    detail = {"k": 2, "temperature": 0.0, "tree": None, "exact": True}
    assert live.cell_label(detail, "zh") == "K = 2, T = 0"
    assert live.exactness_message(detail, "zh") == (
        True,
        "精确性（K = 2，贪心解码）：每次运行中，推测解码的输出都与只用目标模型解码的输出完全相同。",
    )
    assert live.cell_label(detail | {"tree": "chain:2 (2 drafts, depth 2)"}, "zh").startswith("树 chain:2")
    assert "被接受的草稿 token" in live.legend_html("zh")
    assert 'title="奖励"' in live.segments_html("", [("bonus", "x")], "zh")
    assert [live.legend_html().count(label) for label in live.SEGMENT_LABELS.values()] == [1, 1, 1]


# ----------------------------------------------------------------------------- the rows in the schema


@pytest.fixture(scope="module")
def live_rows(pair) -> list[dict]:
    """Rows as a live run produces them: one greedy and one sampled cell."""
    target, draft, tok = pair
    meta = tiny_request().meta()
    frame = bench.sweep(target, draft, tok, ["def f(x):"], [2], [0.0, 1.0], 6, 1, meta=meta)
    return frame.to_dict("records")


@pytest.mark.slow
def test_canonical_equals_loading_the_runs_csv_export(live_rows):
    direct = live.canonical(live_rows)
    loaded, report = measurements.load_measurements(store.export_csv(pd.DataFrame(live_rows)), name="live run")
    assert not report.row_errors
    assert list(direct.columns) == list(loaded.columns)
    assert direct.dtypes.astype(str).tolist() == loaded.dtypes.astype(str).tolist()
    pd.testing.assert_frame_equal(direct.reset_index(drop=True), loaded.reset_index(drop=True), rtol=1e-12)
    assert direct.index.tolist() == [1, 2] and direct.index.name == "row"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("column", "value", "allowed"),
    [
        ("alpha", -0.5, "[0, 1]"),
        ("k", 0, "an integer in [1, "),
        ("mean_accepted_tokens", 9.0, "[1, 3]"),  # K = 2
        ("c", -1.0, "a finite number > 0"),
        ("v", float("inf"), "a finite number >= 0"),
        ("runs", 1.5, "an integer in [1, "),
        ("per_position_acceptance", "0.5;2", "2 numbers in [0, 1]"),
        ("greedy_exact", "maybe", "true / false"),
    ],
)
def test_a_row_outside_the_schema_names_the_row_the_column_the_value_and_the_range(live_rows, column, value, allowed):
    assert live.canonical(live_rows).k.tolist() == [2, 2]  # the rows as measured pass
    rows = [dict(r) for r in live_rows]
    rows[1][column] = value
    message = rf"live run: .*row 2, {column}: '{re.escape(str(value))}' — allowed: {re.escape(allowed)}"
    with pytest.raises(ValueError, match=message):
        live.canonical(rows)
    run = live.LiveRun(tiny_request())
    run.rows.extend(rows)
    with pytest.raises(ValueError, match=message):  # what the page shows (ui.reported_errors), not a traceback
        run.frame()


@pytest.mark.slow
def test_canonical_never_reads_rows_as_percent(live_rows):
    rows = [r | {"alpha": a} for r, a in zip(live_rows, (1.0, 1.5), strict=True)]  # a file like this is percent
    with pytest.raises(ValueError, match=r"live run: a row does not pass the measurement schema: row 2, alpha: '1.5'"):
        live.canonical(rows)


def test_canonical_refuses_unknown_columns_and_no_rows(live_rows):
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['speed'\]"):
        live.canonical([r | {"speed": 1.0} for r in live_rows])
    with pytest.raises(ValueError, match="live run: no data rows"):
        live.canonical([])


# ----------------------------------------------------------------------------- the page


def page(**query: str) -> AppTest:
    return open_app("pages/live.py", timeout=120, **query)


def test_opening_a_link_restores_controls_but_does_not_run(db_url):
    at = page(ks="2,4", temps="0,1", new_tokens="32", repeats="2", seed="5", n_prompts="3")
    assert at.multiselect(key="live.ks").value == [2, 4]
    assert at.multiselect(key="live.temps").value == [0.0, 1.0]
    assert (at.number_input(key="live.new_tokens").value, at.number_input(key="live.repeats").value) == (32, 2)
    assert not at.get("plotly_chart") and not at.dataframe  # nothing ran
    assert any("CPU" in i.value for i in at.info)  # no GPU here: the CPU note


def test_a_link_restores_the_engine_and_a_bad_one_is_named(db_url):
    at = page(engine="both")
    assert at.radio(key="live.engine").value == "both"
    at = click(page(**(TINY | {"engine": "compiled", "pair": "gpt2-large,gpt2"})), "Run")
    assert any("engine: compiled steps are built for specviz's own GPT pair" in e.value for e in at.error)


@pytest.mark.slow
def test_both_engines_measure_the_same_cells_side_by_side(db_url):
    """engine=both: every cell eagerly, then compiled (steps compiled outside the timings); one series each."""
    at = click(page(**(TINY | {"engine": "both"})), "Run")
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert table["compiled"].tolist() == [False, False, True, True] and table.k.tolist() == [1, 2, 1, 2]
    assert table["greedy_exact"].all()
    spec = at.get("plotly_chart")[0].proto.spec
    assert "compiled=True" in spec and "compiled=False" in spec  # two series on the speedup chart


@pytest.mark.slow
def test_tiny_run_end_to_end_and_save(db_url):
    t0 = time.monotonic()
    at = click(page(**TINY), "Run")
    assert time.monotonic() - t0 < 60
    assert not at.error
    table = at.dataframe[0].value
    assert table.k.tolist() == [1, 2] and (table.temperature == 0).all()
    assert table["greedy_exact"].tolist() == [True, True]
    assert np.all((table["α̂ = A/(A+R)"] > 0.3) & (table["α̂ = A/(A+R)"] <= 1))
    assert [s.value for s in at.success if s.value.startswith("Exactness")] == [
        f"Exactness (K = {k}, greedy): speculative output equals target-only output in every run." for k in (1, 2)
    ]
    assert [t.label for t in at.tabs] == [
        "Speedup vs K",
        "E[N] vs K",
        "N per round",
        "Per position",
        "Cost per round",
        "Text",
    ]
    charts = at.get("plotly_chart")
    assert len(charts) == 5
    assert "measured-cost model" in charts[0].proto.spec and "K*" in charts[0].proto.spec
    assert "accepted" in " ".join(m.value for m in at.markdown)
    click(at, "Save to the run library")
    (run,) = store.list_runs(store.open_library(db_url)).itertuples()
    assert run.n_rows == 2 and run.source == "live page" and run.label.startswith("live: bundled")
    assert any(f"compare-runs?runs={run.id}" in s.value for s in at.success)


@pytest.mark.slow
def test_stop_keeps_finished_cells(db_url, monkeypatch):
    """A Stop click while the second cell runs: Streamlit raises StopException in the script thread at its
    next progress tick; the worker stops before its next run; the finished cell stays."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    real_measure, cells_started = bench.measure_runs, threading.Event()

    def measure(*args, **kwargs):
        if measure.calls == 1:
            cells_started.set()  # the second cell is running now
        measure.calls += 1
        return real_measure(*args, **kwargs)

    measure.calls = 0

    def wait_then_stop(future, tick, interval_s=0.2):
        assert cells_started.wait(60), "the second cell never started"
        tick()
        raise StopException()  # what the Stop click does to the running script

    monkeypatch.setattr(bench.cell, "measure_runs", measure)
    monkeypatch.setattr(live.worker, "wait", wait_then_stop)
    at = page(**TINY)
    next(b for b in at.button if b.label == "Run").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    monkeypatch.setattr(live.worker, "wait", lambda *a, **k: pytest.fail("no run should start"))
    at = click(at, "Stop")
    assert any("stopped by you" in w.value and "1 of 2 cell(s)" in w.value for w in at.warning), [
        w.value for w in at.warning
    ]
    assert at.dataframe[0].value.k.tolist() == [1]
    assert measure.calls == 2  # the worker did not go on to a third cell
    assert live.RUN_QUEUE.busy() is None  # the queue was released


@pytest.mark.slow
def test_wall_time_cap_stops_and_keeps_finished_cells(db_url, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_WALL_S", "0.001")
    at = click(page(**TINY), "Run")
    # the cap is checked before every run: at 1 ms not even the first run starts
    assert any("No cell finished" in i.value and "wall-time cap of 0.001 s" in i.value for i in at.info), [
        i.value for i in at.info
    ]
    assert live.RUN_QUEUE.busy() is None


@pytest.mark.slow
def test_second_run_queues_behind_another_and_completes(db_url):
    release = threading.Event()

    def other_session():
        with live.RUN_QUEUE.hold("another session's run"):
            release.wait(10)

    holder = threading.Thread(target=other_session)
    holder.start()
    time.sleep(0.1)
    threading.Timer(1.5, release.set).start()
    t0 = time.monotonic()
    at = click(page(**TINY), "Run")
    holder.join(10)
    assert time.monotonic() - t0 >= 1.4  # it waited for the other run …
    assert at.dataframe[0].value.k.tolist() == [1, 2]  # … and then completed


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"prompts": "custom", "text": ""}, "prompts: the prompt is empty"),
        ({"device": "cuda"}, "no CUDA GPU is available"),
        ({"pair": "no-such-org/no-such-model,no-such-org/draft"}, "no-such-org/no-such-model"),
    ],
)
@pytest.mark.slow
def test_bad_requests_are_clear_errors(db_url, query, message):
    if query.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    at = click(page(**(TINY | query)), "Run")
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not at.dataframe


@pytest.mark.slow
def test_missing_transformers_is_a_clear_error(db_url, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    at = click(page(**(TINY | {"pair": "gpt2-large,gpt2"})), "Run")
    assert any("needs the optional package transformers" in e.value for e in at.error)


def test_hosted_mode_refuses_a_linked_local_path(db_url, monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    monkeypatch.setenv("SPECVIZ_HF_ALLOWLIST", "gpt2-large,gpt2")
    at = page(pair="/etc,/tmp")
    assert any("not allowed on this hosted deployment" in e for e in shown_errors(at))
    assert at.selectbox(key="live.pair").value == "bundled"
    assert at.selectbox(key="live.pair").options == ["bundled", "bundled-target+ngram", "gpt2-large,gpt2"]
    at = page(pair="meta-llama/Llama-3-70B,meta-llama/Llama-3-8B")
    assert any("not allowed on this hosted deployment" in e for e in shown_errors(at))
    assert at.number_input(key="live.new_tokens").max == 256  # the hosted cap


def test_hosted_page_answers_existing_and_missing_paths_alike(db_url, monkeypatch):
    """/live?pair=data,pages and /live?pair=nonexist1,nonexist2 show the same error in hosted mode."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    monkeypatch.setenv("SPECVIZ_HF_ALLOWLIST", "gpt2-large,gpt2")
    assert Path("data").is_dir() and Path("pages").is_dir() and not Path("nonexist1").exists()
    shown = {}
    for spec in ("data,pages", "nonexist1,nonexist2"):
        at = page(pair=spec)
        (error,) = shown_errors(at)
        shown[spec] = error.replace(repr(spec), "VALUE")
        assert at.selectbox(key="live.pair").value == "bundled"
    assert shown["data,pages"] == shown["nonexist1,nonexist2"], shown
    assert "allowed: 'bundled', 'bundled-target+ngram', 'gpt2-large,gpt2'" in shown["data,pages"]


@pytest.mark.slow
def test_a_local_hugging_face_pair_runs_on_the_page(db_url, tmp_path):
    """Outside hosted mode a 'TARGET,DRAFT' pair of local transformers folders runs like the bundled one."""
    from specviz.engine.models import hf

    out = hf.export_pair("bundled", tmp_path / "hf")
    at = click(page(**(TINY | {"ks": "2", "n_prompts": "1", "pair": f"{out}/target,{out}/draft"})), "Run")
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert table.k.tolist() == [2] and table["greedy_exact"].tolist() == [True]
    assert at.dataframe[0].value["α̂ = A/(A+R)"].between(0, 1).all()


@pytest.mark.slow
def test_a_cell_that_cannot_fit_fails_before_any_run_and_keeps_earlier_results(db_url):
    at = click(page(**TINY), "Run")
    assert at.dataframe[0].value.k.tolist() == [1, 2]
    at.multiselect(key="live.ks").set_value([1, 16])
    at.number_input(key="live.new_tokens").set_value(480)
    at = click(at, "Run")
    assert any("exceeds the model's context of 512 tokens" in e.value for e in at.error)
    assert at.dataframe[0].value.k.tolist() == [1, 2]  # the previous results are still shown


def test_defaults_respect_lower_deployment_caps(db_url, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_NEW_TOKENS", "50")
    monkeypatch.setenv("SPECVIZ_MAX_PROMPTS", "2")
    at = page()
    assert at.number_input(key="live.new_tokens").value == 50
    assert at.number_input(key="live.n_prompts").value == 2
    assert "new_tokens" not in at.query_params and "n_prompts" not in at.query_params


def test_a_linked_temperature_outside_the_usual_choices_is_kept(db_url):
    at = page(temps="0.25")
    assert at.multiselect(key="live.temps").value == [0.25]


@pytest.mark.slow
def test_batched_run_measures_each_batch_size_and_saves(db_url):
    at = click(page(ks="2", temps="0", new_tokens="12", n_prompts="2", batches="1,4"), "Run")
    assert not at.error
    table = at.dataframe[0].value
    assert table["B"].tolist() == [1, 4] and table["greedy_exact"].tolist() == [True, True]
    assert (table["speedup (whole batch) (×)"] > 0).all()
    assert [s.value for s in at.success if s.value.startswith("Exactness")] == [
        f"Exactness (K = 2, B = {b}, greedy): speculative output equals target-only output in every run."
        for b in (1, 4)
    ]
    assert [c.key for c in at.get("plotly_chart")] == ["fig_batches"]
    at = click(at, "Save to the run library")
    assert any("Saved as run #" in s.value for s in at.success)


def test_batch_sizes_are_checked_and_named(db_url):
    limits = live.Limits(max_batch=8, max_cells=4)
    with pytest.raises(ValueError, match=r"batch sizes: 16 is outside \[1, 8\]"):
        live.check_request([2], [0.0], 8, 1, ["x"], limits, (1, 16))
    with pytest.raises(ValueError, match="K values × temperatures × batch sizes: 6 cells"):
        live.check_request([1, 2, 3], [0.0], 8, 1, ["x"], limits, (1, 2))
    values = dict(pair="a/b,c/d", prompts="custom", text="hi there", ks=[2], temps=[0.0], new_tokens=8, repeats=1)
    with pytest.raises(ValueError, match="batch sizes: decoding several sequences at once needs specviz's own GPT"):
        live.make_request({**values, "device": "cpu", "dtype": "auto", "seed": 0, "batches": [1, 4]}, live.Limits())
    at = page(batches="1,128")
    assert any("batches" in w.value for w in at.warning)  # a link over the cap falls back, saying why


def test_tree_requests_are_checked_and_named():
    values = {p.key: p.default for p in live.controls(live.Limits())} | {"shape": "tree", "temps": [0.0, 1.0]}
    req = live.make_request(values | {"trees": "chain:3  optimal:8,4", "tree_p": "0.6, 0.2"}, live.Limits())
    assert (req.trees, req.tree_p, req.cells) == (("chain:3", "optimal:8,4"), (0.6, 0.2), 4)
    assert live.make_request(values, live.Limits()).tree_p is None  # blank p: a pilot run measures it
    for changes, message in [
        ({"trees": "  "}, "trees: type at least one draft shape"),
        ({"trees": "optimal:8"}, "tree: 'optimal:8' is not a draft shape"),
        ({"trees": "chain:40"}, "has depth 40; at most 16"),
        ({"tree_p": "0.9, 0.3"}, "p must sum to at most 1"),
        ({"tree_p": "half"}, "p: 'half' is not a comma-separated list"),
        ({"batches": [1, 4]}, "batch sizes: draft trees decode one sequence at a time"),
        ({"pair": "a/t,a/d"}, "draft shape: trees need tree attention"),
    ]:
        with pytest.raises(ValueError, match=message):
            live.make_request(values | changes, live.Limits())
    with pytest.raises(ValueError, match="trees × temperatures: 6 cells; this deployment allows at most 4"):
        live.make_request(values | {"trees": "chain:1 chain:2 chain:3"}, live.Limits(max_cells=4))


@pytest.mark.slow
def test_tree_cell_details_price_one_draft_step_per_level(pair):
    target, draft, tok = pair
    tree = trees.optimal_tree([0.7, 0.15], 8, 3)
    prompts = [torch.tensor(tok.encode("class Parser:\n    def __init__(self"), dtype=torch.long)]
    runs = bench.measure_runs(target, draft, prompts, tree, 0.0, 24, 1)
    row = bench.aggregate(runs, tree, 0.0, 24)
    d = live.cell_details(row, runs, target, tok, ["class Parser:\n    def __init__(self"])
    assert d["basic_model_ms"] == pytest.approx(d["t_target_ms"] + tree.depth * d["t_draft_ms"])
    assert len(d["n_counts"]) == len(d["n_pmf"]) == tree.depth + 1 and d["n_pmf"].sum() == pytest.approx(1)
    assert live.cell_label(d) == f"tree {tree.describe()}, T = 0" and d["exact"]


@pytest.mark.slow
def test_a_tree_run_on_the_page_compares_tokens_per_round_with_f(db_url):
    at = page(shape="tree", trees="chain:2 optimal:6,3", tree_p="0.7,0.15", temps="0", new_tokens="16", n_prompts="2")
    assert at.text_input(key="live.trees").value == "chain:2 optimal:6,3"
    assert "live.ks" not in [m.key for m in at.multiselect]  # chains' K values are hidden while trees are chosen
    at = click(at, "Run")
    assert not at.error
    table = at.dataframe[0].value
    assert table["tree"].tolist() == ["chain:2 (2 drafts, depth 2)", "optimal:6,3 (6 drafts, depth 3)"]
    assert table["greedy_exact"].tolist() == [True, True]
    assert (table["tokens/round measured"] >= 1).all() and (table["F(T) at measured p"] >= 1).all()
    assert [t.label for t in at.tabs] == ["Tokens per round", "Speedup", "N per round", "Cost per round", "Text"]
    assert "F(T) at the measured p" in at.get("plotly_chart")[0].proto.spec
    assert any(s.value.startswith("Exactness (tree optimal:6,3") for s in at.success)
    click(at, "Save to the run library")
    (run,) = store.list_runs(store.open_library(db_url)).itertuples()
    assert run.n_rows == 2


def test_trace_requests_are_checked():
    values = {p.key: p.default for p in live.controls(live.Limits())} | {"trace": True}
    assert live.make_request(values, live.Limits()).trace
    for changes in ({"temps": [1.0]}, {"shape": "tree"}, {"batches": [1, 2]}):
        with pytest.raises(ValueError, match="record a trace: traces are of greedy chains"):
            live.make_request(values | changes, live.Limits())


@pytest.mark.slow
def test_a_live_run_records_a_replayable_trace(db_url):
    at = click(page(**(TINY | {"trace": "true"})), "Run")
    assert not at.error
    assert any(c.value.startswith("Greedy trace recorded: 32 positions × K_max = 2") for c in at.caption)
    result = at.session_state["live.result"]
    replayed = policies.replay(policies.constant(2), result.trace, c=10)
    row = result.frame().query("k == 2").iloc[0]
    assert replayed.tokens_per_round == pytest.approx(row["mean_accepted_tokens"])  # the engine's own rounds

"""The live benchmark: limits, pair checks, the run queue, cell details, and the page end to end (AppTest)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from _apps import click, open_app
from streamlit.testing.v1 import AppTest

from specviz import bench, decoding, live, store
from specviz.models import load_pair

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "live.py")
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
    with pytest.raises(ValueError, match="not allowed|local"):
        live.check_pair(spec, HOSTED)


def test_hosted_mode_allows_bundled_and_the_allow_list_only():
    assert live.check_pair("bundled", HOSTED) == "bundled"
    assert live.check_pair(" gpt2-large, gpt2 ", HOSTED) == "gpt2-large,gpt2"
    with pytest.raises(ValueError, match="allow-list.*allowed: bundled, gpt2-large,gpt2"):
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
    assert any(f"measured-data?runs={run.id}" in s.value for s in at.success)


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

    monkeypatch.setattr(bench, "measure_runs", measure)
    monkeypatch.setattr(live, "wait", wait_then_stop)
    at = page(**TINY)
    next(b for b in at.button if b.label == "Run").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    monkeypatch.setattr(live, "wait", lambda *a, **k: pytest.fail("no run should start"))
    at = click(at, "Stop")
    assert any("stopped by you" in w.value and "1 of 2 cell(s)" in w.value for w in at.warning), [
        w.value for w in at.warning
    ]
    assert at.dataframe[0].value.k.tolist() == [1]
    assert measure.calls == 2  # the worker did not go on to a third cell
    assert live.RUN_QUEUE.busy() is None  # the queue was released


def test_wall_time_cap_stops_and_keeps_finished_cells(db_url, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_WALL_S", "0.001")
    at = click(page(**TINY), "Run")
    # the cap is checked before every run: at 1 ms not even the first run starts
    assert any("No cell finished" in i.value and "wall-time cap of 0.001 s" in i.value for i in at.info), [
        i.value for i in at.info
    ]
    assert live.RUN_QUEUE.busy() is None


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
def test_bad_requests_are_clear_errors(db_url, query, message):
    if query.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    at = click(page(**(TINY | query)), "Run")
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not at.dataframe


def test_missing_transformers_is_a_clear_error(db_url, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    at = click(page(**(TINY | {"pair": "gpt2-large,gpt2"})), "Run")
    assert any("needs the optional package transformers" in e.value for e in at.error)


def test_hosted_mode_refuses_a_linked_local_path(db_url, monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    monkeypatch.setenv("SPECVIZ_HF_ALLOWLIST", "gpt2-large,gpt2")
    at = page(pair="/etc,/tmp")
    assert any("local" in e.value and "not allowed" in e.value for e in at.error)
    assert at.selectbox(key="live.pair").value == "bundled"
    assert at.selectbox(key="live.pair").options == ["bundled", "gpt2-large,gpt2"]
    at = page(pair="meta-llama/Llama-3-70B,meta-llama/Llama-3-8B")
    assert any("allow-list" in e.value for e in at.error)
    assert at.number_input(key="live.new_tokens").max == 256  # the hosted cap


def test_a_local_hugging_face_pair_runs_on_the_page(db_url, tmp_path):
    """Outside hosted mode a 'TARGET,DRAFT' pair of local transformers folders runs like the bundled one."""
    from specviz.models import hf

    out = hf.export_pair("bundled", tmp_path / "hf")
    at = click(page(**(TINY | {"ks": "2", "n_prompts": "1", "pair": f"{out}/target,{out}/draft"})), "Run")
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert table.k.tolist() == [2] and table["greedy_exact"].tolist() == [True]
    assert at.dataframe[0].value["α̂ = A/(A+R)"].between(0, 1).all()


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

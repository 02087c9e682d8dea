"""``specviz tune``'s plan and folder, and tunes against a real llama-server: local (a server per K), resumed
after a SIGKILL mid-sweep, and remote (the shared server at its own K)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import LLAMA_K

from specviz.base.i18n import Message
from specviz.base.paths import ROOT
from specviz.core import tuning
from specviz.data.measurements import load_measurements
from specviz.servers import fetch, loadgen, tune

PROMPTS = ["def main():\n", "class Parser:\n", "import numpy as np\n"]


def plan(**kw) -> tune.TunePlan:
    args = {"mode": "local", "ks": (0, 2), "concurrency": (1, 2), "requests": 4, "max_tokens": 16, "minutes": 5}
    return tune.TunePlan(**(args | kw))


def point(k: int, c: int) -> dict:
    return {"k": k, "concurrency": c, "tpot_s": 0.01, "tokens_per_s": 100.0, "shares": []}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"ks": (0, 17)}, "ks must be an integer in 0..16; got 17"),
        ({"concurrency": ()}, "concurrency must list at least one integer; got ()"),
        ({"requests": 0}, "requests must be an integer in 1..2000; got 0"),
        ({"mode": "remote", "ks": (1, 2)}, "a remote server runs at one K; got ks = (1, 2)"),
        ({"mode": "cloud"}, "mode must be one of local, remote; got 'cloud'"),
    ],
)
def test_a_plan_out_of_range_names_the_field_and_the_value(change, said):
    with pytest.raises(Message, match=__import__("re").escape(said)):
        plan(**change)


def test_points_go_load_by_load_and_at_least_two_requests_per_request_in_flight():
    p = plan(ks=(2, 0), concurrency=(4, 1))
    assert p.points() == [(0, 1, 0), (2, 1, 0), (0, 4, 0), (2, 4, 0)]
    assert (p.requests_at(1), p.requests_at(4)) == (4, 8)


def test_contexts_go_one_after_another_and_a_plan_without_them_hashes_as_before():
    p = plan(ks=(0, 2), concurrency=(1,), contexts=(256, 64))
    assert p.points() == [(0, 1, 64), (2, 1, 64), (0, 1, 256), (2, 1, 256)]
    assert tune.TunePlan.from_json(p.to_json()) == p
    before = plan().to_json()  # a plan.json written before prompt lengths existed has no "contexts"
    assert "contexts" not in before and tune.TunePlan.from_json(before).digest() == plan().digest()
    with pytest.raises(Message, match="contexts must be an integer in 0..131072; got -1"):
        plan(contexts=(-1,))


def test_padded_prompts_reach_the_length_asked_end_with_their_prompt_and_differ_in_prefix():
    padded = loadgen.padded_prompts(PROMPTS, 100, 1.5)
    assert [len(p) for p in padded] == [150] * 3
    assert all(p.endswith(q) for p, q in zip(padded, PROMPTS, strict=True))
    assert len({p[:40] for p in padded}) == 3
    assert loadgen.padded_prompts(PROMPTS, 6, 1.0) == ["in():\n", "rser:\n", "as np\n"]  # cut from the front
    with pytest.raises(Message, match="chars per token must be a number > 0"):
        loadgen.padded_prompts(PROMPTS, 10, 0.0)


def test_a_local_tune_refuses_prompts_longer_than_a_slot(tmp_path):
    p = plan(contexts=(500,), max_tokens=64)
    with pytest.raises(Message, match=r"the longest prompt plus its answer \(564 tokens\) exceeds the 512 tokens"):
        tune.local(tmp_path / "llama-server", tmp_path / "t.gguf", tmp_path / "d.gguf", p, tmp_path)


def test_a_folder_resumes_its_own_plan_skips_a_cut_line_and_refuses_another_plan(tmp_path):
    assert tune.open_tune(tmp_path, plan()) == []
    tune.append_point(tmp_path, point(0, 1))
    with open(tmp_path / "points.jsonl", "a") as f:
        f.write('{"k": 0, "concurrency": 2, "tpot')  # a kill mid-write
    tune.append_point(tmp_path, point(2, 1))
    got = tune.open_tune(tmp_path, plan())
    assert tune.done(got) == {(0, 1, 0), (2, 1, 0)}
    with pytest.raises(Message, match="holds a tune of another plan"):
        tune.open_tune(tmp_path, plan(requests=5))


@pytest.mark.slow  # a fresh interpreter: 3 s
def test_the_cli_names_a_missing_k_for_a_remote_server(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "specviz", "tune", "--out", str(tmp_path), "--server", "http://127.0.0.1:9"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--server needs --k" in done.stderr


@pytest.mark.slow
@pytest.mark.llamacpp
def test_a_local_tune_measures_every_point_and_recommends_a_measured_k(llama_binary, gguf_pair, tmp_path):
    target, draft = gguf_pair
    p = plan()
    seen = []
    points, why = tune.sweep(
        p, tmp_path, tune.local(llama_binary, target, draft, p, tmp_path / "logs"), PROMPTS, fetch.FetchPolicy(),
        progress=seen.append,
    )  # fmt: skip
    assert why == "done" and sorted((q["k"], q["concurrency"], q["context"]) for q in points) == sorted(p.points())
    assert [s.saved for s in seen] == [0, 1, 2, 3, 4]
    for q in points:
        assert q["failed"] == 0 and q["requests"] == p.requests_at(q["concurrency"]) and q["tpot_s"] > 0
        assert (len(q["shares"]) == 2) if q["k"] else (q["shares"] == [])
    a = tuning.analyse(points, tuning.Profile(0.5, 0.3, "test"))
    assert [c.concurrency for c in a.choices] == [1, 2] and all(c.k in range(0, 9) for c in a.choices)
    assert tune.read_points(tmp_path) == points  # every point on disk as it was measured


@pytest.mark.parametrize(
    ("cpus", "threads", "want"),
    [({0, 1}, 1, ({1}, {0})), ({0, 1, 2, 3}, 2, ({2, 3}, {0, 1})), ({3}, 1, None), ({0, 1}, 2, None)],
)
def test_isolation_gives_the_server_the_last_cpus_and_leaves_the_rest(monkeypatch, cpus, threads, want):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(cpus))
    assert tune.isolation(threads) == want


@pytest.mark.slow
@pytest.mark.llamacpp
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="isolation needs two CPUs")
def test_an_isolated_server_runs_on_its_own_cpus_and_the_caller_gets_its_own_back(llama_binary, gguf_pair, tmp_path):
    target, draft = gguf_pair
    server_cpus, own = tune.isolation(1)
    before = os.sched_getaffinity(0)
    serve = tune.local(llama_binary, target, draft, plan(), tmp_path / "logs", isolate=True)
    with serve(2) as url:
        pid = next(int(p) for p in os.listdir("/proc") if p.isdigit() and _serves(int(p), url))
        assert all(os.sched_getaffinity(int(t)) == server_cpus for t in os.listdir(f"/proc/{pid}/task"))
        assert os.sched_getaffinity(0) == own
    assert os.sched_getaffinity(0) == before


def _serves(pid: int, url: str | None = None) -> bool:
    """Whether process ``pid`` is a live llama-server (listening on ``url``'s port where one is given)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return cmd[0].endswith(b"llama-server") and (url is None or url.rsplit(":", 1)[1].encode() in cmd)


def _start_tune(out: Path, ks: str, requests: int, max_tokens: int) -> tuple[list[str], subprocess.Popen]:
    """``specviz tune`` of the bundled pair over ``ks`` × 1, 2 in flight, in a process group of its own (so a
    check can kill the tune with the llama-servers it started, as a job scheduler or Ctrl-C does)."""
    cmd = [sys.executable, "-m", "specviz", "tune", "--out", str(out), "--ks", ks, "--concurrency", "1,2"]
    cmd += ["--requests", str(requests), "--max-tokens", str(max_tokens)]
    devnull = subprocess.DEVNULL
    return cmd, subprocess.Popen(cmd, cwd=ROOT, stdout=devnull, stderr=devnull, start_new_session=True)


@pytest.mark.slow
@pytest.mark.llamacpp
def test_a_tune_killed_mid_sweep_resumes_with_every_point_once(llama_binary, tmp_path):
    cmd, proc = _start_tune(tmp_path, "0,1", 4, 16)
    deadline = time.monotonic() + 240
    while not tune.read_points(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = tune.read_points(tmp_path)
    assert 1 <= len(before) < 4, "the kill came after the sweep ended: nothing was left to resume"
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    after = tune.read_points(tmp_path)
    assert after[: len(before)] == before  # kept, not measured again
    assert sorted((q["k"], q["concurrency"]) for q in after) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    answer = json.loads((tmp_path / "answer.json").read_text())
    assert [b["concurrency"] for b in answer["best"]] == [1, 2]
    run = pd.read_csv(tmp_path / "run.csv")  # the tune as one run of the run library, a row per K >= 1 point
    assert run["k"].tolist() == [1, 1] and run["target_model"].eq("specviz/bundled-target").all()
    frame, _ = load_measurements((tmp_path / "run.csv").read_bytes(), name="run.csv")
    assert len(frame) == 2 and frame["speedup"].gt(0).all()


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _servers_of(parent: int) -> list[int]:
    """The live llama-server processes whose parent is ``parent``."""
    return [int(p) for p in filter(str.isdigit, os.listdir("/proc")) if _parent(int(p)) == parent and _serves(int(p))]


@pytest.mark.slow
@pytest.mark.llamacpp
def test_a_tune_sent_sigterm_stops_the_servers_it_started(llama_binary, tmp_path):
    _, proc = _start_tune(tmp_path, "0,1,2", 8, 32)
    try:
        deadline, servers = time.monotonic() + 120, []
        while not servers and proc.poll() is None and time.monotonic() < deadline:
            servers = _servers_of(proc.pid)
            time.sleep(0.05)
        assert servers, "the tune started no llama-server, or ended first"
        proc.send_signal(signal.SIGTERM)  # the tune alone, not its group
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        assert not [pid for pid in servers if _serves(pid)], "a llama-server outlived its tune"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.llamacpp
def test_a_remote_tune_measures_the_server_at_its_own_k_and_predicts_the_rest(llama_server, tmp_path):
    policy = fetch.FetchPolicy(read_timeout_s=60.0)
    p = tune.TunePlan("remote", (LLAMA_K,), (1, 2), requests=4, max_tokens=16, target=llama_server.url)
    points, why = tune.sweep(p, tmp_path, lambda k: tune.remote(llama_server.url, p, policy), PROMPTS, policy)
    assert why == "done" and [(q["k"], q["server_k"]) for q in points] == [(LLAMA_K, LLAMA_K)] * 2
    a = tuning.analyse(points, tuning.Profile(0.5, 0.3, "an earlier tune"))
    assert {f.how for f in a.fits} == {"T0 fitted, o and r from the profile"}
    measured = a.table.dropna()
    assert len(measured) == 2 and (measured["k"] == LLAMA_K).all()
    assert (measured["tpot_s"] - measured["measured_tpot_s"]).abs().max() < 1e-12  # the anchor is reproduced
    wrong = tune.TunePlan("remote", (LLAMA_K - 1,), (1,), requests=4, max_tokens=16)
    with pytest.raises(Message, match=f"drafts K = {LLAMA_K}, not the K = {LLAMA_K - 1} given"):
        tune.sweep(wrong, tmp_path / "wrong", lambda k: tune.remote(llama_server.url, wrong, policy), PROMPTS, policy)
    assert loadgen.metrics_url(llama_server.url).endswith("/metrics")


@pytest.mark.slow
@pytest.mark.llamacpp
def test_a_tune_over_two_prompt_lengths_pads_them_and_gives_k_by_context(llama_binary, gguf_pair, tmp_path):
    """The bundled pair reads bytes: a prompt padded to L characters is about L tokens, which the server counts."""
    target, draft = gguf_pair
    p = plan(ks=(0, 2), concurrency=(1,), contexts=(0, 200), requests=3)
    points, why = tune.sweep(
        p, tmp_path, tune.local(llama_binary, target, draft, p, tmp_path / "logs"), PROMPTS, fetch.FetchPolicy()
    )
    assert why == "done" and sorted(tune.done(points)) == sorted(p.points())
    long = [q for q in points if q["context"] == 200]
    assert all(190 <= q["prompt_tokens"] <= 215 for q in long), [q["prompt_tokens"] for q in long]
    assert all(q["prompt_tokens"] < 30 for q in points if q["context"] == 0)
    frame = tuning.k_by_context(points, tuning.analyse_by_context(points, tuning.Profile(0.5, 0.3, "test")))
    assert sorted(frame["context"]) == [0, 200] and set(frame["k"]) <= set(range(0, 9))

"""Engine telemetry: the readers on each engine's documented format, windows, and rows of the schema.

The vLLM, SGLang and TensorRT-LLM bodies are fixtures in tests/fixtures/engines/, each saying
which version and source file it follows; llama.cpp's is checked against a running server in
tests/servers/test_llamacpp.py as well.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.core import theory
from specviz.data.measurements import load_records
from specviz.servers import (
    Telemetry,
    TelemetryError,
    combine,
    detect_stack,
    llamacpp,
    read_llamacpp,
    read_llamacpp_timings,
    read_metrics,
    read_sglang,
    read_sglang_server_info,
    read_trtllm,
    read_vllm,
    to_record,
    vllm_engines,
    window,
    window_over,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "stacks"


def fixture(name: str) -> str:
    text = (FIXTURES / name).read_text()
    if name.endswith(".json"):
        return json.dumps(json.loads(text)["body"])
    return text


def test_every_fixture_says_which_version_and_source_it_follows():
    for path in FIXTURES.iterdir():
        head = path.read_text()[:400].lower()
        version = any(w in head for w in ("v0.", "1.0", "1.2", "b11434")) or re.search(r"\b[0-9a-f]{40}\b", head)
        assert "fixture" in head and version, path.name
        assert ".py" in head or ".h" in head or ".cpp" in head or ".rst" in head, path.name


# --- vLLM -----------------------------------------------------------------------------------


def test_vllm_sums_its_engines_whatever_the_label_order():
    t = read_vllm(fixture("vllm-v1-metrics.txt"), now=100.0)
    assert (t.drafts, t.draft_tokens, t.accepted_tokens) == (3000.0, 9000.0, 4600.0)
    assert t.accepted_per_position == (2300.0, 1450.0, 850.0)
    assert t.generated_tokens == 8000.0
    assert t.k == 3 and t.model == "meta-llama/Llama-3.1-8B-Instruct" and t.cumulative


def test_vllm_engines_kept_apart():
    text = fixture("vllm-v1-metrics.txt")
    assert vllm_engines(text) == ["0", "1"]
    one = read_vllm(text, engine_index="1")
    assert (one.drafts, one.draft_tokens, one.accepted_tokens) == (1000.0, 3000.0, 1400.0)
    assert one.accepted_per_position == (700.0, 450.0, 250.0)
    with pytest.raises(TelemetryError, match="engine '7' not found"):
        read_vllm(text, engine_index="7")


def test_vllm_window_metrics_are_the_chapters():
    w = window(None, read_vllm(fixture("vllm-v1-metrics.txt")))
    assert w.mean_acceptance_length == pytest.approx(1 + 4600 / 3000)
    assert w.acceptance_rate == pytest.approx(4600 / 9000)
    assert w.mean_draft_length == pytest.approx(3.0)
    np.testing.assert_allclose(w.unconditional, [2300 / 3000, 1450 / 3000, 850 / 3000])
    np.testing.assert_allclose(w.conditional, [2300 / 3000, 1450 / 2300, 850 / 1450])
    alpha = w.alpha()
    assert theory.expected_tokens(alpha, 3) == pytest.approx(1 + 4600 / 3000, abs=1e-9)


def test_vllm_speculation_off_is_a_clear_message():
    with pytest.raises(TelemetryError, match="speculation is off"):
        read_metrics(fixture("vllm-v1-metrics-no-spec.txt"))


# --- llama.cpp ------------------------------------------------------------------------------


def test_llamacpp_metrics():
    t = read_llamacpp(fixture("llamacpp-metrics.txt"), now=5.0)
    assert (t.drafts, t.draft_tokens, t.accepted_tokens, t.generated_tokens) == (500, 2000, 1000, 1536)
    assert t.k == 4 and t.accepted_per_position == (400, 300, 200, 100)
    w = window(None, t)
    assert w.mean_acceptance_length == 3.0 and w.acceptance_rate == 0.5
    np.testing.assert_allclose(w.conditional, [0.8, 0.75, 2 / 3, 0.5])


def test_llamacpp_timings_of_one_completion():
    body = {
        "model": "t.gguf",
        "timings": {"predicted_n": 64, "predicted_ms": 200.0, "draft_n": 60, "draft_n_accepted": 45},
    }
    t = read_llamacpp_timings(body, k=4, now=10.0)
    w = window(None, t)
    assert (t.start, t.end) == (9.8, 10.0)
    assert w.rounds == 15 and w.mean_acceptance_length == 4.0 and w.acceptance_rate == 0.75
    assert w.tokens_per_s == pytest.approx(320.0)
    with pytest.raises(TelemetryError, match="without a draft"):
        read_llamacpp_timings({"timings": {"predicted_n": 3}})
    with pytest.raises(TelemetryError, match="not JSON"):
        read_llamacpp_timings("<html>")


# --- SGLang, TensorRT-LLM -------------------------------------------------------------------


def test_sglang_gauges_and_server_info():
    t = read_sglang(fixture("sglang-metrics.txt"))
    assert (t.mean_acceptance_length, t.tokens_per_s) == (2.54, 87.12)
    # its accept rate changed meaning in April 2026, and the body does not say which: kept, not used as r
    assert t.acceptance_rate is None and t.labels["spec_accept_rate"] == "0.385" and t.k is None
    assert "does not say which meaning" in t.labels["spec_accept_rate_meaning"]
    assert not t.cumulative and t.model == "meta-llama/Llama-3.1-8B-Instruct"
    w = window(None, t)
    assert w.mean_acceptance_length == 2.54 and w.alpha(3) == pytest.approx(theory.alpha_from_mean_tokens(2.54, 3))
    info = read_sglang_server_info(fixture("sglang-server-info.json"))
    assert info.mean_acceptance_length == 2.54
    with pytest.raises(TelemetryError, match="avg_spec_accept_length"):
        read_sglang_server_info({"internal_states": [{}]})


FORMATS = Path(__file__).parents[1] / "fixtures" / "formats"


def test_sglang_k_gauges_and_the_accept_rate_meaning_by_version():
    """0.5.23 (K gauges since 0.5.13; accept rate = accepted / proposed since 0.5.11, PR #23530) against
    0.5.10 (accept length / draft tokens); both fixtures are one window of 101 steps, 155 accepted, K = 3."""
    new = read_sglang((FORMATS / "sglang-metrics-spec-gauges.txt").read_text(), now=10.0)
    assert new.k == 3 and new.acceptance_rate == pytest.approx(155 / (101 * 3))
    assert new.mean_acceptance_length == pytest.approx(1 + 155 / 101)
    record = to_record(window(None, new))
    assert record["k"] == 3 and record["acceptance_rate"] == pytest.approx(155 / 303)
    assert "read as accepted / proposed drafts (its meaning since SGLang 0.5.11" in record["notes"]
    old = read_sglang((FORMATS / "sglang-metrics-spec-gauges-0.5.10.txt").read_text(), now=10.0)
    assert old.k is None and old.acceptance_rate is None  # 0.634 = E[N] / (K + 1), not r
    assert old.labels["spec_accept_rate"] == "0.633663"
    record = to_record(window(None, old), k=3)
    assert "acceptance_rate" not in record and record["mean_accepted_tokens"] == pytest.approx(1 + 155 / 101)
    assert "accept length / draft tokens (SGLang 0.5.10 and before)" in record["notes"]


def test_trtllm_iteration_stats_sum_the_iterations_with_drafts():
    t = read_trtllm(fixture("trtllm-iteration-stats.json"), k=3)
    assert (t.drafts, t.draft_tokens, t.accepted_tokens) == (4, 12, 7)
    w = window(None, t)
    # TensorRT-LLM's own acceptanceLength, drafts-weighted over the two iterations: (2.5·2 + 3·2) / 4
    assert w.mean_acceptance_length == pytest.approx((2.5 * 2 + 3.0 * 2) / 4)
    with pytest.raises(TelemetryError, match="no iteration"):
        read_trtllm(json.dumps([{"iter": 1, "specDecodingStats": {"numDraftTokens": 0}}]))
    with pytest.raises(TelemetryError, match="not a list of iteration stats"):
        read_trtllm('{"foo": 1}')


def test_trtllm_prometheus_counters_use_k_for_rounds():
    t = read_metrics(fixture("trtllm-metrics.txt"), k=3)
    w = window(None, t)
    assert w.rounds == 300 and w.mean_acceptance_length == 2.5 and w.acceptance_rate == 0.5
    assert t.draft_overhead is None and w.draft_overhead is None  # no trtllm_spec_decode_draft_overhead gauge


# TensorRT-LLM's draftOverhead: draft ms / iteration ms of one iteration (executor/types.h, SpecDecodingStats)


def test_trtllm_draft_overhead_is_the_iteration_time_weighted_mean():
    t = read_trtllm(fixture("trtllm-iteration-stats.json"), k=3)
    # the two drafting iterations (the prefill one has no drafts): draftOverhead 0.248 over 12.5 ms, 0.252 over 12.7 ms
    assert t.draft_overhead == pytest.approx((0.248 * 12.5 + 0.252 * 12.7) / (12.5 + 12.7), abs=1e-12)
    assert t.iteration_ms == pytest.approx(25.2)
    w = window(None, t)
    assert w.draft_overhead == t.draft_overhead
    assert "draft overhead 25.0% of iteration time" in to_record(w)["notes"]


def test_trtllm_draft_overhead_without_iteration_latency_is_a_plain_mean():
    stats = [
        {"iter": 1, "specDecodingStats": {"numDraftTokens": 6, "numAcceptedTokens": 3, "draftOverhead": 0.2}},
        {"iter": 2, "specDecodingStats": {"numDraftTokens": 6, "numAcceptedTokens": 3, "draftOverhead": 0.4}},
    ]
    t = read_trtllm(json.dumps(stats), k=3)
    assert t.draft_overhead == pytest.approx(0.3) and t.iteration_ms is None


def test_trtllm_draft_overhead_prometheus_gauge():
    t = read_metrics(fixture("trtllm-metrics-draft-overhead.txt"), k=3)
    assert t.draft_overhead == 0.125
    assert window(None, t).rounds == 300  # the counters read as before


def test_trtllm_without_draft_overhead_leaves_it_none():
    stats = json.loads(fixture("trtllm-iteration-stats.json"))
    for it in stats:
        del it["specDecodingStats"]["draftOverhead"]
    t = read_trtllm(json.dumps(stats), k=3)
    assert t.draft_overhead is None and t.drafts == 4
    w = window(None, t)
    assert w.draft_overhead is None and "draft overhead" not in to_record(w)["notes"]


@pytest.mark.parametrize(
    "value, shown",
    [("0.25", "'0.25'"), ("high", "'high'"), (-0.1, "-0.1"), (1.5, "1.5"), (True, "True"), (None, None)],
)
def test_trtllm_draft_overhead_that_is_not_a_share_is_a_message(value, shown):
    stats = json.loads(fixture("trtllm-iteration-stats.json"))
    stats[2]["specDecodingStats"]["draftOverhead"] = value
    if value is None:  # JSON null: not reported for that iteration (the other one's stands)
        assert read_trtllm(json.dumps(stats), k=3).draft_overhead == pytest.approx(0.248)
        return
    with pytest.raises(TelemetryError) as err:
        read_trtllm(json.dumps(stats), k=3)
    assert str(err.value) == (
        f"TensorRT-LLM /metrics: [2].specDecodingStats.draftOverhead is {shown}; a share of time is a number from 0 to 1"
    )


def test_trtllm_nan_draft_overhead_and_bad_iteration_latency_are_messages():
    with pytest.raises(TelemetryError, match=r"\[1\]\.specDecodingStats\.draftOverhead is nan; a share of time"):
        read_trtllm('[{"iter": 1}, {"iter": 2, "specDecodingStats": {"numDraftTokens": 3, "draftOverhead": NaN}}]')
    stats = json.loads(fixture("trtllm-iteration-stats.json"))
    stats[1]["iterLatencyMS"] = -4
    with pytest.raises(TelemetryError, match=r"\[1\]\.iterLatencyMS is -4; a duration is a finite number"):
        read_trtllm(json.dumps(stats), k=3)
    gauge = fixture("trtllm-metrics-draft-overhead.txt").replace("} 0.125", "} 1.25")
    with pytest.raises(TelemetryError, match=r"trtllm_spec_decode_draft_overhead\{.*\} is 1\.25; a share of time"):
        read_metrics(gauge, k=3)


def test_combine_weights_draft_overhead_by_iteration_time():
    a = Telemetry("trtllm", drafts=2, draft_overhead=0.1, iteration_ms=30.0, cumulative=False)
    b = Telemetry("trtllm", drafts=2, draft_overhead=0.4, iteration_ms=10.0, cumulative=False)
    c = Telemetry("trtllm", drafts=2, cumulative=False)  # no figure: left out of the mean
    both = combine([a, b, c])
    assert both.draft_overhead == pytest.approx((0.1 * 30 + 0.4 * 10) / 40) and both.iteration_ms == 40.0
    assert combine([c]).draft_overhead is None


@pytest.mark.parametrize(
    "name, engine",
    [
        ("vllm-v1-metrics.txt", "vllm"),
        ("llamacpp-metrics.txt", "llamacpp"),
        ("sglang-metrics.txt", "sglang"),
        ("trtllm-metrics.txt", "trtllm"),
        ("trtllm-iteration-stats.json", "trtllm"),
        ("trtllm-metrics-draft-overhead.txt", "trtllm"),
    ],
)
def test_detect_stack(name, engine):
    assert detect_stack(fixture(name)) == engine


@pytest.mark.parametrize(
    "body, message",
    [
        ("<html><body>login</body></html>", "HTML, not Prometheus"),
        ('{"status": "ok"}', "not TensorRT-LLM iteration stats"),
        ("# HELP process_cpu_seconds_total x\nprocess_cpu_seconds_total 1.5\n", "not vLLM, llama.cpp, SGLang"),
        ("this is not { metrics at all", "not Prometheus text"),
    ],
)
def test_bodies_that_are_not_telemetry(body, message):
    with pytest.raises(TelemetryError, match=message):
        read_metrics(body)


def test_a_reader_given_another_engines_body_names_it():
    with pytest.raises(TelemetryError, match="look like SGLang"):
        read_vllm(fixture("sglang-metrics.txt"))


# --- windows --------------------------------------------------------------------------------


def scrape(drafts, proposed, accepted, per_pos, t, generated=None):
    return Telemetry("vllm", "m", len(per_pos) or None, None, t, drafts, proposed, accepted, tuple(per_pos), generated)


def test_window_between_two_scrapes_is_the_deltas():
    a = scrape(100, 300, 150, (80, 50, 20), 10.0, generated=400)
    b = scrape(160, 480, 270, (130, 90, 50), 20.0, generated=700)
    w = window(a, b)
    assert (w.drafts, w.draft_tokens, w.accepted_tokens) == (60, 180, 120)
    assert w.accepted_per_position == (50, 40, 30) and w.seconds == 10.0
    assert w.mean_acceptance_length == 3.0 and w.tokens_per_s == 30.0 and w.reset is None


def test_a_counter_reset_is_reported_not_negative():
    a = scrape(100, 300, 150, (80, 50, 20), 10.0)
    b = scrape(40, 120, 60, (30, 20, 10), 20.0)
    w = window(a, b)
    assert w.reset and "restarted" in w.reset and "drafts 100 → 40" in w.reset
    assert (w.drafts, w.accepted_tokens) == (40, 60) and w.start is None
    assert min(w.accepted_per_position) >= 0 and w.mean_acceptance_length == 2.5


def test_window_refuses_two_stacks():
    with pytest.raises(ValueError, match="two stacks"):
        window(scrape(1, 3, 1, (), 0.0), replace(scrape(1, 3, 1, (), 1.0), stack="llamacpp"))


counts = st.integers(min_value=0, max_value=10_000)


@st.composite
def scrapes(draw):
    """Three increasing cumulative scrapes of a K = 3 engine with consistent per-position counts."""
    out, state = [], np.zeros(5)
    for i in range(3):
        d = draw(counts)
        acc = [draw(st.integers(0, d))]
        for _ in range(2):
            acc.append(draw(st.integers(0, acc[-1])))
        state = state + np.array([d, 3 * d, sum(acc), 0, 0])
        per = (out[-1].accepted_per_position if out else np.zeros(3)) + np.array(acc)
        out.append(scrape(*state[:3], tuple(float(x) for x in per), float(i)))
    return out


@settings(max_examples=200, deadline=None)
@given(scrapes())
@pytest.mark.slow
def test_windows_add_up_and_stay_in_range(readings):
    a, b, c = readings
    ab, bc, ac = window(a, b), window(b, c), window(a, c)
    assert ab.drafts + bc.drafts == ac.drafts and ab.accepted_tokens + bc.accepted_tokens == ac.accepted_tokens
    np.testing.assert_allclose(np.add(ab.accepted_per_position, bc.accepted_per_position), ac.accepted_per_position)
    if ac.drafts:
        # E[N] = 1 + Δaccepted / Δdrafts over the whole window, from the raw counters
        assert ac.mean_acceptance_length == pytest.approx(
            1.0 + (c.accepted_tokens - a.accepted_tokens) / (c.drafts - a.drafts)
        )
        assert 0.0 <= ac.alpha() <= 1.0
        u = ac.unconditional
        assert np.all(np.diff(u) <= 1e-12) and np.all((u >= 0) & (u <= 1))
        # Σ u_i = E[N] − 1: the per-position counts hold every accepted token
        assert u.sum() == pytest.approx(ac.mean_acceptance_length - 1.0)


def test_combine_adds_counts_and_keeps_k():
    a = scrape(10, 30, 15, (8, 5, 2), 1.0)
    b = replace(scrape(20, 60, 30, (), 2.0), k=None)
    c = combine([a, b])
    assert (c.drafts, c.draft_tokens, c.accepted_tokens, c.k, c.end) == (30, 90, 45, 3, 2.0)
    with pytest.raises(ValueError, match="no readings"):
        combine([])


# --- rows of the measurement schema ---------------------------------------------------------


def test_a_window_saves_as_a_row_like_any_upload():
    w = window(None, read_vllm(fixture("vllm-v1-metrics.txt")))
    record = to_record(w, label="prod vLLM", c=8.0)
    frame, _ = load_records([record], name="vLLM window")
    row = frame.iloc[0]
    assert row["k"] == 3 and row["label"] == "prod vLLM" and row["c"] == 8.0
    assert row["mean_accepted_tokens"] == pytest.approx(1 + 4600 / 3000)
    assert row["alpha_used"] == pytest.approx(w.alpha(), abs=1e-6) and row["alpha_source"] == "mean_accepted_tokens"
    assert row["per_position_acceptance"].split(";")[0] == format(2300 / 3000, ".6g")
    assert "vLLM telemetry" in row["notes"] and row["source"].startswith("engine:vllm")
    assert row["predicted_speedup"] == pytest.approx(theory.speedup(w.alpha(), 8.0, 3), rel=1e-6)


def test_a_window_needs_k_and_drafts():
    w = window(None, read_sglang(fixture("sglang-metrics.txt")))
    with pytest.raises(ValueError, match="K is not known"):
        to_record(w)
    assert to_record(w, k=3)["mean_accepted_tokens"] == 2.54
    empty = window(None, scrape(0, 0, 0, (), 1.0))
    with pytest.raises(ValueError, match="no drafts"):
        to_record(empty, k=3)


def test_window_over_adds_across_a_restart():
    readings = [
        scrape(100, 300, 150, (80, 50, 20), 0.0),
        scrape(160, 480, 270, (130, 90, 50), 10.0),
        scrape(30, 90, 60, (25, 20, 15), 20.0),  # restarted: 30 drafts since
        scrape(50, 150, 100, (40, 35, 25), 30.0),
    ]
    w = window_over(readings)
    assert (w.drafts, w.accepted_tokens) == (60 + 30 + 20, 120 + 60 + 40)
    assert w.accepted_per_position == (50 + 25 + 15, 40 + 20 + 15, 30 + 15 + 10)
    assert w.reset and "restarted once" in w.reset and w.seconds == 30.0
    assert window_over(readings[:2]).drafts == window(readings[0], readings[1]).drafts


# --- llama.cpp's forward probe, with the server's replies faked (the real server: tests/servers/test_llamacpp.py) ---


def fake_llama_server(monkeypatch, evaluated: int | None = None) -> list[dict]:
    """Replace the HTTP call of :func:`llamacpp.forward_ms` by a server that reuses its prompt cache
    (or, with ``evaluated``, claims that many prompt tokens); the request bodies it saw."""
    seen: list[dict] = []

    def reply(url, body, timeout_s=0.0):
        new = len(body["prompt"]) - (len(seen[-1]["prompt"]) if seen else 0)
        seen.append(body)
        n = evaluated if evaluated is not None else max(new, 1)
        return {"timings": {"prompt_n": n, "prompt_ms": 100.0 + len(seen)}}

    monkeypatch.setattr(llamacpp, "complete_raw", reply)
    return seen


def test_forward_probe_primes_the_prefix_then_times_the_extension(monkeypatch):
    seen = fake_llama_server(monkeypatch)
    assert llamacpp.forward_ms("http://127.0.0.1:1", [1, 2, 3, 4, 5], [6, 7]) == 102.0  # the second reply's
    assert [b["prompt"] for b in seen] == [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6, 7]]
    assert all(b["cache_prompt"] and b["n_predict"] == 1 for b in seen)


def test_forward_probe_refuses_a_cache_miss(monkeypatch):
    fake_llama_server(monkeypatch, evaluated=7)
    with pytest.raises(RuntimeError, match="evaluated 7 prompt tokens, not the 2 of the extension"):
        llamacpp.forward_ms("http://127.0.0.1:1", [1, 2, 3, 4, 5], [6, 7])

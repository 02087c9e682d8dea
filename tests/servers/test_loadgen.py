"""specviz.servers.loadgen against a local fake OpenAI-compatible server (tests/_http.py)."""

import threading
import time

import pytest
from _http import FakeEngine

from specviz.servers.fetch import FetchError, FetchPolicy, policy_from_env
from specviz.servers.loadgen import (
    COLUMNS,
    LoadSpec,
    bundled_prompts,
    completion_counts,
    completions_url,
    measured_speedup,
    metrics_url,
    run_load,
    summarize,
)

POLICY = FetchPolicy(connect_timeout_s=1.0, read_timeout_s=2.0)
PROMPTS = ["alpha", "beta", "gamma"]


def spec(url: str, **kw) -> LoadSpec:
    return LoadSpec(**{"base_url": url, "prompts": PROMPTS, "max_tokens": 5, "concurrency": 2, "max_requests": 6} | kw)


def test_stops_at_max_requests_cycling_prompts_and_sending_the_spec():
    engine = FakeEngine(tokens=4)
    with engine.running() as url:
        result = run_load(spec(url, model="m", temperature=0.5, max_requests=7, concurrency=3), POLICY)
    assert (result.stopped_by, result.done, result.failed, result.tokens) == ("requests", 7, 0, 28)
    assert len(engine.bodies) == 7
    assert sorted(b["prompt"] for b in engine.bodies) == sorted((PROMPTS * 3)[:7])
    assert {(b["model"], b["max_tokens"], b["temperature"], b["stream"]) for b in engine.bodies} == {
        ("m", 5, 0.5, True)  # streamed by default (the fake answers whole: read as a non-streamed answer)
    }
    assert all(b["stream_options"] == {"include_usage": True} for b in engine.bodies)
    records = result.records
    assert list(records.columns) == list(COLUMNS) and list(records["request"]) == list(range(7))
    assert list(records["prompt_index"]) == [i % 3 for i in range(7)]
    assert records["ok"].all() and (records["completion_tokens"] == 4).all() and records["draft_n"].isna().all()
    assert (records["end_s"] >= records["start_s"]).all() and result.draft_acceptance is None
    assert not records["streamed"].any() and records["ttft_s"].isna().all() and records["arrival_s"].isna().all()
    assert list(records["prompt_chars"]) == [len(PROMPTS[i % 3]) for i in range(7)]
    assert (result.mode, result.ttft.n, result.e2e.n, result.requests_per_s) == (
        "closed",
        0,
        7,
        pytest.approx(7 / result.wall_s),
    )


def test_output_lengths_in_turn_one_per_request():
    engine = FakeEngine(tokens=4)
    with engine.running() as url:
        s = spec(url, max_tokens=[3, 7], prompts=["a", "b", "c"], max_requests=5, concurrency=1)
        run_load(s, POLICY)
    assert s.max_tokens == (3, 7) and [s.tokens_asked(i) for i in range(5)] == [3, 7, 3, 7, 3]
    # one worker sends in order: request i asks max_tokens[i mod 2] with prompt i mod 3
    assert [(b["prompt"], b["max_tokens"]) for b in engine.bodies] == [("a", 3), ("b", 7), ("c", 3), ("a", 7), ("b", 3)]


def test_stream_false_sends_a_plain_request():
    engine = FakeEngine(tokens=3)
    with engine.running() as url:
        result = run_load(spec(url, stream=False, max_requests=2), POLICY)
    assert [b["stream"] for b in engine.bodies] == [False, False] and "stream_options" not in engine.bodies[0]
    assert result.tokens == 6 and result.ttft.n == result.tpot.n == result.itl.n == 0


@pytest.mark.slow
def test_stops_at_max_seconds_starting_nothing_after_it():
    engine = FakeEngine(delay_s=0.05)
    with engine.running() as url:
        result = run_load(spec(url, max_requests=10_000, max_seconds=1), POLICY)
    assert result.stopped_by == "time" and result.failed == 0
    # 2 workers, 50 ms a request, nothing started after 1 s: at most 2 × (1 s / 50 ms + 1) requests; and the
    # workers kept going up to the deadline (a count floor would measure the machine's load, not the loop)
    assert 2 <= result.done <= 2 * (1 / 0.05 + 1)
    assert result.records["end_s"].max() >= 0.9
    assert result.records["start_s"].max() < 1.0  # none started after the deadline
    assert 1.0 <= result.wall_s < 2.0  # those in flight finished


@pytest.mark.slow
def test_stop_event_starts_no_new_request():
    stop = threading.Event()
    seen, received_at_stop = [], []
    engine = FakeEngine(delay_s=0.02)

    def progress(p):
        seen.append(p)
        if p.done >= 3 and not stop.is_set():
            with engine.lock:  # requests the server has; each worker may hold one more, claimed but not yet arrived
                received_at_stop.append(len(engine.bodies))
                stop.set()

    with engine.running() as url:
        result = run_load(spec(url, max_requests=1000, concurrency=2), POLICY, stop=stop, progress=progress)
        assert result.stopped_by == "stop" and 3 <= result.done <= received_at_stop[0] + 2 < 1000
        assert [p.done for p in seen] == list(range(1, result.done + 1))  # those in flight finished
        assert seen[-1].tokens == result.tokens and seen[-1].failed == 0 and seen[-1].tokens_per_s > 0
        already = run_load(spec(url), POLICY, stop=stop)  # set before the start: nothing is sent
    assert (already.done, already.stopped_by, already.tokens) == (0, "stop", 0)
    assert already.summary() == "no request was sent (stopped by Stop)"
    assert len(engine.bodies) == result.done


@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.slow
def test_concurrency_is_respected_and_reached(concurrency):
    engine = FakeEngine(delay_s=0.08)
    with engine.running() as url:
        result = run_load(spec(url, concurrency=concurrency, max_requests=4 * concurrency), POLICY)
    assert result.done == 4 * concurrency and engine.max_in_flight == concurrency


def test_tokens_per_second_is_tokens_over_wall_time():
    engine = FakeEngine(delay_s=0.02, tokens=7)
    with engine.running() as url:
        t = time.perf_counter()
        result = run_load(spec(url, max_requests=8), POLICY)
        outside = time.perf_counter() - t
    assert result.tokens == 8 * 7
    assert result.tokens_per_s == pytest.approx(result.tokens / result.wall_s)
    assert result.wall_s == pytest.approx(result.records["end_s"].max())
    assert result.records["latency_s"].sum() / 2 <= result.wall_s <= outside  # 2 at a time
    lat = result.records["latency_s"]
    assert result.latency_mean_s == pytest.approx(lat.mean()) and result.latency_p50_s == pytest.approx(lat.median())
    assert lat.min() <= result.latency_p50_s <= result.latency_p95_s <= lat.max()
    assert "8 requests in" in result.summary() and "stopped by the request limit" in result.summary()


def test_failures_are_counted_and_reported_and_the_run_goes_on():
    engine = FakeEngine(tokens=3)
    with engine.running() as url:
        result = run_load(spec(url, prompts=["ok", "FAIL please"], max_requests=6), POLICY)
        everything = run_load(spec(url, prompts=["FAIL"], max_requests=4), POLICY)
    assert (result.done, result.failed, result.succeeded, result.tokens) == (6, 3, 3, 9)
    assert not result.all_failed and "(3 failed)" in result.summary()
    ((message, count),) = result.errors
    assert count == 3 and "HTTP 500" in message and "engine exploded" in message
    failed = result.records[~result.records["ok"]]
    assert list(failed["prompt_index"]) == [1, 1, 1] and failed["completion_tokens"].isna().all()
    assert everything.all_failed and everything.tokens == 0
    assert everything.summary().startswith("all 4 requests failed; first error: cannot fetch")
    assert everything.latency_p50_s != everything.latency_p50_s  # NaN: no successful request


def test_llamacpp_timings_give_tokens_and_drafts():
    engine = FakeEngine(tokens=9, style="llama", draft=(8, 6))
    with engine.running() as url:
        result = run_load(spec(url + "/v1/", max_requests=4), POLICY)  # model unset: llama.cpp needs none
    assert "model" not in engine.bodies[0]
    assert result.tokens == 36 and result.tokens_unknown == 0
    assert list(result.records["draft_n"]) == [8] * 4 and list(result.records["draft_n_accepted"]) == [6] * 4
    assert result.draft_acceptance == pytest.approx(0.75)


@pytest.mark.slow
def test_measured_speedup_is_the_ratio_of_tokens_per_second():
    fast, slow = FakeEngine(delay_s=0.01, tokens=8), FakeEngine(delay_s=0.08, tokens=8)
    with fast.running() as a, slow.running() as b:
        with_spec = run_load(spec(a, max_requests=6), POLICY)
        without = run_load(spec(b, max_requests=6), POLICY)
        failing = run_load(spec(b, prompts=["FAIL"], max_requests=2), POLICY)
    assert measured_speedup(with_spec, without) == pytest.approx(with_spec.tokens_per_s / without.tokens_per_s)
    with pytest.raises(ValueError, match=r"the run without speculative decoding has no completion tokens \(all 2"):
        measured_speedup(with_spec, failing)
    with pytest.raises(ValueError, match=r"the run with speculative decoding has no completion tokens"):
        measured_speedup(failing, without)


def _row(i: int, tokens: int | None, end_s: float, error: str | None = None) -> dict:
    return dict(
        request=i,
        prompt_index=0,
        start_s=0.0,
        end_s=end_s,
        latency_s=end_s,
        ok=error is None,
        completion_tokens=tokens,
        draft_n=None,
        draft_n_accepted=None,
        error=error,
    )


def test_summarize_and_speedup_on_known_numbers():
    s = spec("http://x")
    fast = summarize(s, [_row(0, 100, 1.0), _row(1, 100, 1.0), _row(2, None, 0.5)], 2.0, "requests")
    slow = summarize(s, [_row(0, 100, 2.0), _row(1, None, 1.0, "boom"), _row(2, None, 1.0, "boom")], 4.0, "time")
    assert (fast.tokens, fast.tokens_unknown, fast.tokens_per_s, fast.latency_p50_s) == (200, 1, 100.0, 1.0)
    assert (slow.tokens, slow.failed, slow.tokens_per_s, slow.errors) == (100, 2, 25.0, (("boom", 2),))
    assert measured_speedup(fast, slow) == pytest.approx(4.0)
    many = summarize(s, [_row(i, None, 1.0, f"error {i}") for i in range(8)], 1.0, "stop")
    assert len(many.errors) == 5 and many.all_failed and many.summary().startswith("all 8 requests failed")


def test_refused_url_sends_nothing():
    engine = FakeEngine()
    with engine.running() as url:
        policy = policy_from_env({"SPECVIZ_HOSTED": "1", "SPECVIZ_ENGINE_HOSTS": "vllm.internal:8000"})
        with pytest.raises(FetchError, match=r"^endpoint URL .* is refused: the literal IP address 127.0.0.1"):
            run_load(spec(url), policy)
    assert engine.bodies == []


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("concurrency", 0, r"concurrency must be an integer in 1..64; got 0"),
        ("concurrency", 65, r"concurrency must be an integer in 1..64; got 65"),
        ("max_requests", 10_001, r"max_requests must be an integer in 1..10000; got 10001"),
        ("max_seconds", 0.5, r"max_seconds must be a number of seconds in 1..3600; got 0.5"),
        ("max_seconds", 3601, r"max_seconds must be a number of seconds in 1..3600; got 3601"),
        ("max_tokens", 4097, r"max_tokens must be an integer in 1..4096; got 4097"),
        ("max_tokens", 2.5, r"max_tokens must be an integer in 1..4096; got 2.5"),
        ("max_tokens", [8, 0, 9], r"max_tokens must be an integer in 1..4096; got 0"),
        ("max_tokens", [], r"max_tokens must hold at least one number of tokens; got none"),
        ("temperature", -0.1, r"temperature must be a number in 0..2; got -0.1"),
        ("rate", 0.001, r"rate must be a number of requests per second in 0.01..1000, or none .*; got 0.001"),
        ("rate", float("inf"), r"rate must be a number of requests per second in 0.01..1000, or none .*; got inf"),
        ("seed", 2**32, r"seed must be an integer in 0..4294967295; got 4294967296"),
        ("prompts", [], r"prompts must hold at least one prompt"),
        ("prompts", ["a", " "], r"prompts\[1\] must be a non-empty string"),
        ("prompts", "abc", r"prompts must be a list of strings"),
        ("base_url", "", r"base_url must be the server's URL"),
    ],
)
def test_spec_is_checked_naming_field_value_and_range(field, value, expected):
    with pytest.raises(ValueError, match=expected):
        spec("http://localhost:8000", **{field: value})


def test_spec_normalises_prompts_and_model():
    s = spec("http://x", prompts=["a", "b"], model="  ")
    assert s.prompts == ("a", "b") and s.model is None


def test_completions_url_and_counts():
    for base in ("http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/completions/"):
        assert completions_url(base) == "http://h:8000/v1/completions"
        assert metrics_url(base) == "http://h:8000/metrics"
    assert completion_counts({"usage": {"completion_tokens": 5}, "timings": {"predicted_n": 9}}) == (5, None, None)
    assert completion_counts({"timings": {"predicted_n": 9, "draft_n": 4, "draft_n_accepted": 3}}) == (9, 4, 3)
    assert completion_counts({"choices": []}) == (None, None, None)
    with pytest.raises(ValueError, match="server answered an error"):
        completion_counts({"error": {"message": "model not found"}})


def test_bundled_prompts_reuse_the_bench_loader():
    from specviz.engine import bench

    prompts = bundled_prompts()
    assert prompts == bench.load_prompts() and len(prompts) >= 1 and all(isinstance(p, str) for p in prompts)

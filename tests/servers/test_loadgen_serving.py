"""The load generator as a serving benchmark: streamed completions (TTFT, ITL, TPOT), the open loop's
Poisson arrivals, the fetch rules while streaming, and a run as a row of the measurement schema.

A local server (tests/_http.py's ``serve``) streams server-sent events with chosen delays, so each
measure is checked against the delays the server slept, and every statistic against numpy on the records.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np
import pytest
from _apps import click, open_app, rerun, shown_errors
from _http import read_json, redirect, send_bytes, send_json, serve
from scipy import stats

from specviz.data import store
from specviz.data.measurements import load_records
from specviz.servers import Telemetry, fetch, loadgen, window
from specviz.servers.fetch import FetchError, FetchPolicy
from specviz.servers.loadgen import LoadSpec, arrival_times, load_record, percentiles, run_load, summarize

POLICY = FetchPolicy(connect_timeout_s=1.0, read_timeout_s=2.0)


@pytest.fixture(scope="module")
def client():
    """One pooled client for the module (making one loads the CA certificates: 30 ms each time).

    Each fetch applies its own policy's timeouts, so one client serves every policy here."""
    with fetch.make_client(POLICY) as shared:
        yield shared


def sse(obj) -> bytes:
    """One server-sent event carrying ``obj`` as JSON."""
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def text_chunk(text: str) -> dict:
    return {"object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": None}]}


class StreamingEngine:
    """``POST /v1/completions`` streaming ``chunks`` ((seconds slept before, text) pairs) as server-sent events.

    After the text chunks: ``tail_s`` of sleep, then the last event(s) by ``style``: "vllm" a finish chunk
    and a usage chunk (``choices`` empty) with ``usage_tokens``; "llama" one finish chunk carrying
    ``usage`` and llama.cpp's ``timings`` (``predicted_n``, ``draft_n``, ``draft_n_accepted``); "llama-timings"
    the same without ``usage``; "none" no count at all. Then ``data: [DONE]``. ``hold_s``: seconds slept
    before the first byte (the whole answer waits). ``max_in_flight``: the most requests held at once.
    """

    def __init__(
        self,
        chunks: Sequence[tuple[float, str]] = ((0.0, "a"), (0.0, "b")),
        *,
        style: str = "vllm",
        usage_tokens: int | None = None,
        tail_s: float = 0.0,
        hold_s: float = 0.0,
        draft: tuple[int, int] = (8, 6),
        extra: bytes = b"",
    ) -> None:
        self.chunks, self.style, self.tail_s, self.hold_s, self.draft, self.extra = (
            list(chunks),
            style,
            tail_s,
            hold_s,
            draft,
            extra,
        )
        self.usage_tokens = usage_tokens if usage_tokens is not None else len(self.chunks)
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0
        self.bodies: list[dict] = []

    def last_events(self) -> list[dict]:
        finish = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
        usage = {"prompt_tokens": 7, "completion_tokens": self.usage_tokens, "total_tokens": 7 + self.usage_tokens}
        timings = {"prompt_n": 7, "predicted_n": self.usage_tokens, "draft_n": self.draft[0]}
        timings["draft_n_accepted"] = self.draft[1]
        if self.style == "vllm":
            return [finish, {"choices": [], "usage": usage}]
        if self.style == "llama":
            return [finish | {"usage": usage, "timings": timings}]
        if self.style == "llama-timings":
            return [finish | {"timings": timings}]
        return [finish]

    def completions(self, h) -> None:
        body = read_json(h)
        with self.lock:
            self.bodies.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.hold_s)
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.end_headers()
            h.wfile.write(b": a comment line, as servers send to keep a connection alive\n\n")
            for delay, text in self.chunks:
                time.sleep(delay)
                h.wfile.write(sse(text_chunk(text)))
            time.sleep(self.tail_s)
            h.wfile.write(self.extra + b"".join(sse(e) for e in self.last_events()) + b"data: [DONE]\n\n")
        except OSError:
            pass  # the client hung up (a size cap, a timeout): what such a test wants
        finally:
            with self.lock:
                self.in_flight -= 1

    @contextmanager
    def running(self):
        with serve({("POST", "/v1/completions"): self.completions}) as url:
            yield url


def spec(url: str, **kw) -> LoadSpec:
    return LoadSpec(**{"base_url": url, "prompts": ["alpha", "beta!"], "max_tokens": 8, "concurrency": 1} | kw)


def run(engine: StreamingEngine, client, policy: FetchPolicy = POLICY, **kw):
    with engine.running() as url:
        return run_load(spec(url, **({"max_requests": 2} | kw)), policy, client=client)


# --- what one streamed request measures ---------------------------------------------------------


def test_the_request_asks_for_a_stream_with_usage(client):
    engine = StreamingEngine()
    result = run(engine, client, max_requests=1, model="m")
    (body,) = engine.bodies
    assert (body["stream"], body["stream_options"], body["model"], body["max_tokens"]) == (
        True,
        {"include_usage": True},
        "m",
        8,
    )
    r = result.records.iloc[0]
    assert r["ok"] and r["streamed"] and r["n_chunks"] == 2 and len(r["chunk_s"]) == 2 and len(r["itl_s"]) == 1
    assert r["prompt_tokens"] == 7 and r["prompt_chars"] == len("alpha")


@pytest.mark.slow
def test_ttft_itl_and_tpot_are_the_delays_the_server_slept(client):
    """TTFT ≈ the first chunk's delay, ITL = the gaps between chunks, TPOT = (E2E − TTFT) / (n − 1) with the
    usage's n (6 tokens in 3 chunks: several tokens per chunk, as under speculation, so ITL ≠ TPOT)."""
    engine = StreamingEngine([(0.08, "ab"), (0.02, "cd"), (0.05, "ef")], usage_tokens=6, tail_s=0.01)
    result = run(engine, client, max_requests=2)
    assert (result.done, result.failed, result.tokens, result.tokens_estimated) == (2, 0, 12, 0)
    for _, r in result.records.iterrows():
        assert 0.08 <= r["ttft_s"] < 0.08 + 0.05
        assert r["itl_s"] == pytest.approx([0.02, 0.05], abs=0.015)
        assert np.diff(r["chunk_s"]) == pytest.approx(r["itl_s"])
        assert r["chunk_s"][0] - r["start_s"] == pytest.approx(r["ttft_s"])
        assert r["completion_tokens"] == 6 and not r["tokens_estimated"] and r["n_chunks"] == 3
        assert r["tpot_s"] == pytest.approx((r["latency_s"] - r["ttft_s"]) / (6 - 1))
        assert r["latency_s"] >= r["ttft_s"] + sum(r["itl_s"])
    records = result.records
    assert result.itl.mean == pytest.approx(np.mean([g for gaps in records["itl_s"] for g in gaps]))
    assert result.itl.mean > 1.5 * result.tpot.mean  # chunks of two tokens: a gap is two tokens' time
    assert "TTFT p50" in result.summary() and "TPOT p50" in result.summary()


def test_statistics_are_numpys_on_the_records(client):
    engine = StreamingEngine([(0.0, "a"), (0.0, "bb"), (0.0, "c"), (0.0, "d")], usage_tokens=5)
    result = run(engine, client, max_requests=5, concurrency=2)
    ok = result.records[result.records["ok"]]
    itl = [g for gaps in ok["itl_s"] for g in gaps]
    for stat, values in (
        (result.ttft, ok["ttft_s"]),
        (result.tpot, ok["tpot_s"]),
        (result.itl, itl),
        (result.e2e, ok["latency_s"]),
    ):
        assert stat.n == len(values)
        assert [stat.p50, stat.p90, stat.p99] == pytest.approx(list(np.percentile(values, [50, 90, 99])))
        assert stat.mean == pytest.approx(np.mean(values))
    assert result.output_tokens_per_s == pytest.approx(25 / result.wall_s) == result.tokens_per_s
    assert result.requests_per_s == pytest.approx(5 / result.wall_s)
    assert (result.mode, result.concurrency, result.rate) == ("closed", 2, None)
    assert result.output_tokens_mean == 5 and result.prompt_tokens_mean == 7
    assert result.prompt_chars_mean == pytest.approx(np.mean([5, 5, 5, 5, 5]))  # "alpha", "beta!"
    assert math.isnan(result.queue.mean)  # a closed loop waits for no slot


@pytest.mark.parametrize(
    ("style", "tokens", "estimated", "drafts"),
    [("vllm", 9, False, (None, None)), ("llama", 9, False, (8, 6)), ("llama-timings", 9, False, (8, 6))]
    + [("none", 3, True, (None, None))],
)
def test_token_counts_prefer_usage_then_timings_then_chunks(style, tokens, estimated, drafts, client):
    engine = StreamingEngine([(0.0, "a"), (0.0, "b"), (0.0, "c")], style=style, usage_tokens=9)
    result = run(engine, client, max_requests=1)
    r = result.records.iloc[0]
    assert (r["completion_tokens"], bool(r["tokens_estimated"]), result.tokens_estimated) == (
        tokens,
        estimated,
        int(estimated),
    )
    assert (r["draft_n"] if drafts[0] else None, r["draft_n_accepted"] if drafts[1] else None) == drafts
    assert r["tpot_s"] == pytest.approx((r["latency_s"] - r["ttft_s"]) / (tokens - 1))


def test_errors_in_the_stream_fail_the_request_and_the_run_goes_on(client):
    broken = StreamingEngine(extra=sse({"error": {"message": "engine exploded", "code": 500}}))
    garbled = StreamingEngine(extra=b"data: {not json\n\n")
    first = run(broken, client, max_requests=2)
    second = run(garbled, client, max_requests=1)
    assert (first.done, first.failed) == (2, 2) and "the server answered an error" in first.errors[0][0]
    assert "engine exploded" in first.errors[0][0] and math.isnan(first.ttft.mean)
    assert second.failed == 1 and "not JSON" in second.errors[0][0]


def test_a_server_that_ignores_stream_is_read_whole(client):
    def whole(h):
        read_json(h)
        body = {"choices": [{"text": "xyz"}], "usage": {"prompt_tokens": 2, "completion_tokens": 3}}
        send_bytes(h, json.dumps(body), content_type="application/json")

    with serve({("POST", "/v1/completions"): whole}) as url:
        result = run_load(spec(url, max_requests=2), POLICY, client=client)
    assert (result.done, result.failed, result.tokens) == (2, 0, 6)
    r = result.records.iloc[0]
    assert not r["streamed"] and math.isnan(r["ttft_s"]) and math.isnan(r["tpot_s"]) and r["itl_s"] == ()
    assert result.ttft.n == 0 and "TTFT" not in result.summary()


def test_not_streamed_on_request_has_no_ttft_tpot_or_itl(client):
    bodies = []

    def whole(h):
        bodies.append(read_json(h))
        send_json(h, {"choices": [{"text": "ab"}], "usage": {"completion_tokens": 2}})

    with serve({("POST", "/v1/completions"): whole}) as url:
        result = run_load(spec(url, max_requests=2, stream=False), POLICY, client=client)
    assert bodies[0]["stream"] is False and "stream_options" not in bodies[0]
    assert result.tokens == 4 and result.e2e.n == 2 and not result.records["streamed"].any()
    assert all(math.isnan(s.p50) for s in (result.ttft, result.tpot, result.itl))


# --- the fetch rules hold while streaming ---------------------------------------------------------


def test_the_size_cap_counts_every_streamed_byte(client):
    engine = StreamingEngine([(0.0, "x" * 100)] * 50)
    result = run(engine, client, FetchPolicy(connect_timeout_s=1.0, read_timeout_s=2.0, max_bytes=2000), max_requests=1)
    assert result.failed == 1 and "larger than 2000 bytes" in result.errors[0][0]


@pytest.mark.slow
def test_a_pause_longer_than_the_read_timeout_fails_the_request(client):
    engine = StreamingEngine([(0.0, "a"), (0.6, "b")])
    result = run(engine, client, FetchPolicy(connect_timeout_s=1.0, read_timeout_s=0.2), max_requests=1)
    assert result.failed == 1 and "(read timeout)" in result.errors[0][0]
    assert result.records["latency_s"].iloc[0] < 0.5


@pytest.mark.slow
def test_a_stream_is_bounded_by_the_total_time(client):
    engine = StreamingEngine([(0.1, "a")] * 20)  # never pauses 0.2 s, but would take 2 s
    policy = FetchPolicy(connect_timeout_s=1.0, read_timeout_s=0.2, total_timeout_s=0.5)
    result = run(engine, client, policy, max_requests=1)
    assert result.failed == 1 and "did not finish its answer within 0.5 s" in result.errors[0][0]
    assert result.records["latency_s"].iloc[0] < 0.9


def test_a_redirect_is_checked_and_refused_as_fetch_refuses_it(client):
    routes = {
        ("POST", "/v1/completions"): redirect("http://169.254.169.254/v1/completions", 307),
        ("POST", "/old/v1/completions"): redirect("/new/v1/completions", 307),
        ("POST", "/new/v1/completions"): StreamingEngine().completions,
    }
    policy = FetchPolicy(allowed_hosts=("127.0.0.1",), connect_timeout_s=1.0, read_timeout_s=2.0)
    with serve(routes) as url:
        with pytest.raises(FetchError, match=r"redirect from .* to 'http://169.254.169.254/v1/completions'.* refused"):
            fetch.fetch_stream(url + "/v1/completions", policy, json={}, on_line=lambda line: None, client=client)
        refused = run_load(spec(url, max_requests=1), policy, client=client)
        followed = run_load(spec(url + "/old", max_requests=1), policy, client=client)
    assert refused.failed == 1 and "is refused" in refused.errors[0][0]
    assert followed.failed == 0 and followed.records["n_chunks"].iloc[0] == 2


def test_fetch_stream_hands_on_lines_as_they_come(client):
    def ragged(h):
        read_json(h)
        h.send_response(200)
        h.end_headers()
        for piece in (b"data: a", b"bc\r\n", b"\r\nsecond\n", b"\n", b"no newline at the end"):
            h.wfile.write(piece)
            h.wfile.flush()
            time.sleep(0.005)

    lines: list[bytes] = []
    with serve({("POST", "/s"): ragged, ("POST", "/e"): lambda h: send_bytes(h, "overloaded", status=503)}) as url:
        got = fetch.fetch_stream(url + "/s", POLICY, json={"q": 1}, on_line=lines.append, client=client)
        with pytest.raises(FetchError, match=r"HTTP 503 Service Unavailable: overloaded") as caught:
            fetch.fetch_stream(url + "/e", POLICY, on_line=lines.append, client=client)
        with pytest.raises(ZeroDivisionError):  # what on_line raises ends the fetch, unchanged
            fetch.fetch_stream(url + "/s", POLICY, on_line=lambda line: 1 / 0, client=client)
    assert lines == [b"data: abc", b"", b"second", b"", b"no newline at the end"]
    assert got.status == 200 and got.body == b"" and caught.value.status == 503


# --- the open loop --------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_arrival_times():
    a, b = arrival_times(4.0, 50, seed=7), arrival_times(4.0, 50, seed=7)
    assert np.array_equal(a, b) and not np.array_equal(a, arrival_times(4.0, 50, seed=8))
    assert np.all(np.diff(a) > 0) and a[0] > 0  # the first request waits its gap too, as vllm's does
    expected = np.cumsum(np.random.default_rng(7).exponential(1 / 4.0, 50))
    assert np.allclose(a, expected)


def test_arrival_gaps_are_exponential_with_mean_one_over_the_rate():
    rate, n = 5.0, 2000
    gaps = np.diff(arrival_times(rate, n, seed=0), prepend=0.0)
    assert abs(gaps.mean() - 1 / rate) <= 4 * (1 / rate) / math.sqrt(n)  # 4 standard errors of the mean
    assert stats.kstest(gaps, "expon", args=(0, 1 / rate)).pvalue > 0.01


@pytest.mark.slow
def test_open_loop_requests_start_at_their_arrival_times(client):
    """Each request is sent at its scheduled arrival even while earlier ones are still in flight."""
    engine = StreamingEngine([(0.15, "a")])  # each answer takes 0.15 s: longer than the gaps (1/30 s)
    result = run(engine, client, max_requests=6, rate=30.0, seed=3, concurrency=8)
    records = result.records
    scheduled = arrival_times(30.0, 6, seed=3)
    assert records["arrival_s"].to_numpy() == pytest.approx(scheduled)
    late = (records["start_s"] - records["arrival_s"]).to_numpy()
    assert np.all(late >= 0) and np.all(late < 0.03), late
    assert records["queue_s"].to_numpy() == pytest.approx(late)
    assert engine.max_in_flight >= 3 and result.mode == "open" and result.rate == 30.0


@pytest.mark.slow
def test_open_loop_keeps_at_most_concurrency_in_flight_and_the_rest_wait(client):
    engine = StreamingEngine([(0.05, "a")])
    result = run(engine, client, max_requests=8, rate=200.0, seed=1, concurrency=2)
    assert result.done == 8 and result.failed == 0 and engine.max_in_flight == 2
    records = result.records
    assert np.all(records["start_s"] >= records["arrival_s"])
    assert records["queue_s"].max() > 0.05  # all slots taken: later requests waited for one
    assert result.queue.n == 8 and result.queue.p99 == pytest.approx(np.percentile(records["queue_s"], 99))
    # the wait is not part of TTFT (vllm keeps it apart): TTFT is still about the server's 0.05 s
    assert result.ttft.p99 < 0.05 + 0.05


def test_open_loop_bounds_time_stop_and_requests(client):
    assert arrival_times(0.01, 1, seed=0)[0] > 1.0  # λ = 0.01/s: the first arrival falls past 1 s
    engine = StreamingEngine()
    with engine.running() as url:
        late = run_load(spec(url, rate=0.01, max_seconds=1), POLICY, client=client)
        stop = threading.Event()
        threading.Timer(0.02, stop.set).start()
        t = time.perf_counter()
        stopped = run_load(spec(url, rate=0.01, seed=1, max_seconds=3600), POLICY, stop=stop, client=client)
        waited = time.perf_counter() - t
    assert (late.done, late.stopped_by) == (0, "time")  # no request arrives before the deadline
    # the stop ends the wait for an arrival due far later (a 0.59 s wait failed 0.5 s on a busy 2-core CI run)
    assert arrival_times(0.01, 1, seed=1)[0] > 20
    assert (stopped.done, stopped.stopped_by) == (0, "stop") and waited < 2.0
    assert engine.bodies == []


@pytest.mark.parametrize(
    ("rate", "shown"),
    [(0.0, "0.0"), (1001, "1001"), (float("nan"), "nan"), (True, "True"), ("2", "'2'")],
)
def test_rate_is_checked_naming_field_value_and_range(rate, shown):
    with pytest.raises(
        ValueError, match=rf"^rate must be a number of requests per second in 0.01..1000, .*got {shown}$"
    ):
        spec("http://x", rate=rate)


def test_rates_typed_on_a_page():
    assert loadgen.parse_rate("") is None and loadgen.parse_rate("  ") is None
    assert loadgen.parse_rate(" 2.5 ") == 2.5
    with pytest.raises(ValueError, match=r"^rate must be .* in 0.01..1000, or none for a closed loop; got 'fast'$"):
        loadgen.parse_rate("fast")
    with pytest.raises(ValueError, match=r"got 5000.0$"):
        loadgen.parse_rate("5e3")
    with pytest.raises(ValueError, match=r"^seed must be an integer in 0..4294967295; got -1$"):
        spec("http://x", seed=-1)
    with pytest.raises(ValueError, match=r"^stream must be True or False; got 'yes'$"):
        spec("http://x", stream="yes")


# --- statistics from hand-made records ------------------------------------------------------------


def _row(i: int, ttft: float, e2e: float, tokens: int, gaps=(), ok=True) -> dict:
    chunk = tuple(np.cumsum([ttft, *gaps]))
    return dict(
        request=i,
        prompt_index=0,
        start_s=0.0,
        end_s=e2e,
        latency_s=e2e,
        ok=ok,
        completion_tokens=tokens if ok else None,
        draft_n=None,
        draft_n_accepted=None,
        error=None if ok else "boom",
        ttft_s=ttft if ok else math.nan,
        tpot_s=loadgen.tpot(e2e, ttft, tokens) if ok else math.nan,
        n_chunks=len(chunk),
        chunk_s=chunk,
        itl_s=tuple(gaps),
        prompt_chars=5,
        streamed=True,
    )


def test_tpot_and_the_statistics_on_known_numbers():
    assert loadgen.tpot(1.0, 0.2, 5) == pytest.approx(0.2)
    assert math.isnan(loadgen.tpot(1.0, 0.2, 1)) and math.isnan(loadgen.tpot(1.0, math.nan, 5))
    rows = [
        _row(0, 0.1, 1.1, 11, (0.5, 0.5)),
        _row(1, 0.3, 0.3, 1),  # one token: no TPOT
        _row(2, 0.2, 2.2, 5, (1.0,)),
        _row(3, 9.0, 9.0, 3, ok=False),
    ]
    result = summarize(spec("http://x"), rows, 4.0, "requests")
    assert (result.ttft.n, result.tpot.n, result.itl.n, result.e2e.n) == (3, 2, 3, 3)
    assert result.ttft.p50 == pytest.approx(0.2) and result.ttft.mean == pytest.approx(0.2)
    assert [result.tpot.p50, result.tpot.p90] == pytest.approx(np.percentile([0.1, 0.5], [50, 90]))
    assert result.itl.p50 == pytest.approx(0.5) and result.itl.p99 == pytest.approx(np.percentile([0.5, 0.5, 1], 99))
    assert (result.tokens, result.tokens_per_s, result.requests_per_s) == (17, 17 / 4.0, 3 / 4.0)
    assert result.summary().endswith("; TTFT p50 200.0 ms, TPOT p50 300.0 ms")
    empty = percentiles([math.nan])
    assert empty.n == 0 and all(math.isnan(x) for x in (empty.mean, empty.p50, empty.p90, empty.p99))


# --- into the run library -------------------------------------------------------------------------


def _served(rate=None) -> loadgen.LoadResult:
    rows = [_row(0, 0.1, 1.1, 11, (0.5, 0.5)), _row(1, 0.2, 2.2, 5, (1.0,))]
    for r in rows:
        r["prompt_tokens"] = 12
    return summarize(spec("http://x", concurrency=4, rate=rate, model="fake/llama"), rows, 4.0, "requests")


def test_a_run_with_a_window_of_the_engines_counters_is_a_row_the_loader_reads():
    before = Telemetry("vllm", "fake/llama", 3, None, 0.0, 100.0, 300.0, 180.0, (80.0, 60.0, 40.0))
    after = Telemetry("vllm", "fake/llama", 3, None, 4.0, 200.0, 600.0, 360.0, (160.0, 120.0, 80.0))
    result = _served(rate=2.0)
    record = load_record(result, label="served", window=window(before, after), c=8.0)
    frame, report = load_records([record], name="served")
    row = frame.iloc[0]
    assert (row["k"], row["mean_accepted_tokens"], row["concurrency"], row["request_rate"]) == (3, 2.8, 4, 2.0)
    assert row["ttft_p50_ms"] == pytest.approx(result.ttft.p50 * 1e3)
    assert row["tpot_p99_ms"] == pytest.approx(result.tpot.p99 * 1e3)
    assert row["itl_p90_ms"] == pytest.approx(result.itl.p90 * 1e3)
    assert (row["prompt_tokens"], row["output_tokens"]) == (12, 8)
    assert row["tokens_per_s"] == pytest.approx(16 / 4.0)  # the run's output throughput, not the window's
    assert "open loop at 2 requests/s" in row["notes"] and row["source"].startswith("engine:vllm load generator")
    assert not report.row_errors


def test_a_run_without_a_window_needs_k_and_an_acceptance_figure_or_a_speedup():
    result = _served()
    with pytest.raises(ValueError, match=r"K is not known"):
        load_record(result, label="r")
    with pytest.raises(ValueError, match=r"no acceptance figure .* and no speedup"):
        load_record(result, label="r", k=4)
    slower = summarize(result.spec, [_row(0, 0.1, 1.1, 4, (0.5,))], 4.0, "requests")
    record = load_record(result, label="r", k=4, baseline=slower)
    assert record["speedup"] == pytest.approx(result.tokens_per_s / slower.tokens_per_s)
    assert "request_rate" not in record and record["concurrency"] == 4
    frame, _ = load_records([record], name="r")
    assert frame["speedup"].iloc[0] == pytest.approx(4.0)


@pytest.mark.slow
def test_a_llamacpp_run_carries_its_draft_acceptance_and_is_stored(db_url, client):
    engine = StreamingEngine([(0.0, "ab"), (0.0, "c")], style="llama", draft=(8, 6))
    result = run(engine, client, max_requests=2)
    record = load_record(result, label="llama run", k=4)
    assert record["acceptance_rate"] == pytest.approx(0.75)
    frame, _ = load_records([record], name="llama run")
    library = store.open_library(db_url)
    run_id = store.save_run(library, frame, label="llama run", source="test")
    back = store.load_run(library, run_id)
    assert back["ttft_p50_ms"].iloc[0] == pytest.approx(result.ttft.p50 * 1e3, rel=1e-6)
    assert back["concurrency"].iloc[0] == 1 and back["acceptance_rate"].iloc[0] == pytest.approx(0.75)


# --- the Server monitor page ----------------------------------------------------------------------

PAGE = "pages/server-monitor.py"


def open_load_section(**query: str):
    at = open_app(PAGE, **query)
    at.session_state["server-monitor._lg"] = True  # the Load generator expander, opened
    return rerun(at)


@pytest.mark.slow
def test_page_a_bad_rate_is_an_error_naming_the_field(db_url):
    at = open_load_section(lg_spec="http://localhost:8080", lg_rate="fast")
    assert at.text_input(key="server-monitor.lg_rate").value == "fast"
    errors = shown_errors(at)
    assert any("rate must be a number of requests per second in 0.01..1000" in e and "'fast'" in e for e in errors)
    assert next(b for b in at.button if b.label == "Run load").disabled


@pytest.mark.slow
def test_page_runs_an_open_loop_shows_the_latencies_and_saves_the_run(db_url):
    engine = StreamingEngine([(0.0, "ab"), (0.01, "c")], style="llama", draft=(8, 6))
    with engine.running() as url:
        at = open_load_section(lg_spec=url, lg_rate="50", lg_seed="3", lg_req="4", lg_conc="2")
        assert at.number_input(key="server-monitor.lg_seed").value == 3
        click(at, "Run load")
    assert len(engine.bodies) == 4 and all(b["stream"] for b in engine.bodies)
    table = at.dataframe[0].value
    assert list(table["requests"]) == [4] and list(table["load"]) == ["50 requests/s, at most 2 in flight"]
    for header in ("TTFT p50 (ms)", "TTFT p99 (ms)", "TPOT p90 (ms)", "ITL p50 (ms)"):
        assert table[header].iloc[0] > 0, header
    click(at, "Save the run 'with speculation' to the run library")
    assert any("Saved as run #1" in s.value for s in at.success)
    back = store.load_run(store.open_library(db_url), 1)
    assert (back["request_rate"].iloc[0], back["concurrency"].iloc[0]) == (50.0, 2)
    assert back["acceptance_rate"].iloc[0] == pytest.approx(0.75) and back["ttft_p50_ms"].iloc[0] > 0


# --- a real server ------------------------------------------------------------------------------


@pytest.mark.llamacpp
@pytest.mark.slow
def test_streaming_from_llama_server(llama_server):
    """llama.cpp streams /v1/completions (its last event carries usage and timings): tokens, TTFT < E2E, TPOT > 0."""
    from conftest import LLAMA_K

    prompts = ["def main():\n", "class Parser:\n"]
    before = loadgen.metrics_url(llama_server.url)
    reading = fetch.fetch(before, FetchPolicy()).text
    result = run_load(LoadSpec(llama_server.url, prompts, max_tokens=24, concurrency=2, max_requests=4), FetchPolicy())
    assert (result.done, result.failed, result.tokens, result.tokens_estimated) == (4, 0, 4 * 24, 0)
    records = result.records
    assert records["streamed"].all() and (records["n_chunks"] >= 1).all()
    assert (records["ttft_s"] > 0).all() and (records["ttft_s"] < records["latency_s"]).all()
    assert (records["tpot_s"] > 0).all() and result.tpot.p50 > 0 and result.itl.n > 0
    assert (records["prompt_tokens"] > 0).all() and result.draft_acceptance is not None
    from specviz.servers import read_llamacpp

    w = window(read_llamacpp(reading), read_llamacpp(fetch.fetch(before, FetchPolicy()).text))
    frame, _ = load_records([load_record(result, label="llama.cpp serving", window=w)], name="llama.cpp")
    assert frame["k"].iloc[0] == LLAMA_K and frame["ttft_p50_ms"].iloc[0] > 0


# --- a kept-alive connection the server closed ----------------------------------------------------


def _hang_up_then(answers: list[bool]):
    """A /v1/completions route: for each request, close the connection without a word (True) or answer
    one streamed chunk (False), in turn; the last entry repeats."""
    calls = {"n": 0}

    def route(h):
        i = min(calls["n"], len(answers) - 1)
        calls["n"] += 1
        read_json(h)
        if answers[i]:
            h.close_connection = True
            h.connection.shutdown(2)  # gone before any byte of an answer, as a stale keep-alive connection
            return
        body = sse({"choices": [{"text": "x"}], "usage": {"completion_tokens": 1}}) + b"data: [DONE]\n\n"
        send_bytes(h, body, content_type="text/event-stream")

    return route, calls


def test_a_connection_closed_before_any_answer_is_sent_once_more(client):
    route, calls = _hang_up_then([True, False])
    with serve({("POST", "/v1/completions"): route}) as url:
        result = run_load(spec(url, max_requests=1), POLICY, client=client)
    assert result.failed == 0 and result.tokens == 1 and calls["n"] == 2


def test_a_second_break_is_the_request_s_error(client):
    route, calls = _hang_up_then([True])
    with serve({("POST", "/v1/completions"): route}) as url:
        result = run_load(spec(url, max_requests=1), POLICY, client=client)
    assert result.failed == 1 and calls["n"] == 2 and "broke off the HTTP exchange" in result.errors[0][0]

"""The Server monitor against hostile or broken servers on loopback: each fetch ends within a stated time,
holds a bounded amount of memory, and ends in a one-line message; the page shows it on the endpoint's card.

Bounds under test (``FAST``): a fetch returns within ``total_timeout_s`` (1 s) plus scheduling slack,
whatever the server does (headers or body a byte at a time, no end); it never holds more than about
``max_bytes`` of decoded body (gzip bombs, 50 MB bodies); a /metrics body is read only up to
``readers.MAX_SERIES`` samples of at most ``readers.MAX_LINE`` characters, and its counters must be
finite counts. Memory is measured with tracemalloc (every bytes object the fetch makes is traced).
"""

from __future__ import annotations

import gzip
import re
import time
import tracemalloc
import zlib
from contextlib import contextmanager

import pytest
from _apps import click, open_app, rerun
from _http import (
    endless,
    gzip_bomb,
    read_json,
    redirect,
    send_bytes,
    serve,
    sleep_then,
    trickle,
    truncated,
    vllm_metrics,
)

from specviz.data import store
from specviz.servers import fetch, loadgen, monitor, readers
from specviz.servers.fetch import FetchError, FetchPolicy
from specviz.servers.readers import TelemetryError, read_metrics

FAST = FetchPolicy(connect_timeout_s=0.5, read_timeout_s=0.5, total_timeout_s=1.0, max_bytes=1_000_000)
#: For tests of what is read, not of when: FAST's 1 s total failed one on a 2-core machine running 2 workers.
ROOMY = FetchPolicy(connect_timeout_s=5.0, read_timeout_s=5.0, total_timeout_s=10.0, max_bytes=FAST.max_bytes)
SLACK_S = 0.75  #: scheduling slack allowed past the total deadline on a busy 2-core machine
METRICS = vllm_metrics(1)
PAGE = "pages/server-monitor.py"


@contextmanager
def peak_memory():
    """Yields a dict whose ``peak`` is, after the block, the most bytes traced at once during it."""
    got = {}
    tracemalloc.start()
    try:
        yield got
    finally:
        got["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def timed_fetch(url: str, policy: FetchPolicy = FAST, **kw) -> tuple[FetchError | fetch.Fetched, float]:
    """(the FetchError or the answer, seconds taken)."""
    t0 = time.perf_counter()
    try:
        got = fetch.fetch(url, policy, **kw)
    except FetchError as exc:
        got = exc
    return got, time.perf_counter() - t0


def gz(data: bytes) -> dict:
    return {"Content-Encoding": "gzip"} if data else {}


# --- slow servers: a total deadline, not only per-read timeouts -------------------------------------


@pytest.mark.slow
def test_headers_later_than_the_read_timeout_are_a_read_timeout():
    with serve({("GET", "/m"): sleep_then(2.0, lambda h: send_bytes(h, METRICS))}) as base:
        got, took = timed_fetch(base + "/m")
    assert isinstance(got, FetchError) and "sent nothing for 0.5 s (read timeout)" in str(got)
    assert took < FAST.read_timeout_s + SLACK_S


@pytest.mark.slow  # waits out a deadline: about 1 s
@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers"])
def test_an_answer_trickling_a_byte_at_a_time_is_cut_at_the_total_deadline(headers_too):
    """Every read gets a byte within 0.1 s, so the 0.5 s read timeout never fires: only a total deadline
    stops it (before: the fetch waited as long as the server kept trickling, here 30 s, and returned)."""
    route = trickle(b"x" * 300, 0.1, headers_too=headers_too)
    with serve({("GET", "/m"): route}) as base:
        got, took = timed_fetch(base + "/m")
    assert isinstance(got, FetchError), got
    assert "did not finish its answer within 1 s (the total time one fetch may take)" in str(got)
    assert FAST.total_timeout_s - 0.05 <= took < FAST.total_timeout_s + SLACK_S


@pytest.mark.slow  # waits out a deadline: about 1 s
def test_the_total_deadline_spans_redirects():
    """Three slow hops of 0.4 s each: every hop is within the read timeout, all of them are not."""
    slow = lambda to: sleep_then(0.4, redirect(to))
    routes = {("GET", "/a"): slow("/b"), ("GET", "/b"): slow("/c"), ("GET", "/c"): slow("/m")}
    routes[("GET", "/m")] = lambda h: send_bytes(h, METRICS)
    with serve(routes) as base:
        got, took = timed_fetch(base + "/a")
    assert isinstance(got, FetchError) and "within 1 s (the total time" in str(got), got
    assert took < FAST.total_timeout_s + SLACK_S


def test_the_default_total_deadline_is_connect_plus_two_reads():
    assert FetchPolicy().total_s == 2.0 + 2 * 5.0
    assert FetchPolicy(read_timeout_s=120).total_s == 242.0 and FAST.total_s == 1.0
    with pytest.raises(ValueError, match="total_timeout_s must be a positive number of seconds"):
        FetchPolicy(total_timeout_s=float("nan"))


# --- endless and large bodies: the byte cap --------------------------------------------------------


def test_a_body_without_end_is_cut_at_the_byte_cap_in_bounded_memory():
    with serve({("GET", "/m"): endless()}) as base, peak_memory() as mem:
        got, took = timed_fetch(base + "/m")
    assert isinstance(got, FetchError) and "larger than 1000000 bytes (the limit)" in str(got)
    assert took < FAST.total_timeout_s + SLACK_S and mem["peak"] < 4 * FAST.max_bytes


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_a_50_mb_body_is_refused_without_reading_it_all(declared):
    body = b"y" * (50 * 10**6)
    route = (lambda h: send_bytes(h, body)) if declared else endless(body[: 2**20])
    with serve({("GET", "/m"): route}) as base, peak_memory() as mem:
        got, _ = timed_fetch(base + "/m")
    assert isinstance(got, FetchError) and "larger than 1000000 bytes (the limit)" in str(got)
    assert mem["peak"] < 4 * FAST.max_bytes


# --- compressed bodies: the cap counts inflated bytes, and inflating is bounded too -----------------


BOMB = gzip_bomb(256)  #: 256 KiB on the wire → 256 MiB inflated
DOUBLE_BOMB = gzip.compress(gzip_bomb(1024))  #: 5 KiB → 1 MiB → 1 GiB (Content-Encoding: gzip, gzip)


@pytest.mark.parametrize(
    ("body", "encoding"),
    [(BOMB, "gzip"), (DOUBLE_BOMB, "gzip, gzip"), (zlib.compress(bytes(256 * 2**20), 1), "deflate")],
    ids=["gzip", "gzip-gzip", "deflate"],
)
def test_a_compression_bomb_is_cut_at_the_cap_on_inflated_bytes_in_bounded_memory(body, encoding):
    """Before: httpx inflated each network read whole (64 KiB → 64 MiB; nested gzip: → GiB) before the cap
    could count it. Now a step of 64 KiB at a time."""
    route = lambda h: send_bytes(h, body, headers={"Content-Encoding": encoding})
    with serve({("GET", "/m"): route}) as base, peak_memory() as mem:
        got, took = timed_fetch(base + "/m")
    assert isinstance(got, FetchError) and "larger than 1000000 bytes (the limit)" in str(got), got
    assert mem["peak"] < 4 * FAST.max_bytes, f"{mem['peak'] / 2**20:.0f} MiB held at once"
    assert took < FAST.total_timeout_s + SLACK_S


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (gzip.compress(METRICS.encode()), "gzip"),
        (gzip.compress(METRICS[:100].encode()) + gzip.compress(METRICS[100:].encode()), "gzip"),  # two members
        (zlib.compress(METRICS.encode()), "deflate"),
        (zlib.compress(METRICS.encode())[2:-4], "deflate"),  # raw deflate, as some servers send it
        (gzip.compress(gzip.compress(METRICS.encode())), "gzip, gzip"),
        (METRICS.encode(), "identity"),
    ],
    ids=["gzip", "gzip-members", "deflate", "raw-deflate", "gzip-gzip", "identity"],
)
def test_compressed_bodies_within_the_cap_are_read(body, encoding):
    with serve({("GET", "/m"): lambda h: send_bytes(h, body, headers={"Content-Encoding": encoding})}) as base:
        got = fetch.fetch(base + "/m", ROOMY)
    assert got.text == METRICS


def test_only_the_encodings_asked_for_are_read():
    """Before: httpx passed a body in an encoding it cannot decode (br without brotli) on as it came, so the
    reader saw compressed bytes; and it decoded any number of layers."""
    seen = []

    def route(enc):
        def answer(h):
            seen.append(h.headers.get("Accept-Encoding"))
            send_bytes(h, b"\x1b\x00junk", headers={"Content-Encoding": enc})

        return answer

    routes = {("GET", "/br"): route("br"), ("GET", "/deep"): route("gzip, gzip, gzip, gzip")}
    with serve(routes) as base:
        br, _ = timed_fetch(base + "/br")
        deep, _ = timed_fetch(base + "/deep")
    assert isinstance(br, FetchError) and "Content-Encoding 'br'; only gzip, deflate are read" in str(br)
    assert isinstance(deep, FetchError) and "at most 3 layers are read" in str(deep)
    assert seen == [fetch.ACCEPT_ENCODING] * 2


def test_a_broken_gzip_body_is_a_decoding_message():
    routes = {("GET", "/m"): lambda h: send_bytes(h, b"not gzip at all", headers={"Content-Encoding": "gzip"})}
    with serve(routes) as base:
        got, _ = timed_fetch(base + "/m")
    assert isinstance(got, FetchError) and "could not be decoded (" in str(got) and "Error -3" in str(got)


# --- redirects ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("/loop", r"more than 3 redirects \(the limit\)"),
        ("ftp://127.0.0.1/metrics", r"to 'ftp://127.0.0.1/metrics' is refused: only http and https"),
        ("file:///etc/passwd", r"is refused: only http and https URLs are fetched; got scheme 'file'"),
        ("gopher://127.0.0.1:70/", r"got scheme 'gopher'"),
        ("javascript:alert(1)", r"cannot fetch .*InvalidURL"),
        ("http://[::1", r"Invalid URL in location header"),
    ],
    ids=["loop", "ftp", "file", "gopher", "javascript", "bad-url"],
)
def test_redirects_in_loops_or_to_other_schemes_are_refused(location, expected):
    with serve({("GET", "/loop"): redirect(location)}) as base:
        got, took = timed_fetch(base + "/loop")
    assert isinstance(got, FetchError), got
    assert re.search(expected, str(got)), str(got)
    assert took < FAST.total_timeout_s + SLACK_S and "\n" not in str(got)


def test_many_hops_stop_at_the_redirect_limit():
    routes = {("GET", f"/{i}"): redirect(f"/{i + 1}") for i in range(50)}
    with serve(routes) as base:
        got, _ = timed_fetch(base + "/0")
    assert isinstance(got, FetchError) and "more than 3 redirects (the limit); the last went to" in str(got)
    assert str(got).endswith("/4")  # /0 → /1 → /2 → /3 followed; the fourth, to /4, is one too many


# --- connections closed early, bytes that are not UTF-8 ---------------------------------------------


def test_a_connection_closed_mid_body_is_a_message():
    with serve({("GET", "/m"): truncated(METRICS.encode()[:200], len(METRICS))}) as base:
        got, _ = timed_fetch(base + "/m")
    assert isinstance(got, FetchError) and "broke off the HTTP exchange" in str(got)
    assert f"received 200 bytes, expected {len(METRICS)}" in str(got)


@pytest.mark.parametrize("charset", ["base64", "rot13", "idna", "hex", "no-such-codec"])
def test_a_charset_that_is_no_text_encoding_reads_as_utf8(charset):
    """Before: base64, rot13 and hex raised LookupError and idna UnicodeError from ``.text``: the poll's
    thread died and the page showed a traceback."""
    body = METRICS.encode() + b"# \xff\xfe\n"
    ctype = f"text/plain; charset={charset}"
    with serve({("GET", "/m"): lambda h: send_bytes(h, body, content_type=ctype)}) as base:
        got = fetch.fetch(base + "/m", ROOMY)
    assert got.encoding == "utf-8" and got.text.startswith(METRICS) and "\ufffd" in got.text


def test_a_punycode_charset_does_not_take_quadratic_time():
    """Before: 200 KB declared as charset=punycode took seconds to decode (8 MB: hours)."""
    body = b"a" * 100_000 + b"-" + b"b" * 100_000
    ctype = "text/plain; charset=punycode"
    with serve({("GET", "/m"): lambda h: send_bytes(h, body, content_type=ctype)}) as base:
        got = fetch.fetch(base + "/m", ROOMY)
        t0 = time.perf_counter()
        text = got.text
    assert time.perf_counter() - t0 < 0.5 and len(text) == len(body)


def test_latin1_and_invalid_utf8_bodies_decode():
    body = 'model_name="café"'.encode("latin-1")
    routes = {
        ("GET", "/latin"): lambda h: send_bytes(h, body, content_type="text/plain; charset=ISO-8859-1"),
        ("GET", "/bad"): lambda h: send_bytes(h, b"\xc3\x28 ok"),
    }
    with serve(routes) as base:
        assert fetch.fetch(base + "/latin", ROOMY).text == 'model_name="café"'
        assert fetch.fetch(base + "/bad", ROOMY).text == "\ufffd( ok"


DEEP = b"[" * 100_000 + b"]" * 100_000  #: valid JSON, nested deeper than Python's recursion limit


def deep_json(h) -> None:
    """A /v1/completions answering :data:`DEEP` (after reading the request, so the socket closes cleanly)."""
    read_json(h)
    send_bytes(h, DEEP, content_type="application/json")


def test_json_nested_deeper_than_python_recurses_is_not_json():
    """Before: RecursionError escaped Fetched.json() and killed the load generator's run (a traceback)."""
    with serve({("POST", "/v1/completions"): deep_json}) as base:
        with pytest.raises(FetchError, match="is not JSON"):
            fetch.fetch(base + "/v1/completions", ROOMY, method="POST", json={}).json()
        result = loadgen.run_load(loadgen.LoadSpec(base, ["p"], max_tokens=1, concurrency=1, max_requests=2), ROOMY)
    assert (result.done, result.failed) == (2, 2) and "is not JSON" in str(result.errors[0][0])


# --- /metrics bodies: the series cap, values, duplicates --------------------------------------------


def test_a_body_of_100000_series_is_refused_naming_the_cap_quickly():
    """Before: parsed in full (8 s) into a reading."""
    text = METRICS + "".join(f'vllm:other{{id="{i}"}} {i}\n' for i in range(100_000))
    t0 = time.perf_counter()
    with pytest.raises(TelemetryError, match=r"the body holds 100007 samples; at most 20000 are read"):
        read_metrics(text)
    assert time.perf_counter() - t0 < 1.0


def test_a_huge_label_value_is_refused_naming_the_line_cap():
    """Before: a 2 MB model name took seconds to parse and went onto the page."""
    text = METRICS.replace('model_name="fake/llama"', 'model_name="' + "m" * 2_000_000 + '"', 1)
    t0 = time.perf_counter()
    with pytest.raises(TelemetryError, match=r"line 2 of the body is 2000\d+ characters long; at most 65536"):
        read_metrics(text)
    assert time.perf_counter() - t0 < 1.0


def test_a_long_model_name_is_cut_so_the_window_can_be_saved(tmp_path):
    """Before: a 1,000-character model name made a run label over the library's 200 characters."""
    text = METRICS.replace("fake/llama", "m" * 1000)
    reading = read_metrics(text, now=1.0)
    point = monitor.design_point(monitor.summary([reading], 3).overall, 3, 8.0, label=f"vLLM {reading.model}")
    engine = store.open_library(f"sqlite:///{tmp_path / 'lib.sqlite'}")
    try:  # the page's label: "<engine> <model>"
        assert store.save_run(engine, point.frame, label=point.frame["label"].iloc[0], source="engine monitor") == 1
    finally:
        engine.dispose()
    assert len(reading.model) == 160 and reading.model.endswith("…")


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "-5", "1e400"])
def test_counters_that_are_not_finite_counts_are_refused_naming_the_series(value):
    """Before: NaN and infinite counters made a reading (and NaN figures on the card)."""
    text = METRICS.replace(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="fake/llama"} 100',
        f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="fake/llama"}} {value}',
    )
    assert text != METRICS
    with pytest.raises(
        TelemetryError,
        match=r"vllm:spec_decode_num_drafts_total\{engine=\"0\",model_name=\"fake/llama\"\} is .*; a counter is a finite number ≥ 0",
    ):
        read_metrics(text)


def test_a_duplicate_series_is_refused_not_counted_twice():
    """Before: the duplicate was summed: 200 drafts read where the server counted 100."""
    lines = METRICS.splitlines()
    text = "\n".join([*lines, lines[1]]) + "\n"
    with pytest.raises(TelemetryError, match=r"vllm:spec_decode_num_drafts_total\{.*\} appears more than once"):
        read_metrics(text)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('vllm:x{a="b} 1', r"not Prometheus text"),
        ("garbage line here", r"not Prometheus text"),
        ('vllm:x{a="b"} ' + "z" * 1_000, r"not Prometheus text"),
        (
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="10000000"} 1',
            r"position 10000000 is beyond the 1024",
        ),
        (
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="²"} 1',
            r"without a numeric position label",
        ),
    ],
    ids=["unclosed-label", "garbage", "long-token", "huge-position", "superscript-position"],
)
def test_malformed_lines_are_one_short_message(line, expected):
    """Before: a position label of 10,000,000 built a tuple of ten million zeros; "²" raised ValueError from
    int() (a traceback); a bad 1,000-character token was quoted whole."""
    with pytest.raises(TelemetryError, match=expected) as err:
        read_metrics(METRICS + line + "\n")
    assert len(str(err.value)) < 600


@pytest.mark.parametrize(
    "stats",
    [
        '[{"iter": 1, "specDecodingStats": {"numDraftTokens": "abc"}}]',
        '[{"iter": 1, "specDecodingStats": {"numDraftTokens": [1]}}]',
        '[{"iter": 1, "specDecodingStats": {"numDraftTokens": NaN, "numAcceptedTokens": 3}}]',
        '[{"iter": 1, "specDecodingStats": {"numDraftTokens": 5, "numAcceptedTokens": Infinity}}]',
        '[{"iter": 1, "specDecodingStats": {"numDraftTokens": 5, "numAcceptedTokens": -3}}]',
        '[{"iter": 1, "specDecodingStats": {"numDraftTokens": 1' + "0" * 400 + "}}]",
        '[{"iter": 1, "specDecodingStats": {"numDraftTokens": 1' + "0" * 5000 + "}}]",
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["string", "list", "nan", "inf", "negative", "400-digits", "5000-digits", "deep"],
)
def test_tensorrt_llm_stats_that_are_not_counts_are_a_message(stats):
    """Before: ValueError, TypeError, OverflowError or RecursionError (a traceback on the page), or a
    reading of NaN, infinite or negative tokens."""
    with pytest.raises(TelemetryError, match=r"TensorRT-LLM /metrics: .*(is not JSON|a count is a finite number)"):
        read_metrics(stats, "trtllm", k=4)


def test_llamacpp_and_sglang_json_fields_that_are_not_counts_are_a_message():
    with pytest.raises(TelemetryError, match=r"timings.draft_n is 'x'; a count is a finite number ≥ 0"):
        readers.read_llamacpp_timings('{"timings": {"draft_n": "x"}}')
    with pytest.raises(TelemetryError, match=r"timings.predicted_ms is 'q'"):
        readers.read_llamacpp_timings('{"timings": {"draft_n": 5, "predicted_ms": "q", "predicted_n": 3}}')
    with pytest.raises(TelemetryError, match=r"avg_spec_accept_length is nan"):
        readers.read_sglang_server_info('{"internal_states": [{"avg_spec_accept_length": NaN}]}')


# --- the page: every hostile server at once, each on its own card -----------------------------------


HOSTILE = {  # path -> (route, what its card says)
    "/slow-headers": (sleep_then(3.0, lambda h: send_bytes(h, METRICS)), "(read timeout)"),
    "/trickle": (trickle(b"x" * 300, 0.1), "the total time one fetch may take"),
    "/trickle-headers": (trickle(b"", 0.1, headers_too=True), "the total time one fetch may take"),
    "/endless": (endless(), "larger than 1000000 bytes"),
    "/50mb": (lambda h: send_bytes(h, b"y" * (50 * 10**6)), "larger than 1000000 bytes"),
    "/bomb": (lambda h: send_bytes(h, BOMB, headers={"Content-Encoding": "gzip"}), "larger than 1000000 bytes"),
    "/loop": (redirect("/loop"), "more than 3 redirects"),
    "/ftp": (redirect("ftp://127.0.0.1/"), "only http and https URLs are fetched"),
    "/closed": (truncated(METRICS.encode()[:100], len(METRICS)), "broke off the HTTP exchange"),
    "/series": (
        lambda h: send_bytes(h, METRICS + "".join(f'vllm:g{{i="{i}"}} 1\n' for i in range(30_000))),
        "at most 20000 are read",
    ),
    "/nan": (lambda h: send_bytes(h, METRICS.replace("} 100\n", "} NaN\n", 1)), "a counter is a finite number"),
    "/dup": (lambda h: send_bytes(h, METRICS + METRICS.splitlines()[1] + "\n"), "appears more than once"),
    "/base64": (lambda h: send_bytes(h, b"\xff\xfe", content_type="text/plain; charset=base64"), "not Prometheus text"),
}


@pytest.mark.slow  # waits out a deadline: about 1 s
def test_the_page_shows_each_hostile_server_as_a_message_on_its_card(db_url, monkeypatch):
    """Thirteen hostile endpoints polled at once: the page run ends within the total deadline plus slack,
    with no exception element, and each card says what went wrong."""
    monkeypatch.setattr(fetch, "policy_from_env", lambda environ=None: FAST)
    routes = {("GET", path): route for path, (route, _) in HOSTILE.items()}
    with serve(routes) as base:
        t0 = time.perf_counter()
        at = open_app(PAGE, endpoints="\n".join(base + path for path in HOSTILE), poll="true")
        took = time.perf_counter() - t0
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == len(HOSTILE), errors
    for (path, (_, said)), shown in zip(HOSTILE.items(), errors, strict=True):
        assert said in shown, (path, shown)
    assert took < FAST.total_timeout_s + 6.0  # the polls run at once; the rest is the page itself


@pytest.mark.slow
def test_the_load_generator_on_the_page_survives_a_hostile_completions_server(db_url):
    """Before: the RecursionError of a deeply nested answer stopped the run and showed a traceback."""
    with serve({("POST", "/v1/completions"): deep_json}) as base:
        at = open_app(PAGE, lg_spec=base, lg_req="2", lg_conc="1", lg_tokens="1")
        at.session_state["server-monitor._lg"] = True
        rerun(at)
        click(at, "Run load")
    warnings = [w.value for w in at.warning]
    assert any("2 of 2 requests failed" in w or "is not JSON" in w for w in warnings), warnings

"""The serving-stack readers' and the model loaders' errors and notes, in English and in Chinese.

Each case: the message's key and fields for one bad input, and its values read the same in English and
in Chinese (tests/_messages.py).
The exception classes stay what callers catch (TelemetryError, FetchError with its ``status``).
"""

from __future__ import annotations

import pickle
import sys

import httpx
import pandas as pd
import pytest
import torch
from _messages import caught, expect, inner

from specviz.base.i18n import Phrase
from specviz.engine import models
from specviz.engine.models import gpt, hf
from specviz.servers import fetch, loadgen, monitor, readers, telemetry
from specviz.servers.fetch import FetchError, FetchPolicy
from specviz.servers.readers import TelemetryError
from specviz.servers.telemetry import Telemetry

# ----------------------------------------------------------------------------- specviz.servers.readers

NOT_PROMETHEUS = "the body is {kind}, not Prometheus text (# HELP / name{{labels}} value lines)"
SPECULATION_OFF = "{engine} /metrics: no speculative-decoding series among its {own} {prefix} metrics: speculation is off on this server"
NOT_THE_ENGINE = "{engine} /metrics: these are not {engine} metrics (they look like {other}'s)"
NOT_ANY_ENGINE = "/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has {sample})"


@pytest.mark.parametrize(
    ("fn", "body", "msgid", "fields", "shows"),
    [
        (readers.read_vllm, "<html>", NOT_PROMETHEUS, {"kind": "HTML"}, ("HTML", "name{labels}")),
        (
            readers.read_vllm,
            "vllm:generation_tokens_total 5\n",
            SPECULATION_OFF,
            {"engine": "vLLM", "own": 1, "prefix": "vllm:"},
            ("vLLM", "1 ", "vllm:"),
        ),
        (
            readers.read_vllm,
            "sglang:spec_accept_length 2\n",
            NOT_THE_ENGINE,
            {"engine": "vLLM", "other": "SGLang"},
            ("vLLM", "SGLang"),
        ),
        (
            readers.read_vllm,
            "foo_bar 1\n",
            "{engine} /metrics: these are not {engine} metrics (they look like no serving stack specviz knows's)",
            {"engine": "vLLM"},
            ("vLLM", "specviz"),
        ),
        (
            readers.read_vllm,
            "# HELP x y\n",
            "{engine} /metrics: the body has no samples",
            {"engine": "vLLM"},
            ("vLLM",),
        ),
        (
            readers.read_vllm,
            "foo{bar 1\n",
            "not Prometheus text ({error}); first sample line: {line!r}",
            {"error": "could not convert string to float: '{bar'", "line": "foo{bar 1"},
            ("'foo{bar 1'", "could not convert string to float: '{bar'"),
        ),
        (
            readers.read_vllm,
            'vllm:spec_decode_num_drafts_total 1\nvllm:spec_decode_num_accepted_tokens_per_pos_total{position="x"} 1\n',
            "{name}: a sample without a numeric position label ({labels})",
            {"name": "vllm:spec_decode_num_accepted_tokens_per_pos_total", "labels": "{'position': 'x'}"},
            ("vllm:spec_decode_num_accepted_tokens_per_pos_total", "{'position': 'x'}"),
        ),
        (
            readers.read_sglang,
            "sglang:gen_throughput 5\n",
            SPECULATION_OFF,
            {"engine": "SGLang", "own": 1, "prefix": "sglang:"},
            ("SGLang", "sglang:"),
        ),
        (
            readers.read_llamacpp_timings,
            {},
            "llama.cpp completion: no 'timings' object in the response",
            {},
            ("'timings'",),
        ),
        (
            readers.read_llamacpp_timings,
            {"timings": {}},
            "llama.cpp completion: 'timings' has no draft_n (the server runs without a draft)",
            {},
            ("draft_n",),
        ),
        (
            readers.read_llamacpp_timings,
            "nope",
            "{what}: the body is not JSON ({error_type}: {error})",
            {
                "what": inner("llama.cpp completion"),
                "error_type": "JSONDecodeError",
                "error": "Expecting value: line 1 column 1 (char 0)",
            },
            ("JSONDecodeError", "Expecting value: line 1 column 1 (char 0)"),
        ),
        (
            readers.read_sglang_server_info,
            {},
            "SGLang /server_info: no internal_states[0].avg_spec_accept_length (speculation off?)",
            {},
            ("internal_states[0].avg_spec_accept_length",),
        ),
        (
            readers.read_trtllm,
            "[1, 2]",
            "TensorRT-LLM /metrics: the JSON is not a list of iteration stats",
            {},
            ("TensorRT-LLM",),
        ),
        (
            readers.read_trtllm,
            '[{"iter": 1}]',
            "TensorRT-LLM /metrics: no iteration with specDecodingStats.numDraftTokens > 0 since the last call "
            "(speculation off, idle, or enable_iter_perf_stats not set)",
            {},
            ("numDraftTokens > 0", "enable_iter_perf_stats"),
        ),
        (
            readers.detect_stack,
            '{"a": 1}',
            "/metrics: JSON, but not TensorRT-LLM iteration stats",
            {},
            ("JSON", "TensorRT-LLM"),
        ),
        (
            readers.detect_stack,
            "a_b 1\nc_d 2\ne 3\nf 4\n",
            NOT_ANY_ENGINE,
            {"sample": "a_b, c_d, e"},  # the first three names
            ("a_b, c_d, e",),
        ),
        (
            readers.detect_stack_from_names,
            set(),
            "/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has no samples)",
            {},
            ("SGLang",),
        ),
    ],
)
def test_reader_errors(fn, body, msgid, fields, shows):
    exc = caught(fn, body)
    assert isinstance(exc, TelemetryError)
    expect(exc, msgid, fields, shows)


def test_reader_errors_with_arguments_and_pickling_keeps_the_class():
    body = 'vllm:spec_decode_num_drafts_total{engine="0"} 1\nvllm:spec_decode_num_drafts_total{engine="1"} 1\n'
    exc = caught(readers.read_vllm, body, engine_index="7")
    msgid = "vLLM /metrics: engine {index!r} not found; engines: {engines}"
    expect(exc, msgid, {"index": "7", "engines": ["0", "1"]}, ("'7'", "['0', '1']"))
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is TelemetryError and str(again) == str(exc) and again.text("zh") == exc.text("zh")
    exc = caught(readers.read_metrics, "vllm:x 1\n", stack="foo")
    allowed = "auto, vllm, llamacpp, sglang, trtllm"
    expect(
        exc,
        "serving stack {engine!r} is not one of {allowed}",
        {"engine": "foo", "allowed": allowed},
        ("'foo'", allowed),
    )


# ----------------------------------------------------------------------------- specviz.servers.fetch

HOSTED = FetchPolicy(allowed_hosts=("localhost:8000", "vllm.internal"), hosted=True)
EMPTY = FetchPolicy(allowed_hosts=(), hosted=True)
ANY = FetchPolicy()
HOST_ENTRIES = "{var} entries are host or host:port, separated by commas (e.g. {example}); got {entry!r}"
EXAMPLE = "localhost:8000,vllm.internal:8000"


def test_allow_list_entries():
    exc = caught(fetch.parse_host_entry, "http://x")
    fields = {"var": "SPECVIZ_ENGINE_HOSTS", "example": EXAMPLE, "entry": "http://x"}
    expect(exc, HOST_ENTRIES, fields, ("SPECVIZ_ENGINE_HOSTS", EXAMPLE, "'http://x'"))
    exc = caught(fetch.parse_host_entry, "a:99999")
    fields = {"var": "SPECVIZ_ENGINE_HOSTS", "example": EXAMPLE, "entry": "a:99999"}
    expect(exc, HOST_ENTRIES + " (ports are 1..65535)", fields, ("'a:99999'", "1..65535"))
    exc = caught(fetch.policy_from_env, {"SPECVIZ_HOSTED": "1", "SPECVIZ_ENGINE_HOSTS": "vllm/x"})
    fields = {"var": "SPECVIZ_ENGINE_HOSTS", "example": EXAMPLE, "entry": "vllm/x"}
    expect(exc, HOST_ENTRIES, fields, ("'vllm/x'",))


URL = inner("endpoint URL")
REFUSED = "{field} {url!r} is refused: "
NOT_ALLOWED = REFUSED + "host {where} is not on the allow-list of serving-stack hosts ({var}: {allowed})"
IP_NOT_ALLOWED = (
    REFUSED + "the literal IP address {where} is not on the allow-list of serving-stack hosts ({var}: {allowed})"
)
HOSTS = "localhost:8000, vllm.internal"


@pytest.mark.parametrize(
    ("url", "policy", "msgid", "fields", "shows"),
    [
        ("", ANY, "{field} is empty; write the server's URL, e.g. http://localhost:8000/metrics", {"field": URL}, ()),
        (
            "localhost:8000",
            ANY,
            "{field} {url!r} has no scheme; write it with http:// or https://, e.g. http://{url}",
            {"field": URL, "url": "localhost:8000"},
            ("'localhost:8000'", "http://localhost:8000"),
        ),
        (
            "ftp://x/y",
            ANY,
            REFUSED + "only http and https URLs are fetched; got scheme {scheme!r}",
            {"field": URL, "url": "ftp://x/y", "scheme": "ftp"},
            ("'ftp://x/y'", "'ftp'"),
        ),
        (
            "http://h:0/",
            ANY,
            REFUSED + "port {port} is outside 1..65535",
            {"field": URL, "url": "http://h:0/", "port": 0},
            ("'http://h:0/'", " 0 ", "1..65535"),
        ),
        (
            "http://u:p@localhost:8000/",
            HOSTED,
            REFUSED + "hosted mode fetches no URL with a user name or password (user:pass@host)",
            {"field": URL, "url": "http://localhost:8000/"},  # the URL without its user and password
            ("'http://localhost:8000/'",),
        ),
        (
            "http://other:8000/",
            HOSTED,
            NOT_ALLOWED,
            {
                "field": URL,
                "url": "http://other:8000/",
                "where": "other:8000",
                "var": "SPECVIZ_ENGINE_HOSTS",
                "allowed": HOSTS,
            },
            ("other:8000", HOSTS),
        ),
        (
            "http://0x7f.1:8000/",
            HOSTED,
            IP_NOT_ALLOWED + "; hosted mode fetches an IP address only when the list holds it",
            {
                "field": URL,
                "url": "http://0x7f.1:8000/",
                "where": "127.0.0.1:8000",  # 0x7f.1 is 127.0.0.1
                "var": "SPECVIZ_ENGINE_HOSTS",
                "allowed": HOSTS,
            },
            ("127.0.0.1:8000", HOSTS),
        ),
        (
            "http://127.0.0.1:8000/",
            FetchPolicy(allowed_hosts=("localhost",)),
            IP_NOT_ALLOWED,
            {
                "field": URL,
                "url": "http://127.0.0.1:8000/",
                "where": "127.0.0.1:8000",
                "var": "SPECVIZ_ENGINE_HOSTS",
                "allowed": "localhost",
            },
            ("127.0.0.1:8000",),
        ),
        (
            "http://vllm.internal/",
            EMPTY,
            REFUSED
            + "no serving-stack host may be fetched: the allow-list {var} is empty. The operator sets it to the "
            "comma-separated host or host:port entries this server may fetch, e.g. {var}={example}",
            {"field": URL, "url": "http://vllm.internal/", "var": "SPECVIZ_ENGINE_HOSTS", "example": EXAMPLE},
            ("'http://vllm.internal/'", "SPECVIZ_ENGINE_HOSTS=localhost:8000,vllm.internal:8000"),
        ),
    ],
)
def test_check_url_refusals(url, policy, msgid, fields, shows):
    exc = caught(fetch.check_url, url, policy)
    assert isinstance(exc, FetchError) and exc.status is None
    expect(exc, msgid, fields, shows)


def _client(handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def _raising(exc: Exception) -> httpx.Client:
    def handler(request):
        raise exc

    return _client(handler)


M = "http://localhost:8000/m"
WHERE = {"url": M, "where": "localhost:8000"}
REFUSED_AT = "cannot fetch {url}: connection refused: nothing is listening at {where}"


@pytest.mark.parametrize(
    ("exc", "msgid", "fields", "shows"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), REFUSED_AT, WHERE, (M, "localhost:8000")),
        (
            httpx.ConnectTimeout("x"),
            "cannot fetch {url}: no connection to {where} within {s:g} s (connect timeout): is the host up and its "
            "port open?",
            WHERE | {"s": 2.0},  # FetchPolicy's connect timeout
            (M, "localhost:8000", "2"),
        ),
        (
            httpx.ReadTimeout("x"),
            "cannot fetch {url}: {where} accepted the connection but sent nothing for {s:g} s (read timeout)",
            WHERE | {"s": 5.0},  # FetchPolicy's read timeout
            (M, "localhost:8000", "5"),
        ),
        (
            httpx.ConnectError("[SSL: WRONG_VERSION_NUMBER] wrong version number"),
            "cannot fetch {url}: TLS error talking to {where}: {detail} (does the server speak plain http? then "
            "write http://)",
            WHERE | {"detail": "[SSL: WRONG_VERSION_NUMBER] wrong version number"},
            ("[SSL: WRONG_VERSION_NUMBER] wrong version number", "http://"),
        ),
        (
            httpx.RemoteProtocolError("Server disconnected"),
            "cannot fetch {url}: {where} broke off the HTTP exchange ({detail}): is it an HTTP server?",
            WHERE | {"detail": "Server disconnected"},
            ("Server disconnected",),
        ),
        (
            httpx.UnsupportedProtocol("nope"),
            "cannot fetch {url}: {error}: {detail}",
            {"url": M, "error": "UnsupportedProtocol", "detail": "nope"},
            ("UnsupportedProtocol: nope",),
        ),
    ],
)
def test_transport_failures(exc, msgid, fields, shows):
    err = caught(fetch.fetch, M, ANY, client=_raising(exc))
    assert isinstance(err, FetchError) and err.__cause__ is exc
    expect(err, msgid, fields, shows)


def test_answers_refused_and_the_status_kept():
    err = caught(fetch.fetch, M, ANY, client=_client(lambda r: httpx.Response(404, text="no")))
    assert err.status == 404
    fields = {"url": M, "code": 404, "reason": "Not Found", "said": "no"}
    expect(err, "cannot fetch {url}: the server answered HTTP {code} {reason}: {said}", fields, ("HTTP 404 Not Found",))
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is FetchError and again.status == 404 and str(again) == str(err)
    small = FetchPolicy(max_bytes=10)
    err = caught(fetch.fetch, M, small, client=_client(lambda r: httpx.Response(200, text="x" * 99)))
    expect(
        err,
        "cannot fetch {url}: the response is larger than {limit} bytes (the limit); is this the right endpoint?",
        {"url": M, "limit": 10},
        (M, "10"),
    )
    loop = _client(lambda r: httpx.Response(302, headers={"location": f"http://localhost:8000/{len(str(r.url))}"}))
    err = caught(fetch.fetch, M, FetchPolicy(max_redirects=1), client=loop)
    expect(
        err,
        "cannot fetch {url}: more than {limit} redirects (the limit); the last went to {last}",
        {"url": M, "limit": 1, "last": "http://localhost:8000/24"},  # len("http://localhost:8000/m") = 23, then 24
        ("1", "http://localhost:8000/24"),
    )
    down = _client(
        lambda r: (
            httpx.Response(302, headers={"location": "http://localhost:8000/x"})
            if r.url.scheme == "https"
            else httpx.Response(200)
        )
    )
    err = caught(fetch.fetch, "https://localhost:8000/m", ANY, client=down)
    redirect = inner("redirect from {url!r} to", url="https://localhost:8000/m")
    expect(
        err,
        "{field} {url!r} is refused: it leaves https for plain http",
        {"field": redirect, "url": "http://localhost:8000/x"},
        ("'https://localhost:8000/m'", "'http://localhost:8000/x'"),
    )
    away = _client(lambda r: httpx.Response(302, headers={"location": "http://evil:8000/x"}))
    err = caught(fetch.fetch, M, HOSTED, client=away)
    redirect = inner("redirect from {url!r} to", url=M)
    fields = {"field": redirect, "url": "http://evil:8000/x", "where": "evil:8000", "var": "SPECVIZ_ENGINE_HOSTS"}
    expect(err, NOT_ALLOWED, fields | {"allowed": HOSTS}, (repr(M), "'http://evil:8000/x'", "evil:8000"))
    got = fetch.fetch(M, ANY, client=_client(lambda r: httpx.Response(200, text="<html>")))
    exc = caught(got.json)
    expect(exc, "the answer from {url} is not JSON: {snippet!r}", {"url": M, "snippet": "<html>"}, (M, "'<html>'"))


# ----------------------------------------------------------------------------- specviz.servers.monitor


def test_endpoint_lines():
    expect(
        caught(monitor.parse_endpoints, "a b c", ANY),
        "endpoints, line {n}: {line!r} has {count} fields; write 'URL' or 'URL stack'",
        {"n": 1, "line": "a b c", "count": 3},
        ("1", "'a b c'", "3"),
    )
    allowed = "auto, vllm, llamacpp, sglang, trtllm"
    expect(
        caught(monitor.parse_endpoints, "\nhttp://x:1 foo", ANY),
        "endpoints, line {n}: serving stack {engine!r} is not one of {allowed}",
        {"n": 2, "engine": "foo", "allowed": allowed},
        ("2", "'foo'", allowed),
    )
    exc = caught(monitor.parse_endpoints, "\n\nftp://x", ANY)
    assert not isinstance(exc, FetchError)  # a line of the text box, not a fetch
    expect(
        exc,
        REFUSED + "only http and https URLs are fetched; got scheme {scheme!r}",
        {"field": inner("endpoints, line {n}: URL", n=3), "url": "ftp://x/metrics", "scheme": "ftp"},
        ("3", "'ftp://x/metrics'", "'ftp'"),
    )
    many = "\n".join(f"http://h{i}:1" for i in range(20))
    expect(
        caught(monitor.parse_endpoints, many, ANY),
        "endpoints: more than {max}; monitor at most {max} at once",
        {"max": 16},
        ("16",),
    )


def test_a_poll_error_and_the_history_note_read_in_chinese():
    refused = _raising(httpx.ConnectError("Connection refused"))
    p = monitor.poll(monitor.Endpoint("http://localhost:8000/metrics"), ANY, 4, client=refused)
    fields = {"url": "http://localhost:8000/metrics", "where": "localhost:8000"}
    expect(p.error, REFUSED_AT, fields, ("http://localhost:8000/metrics", "localhost:8000"))
    html = _client(lambda r: httpx.Response(200, text="<html>"))
    p = monitor.poll(monitor.Endpoint("http://localhost:8000/metrics"), ANY, 4, client=html)
    expect(p.error, NOT_PROMETHEUS, {"kind": "HTML"}, ("HTML",))
    history = monitor.History()
    history.add([monitor.Poll(monitor.Endpoint("http://a/metrics"), None, None, 0.1)])
    expect(history.errors["http://a/metrics"], "no reading")


def test_design_point_without_alpha(monkeypatch):
    w = telemetry.window(None, Telemetry("vllm", drafts=10, draft_tokens=40, accepted_tokens=20, cumulative=False))
    frame = pd.DataFrame({"alpha_used": [float("nan")]})
    monkeypatch.setattr(monitor, "load_records", lambda records, name: (frame, None))
    expect(
        caught(monitor.design_point, w, 4, 2.0, label="vLLM m"),
        "{label}: no α from this window (E[N] {mean}, K = {k})",
        {"label": "vLLM m", "mean": 3.0, "k": 4},  # E[N] = 1 + 20 accepted / 10 drafts
        ("vLLM m", "E[N] 3.0", "K = 4"),
    )


# ----------------------------------------------------------------------------- specviz.servers.telemetry

WENT_DOWN = "counters went down ({counters}): the server restarted; the window counts from the restart"


def test_restart_notes():
    t1 = Telemetry("vllm", drafts=10, draft_tokens=40, accepted_tokens=20, accepted_per_position=(8, 5), end=1)
    t2 = Telemetry("vllm", drafts=3, draft_tokens=12, accepted_tokens=30, accepted_per_position=(2,), end=2)
    t3 = Telemetry("vllm", drafts=12, draft_tokens=48, accepted_tokens=25, accepted_per_position=(9, 4), end=3)
    series = inner("per-position series {before} → {after}", before=2, after=1)
    counters = inner("{a}; {b}", a="drafts 10 → 3", b=inner("{a}; {b}", a="draft_tokens 40 → 12", b=series))
    reset = telemetry.window(t1, t2).reset
    expect(reset, WENT_DOWN, {"counters": counters}, ("drafts 10 → 3", "draft_tokens 40 → 12", "2 → 1"))
    expect(telemetry.window(t1, t3).reset, WENT_DOWN, {"counters": inner("accepted per position")})
    expect(
        telemetry.window_over([t1, t2, t3, t1]).reset,
        "the server restarted {n} times while monitored; counts before and after are added up",
        {"n": 3},
        ("3",),
    )
    record = telemetry.to_record(telemetry.window(t1, t2), k=3)
    assert record["notes"].endswith("; " + str(reset))  # the table keeps the English


def test_to_record_errors():
    expect(
        caught(telemetry.to_record, telemetry.window(None, Telemetry("sglang"))),
        "{engine} window: K is not known; give the K the serving stack runs with",
        {"engine": "SGLang"},
        ("SGLang",),
    )
    expect(
        caught(telemetry.to_record, telemetry.window(None, Telemetry("vllm")), k=3),
        "{engine} window: no drafts in it (speculation off, or no traffic yet)",
        {"engine": "vLLM"},
        ("vLLM",),
    )


# ----------------------------------------------------------------------------- specviz.servers.loadgen


@pytest.mark.parametrize(
    ("kwargs", "msgid", "fields", "shows"),
    [
        ({"prompts": "abc"}, "prompts must be a list of strings; got {prompts!r:.80}", {"prompts": "abc"}, ("'abc'",)),
        (
            {"base_url": " "},
            "base_url must be the server's URL, e.g. http://localhost:8000; got {url!r}",
            {"url": " "},
            ("' '",),
        ),
        ({"prompts": []}, "prompts must hold at least one prompt; got none", {}, ()),
        (
            {"prompts": ["a", " "]},
            "prompts[{i}] must be a non-empty string; got {prompt!r:.80}",
            {"i": 1, "prompt": " "},
            ("prompts[1]", "' '"),
        ),
        ({"model": 3}, "model must be a model name or None; got {model!r}", {"model": 3}, ("3",)),
        (
            {"concurrency": 0},
            "{name} must be an integer in {lo}..{hi}; got {value!r}",
            {"name": "concurrency", "lo": 1, "hi": 64, "value": 0},
            ("concurrency", "1..64", "0"),
        ),
        (
            {"max_seconds": 0.5},
            "{name} must be a number of seconds in {lo}..{hi}; got {value!r}",
            {"name": "max_seconds", "lo": 1, "hi": 3600, "value": 0.5},
            ("max_seconds", "1..3600", "0.5"),
        ),
        (
            {"temperature": 3},
            "temperature must be a number in {lo:g}..{hi:g}; got {t!r}",
            {"lo": 0.0, "hi": 2.0, "t": 3},
            ("0..2", "3"),
        ),
    ],
)
def test_load_spec_errors(kwargs, msgid, fields, shows):
    args = {"base_url": "http://x", "prompts": ["a"]} | kwargs
    expect(caught(loadgen.LoadSpec, **args), msgid, fields, shows)


def _row(i: int, ok: bool, error=None) -> dict:
    return dict(
        request=i,
        prompt_index=0,
        start_s=0.1 * i,
        end_s=0.1 * i + 0.5,
        latency_s=0.5,
        ok=ok,
        completion_tokens=5 if ok else None,
        draft_n=None,
        draft_n_accepted=None,
        error=error,
    )


SUMMARY = "{tokens} completion tokens, {tokens_per_s:.1f} tokens/s, latency p50 {p50:.2f} s, p95 {p95:.2f} s; stopped by {why}"
NOT_SENT = inner("no request was sent (stopped by {why})", why=inner("Stop"))
NO_TOKENS = (
    "the run {which} speculative decoding has no completion tokens ({summary}); "
    "the speedup (tokens/s with ÷ tokens/s without) needs tokens in both runs"
)


def test_load_summaries_and_the_speedup():
    spec = loadgen.LoadSpec("http://x", ["a"])
    none = loadgen.summarize(spec, [], 0.0, "stop")
    expect(none.summary(), NOT_SENT.msgid, NOT_SENT.fields)
    expect(
        loadgen.summarize(spec, [_row(0, True), _row(1, False, "e")], 1.7, "time").summary(),
        "{done} requests ({failed} failed) in {wall_s:.1f} s: " + SUMMARY,
        {
            "done": 2,
            "failed": 1,
            "wall_s": 1.7,
            "tokens": 5,  # the one request that succeeded
            "tokens_per_s": pytest.approx(5 / 1.7),
            "p50": 0.5,
            "p95": 0.5,
            "why": inner("the time limit"),
        },
        ("2", "1", "1.7", "2.9 tokens/s", "p50 0.50", "p95 0.50"),
    )
    expect(
        loadgen.summarize(spec, [_row(0, True)], 2.0, "requests").summary(),
        "{done} requests in {wall_s:.1f} s: " + SUMMARY,
        {
            "done": 1,
            "failed": 0,
            "wall_s": 2.0,
            "tokens": 5,
            "tokens_per_s": 2.5,
            "p50": 0.5,
            "p95": 0.5,
            "why": inner("the request limit"),
        },
        ("2.0", "2.5 tokens/s"),
    )
    expect(
        caught(loadgen.measured_speedup, none, loadgen.summarize(spec, [_row(0, True)], 1.0, "time")),
        NO_TOKENS.replace("{which}", "with"),
        {"summary": NOT_SENT},
    )
    failed = loadgen.summarize(spec, [_row(0, False, "x")], 1.0, "time")
    expect(
        caught(loadgen.measured_speedup, loadgen.summarize(spec, [_row(0, True)], 1.0, "time"), failed),
        NO_TOKENS.replace("{which}", "without"),
        {"summary": inner("all {done} requests failed; first error: {first}", done=1, first="x")},
        ("1",),
    )


def test_completion_errors_and_a_failed_run_reads_in_chinese():
    expect(
        caught(loadgen.completion_counts, [1]),
        "the answer is not a completions response: {body}",
        {"body": "[1]"},
        ("[1]",),
    )
    expect(
        caught(loadgen.completion_counts, {"error": "overloaded"}),
        "the server answered an error: {error}",
        {"error": "overloaded"},
        ("overloaded",),
    )
    spec = loadgen.LoadSpec("http://localhost:8000", ["a"], max_requests=2, concurrency=1)
    busy = _client(lambda r: httpx.Response(503, text="busy"))
    result = loadgen.run_load(spec, ANY, client=busy)
    assert len(result.errors) == 1 and result.errors[0][1] == 2  # one error, twice
    error = result.errors[0][0]
    url = "http://localhost:8000/v1/completions"
    fields = {"url": url, "code": 503, "reason": "Service Unavailable", "said": "busy"}
    expect(error, "cannot fetch {url}: the server answered HTTP {code} {reason}: {said}", fields, (url, "HTTP 503"))
    http_503 = inner("cannot fetch {url}: the server answered HTTP {code} {reason}: {said}", **fields)
    expect(
        result.summary(),
        "all {done} requests failed; first error: {first}",
        {"done": 2, "first": http_503},
        ("2", url),
    )
    assert list(result.records["error"]) == [str(error), str(error)]  # the table keeps plain text
    assert all(type(e) is str for e in result.records["error"])


# ----------------------------------------------------------------------------- specviz.engine.models


def test_devices_and_pairs(tmp_path):
    expect(
        caught(models.resolve_device, "tpu"),
        "device must be 'auto', 'cpu' or 'cuda[:N]'; got {device!r}",
        {"device": "tpu"},
        ("'tpu'",),
    )
    if not torch.cuda.is_available():
        expect(
            caught(models.resolve_device, "cuda:1"),
            "device {device!r} was requested but no CUDA GPU is available; use 'cpu' or 'auto'",
            {"device": "cuda:1"},
            ("'cuda:1'",),
        )
    fields = {"spec": str(tmp_path), "part": "target", "root": tmp_path}
    no_weights = "pair {spec!r}: no {part}/model.safetensors under {root}"
    expect(
        caught(models.load_pair, str(tmp_path)), no_weights, fields, (repr(str(tmp_path)), "target/model.safetensors")
    )
    expect(caught(hf.export_pair, str(tmp_path), tmp_path / "out"), no_weights, fields, (repr(str(tmp_path)),))


NOT_DIVISIBLE = "n_embd must be divisible by n_head; got {n_embd} and {n_head}"


def test_our_gpt_config_weights_and_positions(tmp_path):
    expect(caught(gpt.GPTConfig, n_embd=10, n_head=3), NOT_DIVISIBLE, {"n_embd": 10, "n_head": 3}, ("10", "3"))
    (tmp_path / "config.json").write_text('{"n_embd": 10, "n_head": 3}')
    expect(
        caught(gpt.GPT.load, tmp_path),
        "{directory}/config.json is missing or not a valid model config: {error}",
        {"directory": tmp_path, "error": inner(NOT_DIVISIBLE, n_embd=10, n_head=3)},  # the cause in Chinese too
        (str(tmp_path), "10", "3"),
    )
    (tmp_path / "config.json").write_text('{"n_embd": 8, "n_head": 2, "n_layer": 1, "block_size": 8}')
    expect(
        caught(gpt.GPT.load, tmp_path),
        "{directory}/model.safetensors is missing or corrupt: {error}",
        {"directory": tmp_path, "error": str},  # the safetensors loader's own text
        (str(tmp_path),),
    )
    model = gpt.GPT(gpt.GPTConfig(n_embd=8, n_head=2, n_layer=1, block_size=8))
    expect(
        caught(model, torch.zeros(1, 9, dtype=torch.long)),
        "sequence length must be <= block_size {block_size}; got {t}",
        {"block_size": 8, "t": 9},
        ("block_size 8", "9"),
    )
    model.setup_cache(1, 8)
    expect(
        caught(model, torch.zeros(1, 4, dtype=torch.long), start=6),
        "sequence would reach position {last}; the cache holds {cache}",
        {"last": 9, "cache": 8},  # positions 6..9
        ("9", "8"),
    )


class _Loader:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def from_pretrained(self, *args, **kwargs):
        raise self.exc


def test_hugging_face_loading(monkeypatch, tmp_path):
    tokenizer, model = Phrase("tokenizer"), Phrase("model")
    expect(
        caught(hf._from_pretrained, _Loader(OSError("x")), "./folder", model, False),
        "{what} {spec!r}: local folders are not allowed here; give a Hugging Face hub id",
        {"what": inner("model"), "spec": "./folder"},
        ("'./folder'",),
    )
    expect(
        caught(hf._from_pretrained, _Loader(OSError("x")), str(tmp_path / "no"), tokenizer, True),
        "{what} {spec!r}: no such folder",
        {"what": inner("tokenizer"), "spec": str(tmp_path / "no")},
        (repr(str(tmp_path / "no")),),
    )
    expect(
        caught(hf._from_pretrained, _Loader(OSError("bad config")), str(tmp_path), model, True),
        "{what} {spec!r}: cannot load from the local folder: {error}",
        {"what": inner("model"), "spec": str(tmp_path), "error": "bad config"},
        (repr(str(tmp_path)), "bad config"),
    )
    monkeypatch.setattr(hf, "_hub_offline", lambda: True)
    expect(
        caught(hf._from_pretrained, _Loader(OSError("miss")), "org/gpt2", tokenizer, True),
        "{what} {spec!r}: not in the local Hugging Face cache (and there is no local folder of that name) and "
        "HF_HUB_OFFLINE is set ({error})",
        {"what": inner("tokenizer"), "spec": "org/gpt2", "error": "miss"},
        ("'org/gpt2'", "HF_HUB_OFFLINE", "miss"),
    )
    monkeypatch.setattr(hf, "_hub_offline", lambda: False)
    monkeypatch.setattr(hf, "_hub_reachable", lambda timeout=3.0: False)
    expect(
        caught(hf._from_pretrained, _Loader(OSError("miss")), "gpt2", model, True),
        "{what} {spec!r}: not in the local Hugging Face cache and the Hugging Face Hub cannot be reached (no network?)",
        {"what": inner("model"), "spec": "gpt2"},
        ("'gpt2'",),
    )
    monkeypatch.setattr(hf, "_hub_reachable", lambda timeout=3.0: True)
    expect(
        caught(hf._from_pretrained, _Loader(OSError("404")), "gpt2", model, True),
        "{what} {spec!r}: cannot load from the Hugging Face Hub: {error}",
        {"what": inner("model"), "spec": "gpt2", "error": "404"},
        ("'gpt2'", "404"),
    )


def test_hugging_face_pairs(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    expect(
        caught(hf.require_transformers),
        "loading a Hugging Face model pair: the Hugging Face adapter needs the optional package transformers: "
        "pip install transformers=={pin}",
        {"pin": hf.TRANSFORMERS_PIN},
        (f"pip install transformers=={hf.TRANSFORMERS_PIN}",),
    )
    monkeypatch.setattr(hf, "require_transformers", lambda: None)
    expect(
        caught(hf.load_hf_pair, " ", "x"),
        "a Hugging Face pair is 'TARGET,DRAFT'; got {target!r}, {draft!r}",
        {"target": "", "draft": "x"},  # stripped
        ("'TARGET,DRAFT'", "''", "'x'"),
    )
    expect(caught(hf.load_hf_target, " "), "a Hugging Face target id is empty", {}, ("Hugging Face",))

    class Tok:
        def __init__(self, vocab):
            self.vocab = vocab

        def get_vocab(self):
            return self.vocab

        def __len__(self):
            return len(self.vocab)

    class Model:
        _is_stateful = False

        def get_output_embeddings(self):
            return torch.nn.Linear(1, 1)  # one output logit

    toks = {"t": Tok({"a": 0, "b": 1}), "d": Tok({"a": 0, "c": 1}), "s": Tok({"a": 0, "b": 1, "z": 2})}
    monkeypatch.setattr(hf, "_load_tokenizer", lambda spec, allow_local: toks[spec])
    expect(
        caught(hf.load_hf_pair, "t", "d"),
        "target {target!r} and draft {draft!r} use different tokenizers ({a} vs {b} tokens; e.g. {diff}); "
        "speculative decoding needs a shared vocabulary",
        {"target": "t", "draft": "d", "a": 2, "b": 2, "diff": [("b", 1), ("c", 1)]},
        ("'t'", "'d'", "[('b', 1), ('c', 1)]"),
    )
    monkeypatch.setattr(hf, "_load_model", lambda spec, device, dtype, allow_local: Model())
    expect(
        caught(hf.load_hf_pair, "t", "t"),
        "model {spec!r} has {logits} output logits but its tokenizer has {vocab} tokens",
        {"spec": "t", "logits": 1, "vocab": 2},
        ("'t'", "1", "2"),
    )
    expect(
        caught(hf.load_hf_target, "s"),
        "model {spec!r} has {logits} output logits but its tokenizer has {vocab}",
        {"spec": "s", "logits": 1, "vocab": 3},
        ("'s'", "1", "3"),
    )


def test_stateful_models_and_context_lengths(monkeypatch):
    class Stateful:
        _is_stateful = True

    monkeypatch.setattr(hf, "require_transformers", lambda: type("T", (), {"AutoModelForCausalLM": None}))
    monkeypatch.setattr(hf, "_from_pretrained", lambda *args, **kwargs: Stateful())
    expect(
        caught(hf._load_model, "rnn", "cpu", None, True),
        "model {spec!r}: {cls} is stateful (recurrent); its cache cannot be rewound to an earlier position, "
        "which speculative decoding needs",
        {"spec": "rnn", "cls": "Stateful"},
        ("'rnn'", "Stateful"),
    )

    class Config:
        pass

    attrs = "max_position_embeddings, n_positions, max_sequence_length, seq_length, n_ctx"
    expect(
        caught(hf._context_length, Config()),
        "{config}: cannot find the context length (none of {attrs})",
        {"config": "Config", "attrs": attrs},
        ("Config", attrs),
    )

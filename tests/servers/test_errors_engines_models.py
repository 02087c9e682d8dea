"""The engines' and the model loaders' errors and notes: English as before, Chinese on a page.

Each case: the English ``str`` a person reads for one bad input, and a Chinese text with CJK characters
and the same numbers and inputs.
The exception classes stay what callers catch (TelemetryError, FetchError with its ``status``).
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import httpx
import pandas as pd
import pytest
import torch
from _messages import caught, check

from specviz.base.i18n import Phrase
from specviz.engine import models
from specviz.engine.models import gpt, hf
from specviz.servers import fetch, loadgen, monitor, readers, telemetry
from specviz.servers.fetch import FetchError, FetchPolicy
from specviz.servers.readers import TelemetryError
from specviz.servers.telemetry import Telemetry

ROOT = Path(__file__).resolve().parents[2]
MY_FILES = [
    *sorted((ROOT / "specviz" / "servers").glob("*.py")),
    ROOT / "specviz" / "engine" / "models" / "__init__.py",
    ROOT / "specviz" / "engine" / "models" / "gpt.py",
    ROOT / "specviz" / "engine" / "models" / "hf.py",
]

# ----------------------------------------------------------------------------- specviz.servers.readers


@pytest.mark.parametrize(
    ("fn", "body", "english", "same"),
    [
        (
            readers.read_vllm,
            "<html>",
            "the body is HTML, not Prometheus text (# HELP / name{labels} value lines)",
            ("HTML", "name{labels}"),
        ),
        (
            readers.read_vllm,
            "vllm:generation_tokens_total 5\n",
            "vLLM /metrics: no speculative-decoding series among its 1 vllm: metrics: speculation is off on this server",
            ("vLLM", "1 个 vllm:"),
        ),
        (
            readers.read_vllm,
            "sglang:spec_accept_length 2\n",
            "vLLM /metrics: these are not vLLM metrics (they look like SGLang's)",
            ("vLLM", "SGLang"),
        ),
        (
            readers.read_vllm,
            "foo_bar 1\n",
            "vLLM /metrics: these are not vLLM metrics (they look like no engine specviz knows's)",
            ("vLLM", "specviz"),
        ),
        (readers.read_vllm, "# HELP x y\n", "vLLM /metrics: the body has no samples", ("vLLM",)),
        (
            readers.read_vllm,
            "foo{bar 1\n",
            "not Prometheus text (could not convert string to float: '{bar'); first sample line: 'foo{bar 1'",
            ("'foo{bar 1'",),
        ),
        (
            readers.read_vllm,
            'vllm:spec_decode_num_drafts_total 1\nvllm:spec_decode_num_accepted_tokens_per_pos_total{position="x"} 1\n',
            "vllm:spec_decode_num_accepted_tokens_per_pos_total: a sample without a numeric position label "
            "({'position': 'x'})",
            ("{'position': 'x'}",),
        ),
        (
            readers.read_sglang,
            "sglang:gen_throughput 5\n",
            "SGLang /metrics: no speculative-decoding series among its 1 sglang: metrics: speculation is off on this "
            "server",
            ("SGLang",),
        ),
        (
            readers.read_llamacpp_timings,
            {},
            "llama.cpp completion: no 'timings' object in the response",
            ("'timings'",),
        ),
        (
            readers.read_llamacpp_timings,
            {"timings": {}},
            "llama.cpp completion: 'timings' has no draft_n (the server runs without a draft)",
            ("draft_n",),
        ),
        (
            readers.read_llamacpp_timings,
            "nope",
            "llama.cpp completion: the body is not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0))",
            ("llama.cpp 补全响应", "JSONDecodeError"),
        ),
        (
            readers.read_sglang_server_info,
            {},
            "SGLang /server_info: no internal_states[0].avg_spec_accept_length (speculation off?)",
            ("internal_states[0].avg_spec_accept_length",),
        ),
        (
            readers.read_trtllm,
            "[1, 2]",
            "TensorRT-LLM /metrics: the JSON is not a list of iteration stats",
            ("TensorRT-LLM",),
        ),
        (
            readers.read_trtllm,
            '[{"iter": 1}]',
            "TensorRT-LLM /metrics: no iteration with specDecodingStats.numDraftTokens > 0 since the last call "
            "(speculation off, idle, or enable_iter_perf_stats not set)",
            ("numDraftTokens > 0", "enable_iter_perf_stats"),
        ),
        (
            readers.detect_engine,
            '{"a": 1}',
            "/metrics: JSON, but not TensorRT-LLM iteration stats",
            ("JSON", "TensorRT-LLM"),
        ),
        (
            readers.detect_engine,
            "a_b 1\nc_d 2\ne 3\nf 4\n",
            "/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has a_b, c_d, e)",
            ("a_b, c_d, e",),
        ),
        (
            readers.detect_engine_from_names,
            set(),
            "/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has no samples)",
            ("SGLang",),
        ),
    ],
)
def test_reader_errors(fn, body, english, same):
    exc = caught(fn, body)
    assert isinstance(exc, TelemetryError)
    check(exc, english, *same)


def test_reader_errors_with_arguments_and_pickling_keeps_the_class():
    body = 'vllm:spec_decode_num_drafts_total{engine="0"} 1\nvllm:spec_decode_num_drafts_total{engine="1"} 1\n'
    exc = caught(readers.read_vllm, body, engine_index="7")
    check(exc, "vLLM /metrics: engine '7' not found; engines: ['0', '1']", "'7'", "['0', '1']")
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is TelemetryError and str(again) == str(exc) and again.text("zh") == exc.text("zh")
    exc = caught(readers.read_metrics, "vllm:x 1\n", engine="foo")
    check(exc, "engine 'foo' is not one of auto, vllm, llamacpp, sglang, trtllm", "'foo'", "auto, vllm")


# ----------------------------------------------------------------------------- specviz.servers.fetch

HOSTED = FetchPolicy(allowed_hosts=("localhost:8000", "vllm.internal"), hosted=True)
EMPTY = FetchPolicy(allowed_hosts=(), hosted=True)
ANY = FetchPolicy()


def test_allow_list_entries():
    exc = caught(fetch.parse_host_entry, "http://x")
    check(
        exc,
        "SPECVIZ_ENGINE_HOSTS entries are host or host:port, separated by commas "
        "(e.g. localhost:8000,vllm.internal:8000); got 'http://x'",
        "SPECVIZ_ENGINE_HOSTS",
        "'http://x'",
    )
    exc = caught(fetch.parse_host_entry, "a:99999")
    assert str(exc).endswith("got 'a:99999' (ports are 1..65535)")
    assert "1..65535" in exc.text("zh") and "'a:99999'" in exc.text("zh")
    exc = caught(fetch.policy_from_env, {"SPECVIZ_HOSTED": "1", "SPECVIZ_ENGINE_HOSTS": "vllm/x"})
    assert (
        exc.msgid == "{var} entries are host or host:port, separated by commas (e.g. {example}); got {entry!r}"
        and "'vllm/x'" in exc.text("zh")
    )


@pytest.mark.parametrize(
    ("url", "policy", "english", "same"),
    [
        ("", ANY, "endpoint URL is empty; write the server's URL, e.g. http://localhost:8000/metrics", ("端点网址",)),
        (
            "localhost:8000",
            ANY,
            "endpoint URL 'localhost:8000' has no scheme; write it with http:// or https://, e.g. http://localhost:8000",
            ("'localhost:8000'", "http://localhost:8000"),
        ),
        (
            "ftp://x/y",
            ANY,
            "endpoint URL 'ftp://x/y' is refused: only http and https URLs are fetched; got scheme 'ftp'",
            ("'ftp://x/y'", "'ftp'"),
        ),
        ("http://h:0/", ANY, "endpoint URL 'http://h:0/' is refused: port 0 is outside 1..65535", ("端口 0",)),
        (
            "http://u:p@localhost:8000/",
            HOSTED,
            "endpoint URL 'http://localhost:8000/' is refused: hosted mode fetches no URL with a user name or "
            "password (user:pass@host)",
            ("'http://localhost:8000/'",),
        ),
        (
            "http://other:8000/",
            HOSTED,
            "endpoint URL 'http://other:8000/' is refused: host other:8000 is not on the allow-list of engine hosts "
            "(SPECVIZ_ENGINE_HOSTS: localhost:8000, vllm.internal)",
            ("other:8000", "localhost:8000, vllm.internal"),
        ),
        (
            "http://0x7f.1:8000/",
            HOSTED,
            "endpoint URL 'http://0x7f.1:8000/' is refused: the literal IP address 127.0.0.1:8000 is not on the "
            "allow-list of engine hosts (SPECVIZ_ENGINE_HOSTS: localhost:8000, vllm.internal); hosted mode fetches "
            "an IP address only when the list holds it",
            ("127.0.0.1:8000",),
        ),
        (
            "http://127.0.0.1:8000/",
            FetchPolicy(allowed_hosts=("localhost",)),
            "endpoint URL 'http://127.0.0.1:8000/' is refused: the literal IP address 127.0.0.1:8000 is not on the "
            "allow-list of engine hosts (SPECVIZ_ENGINE_HOSTS: localhost)",
            ("127.0.0.1:8000",),
        ),
        (
            "http://vllm.internal/",
            EMPTY,
            "endpoint URL 'http://vllm.internal/' is refused: no engine host may be fetched: the allow-list "
            "SPECVIZ_ENGINE_HOSTS is empty. The operator sets it to the comma-separated host or host:port entries "
            "this server may fetch, e.g. SPECVIZ_ENGINE_HOSTS=localhost:8000,vllm.internal:8000",
            ("SPECVIZ_ENGINE_HOSTS=localhost:8000,vllm.internal:8000",),
        ),
    ],
)
def test_check_url_refusals(url, policy, english, same):
    exc = caught(fetch.check_url, url, policy)
    assert isinstance(exc, FetchError) and exc.status is None
    check(exc, english, *same)


def _client(handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def _raising(exc: Exception) -> httpx.Client:
    def handler(request):
        raise exc

    return _client(handler)


@pytest.mark.parametrize(
    ("exc", "english", "same"),
    [
        (
            httpx.ConnectError("[Errno 111] Connection refused"),
            "cannot fetch http://localhost:8000/m: connection refused: nothing is listening at localhost:8000",
            ("http://localhost:8000/m", "localhost:8000"),
        ),
        (
            httpx.ConnectTimeout("x"),
            "cannot fetch http://localhost:8000/m: no connection to localhost:8000 within 2 s (connect timeout): "
            "is the host up and its port open?",
            ("2 秒",),
        ),
        (
            httpx.ReadTimeout("x"),
            "cannot fetch http://localhost:8000/m: localhost:8000 accepted the connection but sent nothing for 5 s "
            "(read timeout)",
            ("5 秒",),
        ),
        (
            httpx.ConnectError("[SSL: WRONG_VERSION_NUMBER] wrong version number"),
            "cannot fetch http://localhost:8000/m: TLS error talking to localhost:8000: [SSL: WRONG_VERSION_NUMBER] "
            "wrong version number (does the server speak plain http? then write http://)",
            ("[SSL: WRONG_VERSION_NUMBER]", "http://"),
        ),
        (
            httpx.RemoteProtocolError("Server disconnected"),
            "cannot fetch http://localhost:8000/m: localhost:8000 broke off the HTTP exchange (Server disconnected): "
            "is it an HTTP server?",
            ("Server disconnected",),
        ),
        (
            httpx.UnsupportedProtocol("nope"),
            "cannot fetch http://localhost:8000/m: UnsupportedProtocol: nope",
            ("UnsupportedProtocol: nope",),
        ),
    ],
)
def test_transport_failures(exc, english, same):
    err = caught(fetch.fetch, "http://localhost:8000/m", ANY, client=_raising(exc))
    assert isinstance(err, FetchError) and err.__cause__ is exc
    check(err, english, *same)


def test_answers_refused_and_the_status_kept():
    err = caught(fetch.fetch, "http://localhost:8000/m", ANY, client=_client(lambda r: httpx.Response(404, text="no")))
    assert err.status == 404
    check(err, "cannot fetch http://localhost:8000/m: the server answered HTTP 404 Not Found: no", "HTTP 404 Not Found")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is FetchError and again.status == 404 and str(again) == str(err)
    small = FetchPolicy(max_bytes=10)
    err = caught(
        fetch.fetch, "http://localhost:8000/m", small, client=_client(lambda r: httpx.Response(200, text="x" * 99))
    )
    check(
        err,
        "cannot fetch http://localhost:8000/m: the response is larger than 10 bytes (the limit); is this the right "
        "endpoint?",
        "10 字节",
    )
    loop = _client(lambda r: httpx.Response(302, headers={"location": f"http://localhost:8000/{len(str(r.url))}"}))
    err = caught(fetch.fetch, "http://localhost:8000/m", FetchPolicy(max_redirects=1), client=loop)
    check(
        err,
        "cannot fetch http://localhost:8000/m: more than 1 redirects (the limit); the last went to "
        "http://localhost:8000/24",
        "1 次",
        "http://localhost:8000/24",
    )
    down = _client(
        lambda r: (
            httpx.Response(302, headers={"location": "http://localhost:8000/x"})
            if r.url.scheme == "https"
            else httpx.Response(200)
        )
    )
    err = caught(fetch.fetch, "https://localhost:8000/m", ANY, client=down)
    check(
        err,
        "redirect from 'https://localhost:8000/m' to 'http://localhost:8000/x' is refused: it leaves https for plain http",
        "'https://localhost:8000/m'",
        "'http://localhost:8000/x'",
    )
    away = _client(lambda r: httpx.Response(302, headers={"location": "http://evil:8000/x"}))
    err = caught(fetch.fetch, "http://localhost:8000/m", HOSTED, client=away)
    assert str(err).startswith("redirect from 'http://localhost:8000/m' to 'http://evil:8000/x' is refused: host")
    assert err.text("zh").startswith("从 'http://localhost:8000/m' 重定向到 'http://evil:8000/x' 被拒绝")
    got = fetch.fetch("http://localhost:8000/m", ANY, client=_client(lambda r: httpx.Response(200, text="<html>")))
    check(caught(got.json), "the answer from http://localhost:8000/m is not JSON: '<html>'", "'<html>'")


# ----------------------------------------------------------------------------- specviz.servers.monitor


def test_endpoint_lines():
    check(
        caught(monitor.parse_endpoints, "a b c", ANY),
        "endpoints, line 1: 'a b c' has 3 fields; write 'URL' or 'URL engine'",
        "第 1 行",
        "'a b c'",
        "3 个字段",
    )
    check(
        caught(monitor.parse_endpoints, "\nhttp://x:1 foo", ANY),
        "endpoints, line 2: engine 'foo' is not one of auto, vllm, llamacpp, sglang, trtllm",
        "第 2 行",
        "'foo'",
    )
    exc = caught(monitor.parse_endpoints, "\n\nftp://x", ANY)
    assert not isinstance(exc, FetchError)  # a line of the text box, not a fetch
    check(
        exc,
        "endpoints, line 3: URL 'ftp://x/metrics' is refused: only http and https URLs are fetched; got scheme 'ftp'",
        "第 3 行的网址",
        "'ftp://x/metrics'",
    )
    many = "\n".join(f"http://h{i}:1" for i in range(20))
    check(
        caught(monitor.parse_endpoints, many, ANY),
        "endpoints: more than 16; monitor at most 16 at once",
        "16 个",
    )


def test_a_poll_error_and_the_history_note_read_in_chinese():
    refused = _raising(httpx.ConnectError("Connection refused"))
    p = monitor.poll(monitor.Endpoint("http://localhost:8000/metrics"), ANY, 4, client=refused)
    check(
        p.error,
        "cannot fetch http://localhost:8000/metrics: connection refused: nothing is listening at localhost:8000",
        "localhost:8000",
    )
    html = _client(lambda r: httpx.Response(200, text="<html>"))
    p = monitor.poll(monitor.Endpoint("http://localhost:8000/metrics"), ANY, 4, client=html)
    check(p.error, "the body is HTML, not Prometheus text (# HELP / name{labels} value lines)", "HTML")
    history = monitor.History()
    history.add([monitor.Poll(monitor.Endpoint("http://a/metrics"), None, None, 0.1)])
    check(history.errors["http://a/metrics"], "no reading")


def test_design_point_without_alpha(monkeypatch):
    w = telemetry.window(None, Telemetry("vllm", drafts=10, draft_tokens=40, accepted_tokens=20, cumulative=False))
    frame = pd.DataFrame({"alpha_used": [float("nan")]})
    monkeypatch.setattr(monitor, "load_records", lambda records, name: (frame, None))
    check(
        caught(monitor.design_point, w, 4, 2.0, label="vLLM m"),
        "vLLM m: no α from this window (E[N] 3.0, K = 4)",
        "vLLM m",
        "E[N] 3.0",
        "K = 4",
    )


# ----------------------------------------------------------------------------- specviz.servers.telemetry


def test_restart_notes():
    t1 = Telemetry("vllm", drafts=10, draft_tokens=40, accepted_tokens=20, accepted_per_position=(8, 5), end=1)
    t2 = Telemetry("vllm", drafts=3, draft_tokens=12, accepted_tokens=30, accepted_per_position=(2,), end=2)
    t3 = Telemetry("vllm", drafts=12, draft_tokens=48, accepted_tokens=25, accepted_per_position=(9, 4), end=3)
    check(
        telemetry.window(t1, t2).reset,
        "counters went down (drafts 10 → 3; draft_tokens 40 → 12; per-position series 2 → 1): the server restarted; "
        "the window counts from the restart",
        "drafts 10 → 3；draft_tokens 40 → 12；",
        "2 → 1",
    )
    check(
        telemetry.window(t1, t3).reset,
        "counters went down (accepted per position): the server restarted; the window counts from the restart",
    )
    check(
        telemetry.window_over([t1, t2, t3, t1]).reset,
        "the server restarted 3 times while monitored; counts before and after are added up",
        "3 次",
    )
    record = telemetry.to_record(telemetry.window(t1, t2), k=3)
    assert record["notes"].endswith(
        "; counters went down (drafts 10 → 3; draft_tokens 40 → 12; per-position "
        "series 2 → 1): the server restarted; the window counts from the restart"
    )


def test_to_record_errors():
    check(
        caught(telemetry.to_record, telemetry.window(None, Telemetry("sglang"))),
        "SGLang window: K is not known; give the K the engine runs with",
        "SGLang",
    )
    check(
        caught(telemetry.to_record, telemetry.window(None, Telemetry("vllm")), k=3),
        "vLLM window: no drafts in it (speculation off, or no traffic yet)",
        "vLLM",
    )


# ----------------------------------------------------------------------------- specviz.servers.loadgen


@pytest.mark.parametrize(
    ("kwargs", "english", "same"),
    [
        ({"prompts": "abc"}, "prompts must be a list of strings; got 'abc'", ("'abc'",)),
        ({"base_url": " "}, "base_url must be the server's URL, e.g. http://localhost:8000; got ' '", ("' '",)),
        ({"prompts": []}, "prompts must hold at least one prompt; got none", ()),
        ({"prompts": ["a", " "]}, "prompts[1] must be a non-empty string; got ' '", ("prompts[1]",)),
        ({"model": 3}, "model must be a model name or None; got 3", ("3",)),
        ({"concurrency": 0}, "concurrency must be an integer in 1..64; got 0", ("1..64", "0")),
        ({"max_seconds": 0.5}, "max_seconds must be a number of seconds in 1..3600; got 0.5", ("1..3600", "0.5")),
        ({"temperature": 3}, "temperature must be a number in 0..2; got 3", ("0..2", "3")),
    ],
)
def test_load_spec_errors(kwargs, english, same):
    args = {"base_url": "http://x", "prompts": ["a"]} | kwargs
    check(caught(loadgen.LoadSpec, **args), english, *same)


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


def test_load_summaries_and_the_speedup():
    spec = loadgen.LoadSpec("http://x", ["a"])
    none = loadgen.summarize(spec, [], 0.0, "stop")
    check(none.summary(), "no request was sent (stopped by Stop)", "停止原因：停止")
    check(
        loadgen.summarize(spec, [_row(0, True), _row(1, False, "e")], 1.7, "time").summary(),
        "2 requests (1 failed) in 1.7 s: 5 completion tokens, 2.9 tokens/s, latency p50 0.50 s, p95 0.50 s; "
        "stopped by the time limit",
        "2 个请求（1 个失败）",
        "1.7 秒",
        "2.9 tokens/s",
        "p50 0.50",
    )
    check(
        loadgen.summarize(spec, [_row(0, True)], 2.0, "requests").summary(),
        "1 requests in 2.0 s: 5 completion tokens, 2.5 tokens/s, latency p50 0.50 s, p95 0.50 s; "
        "stopped by the request limit",
        "2.0 秒",
    )
    check(
        caught(loadgen.measured_speedup, none, loadgen.summarize(spec, [_row(0, True)], 1.0, "time")),
        "the run with speculative decoding has no completion tokens (no request was sent (stopped by Stop)); "
        "the speedup (tokens/s with ÷ tokens/s without) needs tokens in both runs",
        "没有发送任何请求",
    )
    failed = loadgen.summarize(spec, [_row(0, False, "x")], 1.0, "time")
    check(
        caught(loadgen.measured_speedup, loadgen.summarize(spec, [_row(0, True)], 1.0, "time"), failed),
        "the run without speculative decoding has no completion tokens (all 1 requests failed; first error: x); "
        "the speedup (tokens/s with ÷ tokens/s without) needs tokens in both runs",
        "第一个错误：x",
    )


def test_completion_errors_and_a_failed_run_reads_in_chinese():
    check(caught(loadgen.completion_counts, [1]), "the answer is not a completions response: [1]", "[1]")
    check(
        caught(loadgen.completion_counts, {"error": "overloaded"}),
        "the server answered an error: overloaded",
        "overloaded",
    )
    spec = loadgen.LoadSpec("http://localhost:8000", ["a"], max_requests=2, concurrency=1)
    busy = _client(lambda r: httpx.Response(503, text="busy"))
    result = loadgen.run_load(spec, ANY, client=busy)
    english = (
        "cannot fetch http://localhost:8000/v1/completions: the server answered HTTP 503 Service Unavailable: busy"
    )
    assert result.errors == ((english, 2),)
    check(result.errors[0][0], english, "HTTP 503")
    summary = result.summary()
    check(summary, f"all 2 requests failed; first error: {english}", "无法抓取 http://localhost:8000/v1/completions")
    assert list(result.records["error"]) == [english, english]  # the table keeps plain text


# ----------------------------------------------------------------------------- specviz.engine.models


def test_devices_and_pairs(tmp_path):
    check(
        caught(models.resolve_device, "tpu"),
        "device must be 'auto', 'cpu' or 'cuda[:N]'; got 'tpu'",
        "'tpu'",
    )
    if not torch.cuda.is_available():
        check(
            caught(models.resolve_device, "cuda:1"),
            "device 'cuda:1' was requested but no CUDA GPU is available; use 'cpu' or 'auto'",
            "'cuda:1'",
        )
    check(
        caught(models.load_pair, str(tmp_path)),
        f"pair {str(tmp_path)!r}: no target/model.safetensors under {tmp_path}",
        str(tmp_path),
        "target/model.safetensors",
    )
    check(
        caught(hf.export_pair, str(tmp_path), tmp_path / "out"),
        f"pair {str(tmp_path)!r}: no target/model.safetensors under {tmp_path}",
        str(tmp_path),
    )


def test_our_gpt_config_weights_and_positions(tmp_path):
    check(
        caught(gpt.GPTConfig, n_embd=10, n_head=3),
        "n_embd must be divisible by n_head; got 10 and 3",
        "10",
        "3",
    )
    (tmp_path / "config.json").write_text('{"n_embd": 10, "n_head": 3}')
    exc = caught(gpt.GPT.load, tmp_path)
    check(
        exc,
        f"{tmp_path}/config.json is missing or not a valid model config: n_embd must be divisible by n_head; "
        "got 10 and 3",
        "n_embd 必须能被 n_head 整除",  # the cause in Chinese too
    )
    (tmp_path / "config.json").write_text('{"n_embd": 8, "n_head": 2, "n_layer": 1, "block_size": 8}')
    exc = caught(gpt.GPT.load, tmp_path)
    assert str(exc).startswith(f"{tmp_path}/model.safetensors is missing or corrupt: ")
    assert "不存在或已损坏" in exc.text("zh")
    model = gpt.GPT(gpt.GPTConfig(n_embd=8, n_head=2, n_layer=1, block_size=8))
    check(
        caught(model, torch.zeros(1, 9, dtype=torch.long)),
        "sequence length must be <= block_size 8; got 9",
        "block_size 8",
        "9",
    )
    model.setup_cache(1, 8)
    check(
        caught(model, torch.zeros(1, 4, dtype=torch.long), start=6),
        "sequence would reach position 9; the cache holds 8",
        "9",
        "8",
    )


class _Loader:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def from_pretrained(self, *args, **kwargs):
        raise self.exc


def test_hugging_face_loading(monkeypatch, tmp_path):
    tokenizer, model = Phrase("tokenizer"), Phrase("model")
    check(
        caught(hf._from_pretrained, _Loader(OSError("x")), "./folder", model, False),
        "model './folder': local folders are not allowed here; give a Hugging Face hub id",
        "模型 './folder'",
    )
    check(
        caught(hf._from_pretrained, _Loader(OSError("x")), str(tmp_path / "no"), tokenizer, True),
        f"tokenizer {str(tmp_path / 'no')!r}: no such folder",
        "分词器",
    )
    check(
        caught(hf._from_pretrained, _Loader(OSError("bad config")), str(tmp_path), model, True),
        f"model {str(tmp_path)!r}: cannot load from the local folder: bad config",
        "bad config",
    )
    monkeypatch.setattr(hf, "_hub_offline", lambda: True)
    check(
        caught(hf._from_pretrained, _Loader(OSError("miss")), "org/gpt2", tokenizer, True),
        "tokenizer 'org/gpt2': not in the local Hugging Face cache (and there is no local folder of that name) and "
        "HF_HUB_OFFLINE is set (miss)",
        "'org/gpt2'",
        "HF_HUB_OFFLINE",
    )
    monkeypatch.setattr(hf, "_hub_offline", lambda: False)
    monkeypatch.setattr(hf, "_hub_reachable", lambda timeout=3.0: False)
    check(
        caught(hf._from_pretrained, _Loader(OSError("miss")), "gpt2", model, True),
        "model 'gpt2': not in the local Hugging Face cache and the Hugging Face Hub cannot be reached (no network?)",
        "'gpt2'",
    )
    monkeypatch.setattr(hf, "_hub_reachable", lambda timeout=3.0: True)
    check(
        caught(hf._from_pretrained, _Loader(OSError("404")), "gpt2", model, True),
        "model 'gpt2': cannot load from the Hugging Face Hub: 404",
        "404",
    )


def test_hugging_face_pairs(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    check(
        caught(hf.require_transformers),
        "loading a Hugging Face model pair: the Hugging Face adapter needs the optional package transformers: "
        f"pip install transformers=={hf.TRANSFORMERS_PIN}",
        f"pip install transformers=={hf.TRANSFORMERS_PIN}",
    )
    monkeypatch.setattr(hf, "require_transformers", lambda: None)
    check(
        caught(hf.load_hf_pair, " ", "x"),
        "a Hugging Face pair is 'TARGET,DRAFT'; got '', 'x'",
        "'TARGET,DRAFT'",
        "'x'",
    )
    check(caught(hf.load_hf_target, " "), "a Hugging Face target id is empty", "Hugging Face")

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
    check(
        caught(hf.load_hf_pair, "t", "d"),
        "target 't' and draft 'd' use different tokenizers (2 vs 2 tokens; e.g. [('b', 1), ('c', 1)]); "
        "speculative decoding needs a shared vocabulary",
        "'t'",
        "'d'",
        "[('b', 1), ('c', 1)]",
    )
    monkeypatch.setattr(hf, "_load_model", lambda spec, device, dtype, allow_local: Model())
    check(
        caught(hf.load_hf_pair, "t", "t"),
        "model 't' has 1 output logits but its tokenizer has 2 tokens",
        "'t'",
        "1 个 logits",
        "2 个 token",
    )
    check(
        caught(hf.load_hf_target, "s"),
        "model 's' has 1 output logits but its tokenizer has 3",
        "'s'",
        "3 个",
    )


def test_stateful_models_and_context_lengths(monkeypatch):
    class Stateful:
        _is_stateful = True

    monkeypatch.setattr(hf, "require_transformers", lambda: type("T", (), {"AutoModelForCausalLM": None}))
    monkeypatch.setattr(hf, "_from_pretrained", lambda *args, **kwargs: Stateful())
    check(
        caught(hf._load_model, "rnn", "cpu", None, True),
        "model 'rnn': Stateful is stateful (recurrent); its cache cannot be rewound to an earlier position, "
        "which speculative decoding needs",
        "'rnn'",
        "Stateful",
    )

    class Config:
        pass

    check(
        caught(hf._context_length, Config()),
        "Config: cannot find the context length (none of max_position_embeddings, n_positions, "
        "max_sequence_length, seq_length, n_ctx)",
        "max_position_embeddings",
    )

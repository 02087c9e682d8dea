"""specviz.servers.fetch: the allow-list and URL rules, and fetching against real local servers."""

import socket
import ssl
from dataclasses import replace

import httpx
import pytest
from _http import closed_port, redirect, send_bytes, serve, sleep_then, stream

from specviz.servers.fetch import (
    Fetched,
    FetchError,
    FetchPolicy,
    check_url,
    fetch,
    parse_host_entry,
    policy_from_env,
)

HOSTED = {"SPECVIZ_HOSTED": "1"}
OPEN = FetchPolicy()
FAST = dict(connect_timeout_s=0.5, read_timeout_s=0.2)


def hosted(hosts: str, **kw) -> FetchPolicy:
    return replace(policy_from_env({**HOSTED, "SPECVIZ_ENGINE_HOSTS": hosts}), **kw)


def hello(h):
    send_bytes(h, "hello")


# --- the rules -------------------------------------------------------------------------------------


def test_policy_from_env_hosted_reads_the_allow_list_and_outside_any_host():
    policy = policy_from_env({**HOSTED, "SPECVIZ_ENGINE_HOSTS": " VLLM.internal:8000 , localhost,[::1]:9000"})
    assert policy.hosted and policy.allowed_hosts == ("vllm.internal:8000", "localhost", "[::1]:9000")
    free = policy_from_env({"SPECVIZ_ENGINE_HOSTS": "only.this"})  # ignored outside hosted mode
    assert not free.hosted and free.allowed_hosts is None
    assert check_url("http://anything.example:1234/metrics", free) == "http://anything.example:1234/metrics"
    assert check_url("https://10.1.2.3/metrics", free) == "https://10.1.2.3/metrics"


@pytest.mark.parametrize("bad", ["http://vllm:8000", "vllm/metrics", "user@vllm", "vllm:http", "vllm:70000"])
def test_malformed_allow_list_entry_names_the_variable(bad):
    with pytest.raises(ValueError, match=r"SPECVIZ_ENGINE_HOSTS entries are host or host:port"):
        policy_from_env({**HOSTED, "SPECVIZ_ENGINE_HOSTS": f"ok.example,{bad}"})


def test_hosted_policy_needs_an_allow_list():
    with pytest.raises(ValueError, match="hosted mode needs an allow-list"):
        FetchPolicy(hosted=True)


def test_empty_allow_list_refuses_everything_and_says_how_to_set_it():
    policy = policy_from_env(HOSTED)
    assert policy.allowed_hosts == ()
    with pytest.raises(FetchError) as err:
        check_url("http://localhost:8000/metrics", policy)
    msg = str(err.value)
    assert msg.startswith("endpoint URL 'http://localhost:8000/metrics' is refused")
    assert "SPECVIZ_ENGINE_HOSTS is empty" in msg and "SPECVIZ_ENGINE_HOSTS=" in msg


def test_disallowed_host_is_refused_naming_host_and_list():
    policy = hosted("vllm.internal:8000,localhost")
    with pytest.raises(FetchError) as err:
        check_url("http://evil.example/metrics", policy)
    msg = str(err.value)
    assert "endpoint URL 'http://evil.example/metrics' is refused" in msg
    assert "host evil.example:80 is not on the allow-list" in msg and "vllm.internal:8000, localhost" in msg
    with pytest.raises(FetchError, match="host vllm.internal:9000 is not on the allow-list"):
        check_url("http://vllm.internal:9000/metrics", policy)  # the entry fixes the port


def test_allowed_hosts_pass_case_insensitively_and_idna_normalised():
    policy = hosted("VLLM.Internal:8000,localhost,bücher.example")
    assert check_url(" http://vllm.INTERNAL:8000/metrics#x ", policy) == "http://vllm.internal:8000/metrics"
    assert check_url("https://localhost:1234/", policy) == "https://localhost:1234/"  # no port in the entry: any port
    assert check_url("http://BÜCHER.example/m", policy) == "http://xn--bcher-kva.example/m"
    assert check_url("http://xn--bcher-kva.example./m", policy).startswith("http://xn--bcher-kva.example")


def test_literal_ips_are_refused_in_hosted_mode_unless_listed_in_any_spelling():
    policy = hosted("127.0.0.1:8000")
    for url in ("http://10.0.0.1:8000/", "http://169.254.169.254/latest/meta-data/", "http://[::1]:8000/"):
        with pytest.raises(FetchError, match=r"literal IP address .* not on the allow-list"):
            check_url(url, policy)
    # other spellings of 127.0.0.1 (what getaddrinfo would read) are the listed address, in canonical form
    for url in (
        "http://127.1:8000/m",
        "http://2130706433:8000/m",
        "http://0x7f.0.0.1:8000/m",
        "http://[::ffff:127.0.0.1]:8000/m",
    ):
        assert check_url(url, policy) == "http://127.0.0.1:8000/m"
    with pytest.raises(FetchError, match="literal IP address 127.0.0.1:8001"):
        check_url("http://2130706433:8001/", policy)


def test_userinfo_refused_in_hosted_mode_without_quoting_the_password():
    with pytest.raises(FetchError) as err:
        check_url("http://admin:s3cret@localhost:8000/metrics", hosted("localhost"))
    assert "user name or password" in str(err.value) and "s3cret" not in str(err.value)
    assert check_url("http://admin:pw@localhost:8000/", OPEN) == "http://admin:pw@localhost:8000/"


@pytest.mark.parametrize(
    "url, why",
    [
        ("ftp://localhost/metrics", r"only http and https URLs are fetched; got scheme 'ftp'"),
        ("file:///etc/passwd", r"only http and https URLs are fetched; got scheme 'file'"),
        ("gopher://localhost:70/", r"got scheme 'gopher'"),
        ("localhost:8000/metrics", r"has no scheme; write it with http:// or https://, e.g. http://localhost:8000"),
        ("http:///metrics", r"names no host"),
        ("", r"endpoint URL is empty"),
        ("http://local host/", r"not a valid host name"),
        ("http://localhost:0/", r"port 0 is outside 1..65535"),
        ("http://localhost:x/", r"is not a valid URL"),
    ],
)
def test_bad_urls_are_refused_naming_the_field(url, why):
    for policy in (OPEN, hosted("localhost")):
        with pytest.raises(FetchError, match=r"^endpoint URL") as err:
            check_url(url, policy)
        assert err.match(why)


# --- fetching from local servers -------------------------------------------------------------------


def test_allowed_host_is_fetched():
    with serve({("GET", "/metrics"): hello}) as base:
        port = base.rsplit(":", 1)[1]
        got = fetch(f"{base}/metrics", hosted(f"127.0.0.1:{port}"))
    assert (got.status, got.reason, got.text, got.url) == (200, "OK", "hello", f"{base}/metrics")
    assert got.headers["content-type"].startswith("text/plain") and got.elapsed_s > 0


def test_redirect_to_a_disallowed_host_is_refused_naming_it():
    routes = {("GET", "/metrics"): redirect("http://evil.example/"), ("GET", "/hop"): redirect("/metrics")}
    with serve(routes) as base, pytest.raises(FetchError) as err:
        fetch(f"{base}/hop", hosted("127.0.0.1"))
    msg = str(err.value)
    assert f"redirect from '{base}/metrics' to 'http://evil.example/' is refused" in msg
    assert "host evil.example:80 is not on the allow-list" in msg


def test_redirects_to_allowed_hosts_are_followed_up_to_the_limit():
    routes = {
        ("GET", "/a"): redirect("/b", 301),
        ("GET", "/b"): redirect("/c", 307),
        ("GET", "/c"): hello,
        ("GET", "/loop"): redirect("/loop"),
    }
    with serve(routes) as base:
        got = fetch(f"{base}/a", hosted("127.0.0.1", max_redirects=2))
        assert (got.text, got.url) == ("hello", f"{base}/c")
        with pytest.raises(FetchError, match=r"more than 1 redirects \(the limit\)"):
            fetch(f"{base}/a", hosted("127.0.0.1", max_redirects=1))
        with pytest.raises(FetchError, match=r"more than 3 redirects"):
            fetch(f"{base}/loop", OPEN)


def test_redirect_from_https_to_http_is_refused():
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "https":
            return httpx.Response(302, headers={"Location": "http://engine.example/metrics"})
        return httpx.Response(200, text="plain")  # pragma: no cover - never reached

    with (
        httpx.Client(transport=httpx.MockTransport(handler)) as client,
        pytest.raises(
            FetchError, match=r"to 'http://engine.example/metrics' is refused: it leaves https for plain http"
        ),
    ):
        fetch("https://engine.example/metrics", OPEN, client=client)


def test_oversized_body_is_refused_streamed_or_declared():
    big = 400_000
    routes = {("GET", "/stream"): stream(big), ("GET", "/declared"): lambda h: send_bytes(h, b"y" * big)}
    with serve(routes) as base:
        for path in ("/stream", "/declared"):
            with pytest.raises(FetchError, match=r"response is larger than 100000 bytes"):
                fetch(base + path, FetchPolicy(max_bytes=100_000))
        assert len(fetch(base + "/stream", FetchPolicy(max_bytes=big)).body) == big


def test_connection_refused_says_nothing_is_listening():
    port = closed_port()
    with pytest.raises(FetchError) as err:
        fetch(f"http://127.0.0.1:{port}/metrics", FetchPolicy(**FAST))
    assert f"nothing is listening at 127.0.0.1:{port}" in str(err.value)
    assert "Traceback" not in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_read_timeout_names_the_seconds():
    with serve({("GET", "/slow"): sleep_then(0.6, hello)}) as base, pytest.raises(FetchError) as err:
        fetch(f"{base}/slow", FetchPolicy(**FAST))
    port = base.rsplit(":", 1)[1]
    assert f"127.0.0.1:{port} accepted the connection but sent nothing for 0.2 s (read timeout)" in str(err.value)


def test_http_error_status_names_status_reason_and_body():
    with serve({}) as base, pytest.raises(FetchError) as err:  # every path: 404 with a JSON error
        fetch(f"{base}/v1/completions", OPEN, method="POST", json={"prompt": "x"})
    assert err.value.status == 404
    assert "answered HTTP 404 Not Found" in str(err.value) and "no route POST /v1/completions" in str(err.value)


def _raising(exc: Exception) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    return httpx.Client(transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    "exc, expected",
    [
        (httpx.ConnectTimeout("timed out"), r"no connection to engine.example:8000 within 0.5 s \(connect timeout\)"),
        (httpx.ConnectError("[Errno -2] Name or service not known"), r"host name 'engine.example' does not resolve"),
        (httpx.RemoteProtocolError("Server disconnected"), r"broke off the HTTP exchange"),
    ],
)
def test_transport_errors_become_messages(exc, expected):
    with (
        _raising(exc) as client,
        pytest.raises(FetchError, match=r"^cannot fetch http://engine.example:8000/metrics: ") as err,
    ):
        fetch("http://engine.example:8000/metrics", FetchPolicy(**FAST), client=client)
    assert err.match(expected)


def test_dns_and_tls_failures_read_from_the_os_error_underneath():
    dns = httpx.ConnectError("boom")
    dns.__cause__ = socket.gaierror(-2, "Name or service not known")
    with _raising(dns) as client, pytest.raises(FetchError, match=r"DNS lookup failed: Name or service not known"):
        fetch("http://engine.example/metrics", OPEN, client=client)
    tls = httpx.ConnectError("boom")
    tls.__cause__ = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    with _raising(tls) as client, pytest.raises(FetchError, match=r"TLS error talking to engine.example:443"):
        fetch("https://engine.example/metrics", OPEN, client=client)


def test_injected_client_sends_the_json_body():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.content))
        return httpx.Response(200, json={"ok": True})

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        got = fetch("http://engine.example/v1/completions", OPEN, method="POST", json={"a": 1}, client=client)
    assert got.json() == {"ok": True} and seen == [("POST", b'{"a":1}')]
    with pytest.raises(FetchError, match="is not JSON"):
        Fetched(200, "OK", {}, b"<html>", "http://x/", 0.1).json()


def test_parse_host_entry_forms():
    assert parse_host_entry("Host.Example:80") == ("host.example", 80)  # an explicit default port is kept
    assert parse_host_entry("[::1]") == ("::1", None)
    assert parse_host_entry("127.1:8000") == ("127.0.0.1", 8000)

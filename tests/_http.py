"""Local HTTP servers for tests: a route table served on 127.0.0.1, and a fake OpenAI-compatible engine.

``serve(routes)`` runs a :class:`http.server.ThreadingHTTPServer` on a free port in a background thread
and yields its base URL (``http://127.0.0.1:PORT``); each route is a function of the request handler
(``send_json``, ``send_bytes`` write the answer). :class:`FakeEngine` answers ``POST /v1/completions``
like vLLM (``usage``) or llama.cpp (``timings``) and records the largest number of requests it held at
once. Reusable for a fake ``/metrics`` server: ``serve({("GET", "/metrics"): lambda h: send_bytes(h, text)})``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Route = Callable[[BaseHTTPRequestHandler], None]


class _Server(ThreadingHTTPServer):
    """A threading server that queues many connections and keeps quiet about clients that hang up."""

    request_queue_size = 128
    daemon_threads = True  # a handler still sleeping when the test ends does not hold it up

    def handle_error(self, request, client_address):
        pass  # a client that stops reading (size cap, timeout) breaks the pipe: expected here


def _handler(routes: Mapping[tuple[str, str], Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _route(self) -> None:
            route = routes.get((self.command, self.path.split("?")[0]))
            if route is None:
                send_json(self, {"error": f"no route {self.command} {self.path}"}, status=404)
            else:
                route(self)

        do_GET = do_POST = _route

        def log_message(self, format, *args):
            pass

    return Handler


@contextmanager
def serve(routes: Mapping[tuple[str, str], Route]) -> Iterator[str]:
    """Serve ``routes`` ({(method, path): function of the handler}) on 127.0.0.1; yields the base URL."""
    server = _Server(("127.0.0.1", 0), _handler(routes))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def read_json(handler: BaseHTTPRequestHandler) -> object:
    """The JSON body of the request ``handler`` serves (None without one)."""
    size = int(handler.headers.get("Content-Length") or 0)
    return json.loads(handler.rfile.read(size)) if size else None


def send_bytes(
    handler: BaseHTTPRequestHandler,
    body: bytes | str,
    *,
    status: int = 200,
    content_type: str = "text/plain; charset=utf-8",
    headers: Mapping[str, str] | None = None,
) -> None:
    """Answer with ``body`` and its Content-Length."""
    data = body.encode() if isinstance(body, str) else body
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def send_json(handler: BaseHTTPRequestHandler, obj: object, *, status: int = 200) -> None:
    """Answer with ``obj`` as JSON."""
    send_bytes(handler, json.dumps(obj), status=status, content_type="application/json")


def redirect(location: str, status: int = 302) -> Route:
    """A route answering ``status`` with ``Location: location``."""
    return lambda h: send_bytes(h, b"", status=status, headers={"Location": location})


def stream(total_bytes: int, chunk: int = 65536) -> Route:
    """A route streaming ``total_bytes`` without a Content-Length (the body ends when the connection closes)."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.end_headers()
        sent = 0
        while sent < total_bytes:
            h.wfile.write(b"x" * min(chunk, total_bytes - sent))
            sent += chunk

    return route


def sleep_then(seconds: float, route: Route) -> Route:
    """``route``, answered ``seconds`` after the request arrived."""

    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        route(h)

    return slow


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeEngine:
    """An OpenAI-compatible ``POST /v1/completions`` that sleeps ``delay_s`` and answers ``tokens`` tokens.

    ``style``: "vllm" answers ``usage.completion_tokens``; "llama" answers llama.cpp's ``timings``
    (``predicted_n``, ``draft_n``, ``draft_n_accepted``) and no ``usage``. A prompt containing ``FAIL``
    gets HTTP 500. ``max_in_flight`` is the most requests the server held at once; ``bodies`` the
    request bodies received.
    """

    def __init__(self, *, delay_s: float = 0.0, tokens: int = 5, style: str = "vllm", draft: tuple[int, int] = (8, 6)):
        self.delay_s, self.tokens, self.style, self.draft = delay_s, tokens, style, draft
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict] = []

    def completions(self, h: BaseHTTPRequestHandler) -> None:
        body = read_json(h)
        with self.lock:
            self.bodies.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay_s)
        finally:
            with self.lock:
                self.in_flight -= 1
        if "FAIL" in body.get("prompt", ""):
            send_json(h, {"error": {"message": "engine exploded", "type": "server_error"}}, status=500)
            return
        answer = {
            "id": "cmpl-1",
            "object": "text_completion",
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "text": "x" * self.tokens, "finish_reason": "length"}],
        }
        if self.style == "llama":
            n, accepted = self.draft
            answer["timings"] = {"predicted_n": self.tokens, "draft_n": n, "draft_n_accepted": accepted}
        else:
            answer["usage"] = {"prompt_tokens": 3, "completion_tokens": self.tokens, "total_tokens": 3 + self.tokens}
        send_json(h, answer)

    @contextmanager
    def running(self) -> Iterator[str]:
        """Serve this engine; yields its base URL."""
        with serve({("POST", "/v1/completions"): self.completions}) as url:
            yield url


def vllm_metrics(
    scrape: int,
    *,
    engines: tuple[str, ...] = ("0",),
    model: str = "fake/llama",
    drafts: int = 100,
    accepted: int = 180,
    generated: int = 400,
    per_position: tuple[int, ...] = (80, 60, 40),
) -> str:
    """A vLLM V1 /metrics body whose counters stand at ``scrape`` intervals, for each engine.

    Every interval adds ``drafts`` drafts of K = len(per_position) tokens, ``accepted`` accepted
    tokens (``per_position[i]`` of the drafts accepting at least i + 1), and ``generated`` tokens.
    """
    k = len(per_position)
    lines = ["# TYPE vllm:spec_decode_num_drafts_total counter"]
    for engine in engines:
        labels = f'engine="{engine}",model_name="{model}"'
        lines += [
            f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts * scrape}",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {drafts * k * scrape}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted * scrape}",
            f"vllm:generation_tokens_total{{{labels}}} {generated * scrape}",
        ]
        lines += [
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {a * scrape}'
            for i, a in enumerate(per_position)
        ]
    return "\n".join(lines) + "\n"


# --- hostile servers (tests/servers/test_hostile_servers.py) ------------------------------------------------


def trickle(body: bytes, every_s: float, *, headers_too: bool = False) -> Route:
    """A route sending ``body`` one byte every ``every_s`` seconds, without a Content-Length.

    ``headers_too``: the status line comes at once, then header lines, one every ``every_s`` seconds,
    without end (the answer's headers never finish). Either way no read waits longer than ``every_s``,
    so a read timeout above it never fires. Stops when the client hangs up.
    """

    def route(h: BaseHTTPRequestHandler) -> None:
        try:
            if headers_too:
                h.wfile.write(b"HTTP/1.1 200 OK\r\n")
                while True:
                    h.wfile.flush()
                    time.sleep(every_s)
                    h.wfile.write(b"X-Trickle: 1\r\n")
            h.send_response(200)
            h.send_header("Content-Type", "text/plain")
            h.end_headers()
            for i in range(len(body)):
                h.wfile.write(body[i : i + 1])
                h.wfile.flush()
                time.sleep(every_s)
        except OSError:
            pass  # the client hung up (its deadline): what the test wants

    return route


def endless(chunk: bytes = b"x" * 65536) -> Route:
    """A route streaming ``chunk`` again and again, as fast as the client reads, until it hangs up."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.end_headers()
        try:
            while True:
                h.wfile.write(chunk)
        except OSError:
            pass

    return route


def truncated(body: bytes, declared: int) -> Route:
    """A route that declares ``Content-Length: declared``, sends ``body`` (shorter) and closes the connection."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(declared))
        h.end_headers()
        h.wfile.write(body)
        h.wfile.flush()
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)

    return route


def gzip_bomb(mib: int) -> bytes:
    """A gzip stream of about ``mib`` KiB that inflates to ``mib`` MiB of zero bytes.

    Built without compressing them all: one full-flushed deflate segment of 1 MiB of zeros, repeated
    (a full flush makes each segment stand alone). The CRC trailer is that of the first 2 MiB only: a
    reader that checks it has already inflated everything, which a size cap must not let it do.
    """
    if mib < 2:
        raise ValueError(f"a bomb of at least 2 MiB; got {mib}")
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(2**20)
    head = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    segment = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    return head + segment * (mib - 1) + c.flush()

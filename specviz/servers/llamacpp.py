"""A local llama.cpp server on our exported pair: find the binary, start it on loopback, stop it.

The binary is built once per machine by ``scripts/build-llama-server`` (llama.cpp b11434) and
found through ``$SPECVIZ_LLAMA_SERVER``, then that script's cache folder. The tests, the
benchmark and anyone reproducing them start servers through :func:`serve`, which passes the
flags that fix the draft length: ``--spec-draft-n-max K --spec-draft-n-min K
--spec-draft-p-min 0`` with ``--spec-type draft-simple`` (without it llama.cpp drafts nothing).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from specviz.base import settings
from specviz.base.paths import ROOT
from specviz.core import configs

REPO = ROOT
BUILD_SCRIPT = REPO / "scripts" / "build-llama-server"
ENV_BINARY = "SPECVIZ_LLAMA_SERVER"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "specviz" / "llama-server-b11434"


@functools.cache
def client() -> httpx.Client:
    """One HTTP client, kept open (``httpx.post`` builds one per call), without proxies: the servers are on loopback."""
    return httpx.Client(trust_env=False)


def find_binary(build: bool = False, environ=None) -> Path | None:
    """The llama-server binary: ``$SPECVIZ_LLAMA_SERVER``, the build cache, ``llama-server`` on PATH;
    with ``build=True`` and none found, run ``scripts/build-llama-server`` (minutes) and use its output."""
    environ = os.environ if environ is None else environ
    cache = settings.value("SPECVIZ_LLAMA_CACHE", environ)
    candidates = [settings.value(ENV_BINARY, environ), cache and str(Path(cache) / "llama-server")]
    candidates += [str(CACHE / "llama-server"), shutil.which("llama-server")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c)
    if build:
        done = subprocess.run([str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines and Path(lines[-1]).is_file():
            return Path(lines[-1])
    return None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Server:
    """A running llama-server."""

    url: str  #: http://127.0.0.1:PORT
    process: subprocess.Popen
    log: Path  #: its stdout and stderr
    args: tuple[str, ...]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.is_file() else ""


def server_args(
    target: Path,
    draft: Path | None,
    k: int,
    *,
    port: int,
    threads: int = 1,
    ctx: int = 512,
    spec_type: str = "draft-simple",
    slots: int = 1,
    extra: Sequence[str] = (),
) -> list[str]:
    """The command line of a server with a fixed draft length K (no draft: target only); ``slots``
    sequences decode together, each with a context of ``ctx``."""
    args = ["-m", str(target), "--host", "127.0.0.1", "--port", str(port), "-c", str(ctx * slots), "-np", str(slots)]
    args += ["-t", str(threads), "-tb", str(threads), "--metrics", "--no-webui", "--seed", "0"]
    return args + configs.llamacpp.server_spec_args(draft, k, spec_type) + list(extra)


@contextlib.contextmanager
def serve(
    binary: Path,
    target: Path,
    draft: Path | None = None,
    k: int = 4,
    *,
    log_dir: Path,
    threads: int = 1,
    spec_type: str = "draft-simple",
    slots: int = 1,
    extra: Sequence[str] = (),
    timeout_s: float = 60.0,
) -> Iterator[Server]:
    """Start llama-server on a free loopback port, wait for ``/health``, yield it, stop it.

    Raises RuntimeError with the server's last log lines if it exits or is not healthy within
    ``timeout_s``.
    """
    port = free_port()
    args = server_args(target, draft, k, port=port, threads=threads, spec_type=spec_type, slots=slots, extra=extra)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"llama-server-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(binary), *args], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = Server(f"http://127.0.0.1:{port}", proc, log, tuple(args))
    try:
        _wait_healthy(server, timeout_s)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _wait_healthy(server: Server, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = "\n".join(server.log_text().splitlines()[-15:])
            raise RuntimeError(f"llama-server exited with {server.process.returncode}:\n{tail}")
        try:
            if client().get(server.url + "/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    tail = "\n".join(server.log_text().splitlines()[-15:])
    raise RuntimeError(f"llama-server not healthy after {timeout_s:.0f} s:\n{tail}")


#: the sampling fields of a greedy request: every request here decodes greedily and reproducibly
GREEDY = {"temperature": 0.0, "top_k": 1, "seed": 0}


def complete(url: str, tokens: Sequence[int], n_predict: int, *, timeout_s: float = 120.0) -> dict:
    """Greedy completion of token ids; the response JSON, with the generated ids (``return_tokens``)."""
    body = {**GREEDY, "prompt": list(tokens), "n_predict": n_predict, "return_tokens": True, "cache_prompt": False}
    return complete_raw(url, body, timeout_s=timeout_s)


def forward_ms(url: str, prefix: Sequence[int], extension: Sequence[int], *, timeout_s: float = 120.0) -> float:
    """``timings.prompt_ms`` of one forward over ``extension`` at a context of len(``prefix``), the prefix cached
    by a first request; includes a fixed prompt start-up cost that a difference of two lengths cancels.

    Raises RuntimeError if the server evaluated other than len(extension) tokens (no cache reuse).
    """
    body = {**GREEDY, "n_predict": 1, "cache_prompt": True}
    complete_raw(url, {**body, "prompt": list(prefix)}, timeout_s=timeout_s)
    timings = complete_raw(url, {**body, "prompt": [*prefix, *extension]}, timeout_s=timeout_s)["timings"]
    if timings["prompt_n"] != len(extension):
        raise RuntimeError(
            f"the server evaluated {timings['prompt_n']} prompt tokens, not the {len(extension)} of the "
            "extension: its prompt cache was not reused"
        )
    return float(timings["prompt_ms"])


def complete_raw(url: str, body: dict, *, timeout_s: float = 120.0) -> dict:
    """POST ``body`` to the server's native ``/completion``; the response JSON."""
    r = client().post(url + "/completion", json=body, timeout=timeout_s)
    r.raise_for_status()
    return r.json()


def metrics_text(url: str) -> str:
    """The server's /metrics body."""
    r = client().get(url + "/metrics", timeout=10.0)
    r.raise_for_status()
    return r.text

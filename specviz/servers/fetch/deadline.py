"""An httpx client whose every socket operation waits no longer than its fetch has left of ``total_timeout_s``.

Per-read timeouts do not bound a server that trickles a byte a second; every socket operation here gets at most
the time left (:data:`_BUDGET`). DNS lookups (no timeout in httpx) are outside it.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any

import httpcore
import httpx

from specviz.servers.fetch.body import ACCEPT_ENCODING
from specviz.servers.fetch.policy import FetchPolicy


def timeouts(policy: FetchPolicy) -> httpx.Timeout:
    """httpx timeouts of ``policy``: connect (and waiting for a pooled connection), read and write."""
    return httpx.Timeout(
        connect=policy.connect_timeout_s,
        read=policy.read_timeout_s,
        write=policy.read_timeout_s,
        pool=policy.connect_timeout_s,
    )


class _Budget:
    """One fetch's deadline (``time.monotonic()`` s), and whether a timeout was the deadline's."""

    __slots__ = ("deadline", "expired")

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.expired = False

    def left(self) -> float:
        return self.deadline - time.monotonic()


#: The budget of the fetch running in this thread (None outside one): what the network streams of a
#: :func:`make_client` client read, so a connection shared by many fetches serves each under its own.
_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("specviz_fetch_budget", default=None)


def _bounded(timeout: float | None, error: type[Exception]) -> tuple[float | None, _Budget | None]:
    """``timeout`` cut to the time left, and the budget when it cut; raises ``error`` when none is left."""
    budget = _BUDGET.get()
    if budget is None:
        return timeout, None
    left = budget.left()
    if left <= 0:
        budget.expired = True
        raise error("the fetch's total time is up")
    if timeout is None or left < timeout:
        return left, budget
    return timeout, None


def _timed(call, timeout: float | None, error: type[Exception]):
    """``call(timeout)`` within the deadline; a timeout the deadline caused marks the budget expired."""
    bounded, budget = _bounded(timeout, error)
    try:
        return call(bounded)
    except httpcore.TimeoutException:
        if budget is not None:
            budget.expired = True
        raise


class _DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every read and write waits no longer than its fetch has left."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _timed(lambda t: self._stream.read(max_bytes, t), timeout, httpcore.ReadTimeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        return _timed(lambda t: self._stream.write(buffer, t), timeout, httpcore.WriteTimeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        tls = _timed(
            lambda t: self._stream.start_tls(ssl_context, server_hostname, t), timeout, httpcore.ConnectTimeout
        )
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend, connecting within the deadline, its streams :class:`_DeadlineStream`."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        connect = self._backend.connect_tcp
        return _DeadlineStream(
            _timed(lambda t: connect(host, port, t, local_address, socket_options), timeout, httpcore.ConnectTimeout)
        )

    def connect_unix_socket(self, path, timeout=None, socket_options=None):  # pragma: no cover - not used
        connect = self._backend.connect_unix_socket
        return _DeadlineStream(_timed(lambda t: connect(path, t, socket_options), timeout, httpcore.ConnectTimeout))

    def sleep(self, seconds: float) -> None:  # pragma: no cover - httpcore sleeps only between retries (none)
        self._backend.sleep(seconds)


def make_client(policy: FetchPolicy, *, max_connections: int = 16) -> httpx.Client:
    """A client for fetch: no automatic redirects, the policy's timeouts, each fetch's deadline, and
    ``trust_env=False`` (no proxies, no ``.netrc`` passwords to typed hosts); thread-safe, the caller closes it."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    transport = httpx.HTTPTransport(limits=limits, trust_env=False)
    pool = transport._pool  # httpcore.ConnectionPool: each new connection opens its stream through this backend
    if not isinstance(getattr(pool, "_network_backend", None), httpcore.NetworkBackend):  # pragma: no cover
        raise RuntimeError(f"httpx {httpx.__version__} / httpcore {httpcore.__version__}: no network backend to bound")
    pool._network_backend = _DeadlineBackend(pool._network_backend)
    return httpx.Client(
        timeout=timeouts(policy),
        follow_redirects=False,
        trust_env=False,
        transport=transport,
        headers={"Accept-Encoding": ACCEPT_ENCODING},
    )

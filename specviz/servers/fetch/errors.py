"""The one error of fetching, and httpx's exceptions turned into one line a person can act on."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx

from specviz.base.i18n import N_, Message
from specviz.servers.fetch.hosts import DEFAULT_PORTS, _host_key, _shown, format_host_entry

if TYPE_CHECKING:
    from specviz.servers.fetch.policy import FetchPolicy

_SNIPPET_CHARS = 300  #: characters of an error response's body quoted in the message


class FetchError(Message):
    """A refused URL or a failed fetch, in one line quoting the URL (hosted pages ``redact`` it); a ValueError.

    ``status``: the HTTP status when ≥ 400, else None.
    """

    def __init__(self, key: str, *, status: int | None = None, **fields) -> None:
        super().__init__(key, **fields)
        self.status = status

    def __reduce__(self):  # pickling keeps the class and the status
        return _fetch_error, (self.msgid, self.status, self.fields)


def _fetch_error(key: str, status: int | None, fields: dict) -> FetchError:
    return FetchError(key, status=status, **fields)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from (``__cause__``, else ``__context__``)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _snippet(text: str, limit: int = _SNIPPET_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters (… when cut)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _connect_error(exc: BaseException, shown: str, where: str, host: str) -> FetchError:
    """Why a connection to ``where`` failed, from the OS error under httpx's ConnectError."""
    chain = list(_causes(exc))
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "connection refused" in text:
        return FetchError(
            "cannot fetch {url}: connection refused: nothing is listening at {where}", url=shown, where=where
        )
    gai = next((e for e in chain if isinstance(e, socket.gaierror)), None)
    dns_words = ("name or service not known", "nodename nor servname", "getaddrinfo", "name resolution")
    if gai is not None or any(w in text for w in dns_words):
        detail = gai.strerror if gai is not None and gai.strerror else _snippet(str(exc), 120)
        return FetchError(
            "cannot fetch {url}: the host name {host!r} does not resolve (DNS lookup failed: {detail})",
            url=shown,
            host=host,
            detail=detail,
        )
    tls = next((e for e in chain if isinstance(e, ssl.SSLError)), None)
    if tls is not None or "ssl" in text or "certificate" in text:
        detail = (getattr(tls, "reason", None) or str(tls)) if tls is not None else _snippet(str(exc), 160)
        key = (
            N_(
                "cannot fetch {url}: TLS error talking to {where}: {detail} (does the server speak plain http? then write http://)"
            )
            if "wrong_version_number" in text
            else N_("cannot fetch {url}: TLS error talking to {where}: {detail}")
        )
        return FetchError(key, url=shown, where=where, detail=detail)
    os_error = next((e for e in chain if isinstance(e, OSError) and e.strerror), None)
    detail = os_error.strerror if os_error is not None else _snippet(str(exc), 160)
    return FetchError("cannot fetch {url}: cannot connect to {where}: {detail}", url=shown, where=where, detail=detail)


def _explain(exc: Exception, url: httpx.URL, policy: FetchPolicy) -> FetchError:
    """The FetchError ("cannot fetch URL: why") for an httpx exception raised while fetching ``url``."""
    host = _host_key(url)
    where = format_host_entry(host, url.port or DEFAULT_PORTS.get(url.scheme, 0))
    c, r = policy.connect_timeout_s, policy.read_timeout_s
    shown = _shown(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return FetchError(
            "cannot fetch {url}: no connection to {where} within {s:g} s (connect timeout): is the host up and its port open?",
            url=shown,
            where=where,
            s=c,
        )
    if isinstance(exc, httpx.ReadTimeout):
        return FetchError(
            "cannot fetch {url}: {where} accepted the connection but sent nothing for {s:g} s (read timeout)",
            url=shown,
            where=where,
            s=r,
        )
    if isinstance(exc, httpx.WriteTimeout):
        return FetchError(
            "cannot fetch {url}: {where} took the request no further for {s:g} s (write timeout)",
            url=shown,
            where=where,
            s=r,
        )
    if isinstance(exc, httpx.PoolTimeout):
        return FetchError(
            "cannot fetch {url}: no free connection to {where} within {s:g} s (too many requests at once for the client's pool)",
            url=shown,
            where=where,
            s=c,
        )
    if isinstance(exc, httpx.ConnectError):
        return _connect_error(exc, shown, where, host)
    if isinstance(exc, httpx.RemoteProtocolError):
        return FetchError(
            "cannot fetch {url}: {where} broke off the HTTP exchange ({detail}): is it an HTTP server?",
            url=shown,
            where=where,
            detail=_snippet(str(exc), 160),
        )
    if isinstance(exc, httpx.NetworkError):
        detail = _snippet(str(exc), 160) or type(exc).__name__
        return FetchError(
            "cannot fetch {url}: the connection to {where} failed ({detail})", url=shown, where=where, detail=detail
        )
    if isinstance(exc, httpx.DecodingError):
        return FetchError(
            "cannot fetch {url}: the answer of {where} could not be decoded ({detail})",
            url=shown,
            where=where,
            detail=_snippet(str(exc), 160),
        )
    return FetchError(
        "cannot fetch {url}: {error}: {detail}", url=shown, error=type(exc).__name__, detail=_snippet(str(exc), 160)
    )

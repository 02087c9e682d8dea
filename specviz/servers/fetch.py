"""Fetching a URL a person typed, within the deployment's rules against server-side request forgery.

The Engine monitor page polls the ``/metrics`` endpoint of an inference server and sends load to its
``/v1/completions``: a person types the URL and *this* server fetches it. So every URL, and every
hop of a redirect, passes :func:`check_url` first:

- only ``http`` and ``https``; a host is required; ports 1..65535;
- in hosted mode (``SPECVIZ_HOSTED=1``, :func:`specviz.base.hosting.is_hosted`) no user name or password
  in the URL, and only the hosts the operator lists in ``SPECVIZ_ENGINE_HOSTS`` (comma-separated
  ``host`` or ``host:port`` entries; an entry without a port allows every port of that host). An
  empty list allows nothing;
- host names compare case-insensitively in their IDNA (ASCII, ``xn--``) form, without a trailing dot;
  IP addresses compare by value (``127.1``, ``0x7f.0.0.1`` and ``::ffff:127.0.0.1`` are ``127.0.0.1``),
  and the checked URL carries the address in its canonical form, so what is fetched is what was checked.
  No DNS lookup takes part in the decision: the list names what the operator trusts, so a literal IP
  address is fetched in hosted mode only when the list holds that address.

:func:`fetch` then sends the request with httpx (connect and read timeouts, redirects followed by hand,
each hop checked and https → http refused, the body streamed and cut at ``max_bytes``) and turns
httpx's exceptions into one-line messages a person can act on ("nothing is listening at host:port").
:func:`fetch_stream` is the same exchange, by the same code, handing the body on line by line as it
arrives (a streamed completion's server-sent events): the cap counts every byte streamed, the read
timeout bounds each pause, and the total time bounds the whole stream.
Messages quote URLs: a hosted page passes them through :func:`specviz.base.hosting.redact` before showing them.

What a hostile or broken server cannot do (tests/servers/test_hostile_servers.py):

- keep a fetch waiting past ``total_timeout_s``: per-read timeouts alone do not bound a server that sends
  a byte a second, headers or body. A client from :func:`make_client` gives every socket operation of a
  fetch at most the time left before the fetch's deadline (its connections' network streams read it from
  :data:`_BUDGET`), so :func:`fetch` returns within ``total_timeout_s`` plus one scheduling delay. (A DNS
  lookup, which has no timeout in httpx, is the one step outside it; hosted allow-lists name hosts the
  operator runs.)
- make it hold more than ``max_bytes`` of body: compressed bodies are inflated here, not by httpx, at most
  :data:`_INFLATE_STEP` bytes per step, and the inflated bytes count against the cap, so a gzip bomb (or
  ``Content-Encoding: gzip, gzip``) is cut at ``max_bytes`` after using about that much memory. Only the
  encodings asked for (``Accept-Encoding: gzip, deflate``) are read; any other is refused.
- break text decoding with a charset that names no text codec (``charset=base64``): the body is then UTF-8.

No streamlit here.
"""

from __future__ import annotations

import codecs
import contextvars
import ipaddress
import json
import math
import os
import re
import socket
import ssl
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from specviz.base import settings
from specviz.base.hosting import is_hosted
from specviz.base.i18n import N_, Message, Phrase

__all__ = [
    "DEFAULT_PORTS",
    "ENV_HOSTS",
    "FetchError",
    "FetchPolicy",
    "Fetched",
    "check_url",
    "fetch",
    "fetch_stream",
    "format_host_entry",
    "make_client",
    "parse_host_entry",
    "policy_from_env",
    "text_codec",
    "timeouts",
]

ENV_HOSTS = "SPECVIZ_ENGINE_HOSTS"
DEFAULT_PORTS: Mapping[str, int] = {"http": 80, "https": 443}  #: the schemes fetched, and their default ports
FIELD = Phrase("endpoint URL")  #: how messages name the URL a person typed ("endpoint URL")
_HOST_LABELS = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")
_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+")  # what inet_aton may read as an IPv4 address (2130706433, 0x7f.1)
_SNIPPET_CHARS = 300  #: characters of an error response's body quoted in the message
_EXAMPLE_HOSTS = "localhost:8000,vllm.internal:8000"
ACCEPT_ENCODING = "gzip, deflate"  #: the content encodings fetch reads (and asks for)
_INFLATE_STEP = 64 * 2**10  #: most bytes one inflate step produces (so a bomb is cut at the cap, not after)
_MAX_ENCODINGS = 3  #: most Content-Encoding layers read (``gzip, gzip``); more are refused
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}
#: Python codec names (``codecs.lookup(...).name``) a body's charset may select; anything else reads as UTF-8.
_TEXT_CODECS = re.compile(
    r"utf-8(-sig)?|utf-(16|32)(-[lb]e)?|ascii|iso8859-\d+|cp\d+|koi8-[ru]|mac-roman"
    r"|gb2312|gbk|gb18030|big5(hkscs)?|shift_jis|cp932|euc_(jp|kr)|iso2022_jp"
)


class FetchError(Message):
    """A URL refused by the rules, or a fetch that failed; the message says why in one line.

    A :class:`~specviz.base.i18n.Message` (so a ValueError): ``FetchError(key, **fields)``, ``str()`` the English
    text. ``status`` is the HTTP status when the server answered with one ≥ 400, else None.
    """

    def __init__(self, key: str, *, status: int | None = None, **fields) -> None:
        super().__init__(key, **fields)
        self.status = status

    def __reduce__(self):  # pickling keeps the class and the status
        return _fetch_error, (self.msgid, self.status, self.fields)


def _fetch_error(key: str, status: int | None, fields: dict) -> FetchError:
    return FetchError(key, status=status, **fields)


@dataclass(frozen=True)
class FetchPolicy:
    """What :func:`fetch` may fetch, and how long and how much it waits for.

    Parameters
    ----------
    allowed_hosts
        ``host`` or ``host:port`` entries (normalised on construction: lower-case IDNA, canonical IP
        addresses); None allows every host. Required in hosted mode.
    connect_timeout_s, read_timeout_s
        Seconds to wait for the TCP (and TLS) connection, and between two reads of the answer.
    total_timeout_s
        Seconds a whole fetch may take, redirects and every body included: a server that trickles its
        answer is cut off then. None: ``connect_timeout_s + 2 * read_timeout_s`` (:attr:`total_s`).
    max_bytes
        Largest (decoded) response body read; a larger one is refused.
    max_redirects
        Redirects followed, each checked by :func:`check_url`.
    hosted
        Hosted mode's rules: no credentials in URLs, and an allow-list is required.
    """

    allowed_hosts: tuple[str, ...] | None = None
    connect_timeout_s: float = 2.0
    read_timeout_s: float = 5.0
    total_timeout_s: float | None = None
    max_bytes: int = 8 * 2**20
    max_redirects: int = 3
    hosted: bool = False

    def __post_init__(self) -> None:
        if self.allowed_hosts is None:
            if self.hosted:
                raise ValueError(f"hosted mode needs an allow-list of engine hosts ({ENV_HOSTS}); got none")
        else:
            if isinstance(self.allowed_hosts, str):
                raise ValueError(
                    f"allowed_hosts must be a tuple of host or host:port entries; got {self.allowed_hosts!r}"
                )
            entries = tuple(format_host_entry(*parse_host_entry(e)) for e in self.allowed_hosts)
            object.__setattr__(self, "allowed_hosts", entries)
        for name in ("connect_timeout_s", "read_timeout_s", "total_timeout_s"):
            value = getattr(self, name)
            if name == "total_timeout_s" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise ValueError(f"{name} must be a positive number of seconds; got {value!r}")
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) or self.max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive integer; got {self.max_bytes!r}")
        if isinstance(self.max_redirects, bool) or not isinstance(self.max_redirects, int) or self.max_redirects < 0:
            raise ValueError(f"max_redirects must be an integer >= 0; got {self.max_redirects!r}")

    @property
    def total_s(self) -> float:
        """Seconds one :func:`fetch` may take in all: ``total_timeout_s``, else connect + 2 × read timeout."""
        if self.total_timeout_s is not None:
            return float(self.total_timeout_s)
        return self.connect_timeout_s + 2 * self.read_timeout_s


@dataclass(frozen=True)
class Fetched:
    """One fetched answer (status < 400), its body read in full (at most the policy's ``max_bytes``)."""

    status: int
    reason: str  #: the HTTP reason phrase ("OK")
    headers: Mapping[str, str]  #: lower-case names; repeated headers joined by ", "
    body: bytes  #: decoded from its Content-Encoding (gzip, deflate)
    url: str  #: the final URL, after redirects
    elapsed_s: float  #: from sending the first request to the end of the last body, redirects included
    encoding: str = "utf-8"  #: the charset of Content-Type, else UTF-8

    @property
    def text(self) -> str:
        """The body as text (undecodable bytes replaced; UTF-8 where the charset names no text codec)."""
        return _decode(self.body, self.encoding)

    def json(self) -> Any:
        """The body parsed as JSON; FetchError quoting its start when it is not JSON (or nested too deep to read)."""
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):  # RecursionError: [[[[…]]]] nested deeper than Python recurses
            raise FetchError(
                "the answer from {url} is not JSON: {snippet!r}", url=self.url, snippet=_snippet(self.text)
            ) from None


def text_codec(charset: str | None) -> str:
    """The codec a body in ``charset`` is decoded with: that charset when it is one of the character sets
    of :data:`_TEXT_CODECS` (UTF-8/16/32, ASCII, ISO 8859, Windows and CJK code pages), else UTF-8.

    A server names the charset, so it must not pick just any Python codec: ``base64`` and ``rot13`` are
    no text encodings (decoding raises), ``idna`` refuses ``errors="replace"``, and ``punycode`` takes
    time quadratic in the body (a 256 KiB body: seconds; 8 MiB: hours).
    """
    try:
        name = codecs.lookup(charset.strip()).name if charset else "utf-8"
    except (LookupError, ValueError):
        return "utf-8"
    return name if _TEXT_CODECS.fullmatch(name) else "utf-8"


def _decode(body: bytes, encoding: str | None) -> str:
    """``body`` as text in ``text_codec(encoding)``, undecodable bytes replaced."""
    return body.decode(text_codec(encoding), errors="replace")


# --- the rules ------------------------------------------------------------------------------------


def _as_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` spells, in any form a resolver reads as one (IPv4-mapped IPv6 as IPv4), else None."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if not _NUMERIC_HOST.fullmatch(host):
            return None
        try:  # 127.1, 0x7f.0.0.1, 2130706433: getaddrinfo reads these as IPv4 addresses
            ip = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _host_key(url: httpx.URL) -> str:
    """``url``'s host as rules compare it: IDNA ASCII form, lower case, no trailing dot; IPs canonical."""
    host = url.raw_host.decode("ascii").lower().rstrip(".")
    ip = _as_ip(host)
    return host if ip is None else str(ip)


def _valid_host(host: str) -> bool:
    """An IP address, or a DNS name: labels of letters, digits, ``-`` and ``_``, each at most 63 characters,
    at most 253 in all (RFC 1035)."""
    if _as_ip(host) is not None:
        return True
    return len(host) <= 253 and _HOST_LABELS.fullmatch(host) is not None and max(map(len, host.split("."))) <= 63


def parse_host_entry(entry: str) -> tuple[str, int | None]:
    """``(host, port)`` of an allow-list entry ``host`` or ``host:port`` (``[v6]:port`` for IPv6); port None = any.

    The host is normalised as :func:`check_url` compares hosts. Raises ValueError naming
    ``SPECVIZ_ENGINE_HOSTS`` for anything else (a scheme, a path, user info, a bad port).
    """
    text = str(entry).strip()
    rule = {"var": ENV_HOSTS, "example": _EXAMPLE_HOSTS, "entry": entry}
    if not text or "://" in text or any(c in text for c in "/?#@ "):
        raise Message(
            "{var} entries are host or host:port, separated by commas (e.g. {example}); got {entry!r}", **rule
        )
    try:  # a scheme of no default port: httpx keeps an explicit :80 (which an http:// URL would drop)
        url = httpx.URL(f"x-entry://{text}")
    except httpx.InvalidURL as exc:
        raise Message(
            "{var} entries are host or host:port, separated by commas (e.g. {example}); got {entry!r} ({error})",
            error=str(exc),
            **rule,
        ) from None
    host = _host_key(url)
    if not host or not _valid_host(host) or url.path not in ("", "/"):
        raise Message(
            "{var} entries are host or host:port, separated by commas (e.g. {example}); got {entry!r}", **rule
        )
    if url.port is not None and not 1 <= url.port <= 65535:
        raise Message(
            "{var} entries are host or host:port, separated by commas (e.g. {example}); got {entry!r} (ports are 1..65535)",
            **rule,
        )
    return host, url.port


def format_host_entry(host: str, port: int | None) -> str:
    """The entry ``host`` or ``host:port`` (an IPv6 host in brackets when it has a port)."""
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _shown(url: httpx.URL) -> str:
    """``url`` as messages quote it: without user info (a password stays out of messages) or fragment."""
    return str(url.copy_with(userinfo=b"", fragment=None))


def policy_from_env(environ: Mapping[str, str] | None = None) -> FetchPolicy:
    """The deployment's :class:`FetchPolicy`: in hosted mode only ``$SPECVIZ_ENGINE_HOSTS``, else any host.

    Outside hosted mode a set ``SPECVIZ_ENGINE_HOSTS`` is ignored (any host may be fetched). In hosted mode
    an empty or unset one allows nothing, and :func:`check_url` says how to set it. ValueError naming the
    variable for a malformed entry.
    """
    environ = os.environ if environ is None else environ
    if not is_hosted(environ):
        return FetchPolicy()
    entries = tuple(e for e in settings.value(ENV_HOSTS, environ).split(",") if e.strip())
    return FetchPolicy(allowed_hosts=entries, hosted=True)


def check_url(url: str, policy: FetchPolicy, *, field: str = FIELD) -> str:
    """``url`` normalised, when ``policy`` lets it be fetched; else FetchError naming ``field``, the value and the rule.

    Parameters
    ----------
    url
        What the person typed (surrounding spaces ignored), or a redirect's target.
    policy
        The rules (module docstring).
    field
        How the message names the URL ("endpoint URL", "redirect from … to"): a str, or a
        :class:`~specviz.base.i18n.Phrase` to have it in the page's language too.

    Returns
    -------
    str
        The URL with a lower-case scheme and host, the host in IDNA form, an IP address in canonical
        form, and no fragment.
    """
    text = url.strip() if isinstance(url, str) else ""
    if not text:
        raise FetchError("{field} is empty; write the server's URL, e.g. http://localhost:8000/metrics", field=field)
    if "://" not in text:
        raise FetchError(
            "{field} {url!r} has no scheme; write it with http:// or https://, e.g. http://{url}", field=field, url=text
        )
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise FetchError(
            "{field} {url!r} is not a valid URL ({error})", field=field, url=text, error=str(exc)
        ) from None

    def refused(key: str, **fields) -> FetchError:  # "{field} {url!r} is refused: <why>"
        return FetchError(key, field=field, url=_shown(parsed), **fields)

    if parsed.scheme not in DEFAULT_PORTS:
        raise refused(
            "{field} {url!r} is refused: only http and https URLs are fetched; got scheme {scheme!r}",
            scheme=parsed.scheme,
        )
    host = _host_key(parsed)
    if not host:
        raise refused("{field} {url!r} is refused: it names no host; write e.g. http://localhost:8000/metrics")
    if not _valid_host(host):
        raise refused("{field} {url!r} is refused: {host!r} is not a valid host name", host=host)
    port = DEFAULT_PORTS[parsed.scheme] if parsed.port is None else parsed.port
    if not 1 <= port <= 65535:
        raise refused("{field} {url!r} is refused: port {port} is outside 1..65535", port=port)
    if policy.hosted and parsed.userinfo:
        raise refused(
            "{field} {url!r} is refused: hosted mode fetches no URL with a user name or password (user:pass@host)"
        )
    ip = _as_ip(host)
    if policy.allowed_hosts is not None:
        entries = [parse_host_entry(e) for e in policy.allowed_hosts]
        if not any(h == host and p in (None, port) for h, p in entries):
            if not entries:
                raise refused(
                    "{field} {url!r} is refused: no engine host may be fetched: the allow-list {var} is empty. The operator sets it to the comma-separated host or host:port entries this server may fetch, e.g. {var}={example}",
                    var=ENV_HOSTS,
                    example=_EXAMPLE_HOSTS,
                )
            listed = {"var": ENV_HOSTS, "allowed": ", ".join(policy.allowed_hosts)}
            if ip is None:
                raise refused(
                    "{field} {url!r} is refused: host {where} is not on the allow-list of engine hosts ({var}: {allowed})",
                    where=f"{host}:{port}",
                    **listed,
                )
            key = (
                N_(
                    "{field} {url!r} is refused: the literal IP address {where} is not on the allow-list of engine hosts ({var}: {allowed}); hosted mode fetches an IP address only when the list holds it"
                )
                if policy.hosted
                else N_(
                    "{field} {url!r} is refused: the literal IP address {where} is not on the allow-list of engine hosts ({var}: {allowed})"
                )
            )
            raise refused(key, where=format_host_entry(host, port), **listed)
    normal = parsed.copy_with(fragment=None)
    if ip is not None:
        normal = normal.copy_with(host=str(ip))
    return str(normal)


# --- fetching -------------------------------------------------------------------------------------


def timeouts(policy: FetchPolicy) -> httpx.Timeout:
    """httpx timeouts of ``policy``: connect (and waiting for a pooled connection), read and write."""
    return httpx.Timeout(
        connect=policy.connect_timeout_s,
        read=policy.read_timeout_s,
        write=policy.read_timeout_s,
        pool=policy.connect_timeout_s,
    )


class _Budget:
    """The deadline of one :func:`fetch` (``time.monotonic()`` seconds), and whether a socket operation
    timed out because of it rather than its own timeout."""

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
    """``timeout`` cut to the time left of this thread's fetch, and that budget when it did the cutting
    (so a timeout then is the deadline's); ``error`` at once when no time is left."""
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
    """``call(timeout)`` with ``timeout`` bounded by the fetch's deadline; a timeout the deadline caused
    marks the budget expired."""
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
    """httpcore's network backend, its connections made within the fetch's deadline and their streams
    :class:`_DeadlineStream`."""

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
    """An httpx client for :func:`fetch`: no automatic redirects, the policy's timeouts, and no
    environment (``trust_env=False``: no proxy variables, and no ``.netrc`` passwords sent to typed hosts).

    Its connections honour each fetch's total deadline (module docstring). The caller closes it
    (``with make_client(policy) as client: ...``); one client may serve many threads.
    """
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
    """A one-line FetchError ("cannot fetch URL: why"), without traceback, for an httpx exception raised
    while fetching ``url``."""
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


def _encodings(response: httpx.Response) -> list[str]:
    """The Content-Encoding layers of ``response`` in the order to undo them (the last applied first);
    FetchError for an encoding not read here, or more than :data:`_MAX_ENCODINGS` layers."""
    listed = [e.strip().lower() for e in response.headers.get_list("content-encoding", split_commas=True)]
    layers = [e for e in listed if e and e != "identity"]
    unknown = [e for e in layers if e not in _WBITS]
    shown = ", ".join(listed)
    if unknown:
        raise FetchError(
            "cannot fetch {url}: the answer is in Content-Encoding {encoding!r}; only {read} are read",
            url=_shown(response.url),
            encoding=shown,
            read=ACCEPT_ENCODING,
        )
    if len(layers) > _MAX_ENCODINGS:
        raise FetchError(
            "cannot fetch {url}: the answer is in Content-Encoding {encoding!r}; at most {most} layers are read",
            url=_shown(response.url),
            encoding=shown,
            most=_MAX_ENCODINGS,
        )
    return layers[::-1]


def _inflate(chunks: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    """``chunks`` of a gzip or deflate stream, inflated at most :data:`_INFLATE_STEP` bytes at a time.

    Like httpx: ``deflate`` is read with the zlib header, else raw, and a truncated stream ends where it
    ends. Unlike httpx, gzip members after the first are read too, and no step returns more than a step.
    """
    wbits = _WBITS[encoding]
    inflater, first = zlib.decompressobj(wbits), True
    for data in chunks:
        while data:
            try:
                out = inflater.decompress(data, _INFLATE_STEP)
            except zlib.error:
                if encoding != "deflate" or not first:
                    raise
                wbits = -zlib.MAX_WBITS  # deflate without the zlib header, as some servers send it
                inflater = zlib.decompressobj(wbits)
                out = inflater.decompress(data, _INFLATE_STEP)
            first = False
            if out:
                yield out
            data = inflater.unconsumed_tail
            while not data and len(out) == _INFLATE_STEP and not inflater.eof:  # all input in, output waiting
                out = inflater.decompress(b"", _INFLATE_STEP)
                if out:
                    yield out
            if inflater.eof:
                if encoding == "deflate":
                    return  # bytes after the stream are ignored
                data = inflater.unused_data  # another gzip member may follow
                inflater = zlib.decompressobj(wbits)
    tail = inflater.flush()
    if tail:
        yield tail


def _chunks(response: httpx.Response, policy: FetchPolicy, budget: _Budget) -> Iterator[bytes]:
    """The body of a streamed ``response`` as it arrives, decoded from its Content-Encoding; FetchError once
    more than ``policy.max_bytes`` decoded bytes have arrived, ReadTimeout once the fetch's total time is up.

    A Content-Length over the limit is refused before reading; otherwise the decoded bytes are counted as
    they are inflated, a step at a time (:func:`_inflate`), so a compressed body cannot expand past the limit.
    Each read waits at most the policy's read timeout (httpx's), so a stream that pauses longer fails too.
    """
    limit = policy.max_bytes

    def too_large() -> FetchError:
        return FetchError(
            "cannot fetch {url}: the response is larger than {limit} bytes (the limit); is this the right endpoint?",
            url=_shown(response.url),
            limit=limit,
        )

    if response.is_stream_consumed:  # an answer made in memory (a MockTransport's): httpx has decoded it
        layers, stream = [], iter([response.content])
    else:
        layers = _encodings(response)
        stream = response.iter_raw()
        for encoding in layers:
            stream = _inflate(stream, encoding)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit and not layers:
        raise too_large()
    size = 0
    try:
        for chunk in stream:
            size += len(chunk)
            if size > limit:
                raise too_large()
            if budget.left() <= 0:  # also where the transport does not bound each read (an injected client)
                budget.expired = True
                raise httpx.ReadTimeout("the fetch's total time is up")
            yield chunk
    except zlib.error as exc:
        raise httpx.DecodingError(f"{', '.join(reversed(layers))}: {exc}") from None


def _read_body(response: httpx.Response, policy: FetchPolicy, budget: _Budget) -> bytes:
    """The whole body of a streamed ``response`` (:func:`_chunks`: decoded, capped, within the deadline)."""
    return b"".join(_chunks(response, policy, budget))


class _Lines:
    """Cuts a byte stream into lines (ending in LF or CRLF; the ending dropped) and hands each to ``on_line``.

    A line is split off only when a chunk brings a newline, so a long line costs one pass, not one per chunk.
    """

    def __init__(self, on_line: Callable[[bytes], None]) -> None:
        self._on_line = on_line
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        if b"\n" not in chunk:
            return
        *lines, rest = self._buffer.split(b"\n")
        self._buffer = bytearray(rest)
        for line in lines:
            self._on_line(bytes(line).removesuffix(b"\r"))

    def close(self) -> None:
        """Hand on the last line when the stream ended without a newline."""
        if self._buffer:
            line, self._buffer = bytes(self._buffer).removesuffix(b"\r"), bytearray()
            self._on_line(line)


def _redirect_target(response: httpx.Response, request: httpx.Request, policy: FetchPolicy) -> httpx.Request:
    """The next request of a redirect ``response``, after checking its target; FetchError naming it when refused."""
    nxt = response.next_request
    if nxt is None:  # pragma: no cover - httpx sets it for every redirect it does not follow
        raise FetchError(
            "cannot fetch {url}: a redirect ({code}) without a target",
            url=_shown(request.url),
            code=response.status_code,
        )
    hop = Phrase("redirect from {url!r} to", url=_shown(request.url))  # "redirect from 'URL' to"
    if request.url.scheme == "https" and nxt.url.scheme == "http":
        raise FetchError("{field} {url!r} is refused: it leaves https for plain http", field=hop, url=_shown(nxt.url))
    check_url(str(nxt.url), policy, field=hop)  # an IP in another spelling resolves to the address checked
    return nxt


def fetch(
    url: str,
    policy: FetchPolicy,
    *,
    method: str = "GET",
    json: Any = None,
    client: httpx.Client | None = None,
) -> Fetched:
    """Fetch ``url`` under ``policy``: checked, redirects followed by hand, body capped; FetchError otherwise.

    Parameters
    ----------
    url
        The URL a person typed; :func:`check_url` checks it, and every redirect target.
    policy
        Allow-list, timeouts, size cap and redirect limit.
    method
        HTTP method ("GET", "POST").
    json
        A JSON body to send (with ``Content-Type: application/json``), or None.
    client
        An httpx client to send with (pooled connections; a MockTransport in tests); its own redirect
        setting is overridden and the policy's timeouts apply. None: a :func:`make_client` for this call.

    Returns
    -------
    Fetched
        The final answer, when its status is below 400.

    Raises
    ------
    FetchError
        The URL or a redirect target refused, more than ``policy.max_redirects`` redirects, https → http,
        a body over ``policy.max_bytes`` (decoded), a Content-Encoding other than gzip or deflate, more than
        ``policy.total_s`` seconds in all, a connection, DNS, TLS or timeout failure, or an HTTP status ≥ 400
        (``status`` set), each as one line naming the URL and the cause.
    """
    return _exchange(url, policy, method=method, json=json, client=client, on_line=None)


def fetch_stream(
    url: str,
    policy: FetchPolicy,
    *,
    on_line: Callable[[bytes], None],
    method: str = "POST",
    json: Any = None,
    client: httpx.Client | None = None,
) -> Fetched:
    """:func:`fetch`, handing the answer's body to ``on_line`` line by line as it arrives (server-sent events).

    Every rule of :func:`fetch` holds, by the same code: the URL and each redirect target checked,
    https → http refused, at most ``policy.max_redirects`` redirects, the size cap on all the (decoded)
    bytes streamed, the read timeout between two reads (so a stream that pauses longer fails), and
    ``policy.total_s`` for the whole exchange. An answer with status ≥ 400 is read whole (capped) and
    raised as :func:`fetch` raises it; ``on_line`` sees only the body of a final answer below 400.

    Parameters
    ----------
    url, policy, method, json, client
        As :func:`fetch` (``method`` defaults to POST: a streamed completion).
    on_line
        Called in this thread with each line of the body (bytes, its LF or CRLF ending dropped; the last
        line too when the body does not end in a newline), when it arrives. What it raises ends the fetch
        (the connection is closed) and propagates unchanged.

    Returns
    -------
    Fetched
        Status, headers, final URL and ``elapsed_s`` up to the end of the stream; ``body`` is empty (the
        lines went to ``on_line``).

    Raises
    ------
    FetchError
        As :func:`fetch`, at whatever point of the stream the rule is broken.
    """
    return _exchange(url, policy, method=method, json=json, client=client, on_line=on_line)


def _exchange(
    url: str,
    policy: FetchPolicy,
    *,
    method: str,
    json: Any,
    client: httpx.Client | None,
    on_line: Callable[[bytes], None] | None,
) -> Fetched:
    """:func:`fetch` (``on_line`` None: the body read whole) and :func:`fetch_stream` (the body's lines to ``on_line``)."""
    start_url = httpx.URL(check_url(url, policy))
    own = client is None
    if client is None:
        client = make_client(policy)
    budget = _Budget(policy.total_s)
    token = _BUDGET.set(budget)

    def failed(exc: Exception, at: httpx.URL) -> FetchError:
        if budget.expired and isinstance(exc, httpx.TimeoutException):
            where = format_host_entry(_host_key(at), at.port or DEFAULT_PORTS.get(at.scheme, 0))
            return FetchError(
                "cannot fetch {url}: {where} did not finish its answer within {s:g} s (the total time one fetch may take): it answers too slowly, or without end",
                url=_shown(at),
                where=where,
                s=policy.total_s,
            )
        return _explain(exc, at, policy)

    try:
        request = client.build_request(
            method, start_url, json=json, timeout=timeouts(policy), headers={"Accept-Encoding": ACCEPT_ENCODING}
        )
        started = time.perf_counter()
        for _hop in range(policy.max_redirects + 1):
            try:
                response = client.send(request, stream=True, follow_redirects=False)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise failed(exc, request.url) from exc
            try:
                if response.next_request is not None:
                    request = _redirect_target(response, request, policy)
                    continue
                try:
                    if on_line is None or response.status_code >= 400:
                        body = _read_body(response, policy, budget)
                    else:
                        lines = _Lines(on_line)
                        for chunk in _chunks(response, policy, budget):
                            lines.feed(chunk)
                        lines.close()
                        body = b""
                except httpx.HTTPError as exc:
                    raise failed(exc, request.url) from exc
            finally:
                response.close()
            elapsed = time.perf_counter() - started
            encoding = text_codec(response.charset_encoding)
            if response.status_code >= 400:
                said = _snippet(_decode(body, encoding))
                raise FetchError(
                    N_("cannot fetch {url}: the server answered HTTP {code} {reason}: {said}")
                    if said
                    else N_("cannot fetch {url}: the server answered HTTP {code} {reason}"),
                    status=response.status_code,
                    url=_shown(request.url),
                    code=response.status_code,
                    reason=response.reason_phrase,
                    said=said,
                )
            headers = {k.lower(): v for k, v in response.headers.items()}
            return Fetched(
                status=response.status_code,
                reason=response.reason_phrase,
                headers=headers,
                body=body,
                url=str(request.url),
                elapsed_s=elapsed,
                encoding=encoding,
            )
        raise FetchError(
            "cannot fetch {url}: more than {limit} redirects (the limit); the last went to {last}",
            url=_shown(start_url),
            limit=policy.max_redirects,
            last=_shown(request.url),
        )
    finally:
        _BUDGET.reset(token)
        if own:
            client.close()

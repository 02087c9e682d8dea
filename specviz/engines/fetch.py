"""Fetching a URL a person typed, within the deployment's rules against server-side request forgery.

The Engine monitor page polls the ``/metrics`` endpoint of an inference server and sends load to its
``/v1/completions``: a person types the URL and *this* server fetches it. So every URL, and every
hop of a redirect, passes :func:`check_url` first:

- only ``http`` and ``https``; a host is required; ports 1..65535;
- in hosted mode (``SPECVIZ_HOSTED=1``, :func:`specviz.hosting.is_hosted`) no user name or password
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
Messages quote URLs: a hosted page passes them through :func:`specviz.hosting.redact` before showing them.

No streamlit here.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from specviz.hosting import is_hosted
from specviz.i18n import Message, Phrase

__all__ = [
    "DEFAULT_PORTS",
    "ENV_HOSTS",
    "FetchError",
    "FetchPolicy",
    "Fetched",
    "check_url",
    "fetch",
    "format_host_entry",
    "make_client",
    "parse_host_entry",
    "policy_from_env",
    "timeouts",
]

ENV_HOSTS = "SPECVIZ_ENGINE_HOSTS"
DEFAULT_PORTS: Mapping[str, int] = {"http": 80, "https": 443}  #: the schemes fetched, and their default ports
FIELD = Phrase("note.engines.fetch.field")  #: how messages name the URL a person typed ("endpoint URL")
_HOST_LABELS = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")
_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+")  # what inet_aton may read as an IPv4 address (2130706433, 0x7f.1)
_SNIPPET_CHARS = 300  #: characters of an error response's body quoted in the message
_EXAMPLE_HOSTS = "localhost:8000,vllm.internal:8000"


class FetchError(Message):
    """A URL refused by the rules, or a fetch that failed; the message says why in one line.

    A :class:`~specviz.i18n.Message` (so a ValueError): ``FetchError(key, **fields)``, ``str()`` the English
    text. ``status`` is the HTTP status when the server answered with one ≥ 400, else None.
    """

    def __init__(self, key: str, *, status: int | None = None, **fields) -> None:
        super().__init__(key, **fields)
        self.status = status

    def __reduce__(self):  # pickling keeps the class and the status
        return _fetch_error, (self.key, self.status, self.fields)


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
        for name in ("connect_timeout_s", "read_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise ValueError(f"{name} must be a positive number of seconds; got {value!r}")
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) or self.max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive integer; got {self.max_bytes!r}")
        if isinstance(self.max_redirects, bool) or not isinstance(self.max_redirects, int) or self.max_redirects < 0:
            raise ValueError(f"max_redirects must be an integer >= 0; got {self.max_redirects!r}")


@dataclass(frozen=True)
class Fetched:
    """One fetched answer (status < 400), its body read in full (at most the policy's ``max_bytes``)."""

    status: int
    reason: str  #: the HTTP reason phrase ("OK")
    headers: Mapping[str, str]  #: lower-case names; repeated headers joined by ", "
    body: bytes  #: decoded from any Content-Encoding (gzip …)
    url: str  #: the final URL, after redirects
    elapsed_s: float  #: from sending the first request to the end of the last body, redirects included
    encoding: str = "utf-8"  #: the charset of Content-Type, else UTF-8

    @property
    def text(self) -> str:
        """The body as text (undecodable bytes replaced)."""
        return self.body.decode(self.encoding, errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON; FetchError quoting its start when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise FetchError("err.engines.fetch.not_json", url=self.url, snippet=_snippet(self.text)) from None


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
    return _as_ip(host) is not None or _HOST_LABELS.fullmatch(host) is not None


def parse_host_entry(entry: str) -> tuple[str, int | None]:
    """``(host, port)`` of an allow-list entry ``host`` or ``host:port`` (``[v6]:port`` for IPv6); port None = any.

    The host is normalised as :func:`check_url` compares hosts. Raises ValueError naming
    ``SPECVIZ_ENGINE_HOSTS`` for anything else (a scheme, a path, user info, a bad port).
    """
    text = str(entry).strip()
    rule = {"var": ENV_HOSTS, "example": _EXAMPLE_HOSTS, "entry": entry}
    if not text or "://" in text or any(c in text for c in "/?#@ "):
        raise Message("err.engines.fetch.host_entry", **rule)
    try:  # a scheme of no default port: httpx keeps an explicit :80 (which an http:// URL would drop)
        url = httpx.URL(f"x-entry://{text}")
    except httpx.InvalidURL as exc:
        raise Message("err.engines.fetch.host_entry_invalid", error=str(exc), **rule) from None
    host = _host_key(url)
    if not host or not _valid_host(host) or url.path not in ("", "/"):
        raise Message("err.engines.fetch.host_entry", **rule)
    if url.port is not None and not 1 <= url.port <= 65535:
        raise Message("err.engines.fetch.host_entry_port", **rule)
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
    entries = tuple(e for e in environ.get(ENV_HOSTS, "").split(",") if e.strip())
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
        :class:`~specviz.i18n.Phrase` to have it in the page's language too.

    Returns
    -------
    str
        The URL with a lower-case scheme and host, the host in IDNA form, an IP address in canonical
        form, and no fragment.
    """
    text = url.strip() if isinstance(url, str) else ""
    if not text:
        raise FetchError("err.engines.fetch.url_empty", field=field)
    if "://" not in text:
        raise FetchError("err.engines.fetch.no_scheme", field=field, url=text)
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise FetchError("err.engines.fetch.invalid_url", field=field, url=text, error=str(exc)) from None

    def refused(key: str, **fields) -> FetchError:  # "{field} {url!r} is refused: <why>"
        return FetchError(key, field=field, url=_shown(parsed), **fields)

    if parsed.scheme not in DEFAULT_PORTS:
        raise refused("err.engines.fetch.scheme", scheme=parsed.scheme)
    host = _host_key(parsed)
    if not host:
        raise refused("err.engines.fetch.no_host")
    if not _valid_host(host):
        raise refused("err.engines.fetch.bad_host", host=host)
    port = DEFAULT_PORTS[parsed.scheme] if parsed.port is None else parsed.port
    if not 1 <= port <= 65535:
        raise refused("err.engines.fetch.port", port=port)
    if policy.hosted and parsed.userinfo:
        raise refused("err.engines.fetch.credentials")
    ip = _as_ip(host)
    if policy.allowed_hosts is not None:
        entries = [parse_host_entry(e) for e in policy.allowed_hosts]
        if not any(h == host and p in (None, port) for h, p in entries):
            if not entries:
                raise refused("err.engines.fetch.allowlist_empty", var=ENV_HOSTS, example=_EXAMPLE_HOSTS)
            listed = {"var": ENV_HOSTS, "allowed": ", ".join(policy.allowed_hosts)}
            if ip is None:
                raise refused("err.engines.fetch.host_not_allowed", where=f"{host}:{port}", **listed)
            key = "err.engines.fetch.ip_not_allowed_hosted" if policy.hosted else "err.engines.fetch.ip_not_allowed"
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


def make_client(policy: FetchPolicy, *, max_connections: int = 16) -> httpx.Client:
    """An httpx client for :func:`fetch`: no automatic redirects, the policy's timeouts, and no
    environment (``trust_env=False``: no proxy variables, and no ``.netrc`` passwords sent to typed hosts).

    The caller closes it (``with make_client(policy) as client: ...``); one client may serve many threads.
    """
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return httpx.Client(timeout=timeouts(policy), follow_redirects=False, trust_env=False, limits=limits)


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
        return FetchError("err.engines.fetch.connection_refused", url=shown, where=where)
    gai = next((e for e in chain if isinstance(e, socket.gaierror)), None)
    dns_words = ("name or service not known", "nodename nor servname", "getaddrinfo", "name resolution")
    if gai is not None or any(w in text for w in dns_words):
        detail = gai.strerror if gai is not None and gai.strerror else _snippet(str(exc), 120)
        return FetchError("err.engines.fetch.dns", url=shown, host=host, detail=detail)
    tls = next((e for e in chain if isinstance(e, ssl.SSLError)), None)
    if tls is not None or "ssl" in text or "certificate" in text:
        detail = (getattr(tls, "reason", None) or str(tls)) if tls is not None else _snippet(str(exc), 160)
        key = "err.engines.fetch.tls_plain" if "wrong_version_number" in text else "err.engines.fetch.tls"
        return FetchError(key, url=shown, where=where, detail=detail)
    os_error = next((e for e in chain if isinstance(e, OSError) and e.strerror), None)
    detail = os_error.strerror if os_error is not None else _snippet(str(exc), 160)
    return FetchError("err.engines.fetch.connect", url=shown, where=where, detail=detail)


def _explain(exc: Exception, url: httpx.URL, policy: FetchPolicy) -> FetchError:
    """A one-line FetchError ("cannot fetch URL: why"), without traceback, for an httpx exception raised
    while fetching ``url``."""
    host = _host_key(url)
    where = format_host_entry(host, url.port or DEFAULT_PORTS.get(url.scheme, 0))
    c, r = policy.connect_timeout_s, policy.read_timeout_s
    shown = _shown(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return FetchError("err.engines.fetch.connect_timeout", url=shown, where=where, s=c)
    if isinstance(exc, httpx.ReadTimeout):
        return FetchError("err.engines.fetch.read_timeout", url=shown, where=where, s=r)
    if isinstance(exc, httpx.WriteTimeout):
        return FetchError("err.engines.fetch.write_timeout", url=shown, where=where, s=r)
    if isinstance(exc, httpx.PoolTimeout):
        return FetchError("err.engines.fetch.pool_timeout", url=shown, where=where, s=c)
    if isinstance(exc, httpx.ConnectError):
        return _connect_error(exc, shown, where, host)
    if isinstance(exc, httpx.RemoteProtocolError):
        return FetchError("err.engines.fetch.protocol", url=shown, where=where, detail=_snippet(str(exc), 160))
    if isinstance(exc, httpx.NetworkError):
        detail = _snippet(str(exc), 160) or type(exc).__name__
        return FetchError("err.engines.fetch.network", url=shown, where=where, detail=detail)
    if isinstance(exc, httpx.DecodingError):
        return FetchError("err.engines.fetch.decoding", url=shown, where=where, detail=_snippet(str(exc), 160))
    return FetchError("err.engines.fetch.other", url=shown, error=type(exc).__name__, detail=_snippet(str(exc), 160))


def _read_body(response: httpx.Response, policy: FetchPolicy) -> bytes:
    """The body of a streamed ``response``, or FetchError once more than ``policy.max_bytes`` arrive.

    A Content-Length over the limit is refused before reading; otherwise the decoded bytes are
    counted as they arrive (so a compressed body cannot expand past the limit either).
    """
    limit = policy.max_bytes

    def too_large() -> FetchError:
        return FetchError("err.engines.fetch.too_large", url=_shown(response.url), limit=limit)

    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit and not response.headers.get("content-encoding"):
        raise too_large()
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _redirect_target(response: httpx.Response, request: httpx.Request, policy: FetchPolicy) -> httpx.Request:
    """The next request of a redirect ``response``, after checking its target; FetchError naming it when refused."""
    nxt = response.next_request
    if nxt is None:  # pragma: no cover - httpx sets it for every redirect it does not follow
        raise FetchError("err.engines.fetch.redirect_no_target", url=_shown(request.url), code=response.status_code)
    hop = Phrase("note.engines.fetch.redirect_field", url=_shown(request.url))  # "redirect from 'URL' to"
    if request.url.scheme == "https" and nxt.url.scheme == "http":
        raise FetchError("err.engines.fetch.https_to_http", field=hop, url=_shown(nxt.url))
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
        a body over ``policy.max_bytes``, a connection, DNS, TLS or timeout failure, or an HTTP status ≥ 400
        (``status`` set), each as one line naming the URL and the cause.
    """
    start_url = httpx.URL(check_url(url, policy))
    own = client is None
    if client is None:
        client = make_client(policy)
    try:
        request = client.build_request(method, start_url, json=json, timeout=timeouts(policy))
        started = time.perf_counter()
        for _hop in range(policy.max_redirects + 1):
            try:
                response = client.send(request, stream=True, follow_redirects=False)
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise _explain(exc, request.url, policy) from exc
            try:
                if response.next_request is not None:
                    request = _redirect_target(response, request, policy)
                    continue
                try:
                    body = _read_body(response, policy)
                except httpx.HTTPError as exc:
                    raise _explain(exc, request.url, policy) from exc
            finally:
                response.close()
            elapsed = time.perf_counter() - started
            if response.status_code >= 400:
                said = _snippet(body.decode(response.encoding or "utf-8", errors="replace"))
                raise FetchError(
                    "err.engines.fetch.http_status_said" if said else "err.engines.fetch.http_status",
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
                encoding=response.encoding or "utf-8",
            )
        raise FetchError(
            "err.engines.fetch.redirects", url=_shown(start_url), limit=policy.max_redirects, last=_shown(request.url)
        )
    finally:
        if own:
            client.close()

"""The deployment's fetch rules (:class:`FetchPolicy`) and :func:`check_url`, which every URL and redirect passes.

Only http(s) with a host and a port in 1..65535; hosted mode (``SPECVIZ_HOSTED=1``): no user info, and
only the listed hosts (no port: every port; empty list: nothing), a literal IP only when listed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from specviz.base import settings
from specviz.base.hosting import is_hosted
from specviz.base.i18n import N_, Phrase
from specviz.servers.fetch.errors import FetchError
from specviz.servers.fetch.hosts import (
    _EXAMPLE_HOSTS,
    DEFAULT_PORTS,
    ENV_HOSTS,
    _as_ip,
    _host_key,
    _shown,
    _valid_host,
    format_host_entry,
    parse_host_entry,
)

FIELD = Phrase("endpoint URL")  #: how messages name the URL a person typed ("endpoint URL")


@dataclass(frozen=True)
class FetchPolicy:
    """What fetch may fetch, and how long and how much it waits; ValueError naming a field out of range."""

    allowed_hosts: tuple[str, ...] | None = None  #: ``host[:port]`` entries, normalised; None: every host
    connect_timeout_s: float = 2.0  #: seconds for the TCP (and TLS) connection
    read_timeout_s: float = 5.0  #: seconds between two reads
    total_timeout_s: float | None = None  #: seconds one fetch may take, redirects included (None: :attr:`total_s`)
    max_bytes: int = 8 * 2**20  #: largest decoded response body read
    max_redirects: int = 3  #: redirects followed, each checked by :func:`check_url`
    hosted: bool = False  #: no credentials in URLs, and an allow-list is required

    def __post_init__(self) -> None:
        if self.allowed_hosts is None:
            if self.hosted:
                raise ValueError(f"hosted mode needs an allow-list of serving-stack hosts ({ENV_HOSTS}); got none")
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
        """Seconds one fetch may take: ``total_timeout_s``, else connect + 2 × read timeout."""
        if self.total_timeout_s is not None:
            return float(self.total_timeout_s)
        return self.connect_timeout_s + 2 * self.read_timeout_s


def policy_from_env(environ: Mapping[str, str] | None = None) -> FetchPolicy:
    """Hosted: only ``$SPECVIZ_ENGINE_HOSTS`` (empty: nothing); else any host. ValueError naming a malformed entry."""
    environ = os.environ if environ is None else environ
    if not is_hosted(environ):
        return FetchPolicy()
    entries = tuple(e for e in settings.value(ENV_HOSTS, environ).split(",") if e.strip())
    return FetchPolicy(allowed_hosts=entries, hosted=True)


def check_url(url: str, policy: FetchPolicy, *, field: str = FIELD) -> str:
    """``url`` normalised (lower-case IDNA host, canonical IP, no fragment) when ``policy`` allows it; else
    FetchError naming ``field`` (a str or :class:`~specviz.base.i18n.Phrase`), the value and the rule."""
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
                    "{field} {url!r} is refused: no serving-stack host may be fetched: the allow-list {var} is empty. The operator sets it to the comma-separated host or host:port entries this server may fetch, e.g. {var}={example}",
                    var=ENV_HOSTS,
                    example=_EXAMPLE_HOSTS,
                )
            listed = {"var": ENV_HOSTS, "allowed": ", ".join(policy.allowed_hosts)}
            if ip is None:
                raise refused(
                    "{field} {url!r} is refused: host {where} is not on the allow-list of serving-stack hosts ({var}: {allowed})",
                    where=f"{host}:{port}",
                    **listed,
                )
            key = (
                N_(
                    "{field} {url!r} is refused: the literal IP address {where} is not on the allow-list of serving-stack hosts ({var}: {allowed}); hosted mode fetches an IP address only when the list holds it"
                )
                if policy.hosted
                else N_(
                    "{field} {url!r} is refused: the literal IP address {where} is not on the allow-list of serving-stack hosts ({var}: {allowed})"
                )
            )
            raise refused(key, where=format_host_entry(host, port), **listed)
    normal = parsed.copy_with(fragment=None)
    if ip is not None:
        normal = normal.copy_with(host=str(ip))
    return str(normal)

"""Host names and addresses as the fetch rules compare them, and the allow-list's ``host[:port]`` entries.

Names compare lower-case in IDNA (``xn--``) form without a trailing dot; IP addresses by value
(``127.1``, ``0x7f.0.0.1``, ``::ffff:127.0.0.1`` are ``127.0.0.1``). No DNS lookup takes part.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping

import httpx

from specviz.base.i18n import Message

ENV_HOSTS = "SPECVIZ_ENGINE_HOSTS"
DEFAULT_PORTS: Mapping[str, int] = {"http": 80, "https": 443}  #: the schemes fetched, and their default ports
_HOST_LABELS = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")
_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+")  # what inet_aton may read as an IPv4 address (2130706433, 0x7f.1)
_EXAMPLE_HOSTS = "localhost:8000,vllm.internal:8000"


def _as_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` spells in any form a resolver reads (IPv4-mapped IPv6 as IPv4), else None."""
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
    """``url``'s host as rules compare it: IDNA ASCII, lower case, no trailing dot; IPs canonical."""
    host = url.raw_host.decode("ascii").lower().rstrip(".")
    ip = _as_ip(host)
    return host if ip is None else str(ip)


def _valid_host(host: str) -> bool:
    """An IP address, or a DNS name of labels ``[a-z0-9_-]`` ≤ 63 characters, ≤ 253 in all (RFC 1035)."""
    if _as_ip(host) is not None:
        return True
    return len(host) <= 253 and _HOST_LABELS.fullmatch(host) is not None and max(map(len, host.split("."))) <= 63


def parse_host_entry(entry: str) -> tuple[str, int | None]:
    """``(host, port)`` of an entry ``host``, ``host:port`` or ``[v6]:port``; port None = any.

    Raises ValueError naming ``SPECVIZ_ENGINE_HOSTS`` for anything else (a scheme, a path, user info, a bad port).
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
    """``url`` as messages quote it: without user info (passwords stay out) or fragment."""
    return str(url.copy_with(userinfo=b"", fragment=None))

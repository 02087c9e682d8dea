"""Fetching a typed URL: checked, redirects followed by hand, the body capped, all within one deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from specviz.base.i18n import N_, Phrase
from specviz.servers.fetch.body import ACCEPT_ENCODING, Fetched, _chunks, _decode, _Lines, _read_body, text_codec
from specviz.servers.fetch.deadline import _BUDGET, _Budget, make_client, timeouts
from specviz.servers.fetch.errors import FetchError, _explain, _snippet
from specviz.servers.fetch.hosts import DEFAULT_PORTS, _host_key, _shown, format_host_entry
from specviz.servers.fetch.policy import FetchPolicy, check_url


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
    """The final answer (status < 400) of ``url`` under ``policy``; ``client`` None: a :func:`make_client`.

    Raises FetchError: the URL or a redirect refused, too many redirects, https → http, a decoded body over
    ``max_bytes``, an encoding other than gzip or deflate, over ``total_s``, a connection, DNS, TLS or timeout
    failure, or HTTP status ≥ 400 (``status`` set).
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
    """:func:`fetch` by the same rules, each line (bytes, no LF/CRLF) of a final answer < 400 to ``on_line`` as it
    arrives; what ``on_line`` raises propagates. ``body`` is empty. Raises FetchError as :func:`fetch`."""
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
    """:func:`fetch` (``on_line`` None) and :func:`fetch_stream`."""
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

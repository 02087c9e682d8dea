"""One ``POST /v1/completions`` request through fetch's rules, and its answer read as it streams.

Server-sent events ``data: {json}`` … ``data: [DONE]``; counts from the last ``usage``, else llama.cpp's ``timings``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx

from specviz.base.i18n import Message
from specviz.servers.fetch import Fetched, FetchError, FetchPolicy, fetch, fetch_stream
from specviz.servers.loadgen.spec import LoadSpec

_SSE_FIELDS = (b"data:", b":", b"event:", b"id:", b"retry:")  #: how a line of server-sent events begins


def completions_url(base_url: str) -> str:
    """``…/v1/completions`` kept, ``…/v1`` + ``/completions``, else + ``/v1/completions`` (trailing / dropped)."""
    base = base_url.strip().rstrip("/")
    if base.endswith("/v1/completions"):
        return base
    return base + ("/completions" if base.endswith("/v1") else "/v1/completions")


def metrics_url(base_url: str) -> str:
    """The server's ``/metrics``: :func:`completions_url` with ``/v1/completions`` replaced by ``/metrics``."""
    return completions_url(base_url).removesuffix("/v1/completions") + "/metrics"


def payload(spec: LoadSpec, request: int) -> dict[str, Any]:
    """The JSON body of request ``request``; streamed with ``stream_options.include_usage`` (``usage`` at the end)."""
    body: dict[str, Any] = {
        "prompt": spec.prompts[request % len(spec.prompts)],
        "max_tokens": spec.tokens_asked(request),
        "temperature": spec.temperature,
        "stream": spec.stream,
    }
    if spec.stream:
        body["stream_options"] = {"include_usage": True}
    if spec.model:
        body["model"] = spec.model
    return body


def _count(x) -> int | None:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 else None


def completion_counts(body: Any) -> tuple[int | None, int | None, int | None]:
    """(``usage.completion_tokens`` else ``timings.predicted_n``, ``draft_n``, ``draft_n_accepted``); None: unknown.

    ValueError when ``body`` is no JSON object or carries an ``error``.
    """
    if not isinstance(body, dict):
        raise Message("the answer is not a completions response: {body}", body=f"{body!s:.120}")
    if body.get("error") is not None and "choices" not in body:
        raise Message("the server answered an error: {error}", error=f"{body['error']!s:.200}")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    timings = body.get("timings") if isinstance(body.get("timings"), dict) else {}
    tokens = _count(usage.get("completion_tokens"))
    if tokens is None:
        tokens = _count(timings.get("predicted_n"))
    return tokens, _count(timings.get("draft_n")), _count(timings.get("draft_n_accepted"))


def _prompt_tokens(body: Mapping) -> int | None:
    """``usage.prompt_tokens``, else llama.cpp's ``timings.prompt_n``; None where neither is given."""
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    timings = body.get("timings") if isinstance(body.get("timings"), dict) else {}
    tokens = _count(usage.get("prompt_tokens"))
    return tokens if tokens is not None else _count(timings.get("prompt_n"))


@dataclass(frozen=True)
class _Answer:
    """What one answer said: its counts, and when each chunk that carried text arrived."""

    tokens: int | None  #: completion tokens (None: unknown)
    estimated: bool  #: ``tokens`` is the number of chunks with text (the server reported no count)
    draft_n: int | None
    draft_n_accepted: int | None
    prompt_tokens: int | None
    chunk_times: tuple[float, ...]  #: ``perf_counter`` at the arrival of each chunk with text
    streamed: bool  #: the answer came as server-sent events


class _StreamReader:
    """:func:`fetch_stream`'s ``on_line`` for one answer: times each ``data:`` chunk with non-empty text.

    Other event lines are skipped; an answer whose first line is no event is kept whole and read as JSON.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._times: list[float] = []
        self._sse: bool | None = None  # None until the first non-blank line
        self._plain: list[bytes] = []
        self._last: dict[str, Any] = {}  # the last usage and timings seen

    @property
    def untouched(self) -> bool:
        """No line of an answer has arrived."""
        return self._sse is None and not self._plain

    def __call__(self, line: bytes) -> None:
        at = self._clock()
        if self._sse is None:
            if not line.strip():
                return
            self._sse = line.lstrip().startswith(_SSE_FIELDS)
        if not self._sse:
            self._plain.append(line)
            return
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            return
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python recurses
            raise Message("the stream sent an event that is not JSON: {line}", line=f"{line!r:.120}") from None
        if not isinstance(chunk, dict):
            raise Message("the answer is not a completions response: {body}", body=f"{chunk!s:.120}")
        if chunk.get("error") is not None and not chunk.get("choices"):  # vLLM reports a failure mid-stream so
            raise Message("the server answered an error: {error}", error=f"{chunk['error']!s:.200}")
        choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
        if any(isinstance(c, dict) and isinstance(c.get("text"), str) and c["text"] for c in choices):
            self._times.append(at)
        for key in ("usage", "timings"):
            if isinstance(chunk.get(key), dict):
                self._last[key] = chunk[key]

    def answer(self, fetched: Fetched) -> _Answer:
        """The answer once the stream has ended."""
        if not self._sse:
            body = replace(fetched, body=b"\n".join(self._plain)).json()  # FetchError when it is not JSON
            tokens, draft_n, accepted = completion_counts(body)
            return _Answer(tokens, False, draft_n, accepted, _prompt_tokens(body), (), streamed=False)
        tokens, draft_n, accepted = completion_counts(self._last)
        estimated = tokens is None
        if estimated:
            tokens = len(self._times)
        return _Answer(tokens, estimated, draft_n, accepted, _prompt_tokens(self._last), tuple(self._times), True)


def _send(url: str, spec: LoadSpec, policy: FetchPolicy, client: httpx.Client, request: int) -> _Answer:
    """Send request ``request`` and read its answer, streamed or whole."""
    body = payload(spec, request)
    if not spec.stream:
        whole = fetch(url, policy, method="POST", json=body, client=client).json()
        tokens, draft_n, accepted = completion_counts(whole)
        return _Answer(tokens, False, draft_n, accepted, _prompt_tokens(whole), (), streamed=False)
    for attempt in range(2):
        reader = _StreamReader()
        try:
            fetched = fetch_stream(url, policy, method="POST", json=body, client=client, on_line=reader)
        except FetchError as exc:
            # A kept-alive connection the server closed meanwhile (llama.cpp's server does, between streamed
            # answers): it went away before answering anything, so the request was never read; send it once
            # more, on a fresh connection. Anything else, or a second break, is the request's error.
            stale = isinstance(exc.__cause__, httpx.RemoteProtocolError) and reader.untouched
            if attempt == 0 and stale:
                continue
            raise
        return reader.answer(fetched)
    raise AssertionError("unreachable")  # pragma: no cover

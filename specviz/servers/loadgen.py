"""A bounded load generator for OpenAI-compatible servers (``POST /v1/completions``), measuring what
serving benchmarks measure.

The Engine monitor page sends load to an inference server (vLLM, SGLang, llama.cpp, TensorRT-LLM)
while it reads the server's ``/metrics``, and compares two runs: with speculative decoding and without
(:func:`measured_speedup`). :func:`run_load` sends :class:`LoadSpec`'s prompts in turn until
``max_requests`` have been sent, ``max_seconds`` have passed or the ``stop`` event is set; requests in
flight then finish (or time out) and no new one starts. Two ways to send them:

- **closed loop** (``rate`` None): ``concurrency`` requests in flight, a new one as soon as one ends;
- **open loop** (``rate`` λ requests/s): request i arrives at t_i, a Poisson process (:func:`arrival_times`),
  and is sent then whether or not earlier ones have finished, at most ``concurrency`` in flight (it waits
  for a free slot when all are taken), as ``vllm bench serve --request-rate λ --max-concurrency C`` sends.

Requests are streamed (``"stream": true`` with ``stream_options.include_usage``: server-sent events
``data: {json}`` ending with ``data: [DONE]``), and each is measured as vllm/benchmarks/serve.py
(``calculate_metrics``) and its OpenAI completions request function measure it:

- TTFT: from sending the request to the first chunk that carries generated text;
- ITL: the gaps between successive chunks that carry text. Under speculation one chunk may carry
  several tokens, so ITL is not TPOT;
- E2E latency: from sending to the end of the answer;
- TPOT (per request with more than one output token): (E2E − TTFT) / (output tokens − 1);
- output tokens: the final ``usage.completion_tokens``, else llama.cpp's ``timings.predicted_n``, else
  the number of chunks that carried text (``tokens_estimated``);
- output throughput = Σ output tokens / wall time; request throughput = completed requests / wall time.

Differences from vllm: its TTFT counts a first chunk with empty text, here the first with text; an
empty statistic is NaN here (0 there); and an open loop's arrival times are not rescaled so that the last
falls at n / λ (vllm rescales them). Like vllm, the wait for a free slot in an open loop is not part of
TTFT (vllm keeps it apart as ``client_queue_time``): it is the records' ``queue_s``.

Every request goes through :func:`specviz.servers.fetch.fetch_stream` (or :func:`~specviz.servers.fetch.fetch`
when ``stream`` is False), so the deployment's allow-list, redirect checks, size cap (on the bytes
streamed) and timeouts apply to load as to polling: the read timeout bounds each pause of a stream, the
policy's total time a whole completion. A server that answers a streamed request with one JSON body
(it ignores ``stream``) is read as a non-streamed answer (no TTFT for it).

Why threads: ``concurrency`` worker threads, each sending blocking requests over one shared pooled
``httpx.Client``. At most 64 requests in flight, so 64 threads cost little; the blocking fetch
(the one code path of the rules) is reused as is; no event loop has to coexist with Streamlit's; and the
calling thread — the page's script thread — collects the results and is the only one that calls
``progress``, so the callback may draw with Streamlit. In an open loop a free worker takes the next
request and waits for its arrival time: requests are sent in arrival order, each at its arrival time or,
when all workers are busy, as soon as one is free.

:func:`load_record` turns a run into a row of the measurement schema (the run library).

No streamlit here.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.servers.fetch import Fetched, FetchError, FetchPolicy, check_url, fetch, fetch_stream, make_client
from specviz.servers.telemetry import Window, to_record

__all__ = [
    "COLUMNS",
    "LIMITS",
    "RATE_RANGE",
    "STOP_REASONS",
    "LoadProgress",
    "LoadResult",
    "LoadSpec",
    "Percentiles",
    "arrival_times",
    "bundled_prompts",
    "completion_counts",
    "completions_url",
    "load_record",
    "measured_speedup",
    "metrics_url",
    "parse_rate",
    "payload",
    "percentiles",
    "run_load",
    "summarize",
    "tpot",
]

#: Allowed ranges (inclusive) of :class:`LoadSpec`'s bounds.
LIMITS: Mapping[str, tuple[int, int]] = {
    "concurrency": (1, 64),
    "max_requests": (1, 10_000),
    "max_seconds": (1, 3600),
    "max_tokens": (1, 4096),
    "seed": (0, 2**32 - 1),
}
TEMPERATURE_RANGE = (0.0, 2.0)  #: the OpenAI API's range
RATE_RANGE = (0.01, 1000.0)  #: allowed open-loop arrival rates, requests/s (inclusive)
STOP_REASONS = ("requests", "time", "stop")  #: why a run stopped: request limit, time limit, stop event
ERRORS_KEPT = 5  #: distinct error messages a result keeps
#: Columns of :attr:`LoadResult.records`, one row per request sent.
COLUMNS = (
    "request",
    "prompt_index",
    "start_s",
    "end_s",
    "latency_s",
    "ok",
    "completion_tokens",
    "draft_n",
    "draft_n_accepted",
    "error",
    "arrival_s",  # open loop: the scheduled arrival, seconds since the start (NaN in a closed loop)
    "queue_s",  # open loop: start_s − arrival_s, the wait for a free slot (NaN in a closed loop)
    "ttft_s",  # time to the first chunk with text (NaN: not streamed, failed, or no text)
    "tpot_s",  # (latency_s − ttft_s) / (completion_tokens − 1) (NaN unless streamed with > 1 token)
    "n_chunks",  # chunks that carried text (NA: not streamed)
    "chunk_s",  # the arrival of each of them, seconds since the start (a tuple; empty when none)
    "itl_s",  # the gaps between them, seconds (a tuple of n_chunks − 1)
    "tokens_estimated",  # completion_tokens is the chunk count: the server reported no token count
    "prompt_tokens",  # the server's usage.prompt_tokens (else llama.cpp's timings.prompt_n)
    "prompt_chars",  # characters of the prompt sent
    "streamed",  # the answer came as server-sent events
)
#: What a row lacks of :data:`COLUMNS` reads as (rows from before streaming, or made by hand).
_ROW_DEFAULTS: Mapping[str, Any] = {
    "arrival_s": math.nan,
    "queue_s": math.nan,
    "ttft_s": math.nan,
    "tpot_s": math.nan,
    "n_chunks": None,
    "chunk_s": (),
    "itl_s": (),
    "tokens_estimated": False,
    "prompt_tokens": None,
    "prompt_chars": None,
    "streamed": False,
}


def _is_int(x) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


@dataclass(frozen=True)
class LoadSpec:
    """What one load run sends; checked on construction (ValueError naming the field, value and range).

    Parameters
    ----------
    base_url
        The server's URL: ``http://host:port``, ``…/v1`` or the full ``…/v1/completions``
        (:func:`completions_url`); checked against the fetch policy when the run starts.
    prompts
        Prompts sent in turn (request ``i`` sends prompt ``i mod len(prompts)``); stored as a tuple.
    model
        The ``model`` field of each request: vLLM, SGLang and TensorRT-LLM need the served model's
        name; llama.cpp ignores it. None or "" sends none.
    max_tokens
        Completion tokens asked for per request, 1..4096; or one such number per request in turn
        (request ``i`` asks ``max_tokens[i mod len(max_tokens)]``), for output lengths drawn from a
        distribution as serving benchmarks draw them (stored as a tuple).
    temperature
        Sampling temperature, 0..2 (0: greedy).
    concurrency
        Requests in flight at once, 1..64: always in a closed loop, at most in an open loop.
    max_requests
        Requests sent at most, 1..10000.
    max_seconds
        No request starts after this many seconds, 1..3600.
    stream
        Stream each completion (server-sent events) and measure TTFT, ITL and TPOT. False, for a server
        that cannot stream: each answer comes whole, so TTFT, ITL and TPOT are NaN (E2E latency and
        throughput are still measured).
    rate
        None: a closed loop. Else an open loop: Poisson arrivals at this many requests per second,
        0.01..1000 (:func:`arrival_times`).
    seed
        Seeds the open loop's arrival times (the same seed, the same schedule), 0..2³² − 1.
    """

    base_url: str
    prompts: Sequence[str]
    model: str | None = None
    max_tokens: int | Sequence[int] = 128
    temperature: float = 0.0
    concurrency: int = 4
    max_requests: int = 100
    max_seconds: float = 60.0
    stream: bool = True
    rate: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.prompts, str) or not isinstance(self.prompts, Sequence):
            raise Message("prompts must be a list of strings; got {prompts!r:.80}", prompts=self.prompts)
        object.__setattr__(self, "prompts", tuple(self.prompts))
        if isinstance(self.max_tokens, Sequence) and not isinstance(self.max_tokens, str):
            object.__setattr__(self, "max_tokens", tuple(self.max_tokens))
        if isinstance(self.model, str):
            object.__setattr__(self, "model", self.model.strip() or None)
        self.check()

    def check(self) -> None:
        """ValueError naming the first field out of its range (:data:`LIMITS`)."""
        if not isinstance(self.base_url, str) or not self.base_url.strip():
            raise Message(
                "base_url must be the server's URL, e.g. http://localhost:8000; got {url!r}", url=self.base_url
            )
        if not self.prompts:
            raise Message("prompts must hold at least one prompt; got none")
        for i, p in enumerate(self.prompts):
            if not isinstance(p, str) or not p.strip():
                raise Message("prompts[{i}] must be a non-empty string; got {prompt!r:.80}", i=i, prompt=p)
        if self.model is not None and not isinstance(self.model, str):
            raise Message("model must be a model name or None; got {model!r}", model=self.model)
        if isinstance(self.max_tokens, tuple) and not self.max_tokens:
            raise Message("max_tokens must hold at least one number of tokens; got none")
        for name, (lo, hi) in LIMITS.items():
            values = getattr(self, name)
            value = (
                next((v for v in values if not (_is_int(v) and lo <= v <= hi)), values[0])
                if isinstance(values, tuple)
                else values
            )
            number = _is_int(value) or (name == "max_seconds" and isinstance(value, float) and math.isfinite(value))
            if not number or not lo <= value <= hi:
                key = (
                    N_("{name} must be a number of seconds in {lo}..{hi}; got {value!r}")
                    if name == "max_seconds"
                    else N_("{name} must be an integer in {lo}..{hi}; got {value!r}")
                )
                raise Message(key, name=name, lo=lo, hi=hi, value=value)
        t, (lo, hi) = self.temperature, TEMPERATURE_RANGE
        if isinstance(t, bool) or not isinstance(t, int | float) or not lo <= t <= hi:
            raise Message("temperature must be a number in {lo:g}..{hi:g}; got {t!r}", lo=lo, hi=hi, t=t)
        if not isinstance(self.stream, bool):
            raise Message("stream must be True or False; got {value!r}", value=self.stream)
        if self.rate is not None:
            _check_rate(self.rate)

    def tokens_asked(self, request: int) -> int:
        """The completion tokens request number ``request`` asks for (:attr:`max_tokens`, in turn)."""
        if isinstance(self.max_tokens, tuple):
            return int(self.max_tokens[request % len(self.max_tokens)])
        return int(self.max_tokens)

    @property
    def mode(self) -> str:
        """``"open"`` (arrivals at ``rate``) or ``"closed"`` (``concurrency`` requests always in flight)."""
        return "closed" if self.rate is None else "open"


def _check_rate(value) -> float:
    """``value`` as a rate in :data:`RATE_RANGE`; else the Message naming the field, the value and the range."""
    lo, hi = RATE_RANGE
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not lo <= value <= hi:
        raise Message(
            "rate must be a number of requests per second in {lo:g}..{hi:g}, or none for a closed loop; got {value!r}",
            lo=lo,
            hi=hi,
            value=value,
        )
    return float(value)


def parse_rate(text: str) -> float | None:
    """A rate typed on a page: empty → None (a closed loop), else a number in :data:`RATE_RANGE`.

    ValueError naming the field, the value and the range otherwise (the message :class:`LoadSpec` gives).
    """
    typed = str(text).strip()
    if not typed:
        return None
    try:
        value = float(typed)
    except ValueError:
        value = typed  # not a number: the message quotes what was typed
    return _check_rate(value)


@dataclass(frozen=True)
class LoadProgress:
    """A run so far, as :func:`run_load` reports it after each finished request."""

    done: int  #: requests finished, failed ones included
    failed: int  #: of those, failed
    tokens: int  #: completion tokens of the successful ones
    elapsed_s: float  #: seconds since the run started
    tokens_per_s: float  #: tokens / elapsed_s


@dataclass(frozen=True)
class Percentiles:
    """The mean and the 50th, 90th and 99th percentiles of ``n`` values (seconds); NaN when n = 0."""

    n: int
    mean: float
    p50: float
    p90: float
    p99: float


def percentiles(values: Iterable[float]) -> Percentiles:
    """:class:`Percentiles` of the finite ``values`` (NaN ones are left out).

    Percentiles by ``np.percentile``'s default linear interpolation, as vllm/benchmarks/serve.py
    (``calculate_metrics``) computes them; without values every statistic is NaN (vllm reports 0).
    """
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return Percentiles(0, math.nan, math.nan, math.nan, math.nan)
    p50, p90, p99 = (float(q) for q in np.percentile(x, [50, 90, 99]))
    return Percentiles(int(x.size), float(x.mean()), p50, p90, p99)


@dataclass(frozen=True, eq=False)
class LoadResult:
    """A finished run: counts, throughput, latency and the per-request records.

    ``tokens_per_s`` = ``tokens`` / ``wall_s``, where ``wall_s`` runs from the start of the run to the
    end of its last request. Latencies (seconds, successful requests only; NaN without any): mean, and
    the 50th and 95th percentiles (linear interpolation). ``tokens`` counts the completion tokens the
    successful requests reported; ``tokens_unknown`` of them reported none (and add 0).

    The serving statistics (module docstring; vllm/benchmarks/serve.py ``calculate_metrics``), over the
    successful requests: ``ttft``, ``tpot`` (requests with more than one token), ``itl`` (every gap of
    every request, pooled) and ``e2e`` (:class:`Percentiles`, seconds; NaN without data, so TTFT, TPOT and
    ITL are NaN when nothing was streamed); ``queue`` over every request sent in an open loop.
    ``output_tokens_per_s`` (= ``tokens_per_s``, vllm's output throughput) and ``requests_per_s`` =
    successful requests / ``wall_s`` (vllm's request throughput).
    """

    spec: LoadSpec
    done: int  #: requests finished, failed ones included
    failed: int
    tokens: int
    tokens_unknown: int
    wall_s: float
    tokens_per_s: float
    latency_mean_s: float
    latency_p50_s: float
    latency_p95_s: float
    records: pd.DataFrame = field(repr=False)  #: one row per request (:data:`COLUMNS`), by request number
    errors: tuple[tuple[str, int], ...]  #: up to :data:`ERRORS_KEPT` distinct messages, first seen first, with counts
    stopped_by: str  #: one of :data:`STOP_REASONS`
    ttft: Percentiles  #: time to first token, s
    tpot: Percentiles  #: time per output token after the first, s
    itl: Percentiles  #: inter-token (inter-chunk) latency, s
    e2e: Percentiles  #: end-to-end latency, s
    queue: Percentiles  #: open loop: the wait for a free slot, s (NaN in a closed loop)
    requests_per_s: float  #: successful requests / wall_s
    tokens_estimated: int  #: successful requests whose token count is their chunk count (no count reported)
    prompt_chars_mean: float  #: mean characters of the prompts sent
    prompt_tokens_mean: float  #: mean prompt tokens, where the server reported them (NaN: none did)
    output_tokens_mean: float  #: mean completion tokens of the successful requests that have a count

    def tokens_asked(self, request: int) -> int:
        """The completion tokens request number ``request`` asks for (:attr:`max_tokens`, in turn)."""
        if isinstance(self.max_tokens, tuple):
            return int(self.max_tokens[request % len(self.max_tokens)])
        return int(self.max_tokens)

    @property
    def mode(self) -> str:
        """``"closed"`` or ``"open"`` (:attr:`LoadSpec.mode`)."""
        return self.spec.mode

    @property
    def concurrency(self) -> int:
        """Requests in flight: always (closed loop) or at most (open loop)."""
        return self.spec.concurrency

    @property
    def rate(self) -> float | None:
        """The open loop's arrival rate, requests/s (None: a closed loop)."""
        return self.spec.rate

    @property
    def output_tokens_per_s(self) -> float:
        """Σ output tokens / wall time (vllm's ``output_throughput``): :attr:`tokens_per_s`."""
        return self.tokens_per_s

    @property
    def succeeded(self) -> int:
        """Requests answered with a completion."""
        return self.done - self.failed

    @property
    def all_failed(self) -> bool:
        """True when requests were sent and none succeeded."""
        return self.done > 0 and self.failed == self.done

    @property
    def draft_acceptance(self) -> float | None:
        """Σ draft_n_accepted / Σ draft_n over requests that report llama.cpp's ``timings`` drafts; else None."""
        n = self.records["draft_n"].sum()
        return float(self.records["draft_n_accepted"].sum() / n) if n > 0 else None

    def summary(self) -> str:
        """One line for a person: what was sent, what came back, why it stopped; TTFT and TPOT p50 when streamed.

        A :class:`~specviz.base.i18n.Phrase`: English as a str, any language on a page (``ui.message``).
        """
        why = {
            "requests": Phrase("the request limit"),
            "time": Phrase("the time limit"),
            "stop": Phrase(N_("Stop")),
        }[self.stopped_by]
        if self.done == 0:
            return Phrase("no request was sent (stopped by {why})", why=why)
        if self.all_failed:
            first = self.errors[0][0] if self.errors else "?"
            return Phrase("all {done} requests failed; first error: {first}", done=self.done, first=first)
        line = Phrase(
            N_(
                "{done} requests ({failed} failed) in {wall_s:.1f} s: {tokens} completion tokens, {tokens_per_s:.1f} tokens/s, latency p50 {p50:.2f} s, p95 {p95:.2f} s; stopped by {why}"
            )
            if self.failed
            else N_(
                "{done} requests in {wall_s:.1f} s: {tokens} completion tokens, {tokens_per_s:.1f} tokens/s, latency p50 {p50:.2f} s, p95 {p95:.2f} s; stopped by {why}"
            ),
            done=self.done,
            failed=self.failed,
            wall_s=self.wall_s,
            tokens=self.tokens,
            tokens_per_s=self.tokens_per_s,
            p50=self.latency_p50_s,
            p95=self.latency_p95_s,
            why=why,
        )
        if not self.ttft.n:  # nothing streamed: no TTFT or TPOT to tell
            return line
        return Phrase(
            "{summary}; TTFT p50 {ttft} ms, TPOT p50 {tpot} ms",
            summary=line,
            ttft=_ms(self.ttft.p50),
            tpot=_ms(self.tpot.p50),
        )


def _ms(seconds: float) -> str:
    """Seconds as milliseconds with one decimal; "—" for NaN."""
    return f"{seconds * 1e3:.1f}" if math.isfinite(seconds) else "—"


def bundled_prompts() -> list[str]:
    """The prompts bundled with specviz, as the CLI and the live page load them (:func:`specviz.engine.bench.load_prompts`)."""
    from specviz.engine import bench  # imports torch: only when asked for

    return bench.load_prompts()


def completions_url(base_url: str) -> str:
    """The completions endpoint of ``base_url``: ``…/v1/completions`` kept, ``…/v1`` + ``/completions``,
    anything else + ``/v1/completions`` (trailing slashes dropped)."""
    base = base_url.strip().rstrip("/")
    if base.endswith("/v1/completions"):
        return base
    return base + ("/completions" if base.endswith("/v1") else "/v1/completions")


def metrics_url(base_url: str) -> str:
    """The ``/metrics`` URL of the server ``base_url`` names: its :func:`completions_url` without
    ``/v1/completions``, + ``/metrics`` (where vLLM, SGLang and llama.cpp serve their counters)."""
    return completions_url(base_url).removesuffix("/v1/completions") + "/metrics"


def payload(spec: LoadSpec, request: int) -> dict[str, Any]:
    """The JSON body of request number ``request``: prompt ``request mod len(prompts)``, the completion
    tokens :meth:`LoadSpec.tokens_asked` says, ``model`` when given.

    Streamed (``spec.stream``): ``"stream": true`` and ``"stream_options": {"include_usage": true}``, so
    the last event carries ``usage`` (OpenAI's API; vLLM, SGLang and TensorRT-LLM honour it, and llama.cpp
    sends ``usage`` and ``timings`` in its last event regardless).
    """
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
    """``(completion tokens, draft_n, draft_n_accepted)`` of a ``/v1/completions`` answer; None where unknown.

    Completion tokens come from ``usage.completion_tokens``, else llama.cpp's ``timings.predicted_n``;
    the draft counts from llama.cpp's ``timings`` (present when it runs with a draft model).
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
    """The prompt's tokens in an answer (or a streamed answer's last ``usage`` and ``timings``):
    ``usage.prompt_tokens``, else llama.cpp's ``timings.prompt_n``; None where neither is given."""
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


_SSE_FIELDS = (b"data:", b":", b"event:", b"id:", b"retry:")  #: how a line of server-sent events begins


class _StreamReader:
    """Reads one ``/v1/completions`` answer line by line as it arrives (:func:`fetch_stream`'s ``on_line``).

    Server-sent events: ``data: {json}`` lines (one JSON chunk each, as OpenAI-compatible servers send
    them), ``data: [DONE]`` at the end; blank lines, comments (``:``) and ``event:`` / ``id:`` / ``retry:``
    lines are skipped. A chunk carries text when a choice's ``text`` is non-empty; its arrival time is
    taken when its line arrives. The last ``usage`` and ``timings`` seen give the counts. An answer whose
    first line is no event (a server that ignores ``stream``) is kept whole and read as one JSON answer.
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
        """The answer, once the stream has ended (``fetched``: what :func:`fetch_stream` returned)."""
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
    """Send request number ``request`` (:func:`payload`) and read its answer: streamed
    (:func:`fetch_stream`) or whole (:func:`fetch`)."""
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


def tpot(e2e_s: float, ttft_s: float, tokens: int | None) -> float:
    """Time per output token after the first: (E2E − TTFT) / (tokens − 1), seconds.

    As vllm/benchmarks/serve.py (``calculate_metrics``): defined for a request with more than one output
    token; NaN otherwise, or where TTFT is unknown (the answer was not streamed).
    """
    if tokens is None or tokens <= 1 or not math.isfinite(ttft_s) or not math.isfinite(e2e_s):
        return math.nan
    return (e2e_s - ttft_s) / (tokens - 1)


def arrival_times(rate: float, n: int, seed: int = 0) -> np.ndarray:
    """(n,) arrival times of an open loop, seconds from its start: a Poisson process of rate λ = ``rate``.

    t_i = g_1 + … + g_i with gaps g_j ~ Exp(λ) independent (mean 1 / λ), drawn from
    ``np.random.default_rng(seed)``: the same seed gives the same schedule. As vllm/benchmarks/serve.py
    (``get_request`` with burstiness 1, whose gamma(1, 1/λ) gaps are Exp(λ)), the first request waits its
    gap too; unlike it, the times are not rescaled so that the last falls at n / λ.
    """
    rate = _check_rate(rate)
    if not _is_int(n) or n < 0:
        raise Message("n must be an integer >= 0; got {n!r}", n=n)
    return np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, size=int(n)))


class _Gate:
    """Hands out request numbers until the request limit, the deadline or the stop event; remembers which.

    In an open loop it also holds each request's arrival time (``arrivals``, ``perf_counter`` seconds),
    and no request whose arrival falls at or after the deadline is handed out.
    """

    def __init__(
        self, max_requests: int, deadline: float, stop: threading.Event | None, arrivals: np.ndarray | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._issued, self._max, self._deadline, self._stop = 0, max_requests, deadline, stop
        self._arrivals = arrivals
        self._closed = threading.Event()  # set by close(): wakes the workers waiting for an arrival
        self.reason: str | None = None

    def claim(self) -> tuple[int, float, float | None] | None:
        """The next request number, the time it is issued (``perf_counter``, before the deadline) and its
        arrival time (None in a closed loop), or None once the run is over (:attr:`reason` then says why)."""
        with self._lock:
            now = time.perf_counter()
            due = None if self._arrivals is None or self._issued >= self._max else float(self._arrivals[self._issued])
            if self.reason is None:
                if self._stop is not None and self._stop.is_set():
                    self.reason = "stop"
                elif self._issued >= self._max:
                    self.reason = "requests"
                elif now >= self._deadline or (due is not None and due >= self._deadline):
                    self.reason = "time"
            if self.reason is not None:
                return None
            self._issued += 1
            return self._issued - 1, now, due

    def wait_until(self, due: float) -> bool:
        """Sleep until ``due`` (``perf_counter``); False, at once, when the run is stopped meanwhile (the stop
        event, or :meth:`close`). The stop event is looked at every 20 ms; :meth:`close` wakes the wait at once.
        """
        while (left := due - time.perf_counter()) > 0:
            if self._stop is not None and self._stop.is_set():
                self.close("stop")
            if self._closed.is_set():  # stopped; not "requests" or "time": those end the handing out only
                return False
            self._closed.wait(min(left, 0.02))
        return not self._closed.is_set()

    def close(self, reason: str) -> None:
        """Start no new request (``reason`` unless the run already stopped for another)."""
        with self._lock:
            self.reason = self.reason or reason
        self._closed.set()


def _worker(
    url: str,
    spec: LoadSpec,
    policy: FetchPolicy,
    client: httpx.Client,
    gate: _Gate,
    t0: float,
    finished: queue.Queue,
) -> None:
    """Send requests while :meth:`_Gate.claim` hands out numbers (each at its arrival time in an open loop);
    put one record per request on ``finished``."""
    try:
        while (claimed := gate.claim()) is not None:
            i, _issued, due = claimed
            if due is not None and not gate.wait_until(due):
                break  # stopped while the request waited for its arrival: it is not sent
            index = i % len(spec.prompts)
            answer = error = None
            start = time.perf_counter()  # as vllm's request function: the clock starts as the request is sent
            try:
                answer = _send(url, spec, policy, client, i)
            except (ValueError, httpx.HTTPError) as exc:  # FetchError is a ValueError
                error = _said(exc)
            end = time.perf_counter()
            finished.put(_row(i, index, spec, t0, due, start, end, answer, error))
    except BaseException:
        gate.close("stop")  # a bug here: the other workers stop too, and run_load re-raises it
        raise


def _row(
    i: int,
    index: int,
    spec: LoadSpec,
    t0: float,
    due: float | None,
    start: float,
    end: float,
    answer: _Answer | None,
    error: str | None,
) -> dict:
    """One request's record (:data:`COLUMNS`); times in ``perf_counter`` seconds, stored relative to ``t0``.

    TTFT = first chunk with text − start, ITL = the differences of successive chunk times, E2E = end − start,
    TPOT = :func:`tpot`; all NaN for a failed request, and TTFT, ITL and TPOT for an answer not streamed.
    """
    times = np.asarray(answer.chunk_times if answer is not None and error is None else (), dtype=float)
    streamed = answer is not None and answer.streamed and error is None
    ttft = float(times[0] - start) if times.size else math.nan
    e2e = end - start
    tokens = answer.tokens if answer is not None else None
    return dict(
        request=i,
        prompt_index=index,
        start_s=start - t0,
        end_s=end - t0,
        latency_s=e2e,
        ok=error is None,
        completion_tokens=tokens,
        draft_n=answer.draft_n if answer is not None else None,
        draft_n_accepted=answer.draft_n_accepted if answer is not None else None,
        error=error,
        arrival_s=due - t0 if due is not None else math.nan,
        queue_s=start - due if due is not None else math.nan,
        ttft_s=ttft,
        tpot_s=tpot(e2e, ttft, tokens) if error is None else math.nan,
        n_chunks=int(times.size) if streamed else None,
        chunk_s=tuple(float(t) for t in times - t0),
        itl_s=tuple(float(g) for g in np.diff(times)),
        tokens_estimated=bool(answer is not None and answer.estimated),
        prompt_tokens=answer.prompt_tokens if answer is not None else None,
        prompt_chars=len(spec.prompts[index]),
        streamed=streamed,
    )


def _said(exc: Exception) -> str:
    """A failed request's message: a :class:`Message` as the :class:`Phrase` of its key and fields (English
    as a str, any language on a page), any other error as its str (its type's name when that is empty)."""
    if isinstance(exc, Message):
        return Phrase(exc.msgid, **exc.fields)
    return str(exc) or type(exc).__name__


def _records(rows: list[dict]) -> pd.DataFrame:
    """The rows as :data:`COLUMNS`, by request number; counts as nullable integers, chunk times and gaps as
    tuples. A row without the streaming columns (:data:`_ROW_DEFAULTS`) reads as a request not streamed."""
    full = [{**_ROW_DEFAULTS, **r} for r in rows]
    frame = pd.DataFrame(full, columns=list(COLUMNS))
    frame = frame.sort_values("request", kind="stable").reset_index(drop=True)
    types = dict.fromkeys(("request", "prompt_index"), "int64")
    types |= dict.fromkeys(("start_s", "end_s", "latency_s", "arrival_s", "queue_s", "ttft_s", "tpot_s"), "float64")
    types |= dict.fromkeys(
        ("completion_tokens", "draft_n", "draft_n_accepted", "n_chunks", "prompt_tokens", "prompt_chars"), "Int64"
    )
    types |= {"ok": "bool", "tokens_estimated": "bool", "streamed": "bool", "error": "object"}
    types |= {"chunk_s": "object", "itl_s": "object"}
    return frame.astype(types)


def _mean(values: pd.Series) -> float:
    """The mean of the known values; NaN when none is known."""
    known = values.dropna().to_numpy(dtype=float)
    return float(known.mean()) if known.size else math.nan


def summarize(spec: LoadSpec, rows: list[dict], wall_s: float, stopped_by: str) -> LoadResult:
    """A :class:`LoadResult` from per-request ``rows`` (keys :data:`COLUMNS`) and the run's wall time.

    As vllm/benchmarks/serve.py ``calculate_metrics`` (over the successful requests; ``wall_s`` is its
    ``dur_s``): ``tokens_per_s`` = Σ completion tokens / ``wall_s`` (its output throughput),
    ``requests_per_s`` = successful requests / ``wall_s`` (its request throughput), both NaN when
    ``wall_s`` is 0; TTFT, TPOT and E2E over the requests, ITL over every gap of every request pooled,
    each as :func:`percentiles`. ``queue`` covers every request sent (failed ones wait too).
    """
    if stopped_by not in STOP_REASONS:
        raise ValueError(f"stopped_by must be one of {STOP_REASONS}; got {stopped_by!r}")
    records = _records(rows)
    ok = records[records["ok"]]
    latencies = ok["latency_s"].to_numpy(dtype=float)
    tokens = int(ok["completion_tokens"].sum())
    errors: dict[str, int] = {}
    # from the rows, in request order: a message kept as a Phrase (the table's column holds plain str) stays one
    failed_rows = sorted((r for r in rows if not r["ok"]), key=lambda r: r["request"])
    for message in (r["error"] for r in failed_rows):
        if message in errors or len(errors) < ERRORS_KEPT:
            errors[message] = errors.get(message, 0) + 1
    stats = (
        (float(latencies.mean()), *(float(q) for q in np.percentile(latencies, [50, 95])))
        if latencies.size
        else (math.nan,) * 3
    )
    return LoadResult(
        spec=spec,
        done=len(records),
        failed=int((~records["ok"]).sum()),
        tokens=tokens,
        tokens_unknown=int(ok["completion_tokens"].isna().sum()),
        wall_s=float(wall_s),
        tokens_per_s=tokens / wall_s if wall_s > 0 else math.nan,
        latency_mean_s=stats[0],
        latency_p50_s=stats[1],
        latency_p95_s=stats[2],
        records=records,
        errors=tuple(errors.items()),
        stopped_by=stopped_by,
        ttft=percentiles(ok["ttft_s"]),
        tpot=percentiles(ok["tpot_s"]),
        itl=percentiles(gap for gaps in ok["itl_s"] for gap in gaps),
        e2e=percentiles(latencies),
        queue=percentiles(records["queue_s"]),
        requests_per_s=len(ok) / wall_s if wall_s > 0 else math.nan,
        tokens_estimated=int(ok["tokens_estimated"].sum()),
        prompt_chars_mean=_mean(records["prompt_chars"]),
        prompt_tokens_mean=_mean(ok["prompt_tokens"]),
        output_tokens_mean=_mean(ok["completion_tokens"]),
    )


def run_load(
    spec: LoadSpec,
    policy: FetchPolicy,
    *,
    stop: threading.Event | None = None,
    progress: Callable[[LoadProgress], None] | None = None,
    client: httpx.Client | None = None,
) -> LoadResult:
    """Send ``spec``'s load under ``policy`` and measure it; returns when the last request in flight ends.

    Parameters
    ----------
    spec
        Server, prompts, bounds, and how requests are sent: closed or open loop (``rate``), streamed or not.
    policy
        The fetch rules every request obeys (allow-list, timeouts, size cap, redirects). Its total time
        bounds one whole completion, streamed or not; its read timeout each pause of a stream.
    stop
        Set it (from any thread) to start no new request; those in flight finish or time out.
    progress
        Called in the calling thread after each finished request, with the run so far.
    client
        An httpx client to share (closed by the caller); None: one with ``spec.concurrency`` connections,
        closed at the end.

    Returns
    -------
    LoadResult
        Failed requests are counted, with their messages, and the run goes on; when all fail,
        :attr:`LoadResult.all_failed` and :meth:`LoadResult.summary` say so.

    Raises
    ------
    FetchError
        The completions URL of ``spec.base_url`` is refused by ``policy`` (before any request is sent).
    """
    url = check_url(completions_url(spec.base_url), policy)
    schedule = None if spec.rate is None else arrival_times(spec.rate, spec.max_requests, spec.seed)
    own = client is None
    if client is None:
        client = make_client(policy, max_connections=spec.concurrency)
    finished: queue.Queue = queue.Queue()
    rows: list[dict] = []
    done = failed = tokens = 0
    try:
        t0 = time.perf_counter()
        gate = _Gate(spec.max_requests, t0 + spec.max_seconds, stop, None if schedule is None else t0 + schedule)
        with ThreadPoolExecutor(max_workers=spec.concurrency, thread_name_prefix="specviz-load") as pool:
            workers = [
                pool.submit(_worker, url, spec, policy, client, gate, t0, finished) for _ in range(spec.concurrency)
            ]
            try:
                while not (all(w.done() for w in workers) and finished.empty()):
                    try:
                        row = finished.get(timeout=0.05)
                    except queue.Empty:
                        continue
                    rows.append(row)
                    done += 1
                    failed += not row["ok"]
                    tokens += row["completion_tokens"] or 0
                    if progress is not None:
                        elapsed = time.perf_counter() - t0
                        progress(LoadProgress(done, failed, tokens, elapsed, tokens / elapsed if elapsed > 0 else 0.0))
            except BaseException:
                gate.close("stop")  # the caller stopped (a Streamlit rerun raises in ``progress``): no new requests
                raise
            for w in workers:
                w.result()  # a worker's bug surfaces here
        wall_s = max((r["end_s"] for r in rows), default=time.perf_counter() - t0)
    finally:
        if own:
            client.close()
    return summarize(spec, rows, wall_s, gate.reason or "stop")


def measured_speedup(with_spec: LoadResult, without: LoadResult) -> float:
    """Throughput ratio of two runs: ``with_spec.tokens_per_s / without.tokens_per_s``.

    Raises ValueError naming the run that produced no completion tokens (its :meth:`~LoadResult.summary`).
    """
    for key, run in (
        (
            N_(
                "the run with speculative decoding has no completion tokens ({summary}); the speedup (tokens/s with ÷ tokens/s without) needs tokens in both runs"
            ),
            with_spec,
        ),
        (
            N_(
                "the run without speculative decoding has no completion tokens ({summary}); the speedup (tokens/s with ÷ tokens/s without) needs tokens in both runs"
            ),
            without,
        ),
    ):
        if run.tokens <= 0 or not run.tokens_per_s > 0:
            raise Message(key, summary=run.summary())
    return with_spec.tokens_per_s / without.tokens_per_s


#: The latency columns of a serving row: schema column → (the :class:`LoadResult` statistic, its percentile).
_LATENCY_COLUMNS: Mapping[str, tuple[str, str]] = {
    f"{stat}_{q}_ms": (stat, q) for stat in ("ttft", "tpot", "itl") for q in ("p50", "p90", "p99")
}


def load_record(
    result: LoadResult,
    *,
    label: str,
    k: int | None = None,
    window: Window | None = None,
    baseline: LoadResult | None = None,
    c: float | None = None,
    method: str | None = None,
    source: str = "",
) -> dict:
    """The run as one row of the measurement schema (for :func:`specviz.data.measurements.load_records`).

    A row needs K and an acceptance figure or a speedup (docs/measurement-schema.md):

    - with ``window`` (the engine's speculative counters over the run, :func:`~specviz.servers.telemetry.window`
      of a reading before and one after): :func:`~specviz.servers.telemetry.to_record`'s row: K (``k``,
      else the engine's), E[N], the acceptance rate and the per-position rates;
    - without: K is ``k``, and the acceptance rate r = Σ draft_n_accepted / Σ draft_n where llama.cpp
      reported its drafts (:attr:`LoadResult.draft_acceptance`);
    - with ``baseline`` (the same load on the target without speculation): speedup =
      :func:`measured_speedup` (output tokens/s with ÷ without).

    The serving columns follow: ``concurrency``, ``request_rate`` (an open loop's λ), ``prompt_tokens``
    and ``output_tokens`` (means per request, where known), ``ttft_*_ms``, ``tpot_*_ms`` and ``itl_*_ms``
    (p50, p90, p99 in milliseconds, where measured: a streamed run), and ``tokens_per_s`` = the run's
    output throughput (Σ output tokens / wall time, vllm's ``output_throughput``; it replaces the
    window's engine-side figure: it covers exactly this run), with ``temperature``, the model and notes.

    Raises
    ------
    ValueError
        (a :class:`~specviz.base.i18n.Message`) K is not known, or the run has no acceptance figure and
        no speedup; or what :func:`to_record` and :func:`measured_speedup` raise.
    """
    spec = result.spec
    label = label.strip() if isinstance(label, str) else ""
    origin = "load generator" + (f" {source}" if source else "")
    if window is not None:
        record = to_record(window, k=k, label=label, c=c, method=method, source=origin)
    else:
        if not k:
            raise Message("load run {label!r}: K is not known; give the K the engine runs with", label=label)
        record = {"label": label or f"load {spec.base_url}", "k": int(k), "method": method, "source": origin}
        if result.draft_acceptance is not None:
            record["acceptance_rate"] = round(min(max(result.draft_acceptance, 0.0), 1.0), 9)
        if c is not None:
            record["c"] = c
    if baseline is not None:
        record["speedup"] = round(measured_speedup(result, baseline), 9)
    if not any(record.get(name) is not None for name in ("mean_accepted_tokens", "acceptance_rate", "speedup")):
        raise Message(
            "load run {label!r}: no acceptance figure (no window of the engine's counters, no llama.cpp draft counts) and no speedup (no run without speculation to compare with); a row of the run library needs one of them",
            label=record["label"],
        )
    record |= _serving_columns(result)
    record["temperature"] = spec.temperature
    record["target_model"] = record.get("target_model") or spec.model
    mode = f"open loop at {spec.rate:g} requests/s" if spec.rate is not None else "closed loop"
    run = (
        f"load generator, {mode}, concurrency {spec.concurrency}: {result.done} requests ({result.failed} failed) "
        f"in {result.wall_s:.1f} s, {result.requests_per_s:.3g} requests/s"
    )
    record["notes"] = f"{run}; {record['notes']}" if record.get("notes") else run
    return record


def _serving_columns(result: LoadResult) -> dict[str, float | int]:
    """The serving columns of :func:`load_record` that the run measured (NaN statistics left out)."""
    spec = result.spec
    columns: dict[str, float | int] = {"concurrency": spec.concurrency}
    if spec.rate is not None:
        columns["request_rate"] = spec.rate
    for name, value in (
        ("prompt_tokens", result.prompt_tokens_mean),
        ("output_tokens", result.output_tokens_mean),
        ("tokens_per_s", result.output_tokens_per_s),
    ):
        if math.isfinite(value) and value > 0:
            columns[name] = round(value, 6)
    for name, (stat, q) in _LATENCY_COLUMNS.items():
        seconds = getattr(getattr(result, stat), q)
        if math.isfinite(seconds):
            columns[name] = round(seconds * 1e3, 6)
    return columns

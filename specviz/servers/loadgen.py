"""A bounded load generator for OpenAI-compatible servers (``POST /v1/completions``).

The Engine monitor page sends load to an inference server (vLLM, SGLang, llama.cpp, TensorRT-LLM)
while it reads the server's ``/metrics``, and compares two runs: with speculative decoding and without
(:func:`measured_speedup`). :func:`run_load` sends :class:`LoadSpec`'s prompts in turn, ``concurrency``
at a time, until ``max_requests`` have been sent, ``max_seconds`` have passed or the ``stop`` event is set;
requests in flight then finish (or time out) and no new one starts.

Every request goes through :func:`specviz.servers.fetch.fetch` (``method="POST"``), so the deployment's
allow-list, redirect checks, size cap and timeouts apply to load as to polling. Note that a completion is
answered only when it is finished: the policy's ``read_timeout_s`` must exceed the longest completion
(``max_tokens`` tokens at the server's slowest), or every request fails with a read timeout.

Why threads: ``concurrency`` worker threads, each sending blocking requests over one shared pooled
``httpx.Client``. At most 64 requests in flight, so 64 threads cost little; the blocking :func:`fetch`
(the one code path of the rules) is reused as is; no event loop has to coexist with Streamlit's; and the
calling thread — the page's script thread — collects the results and is the only one that calls
``progress``, so the callback may draw with Streamlit.

No streamlit here.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import pandas as pd

from specviz.base.i18n import C_, N_, Message, Phrase
from specviz.servers.fetch import FetchPolicy, check_url, fetch, make_client

__all__ = [
    "COLUMNS",
    "LIMITS",
    "STOP_REASONS",
    "LoadProgress",
    "LoadResult",
    "LoadSpec",
    "bundled_prompts",
    "completion_counts",
    "completions_url",
    "measured_speedup",
    "payload",
    "run_load",
    "summarize",
]

#: Allowed ranges (inclusive) of :class:`LoadSpec`'s bounds.
LIMITS: Mapping[str, tuple[int, int]] = {
    "concurrency": (1, 64),
    "max_requests": (1, 10_000),
    "max_seconds": (1, 3600),
    "max_tokens": (1, 4096),
}
TEMPERATURE_RANGE = (0.0, 2.0)  #: the OpenAI API's range
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
)


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
        Completion tokens asked for per request, 1..4096.
    temperature
        Sampling temperature, 0..2 (0: greedy).
    concurrency
        Requests in flight at once, 1..64.
    max_requests
        Requests sent at most, 1..10000.
    max_seconds
        No request starts after this many seconds, 1..3600.
    """

    base_url: str
    prompts: Sequence[str]
    model: str | None = None
    max_tokens: int = 128
    temperature: float = 0.0
    concurrency: int = 4
    max_requests: int = 100
    max_seconds: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.prompts, str) or not isinstance(self.prompts, Sequence):
            raise Message("prompts must be a list of strings; got {prompts!r:.80}", prompts=self.prompts)
        object.__setattr__(self, "prompts", tuple(self.prompts))
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
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
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


@dataclass(frozen=True)
class LoadProgress:
    """A run so far, as :func:`run_load` reports it after each finished request."""

    done: int  #: requests finished, failed ones included
    failed: int  #: of those, failed
    tokens: int  #: completion tokens of the successful ones
    elapsed_s: float  #: seconds since the run started
    tokens_per_s: float  #: tokens / elapsed_s


@dataclass(frozen=True, eq=False)
class LoadResult:
    """A finished run: counts, throughput, latency and the per-request records.

    ``tokens_per_s`` = ``tokens`` / ``wall_s``, where ``wall_s`` runs from the start of the run to the
    end of its last request. Latencies (seconds, successful requests only; NaN without any): mean, and
    the 50th and 95th percentiles (linear interpolation). ``tokens`` counts the completion tokens the
    successful requests reported; ``tokens_unknown`` of them reported none (and add 0).
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
        """One line for a person: what was sent, what came back, why it stopped.

        A :class:`~specviz.base.i18n.Phrase`: English as a str, any language on a page (``ui.message``).
        """
        why = {
            "requests": Phrase("the request limit"),
            "time": Phrase("the time limit"),
            "stop": Phrase(C_("note.engines.loadgen.by_stop", "Stop")),
        }[self.stopped_by]
        if self.done == 0:
            return Phrase("no request was sent (stopped by {why})", why=why)
        if self.all_failed:
            first = self.errors[0][0] if self.errors else "?"
            return Phrase("all {done} requests failed; first error: {first}", done=self.done, first=first)
        return Phrase(
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


def payload(spec: LoadSpec, prompt_index: int) -> dict[str, Any]:
    """The JSON body of a request sending prompt ``prompt_index`` (not streamed; ``model`` when given)."""
    body: dict[str, Any] = {
        "prompt": spec.prompts[prompt_index],
        "max_tokens": spec.max_tokens,
        "temperature": spec.temperature,
        "stream": False,
    }
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


class _Gate:
    """Hands out request numbers until the request limit, the deadline or the stop event; remembers which."""

    def __init__(self, max_requests: int, deadline: float, stop: threading.Event | None) -> None:
        self._lock = threading.Lock()
        self._issued, self._max, self._deadline, self._stop = 0, max_requests, deadline, stop
        self.reason: str | None = None

    def claim(self) -> tuple[int, float] | None:
        """The next request number and the time it is issued (``perf_counter``, before the deadline),
        or None once the run is over (:attr:`reason` then says why)."""
        with self._lock:
            now = time.perf_counter()
            if self.reason is None:
                if self._stop is not None and self._stop.is_set():
                    self.reason = "stop"
                elif self._issued >= self._max:
                    self.reason = "requests"
                elif now >= self._deadline:
                    self.reason = "time"
            if self.reason is not None:
                return None
            self._issued += 1
            return self._issued - 1, now

    def close(self, reason: str) -> None:
        """Start no new request (``reason`` unless the run already stopped for another)."""
        with self._lock:
            self.reason = self.reason or reason


def _worker(
    url: str,
    spec: LoadSpec,
    policy: FetchPolicy,
    client: httpx.Client,
    gate: _Gate,
    t0: float,
    finished: queue.Queue,
) -> None:
    """Send requests while :meth:`_Gate.claim` hands out numbers; put one record per request on ``finished``."""
    try:
        while (claimed := gate.claim()) is not None:
            i, start = claimed
            index = i % len(spec.prompts)
            tokens = draft_n = accepted = error = None
            try:
                answer = fetch(url, policy, method="POST", json=payload(spec, index), client=client)
                tokens, draft_n, accepted = completion_counts(answer.json())
            except (ValueError, httpx.HTTPError) as exc:  # FetchError is a ValueError
                error = _said(exc)
            end = time.perf_counter()
            finished.put(
                dict(
                    request=i,
                    prompt_index=index,
                    start_s=start - t0,
                    end_s=end - t0,
                    latency_s=end - start,
                    ok=error is None,
                    completion_tokens=tokens,
                    draft_n=draft_n,
                    draft_n_accepted=accepted,
                    error=error,
                )
            )
    except BaseException:
        gate.close("stop")  # a bug here: the other workers stop too, and run_load re-raises it
        raise


def _said(exc: Exception) -> str:
    """A failed request's message: a :class:`Message` as the :class:`Phrase` of its key and fields (English
    as a str, any language on a page), any other error as its str (its type's name when that is empty)."""
    if isinstance(exc, Message):
        return Phrase(exc.msgid, **exc.fields)
    return str(exc) or type(exc).__name__


def _records(rows: list[dict]) -> pd.DataFrame:
    """The rows as :data:`COLUMNS`, by request number; counts as nullable integers."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame = frame.sort_values("request", kind="stable").reset_index(drop=True)
    types = dict.fromkeys(("request", "prompt_index"), "int64")
    types |= dict.fromkeys(("start_s", "end_s", "latency_s"), "float64")
    types |= dict.fromkeys(("completion_tokens", "draft_n", "draft_n_accepted"), "Int64")
    types |= {"ok": "bool", "error": "object"}
    return frame.astype(types)


def summarize(spec: LoadSpec, rows: list[dict], wall_s: float, stopped_by: str) -> LoadResult:
    """A :class:`LoadResult` from per-request ``rows`` (keys :data:`COLUMNS`) and the run's wall time.

    ``tokens_per_s`` = Σ completion tokens of successful requests / ``wall_s`` (NaN when ``wall_s`` is 0).
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
        Server, prompts and bounds.
    policy
        The fetch rules every request obeys (allow-list, timeouts, size cap, redirects).
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
    own = client is None
    if client is None:
        client = make_client(policy, max_connections=spec.concurrency)
    finished: queue.Queue = queue.Queue()
    rows: list[dict] = []
    done = failed = tokens = 0
    try:
        t0 = time.perf_counter()
        gate = _Gate(spec.max_requests, t0 + spec.max_seconds, stop)
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

"""The Engine monitor's logic: endpoints typed by a person, polled, kept as a history of readings.

No streamlit here: the page draws what these functions return.

- :func:`parse_endpoints`: the text box (one endpoint per line: URL, then optionally the engine)
  → :class:`Endpoint` values, with a message naming the line and the value when one is wrong.
- :func:`poll_all`: fetch every endpoint's ``/metrics`` at once (a thread per endpoint, so one
  slow or dead server delays the poll by its timeout, not the sum) and read it → one
  :class:`Poll` per endpoint: a :class:`~specviz.servers.telemetry.Telemetry` or an error message.
- :class:`History`: the last readings of each endpoint; :func:`rates` turns consecutive
  readings into drafted / accepted tokens per second over time; :func:`draft_overheads` the
  engine's draft overhead over time (TensorRT-LLM); :func:`summary` the window since
  monitoring started and the latest interval.
- :func:`design_point`: a window at the assumed K and c → a row of the measurement schema,
  validated like any upload, plus the best K for its α and c.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.core import theory
from specviz.data.measurements import load_records
from specviz.servers.fetch import FetchError, FetchPolicy, check_url, fetch
from specviz.servers.readers import READERS, TelemetryError, read_metrics
from specviz.servers.telemetry import Telemetry, Window, to_record, window, window_over

KINDS = ("auto", *READERS)  #: what the engine column of an endpoint line may say
MAX_ENDPOINTS = 16
HISTORY = 600  #: readings kept per endpoint (20 minutes at a 2 s interval)


@dataclass(frozen=True)
class Endpoint:
    """A server to poll: its /metrics URL and the engine it runs ("auto": detect from the body)."""

    url: str
    kind: str = "auto"


def metrics_url(url: str) -> str:
    """``url`` with ``/metrics`` appended when it names a server only (no path)."""
    stripped = url.strip()
    _, _, rest = stripped.partition("://")
    if rest and "/" not in rest:
        return stripped + "/metrics"
    if rest.endswith("/") and rest.count("/") == 1:
        return stripped + "metrics"
    return stripped


def parse_endpoints(text: str, policy: FetchPolicy) -> list[Endpoint]:
    """Lines of ``URL [engine]`` → endpoints (blank lines and ``#`` comments skipped; duplicates once).

    Each URL passes :func:`specviz.servers.fetch.check_url` (the hosted allow-list included);
    a wrong line raises ValueError naming the line, the value and what is allowed.
    """
    endpoints: dict[str, Endpoint] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) > 2:
            raise Message(
                "endpoints, line {n}: {line!r} has {count} fields; write 'URL' or 'URL engine'",
                n=n,
                line=line,
                count=len(parts),
            )
        kind = parts[1].lower() if len(parts) == 2 else "auto"
        if kind not in KINDS:
            raise Message(
                "endpoints, line {n}: engine {engine!r} is not one of {allowed}",
                n=n,
                engine=parts[1],
                allowed=", ".join(KINDS),
            )
        field = Phrase("endpoints, line {n}: URL", n=n)  # "endpoints, line N: URL"
        try:
            url = check_url(metrics_url(parts[0]), policy, field=field)
        except FetchError as exc:
            raise Message(exc.msgid, **exc.fields) from None
        endpoints.setdefault(url, Endpoint(url, kind))
        if len(endpoints) > MAX_ENDPOINTS:
            raise Message("endpoints: more than {max}; monitor at most {max} at once", max=MAX_ENDPOINTS)
    return list(endpoints.values())


@dataclass(frozen=True)
class Poll:
    """One endpoint's answer to one poll: a reading, or why there is none."""

    endpoint: Endpoint
    reading: Telemetry | None
    error: (
        str | None
    )  #: a :class:`~specviz.base.i18n.Phrase` where the error was a Message (a page shows ``ui.message``)
    seconds: float  #: how long the fetch took


def poll(endpoint: Endpoint, policy: FetchPolicy, k: int | None, client=None, now: float | None = None) -> Poll:
    """Fetch and read one endpoint; a failure of any kind becomes the Poll's message.

    Returns within ``policy.total_s`` (the fetch's deadline) plus the time to read the body, which
    :func:`~specviz.servers.readers.read_metrics` bounds by its series and line caps.
    """
    t0 = time.perf_counter()
    try:
        got = fetch(endpoint.url, policy, client=client)
        reading = read_metrics(got.text, endpoint.kind, k=k, now=time.time() if now is None else now)
        return Poll(endpoint, reading, None, time.perf_counter() - t0)
    except (FetchError, TelemetryError, ValueError) as exc:  # ValueError: any other library error (a Message)
        return Poll(endpoint, None, _said(exc), time.perf_counter() - t0)


def _said(exc: Exception) -> str:
    """An error as a note kept for later: a :class:`Message` as the :class:`Phrase` of its key and fields
    (English as a str, any language on a page), any other error as its str."""
    return Phrase(exc.msgid, **exc.fields) if isinstance(exc, Message) else str(exc)


def poll_all(endpoints: list[Endpoint], policy: FetchPolicy, k: int | None, client=None) -> list[Poll]:
    """Poll every endpoint concurrently; results in the endpoints' order."""
    if not endpoints:
        return []
    with ThreadPoolExecutor(max_workers=min(len(endpoints), MAX_ENDPOINTS)) as pool:
        return list(pool.map(lambda e: poll(e, policy, k, client), endpoints))


class History:
    """The last :data:`HISTORY` readings of each endpoint, and its last error."""

    def __init__(self, size: int = HISTORY) -> None:
        self.size = size
        self.readings: dict[str, deque[Telemetry]] = {}
        self.errors: dict[str, str] = {}

    def add(self, polls: list[Poll]) -> None:
        for p in polls:
            if p.reading is None:
                self.errors[p.endpoint.url] = p.error or Phrase("no reading")
                continue
            self.errors.pop(p.endpoint.url, None)
            self.readings.setdefault(p.endpoint.url, deque(maxlen=self.size)).append(p.reading)

    def keep(self, urls: list[str]) -> None:
        """Forget endpoints no longer listed."""
        for store in (self.readings, self.errors):
            for url in [u for u in store if u not in urls]:
                del store[url]

    def of(self, url: str) -> list[Telemetry]:
        return list(self.readings.get(url, ()))


@dataclass(frozen=True)
class Summary:
    """An endpoint's figures: since monitoring started (``overall``) and over the last interval (``latest``)."""

    overall: Window
    latest: Window
    k: int | None  #: the engine's K, else the assumed one


def summary(readings: list[Telemetry], k: int) -> Summary | None:
    """The window from the first to the last reading (restarts added across, :func:`window_over`),
    or, when it holds no drafts (the server was idle while monitored), everything since the server
    started; and the window between the last two readings (cumulative engines).

    Engines whose readings already cover an interval (SGLang, TensorRT-LLM) give the last
    reading for both. None without readings.
    """
    if not readings:
        return None
    last = readings[-1]
    if not last.cumulative:
        w = window(None, last)
        return Summary(w, w, last.k or k)
    prev = readings[-2] if len(readings) > 1 else None
    overall = window_over(readings)
    if not overall.rounds:  # no drafts while monitored (an idle server): its counters since it started
        overall = window(None, last)
    return Summary(overall, window(prev, last), last.k or k)


def rates(readings: list[Telemetry]) -> pd.DataFrame:
    """Drafted and accepted tokens per second, mean acceptance length, per interval between readings.

    Returns
    -------
    DataFrame
        One row per pair of consecutive cumulative readings: ``time`` (seconds since the first
        reading), ``drafted_per_s``, ``accepted_per_s``, ``mean_length``; a restart interval is left out.
    """
    rows = []
    if len(readings) < 2 or not readings[-1].cumulative:
        return pd.DataFrame(columns=["time", "drafted_per_s", "accepted_per_s", "mean_length"])
    t0 = readings[0].end or 0.0
    for a, b in itertools.pairwise(readings):
        w = window(a, b)
        if w.reset or not w.seconds:
            continue
        rows.append(
            {
                "time": (b.end or 0.0) - t0,
                "drafted_per_s": w.per_second(w.draft_tokens),
                "accepted_per_s": w.per_second(w.accepted_tokens),
                "mean_length": w.mean_acceptance_length,
            }
        )
    return pd.DataFrame(rows, columns=["time", "drafted_per_s", "accepted_per_s", "mean_length"])


def draft_overheads(readings: list[Telemetry]) -> pd.DataFrame:
    """The draft overhead (share of iteration time spent drafting) each reading reports, over time.

    Returns
    -------
    DataFrame
        One row per reading that has it: ``time`` (seconds since the first reading) and
        ``draft_overhead`` (0..1); no rows where the engine does not report it.
    """
    t0 = (readings[0].end or 0.0) if readings else 0.0
    rows = [
        {"time": (t.end or 0.0) - t0, "draft_overhead": t.draft_overhead}
        for t in readings
        if t.draft_overhead is not None
    ]
    return pd.DataFrame(rows, columns=["time", "draft_overhead"])


@dataclass(frozen=True)
class DesignPoint:
    """Where a window sits on the design space at the assumed K and c."""

    frame: pd.DataFrame  #: one validated row of the measurement schema (alpha_used, c_used, predictions)
    alpha: float
    k: int
    c: float
    speedup: float  #: S(α, c, K) at the engine's K
    best_k: int  #: argmax_K S(α, c, K), K ≤ k_max
    best_speedup: float


def design_point(w: Window, k: int, c: float, *, label: str, k_max: int = 16) -> DesignPoint:
    """The window as a row of the schema (for the run library and the map), with S and the best K.

    Raises ValueError when the window has no drafts or the engine's α cannot be found.
    """
    record = to_record(w, k=k, label=label, c=c, source="engine monitor")
    frame, _ = load_records([record], name=label)
    alpha = float(frame["alpha_used"].iloc[0])
    if not np.isfinite(alpha):
        raise Message(
            "{label}: no α from this window (E[N] {mean}, K = {k})",
            label=label,
            mean=record.get("mean_accepted_tokens"),
            k=k,
        )
    best = theory.optimal_k(alpha, c, k_max=k_max)
    return DesignPoint(
        frame=frame,
        alpha=alpha,
        k=k,
        c=c,
        speedup=float(theory.speedup(alpha, c, k)),
        best_k=int(best.k),
        best_speedup=float(best.speedup),
    )

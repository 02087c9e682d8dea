"""The Server monitor's logic: typed endpoints, polled at once, kept as a history, placed on the design space."""

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

KINDS = ("auto", *READERS)  #: what the stack column of an endpoint line may say
MAX_ENDPOINTS = 16
HISTORY = 600  #: readings kept per endpoint (20 minutes at a 2 s interval)


@dataclass(frozen=True)
class Endpoint:
    """A server to poll: its /metrics URL and the stack it runs ("auto": detect from the body)."""

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
    """Lines of ``URL [stack]`` → endpoints, each URL checked by :func:`~specviz.servers.fetch.check_url`.

    Raises ValueError naming the line, the value and what is allowed.
    """
    endpoints: dict[str, Endpoint] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) > 2:
            raise Message(
                "endpoints, line {n}: {line!r} has {count} fields; write 'URL' or 'URL stack'",
                n=n,
                line=line,
                count=len(parts),
            )
        kind = parts[1].lower() if len(parts) == 2 else "auto"
        if kind not in KINDS:
            raise Message(
                "endpoints, line {n}: serving stack {engine!r} is not one of {allowed}",
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
    """Fetch and read one endpoint within ``policy.total_s`` plus the capped read; any failure is the Poll's message."""
    t0 = time.perf_counter()
    try:
        got = fetch(endpoint.url, policy, client=client)
        reading = read_metrics(got.text, endpoint.kind, k=k, now=time.time() if now is None else now)
        return Poll(endpoint, reading, None, time.perf_counter() - t0)
    except (FetchError, TelemetryError, ValueError) as exc:  # ValueError: any other library error (a Message)
        return Poll(endpoint, None, _said(exc), time.perf_counter() - t0)


def _said(exc: Exception) -> str:
    """A :class:`Message` as its :class:`Phrase`, any other error as its str."""
    return Phrase(exc.msgid, **exc.fields) if isinstance(exc, Message) else str(exc)


def poll_all(endpoints: list[Endpoint], policy: FetchPolicy, k: int | None, client=None) -> list[Poll]:
    """Poll every endpoint concurrently (a thread each); results in the endpoints' order."""
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
    k: int | None  #: the stack's K, else the assumed one


def summary(readings: list[Telemetry], k: int) -> Summary | None:
    """:func:`window_over` all readings (idle while monitored: since the server started) and the last interval;
    readings that cover an interval give the last for both. None without readings."""
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
    """Per interval between cumulative readings (restarts left out): ``time`` (s since the first reading),
    ``drafted_per_s``, ``accepted_per_s``, ``mean_length``."""
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
    """``time`` (s since the first reading) and ``draft_overhead`` (0..1) of each reading that reports it."""
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
    speedup: float  #: S(α, c, K) at the stack's K
    best_k: int  #: argmax_K S(α, c, K), K ≤ k_max
    best_speedup: float


def design_point(w: Window, k: int, c: float, *, label: str, k_max: int = 16) -> DesignPoint:
    """The window as a validated schema row, with S(α, c, K) and the best K; ValueError without drafts or α."""
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

"""Sending a load run: a closed loop of ``concurrency`` workers, or an open loop sending each request on arrival.

An open loop sends as ``vllm bench serve --request-rate λ --max-concurrency C``. Threads, not asyncio: no event
loop beside Streamlit's, and only the calling thread calls ``progress``, so it may draw with Streamlit.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np

from specviz.servers.fetch import FetchPolicy, check_url, make_client
from specviz.servers.loadgen.results import LoadProgress, LoadResult, _row, _said, summarize
from specviz.servers.loadgen.spec import LoadSpec, arrival_times
from specviz.servers.loadgen.stream import _send, completions_url


class _Gate:
    """Hands out request numbers until the request limit, the deadline (open loop: an arrival at or after
    it) or the stop event, and remembers which; ``arrivals`` in ``perf_counter`` seconds."""

    def __init__(
        self, max_requests: int, deadline: float, stop: threading.Event | None, arrivals: np.ndarray | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._issued, self._max, self._deadline, self._stop = 0, max_requests, deadline, stop
        self._arrivals = arrivals
        self._closed = threading.Event()  # set by close(): wakes the workers waiting for an arrival
        self.reason: str | None = None

    def claim(self) -> tuple[int, float, float | None] | None:
        """``(number, issued at, arrival or None)`` of the next request, or None once the run is over."""
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
        """Sleep until ``due``; False at once when stopped meanwhile (the stop event is polled every 20 ms)."""
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
    """Send the requests the gate hands out, each at its arrival time; one record each on ``finished``."""
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


def run_load(
    spec: LoadSpec,
    policy: FetchPolicy,
    *,
    stop: threading.Event | None = None,
    progress: Callable[[LoadProgress], None] | None = None,
    client: httpx.Client | None = None,
) -> LoadResult:
    """Send ``spec``'s load under ``policy`` until ``max_requests``, ``max_seconds`` or ``stop``; measure it.

    ``policy``'s total time bounds each completion, its read timeout each pause of a stream. ``progress``
    is called in this thread after each request; ``client`` None: one of ``concurrency`` connections.
    Failed requests are counted with their messages. Raises FetchError when ``policy`` refuses the URL.
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

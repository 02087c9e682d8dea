"""Per-request records of a load run and its statistics, as vllm/benchmarks/serve.py ``calculate_metrics`` has them.

TTFT: sending → first chunk with text (vllm counts an empty one); ITL: gaps between chunks with text (≠ TPOT
under speculation); E2E: sending → end; TPOT = (E2E − TTFT) / (output tokens − 1); output tokens: ``usage``,
else ``timings.predicted_n``, else chunks (``tokens_estimated``); throughputs per wall time; an open loop's wait
for a slot is ``queue_s`` (vllm's ``client_queue_time``). Seconds; an empty statistic is NaN (vllm: 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.servers.loadgen.spec import LoadSpec

if TYPE_CHECKING:
    from specviz.servers.loadgen.stream import _Answer

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
    """:class:`Percentiles` of the finite ``values`` by ``np.percentile``'s linear interpolation (as vllm)."""
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return Percentiles(0, math.nan, math.nan, math.nan, math.nan)
    p50, p90, p99 = (float(q) for q in np.percentile(x, [50, 90, 99]))
    return Percentiles(int(x.size), float(x.mean()), p50, p90, p99)


@dataclass(frozen=True, eq=False)
class LoadResult:
    """A finished run: counts, throughput, latency statistics and the per-request records.

    ``wall_s``: from the start to the end of the last request; ``tokens_per_s`` = ``tokens`` / ``wall_s``.
    Latencies and statistics cover the successful requests (``queue``: every request sent); ITL pools
    every gap of every request. ``tokens_unknown`` successful requests reported no count (and add 0).
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
        """A Phrase: what was sent and came back, why it stopped; TTFT and TPOT p50 when streamed."""
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


def tpot(e2e_s: float, ttft_s: float, tokens: int | None) -> float:
    """TPOT = (E2E − TTFT) / (tokens − 1), seconds; NaN for ≤ 1 token or an unknown TTFT (as vllm)."""
    if tokens is None or tokens <= 1 or not math.isfinite(ttft_s) or not math.isfinite(e2e_s):
        return math.nan
    return (e2e_s - ttft_s) / (tokens - 1)


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
    """One request's record (:data:`COLUMNS`), times relative to ``t0``; NaN where failed."""
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
    """A failed request's message: a :class:`Message` as its :class:`Phrase`, else its str or type name."""
    if isinstance(exc, Message):
        return Phrase(exc.msgid, **exc.fields)
    return str(exc) or type(exc).__name__


def _records(rows: list[dict]) -> pd.DataFrame:
    """The rows as :data:`COLUMNS` by request number (counts ``Int64``); missing columns from :data:`_ROW_DEFAULTS`."""
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
    """A :class:`LoadResult` from ``rows`` (keys :data:`COLUMNS`); throughputs NaN when ``wall_s`` is 0.

    Raises ValueError when ``stopped_by`` is not one of :data:`STOP_REASONS`.
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

"""The run controller: one live run from the queue to its last cell, with Stop, progress and the wall-time cap.

The page creates a :class:`LiveRun` for a checked :class:`~specviz.app.live.request.Request`, keeps it in
its session state and calls :func:`execute` on the script thread. ``execute`` waits for the
process-wide queue, hands :func:`measure` to the worker thread (where every torch call happens) and
calls the page's ``tick`` while it runs. The worker fills the run in as cells finish, so whatever
stops the run — the Stop button (which interrupts the script inside ``tick``), the wall-time cap or
an error in a later cell — leaves the finished cells in place.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from specviz.app.live import worker as workers
from specviz.app.live.cells import cell_details
from specviz.app.live.request import Request
from specviz.base import i18n
from specviz.base.i18n import N_, Message, Phrase, plural
from specviz.data import measurements
from specviz.engine import bench

__all__ = ["LiveRun", "canonical", "execute", "kept_after_error", "measure", "progress_bar"]

STOP_GRACE_S = 60.0  #: how long a stopped run waits for the worker to finish the run in flight


@dataclass(eq=False)
class LiveRun:
    """One live run's state: the page keeps it in session state; the worker thread fills it in.

    ``rows[i]`` (the measurement row) and ``details[i]`` (what the page shows about that cell,
    :func:`specviz.app.live.cells.cell_details`) are appended together as each cell finishes.
    """

    request: Request
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)  #: seconds, monotonic
    rows: list[dict] = field(default_factory=list)
    details: list[dict] = field(default_factory=list)
    progress: bench.Progress | None = None  #: the sweep's latest report; None while loading and warming up
    submitted: float | None = None  #: clock() when the run left the queue for the worker
    started: float | None = None  #: clock() when the pair was loaded and measuring began
    seconds: float = 0.0  #: measuring time, once done
    stopped: str | None = None  #: why the run ended early ("stopped by you", the cap, …); None if it ran through
    stop_reason: tuple[str, dict] | None = None  #: ``stopped`` as (msgid, fields), for :meth:`stopped_text`
    done: bool = False
    saved: int | None = None  #: the run library's id, once saved
    pilots: dict = field(default_factory=dict)  #: tree runs: temperature → p̂ of the pilot run that built the trees
    trace: object = None  #: the greedy trace (specviz.core.policies.Trace) when the request asked for one
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cells(self) -> int:
        """Cells the run was asked for."""
        return self.request.cells

    def stop(self) -> None:
        """Ask the worker to stop before its next run (the run in flight finishes)."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        """:meth:`stop` was called."""
        return self._stop.is_set()

    def over_time(self) -> bool:
        """The wall-time cap, counted from the end of loading, has passed."""
        return self.started is not None and self.clock() - self.started > self.request.max_wall_s

    def interrupted(self, by_stop_button: bool) -> None:
        """Record that the script running this run was interrupted (the next script run calls this)."""
        self.done = True
        self.stop_as(N_("stopped by you") if by_stop_button else N_("interrupted: a control changed while it ran"))

    def stop_as(self, key: str, **fields) -> None:
        """Record why the run stopped: catalogue ``key`` (``specviz.base.i18n``) with its ``fields``; ``stopped`` in English."""
        self.stop_reason = (key, fields)
        self.stopped = i18n.text(i18n.DEFAULT, key, **fields)

    def stopped_text(self, lang: str = i18n.DEFAULT) -> str | None:
        """``stopped`` in ``lang`` (None if the run was not stopped); a quoted error that is a
        :class:`~specviz.base.i18n.Phrase` reads in ``lang`` too."""
        if self.stop_reason is None:
            return self.stopped
        key, fields = self.stop_reason
        return i18n.text(
            lang,
            key,
            **{k: i18n.localized(v, lang) if isinstance(v, Message | Phrase) else v for k, v in fields.items()},
        )

    def record_stop(self) -> None:
        """Record a stop asked for by :meth:`stop` or forced by the wall-time cap."""
        if self.stop_requested:
            self.stop_as("stopped")
        else:
            self.stop_as("the wall-time cap of {cap} s was reached", cap=f"{self.request.max_wall_s:g}")

    def frame(self) -> pd.DataFrame:
        """The finished cells in the canonical schema with derived columns (:func:`canonical`)."""
        return canonical(self.rows)

    def table(self) -> pd.DataFrame:
        """The finished cells' rows as measured (the measurement CSV a person downloads)."""
        return pd.DataFrame(self.rows)

    def library_label(self) -> str:
        """The run library's name for this run: "live: PAIR (HARDWARE)", at most 200 characters."""
        label = f"live: {self.request.pair}"
        label = label if len(label) <= 120 else label[:119] + "…"
        hardware = self.rows[0].get("hardware", "") if self.rows else ""
        return (label + (f" ({hardware})" if hardware else ""))[:200]


def canonical(rows: list[dict], name: str | None = None) -> pd.DataFrame:
    """The run's rows in the canonical schema with the derived columns: what the run library stores.

    ``measurements.load_records`` applies the checks and derivations of a loaded file to the rows
    as they are (no CSV round trip). Raises ValueError naming the first bad cell (row = cell
    number, column, value, what is allowed; in-memory rows are never guessed to be in percent, so
    an α of 1.5 is such a cell), or any conversion a row needed: the engine's rows are canonical
    and always pass, so one that does not is a bug to surface, not a row to skip or rescale.
    ``name`` (default "live run") names the rows in those messages.
    """
    name = Phrase("live run") if name is None else name
    frame, report = measurements.load_records(rows, name=name)
    if report.row_errors:
        more = len(report.row_errors) - 1
        if more:
            raise Message(
                "{name}: a row does not pass the measurement schema: {error} (and {more} more bad cell(s))",
                name=name,
                error=report.row_errors[0].phrase(),
                more=more,
            )
        raise Message(
            "{name}: a row does not pass the measurement schema: {error}",
            name=name,
            error=report.row_errors[0].phrase(),
        )
    if report.conversions:
        raise Message(
            "{name}: the rows are not canonical; loading them needed: {conversions}",
            name=name,
            conversions="; ".join(report.conversions),
        )
    return frame


def measure(run: LiveRun, load: Callable[[str, str, str], tuple]) -> None:
    """Load the pair and sweep the request's cells into ``run``; runs on the worker thread.

    ``load(pair, device, dtype)`` returns ``(target, draft, tokenizer)``. Before each run the
    sweep asks whether to stop: after :meth:`LiveRun.stop` or past the wall-time cap it raises
    ``bench.Stopped`` and ``run.stopped`` says which.
    """
    if run.stop_requested:  # stopped while queued behind another job
        return
    req = run.request
    target, draft, tokenizer = load(req.pair, req.device, req.dtype)
    run.started = run.clock()

    def on_row(row: dict, runs: list) -> None:
        details = cell_details(row, runs, target, tokenizer, req.prompts)
        run.rows.append(row)
        run.details.append(details)

    def on_progress(progress: bench.Progress) -> None:
        run.progress = progress

    if req.batched:
        _measure_batches(run, target, draft, tokenizer)
        return
    try:
        for engine in req.engines:
            bench.sweep(
                target,
                draft,
                tokenizer,
                list(req.prompts),
                req.trees or req.ks,
                req.temperatures,
                req.new_tokens,
                req.repeats,
                req.seed,
                meta=req.meta(),
                on_row=on_row,
                should_stop=lambda: run.stop_requested or run.over_time(),
                on_progress=on_progress,
                tree_p=req.tree_p,
                on_pilot=lambda t, p: run.pilots.update({t: p}),
                engine=engine,
            )
    except bench.Stopped:
        run.record_stop()
        return
    if req.trace and not run.stop_requested and not run.over_time():
        run.trace = record_trace(target, draft, tokenizer, req)


def record_trace(target, draft, tokenizer, req: Request):
    """The greedy positional trace of every prompt at K_max = the largest K (specviz.core.policies)."""
    import torch

    from specviz.core import policies
    from specviz.engine import decoding

    k_max = max(req.ks)
    encoded = [torch.tensor(tokenizer.encode(p), dtype=torch.long) for p in req.prompts]
    return policies.concat([decoding.greedy_trace(target, draft, p, k_max, req.new_tokens) for p in encoded])


def _measure_batches(run: LiveRun, target, draft, tokenizer) -> None:
    """The batched cells (B, K, temperature) of ``run``, each :func:`specviz.engine.bench.batch_cell`, with the
    same stop, cap and progress rules as the sweep (asked before each cell; one "run" per cell)."""
    import torch

    req = run.request
    prompts = [torch.tensor(tokenizer.encode(p), dtype=torch.long) for p in req.prompts]
    cells = bench.batch_cells(req.batches, req.temperatures, req.ks)
    meta = req.meta()
    base = bench.run_columns(target, meta["source"], meta)

    def before_cell(i: int, cell: bench.BatchCell) -> bool:
        if run.stop_requested or run.over_time():
            run.record_stop()
            return False
        _, k, t = cell
        run.progress = bench.Progress(cell=i + 1, cells=len(cells), run=1, runs=1, k=k, temperature=t, done=i)
        return True

    sweep = bench.batch_sweep(target, draft, prompts, cells, req.new_tokens, req.repeats, req.seed, base, before_cell)
    for (b, k, t), row in sweep:
        run.rows.append(row)
        run.details.append({"k": k, "temperature": t, "batch_size": b, "exact": row["greedy_exact"]})
    if run.stopped:
        return
    _, k, t = cells[-1]
    run.progress = bench.Progress(cell=len(cells), cells=len(cells), run=1, runs=1, k=k, temperature=t, done=len(cells))


def execute(
    run: LiveRun,
    tick: Callable[[], None] = lambda: None,
    on_wait: Callable[[str], None] | None = None,
    *,
    queue: workers.RunQueue | None = None,
    worker: workers.Worker | None = None,
    poll_s: float = 0.2,
    user: str = "",
) -> None:
    """Run ``run`` to its end: wait for the queue, measure on the worker thread, call ``tick()`` meanwhile.

    ``on_wait(message)`` is called while queued behind another run. A load or run error is
    raised here. If ``tick`` raises (Streamlit's Stop), the worker is told to stop before its next
    run and given up to STOP_GRACE_S to finish the one in flight; the queue is released either way.
    ``queue`` and ``worker`` default to the process-wide ones; ``user`` (the person's e-mail, "" the local
    user) is who the queue serves fairly.
    """
    queue = workers.RUN_QUEUE if queue is None else queue
    worker = workers.shared_worker() if worker is None else worker
    who = Phrase(plural("a run of {cells} cell", "a run of {cells} cells", run.cells), cells=run.cells)
    with queue.hold(who, on_wait=on_wait, user=user):
        run.submitted = run.clock()
        future = worker.submit(measure, run, worker.pair)
        try:
            workers.wait(future, tick, poll_s)
        finally:  # also when a Stop interrupts the script: let the worker finish its current run
            run.stop()
            concurrent.futures.wait([future], timeout=STOP_GRACE_S)
        run.done = True
        run.seconds = run.clock() - run.started if run.started is not None else 0.0


def progress_bar(run: LiveRun, lang: str = i18n.DEFAULT) -> tuple[float, str]:
    """(fraction done, text in ``lang``) for the page's progress bar, from the sweep's latest :class:`bench.Progress`."""
    now, p = run.clock(), run.progress
    if p is None or run.started is None:
        waited = now - run.submitted if run.submitted is not None else 0.0
        return 0.0, i18n.text(lang, "Loading the pair and warming up… {s} s", s=f"{waited:.0f}")
    if p.compiling:
        return p.fraction, i18n.text(
            lang,
            "Compiling the decode steps for cell {cell}/{cells} (K = {k}); compile time is kept out of the timings · {s} s elapsed",
            cell=p.cell,
            cells=p.cells,
            k=p.k,
            s=f"{now - run.started:.0f}",
        )
    if p.done >= p.total:
        return 1.0, i18n.text(lang, "Finishing the last cell…")
    return p.fraction, i18n.text(
        lang,
        "Cell {cell}/{cells} (K = {k}, T = {t}): run {run}/{runs} · {s} s elapsed",
        cell=p.cell,
        cells=p.cells,
        k=p.k,
        t=f"{p.temperature:g}",
        run=p.run,
        runs=p.runs,
        s=f"{now - run.started:.0f}",
    )


def kept_after_error(failed: LiveRun | None, previous: LiveRun | None, exc: Exception) -> LiveRun | None:
    """What the page shows after ``failed`` (the run that raised ``exc``, or None if none started).

    The failed run if any cell finished (marked stopped by the error), else the previous results.
    A :class:`~specviz.base.i18n.Message` error is kept as a :class:`~specviz.base.i18n.Phrase` (its text in any
    language, without the traceback), any other as its ``str``.
    """
    if failed is None or failed is previous or not failed.rows:
        return previous
    failed.done = True
    error = Phrase(exc.msgid, **exc.fields) if isinstance(exc, Message) else str(exc)
    failed.stop_as("an error in a later cell: {error}", error=error)
    return failed

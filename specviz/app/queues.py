"""Expensive runs, one at a time and fairly between people: the process-wide queues and hourly quotas
of the Live benchmark and the load generator (no torch here, so the Server monitor can use them)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from specviz.base import settings
from specviz.base.i18n import N_, Message, Phrase

__all__ = ["LIVE_QUOTA", "LOADGEN_QUEUE", "LOADGEN_QUOTA", "RUN_QUEUE", "HourlyQuota", "RunQueue"]


class RunQueue:
    """Serialises expensive runs across the browser sessions of one server process, fairly between people.

    ``with queue.hold(who, on_wait, user=…):`` blocks until the queue is free *and* this run is next,
    calling ``on_wait(message)`` about every ``poll_s`` while queued, so the page can say "queued behind
    another run" instead of failing (``message`` and :meth:`busy` are :class:`~specviz.base.i18n.Phrase` s,
    read in any language; so is ``who`` when it is one). Next is the waiting run of the person served
    longest ago (never served first), then the earliest ticket: one person's runs cannot keep another's
    waiting. A person may have one run waiting at a time (:class:`~specviz.base.i18n.Message` otherwise;
    ``user`` "" is the local user, not limited). Release is guaranteed (finally), also when the waiting or
    holding script is interrupted by a Stop or a rerun.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holder: tuple[str, float] | None = None
        self._waiting: list[tuple[int, str]] = []  # (ticket, user) in arrival order
        self._served: dict[str, float] = {}  # user -> when their last run started
        self._tickets = 0

    def busy(self) -> str | None:
        """A description of the run holding the queue (a :class:`~specviz.base.i18n.Phrase`), or None."""
        holder = self._holder
        if holder is None:
            return None
        return Phrase("{who}, running for {s:.0f} s", who=holder[0], s=time.monotonic() - holder[1])

    def _next(self) -> int | None:
        """The ticket to serve next: its user served longest ago (never: first), then the earliest."""
        if not self._waiting:
            return None
        return min(self._waiting, key=lambda tu: (self._served.get(tu[1], float("-inf")), tu[0]))[0]

    def _enter(self, user: str) -> int:
        with self._cond:
            if user and any(u == user for _, u in self._waiting):
                raise Message("you already have a run waiting in the queue; wait for it to start")
            self._tickets += 1
            self._waiting.append((self._tickets, user))
            return self._tickets

    @contextmanager
    def hold(
        self, who: str, on_wait: Callable[[str], None] | None = None, poll_s: float = 0.5, *, user: str = ""
    ) -> Iterator[float]:
        """Hold the queue; yields the seconds spent waiting."""
        t0, ticket, holding = time.monotonic(), self._enter(user), False
        try:
            while True:
                with self._cond:
                    if self._holder is None and self._next() == ticket:
                        self._waiting = [w for w in self._waiting if w[0] != ticket]
                        self._holder, holding = (who, time.monotonic()), True
                        self._served[user] = time.monotonic()
                        break
                    self._cond.wait(poll_s)
                if on_wait is not None and self._holder is not None:
                    holder = self.busy() or Phrase("finishing")
                    on_wait(
                        Phrase(
                            "Queued behind another run ({holder}); waited {s:.0f} s.",
                            holder=holder,
                            s=time.monotonic() - t0,
                        )
                    )
            yield time.monotonic() - t0
        finally:
            with self._cond:
                self._waiting = [w for w in self._waiting if w[0] != ticket]
                if holding:
                    self._holder = None
                self._cond.notify_all()


class HourlyQuota:
    """How many expensive runs one person may start in an hour: ``setting`` (``SPECVIZ_LIVE_PER_HOUR``,
    ``SPECVIZ_LOADGEN_PER_HOUR``; its hosted default on a hosted server). Counted per server process; the
    local user ("") is not limited."""

    def __init__(self, setting: str, what: str) -> None:
        self.setting, self.what = setting, what  # what: the runs' name in messages (a msgid)
        self._lock = threading.Lock()
        self._started: dict[str, list[float]] = {}

    def take(self, user: str, *, hosted: bool, now: float | None = None) -> None:
        """Count a run ``user`` starts now, or raise a Message naming the limit and when the next is allowed."""
        if not user:
            return
        limit = settings.number(self.setting, hosted=hosted)
        now = time.time() if now is None else now
        with self._lock:
            recent = [t for t in self._started.get(user, []) if now - t < 3600.0]
            if len(recent) >= limit:
                raise Message(
                    "you have started {n} {what} in the last hour, the most {setting} allows; the next may start in {wait:.0f} min",
                    n=len(recent),
                    what=Phrase(self.what),
                    setting=self.setting,
                    wait=(3600.0 - (now - min(recent))) / 60.0,
                )
            self._started[user] = [*recent, now]


RUN_QUEUE = RunQueue()  #: the process-wide queue every live run goes through
LOADGEN_QUEUE = RunQueue()  #: the process-wide queue every load-generator run goes through
LIVE_QUOTA = HourlyQuota("SPECVIZ_LIVE_PER_HOUR", N_("live runs"))
LOADGEN_QUOTA = HourlyQuota("SPECVIZ_LOADGEN_PER_HOUR", N_("load-generator runs"))

"""One reading of a serving stack's speculation, and the metrics a window between two readings gives.

A = accepted draft tokens, D = drafts (verification rounds), P = proposed draft tokens, a_i = drafts that
accepted ≥ i tokens; a counter that went down means a restart, and the window counts from it (``reset``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from specviz.base.i18n import Message, Phrase, plural
from specviz.core import theory

STACKS = {  # kind -> name shown to people
    "vllm": "vLLM",
    "llamacpp": "llama.cpp",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
}


@dataclass(frozen=True)
class Telemetry:
    """Counters since the server started (``cumulative``), else figures over ``start``..``end``; None: not reported."""

    stack: str  #: a key of :data:`STACKS`
    model: str = ""  #: the served model's name ("" where the stack does not say)
    k: int | None = None  #: draft length where the stack states it
    start: float | None = None  #: window start, unix seconds (None: counters since server start)
    end: float | None = None  #: when the reading was taken (or the window's end), unix seconds
    drafts: float | None = None  #: verification rounds that carried draft tokens
    draft_tokens: float | None = None  #: draft tokens proposed
    accepted_tokens: float | None = None  #: draft tokens accepted
    accepted_per_position: tuple[float, ...] = ()  #: a_i: drafts that accepted ≥ i tokens, i = 1..
    generated_tokens: float | None = None  #: output tokens (a counter where cumulative)
    tokens_per_s: float | None = None  #: generation throughput the stack reports
    mean_acceptance_length: float | None = None  #: E[N] as the stack reports it (gauges)
    acceptance_rate: float | None = None  #: accepted / proposed as the stack reports it (gauges)
    cumulative: bool = True
    labels: dict[str, str] = field(default_factory=dict)  #: e.g. vLLM's engine index (its data-parallel engine core)
    #: share of iteration time spent drafting, 0..1 (TensorRT-LLM's ``draftOverhead``; a gauge, not a count)
    draft_overhead: float | None = None
    #: total duration of the iterations ``draft_overhead`` covers, ms (its weight when readings are combined)
    iteration_ms: float | None = None


def _delta(after: float | None, before: float | None) -> tuple[float | None, bool]:
    """after − before, and whether the counter went backwards (a restart)."""
    if after is None:
        return None, False
    if before is None:
        return after, False
    if after < before:
        return after, True
    return after - before, False


@dataclass(frozen=True)
class Window:
    """Speculative-decoding figures over one interval, and the metrics they give (None without drafts)."""

    stack: str
    model: str
    k: int | None
    start: float | None
    end: float | None
    drafts: float | None
    draft_tokens: float | None
    accepted_tokens: float | None
    accepted_per_position: tuple[float, ...]
    generated_tokens: float | None
    reported_tokens_per_s: float | None
    reported_mean_length: float | None
    reported_acceptance_rate: float | None
    reset: str | None = None  #: why the counters restarted within the window (None: they did not); a Phrase
    reading_note: str | None = None  #: how the stack's figures were read (e.g. which version's meaning applied)
    draft_overhead: float | None = None  #: share of iteration time spent drafting, as the stack reports it (0..1)
    iteration_ms: float | None = None  #: total duration of the iterations draft_overhead covers, ms

    @property
    def seconds(self) -> float | None:
        """end − start, where both are known and positive."""
        if self.start is None or self.end is None or self.end <= self.start:
            return None
        return self.end - self.start

    @property
    def rounds(self) -> float | None:
        """Drafts (verification rounds); where the stack does not count them, proposed / K."""
        if self.drafts is not None:
            return self.drafts
        if self.draft_tokens is not None and self.k:
            return self.draft_tokens / self.k
        return None

    @property
    def mean_acceptance_length(self) -> float | None:
        """E[N] = 1 + ΔA / ΔD (bonus counted); else the stack's own figure."""
        d = self.rounds
        if d and self.accepted_tokens is not None:
            return 1.0 + self.accepted_tokens / d
        return self.reported_mean_length

    @property
    def acceptance_rate(self) -> float | None:
        """r = ΔA / ΔP; else the stack's own figure."""
        if self.draft_tokens and self.accepted_tokens is not None:
            return self.accepted_tokens / self.draft_tokens
        return self.reported_acceptance_rate

    @property
    def mean_draft_length(self) -> float | None:
        """ΔP / ΔD: the K the stack actually drafted, on average."""
        if self.drafts and self.draft_tokens is not None:
            return self.draft_tokens / self.drafts
        return None

    def alpha(self, k: int | None = None) -> float | None:
        """α whose E[N] at K equals the window's mean acceptance length (K: ``k`` or the stack's)."""
        k = k or self.k
        m = self.mean_acceptance_length
        if not k or m is None or not math.isfinite(m):
            return None
        return float(theory.alpha_from_mean_tokens(min(max(m, 1.0), k + 1.0), k))

    @property
    def unconditional(self) -> np.ndarray:
        """(P,) u_i = Δa_i / ΔD: the share of drafts that accepted at least i tokens."""
        d = self.rounds
        if not d or not self.accepted_per_position:
            return np.zeros(0)
        return np.minimum(np.asarray(self.accepted_per_position, dtype=float) / d, 1.0)

    @property
    def conditional(self) -> np.ndarray:
        """(P,) u_i / u_(i−1) (u_0 = 1): acceptance at position i given all before it; nan after a 0."""
        u = self.unconditional
        prev = np.concatenate([[1.0], u[:-1]])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(prev > 0, np.minimum(u / np.where(prev > 0, prev, 1.0), 1.0), np.nan)

    def per_second(self, count: float | None) -> float | None:
        """count / window seconds."""
        s = self.seconds
        return None if count is None or s is None else count / s

    @property
    def tokens_per_s(self) -> float | None:
        """Generated tokens / window seconds; else the stack's own figure."""
        mine = self.per_second(self.generated_tokens)
        return mine if mine is not None else self.reported_tokens_per_s


def window(before: Telemetry | None, after: Telemetry) -> Window:
    """The deltas from ``before`` to ``after``; ``after`` alone when it covers an interval, ``before`` is None, or a
    counter fell (a restart: ``reset`` names it). ValueError for readings of two stacks."""
    if before is not None and before.stack != after.stack:
        raise ValueError(f"window: readings of two stacks ({before.stack}, {after.stack})")
    if not after.cumulative or before is None:
        return _as_window(after, after.start, None)
    names = ("drafts", "draft_tokens", "accepted_tokens", "generated_tokens")
    deltas, fell = {}, []
    for name in names:
        deltas[name], went_down = _delta(getattr(after, name), getattr(before, name))
        if went_down:  # the counter's name is an identifier: it stays as it is in every language
            fell.append(f"{name} {getattr(before, name):g} → {getattr(after, name):g}")
    b_pos, a_pos = before.accepted_per_position, after.accepted_per_position
    if len(a_pos) >= len(b_pos):
        b_pos = tuple(b_pos) + (0.0,) * (len(a_pos) - len(b_pos))
        if any(a < b for a, b in zip(a_pos, b_pos, strict=True)):
            fell.append(Phrase("accepted per position"))
    else:
        fell.append(Phrase("per-position series {before} → {after}", before=len(b_pos), after=len(a_pos)))
    if fell:
        return _as_window(
            after,
            None,
            Phrase(
                "counters went down ({counters}): the server restarted; the window counts from the restart",
                counters=_listed(fell),
            ),
        )
    per_pos = tuple(a - b for a, b in zip(a_pos, b_pos, strict=True))
    w = _as_window(after, before.end, None)
    return replace(w, accepted_per_position=per_pos, **deltas)


def _listed(items: list[str]) -> str:
    """``items`` joined by "; " (a :class:`Phrase` that joins them in the page's language too)."""
    joined = items[-1]
    for item in reversed(items[:-1]):
        joined = Phrase("{a}; {b}", a=item, b=joined)
    return joined


def window_over(readings: list[Telemetry]) -> Window:
    """The sum of consecutive windows from the first to the last reading (restarts counted across, as Prometheus'
    ``increase()``); the last reading's window when it covers an interval. ValueError without readings."""
    if not readings:
        raise ValueError("window_over: no readings")
    if len(readings) == 1 or not readings[-1].cumulative:
        return window(None, readings[-1])
    parts = [window(a, b) for a, b in itertools.pairwise(readings)]
    restarts = [w.reset for w in parts if w.reset]

    def total(name):
        vals = [getattr(w, name) for w in parts]
        return None if all(v is None for v in vals) else float(sum(v for v in vals if v is not None))

    width = max(len(w.accepted_per_position) for w in parts)
    per_pos = tuple(
        float(sum(w.accepted_per_position[i] for w in parts if i < len(w.accepted_per_position))) for i in range(width)
    )
    last = readings[-1]
    why = None
    if restarts:
        why = Phrase(
            plural(
                "the server restarted once while monitored; counts before and after are added up",
                "the server restarted {n} times while monitored; counts before and after are added up",
                len(restarts),
            ),
            n=len(restarts),
        )
    return replace(
        _as_window(last, readings[0].end, why),
        drafts=total("drafts"),
        draft_tokens=total("draft_tokens"),
        accepted_tokens=total("accepted_tokens"),
        generated_tokens=total("generated_tokens"),
        accepted_per_position=per_pos,
    )


def _as_window(t: Telemetry, start: float | None, reset: str | None) -> Window:
    return Window(
        stack=t.stack,
        model=t.model,
        k=t.k,
        start=start,
        end=t.end,
        drafts=t.drafts,
        draft_tokens=t.draft_tokens,
        accepted_tokens=t.accepted_tokens,
        accepted_per_position=tuple(t.accepted_per_position),
        generated_tokens=t.generated_tokens,
        reported_tokens_per_s=t.tokens_per_s,
        reported_mean_length=t.mean_acceptance_length,
        reported_acceptance_rate=t.acceptance_rate,
        reset=reset,
        reading_note=t.labels.get("spec_accept_rate_meaning"),
        draft_overhead=t.draft_overhead,
        iteration_ms=t.iteration_ms,
    )


def combine(readings: list[Telemetry]) -> Telemetry:
    """Readings of one kind as one: counts add; gauges average weighted by drafts (else plainly); the draft
    overhead weighted by ``iteration_ms`` (else plainly); K kept when all agree. ValueError when empty or mixed."""
    if not readings:
        raise ValueError("combine: no readings")
    first = readings[0]
    if any(t.stack != first.stack or t.cumulative != first.cumulative for t in readings):
        raise ValueError("combine: readings of different stacks or kinds")

    def total(name):
        vals = [getattr(t, name) for t in readings]
        return None if all(v is None for v in vals) else float(sum(v for v in vals if v is not None))

    def mean(name):
        pairs = [(getattr(t, name), t.drafts or 0.0) for t in readings if getattr(t, name) is not None]
        if not pairs:
            return None
        weights = [w for _, w in pairs]
        if sum(weights) > 0:
            return sum(v * w for v, w in pairs) / sum(weights)
        return sum(v for v, _ in pairs) / len(pairs)

    def overhead():
        timed = [(t.draft_overhead, t.iteration_ms) for t in readings if t.draft_overhead is not None]
        if not timed:
            return None
        if all(ms is not None and ms > 0 for _, ms in timed):
            return sum(x * ms for x, ms in timed) / sum(ms for _, ms in timed)
        return sum(x for x, _ in timed) / len(timed)

    width = max(len(t.accepted_per_position) for t in readings)
    per_pos = tuple(
        float(sum(t.accepted_per_position[i] for t in readings if i < len(t.accepted_per_position)))
        for i in range(width)
    )
    ks = {t.k for t in readings if t.k}
    starts = [t.start for t in readings if t.start is not None]
    ends = [t.end for t in readings if t.end is not None]
    throughputs = [t.tokens_per_s for t in readings if t.tokens_per_s is not None]
    return Telemetry(
        stack=first.stack,
        model=first.model if all(t.model == first.model for t in readings) else "several",
        k=ks.pop() if len(ks) == 1 else None,
        start=min(starts) if starts else None,
        end=max(ends) if ends else None,
        drafts=total("drafts"),
        draft_tokens=total("draft_tokens"),
        accepted_tokens=total("accepted_tokens"),
        accepted_per_position=per_pos,
        generated_tokens=total("generated_tokens"),
        tokens_per_s=sum(throughputs) if throughputs and first.cumulative else mean("tokens_per_s"),
        mean_acceptance_length=mean("mean_acceptance_length"),
        acceptance_rate=mean("acceptance_rate"),
        cumulative=first.cumulative,
        draft_overhead=overhead(),
        iteration_ms=total("iteration_ms"),
    )


def _fmt(x: float) -> str:
    return "nan" if not math.isfinite(x) else format(float(x), ".6g")


def to_record(
    w: Window,
    *,
    k: int | None = None,
    label: str = "",
    c: float | None = None,
    method: str | None = None,
    source: str = "",
) -> dict:
    """The window as a row of the measurement schema: K, E[N], r, the first K conditional rates, tokens/s, notes.

    Raises ValueError (a Message) when K is unknown or the window has no drafts.
    """
    k = k or w.k
    if not k:
        raise Message(
            "{engine} window: K is not known; give the K the serving stack runs with",
            engine=STACKS.get(w.stack, w.stack),
        )
    m, r = w.mean_acceptance_length, w.acceptance_rate
    if m is None and r is None:
        raise Message(
            "{engine} window: no drafts in it (speculation off, or no traffic yet)",
            engine=STACKS.get(w.stack, w.stack),
        )
    record: dict[str, object] = {
        "label": label or f"{STACKS.get(w.stack, w.stack)} {w.model}".strip(),
        "k": int(k),
        "method": method,
        "source": f"engine:{w.stack}" + (f" {source}" if source else ""),
        "target_model": w.model or None,
    }
    if m is not None:
        record["mean_accepted_tokens"] = round(min(max(m, 1.0), k + 1.0), 9)
    if r is not None:
        record["acceptance_rate"] = round(min(max(r, 0.0), 1.0), 9)
    cond = w.conditional
    if len(cond) >= k:
        record["per_position_acceptance"] = ";".join(_fmt(x) for x in cond[:k])
    if w.tokens_per_s is not None and w.tokens_per_s > 0:
        record["tokens_per_s"] = round(w.tokens_per_s, 6)
    if c is not None:
        record["c"] = c
    span = f"{w.seconds:.1f} s window" if w.seconds else "since the server started"
    drafts = f", {w.rounds:.0f} drafts" if w.rounds is not None else ""
    overhead = (
        f"draft overhead {w.draft_overhead:.1%} of iteration time (engine-reported)"
        if w.draft_overhead is not None
        else None
    )
    record["notes"] = f"{STACKS.get(w.stack, w.stack)} telemetry, {span}{drafts}" + "".join(
        f"; {note}" for note in (overhead, w.reset, w.reading_note) if note
    )
    return record

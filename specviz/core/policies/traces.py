"""Traces: per row and draft position, q(x), q_top and p(x) of a fixed-K_max run, with the accepted count.

Rows are rounds (i.i.d.: :func:`synthetic_trace`, or sampled decoding) or, for a greedy run (``positional``),
output positions: row j is the draft's K_max chain from position j of the target's greedy output, so a
policy's walk j → j + min(k, a_j) + 1 replays exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specviz.base.i18n import Message
from specviz.core import theory


@dataclass(frozen=True)
class Trace:
    """Rows × K_max draft positions of one run with a fixed K_max and no early stop."""

    q_token: np.ndarray  # (R, K) the draft's probability of the token it drafted
    q_top: np.ndarray  # (R, K) the draft's top-1 probability (= q_token for greedy drafting)
    accepted: np.ndarray  # (R,) leading accepted drafts, 0..K
    p_token: np.ndarray | None = None  # (R, K) the target's probability of the token (NaN: unknown)
    segment: np.ndarray | None = None  # (R,) the prompt / generate call a row belongs to
    positional: bool = False  # rows are output positions of a greedy run, not rounds

    def __post_init__(self):
        q, top, a = (np.asarray(x) for x in (self.q_token, self.q_top, self.accepted))
        if q.ndim != 2 or q.shape[1] < 1 or q.shape != top.shape:
            raise Message(
                "q_token and q_top must both be (rounds, K_max); got {q_shape} and {top_shape}",
                q_shape=q.shape,
                top_shape=top.shape,
            )
        if a.shape != (q.shape[0],) or not np.issubdtype(a.dtype, np.integer) or a.min(initial=0) < 0:
            raise Message(
                "accepted must be (rounds,) integers in [0, K_max]; got shape {shape}, dtype {dtype}",
                shape=a.shape,
                dtype=a.dtype,
            )
        if a.max(initial=0) > q.shape[1]:
            raise Message("accepted must be at most K_max = {k_max}; got {got}", k_max=q.shape[1], got=a.max())
        for name, x in (("q_token", q), ("q_top", top)):
            if not (np.all(x >= 0) and np.all(x <= 1)):
                raise Message("{name} must hold probabilities in [0, 1]", name=name)

    @property
    def rounds(self) -> int:
        return int(np.asarray(self.accepted).shape[0])

    @property
    def k_max(self) -> int:
        return int(np.asarray(self.q_token).shape[1])

    def segments(self) -> np.ndarray:
        return np.zeros(self.rounds, dtype=np.int64) if self.segment is None else np.asarray(self.segment)


def concat(traces: Sequence[Trace]) -> Trace:
    """One trace of several: rows stacked, each input its own segment."""
    if not traces or len({t.k_max for t in traces}) != 1 or len({t.positional for t in traces}) != 1:
        raise ValueError("concat needs at least one trace, all of one K_max and one kind (positional or rounds)")
    stack = lambda name: np.concatenate([np.asarray(getattr(t, name)) for t in traces])
    p = None if any(t.p_token is None for t in traces) else stack("p_token")
    segment = np.concatenate([np.full(t.rounds, i, dtype=np.int64) for i, t in enumerate(traces)])
    return Trace(stack("q_token"), stack("q_top"), stack("accepted"), p, segment, traces[0].positional)


TRACE_FORMAT = "specviz trace 1"  #: the first line's ``format`` of a trace file


def trace_text(trace: Trace) -> str:
    """JSON lines: a header ``{format, k_max, positional}``, then per row segment, accepted, q_token, q_top, p_token."""
    import json

    p = np.full(np.shape(trace.q_token), np.nan) if trace.p_token is None else np.asarray(trace.p_token)
    lines = [json.dumps({"format": TRACE_FORMAT, "k_max": trace.k_max, "positional": trace.positional})]
    for s, a, q, top, pt in zip(trace.segments(), trace.accepted, trace.q_token, trace.q_top, p, strict=True):
        row = {
            "segment": int(s),
            "accepted": int(a),
            "q_token": [round(float(x), 6) for x in q],
            "q_top": [round(float(x), 6) for x in top],
            "p_token": [None if np.isnan(x) else round(float(x), 6) for x in pt],
        }
        lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def save_trace(trace: Trace, path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(trace_text(trace))


MAX_TRACE_K = 64  #: largest K_max a trace may have (the page's synthetic traces go as far)
MAX_TRACE_ROUNDS = 200_000  #: most rows a trace may hold


MAX_TRACE_BYTES = 20_000_000  #: largest trace file read: the uploader's 20 MB (.streamlit/config.toml)


def load_trace(path) -> Trace:
    """A trace written by :func:`save_trace`; ValueError naming the line and what is wrong."""
    with open(path, "rb") as f:
        return parse_trace(f.read(MAX_TRACE_BYTES + 1), str(path))


def _lines(data: str | bytes):
    """(line number, text) of each non-blank line of ``data``, lazily."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    start, number = 0, 0
    while start < len(data):
        end = data.find(newline, start)
        end = len(data) if end < 0 else end
        number += 1
        line = data[start:end]
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if line.strip():
            yield number, line
        start = end + 1


def parse_trace(data: str | bytes, name: str = "trace") -> Trace:
    """A trace from :func:`save_trace` text or bytes, within the MAX_TRACE_* caps; ValueError naming line and fault."""
    import json

    size = len(data) if isinstance(data, bytes) else len(str(data).encode("utf-8", "surrogatepass"))
    if size > MAX_TRACE_BYTES:
        raise Message(
            "{name}: the trace holds {size} bytes; at most {most} are read",
            name=name,
            size=f"{size:,}",
            most=f"{MAX_TRACE_BYTES:,}",
        )
    lines = _lines(data if isinstance(data, bytes) else str(data))
    first = next(lines, (1, ""))[1]
    try:
        head = json.loads(first) if first.lstrip().startswith("{") and len(first) < 10_000 else {}
    except (ValueError, RecursionError):
        head = {}
    if not isinstance(head, dict) or head.get("format") != TRACE_FORMAT:
        raise Message(
            "{name}: line 1 must be a {fmt!r} header (written by python -m specviz bench --trace)",
            name=name,
            fmt=TRACE_FORMAT,
        )
    k = head.get("k_max")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_TRACE_K:
        raise Message(
            "{name}: the header's k_max must be an integer from 1 to {most}; got {k!r}",
            name=name,
            k=k,
            most=MAX_TRACE_K,
        )
    seg, acc, q, top, pt = [], [], [], [], []
    for n, line in lines:
        if len(acc) == MAX_TRACE_ROUNDS:
            raise Message(
                "{name}: line {line} is past the most rows a trace may hold ({most}); replay a shorter run",
                name=name,
                line=n,
                most=f"{MAX_TRACE_ROUNDS:,}",
            )
        try:
            row = json.loads(line)
            values = [row["q_token"], row["q_top"], [np.nan if x is None else x for x in row["p_token"]]]
            if not all(isinstance(v, list) and len(v) == k for v in values) or int(row["accepted"]) != row["accepted"]:
                raise ValueError
            q.append(values[0]), top.append(values[1]), pt.append(values[2])
            seg.append(int(row["segment"])), acc.append(int(row["accepted"]))
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
            raise Message(
                "{name}: line {line} is not a trace row of K_max = {k} (segment, accepted, q_token, q_top, p_token)",
                name=name,
                line=n,
                k=k,
            ) from None
    if not acc:
        raise Message("{name}: the trace has no rows", name=name)
    try:
        arrays = [np.asarray(x, dtype=float) for x in (q, top, pt)]  # (R, K) each
        return Trace(*arrays[:2], np.asarray(acc), arrays[2], np.asarray(seg), bool(head.get("positional")))
    except (ValueError, TypeError, OverflowError) as exc:
        raise Message("{name}: {cause}", name=name, cause=exc) from None


def synthetic_trace(
    alpha,
    k_max: int,
    rounds: int,
    generator: np.random.Generator,
    confidence: str = "calibrated",
    concentration: float = 2.0,
) -> Trace:
    """An i.i.d. trace: position i accepted with probability a_i (``alpha``, scalar or (K_max,)); q_top = q(x).
    ``"calibrated"``: q(x_i) ~ Beta(κ a_i, κ(1 − a_i)), κ = ``concentration``, accepted with probability q(x_i);
    ``"flat"``: q(x_i) = a_i (confidence carries no information)."""
    k_max, rounds = int(theory.check_k(k_max, "k_max")), int(theory.check_k(rounds, "rounds"))
    a = np.broadcast_to(theory.check_alpha(alpha, "alpha"), (k_max,)).astype(float)  # (K,)
    if confidence == "calibrated":
        if not concentration > 0:
            raise Message("concentration must be > 0; got {concentration}", concentration=concentration)
        lo, hi = np.clip(concentration * a, 1e-9, None), np.clip(concentration * (1 - a), 1e-9, None)
        q = np.where((a > 0) & (a < 1), generator.beta(lo, hi, size=(rounds, k_max)), a)  # (R, K)
    elif confidence == "flat":
        q = np.broadcast_to(a, (rounds, k_max)).copy()
    else:
        raise Message("confidence must be 'calibrated' or 'flat'; got {confidence!r}", confidence=confidence)
    passed = generator.random((rounds, k_max)) < q  # (R, K)
    accepted = np.where(passed.all(1), k_max, np.argmin(passed, axis=1))  # leading passes
    return Trace(q_token=q, q_top=q.copy(), accepted=accepted.astype(np.int64))

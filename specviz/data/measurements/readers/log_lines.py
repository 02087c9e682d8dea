"""What the serving stacks' log readers (vLLM, SGLang, llama.cpp) share: numbers in log text, per-position rates, K checks.

Each reader turns metrics lines into :class:`LogRow` records; :func:`log_table` makes them the
:class:`RawTable` the checks read. With N the tokens a round emits (bonus counted), K the draft length,
A accepted and D drafted tokens, R rounds: E[N] = 1 + A / R, r = A / D, so D / R = (E[N] − 1) / r is the
mean draft length (K when every round drafts K). Engines log unconditional p_i = P(N − 1 ≥ i)
(Σ p_i = E[N] − 1); ``per_position_acceptance`` holds the conditional a_i = p_i / p_(i−1).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from specviz.base.i18n import Message, Phrase
from specviz.data.measurements.aliases import Conversion
from specviz.data.measurements.readers.base import ReadContext
from specviz.data.measurements.report import MeasurementError, RowError, few
from specviz.data.measurements.table import RawColumn, RawTable

#: A number as the engines print it (printf %f / %g, Python format), or nan.
NUM = r"(?:[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|-?nan)"
_SPLIT = re.compile(r"\s*,\s*")


@dataclass
class LogRow:
    """What one metrics line says, in canonical terms."""

    line: int  #: line number in the text (the first line is 1)
    note: str  #: engine, form and line number, and the figures kept as text
    k: int | float | None = None  #: K the line itself states (None: the caller's k)
    mean: float | None = None  #: E[N], bonus token counted
    rate: float | str | None = None  #: r = accepted / drafted, or the logged "x%" text
    positions: list[float] | None = None  #: unconditional p_1, …, p_K as logged
    tokens_per_s: float | None = None  #: total generation throughput
    batch_size: int | float | None = None  #: sequences decoded together
    efficiency: float | None = None  #: E[N] / (K + 1) (vLLM V0 system efficiency), used where E[N] is empty
    rounds: int | float | None = None  #: verification rounds the figures were counted over
    context: float | None = None  #: mean decode context, tokens (prompt + tokens generated so far)
    domain: str | None = None  #: dataset or task of the prompts
    problems: list[str] = field(default_factory=list)  #: how the line contradicts K (row errors on k; Phrases)
    warnings: list[str] = field(default_factory=list)  #: worth a look; the report lists them by line (Phrases)


#: The file's name for each canonical column (a reader passes the header its engine prints).
Headers = dict[str, str]


def number(match: re.Match | None, group: int = 1) -> float | None:
    """The float of a regex group (None: no match); ``nan`` / ``-nan`` read as NaN."""
    if match is None:
        return None
    text = match.group(group)
    return math.nan if text.lower().lstrip("-") == "nan" else float(text)


def integer(match: re.Match | None, group: int = 1) -> int | float | None:
    """The int of a regex group of digits (None: no match); over 18 digits a float (inf past 308)."""
    if match is None:
        return None
    text = match.group(group)
    return int(text) if len(text) <= 18 else float(text)


def number_list(text: str) -> list[float]:
    return [math.nan if x.lower().lstrip("-") == "nan" else float(x) for x in _SPLIT.split(text.strip()) if x]


def ratio(num: int | float | None, den: int | float | None) -> float | None:
    return num / den if num is not None and den else None


def conditional(unconditional: list[float]) -> str:
    """p_i as conditional a_i = p_i / p_(i−1) (p_0 = 1), "a_1;…;a_K", capped at 1; nan where p_(i−1) = 0."""
    prev, cond = 1.0, []
    for x in unconditional:
        cond.append(x / prev if prev > 0 and math.isfinite(x) else math.nan)
        prev = x
    return ";".join("nan" if math.isnan(a) else format(min(a, 1.0), ".6g") for a in cond)


def positions_length_problem(positions: list[float] | None, k: int | None, what: str) -> str | None:
    """Why a per-position list does not fit K (it must have K entries), or None (``what``: the engine's name of it)."""
    if positions is None or k is None or len(positions) == k:
        return None
    return Phrase(
        "the K this line was logged with: its {what} lists {n} per-position rates", what=what, n=len(positions)
    )


def positions_sum_off(positions: list[float] | None, mean: float | None) -> bool:
    """True where unconditional p_i do not sum to E[N] − 1 within 0.01 + 0.0005·K (E[N] to 2 decimals, p_i to 3)."""
    if positions is None or mean is None or not all(map(math.isfinite, [*positions, mean])):
        return False
    return abs(sum(positions) - (mean - 1.0)) > 0.01 + 0.0005 * len(positions)


def drafts_per_round(mean: float | None, rate: float | str | None) -> float | None:
    """D / R = (E[N] − 1) / r, the mean draft length of a round; None where r ≤ 0.02 or E[N] ≤ 1.05."""
    if not isinstance(mean, float) or not isinstance(rate, float) or not (math.isfinite(mean) and math.isfinite(rate)):
        return None
    if rate <= 0.02 or mean - 1.0 <= 0.05:
        return None
    return (mean - 1.0) / rate


def k_mismatch(mean: float | None, rate: float | str | None, k: int | None) -> str | None:
    """Why E[N] and r contradict K where every round drafts K (E[N] = 1 + K·r): (E[N] − 1) / r off K by ≥ 0.5; else None."""
    implied = drafts_per_round(mean, rate)
    if implied is None or k is None or abs(implied - k) < 0.5:
        return None
    return Phrase(
        "the K this line was logged with: mean length {mean:g} and accepted/drafted {rate:.4g} imply K ≈ {implied:.2f} (E[N] = 1 + K·accepted/drafted)",
        mean=mean,
        rate=rate,
        implied=implied,
    )


def stated_k_problem(stated: int | None, given: int | None, field_text: str) -> str | None:
    """Why the caller's k contradicts the K a line states, naming both (None: they agree or one is missing)."""
    if stated is None or given is None or stated == given:
        return None
    return Phrase(
        "the K this line states ({field}: {stated}); k={given} was given", field=field_text, stated=stated, given=given
    )


def collect(rows: Iterable[LogRow], ctx: ReadContext, what: str) -> list[LogRow]:
    """The rows as a list; none (``what`` names the lines looked for; a Phrase) or more than max_rows: MeasurementError."""
    out: list[LogRow] = []
    for row in rows:
        if len(out) >= ctx.max_rows:
            message = Message(
                "{name}: more than max_rows = {max_rows:,} {what} lines",
                name=ctx.name,
                max_rows=ctx.max_rows,
                what=what,
            )
            raise MeasurementError(message, ctx.report)
        out.append(row)
    ctx.report.rows_read = len(out)
    if not out:
        raise MeasurementError(Message("{name}: no {what} line found", name=ctx.name, what=what), ctx.report)
    return out


def log_table(rows: list[LogRow], ctx: ReadContext, headers: Headers) -> RawTable:
    """The rows as a table: k (stated, else the caller's), the figures present (columns no row fills left
    out), notes; per-position rates made conditional; K problems as row errors, warnings once per message."""
    ks = [row.k if row.k is not None else ctx.k for row in rows]
    cells = {
        "mean_accepted_tokens": [r.mean for r in rows],
        "acceptance_rate": [r.rate for r in rows],
        "per_position_acceptance": [None if r.positions is None else conditional(r.positions) for r in rows],
        "tokens_per_s": [r.tokens_per_s for r in rows],
        "batch_size": [r.batch_size for r in rows],
        "system_efficiency": [r.efficiency for r in rows],
        "rounds": [r.rounds for r in rows],
        "context_length": [r.context for r in rows],
        "domain": [r.domain for r in rows],
    }
    cols = {"k": RawColumn("k", headers.get("k", "k (given)"), ks)}
    for name, values in cells.items():
        if any(v is not None for v in values):
            conversion = Conversion.TIMES_K_PLUS_ONE if name == "system_efficiency" else Conversion.NONE
            cols[name] = RawColumn(name, headers.get(name, ""), values, conversion, guess_percent=False)
    cols["notes"] = RawColumn("notes", "", [r.note for r in rows])
    errors = {
        i: [RowError(r.line, "k", str(ks[i]), p, cols["k"].header) for p in r.problems]
        for i, r in enumerate(rows)
        if r.problems
    }
    if "per_position_acceptance" in cols:
        ctx.report.conversions.append(
            Phrase(
                "per-position acceptance (unconditional p_i, as the serving stack logs it) → conditional a_i = p_i / p_(i−1)"
            )
        )
    if any(r.k is None for r in rows) and ctx.k is not None:
        ctx.report.conversions.append(
            Phrase("k = {k} (given by the caller) for the lines that do not state K", k=ctx.k)
        )
    ctx.report.warnings.extend(grouped_warnings(rows))
    return RawTable([r.line for r in rows], cols, row_errors=errors)


def grouped_warnings(rows: list[LogRow]) -> list[str]:
    """Each distinct row warning once, with the lines it applies to ("… (line(s) 3, 7)")."""
    lines: dict[str, list[int]] = {}
    for row in rows:
        for w in row.warnings:
            lines.setdefault(w, []).append(row.line)
    return [Phrase("{warning} (line(s) {lines})", warning=w, lines=few(n)) for w, n in lines.items()]


#: The warning of a line whose unconditional per-position rates do not sum to E[N] − 1 (after "<engine>: ").
POSITIONS_SUM_WARNING = (
    "the per-position rates do not sum to mean length − 1, as unconditional rates p_i must "
    "(Σ p_i = E[N] − 1); they are read as unconditional all the same"
)


def positions_sum_warning(engine: str) -> str:
    return Phrase(
        "{engine}: the per-position rates do not sum to mean length − 1, as unconditional rates p_i must (Σ p_i = E[N] − 1); they are read as unconditional all the same",
        engine=engine,
    )


# --- JSON results (vllm bench serve, SGLang bench_speculative) --------------------------------------


def json_number(obj: dict, key: str) -> float | None:
    """A finite JSON number at ``key`` (bools are not numbers), else None."""
    x = obj.get(key)
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    try:
        x = float(x)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def json_count(obj: dict, key: str) -> int | None:
    x = json_number(obj, key)
    return int(x) if x is not None and x >= 0 and x == int(x) else None


def first_json_object(text: str) -> dict | None:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def json_lines(text: str, what: str):
    """(line number, object, None) for every non-blank JSON-object line, else (line number, None, a row
    error naming ``what``, the format's word for a line)."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            yield lineno, obj, None
        else:
            yield (
                lineno,
                None,
                ("json", f"{line.strip()!s:.120}", Phrase("one JSON object per line ({what})", what=what)),
            )


def json_document(text: str, ctx: ReadContext) -> dict:
    """The text as one JSON object; MeasurementError saying why where it is not (truncated, not an object)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        message = Phrase("{name}: not a complete JSON object ({error})", name=ctx.name, error=str(exc)[:120])
        raise MeasurementError(message, ctx.report) from None
    if not isinstance(obj, dict):
        raise MeasurementError(Phrase("{name}: not a JSON object", name=ctx.name), ctx.report)
    return obj

"""Spec-Bench answer files (``evaluation/eval.py`` output, JSON lines) → one row per ``model_id``.

Lines ``{"question_id", "category", "model_id", "choices": [{"turns", "decoding_steps", "new_tokens",
"wall_time", "accept_lengths"}], …}``; only ``choices[0]``, as Spec-Bench's ``evaluation/speed.py``.
Per model_id (and per ``category`` → ``domain`` where it has several):

* mean_accepted_tokens = mean of all ``accept_lengths`` (bonus counted; Spec-Bench's "#Mean accepted tokens");
* tokens_per_s = mean over questions of Σ new_tokens / Σ wall_time (s); rounds = decoding steps;
* temperature from a ``temp-0.0`` / ``temperature-0.0`` part of model_id.

No speedup (it needs the baseline's file) and no K. Lines that are not answers are row errors.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from specviz.base.i18n import N_, Message, Phrase, plural
from specviz.data.measurements import cells
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.report import MeasurementError, RowError, no_usable_row
from specviz.data.measurements.table import RawColumn, RawTable

_TEMP_IN_ID = re.compile(r"temp(?:erature)?[-_=]?([0-9]+(?:\.[0-9]+)?)", re.IGNORECASE)


class _Problem(NamedTuple):
    """Why a line is not an answer: the field, its value, what is allowed."""

    column: str
    value: object
    allowed: str


class _Answer(NamedTuple):
    """One answer line: its model, the tokens of each decoding step, its speed in tokens/s, its category."""

    model_id: str
    accept_lengths: list[float]
    speed: float
    category: str | None = None


@dataclass
class _Group:
    """The answers of one model_id (or of one of its categories), pooled."""

    row: int  #: line of its first answer
    accept_lengths: list[float] = field(default_factory=list)
    speeds: list[float] = field(default_factory=list)
    categories: dict[str, _Group] = field(default_factory=dict)  #: the same, per question category

    def add(self, answer: _Answer, lineno: int) -> None:
        self.accept_lengths.extend(answer.accept_lengths)
        self.speeds.append(answer.speed)
        if answer.category is not None:
            self.categories.setdefault(answer.category, _Group(lineno)).add(answer._replace(category=None), lineno)


def read(text: str, ctx: ReadContext) -> RawTable:
    """One row per model_id, pooling its answer lines (each weighs one input row)."""
    groups, dropped, n_lines = _pool(text, ctx)
    if n_lines == 0:
        raise MeasurementError(Message("{name}: the file is empty", name=ctx.name), ctx.report)
    if not groups:
        ctx.report.rows_read, ctx.report.row_errors = n_lines, dropped
        raise MeasurementError(no_usable_row(ctx.name, ctx.report), ctx.report)
    if dropped:
        ctx.report.warnings.append(
            Phrase(
                plural(
                    "{n} JSON line skipped (see row errors); the rows pool the others",
                    "{n} JSON lines skipped (see row errors); the rows pool the others",
                    len(dropped),
                ),
                n=len(dropped),
            )
        )
    return _table(groups, dropped, ctx)


def _pool(text: str, ctx: ReadContext) -> tuple[dict[str, _Group], list[RowError], int]:
    """(answers by model_id, errors of the lines that are not answers, non-blank lines)."""
    groups: dict[str, _Group] = {}
    dropped: list[RowError] = []
    n_lines = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        n_lines += 1
        if n_lines > ctx.max_rows:
            message = Message(
                "{name}: more than max_rows = {max_rows:,} JSON lines", name=ctx.name, max_rows=ctx.max_rows
            )
            raise MeasurementError(message, ctx.report)
        answer = parse_answer(line)
        if isinstance(answer, _Problem):
            dropped.append(RowError(lineno, answer.column, cells.cell_text(answer.value)[:200], answer.allowed))
            continue
        groups.setdefault(answer.model_id, _Group(lineno)).add(answer, lineno)
    return groups, dropped, n_lines


def parse_answer(line: str) -> _Answer | _Problem:
    """One JSON line as an answer, or why it is not one."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return _Problem("json", line, Phrase("one JSON object per line"))
    if not isinstance(obj, dict):
        return _Problem("json", line, Phrase("a JSON object ({example}) per line", example="{...}"))
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return _Problem("choices", _short_json(choices), Phrase("a non-empty list of objects (Spec-Bench answer file)"))
    ch = choices[0]
    acc, toks, wall = (_number_list(ch.get(f)) for f in ("accept_lengths", "new_tokens", "wall_time"))
    if acc is None or not acc or any(a < 0 for a in acc):
        return _Problem(
            "choices[0].accept_lengths",
            _short_json(ch.get("accept_lengths")),
            Phrase("a non-empty list of finite numbers >= 0 (tokens per decoding step)"),
        )
    if toks is None or wall is None or not sum(wall) > 0 or sum(toks) < 0:
        return _Problem(
            "choices[0].new_tokens / wall_time",
            _short_json([ch.get("new_tokens"), ch.get("wall_time")]),
            Phrase("lists of finite numbers >= 0, wall_time summing to > 0 s"),
        )
    model_id = obj.get("model_id")
    model_id = str(model_id) if isinstance(model_id, (str, int, float)) else ""
    category = obj.get("category")
    category = category.strip() if isinstance(category, str) and category.strip() else None
    return _Answer(model_id, acc, sum(toks) / sum(wall), category)


def _table(groups: dict[str, _Group], dropped: list[RowError], ctx: ReadContext) -> RawTable:
    """The pooled rows: one per model_id, and one per category where a model_id has two or more."""
    rows: list[tuple[str, str, _Group, str | None]] = []  # (label, model_id, answers, domain)
    for model_id, g in groups.items():
        label = ctx.name if len(groups) == 1 or not model_id else f"{ctx.name}: {model_id}"
        only = next(iter(g.categories)) if len(g.categories) == 1 else None
        rows.append((label, model_id, g, only))
        if len(g.categories) > 1:
            rows += [(f"{label} · {name}", model_id, c, name) for name, c in g.categories.items()]
    temps = [_temperature(model_id, ctx) for model_id in groups]
    by_model = dict(zip(groups, temps, strict=True))
    with np.errstate(all="ignore"):
        means = [float(np.mean(g.accept_lengths)) for _, _, g, _ in rows]
        speeds = [float(np.mean(g.speeds)) for _, _, g, _ in rows]
    ctx.report.conversions.append(
        Phrase(
            "Spec-Bench: mean_accepted_tokens = mean of accept_lengths over all steps (bonus counted); tokens_per_s = mean over questions of Σ new_tokens / Σ wall_time"
        )
    )
    cols = {
        "label": RawColumn("label", "model_id", [r[0] for r in rows]),
        "mean_accepted_tokens": RawColumn("mean_accepted_tokens", "accept_lengths", means),
        "rounds": RawColumn(
            "rounds", "accept_lengths (one per decoding step)", [len(r[2].accept_lengths) for r in rows]
        ),
        "tokens_per_s": RawColumn("tokens_per_s", "new_tokens / wall_time", speeds),
        "temperature": RawColumn("temperature", "model_id", [by_model[r[1]] for r in rows]),
        "domain": RawColumn("domain", "category", [r[3] for r in rows]),
        "method": RawColumn("method", "", ["Spec-Bench run"] * len(rows)),
        "notes": RawColumn("notes", "", [_note(model_id, g, domain) for _, model_id, g, domain in rows]),
    }
    if not any(r[3] for r in rows):
        del cols["domain"]
    return RawTable(
        [g.row for _, _, g, _ in rows],
        cols,
        weights=[len(g.speeds) for _, _, g, _ in rows],
        dropped=dropped,
        n_dropped=len(dropped),
    )


def _temperature(model_id: str, ctx: ReadContext) -> str | None:
    """The temperature a ``temp-0.0`` part of model_id states (reported as a conversion), else None."""
    m = _TEMP_IN_ID.search(model_id)
    if m:
        ctx.report.conversions.append(
            Phrase("temperature {t} read from model_id {model_id!r}", t=m.group(1), model_id=model_id)
        )
    return m.group(1) if m else None


def _note(model_id: str, g: _Group, domain: str | None) -> str:
    where = f", category {domain!r}" if domain else ""
    return (
        f"Spec-Bench model_id {model_id!r}{where}: {len(g.speeds)} question(s), {len(g.accept_lengths)} decoding "
        f"steps (choices[0])"
    )


def _number_list(x) -> list[float] | None:
    if not isinstance(x, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in x):
        return None
    try:
        out = [float(v) for v in x]
    except OverflowError:  # an int beyond float range
        return None
    return out if all(math.isfinite(v) for v in out) else None


def _short_json(x) -> str:
    try:
        s = json.dumps(x)
    except (TypeError, ValueError, RecursionError):
        s = repr(type(x))
    return s if len(s) <= 200 else s[:197] + "…"


def _starts_with_json_object(text: str) -> bool:
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first.startswith("{")


READER = Reader(
    name="spec_bench",
    title=Phrase(N_("Spec-Bench JSON lines")),
    detect=_starts_with_json_object,
    rule="the first non-blank line starts with '{'",
    read=read,
    spellings=("spec-bench", "jsonl"),
    needs_k=True,
)

"""vLLM V1 ``SpecDecoding metrics`` log lines → one row per line (one logging interval).

Reads ``Mean acceptance length`` (= E[N], bonus counted), ``Accepted: A tokens`` and
``Drafted: D tokens`` (acceptance_rate = A / D; else ``Draft acceptance rate: x%``) and
``Per-position acceptance rate: p_1, …, p_K`` — vLLM's p_i is unconditional (drafts that
accepted ≥ i tokens / drafts), stored as the conditional a_i = p_i / p_(i−1) that
``per_position_acceptance`` holds. vLLM does not print K, so the caller gives it; a line
whose per-position list has another length, or whose mean length and A / D imply another
K (E[N] = 1 + K·A/D), is a row error. Other lines are ignored.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from specviz.measurements.readers.base import ReadContext, Reader
from specviz.measurements.report import MeasurementError, RowError
from specviz.measurements.table import RawColumn, RawTable

MARKER = "specdecoding metrics"  #: a line holding this (any case) is a metrics line

_V_NUM = r"(?:[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|nan)"
_FIELDS = {
    "mean": re.compile(r"Mean acceptance length:\s*(" + _V_NUM + ")", re.IGNORECASE),
    "accepted": re.compile(r"(?<![A-Za-z] )Accepted:\s*([0-9]+)\s*tokens", re.IGNORECASE),
    "drafted": re.compile(r"(?<![A-Za-z] )Drafted:\s*([0-9]+)\s*tokens", re.IGNORECASE),
    "positions": re.compile(
        r"Per-position acceptance rate:\s*(" + _V_NUM + r"(?:\s*,\s*" + _V_NUM + r")*)", re.IGNORECASE
    ),
    "rate": re.compile(r"Draft acceptance rate:\s*(" + _V_NUM + r")\s*%", re.IGNORECASE),
}


def is_metrics_line(line: str) -> bool:
    """A vLLM metrics line: it holds ``SpecDecoding metrics`` (any case) and at least one metric field
    (so a CSV cell or a label that merely names the phrase is not one)."""
    return MARKER in line.lower() and any(rx.search(line) for rx in _FIELDS.values())


class _Line(NamedTuple):
    """What one metrics line says."""

    mean: float | None  #: E[N]
    rate: float | str | None  #: A / D, or the logged "x%" text
    positions: str | None  #: conditional a_1;…;a_K
    k_problem: str | None  #: why the line contradicts the given K (None: it does not)


def read(text: str, ctx: ReadContext) -> RawTable:
    """Every metrics line as a row, with the caller's K."""
    rows, parsed = [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not is_metrics_line(line):
            continue
        if len(rows) >= ctx.max_rows:
            raise MeasurementError(f"{ctx.name}: more than max_rows = {ctx.max_rows:,} SpecDecoding lines", ctx.report)
        rows.append(lineno)
        parsed.append(parse_line(line, ctx.k))
    ctx.report.rows_read = len(rows)
    if not rows:
        raise MeasurementError(f"{ctx.name}: no 'SpecDecoding metrics' line found", ctx.report)
    ctx.report.conversions.append("vLLM per-position acceptance (unconditional p_i) → conditional a_i = p_i / p_(i−1)")
    k_errors = {
        i: [RowError(rows[i], "k", str(ctx.k), p.k_problem, "k (given)")]
        for i, p in enumerate(parsed)
        if p.k_problem is not None
    }
    cols = {
        "k": RawColumn("k", "k (given)", [ctx.k] * len(rows)),
        "mean_accepted_tokens": RawColumn("mean_accepted_tokens", "Mean acceptance length", [p.mean for p in parsed]),
        "acceptance_rate": RawColumn("acceptance_rate", "Accepted / Drafted", [p.rate for p in parsed]),
        "per_position_acceptance": RawColumn(
            "per_position_acceptance", "Per-position acceptance rate", [p.positions for p in parsed]
        ),
        "notes": RawColumn("notes", "", [f"vLLM SpecDecoding metrics, log line {r}" for r in rows]),
    }
    return RawTable(rows, cols, row_errors=k_errors)


def parse_line(line: str, k: int) -> _Line:
    """E[N], acceptance rate, conditional per-position rates, and any contradiction with K."""
    found = {key: rx.search(line) for key, rx in _FIELDS.items()}
    mean = float(found["mean"].group(1)) if found["mean"] else None
    rate = None
    if found["accepted"] and found["drafted"]:
        acc, dr = int(found["accepted"].group(1)), int(found["drafted"].group(1))
        rate = acc / dr if dr > 0 else None
    elif found["rate"]:
        rate = f"{found['rate'].group(1)}%"
    positions = k_problem = None
    if found["positions"]:
        p = [float(x) for x in re.split(r"\s*,\s*", found["positions"].group(1).strip())]
        if len(p) != k:
            k_problem = f"the K this line was logged with: it lists {len(p)} per-position rates"
        positions = conditional(p)
    if k_problem is None and isinstance(mean, float) and isinstance(rate, float) and rate > 0.02 and mean - 1 > 0.05:
        implied = (mean - 1.0) / rate
        if abs(implied - k) >= 0.5:
            k_problem = (
                f"the K this line was logged with: mean length {mean:g} and accepted/drafted "
                f"{rate:.4g} imply K ≈ {implied:.2f} (E[N] = 1 + K·accepted/drafted)"
            )
    return _Line(mean, rate, positions, k_problem)


def conditional(unconditional: list[float]) -> str:
    """vLLM's p_i (drafts accepting ≥ i tokens / drafts) as a_i = p_i / p_(i−1), "a_1;…;a_K" (capped at 1)."""
    prev, cond = 1.0, []
    for x in unconditional:
        cond.append(x / prev if prev > 0 and math.isfinite(x) else math.nan)
        prev = x
    return ";".join("nan" if math.isnan(a) else format(min(a, 1.0), ".6g") for a in cond)


READER = Reader(
    name="vllm_log",
    title="vLLM log lines",
    detect=lambda text: MARKER in text.lower() and any(map(is_metrics_line, text.splitlines())),
    rule="a line holds 'SpecDecoding metrics' (any case) and one of its metric fields",
    read=read,
    spellings=("vllm", "log"),
    needs_k=True,
)

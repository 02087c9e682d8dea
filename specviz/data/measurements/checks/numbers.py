"""Numeric cells: parsed into canonical units (percent, unit conversions), K first, then every range."""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Message, Phrase
from specviz.core import theory
from specviz.data.measurements import cells
from specviz.data.measurements.aliases import Conversion
from specviz.data.measurements.checks.rules import (
    DraftLength,
    Errors,
    allowed_at,
    allowed_phrase,
    cell_error,
    in_range,
    rule,
)
from specviz.data.measurements.report import LoadReport, MeasurementError
from specviz.data.measurements.schema import PERCENT_COLUMNS, column_kind, suffixes
from specviz.data.measurements.table import RawColumn, RawTable


def parse_numbers(table: RawTable, report: LoadReport) -> tuple[dict[str, np.ndarray], Errors, set]:
    """Every numeric column as floats (n,) in canonical units; the bad cells, and the non-numbers as a set."""
    values: dict[str, np.ndarray] = {}
    errors: Errors = []
    not_numbers: set[tuple[str, int]] = set()
    for col in table.columns.values():
        if column_kind(col.name) != "number":
            continue
        arr, percent_cells, bad = _parse_column(col, report.decimal_comma)
        allowed = Phrase("a number; {allowed}", allowed=allowed_phrase(col.name))
        errors += [cell_error(table, i, col.name, col.cells[i], allowed) for i in bad]
        not_numbers |= {(col.name, i) for i in bad}
        if percent_cells.any():
            n_pct = int(percent_cells.sum())
            report.conversions.append(
                Phrase("{header!r}: {cells} cell(s) written with '%' divided by 100", header=col.header, cells=n_pct)
            )
        if col.name in PERCENT_COLUMNS:
            arr = percent_column(col, arr, percent_cells, report, table.rows)
        if col.conversion:
            arr = col.conversion.apply(arr)
            report.conversions.append(Phrase("{header!r}: {how}", header=col.header, how=col.conversion.phrase))
        values[col.name] = arr
    return values, errors, not_numbers


def _parse_column(col: RawColumn, decimal_comma: bool) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(values (n,) with NaN where empty or bad, cells written with '%' (n,), indices of non-number cells)."""
    n = len(col.cells)
    arr, percent_cells, bad = np.full(n, np.nan), np.zeros(n, dtype=bool), []
    allowed_suffixes = suffixes(col.name)
    for i, cell in enumerate(col.cells):
        try:
            x, percent_cells[i] = cells.parse_number(cell, decimal_comma, allowed_suffixes)
        except cells.Bad:
            bad.append(i)
            continue
        if x is not None:
            arr[i] = x
    return arr, percent_cells, bad


def percent_column(col: RawColumn, arr: np.ndarray, percent_cells: np.ndarray, report: LoadReport, rows: list[int]):
    """A rate column / 100 where its header says percent, or (a file's column) its plain values lie in [0, 100]
    with some > 1 and none in (0, 1); a column mixing both is not guessed (a warning)."""
    plain = ~percent_cells & np.isfinite(arr)
    if not plain.any():
        return arr
    vals = arr[plain]
    if col.percent:
        note = Phrase("{header!r}: percent (the header says percent) divided by 100", header=col.header)
    elif col.guess_percent and (vals > 1).any() and (vals <= 100).all() and (vals >= 0).all():
        fractions = plain & (arr > 0) & (arr < 1)
        if fractions.any():  # 0.8 next to 60: a fraction or 0.8 %? Not guessed.
            row = rows[int(np.flatnonzero(fractions)[0])]
            report.warnings.append(
                Phrase(
                    "{header!r} mixes values in (0, 1) (e.g. row {row}) with values > 1, so it is not read as percent and the values > 1 are errors; if the column is in percent, write '%' in its header",
                    header=col.header,
                    row=row,
                )
            )
            return arr
        note = Phrase(
            "{header!r}: percent (values in [0, 100], up to {top:g}) divided by 100", header=col.header, top=vals.max()
        )
    else:
        return arr
    out = arr.copy()
    out[plain] = arr[plain] / 100.0
    report.conversions.append(note)
    return out


def check_k(
    table: RawTable,
    values: dict[str, np.ndarray],
    not_numbers: set,
    k_given: int | None,
    report: LoadReport,
    name: str,
) -> tuple[dict[str, np.ndarray], DraftLength, Errors]:
    """K of every row (the column, else ``k_given``), an integer in [1, K_LIMIT]; the bad K cells.
    Raises MeasurementError with neither."""
    n = len(table.rows)
    if "k" not in values:
        if k_given is None:  # the CSV reader checks required columns first; other readers pass k
            raise MeasurementError(Message("{name}: no draft length K (column 'k') and no k given", name=name), report)
        values = {**values, "k": np.full(n, float(k_given))}
        report.conversions.append(Phrase("k = {k} for every row (given by the caller)", k=k_given))
    k = values["k"]
    ok = np.isfinite(k) & (k >= 1) & (k <= theory.K_LIMIT) & (k == np.floor(k))
    col = table.columns.get("k")
    errors: Errors = []
    for i in np.flatnonzero(~ok):
        if ("k", i) in not_numbers:
            continue
        if col is not None and col.conversion is Conversion.K_MINUS_ONE:
            allowed = Phrase("an integer >= 2 (= K + 1; {header} counts the root token)", header=col.header)
        elif np.isnan(k[i]):
            allowed = Phrase("required: {allowed}", allowed=allowed_phrase("k"))
        else:
            allowed = allowed_phrase("k")
        errors.append(cell_error(table, i, "k", col.cells[i] if col is not None else k[i], allowed))
    return values, DraftLength(ok, np.where(ok, k, 1.0)), errors


def add_bonus_token(table: RawTable, values: dict[str, np.ndarray], report: LoadReport) -> dict[str, np.ndarray]:
    """E[N] = value + 1 for a mean length declared without the bonus token (unless its header said so already)."""
    if "mean_accepted_tokens" not in values:
        return values
    col = table.columns.get("mean_accepted_tokens")
    if col is not None and col.conversion is Conversion.ADD_BONUS:  # shifted by its name already
        return values
    header = col.header if col else "mean acceptance length"
    report.conversions.append(Phrase("{header!r}: declared without the bonus token, E[N] = value + 1", header=header))
    return {**values, "mean_accepted_tokens": values["mean_accepted_tokens"] + 1.0}


def check_ranges(
    table: RawTable, values: dict[str, np.ndarray], k: DraftLength, no_bonus: bool
) -> tuple[dict[str, np.ndarray], Errors]:
    """Every numeric cell in its column's range; rates and E[N] clipped into range by at most the tolerance."""
    out: dict[str, np.ndarray] = {}
    errors: Errors = []
    for name, arr in values.items():
        if name == "k":
            out[name] = arr
            continue
        col = table.columns.get(name)
        source = col.cells if col else arr
        present, ok = ~np.isnan(arr), in_range(name, arr, k)
        for i in np.flatnonzero(present & ~ok):
            allowed = allowed_at(name, col, k.k[i] if k.ok[i] else None, no_bonus)
            errors.append(cell_error(table, i, name, source[i], allowed))
        if rule(name) in ("rate", "tokens", "efficiency"):  # clipped into range by at most the tolerance
            tokens = rule(name) == "tokens"
            lo = 1.0 if tokens else 0.0
            hi = k.k + 1.0 if tokens else 1.0
            arr = np.where(present & ok, np.clip(arr, lo, hi), arr)
        out[name] = arr
    return out, errors

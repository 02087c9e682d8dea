"""Validate a :class:`~specviz.data.measurements.table.RawTable` cell by cell; the one path for every format.

:func:`validate` runs named steps in order. Each step takes what it needs explicitly and
returns its values and its bad cells (``(row index, RowError)`` pairs); the conversions and
warnings it applies are noted in the :class:`~specviz.data.measurements.report.LoadReport`, which
is the record of how the file was read. A row with any bad cell is skipped; the others load.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.base.i18n import Message, Phrase, plural
from specviz.core import theory
from specviz.data.measurements import cells
from specviz.data.measurements.aliases import Conversion
from specviz.data.measurements.report import LoadReport, MeasurementError, RowError, few, no_usable_row
from specviz.data.measurements.schema import (
    ACCEPTANCE_COLUMNS,
    ALLOWED,
    BY_NAME,
    INT_MAX,
    PERCENT_COLUMNS,
    column_kind,
    output_column,
    suffixes,
)
from specviz.data.measurements.table import RawColumn, RawTable

Errors = list[tuple[int, RowError]]  #: bad cells found by one step: (row index in the table, error)
_TOL = 1e-9  #: slack of range checks (rates at 1 + 1e-12 are rounding, not errors)


@dataclass
class Validated:
    """The checked table: numbers in canonical units, text columns, and which rows load."""

    values: dict[str, np.ndarray]  #: numeric columns (n,), NaN where empty
    text: dict[str, list]  #: text, boolean and per-position columns (n,)
    keep: np.ndarray  #: (n,) bool: the row has no bad cell
    rows: list[int]  #: file row number of each row
    c_from_c_l: np.ndarray  #: (n,) bool: c came from 1 / c_L


@dataclass(frozen=True)
class _K:
    """The draft length of every row and whether it is valid (``k`` is 1 where it is not)."""

    ok: np.ndarray  #: (n,) bool
    k: np.ndarray  #: (n,) float


def validate(table: RawTable, report: LoadReport, name: str, no_bonus: bool, k_given: int | None) -> Validated:
    """Parse, convert and range-check every cell; fill converted columns; keep the rows without errors."""
    n = len(table.rows)
    if n == 0:
        report.rows_read, report.row_errors = table.n_dropped, list(table.dropped)
        raise MeasurementError(no_usable_row(name, report), report)
    errors = [list(table.row_errors.get(i, [])) for i in range(n)]
    values, found, not_numbers = parse_numbers(table, report)
    errors = _merge(errors, found)
    values, k, found = check_k(table, values, not_numbers, k_given, report, name)
    errors = _merge(errors, found)
    if no_bonus:
        values = add_bonus_token(table, values, report)
    values, found = check_ranges(table, values, k, no_bonus)
    errors = _merge(errors, found)
    text, found = parse_other_columns(table, k, report.decimal_comma)
    errors = _merge(errors, found)
    text = fill_label(text, n, name, report)
    values, c_from_c_l, found = fill_c_from_c_l(table, values)
    errors = _merge(errors, found)
    values = fill_mean_from_efficiency(values, k)
    values = fill_speedup_from_throughput(values, report)
    has_acceptance, found = require_acceptance(table, values, errors)
    errors = _merge(errors, found)
    clean = np.array([not e for e in errors], dtype=bool)
    report.warnings.extend(speedup_only_warning(values, has_acceptance & clean, table.rows))
    report.warnings.extend(disagreement_warning(values, clean, k, table.rows))
    _count_rows(table, errors, clean, report, name)
    return Validated(values, text, clean, table.rows, c_from_c_l)


def _merge(errors: list[list[RowError]], found: Errors) -> list[list[RowError]]:
    """Per-row error lists with ``found`` appended, in the order the steps found them."""
    merged = [list(e) for e in errors]
    for i, error in found:
        merged[i].append(error)
    return merged


#: The allowed values of each range rule (schema.RULES) as a Phrase: the English text of schema.ALLOWED.
_ALLOWED_PHRASES = {
    "k": lambda: Phrase("an integer in [1, {hi}]", hi=theory.K_LIMIT),
    "tokens": lambda: Phrase("[1, K + 1]"),
    "c_l": lambda: Phrase("a finite number > 0 (c_L = T_draft / T_target)"),
    "efficiency": lambda: Phrase("[1 / (K + 1), 1]"),
    "positions": lambda: Phrase("{n} numbers in [0, 1] (or nan) separated by ';'", n="K"),
    "bool": lambda: Phrase("true / false (or empty)"),
    "depth": lambda: Phrase("an integer in [1, {hi}]", hi="K"),
    "rate": lambda: Phrase("[0, 1]"),
    "positive": lambda: Phrase("a finite number > 0"),
    "nonnegative": lambda: Phrase("a finite number >= 0"),
    "count": lambda: Phrase("an integer in [1, {hi}]", hi=INT_MAX),
}


def _rule(name: str) -> str | None:
    column = BY_NAME.get(name)
    return column.rule if column is not None else None


def allowed_phrase(name: str) -> str:
    """:data:`~specviz.data.measurements.schema.ALLOWED` of column ``name`` as a Phrase (the same English text)."""
    phrase = _ALLOWED_PHRASES.get(_rule(name))
    return phrase() if phrase is not None else ALLOWED.get(name, "")


def cell_error(table: RawTable, i: int, column: str, cell, allowed: str) -> tuple[int, RowError]:
    """The error of cell ``i`` of ``column``, named by its canonical column and the file's header."""
    header = table.columns[column].header if column in table.columns else ""
    return i, RowError(table.rows[i], output_column(column), cells.cell_text(cell), allowed, header)


def _count_rows(table: RawTable, errors: list[list[RowError]], keep: np.ndarray, report: LoadReport, name: str):
    """Record the bad cells and row counts (pooled rows count as the input rows they pool); none kept: raise."""
    report.row_errors = sorted([*table.dropped, *(e for errs in errors for e in errs)], key=lambda e: e.row)
    weights = np.ones(len(keep), dtype=int) if table.weights is None else np.asarray(table.weights, dtype=int)
    report.rows_read = int(weights.sum()) + table.n_dropped
    report.rows_loaded = int(weights[keep].sum())
    if not keep.any():
        raise MeasurementError(no_usable_row(name, report), report)


# --------------------------------------------------------------------------------------
# numbers: parse, percent, unit conversions
# --------------------------------------------------------------------------------------


def parse_numbers(table: RawTable, report: LoadReport) -> tuple[dict[str, np.ndarray], Errors, set]:
    """Every numeric column as floats in canonical units; the cells that are not numbers (also as a set)."""
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
    """A rate column divided by 100 if its header says percent, or if its values can only be percentages.

    Percent when the header says so, or (for a file's column, never for in-memory rows) when the plain
    values lie in [0, 100] with some > 1 and none in (0, 1); a column mixing 0.8 and 80 is not guessed (a warning; values > 1 are errors).
    """
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


# --------------------------------------------------------------------------------------
# K first: other ranges depend on it
# --------------------------------------------------------------------------------------


def check_k(
    table: RawTable,
    values: dict[str, np.ndarray],
    not_numbers: set,
    k_given: int | None,
    report: LoadReport,
    name: str,
) -> tuple[dict[str, np.ndarray], _K, Errors]:
    """K of every row (the file's column, else ``k_given``), integer in [1, K_LIMIT]; bad K cells."""
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
    return values, _K(ok, np.where(ok, k, 1.0)), errors


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


# --------------------------------------------------------------------------------------
# ranges
# --------------------------------------------------------------------------------------


def check_ranges(
    table: RawTable, values: dict[str, np.ndarray], k: _K, no_bonus: bool
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
        present, ok = ~np.isnan(arr), _in_range(name, arr, k)
        for i in np.flatnonzero(present & ~ok):
            allowed = allowed_at(name, col, k.k[i] if k.ok[i] else None, no_bonus)
            errors.append(cell_error(table, i, name, source[i], allowed))
        if _rule(name) in ("rate", "tokens", "efficiency"):  # clipped into range by at most the tolerance
            tokens = _rule(name) == "tokens"
            lo = 1.0 if tokens else 0.0
            hi = k.k + 1.0 if tokens else 1.0
            arr = np.where(present & ok, np.clip(arr, lo, hi), arr)
        out[name] = arr
    return out, errors


def _in_range(name: str, arr: np.ndarray, k: _K) -> np.ndarray:
    """(n,) bool: the value of column ``name`` is allowed by its rule (NaN cells are False; callers skip them)."""
    finite, rule = np.isfinite(arr), _rule(name)
    if rule == "depth":
        return finite & (arr >= 1) & (arr == np.floor(arr)) & (arr <= np.where(k.ok, k.k, INT_MAX))
    if rule == "tokens":
        return (arr >= 1 - _TOL) & (arr <= np.where(k.ok, k.k + 1, np.inf) * (1 + _TOL))
    if rule == "rate":
        return (arr >= -_TOL) & (arr <= 1 + _TOL)
    if rule in ("positive", "c_l"):
        return finite & (arr > 0)
    if rule == "nonnegative":
        return finite & (arr >= 0)
    if rule == "count":
        return finite & (arr >= 1) & (arr <= INT_MAX) & (arr == np.floor(arr))
    if rule == "efficiency":
        return (arr >= (1 - _TOL) / (k.k + 1)) & (arr <= 1 + _TOL)
    raise AssertionError(f"{name}: rule {rule!r} has no range check")  # pragma: no cover - schema.RULES


def allowed_at(name: str, col: RawColumn | None, k: float | None, no_bonus: bool) -> str:
    """The allowed range of a cell, in the file's own terms where a conversion applied."""
    ks = "K" if k is None else str(int(k))
    kp1 = "K + 1" if k is None else str(int(k) + 1)
    conversion = col.conversion if col is not None else Conversion.NONE
    if name == "mean_accepted_tokens":
        if no_bonus or conversion is Conversion.ADD_BONUS:
            return Phrase(
                "[0, {k}] (mean acceptance length without the bonus token; E[N] = value + 1 in [1, {k1}])", k=ks, k1=kp1
            )
        if k is None:
            return allowed_phrase(name)
        return Phrase("[1, {k1}] (E[N], bonus token counted, K = {k})", k=ks, k1=kp1)
    if name == "system_efficiency":
        return Phrase("[1/{k1}, 1] (E[N] / (K + 1))", k1=kp1)
    if name == "predicted_tokens_per_round":
        return Phrase("[1, {k1}] (tokens per round, K = {k})", k=ks, k1=kp1)
    if name == "tree_depth":
        return (
            Phrase("an integer in [1, {k}] (a tree of K = {k} drafts)", k=ks) if k is not None else allowed_phrase(name)
        )
    if conversion.file_unit:
        return Phrase("a finite number > 0 ({unit})", unit=conversion.file_unit)
    if _rule(name) == "rate" and col is not None:
        return Phrase("{allowed} (a column wholly in percent is read as percent)", allowed=allowed_phrase(name))
    return allowed_phrase(name)


# --------------------------------------------------------------------------------------
# text, booleans, per-position lists, label
# --------------------------------------------------------------------------------------


def parse_other_columns(table: RawTable, k: _K, decimal_comma: bool) -> tuple[dict[str, list], Errors]:
    """Text (stripped, empty → None), booleans and per-position lists (normalised to "a;b;…")."""
    out: dict[str, list] = {}
    errors: Errors = []
    for col in table.columns.values():
        kind = column_kind(col.name)
        if kind == "text":
            out[col.name] = [None if c is None or str(c).strip() == "" else str(c).strip() for c in col.cells]
        elif kind == "bool":
            out[col.name], found = _parse_bools(table, col)
            errors += found
        elif kind == "positions":
            out[col.name], found = _parse_position_lists(table, col, k, decimal_comma)
            errors += found
    return out, errors


def _parse_bools(table: RawTable, col: RawColumn) -> tuple[list, Errors]:
    """True / False / None per cell; cells that are none of them are errors (and None)."""
    out, errors = [], []
    for i, c in enumerate(col.cells):
        try:
            out.append(cells.parse_bool(c))
        except cells.Bad:
            out.append(None)
            errors.append(cell_error(table, i, col.name, c, allowed_phrase(col.name)))
    return out, errors


def _parse_position_lists(table: RawTable, col: RawColumn, k: _K, decimal_comma: bool) -> tuple[list, Errors]:
    """Per-position acceptance cells as "a_1;…;a_K" (6 significant digits); wrong length or values: errors."""
    out, errors = [], []
    for i, c in enumerate(col.cells):
        try:
            parsed = cells.parse_positions(c, decimal_comma)
        except cells.Bad:
            parsed = False
        if parsed is False or (parsed is not None and k.ok[i] and len(parsed) != int(k.k[i])):
            n_k = f"{int(k.k[i])}" if k.ok[i] else "K"
            errors.append(
                cell_error(table, i, col.name, c, Phrase("{n} numbers in [0, 1] (or nan) separated by ';'", n=n_k))
            )
            out.append(None)
        elif parsed is None:
            out.append(None)
        else:
            out.append(";".join("nan" if np.isnan(x) else format(x, ".6g") for x in parsed))
    return out, errors


def fill_label(text: dict[str, list], n: int, name: str, report: LoadReport) -> dict[str, list]:
    """Rows without a label are labelled ``name`` (the file's name)."""
    if "label" not in text:
        report.conversions.append(Phrase("no label column: label = {name!r} for every row", name=name))
        return {**text, "label": [name] * n}
    labels = [name if v is None else v for v in text["label"]]
    n_empty = sum(v is None for v in text["label"])
    if n_empty:
        report.conversions.append(
            Phrase(
                plural("{n} empty label set to {name!r}", "{n} empty labels set to {name!r}", n_empty),
                n=n_empty,
                name=name,
            )
        )
    return {**text, "label": labels}


# --------------------------------------------------------------------------------------
# converted sources fill the canonical columns they stand for
# --------------------------------------------------------------------------------------


def fill_c_from_c_l(table: RawTable, values: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray, Errors]:
    """c = 1 / c_L where c is empty; (values, rows whose c came from c_L, c_L cells whose inverse overflows)."""
    n = len(table.rows)
    if "c_l" not in values:
        return values, np.zeros(n, dtype=bool), []
    c_l = values["c_l"]
    c_from_l = np.full(n, np.nan)
    good = np.isfinite(c_l) & (c_l > 0)
    with np.errstate(all="ignore"):
        c_from_l[good] = theory.c_from_leviathan(c_l[good])
    overflow = good & ~np.isfinite(c_from_l)  # a subnormal c_L: 1 / c_L overflows
    errors = [
        cell_error(table, i, "c_l", table.columns["c_l"].cells[i], Phrase("a c_L whose inverse c = 1 / c_L is finite"))
        for i in np.flatnonzero(overflow)
    ]
    c = values.get("c", np.full(n, np.nan))
    fill = np.isnan(c) & good & np.isfinite(c_from_l)
    return {**values, "c": np.where(fill, c_from_l, c)}, fill, errors


def fill_mean_from_efficiency(values: dict[str, np.ndarray], k: _K) -> dict[str, np.ndarray]:
    """E[N] = value × (K + 1) from a system efficiency / SGLang accept rate where E[N] is empty."""
    if "system_efficiency" not in values:
        return values
    se = values["system_efficiency"]
    mean = values.get("mean_accepted_tokens", np.full(len(se), np.nan))
    fill = np.isnan(mean) & ~np.isnan(se) & k.ok
    with np.errstate(all="ignore"):  # a huge (invalid) value may overflow; its row is already an error
        mean = np.where(fill, se * (k.k + 1), mean)
    return {**values, "mean_accepted_tokens": np.where(fill, np.clip(mean, 1, k.k + 1), mean)}


def fill_speedup_from_throughput(values: dict[str, np.ndarray], report: LoadReport) -> dict[str, np.ndarray]:
    """speedup = tokens_per_s / baseline_tokens_per_s when the file has no speedup column."""
    if "speedup" in values or "tokens_per_s" not in values or "baseline_tokens_per_s" not in values:
        return values
    with np.errstate(all="ignore"):
        ratio = values["tokens_per_s"] / values["baseline_tokens_per_s"]
    speedup = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
    if np.isfinite(speedup).any():
        report.conversions.append(Phrase("speedup = tokens_per_s / baseline_tokens_per_s"))
    return {**values, "speedup": speedup}


# --------------------------------------------------------------------------------------
# every row needs an acceptance figure (or a speedup); the figures must agree
# --------------------------------------------------------------------------------------


def require_acceptance(
    table: RawTable, values: dict[str, np.ndarray], errors: list[list[RowError]]
) -> tuple[np.ndarray, Errors]:
    """(n,) bool: the row has alpha, E[N], r or a speedup; an error for each row with none (not reported yet)."""
    measures = (*ACCEPTANCE_COLUMNS, "speedup")
    has = np.zeros(len(table.rows), dtype=bool)
    for name in measures:
        if name in values:
            has |= ~np.isnan(values[name])
    allowed = Phrase("one of alpha, mean_accepted_tokens, acceptance_rate or speedup (all empty in this row)")
    found = [
        (int(i), RowError(table.rows[i], "alpha", "", allowed))
        for i in np.flatnonzero(~has)
        if not any(e.column in measures for e in errors[i])  # not already reported as a bad cell
    ]
    return has, found


def speedup_only_warning(values: dict[str, np.ndarray], clean_with_measure: np.ndarray, rows: list[int]) -> list[str]:
    """A warning naming the rows that give a speedup but no acceptance figure (loaded without α)."""
    if "speedup" not in values:
        return []
    empty = [np.isnan(values[c]) for c in ACCEPTANCE_COLUMNS if c in values]
    only = clean_with_measure & np.all(empty or [np.ones(len(rows), dtype=bool)], axis=0)
    if not only.any():
        return []
    return [
        Phrase(
            "row(s) {rows} give a speedup but no acceptance figure (alpha, mean accepted tokens or acceptance rate): loaded as speedup-only rows, without α or a prediction",
            rows=few([rows[i] for i in np.flatnonzero(only)]),
        )
    ]


def disagreement_warning(values: dict[str, np.ndarray], clean: np.ndarray, k: _K, rows: list[int]) -> list[str]:
    """A warning where E[N] and r disagree (E[N] ≠ 1 + r·K by more than 2 %); shown, not fixed."""
    if "mean_accepted_tokens" not in values or "acceptance_rate" not in values:
        return []
    mean, rate = values["mean_accepted_tokens"], values["acceptance_rate"]
    checked = clean & ~np.isnan(mean) & ~np.isnan(rate) & k.ok
    with np.errstate(all="ignore"):
        off = checked & (np.abs(1.0 + rate * k.k - mean) > 0.02 * mean)
        sglang_like = off & (np.abs(rate * (k.k + 1) - mean) <= 0.02 * mean)
    if not off.any():
        return []
    shown = few([rows[i] for i in np.flatnonzero(off)])
    if sglang_like.sum() == off.sum():
        return [
            Phrase(
                "mean_accepted_tokens and acceptance_rate disagree (E[N] ≠ 1 + r·K by more than 2 %) in row(s) {rows}; alpha_used comes from mean_accepted_tokens — they fit E[N] / (K + 1), SGLang's 'accept rate': name that column 'sglang_accept_rate'",
                rows=shown,
            )
        ]
    return [
        Phrase(
            "mean_accepted_tokens and acceptance_rate disagree (E[N] ≠ 1 + r·K by more than 2 %) in row(s) {rows}; alpha_used comes from mean_accepted_tokens",
            rows=shown,
        )
    ]

"""Check a :class:`~specviz.data.measurements.table.RawTable` cell by cell, in named steps: the one path for every format."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.data.measurements.checks.acceptance import (
    disagreement_warning,
    fill_c_from_c_l,
    fill_mean_from_efficiency,
    fill_speedup_from_throughput,
    require_acceptance,
    speedup_only_warning,
)
from specviz.data.measurements.checks.columns import fill_label, parse_other_columns
from specviz.data.measurements.checks.numbers import add_bonus_token, check_k, check_ranges, parse_numbers
from specviz.data.measurements.checks.rules import Errors, allowed_phrase
from specviz.data.measurements.report import LoadReport, MeasurementError, RowError, no_usable_row
from specviz.data.measurements.table import RawTable

__all__ = ["CheckedTable", "allowed_phrase", "check_k", "check_ranges", "check_table", "parse_numbers"]


@dataclass
class CheckedTable:
    """The checked table: numbers in canonical units, text columns, and which rows load."""

    values: dict[str, np.ndarray]  #: numeric columns (n,), NaN where empty
    text: dict[str, list]  #: text, boolean and per-position columns (n,)
    keep: np.ndarray  #: (n,) bool: the row has no bad cell
    rows: list[int]  #: file row number of each row
    c_from_c_l: np.ndarray  #: (n,) bool: c came from 1 / c_L


def check_table(table: RawTable, report: LoadReport, name: str, no_bonus: bool, k_given: int | None) -> CheckedTable:
    """Parse, convert and range-check every cell, fill converted columns, and keep the rows without errors
    (conversions and warnings noted in ``report``). Raises MeasurementError: no usable row, or no K."""
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
    return CheckedTable(values, text, clean, table.rows, c_from_c_l)


def _merge(errors: list[list[RowError]], found: Errors) -> list[list[RowError]]:
    """Per-row error lists with ``found`` appended, in the order the steps found them."""
    merged = [list(e) for e in errors]
    for i, error in found:
        merged[i].append(error)
    return merged


def _count_rows(table: RawTable, errors: list[list[RowError]], keep: np.ndarray, report: LoadReport, name: str):
    """Record the bad cells and row counts (pooled rows count as the input rows they pool); none kept: raise."""
    report.row_errors = sorted([*table.dropped, *(e for errs in errors for e in errs)], key=lambda e: e.row)
    weights = np.ones(len(keep), dtype=int) if table.weights is None else np.asarray(table.weights, dtype=int)
    report.rows_read = int(weights.sum()) + table.n_dropped
    report.rows_loaded = int(weights[keep].sum())
    if not keep.any():
        raise MeasurementError(no_usable_row(name, report), report)

"""Acceptance figures: filled from the columns that stand for them, required in every row, checked to agree."""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Phrase
from specviz.core import theory
from specviz.data.measurements.checks.rules import DraftLength, Errors, cell_error
from specviz.data.measurements.report import LoadReport, RowError, few
from specviz.data.measurements.schema import ACCEPTANCE_COLUMNS
from specviz.data.measurements.table import RawTable


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


def fill_mean_from_efficiency(values: dict[str, np.ndarray], k: DraftLength) -> dict[str, np.ndarray]:
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


def disagreement_warning(
    values: dict[str, np.ndarray], clean: np.ndarray, k: DraftLength, rows: list[int]
) -> list[str]:
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

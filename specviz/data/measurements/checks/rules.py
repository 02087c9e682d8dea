"""What each column allows: the range test of every rule, its allowed text, and the error of one bad cell."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.base.i18n import Phrase
from specviz.core import theory
from specviz.data.measurements import cells
from specviz.data.measurements.aliases import Conversion
from specviz.data.measurements.report import RowError
from specviz.data.measurements.schema import ALLOWED, BY_NAME, INT_MAX, output_column
from specviz.data.measurements.table import RawColumn, RawTable

Errors = list[tuple[int, RowError]]  #: bad cells found by one step: (row index in the table, error)
TOL = 1e-9  #: slack of range checks (rates at 1 + 1e-12 are rounding, not errors)


@dataclass(frozen=True)
class DraftLength:
    """The draft length of every row and whether it is valid (``k`` is 1 where it is not)."""

    ok: np.ndarray  #: (n,) bool
    k: np.ndarray  #: (n,) float


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


def rule(name: str) -> str | None:
    """The range rule of column ``name`` (``schema.RULES``), None for a column without one."""
    column = BY_NAME.get(name)
    return column.rule if column is not None else None


def allowed_phrase(name: str) -> str:
    """:data:`~specviz.data.measurements.schema.ALLOWED` of column ``name`` as a Phrase (the same English text)."""
    phrase = _ALLOWED_PHRASES.get(rule(name))
    return phrase() if phrase is not None else ALLOWED.get(name, "")


def cell_error(table: RawTable, i: int, column: str, cell, allowed: str) -> tuple[int, RowError]:
    """The error of cell ``i`` of ``column``, named by its canonical column and the file's header."""
    header = table.columns[column].header if column in table.columns else ""
    return i, RowError(table.rows[i], output_column(column), cells.cell_text(cell), allowed, header)


def in_range(name: str, arr: np.ndarray, k: DraftLength) -> np.ndarray:
    """(n,) bool: the value of column ``name`` is allowed by its rule (NaN cells are False; callers skip them)."""
    finite, kind = np.isfinite(arr), rule(name)
    if kind == "depth":
        return finite & (arr >= 1) & (arr == np.floor(arr)) & (arr <= np.where(k.ok, k.k, INT_MAX))
    if kind == "tokens":
        return (arr >= 1 - TOL) & (arr <= np.where(k.ok, k.k + 1, np.inf) * (1 + TOL))
    if kind == "rate":
        return (arr >= -TOL) & (arr <= 1 + TOL)
    if kind in ("positive", "c_l"):
        return finite & (arr > 0)
    if kind == "nonnegative":
        return finite & (arr >= 0)
    if kind == "count":
        return finite & (arr >= 1) & (arr <= INT_MAX) & (arr == np.floor(arr))
    if kind == "efficiency":
        return (arr >= (1 - TOL) / (k.k + 1)) & (arr <= 1 + TOL)
    raise AssertionError(f"{name}: rule {kind!r} has no range check")  # pragma: no cover - schema.RULES


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
    if rule(name) == "rate" and col is not None:
        return Phrase("{allowed} (a column wholly in percent is read as percent)", allowed=allowed_phrase(name))
    return allowed_phrase(name)

"""Text, boolean and per-position cells, and the label every row gets."""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Phrase, plural
from specviz.data.measurements import cells
from specviz.data.measurements.checks.rules import DraftLength, Errors, allowed_phrase, cell_error
from specviz.data.measurements.report import LoadReport
from specviz.data.measurements.schema import column_kind
from specviz.data.measurements.table import RawColumn, RawTable


def parse_other_columns(table: RawTable, k: DraftLength, decimal_comma: bool) -> tuple[dict[str, list], Errors]:
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


def _parse_position_lists(table: RawTable, col: RawColumn, k: DraftLength, decimal_comma: bool) -> tuple[list, Errors]:
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

"""The cost model against published measurements: predictors, targets, your rows, and a profile fitted to them.

``predictors`` scores the published rows (:mod:`specviz.core.published`), ``rows`` checks your own
rows cell by cell, ``calibrate`` fits a profile to them with ``published.fit_profile``.
"""

from __future__ import annotations

from specviz.core.validation.calibrate import calibrate, fit_errors, fit_summary, terms_table
from specviz.core.validation.predictors import (
    KINDS_SCORED,
    PREDICTORS,
    ROW_COLUMNS,
    TARGETS,
    WITHIN,
    inputs_stamp,
    keep,
    names_in,
    per_row,
    predict_yours,
    predictions,
    published_rows,
    regime_errors,
    side_by_side,
    verdicts,
)
from specviz.core.validation.rows import (
    DEFAULTS,
    KINDS,
    LIMITS,
    MAX_ROWS,
    METHODS,
    NEEDED,
    RENAMED,
    REQUIRED,
    YOURS,
    check_draft,
    check_rows,
    read_table,
    renamed_columns,
    rows_from_csv,
    rows_from_run,
)

__all__ = [
    "DEFAULTS",
    "KINDS",
    "KINDS_SCORED",
    "LIMITS",
    "MAX_ROWS",
    "METHODS",
    "NEEDED",
    "PREDICTORS",
    "RENAMED",
    "REQUIRED",
    "ROW_COLUMNS",
    "TARGETS",
    "WITHIN",
    "YOURS",
    "calibrate",
    "check_draft",
    "check_rows",
    "fit_errors",
    "fit_summary",
    "inputs_stamp",
    "keep",
    "names_in",
    "per_row",
    "predict_yours",
    "predictions",
    "published_rows",
    "read_table",
    "regime_errors",
    "renamed_columns",
    "rows_from_csv",
    "rows_from_run",
    "side_by_side",
    "terms_table",
    "verdicts",
]

"""Runs as CSV for download, with text cells that a spreadsheet would run as formulas escaped."""

from __future__ import annotations

import pandas as pd

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

#: load_runs' run columns as exported: last, and named so that no engine alias maps them to ``label``.
EXPORT_RUN_COLUMNS = {"run_id": "library_run_id", "run": "library_run"}


def escape_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix ``'`` to text cells starting with = + - @ tab CR (OWASP, "CSV Injection"); numbers unchanged."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            out[column] = out[column].map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
            )
    return out


def export_csv(frame: pd.DataFrame) -> bytes:
    """UTF-8 CSV (no index) with formulas escaped, ``run_id`` / ``run`` last as :data:`EXPORT_RUN_COLUMNS`."""
    run_cols = [c for c in EXPORT_RUN_COLUMNS if c in frame.columns]
    out = frame[[c for c in frame.columns if c not in run_cols] + run_cols].rename(columns=EXPORT_RUN_COLUMNS)
    return escape_formulas(out).to_csv(index=False).encode("utf-8")

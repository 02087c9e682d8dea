"""How the run library shows the reading of an uploaded file: the reader that took or refused it, the column
mapping, conversions, warnings and the bad cells."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from specviz.app import ui
from specviz.app.measured.columns import ERROR_COLUMNS
from specviz.base.i18n import N_
from specviz.data import measurements


def show_report(report: measurements.LoadReport) -> None:
    """Which reader took the file, how it read it: mapping, conversions, warnings, and the rows that were skipped."""
    st.caption(ui.message(measurements.reader_note(report)))
    st.caption(ui.plain(ui.message(report.headline)))
    if report.mapped:
        st.info(
            ui.t("Mapped columns: {pairs}", pairs=", ".join(f"`{a}` → `{b}`" for a, b in report.mapped.items())),
            icon=":material/swap_horiz:",
        )
    for line in (
        ui.message(report.conversions_text),
        ui.message(report.ignored_text),
        *(ui.t("Warning: {warning}", warning=ui.message(w)) for w in report.warnings),
    ):
        if line:
            st.caption(ui.plain(line))
    if report.row_errors:
        st.warning(
            ui.t(
                "{cells} bad cell(s) in {rows} row(s); those rows are skipped, the others load.",
                cells=len(report.row_errors),
                rows=report.rows_skipped,
            ),
            icon=":material/rule:",
        )
        rows = [
            {
                "row": e.row,
                "column": e.column,
                "file header": e.header or e.column,
                "value": e.value,
                "allowed": ui.message(e.allowed),
            }
            for e in report.row_errors[:500]
        ]
        empty = N_("the cell is empty")
        ui.table(
            pd.DataFrame(rows),
            ui.headings(ERROR_COLUMNS, value=ui.Col(N_("value"), missing=empty)),
            keep_names=True,
        )


def show_refusal(exc: ValueError) -> None:
    """A refused file: the reader that refused it (where one took it up), then why."""
    if getattr(exc, "report", None) and (note := measurements.reader_note(exc.report)):
        st.caption(ui.message(note))
    ui.show_error(exc)

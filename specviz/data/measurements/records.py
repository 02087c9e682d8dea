"""Rows already in memory (e.g. a live run's) through the same checks and derivation as a file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.data.measurements.checks import check_table
from specviz.data.measurements.derive import derive
from specviz.data.measurements.report import LoadReport
from specviz.data.measurements.schema import BENCH_COLUMNS, COLUMNS, DERIVED_COLUMNS
from specviz.data.measurements.table import RawColumn, RawTable


def load_records(records: Sequence[Mapping[str, object]], name: str = "records") -> tuple[pd.DataFrame, LoadReport]:
    """Check and complete rows given as mappings of canonical column names; no text round trip.

    ``records``: one mapping per row keyed by :data:`COLUMNS` / :data:`BENCH_COLUMNS` names (a
    :data:`DERIVED_COLUMNS` key is recomputed, any other key is a ValueError); cells are numbers, str, bool
    or None. ``name`` labels rows without a label. Returns ``(DataFrame, LoadReport)`` as
    :func:`~specviz.data.measurements.load_measurements` does, indexed from 1; ``report.format`` = ``"records"``.
    """
    if not isinstance(name, str) or not name.strip():
        raise Message("name must be a non-empty str; got {name!r}", name=name)
    report = LoadReport(name=name, format="records")
    names = list(dict.fromkeys(key for record in records for key in record))
    unknown = [key for key in names if key not in COLUMNS and key not in BENCH_COLUMNS]
    if unknown:
        raise Message(
            "{name}: unknown column(s) {unknown}; allowed: the measurement columns {allowed} …",
            name=name,
            unknown=unknown,
            allowed=list(COLUMNS),
        )
    derived = Phrase("derived, recomputed")
    report.ignored.update(dict.fromkeys(filter(DERIVED_COLUMNS.__contains__, names), derived))
    columns = {
        key: RawColumn(key, key, [record.get(key) for record in records], guess_percent=False)
        for key in names
        if key not in DERIVED_COLUMNS
    }
    table = RawTable(list(range(1, len(records) + 1)), columns)
    return derive(check_table(table, report, name, False, None), report), report

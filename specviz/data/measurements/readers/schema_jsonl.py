"""JSON lines in the measurement schema (one object per row, keys = the CSV's headers) → the CSV reader's table.

A line ``{"label": "eagle K=3", "k": 3, "alpha": 0.7, "speedup": 2.1}`` is a CSV row whose header is
its keys: the headers are the keys in order of first appearance, mapped by
:data:`~specviz.data.measurements.aliases.ALIASES`; a key a line lacks is an empty cell. A line that
is not a JSON object is a row error. Spec-Bench answers (``choices``) are not claimed.
"""

from __future__ import annotations

import json

from specviz.base.i18n import N_, Message, Phrase
from specviz.data.measurements.aliases import normalise_header, resolve_header
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.csv import mapped_table
from specviz.data.measurements.readers.log_lines import first_json_object, json_lines
from specviz.data.measurements.report import MeasurementError, RowError
from specviz.data.measurements.table import RawTable

#: the columns one of which a first line must hold (through an alias) to be claimed
_CLAIMS = {"k", "alpha", "mean_accepted_tokens", "acceptance_rate", "speedup"}


def detect(text: str) -> bool:
    """The first non-blank line is a JSON object, not a Spec-Bench answer, with K, an acceptance figure or a speedup."""
    obj = first_json_object(text[:65536])
    if obj is None or "choices" in obj:
        return False
    keys = {normalise_header(k)[0] for k in obj}
    return any((alias := resolve_header(k, keys)) is not None and alias.column in _CLAIMS for k in keys)


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def read(text: str, ctx: ReadContext) -> RawTable:
    """Every JSON-object line as a row under the union of the keys; other lines are row errors."""
    objects, rows, dropped = [], [], []
    for lineno, obj, issue in json_lines(text, Phrase(N_("a row of the measurement schema"))):
        if issue is not None:
            dropped.append(RowError(lineno, *issue))
            continue
        if len(objects) >= ctx.max_rows:
            message = Message(
                "{name}: more than max_rows = {max_rows:,} JSON lines", name=ctx.name, max_rows=ctx.max_rows
            )
            raise MeasurementError(message, ctx.report)
        objects.append(obj)
        rows.append(lineno)
    if not objects:
        raise MeasurementError(Message("{name}: the file is empty", name=ctx.name), ctx.report)
    header = list(dict.fromkeys(k for obj in objects for k in obj))
    records = [[_cell(obj.get(k)) for k in header] for obj in objects]
    table = mapped_table(header, records, rows, ctx, {})
    table.dropped, table.n_dropped = dropped, len(dropped)
    return table


READER = Reader(
    name="schema_jsonl",
    title=Phrase(N_("JSON lines in the measurement schema")),
    detect=detect,
    rule="the first non-blank line is a JSON object (no Spec-Bench choices) with k, an acceptance figure or speedup among its keys",
    read=read,
    spellings=("schema-jsonl", "measurement_jsonl"),
    needs_k=False,
)

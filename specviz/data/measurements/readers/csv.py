"""CSV (comma, semicolon or tab) from any serving stack or spreadsheet: a sniffed delimiter, headers mapped by ALIASES."""

from __future__ import annotations

import csv
import io

from specviz.base.i18n import N_, Message, Phrase
from specviz.data.measurements import cells
from specviz.data.measurements.aliases import Alias, normalise_header, resolve_header
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.report import LoadReport, MeasurementError, RowError
from specviz.data.measurements.schema import DERIVED_COLUMNS, column_kind, output_column
from specviz.data.measurements.table import RawColumn, RawTable

_DELIMITERS = (",", ";", "\t")


def read(text: str, ctx: ReadContext) -> RawTable:
    """The CSV's mapped columns as a :class:`RawTable`; required columns checked, extra fields are row errors."""
    report = ctx.report
    report.delimiter = delim = sniff_delimiter(text)
    header, records, rows = _records(text, delim, ctx)
    table = mapped_table(header, records, rows, ctx, _extra_fields(records, rows, len(header), delim))
    if delim in ";\t":
        report.decimal_comma = decimal_comma(table, report)
    return table


def mapped_table(header: list[str], records: list[list[str]], rows: list[int], ctx: ReadContext, errors) -> RawTable:
    """Records under ``header`` as a table of the columns their headers map to (required ones checked)."""
    report = ctx.report
    chosen = map_header(header, report)
    check_required(chosen, header, ctx.name, report, k_given=ctx.k is not None)
    columns = {
        col: RawColumn(col, header[idx], [r[idx] if idx < len(r) else "" for r in records], alias.conversion, pct)
        for col, (idx, alias, pct) in chosen.items()
    }
    table = RawTable(rows, columns, row_errors=errors)
    if ctx.k is not None and "k" in table.columns:
        report.warnings.append(
            Phrase(
                "k = {k} was given but the file has a K column ({header!r}); the file's values are used",
                k=ctx.k,
                header=table.columns["k"].header,
            )
        )
    return table


def sniff_delimiter(text: str) -> str:
    """',', ';' or tab: the one that splits the header into the most fields and the rows consistently."""
    sample_lines = [ln for ln in text[:65536].splitlines() if ln.strip()][:50]
    if len(sample_lines) > 1 and len(text) > 65536:
        sample_lines = sample_lines[:-1]  # the last one may be cut
    sample = "\n".join(sample_lines)
    best, best_score = ",", (-1.0, 0)
    for delim in _DELIMITERS:
        try:
            records = [r for r in csv.reader(io.StringIO(sample, newline=""), delimiter=delim) if r]
        except csv.Error:
            continue
        if not records or len(records[0]) < 2:
            continue
        width = len(records[0])
        consistent = sum(len(r) == width for r in records) / len(records)
        score = (consistent, width)
        if score > best_score:
            best, best_score = delim, score
    return best


def _records(text: str, delim: str, ctx: ReadContext) -> tuple[list[str], list[list[str]], list[int]]:
    """(header, data records, file line number of each record); blank lines skipped."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    header: list[str] | None = None
    records: list[list[str]] = []
    rows: list[int] = []
    try:
        for record in reader:
            if not any(c.strip() for c in record):
                continue  # blank line
            if header is None:
                header = record
                continue
            if len(records) >= ctx.max_rows:
                raise MeasurementError(
                    Message(
                        "{name}: more than max_rows = {max_rows:,} data rows; split the file or raise the limit",
                        name=ctx.name,
                        max_rows=ctx.max_rows,
                    ),
                    ctx.report,
                )
            records.append(record)
            rows.append(reader.line_num)
    except csv.Error as exc:
        raise MeasurementError(
            Message("{name}: CSV line {line}: {cause}", name=ctx.name, line=reader.line_num, cause=exc), ctx.report
        ) from None
    if header is None:
        raise MeasurementError(Message("{name}: the file is empty", name=ctx.name), ctx.report)
    return header, records, rows


def _extra_fields(records: list[list[str]], rows: list[int], width: int, delim: str) -> dict[int, list[RowError]]:
    """Rows with more non-empty fields than the header: one row error each, by row index."""
    return {
        i: [
            RowError(
                rows[i],
                "(row)",
                delim.join(r),
                Phrase(
                    "at most {width} fields (the header's count); this row has {fields}", width=width, fields=len(r)
                ),
            )
        ]
        for i, r in enumerate(records)
        if len(r) > width and any(c.strip() for c in r[width:])
    }


# --------------------------------------------------------------------------------------
# headers -> columns
# --------------------------------------------------------------------------------------


def shown_headers(header: list[str]) -> list[str]:
    """Each header as the report names it: empty ones by position, repeats with their column number."""
    seen: dict[str, int] = {}
    shown = []
    for idx, raw in enumerate(header):
        raw = raw if raw.strip() else Phrase("(empty header, column {column})", column=idx + 1)
        seen[raw] = seen.get(raw, 0) + 1
        shown.append(raw if seen[raw] == 1 else Phrase("{header} [column {column}]", header=raw, column=idx + 1))
    return shown


def map_header(header: list[str], report: LoadReport) -> dict[str, tuple[int, Alias, bool]]:
    """canonical/internal column -> (index in the row, alias, percent flag); fills report.mapped/ignored."""
    keys = [normalise_header(h) for h in header]
    shown = shown_headers(header)
    candidates = _candidates(header, keys, shown, report)
    chosen: dict[str, tuple[int, Alias, bool]] = {}
    for _rank, idx, alias, pct in sorted(candidates, key=lambda c: (c[0], c[1])):
        if alias.column in chosen:
            first = header[chosen[alias.column][0]]
            report.ignored[shown[idx]] = Phrase(
                "duplicate of {first!r} (both map to {column}; the first is used)", first=first, column=alias.column
            )
            continue
        chosen[alias.column] = (idx, alias, pct)
        target = output_column(alias.column)
        if header[idx] != target:
            report.mapped[shown[idx]] = target
    return chosen


def _candidates(
    header: list[str], keys: list[tuple[str, bool]], shown: list[str], report: LoadReport
) -> list[tuple[int, int, Alias, bool]]:
    """(rank: 0 direct / 1 converted, index, alias, percent) of each known header; the others noted as ignored."""
    keyset = {k for k, _ in keys}
    out = []
    for idx, (raw, (key, pct)) in enumerate(zip(header, keys, strict=True)):
        if not key:
            report.ignored[shown[idx]] = Phrase("empty header")
            continue
        if key in DERIVED_COLUMNS:
            report.ignored[shown[idx]] = Phrase("derived column, recomputed on load")
            if key == "speedup_ratio":
                report.warnings.append(
                    Phrase(
                        "{header!r} is read as specviz's derived speedup_ratio (measured ÷ predicted) and recomputed; name a measured speedup column 'speedup'",
                        header=raw,
                    )
                )
            continue
        alias = resolve_header(key, keyset)
        if alias is None:
            report.ignored[shown[idx]] = Phrase("unknown column")
            continue
        out.append((1 if alias.conversion else 0, idx, alias, pct))
    return out


def check_required(chosen: dict, header: list[str], name: str, report: LoadReport, k_given: bool) -> None:
    """Refuse a file without K (unless given) or without any acceptance figure or speedup, listing what it has."""
    no_k = "k" not in chosen and not k_given
    speedup_only = "speedup" in chosen or {"tokens_per_s", "baseline_tokens_per_s"} <= set(chosen)
    acceptance = {"alpha", "mean_accepted_tokens", "acceptance_rate", "system_efficiency"} & set(chosen)
    no_acceptance = not acceptance and not speedup_only
    if no_k or no_acceptance:
        found = ", ".join(repr(h) for h in header[:40]) + (" …" if len(header) > 40 else "")
        if no_k and no_acceptance:
            message = Message(
                "{name}: missing required column(s): k (draft length K; also read from: num_speculative_tokens, gamma, n_draft, draft_max, num_assistant_tokens, speculative_num_steps, …; or pass k=); one of alpha, mean_accepted_tokens (mean acceptance length, accept_length, tau, …), acceptance_rate (draft_acceptance_rate, accept %, …), or a measured speedup (speedup, or tokens_per_s with baseline_tokens_per_s). Found columns: {found}",
                name=name,
                found=found,
            )
        elif no_k:
            message = Message(
                "{name}: missing required column(s): k (draft length K; also read from: num_speculative_tokens, gamma, n_draft, draft_max, num_assistant_tokens, speculative_num_steps, …; or pass k=). Found columns: {found}",
                name=name,
                found=found,
            )
        else:
            message = Message(
                "{name}: missing required column(s): one of alpha, mean_accepted_tokens (mean acceptance length, accept_length, tau, …), acceptance_rate (draft_acceptance_rate, accept %, …), or a measured speedup (speedup, or tokens_per_s with baseline_tokens_per_s). Found columns: {found}",
                name=name,
                found=found,
            )
        raise MeasurementError(message, report)


def decimal_comma(table: RawTable, report: LoadReport) -> bool:
    """True if numeric cells use ',' as the decimal separator and none uses '.' (else ambiguous: off)."""
    comma = dot = 0
    for col in table.columns.values():
        if column_kind(col.name) in ("number", "positions"):
            c, d = cells.count_separators(col.cells, positions=col.name == "per_position_acceptance")
            comma, dot = comma + c, dot + d
    if comma and dot:
        report.warnings.append(
            Phrase(
                "numeric cells use both ',' ({comma}) and '.' ({dot}) as decimal separator; cells with ',' are not read as numbers",
                comma=comma,
                dot=dot,
            )
        )
        return False
    if comma:
        report.conversions.append(
            Phrase("decimal comma: {cells} numeric cell(s) read with ',' as the decimal point", cells=comma)
        )
        return True
    return False


READER = Reader(
    name="csv",
    title=Phrase(N_("CSV")),
    detect=lambda text: True,
    rule="anything the readers before it do not claim",
    read=read,
)

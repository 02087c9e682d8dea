"""What :func:`specviz.measurements.load_measurements` tells a person: the report, bad cells, fatal errors."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RowError:
    """One bad cell: the row as numbered in the file (header = row 1), the column, the value, what is allowed."""

    row: int  #: line number in the file (CSV: header is 1; JSON lines / logs: the line)
    column: str  #: canonical column name
    value: str  #: the cell as written in the file
    allowed: str  #: the allowed range
    header: str = ""  #: the file's own header for the column, when it differs from ``column``

    def __str__(self) -> str:
        col = self.column if not self.header or self.header == self.column else f"{self.column} ({self.header!r})"
        value = self.value if len(self.value) <= 60 else self.value[:57] + "…"
        return f"row {self.row}, {col}: {value!r} — allowed: {self.allowed}"


@dataclass
class LoadReport:
    """How :func:`specviz.measurements.load_measurements` read a file."""

    name: str  #: the name given (used as label where the file has none)
    format: str = "csv"  #: a reader's name: "csv", "spec_bench" (JSON lines) or "vllm_log"
    encoding: str = ""  #: e.g. "utf-8", "utf-8-sig", "utf-16", "cp1252", "text" (a str was given)
    delimiter: str | None = None  #: ",", ";" or "\t" for CSV
    decimal_comma: bool = False  #: numeric cells used ',' as the decimal separator
    mapped: dict[str, str] = field(default_factory=dict)  #: file header -> canonical column (non-identity only)
    ignored: dict[str, str] = field(default_factory=dict)  #: file header -> why it was not used
    conversions: list[str] = field(default_factory=list)  #: every conversion applied, in words
    warnings: list[str] = field(default_factory=list)  #: things worth a look that did not stop a row
    row_errors: list[RowError] = field(default_factory=list)  #: every bad cell (its row is skipped)
    rows_read: int = 0  #: data rows (CSV records, JSON lines, log lines) found
    rows_loaded: int = 0  #: rows in the returned DataFrame

    @property
    def rows_skipped(self) -> int:
        """Rows read but not loaded (each has at least one entry in :attr:`row_errors`)."""
        return self.rows_read - self.rows_loaded

    @property
    def skipped_rows(self) -> list[int]:
        """File row numbers of the skipped rows."""
        return sorted({e.row for e in self.row_errors})

    @property
    def how(self) -> str:
        """How the text was read: format, encoding, delimiter, decimal comma (e.g. "csv, utf-8, delimiter ','")."""
        how = [self.format]
        if self.encoding:
            how.append(self.encoding)
        if self.delimiter is not None:
            how.append("delimiter " + {"\t": "tab"}.get(self.delimiter, repr(self.delimiter)))
        if self.decimal_comma:
            how.append("decimal comma")
        return ", ".join(how)

    @property
    def headline(self) -> str:
        """One line: what was read, how, and how many rows loaded and were skipped."""
        return (
            f"{self.name}: read {self.rows_read} row(s) ({self.how}); loaded {self.rows_loaded}, "
            f"skipped {self.rows_skipped}."
        )

    @property
    def mapped_text(self) -> str:
        """``Mapped columns: 'header' → column, ….`` ("" when nothing was mapped)."""
        if not self.mapped:
            return ""
        return "Mapped columns: " + ", ".join(f"{k!r} → {v}" for k, v in self.mapped.items()) + "."

    @property
    def conversions_text(self) -> str:
        """``Conversions: …; ….`` ("" when none applied)."""
        return "Conversions: " + "; ".join(self.conversions) + "." if self.conversions else ""

    @property
    def ignored_text(self) -> str:
        """``Ignored columns: 'header' (why), ….`` ("" when every column was used)."""
        if not self.ignored:
            return ""
        return "Ignored columns: " + ", ".join(f"{k!r} ({v})" for k, v in self.ignored.items()) + "."

    def summary(self, max_errors: int = 20) -> str:
        """A few lines for a person: what was read, how, what was mapped/converted, and what was wrong."""
        lines = [self.headline]
        lines.extend(t for t in (self.mapped_text, self.conversions_text, self.ignored_text) if t)
        lines.extend(f"Warning: {w}" for w in self.warnings)
        if self.row_errors:
            lines.append(f"{len(self.row_errors)} bad cell(s) in {len(self.skipped_rows)} row(s) (rows skipped):")
            lines.extend(f"  {e}" for e in self.row_errors[:max_errors])
            if len(self.row_errors) > max_errors:
                lines.append(f"  … and {len(self.row_errors) - max_errors} more")
        return "\n".join(lines)


class MeasurementError(ValueError):
    """A file that cannot be loaded at all; ``report`` holds what was learnt before stopping (or None)."""

    def __init__(self, message: str, report: LoadReport | None = None):
        super().__init__(message)
        self.report = report


def few(items: list, n: int = 8) -> str:
    """The first ``n`` items, comma-separated, with the total when there are more."""
    s = ", ".join(str(x) for x in items[:n])
    return s + (f" … ({len(items)} in all)" if len(items) > n else "")


def no_usable_row(name: str, report: LoadReport) -> str:
    """The message of a file none of whose rows loaded (its first five errors)."""
    if report.rows_read == 0:
        return f"{name}: no data rows (only a header?)"
    first = "; ".join(str(e) for e in report.row_errors[:5])
    more = f" (and {len(report.row_errors) - 5} more)" if len(report.row_errors) > 5 else ""
    return f"{name}: no usable row — all {report.rows_read} row(s) have errors: {first}{more}"

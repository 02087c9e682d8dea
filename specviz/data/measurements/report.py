"""What :func:`specviz.data.measurements.load_measurements` tells a person: the report, bad cells, fatal errors.

Texts are :class:`~specviz.base.i18n.Phrase` / :class:`~specviz.base.i18n.Message`: English as strings
(logs, CLI, the saved report), the page's language on a page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from specviz.base import i18n
from specviz.base.i18n import N_, Message, Phrase


class Joined(Phrase):
    """Items (phrases or plain text) joined by the separator msgid ``sep``, in any language."""

    def __new__(cls, items: Iterable, sep: str = N_("; ")):
        items = tuple(items)
        self = str.__new__(cls, i18n.text(i18n.DEFAULT, sep).join(map(str, items)))
        self.msgid, self.fields, self.items = sep, {}, items
        return self

    def text(self, lang: str) -> str:
        """The items in ``lang``, joined by the separator of that language."""
        return i18n.text(lang, self.msgid).join(i18n.localized(x, lang) for x in self.items)

    def __reduce__(self):
        return Joined, (self.items, self.msgid)


@dataclass(frozen=True)
class RowError:
    """One bad cell: the row as numbered in the file (header = row 1), the column, the value, what is allowed."""

    row: int  #: line number in the file (CSV: header is 1; JSON lines / logs: the line)
    column: str  #: canonical column name
    value: str  #: the cell as written in the file
    allowed: str  #: the allowed range (a :class:`~specviz.base.i18n.Phrase`: a page shows it in its language)
    header: str = ""  #: the file's own header for the column, when it differs from ``column``

    def __str__(self) -> str:
        return str(self.phrase())

    def phrase(self) -> Phrase:
        """This bad cell in words: ``row 3, alpha: '1.5' — allowed: [0, 1]`` (in any language)."""
        value = self.value if len(self.value) <= 60 else self.value[:57] + "…"
        if not self.header or self.header == self.column:
            return Phrase(
                "row {row}, {column}: {value!r} — allowed: {allowed}",
                row=self.row,
                column=self.column,
                value=value,
                allowed=self.allowed,
            )
        return Phrase(
            "row {row}, {column} ({header!r}): {value!r} — allowed: {allowed}",
            row=self.row,
            column=self.column,
            header=self.header,
            value=value,
            allowed=self.allowed,
        )


@dataclass
class LoadReport:
    """How :func:`specviz.data.measurements.load_measurements` read a file."""

    name: str  #: the name given (used as label where the file has none)
    format: str = "csv"  #: a reader's name: "csv", "spec_bench" (JSON lines) or "vllm_log"
    detected: bool | None = None  #: the reader was detected from the content (False: named by format=; None: none yet)
    encoding: str = ""  #: e.g. "utf-8", "utf-8-sig", "utf-16", "cp1252", "text" (a str was given)
    delimiter: str | None = None  #: ",", ";" or "\t" for CSV
    decimal_comma: bool = False  #: numeric cells used ',' as the decimal separator
    mapped: dict[str, str] = field(default_factory=dict)  #: file header -> canonical column (non-identity only)
    ignored: dict[str, str] = field(default_factory=dict)  #: file header -> why it was not used
    conversions: list[str] = field(default_factory=list)  #: every conversion applied, in words (Phrases)
    warnings: list[str] = field(default_factory=list)  #: things worth a look that did not stop a row (Phrases)
    row_errors: list[RowError] = field(default_factory=list)  #: every bad cell (its row is skipped)
    rows_read: int = 0  #: data rows (CSV records, JSON lines, log lines) found
    rows_loaded: int = 0  #: rows in the returned DataFrame

    @property
    def rows_skipped(self) -> int:
        return self.rows_read - self.rows_loaded

    @property
    def skipped_rows(self) -> list[int]:
        return sorted({e.row for e in self.row_errors})

    @property
    def how(self) -> str:
        """How the text was read: format, encoding, delimiter, decimal comma (e.g. "csv, utf-8, delimiter ','")."""
        how = [self.format]
        if self.encoding:
            how.append(self.encoding)
        if self.delimiter == "\t":
            how.append(Phrase("delimiter tab"))
        elif self.delimiter is not None:
            how.append(Phrase("delimiter {delimiter!r}", delimiter=self.delimiter))
        if self.decimal_comma:
            how.append(Phrase("decimal comma"))
        return Joined(how, N_(", "))

    @property
    def headline(self) -> str:
        """One line: what was read, how, and how many rows loaded and were skipped."""
        return Phrase(
            "{name}: read {read} row(s) ({how}); loaded {loaded}, skipped {skipped}.",
            name=self.name,
            read=self.rows_read,
            how=self.how,
            loaded=self.rows_loaded,
            skipped=self.rows_skipped,
        )

    @property
    def mapped_text(self) -> str:
        """``Mapped columns: 'header' → column, ….`` ("" when nothing was mapped)."""
        if not self.mapped:
            return ""
        pairs = Joined((f"{k!r} → {v}" for k, v in self.mapped.items()), N_(", "))
        return Phrase("Mapped columns: {pairs}.", pairs=pairs)

    @property
    def conversions_text(self) -> str:
        """``Conversions: …; ….`` ("" when none applied)."""
        if not self.conversions:
            return ""
        return Phrase("Conversions: {conversions}.", conversions=Joined(self.conversions))

    @property
    def ignored_text(self) -> str:
        """``Ignored columns: 'header' (why), ….`` ("" when every column was used)."""
        if not self.ignored:
            return ""
        columns = Joined(
            (Phrase("{header!r} ({why})", header=k, why=v) for k, v in self.ignored.items()),
            N_(", "),
        )
        return Phrase("Ignored columns: {columns}.", columns=columns)

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


class MeasurementError(Message):
    """A file that cannot be loaded at all; ``report``: what was learnt before stopping (or None).

    ``message``: a Message or Phrase (shown in the page's language) or plain text (as it is).
    """

    def __init__(self, message: str | Message, report: LoadReport | None = None):
        if isinstance(message, Message | Phrase):
            super().__init__(message.msgid, **message.fields)
        else:
            self.msgid, self.fields = None, {}
            ValueError.__init__(self, str(message))
        self.report = report

    def text(self, lang: str) -> str:
        """This error in ``lang`` (plain text as it is)."""
        return super().text(lang) if self.msgid is not None else str(self)

    def __reduce__(self):
        message = str(self) if self.msgid is None else Phrase(self.msgid, **self.fields)
        return MeasurementError, (message, self.report)


def few(items: list, n: int = 8) -> str:
    """The first ``n`` items, comma-separated, with the total when there are more."""
    s = ", ".join(str(x) for x in items[:n])
    return Phrase("{items} … ({total} in all)", items=s, total=len(items)) if len(items) > n else s


def no_usable_row(name: str, report: LoadReport) -> str:
    """The message of a file none of whose rows loaded (its first five errors)."""
    if report.rows_read == 0:
        return Phrase("{name}: no data rows (only a header?)", name=name)
    first = Joined(e.phrase() for e in report.row_errors[:5])
    if len(report.row_errors) > 5:
        return Phrase(
            "{name}: no usable row — all {rows} row(s) have errors: {errors} (and {more} more)",
            name=name,
            rows=report.rows_read,
            errors=first,
            more=len(report.row_errors) - 5,
        )
    return Phrase(
        "{name}: no usable row — all {rows} row(s) have errors: {errors}",
        name=name,
        rows=report.rows_read,
        errors=first,
    )

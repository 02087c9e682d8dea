"""What every reader shares: the :class:`Reader` record and the :class:`ReadContext` it is given."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specviz.data.measurements.report import LoadReport
from specviz.data.measurements.table import RawTable


@dataclass(frozen=True)
class ReadContext:
    """What a reader may use besides the text."""

    name: str  #: the upload's name, for messages
    report: LoadReport  #: where the reader notes mapping, conversions and warnings
    max_rows: int  #: refuse more data rows than this
    k: int | None  #: the caller's K (None: not given)


@dataclass(frozen=True)
class Reader:
    """One input format."""

    name: str  #: the format's name, as ``LoadReport.format`` shows it
    title: str  #: what the input is, in messages ("vLLM log lines")
    detect: Callable[[str], bool]  #: the auto-detection rule, on the decoded text
    rule: str  #: the detection rule in words (for docs/measurement-schema.md)
    read: Callable[[str, ReadContext], RawTable]  #: text -> table (raises MeasurementError if unusable)
    spellings: tuple[str, ...] = ()  #: other names ``format=`` accepts
    needs_k: bool = False  #: the format does not state K, so the caller must give it

"""The one table type every reader returns, before the checks (docs/design.md §3)."""

from __future__ import annotations

from dataclasses import dataclass, field

from specviz.data.measurements.aliases import Conversion
from specviz.data.measurements.report import RowError


@dataclass
class RawColumn:
    """One column of a file, its cells still as written."""

    name: str  #: canonical or internal column (``c_l``, ``system_efficiency``)
    header: str  #: the file's header ("" where a reader made the column up)
    cells: list  #: raw cells (str from CSV, numbers/str from the other readers)
    conversion: Conversion = Conversion.NONE  #: how the file's value becomes the canonical one
    percent: bool = False  #: the header says percent
    guess_percent: bool = True  #: a file's column may be found to be in percent by its values; in-memory rows never


@dataclass
class RawTable:
    """What a reader found: rows (by file row number) and columns, not yet checked."""

    rows: list[int]  #: file row number of each row
    columns: dict[str, RawColumn]  #: by canonical or internal name
    #: errors found while reading, by row index (e.g. a CSV row with extra fields)
    row_errors: dict[int, list[RowError]] = field(default_factory=dict)
    #: input rows each table row pools (Spec-Bench: JSON lines per model_id); None = 1 each
    weights: list[int] | None = None
    #: errors of input rows that never became a table row (Spec-Bench lines that are not answers)
    dropped: list[RowError] = field(default_factory=list)
    n_dropped: int = 0  #: how many input rows those are

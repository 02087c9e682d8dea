"""The measurement schema (docs/design.md §3) and its loader, shared by the bench CLI, the live page and uploads.

Columns are lower case with units in the name; ``label``, ``k`` and one of ``alpha``,
``mean_accepted_tokens``, ``acceptance_rate`` or a measured ``speedup`` (speedup-only rows, e.g. Chen et
al. 2023 Table 1, have no α) are required. :func:`load_measurements`: detect → read (``readers``, one per
format) → check (``checks``) → derive, returning the frame and a :class:`LoadReport`; the only exception
is ValueError (:class:`MeasurementError`). docs/measurement-schema.md lists every column, alias and rule.

Where engines are ambiguous (each choice is reported when it applies):

* SGLang ``speculative_num_draft_tokens`` = K + 1 (accept rate = E[N] / (K + 1), docs/design.md §6);
  ``speculative_num_steps`` (= K) wins when both are present.
* ``accept rate`` is llama.cpp's r = accepted / drafted, unless the file has SGLang columns.
* A rate column is percent when its header or cells say so, or its values lie in [0, 100] with some > 1
  and none in (0, 1); decimal commas only in ';' / tab files with no '.' in a numeric cell.
* Mean acceptance length counts the bonus token unless ``mean_tokens_without_bonus=True`` or the header
  says otherwise; of several headers for one column a direct name, then the left-most, wins.
* ``speedup_ratio`` in a file is our derived column (recomputed), not Spec-Bench's "Speedup ratio".
"""

from specviz.data.measurements.aliases import ALIASES, Alias, Conversion, alias_table, normalise_header
from specviz.data.measurements.load import load_measurements, reader_note
from specviz.data.measurements.readers import READERS, ReadContext, Reader
from specviz.data.measurements.readers.speculation_profile import profile_from_rows, to_profile
from specviz.data.measurements.records import load_records
from specviz.data.measurements.report import LoadReport, MeasurementError, RowError
from specviz.data.measurements.samples import SAMPLES, SAMPLES_DIR, available_samples, template_csv
from specviz.data.measurements.schema import BENCH_COLUMNS, COLUMNS, DERIVED_COLUMNS, INTEGER_COLUMNS, TEXT_COLUMNS
from specviz.data.measurements.table import RawColumn, RawTable

__all__ = [
    "ALIASES",
    "BENCH_COLUMNS",
    "COLUMNS",
    "DERIVED_COLUMNS",
    "INTEGER_COLUMNS",
    "READERS",
    "SAMPLES",
    "SAMPLES_DIR",
    "TEXT_COLUMNS",
    "Alias",
    "Conversion",
    "LoadReport",
    "MeasurementError",
    "RawColumn",
    "RawTable",
    "ReadContext",
    "Reader",
    "RowError",
    "alias_table",
    "available_samples",
    "load_measurements",
    "load_records",
    "normalise_header",
    "profile_from_rows",
    "reader_note",
    "template_csv",
    "to_profile",
]

"""The measurement schema (docs/design.md §3), shared by the bench CLI, the live page and uploads.

Canonical lower-case column names with units in the name. ``label`` and ``k`` are
required, plus at least one of ``alpha``, ``mean_accepted_tokens`` and
``acceptance_rate`` — or, for a *speedup-only* row (a published table that gives a speedup but
no acceptance figure, e.g. Chen et al. 2023 Table 1), a measured ``speedup`` (or
``tokens_per_s`` with ``baseline_tokens_per_s``). Such rows have no α, so no prediction; they
are drawn as measured points only. Everything else is optional. docs/measurement-schema.md
lists every column, alias and conversion.

:func:`load_measurements` reads what people actually have -- our own bench CSV, a
spreadsheet export from any engine, Spec-Bench's answer ``.jsonl`` or vLLM V1's
``SpecDecoding metrics`` log lines -- into a DataFrame in these columns plus the
derived ones (:data:`DERIVED_COLUMNS`), and a :class:`LoadReport` that says how:
encoding, delimiter, every header it mapped (:data:`ALIASES`, docs/design.md §6), every
conversion it applied, and every bad cell by row, column, value and allowed range.
Rows with a bad cell are skipped; the valid rows load. Whatever is wrong with the
input, the only exception is :class:`ValueError` (with a message naming the field,
the value and what is allowed).

The package, in the order a file goes through it (``load``: detect → read → validate → derive):

* ``schema``: the columns, their kinds and allowed ranges;
* ``aliases``: the headers engines write, and the :class:`Conversion` each needs;
* ``cells``: bytes → text (byte-order marks, encodings) and cells → numbers (percent, decimal comma);
* ``readers``: one module per input format, each returning a ``RawTable`` (``table``);
* ``validation``: every cell checked, in named steps; ``report``: :class:`LoadReport` and the errors;
* ``derive``: alpha_used, c_used, v and the predicted speedups;
* ``records``: :func:`load_records`, rows already in memory (a live run's) through the same checks.

**Adding an engine's format** is one reader file plus aliases: write
``specviz/data/measurements/readers/<format>.py`` defining ``READER = Reader(name, title, detect,
rule, read, spellings, needs_k)`` whose ``read(text, ctx)`` returns a ``RawTable``, register it in
:data:`READERS` (``readers/__init__.py``; detection tries the readers in that order, CSV last),
and add the engine's header names to :data:`ALIASES`. A new CSV dialect needs aliases only.

Choices where engines are ambiguous (each one is reported when it applies, never silent):

* SGLang ``speculative_num_draft_tokens`` counts the verified root token, K + 1 for chains
  (docs/design.md §6: accept rate = accept len / speculative_num_draft_tokens = E[N] / (K + 1)),
  so K = value − 1; ``speculative_num_steps`` (= K) wins when both are present.
* ``accept rate`` / ``accept_rate`` is llama.cpp's r = accepted / drafted, unless the file
  has SGLang columns (speculative_num_*, speculative_eagle_topk, speculative_algorithm): then
  it is SGLang's E[N] / (K + 1). ``sglang_accept_rate`` / ``system_efficiency`` always are.
  A mean length and a rate that disagree (E[N] ≠ 1 + rK) give a warning.
* A rate column (alpha, acceptance_rate, alpha_overlap, system efficiency) is percent when its
  header says so ('%', 'pct', 'percent'), cells end in '%', or its values lie in [0, 100] with
  some > 1 and none in (0, 1); a column mixing 0.8 and 80 is not guessed (values > 1 are errors).
* Decimal commas only in ';' / tab files, and only when no numeric cell uses '.'.
* Mean acceptance length counts the bonus token (E[N]) unless ``mean_tokens_without_bonus=True``
  or the header says so (``mean_tokens_no_bonus``, ``accepted_drafts_per_round``, …).
* Several headers for one column: a direct name beats a converted one, then the left-most wins.
* ``speedup_ratio`` in a file is our derived column (recomputed), not Spec-Bench's "Speedup ratio".
"""

from specviz.data.measurements.aliases import ALIASES, Alias, Conversion, alias_table, normalise_header
from specviz.data.measurements.load import load_measurements
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
    "template_csv",
    "to_profile",
]

"""The entry point: check the arguments, then detect → read → check → derive."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.core import theory
from specviz.data.measurements import cells, readers
from specviz.data.measurements.checks import check_table
from specviz.data.measurements.derive import derive
from specviz.data.measurements.report import LoadReport, MeasurementError

#: The upload cap in megabytes: ``server.maxUploadSize`` in .streamlit/config.toml is this number
#: (tests/data/test_measurements.py fails when they differ). Streamlit 1.67's uploader counts a megabyte
#: as 10**6 bytes (as 2**20 only in browsers on Windows, and on its server), so 10**6 bytes per
#: megabyte keeps :data:`MAX_BYTES` at or under what every uploader lets through.
MAX_UPLOAD_MB = 20
MAX_BYTES = MAX_UPLOAD_MB * 10**6  #: default ``max_bytes`` of :func:`load_measurements`: 20,000,000 bytes


def load_measurements(
    data,
    name: str = "upload",
    *,
    format: str = "auto",
    k: int | None = None,
    max_bytes: int = MAX_BYTES,
    max_rows: int = 200_000,
    mean_tokens_without_bonus: bool = False,
) -> tuple[pd.DataFrame, LoadReport]:
    """Read measurements from any engine into the canonical schema, with a report of how.

    ``data``: bytes (content), str (text, never a path), os.PathLike, or a file object (``read`` /
    ``getvalue``). ``name`` names the upload in messages and labels rows without one. ``format``: "auto"
    (the first of :data:`~specviz.data.measurements.readers.READERS` whose rule matches) or a reader's
    name. ``k``: K for formats that do not state it, and a CSV without a K column (the file's column wins).
    ``max_bytes`` (:data:`MAX_BYTES`, 20 MB), ``max_rows`` (200,000): larger files are refused.
    ``mean_tokens_without_bonus``: the file's mean acceptance length excludes the bonus token (1 is added).

    Returns ``(DataFrame, LoadReport)``: one row per valid input row, indexed by file row (``row``), with
    :data:`COLUMNS`, the :data:`BENCH_COLUMNS` present, and :data:`DERIVED_COLUMNS`.

    Raises ValueError (:class:`MeasurementError`): binary, empty, over the caps, required columns missing,
    no usable row, bad arguments.
    """
    fmt, k, max_bytes, max_rows = _check_arguments(name, format, k, max_bytes, max_rows, mean_tokens_without_bonus)
    report = LoadReport(name=name)
    text = cells.text_of(cells.read_input(data, name, max_bytes), name, max_bytes, report)
    reader = readers.detect(text) if fmt == "auto" else readers.READERS[fmt]
    report.format, report.detected = reader.name, fmt == "auto"
    if reader.needs_k and k is None:
        raise MeasurementError(
            Message(
                "{name}: {title} do not state the draft length K, and no K was given: set K for files that do not state it (a whole number of at least 1)",
                name=name,
                title=_title(reader),
            ),
            report,
        )
    table = reader.read(text, readers.ReadContext(name, report, max_rows, k))
    checked = check_table(table, report, name, bool(mean_tokens_without_bonus), k)
    return derive(checked, report), report


def reader_note(report: LoadReport) -> Phrase | None:
    """Which reader took the file and why ("Read as CSV (detected from the content)."); None before one did."""
    if report.detected is None or report.format not in readers.READERS:
        return None
    how = N_("detected from the content") if report.detected else N_("the format chosen")
    return Phrase("Read as {title} ({how}).", title=_title(readers.READERS[report.format]), how=Phrase(how))


def _title(reader: readers.Reader) -> str:
    """What the reader reads ("vLLM log lines"), in any language (the reader's own title for a format added later)."""
    key = {
        "vllm_log": N_("vLLM log lines"),
        "vllm_v0_log": N_("vLLM V0 log lines"),
        "sglang_log": N_("SGLang log lines"),
        "llamacpp_log": N_("llama.cpp log lines"),
        "spec_bench": N_("Spec-Bench JSON lines"),
        "csv": N_("CSV"),
    }.get(reader.name)
    return reader.title if key is None else Phrase(key)


def _check_arguments(name, format, k, max_bytes, max_rows, no_bonus) -> tuple[str, int | None, int, int]:
    """(reader name or "auto", k, max_bytes, max_rows) after checking each argument (ValueError naming it)."""
    if not isinstance(name, str) or not name.strip():
        raise Message("name must be a non-empty str; got {name!r}", name=name)
    formats = readers.formats()
    fmt = formats.get(format) if isinstance(format, str) else None
    if fmt is None:
        raise Message("format must be one of {formats}; got {format!r}", formats=sorted(set(formats)), format=format)
    max_bytes = _check_positive_int(max_bytes, "max_bytes")
    max_rows = _check_positive_int(max_rows, "max_rows")
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer, float)) or not float(k).is_integer():
            raise Message("k must be an integer in [1, {limit}]; got {k!r}", limit=theory.K_LIMIT, k=k)
        k = int(theory.check_k(k))
    if not isinstance(no_bonus, (bool, np.bool_)):  # ValueError, not TypeError: the contract
        raise Message("mean_tokens_without_bonus must be True or False; got {value!r}", value=no_bonus)
    return fmt, k, max_bytes, max_rows


def _check_positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise Message("{what} must be an integer >= 1; got {value!r}", what=what, value=value)
    return int(value)

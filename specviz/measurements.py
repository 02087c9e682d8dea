"""The measurement CSV schema (DESIGN.md §3), shared by the bench CLI, the live page and uploads.

Canonical lower-case column names with units in the name. ``label`` and ``k`` are
required, plus at least one of ``alpha``, ``mean_accepted_tokens`` and
``acceptance_rate`` — or, for a *speedup-only* row (a published table that gives a speedup but
no acceptance figure, e.g. Chen et al. 2023 Table 1), a measured ``speedup`` (or
``tokens_per_s`` with ``baseline_tokens_per_s``). Such rows have no α, so no prediction; they
are drawn as measured points only. Everything else is optional.

:func:`load_measurements` reads what people actually have -- our own bench CSV, a
spreadsheet export from any engine, Spec-Bench's answer ``.jsonl`` or vLLM V1's
``SpecDecoding metrics`` log lines -- into a DataFrame in these columns plus the
derived ones (:data:`DERIVED_COLUMNS`), and a :class:`LoadReport` that says how:
encoding, delimiter, every header it mapped (:data:`ALIASES`, DESIGN.md §6), every
conversion it applied, and every bad cell by row, column, value and allowed range.
Rows with a bad cell are skipped; the valid rows load. Whatever is wrong with the
input, the only exception is :class:`ValueError` (with a message naming the field,
the value and what is allowed).

Choices where engines are ambiguous (each one is reported when it applies, never silent):

* SGLang ``speculative_num_draft_tokens`` counts the verified root token, K + 1 for chains
  (DESIGN.md §6: accept rate = accept len / speculative_num_draft_tokens = E[N] / (K + 1)),
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

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from specviz import theory

__all__ = [
    "ALIASES",
    "BENCH_COLUMNS",
    "COLUMNS",
    "DERIVED_COLUMNS",
    "SAMPLES",
    "Alias",
    "LoadReport",
    "MeasurementError",
    "RowError",
    "alias_table",
    "available_samples",
    "load_measurements",
    "normalise_header",
    "template_csv",
]

#: Canonical columns: name -> description (with unit and allowed range).
COLUMNS: dict[str, str] = {
    "label": "run label (required)",
    "k": "draft length K, integer >= 1 (required)",
    "alpha": "per-token acceptance α in [0, 1]; ours: the MLE A / (A + R)",
    "mean_accepted_tokens": "tokens per round incl. the bonus token = E[N], in [1, K + 1]",
    "acceptance_rate": "accepted / drafted draft tokens = (E[N] − 1) / K, in [0, 1]",
    "c": "speed ratio T_target / T_draft > 0",
    "t_target_ms": "one target decode step, ms > 0",
    "t_draft_ms": "one draft decode step, ms > 0",
    "t_verify_ms": "one target forward over K + 1 tokens, ms > 0",
    "speedup": "measured speculative tokens/s ÷ target-only tokens/s, > 0",
    "tokens_per_s": "speculative decoding throughput, tokens/s > 0",
    "baseline_tokens_per_s": "target-only throughput, tokens/s > 0",
    "temperature": "sampling temperature >= 0 (0 = greedy)",
    "batch_size": "sequences decoded together, integer >= 1",
    "target_model": "target model name",
    "draft_model": "draft model name",
    "hardware": "device the run used",
    "method": "speculation method (e.g. draft model, EAGLE, n-gram)",
    "notes": "free text",
}

#: Columns the bench CLI adds beyond the canonical ones (all optional on upload).
BENCH_COLUMNS: dict[str, str] = {
    "alpha_overlap": "mean Σ min(p, q) over verified positions",
    "v": "extra verify cost per drafted token: (T_verify / T_target − 1) / K",
    "o": "per-round time beyond one verify forward and K draft steps, in target steps",
    "per_position_acceptance": "a_1;a_2;…;a_K conditional acceptance per draft position",
    "predicted_speedup_basic": "specviz.theory.speedup(α, c, K)",
    "predicted_speedup_measured_cost": "specviz.theory.speedup(α, c, K, v, o)",
    "speedup_vs_predicted": "median over runs of measured speedup ÷ that run's measured-cost prediction",
    "speedup_min": "smallest per-run speedup",
    "speedup_max": "largest per-run speedup",
    "runs": "number of (prompt, repeat) runs aggregated",
    "new_tokens": "tokens generated per run",
    "greedy_exact": "temperature 0 only: speculative output equal to target-only output in every run",
    "device": "torch device",
    "dtype": "model dtype",
    "torch_version": "torch version",
    "source": "what produced the row",
}

#: Columns computed on load (an input column of the same name is ignored and recomputed).
DERIVED_COLUMNS: dict[str, str] = {
    "alpha_used": "α used for predictions: alpha if given, else recovered from mean_accepted_tokens, "
    "else from acceptance_rate (specviz.theory); empty for speedup-only rows",
    "alpha_source": "which column alpha_used came from",
    "c_used": "c used for predictions: c if given (or 1 / c_L), else t_target_ms / t_draft_ms",
    "c_source": "which column(s) c_used came from",
    "predicted_speedup": "basic model: specviz.theory.speedup(alpha_used, c_used, k)",
    "predicted_speedup_measured_cost": "specviz.theory.speedup(alpha_used, c_used, k, v, o) "
    "where v or o is known (the other taken as 0)",
    "speedup_ratio": "measured / predicted: speedup / predicted_speedup",
}

# --------------------------------------------------------------------------------------
# what each column may hold
# --------------------------------------------------------------------------------------

_TEXT = (
    "label",
    "target_model",
    "draft_model",
    "hardware",
    "method",
    "notes",
    "device",
    "dtype",
    "torch_version",
    "source",
)
_UNIT = ("alpha", "acceptance_rate", "alpha_overlap")  # in [0, 1]; percent detected
_POSITIVE = (
    "c",
    "t_target_ms",
    "t_draft_ms",
    "t_verify_ms",
    "speedup",
    "tokens_per_s",
    "baseline_tokens_per_s",
    "predicted_speedup_basic",
    "speedup_min",
    "speedup_max",
    "speedup_vs_predicted",
)
_NONNEG = ("temperature", "v", "o")
_INTEGER = ("batch_size", "runs", "new_tokens")  # integers >= 1 (k separately)
TEXT_COLUMNS = _TEXT  #: columns holding free text
INTEGER_COLUMNS = _INTEGER  #: integer count columns other than k
#: Internal columns of converted aliases (not in the output): Leviathan's c_L and SGLang's accept rate.
_INTERNAL = ("c_l", "system_efficiency")
_INT_MAX = 2**53  #: largest integer count accepted (exact in float64 and int64)
_SPEEDUP_LIKE = ("speedup", "speedup_min", "speedup_max", "predicted_speedup_basic")  # may end in "x" / "×"

_ALLOWED: dict[str, str] = {
    **dict.fromkeys(_UNIT, "[0, 1]"),
    **dict.fromkeys(_POSITIVE, "a finite number > 0"),
    **dict.fromkeys(_NONNEG, "a finite number >= 0"),
    **dict.fromkeys(_INTEGER, f"an integer in [1, {_INT_MAX}]"),
    "k": f"an integer in [1, {theory.K_LIMIT}]",
    "mean_accepted_tokens": "[1, K + 1]",
    "c_l": "a finite number > 0 (c_L = T_draft / T_target)",
    "system_efficiency": "[1 / (K + 1), 1]",
    "per_position_acceptance": "K numbers in [0, 1] (or nan) separated by ';'",
    "greedy_exact": "true / false (or empty)",
}

# --------------------------------------------------------------------------------------
# header aliases (DESIGN.md §6)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alias:
    """A header some engine or paper writes, and the canonical column it becomes."""

    header: str  #: the header as the engine writes it (matched after :func:`normalise_header`)
    column: str  #: canonical column (or the internal ``c_l`` / ``system_efficiency``)
    source: str  #: who writes it
    conversion: str = ""  #: empty, or how the value becomes the canonical one


#: Known headers. Matching is on the normalised form, so case, spaces, '#', '%', units in
#: brackets and punctuation do not matter. Identity names (``k``, ``alpha``, …) always match.
ALIASES: tuple[Alias, ...] = (
    # draft length K
    Alias("K", "k", "specviz"),
    Alias("γ", "k", "Leviathan et al."),
    Alias("gamma", "k", "Leviathan et al."),
    Alias("draft_length", "k", "generic"),
    Alias("draft_len", "k", "generic"),
    Alias("num_speculative_tokens", "k", "vLLM"),
    Alias("n_draft", "k", "llama.cpp"),
    Alias("--draft-max", "k", "llama.cpp"),
    Alias("draft_max", "k", "llama.cpp"),
    Alias("num_assistant_tokens", "k", "HF transformers"),
    Alias("max_draft_len", "k", "TensorRT-LLM"),
    Alias("speculative_num_steps", "k", "SGLang (chain depth)"),
    Alias("speculative_num_draft_tokens", "k", "SGLang", "K = value − 1 (chains verify K drafts + 1 root token)"),
    # E[N]
    Alias("mean_acceptance_length", "mean_accepted_tokens", "vLLM V1"),
    Alias("acceptance_length", "mean_accepted_tokens", "generic"),
    Alias("avg_acceptance_length", "mean_accepted_tokens", "generic"),
    Alias("average_acceptance_length", "mean_accepted_tokens", "generic"),
    Alias("accept_length", "mean_accepted_tokens", "SGLang"),
    Alias("accept len", "mean_accepted_tokens", "SGLang"),
    Alias("avg_accept_length", "mean_accepted_tokens", "SGLang"),
    Alias("avg_decoded_tokens_per_iter", "mean_accepted_tokens", "TensorRT-LLM"),
    Alias("#Mean accepted tokens", "mean_accepted_tokens", "Spec-Bench"),
    Alias("mean_accepted_length", "mean_accepted_tokens", "generic"),
    Alias("tau", "mean_accepted_tokens", "EAGLE / Spec-Bench papers (τ)"),
    Alias("τ", "mean_accepted_tokens", "EAGLE / Spec-Bench papers"),
    Alias("E[N]", "mean_accepted_tokens", "specviz"),
    Alias("mean_tokens", "mean_accepted_tokens", "specviz"),
    Alias("mean_tokens_no_bonus", "mean_accepted_tokens", "declared by name", "E[N] = value + 1 (bonus token added)"),
    Alias("mean_accepted_drafts", "mean_accepted_tokens", "declared by name", "E[N] = value + 1 (bonus token added)"),
    Alias(
        "accepted_drafts_per_round", "mean_accepted_tokens", "declared by name", "E[N] = value + 1 (bonus token added)"
    ),
    # r = (E[N] − 1) / K
    Alias("draft_acceptance_rate", "acceptance_rate", "vLLM"),
    Alias("Avg Draft acceptance rate", "acceptance_rate", "vLLM V1 log"),
    Alias("accept %", "acceptance_rate", "llama.cpp"),
    Alias("accept", "acceptance_rate", "llama.cpp ('accept = 70.000%')"),
    Alias("accept_rate", "acceptance_rate", "llama.cpp (SGLang's 'accept rate' when the file has SGLang columns)"),
    Alias("token_acceptance_rate", "acceptance_rate", "vLLM V0 examples"),
    Alias("draft_accept_rate", "acceptance_rate", "generic"),
    # α
    Alias("α", "alpha", "specviz"),
    Alias("alpha_hat", "alpha", "specviz"),
    Alias("acceptance_probability", "alpha", "generic"),
    Alias("per_token_acceptance", "alpha", "generic"),
    # E[N] / (K + 1)
    Alias("system_efficiency", "system_efficiency", "vLLM V0", "E[N] = value × (K + 1)"),
    Alias("sglang_accept_rate", "system_efficiency", "SGLang", "E[N] = value × (K + 1)"),
    # c and c_L
    Alias("speed_ratio", "c", "generic"),
    Alias("target_draft_speed_ratio", "c", "generic"),
    Alias("c_L", "c_l", "Leviathan et al.", "c = 1 / c_L"),
    Alias("c_leviathan", "c_l", "Leviathan et al.", "c = 1 / c_L"),
    Alias("cost_coefficient", "c_l", "Leviathan et al.", "c = 1 / c_L"),
    Alias("draft-to-target cost ratio", "c_l", "Leviathan et al.", "c = 1 / c_L"),
    Alias("draft_target_cost_ratio", "c_l", "generic", "c = 1 / c_L"),
    # times
    Alias("t_target", "t_target_ms", "generic (ms)"),
    Alias("target_ms", "t_target_ms", "generic"),
    Alias("target_step_ms", "t_target_ms", "generic"),
    Alias("t_p_ms", "t_target_ms", "Leviathan et al. (M_p)"),
    Alias("t_target_s", "t_target_ms", "generic", "ms = s × 1000"),
    Alias("t_target_us", "t_target_ms", "generic", "ms = µs / 1000"),
    Alias("t_draft", "t_draft_ms", "generic (ms)"),
    Alias("draft_ms", "t_draft_ms", "generic"),
    Alias("draft_step_ms", "t_draft_ms", "generic"),
    Alias("t_q_ms", "t_draft_ms", "Leviathan et al. (M_q)"),
    Alias("t_draft_s", "t_draft_ms", "generic", "ms = s × 1000"),
    Alias("t_draft_us", "t_draft_ms", "generic", "ms = µs / 1000"),
    Alias("t_verify", "t_verify_ms", "generic (ms)"),
    Alias("verify_ms", "t_verify_ms", "generic"),
    Alias("verify_step_ms", "t_verify_ms", "generic"),
    Alias("t_verify_s", "t_verify_ms", "generic", "ms = s × 1000"),
    Alias("t_verify_us", "t_verify_ms", "generic", "ms = µs / 1000"),
    # speed
    Alias("speed_up", "speedup", "generic"),
    Alias("speedup (x)", "speedup", "generic"),
    Alias("measured_speedup", "speedup", "generic"),
    Alias("wall_clock_speedup", "speedup", "generic"),
    Alias("walltime_speedup", "speedup", "generic"),
    Alias("tokens_per_second", "tokens_per_s", "Spec-Bench"),
    Alias("tok/s", "tokens_per_s", "generic"),
    Alias("tokens/s", "tokens_per_s", "generic"),
    Alias("throughput_tokens_per_s", "tokens_per_s", "generic"),
    Alias("output_throughput", "tokens_per_s", "vLLM / SGLang bench_serving (tok/s)"),
    Alias("gen throughput (token/s)", "tokens_per_s", "SGLang"),
    Alias("tokens per second for the baseline", "baseline_tokens_per_s", "Spec-Bench"),
    Alias("baseline_tokens_per_second", "baseline_tokens_per_s", "generic"),
    Alias("baseline_tok/s", "baseline_tokens_per_s", "generic"),
    Alias("baseline_throughput", "baseline_tokens_per_s", "generic"),
    # run conditions and metadata
    Alias("temp", "temperature", "generic"),
    Alias("bs", "batch_size", "generic"),
    Alias("batch", "batch_size", "generic"),
    Alias("target", "target_model", "generic"),
    Alias("model", "target_model", "generic"),
    Alias("target_model_name", "target_model", "generic"),
    Alias("base_model", "target_model", "generic"),
    Alias("draft", "draft_model", "generic"),
    Alias("draft_model_name", "draft_model", "generic"),
    Alias("assistant_model", "draft_model", "HF transformers"),
    Alias("speculative_model", "draft_model", "vLLM"),
    Alias("gpu", "hardware", "generic"),
    Alias("hw", "hardware", "generic"),
    Alias("speculative_method", "method", "vLLM"),
    Alias("speculative_algorithm", "method", "SGLang"),
    Alias("spec_method", "method", "generic"),
    Alias("algorithm", "method", "generic"),
    Alias("note", "notes", "generic"),
    Alias("comment", "notes", "generic"),
    Alias("comments", "notes", "generic"),
    Alias("name", "label", "generic"),
    Alias("run", "label", "generic"),
    Alias("run_name", "label", "generic"),
    Alias("run_label", "label", "generic"),
)

#: Headers whose presence means an ``accept rate`` column is SGLang's E[N] / (K + 1), not llama.cpp's r.
_SGLANG_MARKERS = frozenset(
    {"speculative_num_draft_tokens", "speculative_num_steps", "speculative_eagle_topk", "speculative_algorithm"}
)

_GREEK = {"α": "alpha", "γ": "gamma", "τ": "tau", "μ": "u"}
_PERCENT_WORDS = re.compile(r"(?:^|_)(?:in_)?(?:pct|percent|percentage)(?=_|$)")


def normalise_header(header: str) -> tuple[str, bool]:
    """Normalised key of a header and whether the header says its values are in percent.

    Lower case; Greek α, γ, τ spelled out; accents dropped; '#', '%' and every run of
    characters other than letters and digits become one '_'; leading/trailing '_'
    dropped; a 'pct' / 'percent' word is dropped and sets the percent flag (as does '%').
    ``"#Mean accepted tokens"`` → ``("mean_accepted_tokens", False)``,
    ``"Draft acceptance rate (%)"`` → ``("draft_acceptance_rate", True)``.
    """
    s = unicodedata.normalize("NFKC", str(header)).replace("\ufeff", "").strip().lower()
    s = "".join(_GREEK.get(ch, ch) for ch in s)
    s = "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))
    percent = "%" in s
    s = re.sub(r"[\W_]+", "_", s).strip("_")
    if _PERCENT_WORDS.search(s):
        percent = True
        s = _PERCENT_WORDS.sub("", s).strip("_")
    return s, percent


def _build_alias_index() -> dict[str, Alias]:
    index: dict[str, Alias] = {}
    for name in (*COLUMNS, *BENCH_COLUMNS):
        index[name] = Alias(name, name, "specviz")
    for alias in ALIASES:
        key, _ = normalise_header(alias.header)
        if key in index and index[key].column != alias.column:
            raise AssertionError(f"alias {alias.header!r} ({key}) is already {index[key].column}")
        index.setdefault(key, alias)
    return index


_ALIAS_INDEX = _build_alias_index()


def alias_table() -> pd.DataFrame:
    """Every known header alias: header, normalised key, canonical column, conversion, source."""
    rows = []
    for a in ALIASES:
        target = {"c_l": "c", "system_efficiency": "mean_accepted_tokens"}.get(a.column, a.column)
        rows.append(
            {
                "header": a.header,
                "normalised": normalise_header(a.header)[0],
                "column": target,
                "conversion": a.conversion,
                "source": a.source,
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------


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
    """How :func:`load_measurements` read a file."""

    name: str  #: the name given (used as label where the file has none)
    format: str = "csv"  #: "csv", "spec_bench" (JSON lines) or "vllm_log"
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

    def summary(self, max_errors: int = 20) -> str:
        """A few lines for a person: what was read, how, what was mapped/converted, and what was wrong."""
        how = [self.format]
        if self.encoding:
            how.append(self.encoding)
        if self.delimiter is not None:
            how.append("delimiter " + {"\t": "tab"}.get(self.delimiter, repr(self.delimiter)))
        if self.decimal_comma:
            how.append("decimal comma")
        lines = [
            (
                f"{self.name}: read {self.rows_read} row(s) ({', '.join(how)}); loaded {self.rows_loaded}, "
                f"skipped {self.rows_skipped}."
            )
        ]
        if self.mapped:
            lines.append("Mapped columns: " + ", ".join(f"{k!r} → {v}" for k, v in self.mapped.items()) + ".")
        if self.conversions:
            lines.append("Conversions: " + "; ".join(self.conversions) + ".")
        if self.ignored:
            lines.append("Ignored columns: " + ", ".join(f"{k!r} ({v})" for k, v in self.ignored.items()) + ".")
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


# --------------------------------------------------------------------------------------
# bytes -> text
# --------------------------------------------------------------------------------------

_FORMATS = {
    "auto": "auto",
    "csv": "csv",
    "spec_bench": "spec_bench",
    "spec-bench": "spec_bench",
    "jsonl": "spec_bench",
    "vllm_log": "vllm_log",
    "vllm": "vllm_log",
    "log": "vllm_log",
}
_HINT = "a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines"


def _read_input(data, name: str, max_bytes: int) -> bytes | str:
    """The raw content: bytes from bytes / paths / file objects, str as given (a str is content, not a path)."""
    if isinstance(data, str):
        if "\n" not in data and len(data) < 4096 and os.path.isfile(data):
            raise MeasurementError(
                f"{name}: a str is read as the file's text, and {data!r} is a file name; pass "
                f"pathlib.Path({data!r}) to read the file"
            )
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, os.PathLike):
        try:
            path = Path(data)
        except TypeError as exc:
            raise MeasurementError(f"{name}: not a usable path: {exc}") from None
        try:
            if not path.is_file():
                raise MeasurementError(f"{name}: file {str(path)!r} does not exist or is not a file")
            size = path.stat().st_size
            if size > max_bytes:
                raise MeasurementError(_too_big(name, size, max_bytes))
            return path.read_bytes()
        except OSError as exc:
            raise MeasurementError(f"{name}: cannot read {str(path)!r}: {exc}") from None
    reader = getattr(data, "getvalue", None) or getattr(data, "read", None)
    if callable(reader):  # BytesIO, StringIO, Streamlit's UploadedFile, open files
        try:
            content = reader() if reader.__name__ == "getvalue" else reader(max_bytes + 1)
        except (OSError, ValueError, TypeError) as exc:
            raise MeasurementError(f"{name}: cannot read the file object: {exc}") from None
        if isinstance(content, (str, bytes, bytearray, memoryview)):
            return content if isinstance(content, str) else bytes(content)
    raise MeasurementError(
        f"data must be bytes, a str holding the file's text, or a path (os.PathLike); got {type(data).__name__}"
    )


def _too_big(name: str, size: int, max_bytes: int) -> str:
    return (
        f"{name}: the file is {size:,} bytes; the limit is max_bytes = {max_bytes:,} bytes "
        f"({max_bytes / 2**20:.1f} MiB)"
    )


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_C0 = re.compile("[\x00-\x08\x0e-\x1f\x7f]")  # control characters other than \t \n \v \f \r
_C0_C1 = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")


def _binary(name: str, why: str) -> MeasurementError:
    return MeasurementError(f"{name}: this is not a text file ({why}); upload {_HINT}")


def _decode(raw: bytes, name: str) -> tuple[str, str]:
    """Text and encoding: BOMs (UTF-8/16/32), UTF-16 without BOM, UTF-8, else cp1252, else Latin-1."""
    text = encoding = None
    for bom, enc in _BOMS:
        if raw.startswith(bom):
            try:
                text, encoding = raw.decode(enc), enc
            except UnicodeDecodeError as exc:
                raise _binary(
                    name,
                    f"it starts with a {enc} byte-order mark but is not valid {enc}: {exc.reason} at byte {exc.start}",
                ) from None
            break
    if text is None and b"\x00" in raw:
        even, odd = raw[0::2], raw[1::2]
        for enc, zeros, chars in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
            if len(raw) % 2 == 0 and zeros.count(0) >= 0.9 * len(zeros) and chars.count(0) <= 0.1 * len(chars):
                with contextlib.suppress(UnicodeDecodeError):
                    text, encoding = raw.decode(enc), f"{enc} (no BOM)"
                break
        if text is None:
            raise _binary(name, "it holds NUL bytes")
    if text is None:
        for enc in ("utf-8", "cp1252", "latin-1"):
            try:
                text, encoding = raw.decode(enc), enc
                break
            except UnicodeDecodeError:
                continue
    assert text is not None and encoding is not None  # latin-1 decodes every byte string
    _check_text(text, name, c1=encoding == "latin-1")
    return text, encoding


def _check_text(text: str, name: str, c1: bool = False) -> None:
    if "\x00" in text:
        raise _binary(name, "it holds NUL characters")
    n_bad = len((_C0_C1 if c1 else _C0).findall(text))
    if n_bad > max(2, 0.01 * len(text)):
        raise _binary(name, f"{n_bad} of its {len(text)} characters are control characters")


# --------------------------------------------------------------------------------------
# cells -> numbers
# --------------------------------------------------------------------------------------

_NUM = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?inf(?:inity)?", re.IGNORECASE)
_COMMA_NUM = re.compile(r"[+-]?[0-9]*,[0-9]+(?:[eE][+-]?[0-9]+)?%?")
_DOT_NUM = re.compile(r"[+-]?[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?%?")
_MISSING = frozenset({"", "na", "n/a", "nan", "none", "null", "-", "—", "–"})


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _parse_number(value, decimal_comma: bool, suffixes: str) -> tuple[float | None, bool]:
    """(number or None if missing, whether it ended in '%'); raises _Bad if it is not a number."""
    if value is None:
        return None, False
    if isinstance(value, bool):
        raise _Bad
    if isinstance(value, (int, float, np.integer, np.floating)):
        try:
            x = float(value)
        except OverflowError:  # an int beyond float range
            x = math.copysign(math.inf, value)
        return (None if math.isnan(x) else x), False
    s = str(value).strip()
    if s.lower() in _MISSING:
        return None, False
    percent = False
    if s.endswith("%") and "%" in suffixes:
        s, percent = s[:-1].rstrip(), True
    elif s[-1:] in "xX×" and "x" in suffixes:
        s = s[:-1].rstrip()
    if decimal_comma:
        s = s.replace(",", ".")
    if not _NUM.fullmatch(s):
        raise _Bad
    x = float(s)
    if math.isnan(x):
        return None, percent
    return (x / 100.0 if percent else x), percent


class _Bad(Exception):
    """Internal: a cell that is not a number (always turned into a RowError)."""


# --------------------------------------------------------------------------------------
# the table every format is turned into, then validated and derived in one place
# --------------------------------------------------------------------------------------


@dataclass
class _Column:
    name: str  #: canonical or internal column
    header: str  #: the file's header
    cells: list  #: raw cells (str from CSV, numbers/str from the other parsers)
    conversion: str = ""  #: Alias.conversion
    percent: bool = False  #: the header says percent


@dataclass
class _Table:
    rows: list[int]  #: file row number of each row
    columns: dict[str, _Column]
    #: errors found while parsing, by row index (e.g. a CSV row with extra fields)
    row_errors: dict[int, list[RowError]] = field(default_factory=dict)
    #: input rows each table row pools (Spec-Bench: JSON lines per model_id); None = 1 each
    weights: list[int] | None = None
    #: errors of input rows that never became a table row (Spec-Bench lines that are not answers)
    dropped: list[RowError] = field(default_factory=list)
    n_dropped: int = 0  #: how many input rows those are


def _column_kind(name: str) -> str:
    if name in _TEXT:
        return "text"
    if name == "per_position_acceptance":
        return "positions"
    if name == "greedy_exact":
        return "bool"
    return "number"


def _build(
    table: _Table, report: LoadReport, name: str, mean_tokens_without_bonus: bool, k_given: int | None
) -> pd.DataFrame:
    """Validate every cell, skip bad rows, derive the columns; the one path for every format."""
    n = len(table.rows)
    rows = table.rows
    if n == 0:
        report.rows_read, report.row_errors = table.n_dropped, list(table.dropped)
        raise MeasurementError(_no_usable_row(name, report), report)
    errors: list[list[RowError]] = [list(table.row_errors.get(i, [])) for i in range(n)]
    cols = table.columns
    out: dict[str, np.ndarray | list] = {}

    not_numbers: set[tuple[str, int]] = set()  # cells already reported as not a number

    def bad(i: int, column: str, cell, allowed: str) -> None:
        header = cols[column].header if column in cols else ""
        target = {"c_l": "c", "system_efficiency": "mean_accepted_tokens"}.get(column, column)
        errors[i].append(RowError(rows[i], target, _cell_text(cell), allowed, header))

    # -- numbers --------------------------------------------------------------------------------
    values: dict[str, np.ndarray] = {}
    for col in cols.values():
        if _column_kind(col.name) != "number":
            continue
        suffixes = ("%" if col.name in (*_UNIT, "system_efficiency") else "") + (
            "x" if col.name in _SPEEDUP_LIKE else ""
        )
        arr = np.full(n, np.nan)
        cell_pct = np.zeros(n, dtype=bool)
        for i, cell in enumerate(col.cells):
            try:
                x, pct = _parse_number(cell, report.decimal_comma, suffixes)
            except _Bad:
                bad(i, col.name, cell, "a number; " + _allowed(col))
                not_numbers.add((col.name, i))
                continue
            if x is not None:
                arr[i] = x
            cell_pct[i] = pct
        if cell_pct.any():
            report.conversions.append(f"{col.header!r}: {int(cell_pct.sum())} cell(s) written with '%' divided by 100")
        if col.name in (*_UNIT, "system_efficiency"):
            _percent_column(col, arr, cell_pct, report, rows)
        arr = _convert(col, arr, report)
        values[col.name] = arr

    # -- K first: other ranges depend on it -----------------------------------------------------
    if "k" not in values:
        if k_given is None:  # _check_required ran before, so this only happens for parsers that pass k
            raise MeasurementError(f"{name}: no draft length K (column 'k') and no k given", report)
        values["k"] = np.full(n, float(k_given))
        report.conversions.append(f"k = {k_given} for every row (given by the caller)")
    k = values["k"]
    k_ok = np.isfinite(k) & (k >= 1) & (k <= theory.K_LIMIT) & (k == np.floor(k))
    for i in np.flatnonzero(~k_ok):
        if ("k", i) in not_numbers:
            continue
        cell = cols["k"].cells[i] if "k" in cols else k[i]
        if "k" in cols and cols["k"].conversion:
            bad(i, "k", cell, f"an integer >= 2 (= K + 1; {cols['k'].header} counts the root token)")
        else:
            bad(i, "k", cell, "required: " + _ALLOWED["k"] if np.isnan(k[i]) else _ALLOWED["k"])
    kk = np.where(k_ok, k, 1.0)

    # -- the declared no-bonus variant ----------------------------------------------------------
    if mean_tokens_without_bonus and "mean_accepted_tokens" in values:
        col = cols.get("mean_accepted_tokens")
        if col is None or not col.conversion:  # a no-bonus alias was already shifted by its name
            values["mean_accepted_tokens"] = values["mean_accepted_tokens"] + 1.0
            report.conversions.append(
                f"{col.header if col else 'mean acceptance length'!r}: declared without the bonus token, "
                f"E[N] = value + 1"
            )

    # -- ranges ---------------------------------------------------------------------------------
    tol = 1e-9
    for cname, arr in values.items():
        if cname == "k":
            continue
        col = cols.get(cname)
        cells = col.cells if col else arr
        finite, present = np.isfinite(arr), ~np.isnan(arr)
        if cname in _UNIT:
            ok = (arr >= -tol) & (arr <= 1 + tol)
        elif cname in _POSITIVE or cname == "c_l":
            ok = finite & (arr > 0)
        elif cname in _NONNEG:
            ok = finite & (arr >= 0)
        elif cname in _INTEGER:
            ok = finite & (arr >= 1) & (arr <= _INT_MAX) & (arr == np.floor(arr))
        elif cname == "mean_accepted_tokens":
            ok = (arr >= 1 - tol) & (arr <= np.where(k_ok, kk + 1, np.inf) * (1 + tol))
        elif cname == "system_efficiency":
            ok = (arr >= (1 - tol) / (kk + 1)) & (arr <= 1 + tol)
        else:  # pragma: no cover - every numeric column has a rule above
            raise AssertionError(cname)
        for i in np.flatnonzero(present & ~ok):
            bad(i, cname, cells[i], _allowed_at(cname, col, kk[i] if k_ok[i] else None, mean_tokens_without_bonus))
        if cname in _UNIT or cname in ("mean_accepted_tokens", "system_efficiency"):
            lo = 1.0 if cname == "mean_accepted_tokens" else 0.0
            hi = kk + 1.0 if cname == "mean_accepted_tokens" else 1.0
            values[cname] = np.where(present & ok, np.clip(arr, lo, hi), arr)

    # -- text, booleans, per-position lists -----------------------------------------------------
    for col in cols.values():
        kind = _column_kind(col.name)
        if kind == "text":
            out[col.name] = [None if c is None or str(c).strip() == "" else str(c).strip() for c in col.cells]
        elif kind == "bool":
            vals = []
            for i, c in enumerate(col.cells):
                s = _cell_text(c).strip().lower()
                if s in _MISSING:
                    vals.append(None)
                elif s in ("true", "1", "yes", "1.0"):
                    vals.append(True)
                elif s in ("false", "0", "no", "0.0"):
                    vals.append(False)
                else:
                    vals.append(None)
                    bad(i, col.name, c, _ALLOWED["greedy_exact"])
            out[col.name] = vals
        elif kind == "positions":
            vals = []
            for i, c in enumerate(col.cells):
                parsed = _parse_positions(c, report.decimal_comma)
                if parsed is False or (parsed is not None and k_ok[i] and len(parsed) != int(kk[i])):
                    n_k = f"{int(kk[i])}" if k_ok[i] else "K"
                    bad(i, col.name, c, f"{n_k} numbers in [0, 1] (or nan) separated by ';'")
                    vals.append(None)
                else:
                    vals.append(
                        None
                        if parsed is None
                        else ";".join("nan" if math.isnan(x) else format(x, ".6g") for x in parsed)
                    )
            out[col.name] = vals

    # -- label ----------------------------------------------------------------------------------
    if "label" not in out:
        out["label"] = [name] * n
        report.conversions.append(f"no label column: label = {name!r} for every row")
    else:
        empty = [i for i, v in enumerate(out["label"]) if v is None]
        for i in empty:
            out["label"][i] = name
        if empty:
            report.conversions.append(f"{len(empty)} empty label(s) set to {name!r}")

    # -- fill converted sources -----------------------------------------------------------------
    if "c_l" in values:
        c_from_l = np.full(n, np.nan)
        good = np.isfinite(values["c_l"]) & (values["c_l"] > 0)
        with np.errstate(all="ignore"):
            c_from_l[good] = theory.c_from_leviathan(values["c_l"][good])
        for i in np.flatnonzero(good & ~np.isfinite(c_from_l)):  # a subnormal c_L: 1 / c_L overflows
            bad(i, "c_l", cols["c_l"].cells[i], "a c_L whose inverse c = 1 / c_L is finite")
        good &= np.isfinite(c_from_l)
        c = values.get("c", np.full(n, np.nan))
        fill = np.isnan(c) & good
        values["c"] = np.where(fill, c_from_l, c)
        c_l_rows = fill
    else:
        c_l_rows = np.zeros(n, dtype=bool)
    if "system_efficiency" in values:
        se = values["system_efficiency"]
        m = values.get("mean_accepted_tokens", np.full(n, np.nan))
        fill = np.isnan(m) & ~np.isnan(se) & k_ok
        values["mean_accepted_tokens"] = np.where(fill, se * (kk + 1), m)
        values["mean_accepted_tokens"] = np.where(
            fill, np.clip(values["mean_accepted_tokens"], 1, kk + 1), values["mean_accepted_tokens"]
        )
    if "speedup" not in values and "tokens_per_s" in values and "baseline_tokens_per_s" in values:
        with np.errstate(all="ignore"):
            ratio = values["tokens_per_s"] / values["baseline_tokens_per_s"]
        values["speedup"] = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
        if np.isfinite(values["speedup"]).any():
            report.conversions.append("speedup = tokens_per_s / baseline_tokens_per_s")

    # -- at least one acceptance measure (or, for a speedup-only row, a speedup) per row ----------
    acc = [values[c] for c in ("alpha", "mean_accepted_tokens", "acceptance_rate", "speedup") if c in values]
    has_acc = np.zeros(n, dtype=bool)
    for arr in acc:
        has_acc |= ~np.isnan(arr)
    acc_columns = {"alpha", "mean_accepted_tokens", "acceptance_rate", "speedup"}
    for i in np.flatnonzero(~has_acc):
        if not any(e.column in acc_columns for e in errors[i]):  # not already reported as a bad cell
            errors[i].append(
                RowError(
                    rows[i],
                    "alpha",
                    "",
                    "one of alpha, mean_accepted_tokens, acceptance_rate or speedup (all empty in this row)",
                )
            )
    if "speedup" in values:
        only = has_acc & np.all(
            [np.isnan(values[c]) for c in ("alpha", "mean_accepted_tokens", "acceptance_rate") if c in values]
            or [np.ones(n, dtype=bool)],
            axis=0,
        )
        only &= np.array([not e for e in errors], dtype=bool)
        if only.any():
            report.warnings.append(
                f"row(s) {_few([rows[i] for i in np.flatnonzero(only)])} give a speedup but no "
                "acceptance figure (alpha, mean accepted tokens or acceptance rate): loaded as "
                "speedup-only rows, without α or a prediction"
            )

    # -- mean length and rate must agree (E[N] = 1 + rK); a mismatch is shown, not fixed ----------
    if "mean_accepted_tokens" in values and "acceptance_rate" in values:
        mean, rate = values["mean_accepted_tokens"], values["acceptance_rate"]
        clean = np.array([not e for e in errors], dtype=bool) & ~np.isnan(mean) & ~np.isnan(rate) & k_ok
        with np.errstate(all="ignore"):
            off = clean & (np.abs(1.0 + rate * kk - mean) > 0.02 * mean)
            sglang_like = off & (np.abs(rate * (kk + 1) - mean) <= 0.02 * mean)
        if off.any():
            hint = (
                " — they fit E[N] / (K + 1), SGLang's 'accept rate': name that column 'sglang_accept_rate'"
                if sglang_like.sum() == off.sum()
                else ""
            )
            report.warnings.append(
                f"mean_accepted_tokens and acceptance_rate disagree (E[N] ≠ 1 + r·K by more "
                f"than 2 %) in row(s) {_few([rows[i] for i in np.flatnonzero(off)])}; "
                f"alpha_used comes from mean_accepted_tokens{hint}"
            )

    # -- keep the valid rows --------------------------------------------------------------------
    report.row_errors = sorted([*table.dropped, *(e for errs in errors for e in errs)], key=lambda e: e.row)
    keep = np.array([not e for e in errors], dtype=bool)
    weights = np.ones(n, dtype=int) if table.weights is None else np.asarray(table.weights, dtype=int)
    report.rows_read = int(weights.sum()) + table.n_dropped
    report.rows_loaded = int(weights[keep].sum())
    if not keep.any():
        raise MeasurementError(_no_usable_row(name, report), report)
    return _derive(values, out, keep, rows, report, c_l_rows)


def _allowed(col: _Column) -> str:
    return _ALLOWED.get(col.name, "")


def _allowed_at(cname: str, col: _Column | None, k: float | None, no_bonus: bool) -> str:
    """The allowed range of a cell, in the file's own terms where a conversion applied."""
    ks = "K" if k is None else str(int(k))
    kp1 = "K + 1" if k is None else str(int(k) + 1)
    if cname == "mean_accepted_tokens":
        if no_bonus or (col is not None and col.conversion.startswith("E[N] = value + 1")):
            return f"[0, {ks}] (mean acceptance length without the bonus token; E[N] = value + 1 in [1, {kp1}])"
        return f"[1, {kp1}] (E[N], bonus token counted, K = {ks})" if k is not None else "[1, K + 1]"
    if cname == "system_efficiency":
        return f"[1/{kp1}, 1] (E[N] / (K + 1))"
    if col is not None and col.conversion.startswith("ms ="):
        unit = "s" if "× 1000" in col.conversion else "µs"
        return f"a finite number > 0 ({unit})"
    allowed = _ALLOWED[cname]
    if col is not None and (col.percent or cname in _UNIT):
        allowed += " (a column wholly in percent is read as percent)" if cname in _UNIT else ""
    return allowed


def _percent_column(col: _Column, arr: np.ndarray, cell_pct: np.ndarray, report: LoadReport, rows: list[int]) -> None:
    """Divide a rate column by 100 if its header says percent, or if its values can only be percentages."""
    plain = ~cell_pct & np.isfinite(arr)
    if not plain.any():
        return
    vals = arr[plain]
    if col.percent:
        why = "the header says percent"
    elif (vals > 1).any() and (vals <= 100).all() and (vals >= 0).all():
        fractions = plain & (arr > 0) & (arr < 1)
        if fractions.any():  # 0.8 next to 60: a fraction or 0.8 %? Not guessed.
            report.warnings.append(
                f"{col.header!r} mixes values in (0, 1) (e.g. row {rows[int(np.flatnonzero(fractions)[0])]}) with "
                f"values > 1, so it is not read as percent and the values > 1 are errors; if the column is in "
                f"percent, write '%' in its header"
            )
            return
        why = f"values in [0, 100], up to {vals.max():g}"
    else:
        return
    arr[plain] = arr[plain] / 100.0
    report.conversions.append(f"{col.header!r}: percent ({why}) divided by 100")


def _few(items: list, n: int = 8) -> str:
    s = ", ".join(str(x) for x in items[:n])
    return s + (f" … ({len(items)} in all)" if len(items) > n else "")


def _convert(col: _Column, arr: np.ndarray, report: LoadReport) -> np.ndarray:
    conv = col.conversion
    if not conv:
        return arr
    with np.errstate(all="ignore"):
        if conv.startswith("K = value − 1"):
            arr = arr - 1.0
        elif conv.startswith("E[N] = value + 1"):
            arr = arr + 1.0
        elif conv == "ms = s × 1000":
            arr = arr * 1000.0
        elif conv == "ms = µs / 1000":
            arr = arr / 1000.0
        elif conv in ("c = 1 / c_L", "E[N] = value × (K + 1)"):
            pass  # applied after validation, where the canonical value is missing
        else:  # pragma: no cover
            raise AssertionError(conv)
    report.conversions.append(f"{col.header!r}: {conv}")
    return arr


def _parse_positions(cell, decimal_comma: bool):
    """A per-position list -> list of floats; None if empty; False if malformed."""
    s = _cell_text(cell).strip()
    if s.lower() in _MISSING:
        return None
    s = s.strip("[]() ")
    parts = re.split(r"[;\s]+" if decimal_comma else r"[;,\s]+", s)
    out = []
    for p in parts:
        if decimal_comma:
            p = p.replace(",", ".")
        if p.lower() == "nan":
            out.append(math.nan)
            continue
        if not _NUM.fullmatch(p):
            return False
        x = float(p)
        if not 0.0 <= x <= 1.0:
            return False
        out.append(x)
    return out if out else None


def _no_usable_row(name: str, report: LoadReport) -> str:
    if report.rows_read == 0:
        return f"{name}: no data rows (only a header?)"
    first = "; ".join(str(e) for e in report.row_errors[:5])
    more = f" (and {len(report.row_errors) - 5} more)" if len(report.row_errors) > 5 else ""
    return f"{name}: no usable row — all {report.rows_read} row(s) have errors: {first}{more}"


def _derive(
    values: dict[str, np.ndarray],
    text: dict[str, list],
    keep: np.ndarray,
    rows: list[int],
    report: LoadReport,
    c_l_rows: np.ndarray,
) -> pd.DataFrame:
    """The DataFrame of the valid rows with alpha_used, c_used, v, predictions and the ratio."""
    v = {name: arr[keep] for name, arr in values.items()}
    t = {name: [x for x, ok in zip(col, keep, strict=True) if ok] for name, col in text.items()}
    m = int(keep.sum())
    nan = np.full(m, np.nan)
    k = v["k"].astype(np.int64)

    def get(name: str) -> np.ndarray:
        return v.get(name, nan)

    alpha_used, alpha_source = nan.copy(), np.full(m, None, dtype=object)
    for name, recover in (
        ("alpha", None),
        ("mean_accepted_tokens", theory.alpha_from_mean_tokens),
        ("acceptance_rate", theory.alpha_from_acceptance_rate),
    ):
        idx = np.flatnonzero(np.isnan(alpha_used) & ~np.isnan(get(name)))
        if idx.size:
            alpha_used[idx] = get(name)[idx] if recover is None else recover(get(name)[idx], k[idx])
            alpha_source[idx] = name

    c_used, c_source = nan.copy(), np.full(m, None, dtype=object)
    c_given = ~np.isnan(get("c"))
    c_used[c_given] = get("c")[c_given]
    c_l_kept = c_l_rows[keep]
    c_source[c_given] = np.where(c_l_kept[c_given], "1 / c_L", "c")
    with np.errstate(all="ignore"):
        from_times = np.isnan(c_used) & np.isfinite(get("t_target_ms") / get("t_draft_ms"))
        c_used[from_times] = (get("t_target_ms") / get("t_draft_ms"))[from_times]
        c_source[from_times] = "t_target_ms / t_draft_ms"
        bad_c = ~(np.isfinite(c_used) & (c_used > 0))  # a ratio of extreme times can overflow
        c_used[bad_c], c_source[bad_c] = np.nan, None

        vv = get("v").copy()
        computed_v = np.isnan(vv) & np.isfinite(get("t_verify_ms") / get("t_target_ms"))
        vv[computed_v] = np.maximum(0.0, (get("t_verify_ms") / get("t_target_ms") - 1.0)[computed_v] / k[computed_v])
        vv[~np.isfinite(vv)] = np.nan
    if computed_v.any():
        v["v"] = vv
        n_v = int(computed_v.sum())
        report.conversions.append(f"v = max(0, (t_verify_ms / t_target_ms − 1) / K) for {n_v} row(s)")

    ok = ~np.isnan(alpha_used) & ~np.isnan(c_used)
    pred = nan.copy()
    pred_mc = nan.copy()
    with np.errstate(all="ignore"):
        if ok.any():
            pred[ok] = theory.speedup(alpha_used[ok], c_used[ok], k[ok])
        has_cost = ok & (~np.isnan(vv) | ~np.isnan(get("o")))
        if has_cost.any():
            pred_mc[has_cost] = theory.speedup(
                alpha_used[has_cost],
                c_used[has_cost],
                k[has_cost],
                np.nan_to_num(vv[has_cost]),
                np.nan_to_num(get("o")[has_cost]),
            )
        ratio = get("speedup") / pred
        ratio[~np.isfinite(ratio)] = np.nan

    data: dict[str, object] = {}
    for name in (*COLUMNS, *BENCH_COLUMNS):
        if name in DERIVED_COLUMNS:
            continue
        if name in t:
            data[name] = pd.array(t[name], dtype="boolean" if name == "greedy_exact" else "str")
        elif name in v:
            if name == "k":
                data[name] = k
            elif name in _INTEGER:
                data[name] = pd.array([None if np.isnan(x) else int(x) for x in v[name]], dtype="Int64")
            else:
                data[name] = v[name]
        elif name in COLUMNS:  # every canonical column is always there (empty when the file lacks it)
            data[name] = pd.array([None] * m, dtype="str") if name in _TEXT else nan.copy()
    data.update(
        {
            "alpha_used": alpha_used,
            "alpha_source": pd.array(list(alpha_source), dtype="str"),
            "c_used": c_used,
            "c_source": pd.array(list(c_source), dtype="str"),
            "predicted_speedup": pred,
            "predicted_speedup_measured_cost": pred_mc,
            "speedup_ratio": ratio,
        }
    )
    index = pd.Index([r for r, ok_ in zip(rows, keep, strict=True) if ok_], name="row", dtype="int64")
    return pd.DataFrame(data, index=index)


# --------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------


def _sniff_delimiter(text: str) -> str:
    """',', ';' or tab: the one that splits the header into the most fields and the rows consistently."""
    sample_lines = [ln for ln in text[:65536].splitlines() if ln.strip()][:50]
    if len(sample_lines) > 1 and len(text) > 65536:
        sample_lines = sample_lines[:-1]  # the last one may be cut
    sample = "\n".join(sample_lines)
    best, best_score = ",", (-1.0, 0)
    for delim in (",", ";", "\t"):
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


def _resolve_header(key: str, keys: set[str]) -> Alias | None:
    if key == "accept_rate" and keys & _SGLANG_MARKERS:
        return Alias(
            "accept rate", "system_efficiency", "SGLang (the file has SGLang columns)", "E[N] = value × (K + 1)"
        )
    return _ALIAS_INDEX.get(key)


def _map_header(header: list[str], report: LoadReport) -> dict[str, tuple[int, Alias, bool]]:
    """canonical/internal column -> (index in the row, alias, percent flag); fills report.mapped/ignored."""
    keys = [normalise_header(h) for h in header]
    keyset = {k for k, _ in keys}
    chosen: dict[str, tuple[int, Alias, bool]] = {}
    seen_raw: dict[str, int] = {}

    def show(raw: str, idx: int) -> str:
        raw = raw if raw.strip() else f"(empty header, column {idx + 1})"
        seen_raw[raw] = seen_raw.get(raw, 0) + 1
        return raw if seen_raw[raw] == 1 else f"{raw} [column {idx + 1}]"

    candidates: list[tuple[int, int, str, Alias, bool]] = []
    for idx, (raw, (key, pct)) in enumerate(zip(header, keys, strict=True)):
        shown = show(raw, idx)
        if not key:
            report.ignored[shown] = "empty header"
            continue
        if key in DERIVED_COLUMNS:
            report.ignored[shown] = "derived column, recomputed on load"
            if key == "speedup_ratio":
                report.warnings.append(
                    f"{raw!r} is read as specviz's derived speedup_ratio (measured ÷ predicted) "
                    f"and recomputed; name a measured speedup column 'speedup'"
                )
            continue
        alias = _resolve_header(key, keyset)
        if alias is None:
            report.ignored[shown] = "unknown column"
            continue
        rank = 1 if alias.conversion else 0
        candidates.append((rank, idx, shown, alias, pct))
    for _rank, idx, shown, alias, pct in sorted(candidates, key=lambda c: (c[0], c[1])):
        if alias.column in chosen:
            first = header[chosen[alias.column][0]]
            report.ignored[shown] = f"duplicate of {first!r} (both map to {alias.column}; the first is used)"
            continue
        chosen[alias.column] = (idx, alias, pct)
        target = {"c_l": "c", "system_efficiency": "mean_accepted_tokens"}.get(alias.column, alias.column)
        if header[idx] != target:
            report.mapped[shown] = target
    return chosen


def _read_csv(text: str, name: str, report: LoadReport, max_rows: int, k_given: bool) -> _Table:
    delim = _sniff_delimiter(text)
    report.delimiter = delim
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
            if len(records) >= max_rows:
                raise MeasurementError(
                    f"{name}: more than max_rows = {max_rows:,} data rows; split the file or raise the limit", report
                )
            records.append(record)
            rows.append(reader.line_num)
    except csv.Error as exc:
        raise MeasurementError(f"{name}: CSV line {reader.line_num}: {exc}", report) from None
    if header is None:
        raise MeasurementError(f"{name}: the file is empty", report)
    chosen = _map_header(header, report)
    _check_required(chosen, header, name, report, k_given)
    columns = {
        col: _Column(col, header[idx], [r[idx] if idx < len(r) else "" for r in records], alias.conversion, pct)
        for col, (idx, alias, pct) in chosen.items()
    }
    table = _Table(rows, columns)
    width = len(header)
    for i, r in enumerate(records):
        if len(r) > width and any(c.strip() for c in r[width:]):
            shown = delim.join(r)
            table.row_errors[i] = [
                RowError(rows[i], "(row)", shown, f"at most {width} fields (the header's count); this row has {len(r)}")
            ]
    if delim in ";\t":
        report.decimal_comma = _decimal_comma(table, report)
    return table


def _check_required(chosen: dict, header: list[str], name: str, report: LoadReport, k_given: bool) -> None:
    missing = []
    if "k" not in chosen and not k_given:
        missing.append(
            "k (draft length K; also read from: num_speculative_tokens, gamma, n_draft, draft_max, "
            "num_assistant_tokens, speculative_num_steps, …; or pass k=)"
        )
    speedup_only = "speedup" in chosen or {"tokens_per_s", "baseline_tokens_per_s"} <= set(chosen)
    if (
        not ({"alpha", "mean_accepted_tokens", "acceptance_rate", "system_efficiency"} & set(chosen))
        and not speedup_only
    ):
        missing.append(
            "one of alpha, mean_accepted_tokens (mean acceptance length, accept_length, tau, …), "
            "acceptance_rate (draft_acceptance_rate, accept %, …), or a measured speedup (speedup, "
            "or tokens_per_s with baseline_tokens_per_s)"
        )
    if missing:
        found = ", ".join(repr(h) for h in header[:40]) + (" …" if len(header) > 40 else "")
        raise MeasurementError(
            f"{name}: missing required column(s): {'; '.join(missing)}. Found columns: {found}", report
        )


def _decimal_comma(table: _Table, report: LoadReport) -> bool:
    """True if numeric cells use ',' as the decimal separator and none uses '.' (else ambiguous: off)."""
    comma = dot = 0
    for col in table.columns.values():
        if _column_kind(col.name) not in ("number", "positions"):
            continue
        for c in col.cells:
            s = c.strip() if isinstance(c, str) else ""
            if col.name == "per_position_acceptance":
                parts = re.split(r"[;\s]+", s.strip("[]() "))
            else:
                parts = [s]
            for p in parts:
                if _COMMA_NUM.fullmatch(p):
                    comma += 1
                elif _DOT_NUM.fullmatch(p):
                    dot += 1
    if comma and dot:
        report.warnings.append(
            f"numeric cells use both ',' ({comma}) and '.' ({dot}) as decimal separator; "
            f"cells with ',' are not read as numbers"
        )
        return False
    if comma:
        report.conversions.append(f"decimal comma: {comma} numeric cell(s) read with ',' as the decimal point")
        return True
    return False


# --------------------------------------------------------------------------------------
# Spec-Bench JSON lines
# --------------------------------------------------------------------------------------

_TEMP_IN_ID = re.compile(r"temp(?:erature)?[-_=]?([0-9]+(?:\.[0-9]+)?)", re.IGNORECASE)


def _number_list(x) -> list[float] | None:
    if not isinstance(x, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in x):
        return None
    try:
        out = [float(v) for v in x]
    except OverflowError:  # an int beyond float range
        return None
    return out if all(math.isfinite(v) for v in out) else None


def _parse_spec_bench(text: str, name: str, report: LoadReport, max_rows: int) -> _Table:
    """Spec-Bench answer file (``evaluation/eval.py``) → one row per ``model_id``.

    Each line is a JSON object ``{"question_id", "category", "model_id", "choices": [{"turns",
    "decoding_steps", "new_tokens", "wall_time", "accept_lengths"}], …}``. As Spec-Bench's own
    ``evaluation/speed.py`` does, only ``choices[0]`` is used; per model_id:

    * mean_accepted_tokens = mean of every ``accept_lengths`` entry (one per decoding step; it
      counts the bonus token, 1.00 for vanilla decoding) — Spec-Bench's "#Mean accepted tokens";
    * tokens_per_s = mean over questions of Σ new_tokens / Σ wall_time (wall_time in seconds);
    * temperature from a ``temp-0.0`` / ``temperature-0.0`` part of model_id, when present.

    A speedup needs the baseline run's file, so it is not set. Lines that are not answers are
    row errors (by line) and are left out of the pooled rows.
    """
    groups: dict[str, dict] = {}
    dropped: list[RowError] = []
    n_lines = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        n_lines += 1
        if n_lines > max_rows:
            raise MeasurementError(f"{name}: more than max_rows = {max_rows:,} JSON lines", report)
        problem = None
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            obj, problem = None, ("json", line, "one JSON object per line")
        if problem is None and not isinstance(obj, dict):
            problem = ("json", line, "a JSON object ({...}) per line")
        if problem is None:
            choices = obj.get("choices")
            if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                problem = ("choices", _short_json(choices), "a non-empty list of objects (Spec-Bench answer file)")
        if problem is None:
            ch = choices[0]
            acc, toks, wall = (_number_list(ch.get(f)) for f in ("accept_lengths", "new_tokens", "wall_time"))
            if acc is None or not acc or any(a < 0 for a in acc):
                problem = (
                    "choices[0].accept_lengths",
                    _short_json(ch.get("accept_lengths")),
                    "a non-empty list of finite numbers >= 0 (tokens per decoding step)",
                )
            elif toks is None or wall is None or not sum(wall) > 0 or sum(toks) < 0:
                problem = (
                    "choices[0].new_tokens / wall_time",
                    _short_json([ch.get("new_tokens"), ch.get("wall_time")]),
                    "lists of finite numbers >= 0, wall_time summing to > 0 s",
                )
        if problem is not None:
            dropped.append(RowError(lineno, problem[0], _cell_text(problem[1])[:200], problem[2]))
            continue
        model_id = obj.get("model_id")
        model_id = str(model_id) if isinstance(model_id, (str, int, float)) else ""
        g = groups.setdefault(model_id, {"row": lineno, "acc": [], "speeds": [], "questions": 0})
        g["acc"].extend(acc)
        g["speeds"].append(sum(toks) / sum(wall))
        g["questions"] += 1
    if n_lines == 0:
        raise MeasurementError(f"{name}: the file is empty", report)
    if not groups:
        report.rows_read, report.row_errors = n_lines, dropped
        raise MeasurementError(_no_usable_row(name, report), report)
    if dropped:
        report.warnings.append(f"{len(dropped)} JSON line(s) skipped (see row errors); the rows pool the others")
    labels, means, speeds, temps, notes, rows, weights = [], [], [], [], [], [], []
    for model_id, g in groups.items():
        labels.append(name if len(groups) == 1 or not model_id else f"{name}: {model_id}")
        with np.errstate(all="ignore"):
            means.append(float(np.mean(g["acc"])))
            speeds.append(float(np.mean(g["speeds"])))
        m = _TEMP_IN_ID.search(model_id)
        temps.append(m.group(1) if m else None)
        if m:
            report.conversions.append(f"temperature {m.group(1)} read from model_id {model_id!r}")
        notes.append(
            f"Spec-Bench model_id {model_id!r}: {g['questions']} question(s), {len(g['acc'])} decoding "
            f"steps (choices[0])"
        )
        rows.append(g["row"])
        weights.append(g["questions"])
    report.conversions.append(
        "Spec-Bench: mean_accepted_tokens = mean of accept_lengths over all steps (bonus "
        "counted); tokens_per_s = mean over questions of Σ new_tokens / Σ wall_time"
    )
    cols = {
        "label": _Column("label", "model_id", labels),
        "mean_accepted_tokens": _Column("mean_accepted_tokens", "accept_lengths", means),
        "tokens_per_s": _Column("tokens_per_s", "new_tokens / wall_time", speeds),
        "temperature": _Column("temperature", "model_id", temps),
        "method": _Column("method", "", ["Spec-Bench run"] * len(rows)),
        "notes": _Column("notes", "", notes),
    }
    return _Table(rows, cols, weights=weights, dropped=dropped, n_dropped=len(dropped))


def _short_json(x) -> str:
    try:
        s = json.dumps(x)
    except (TypeError, ValueError, RecursionError):
        s = repr(type(x))
    return s if len(s) <= 200 else s[:197] + "…"


# --------------------------------------------------------------------------------------
# vLLM V1 "SpecDecoding metrics" log lines
# --------------------------------------------------------------------------------------

_V_NUM = r"(?:[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|nan)"
_VLLM_FIELDS = {
    "mean": re.compile(r"Mean acceptance length:\s*(" + _V_NUM + ")", re.IGNORECASE),
    "accepted": re.compile(r"(?<![A-Za-z] )Accepted:\s*([0-9]+)\s*tokens", re.IGNORECASE),
    "drafted": re.compile(r"(?<![A-Za-z] )Drafted:\s*([0-9]+)\s*tokens", re.IGNORECASE),
    "positions": re.compile(
        r"Per-position acceptance rate:\s*(" + _V_NUM + r"(?:\s*,\s*" + _V_NUM + r")*)", re.IGNORECASE
    ),
    "rate": re.compile(r"Draft acceptance rate:\s*(" + _V_NUM + r")\s*%", re.IGNORECASE),
}


def _parse_vllm_log(text: str, name: str, report: LoadReport, max_rows: int, k: int) -> _Table:
    """vLLM V1 ``SpecDecoding metrics`` log lines → one row per line (one logging interval).

    Reads ``Mean acceptance length`` (= E[N], bonus counted), ``Accepted: A tokens`` and
    ``Drafted: D tokens`` (acceptance_rate = A / D; else ``Draft acceptance rate: x%``) and
    ``Per-position acceptance rate: p_1, …, p_K`` — vLLM's p_i is unconditional (drafts that
    accepted ≥ i tokens / drafts), stored as the conditional a_i = p_i / p_(i−1) that
    ``per_position_acceptance`` holds. vLLM does not print K, so the caller gives it; a line
    whose per-position list has another length, or whose mean length and A / D imply another
    K (E[N] = 1 + K·A/D), is a row error. Other lines are ignored.
    """
    rows, means, rates, positions, notes = [], [], [], [], []
    k_errors: dict[int, list[RowError]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if "specdecoding metrics" not in line.lower():
            continue
        if len(rows) >= max_rows:
            raise MeasurementError(f"{name}: more than max_rows = {max_rows:,} SpecDecoding lines", report)
        found = {key: rx.search(line) for key, rx in _VLLM_FIELDS.items()}
        mean = float(found["mean"].group(1)) if found["mean"] else None
        rate = None
        if found["accepted"] and found["drafted"]:
            acc, dr = int(found["accepted"].group(1)), int(found["drafted"].group(1))
            rate = acc / dr if dr > 0 else None
        elif found["rate"]:
            rate = f"{found['rate'].group(1)}%"
        pos = None
        k_problem = None
        if found["positions"]:
            p = [float(x) for x in re.split(r"\s*,\s*", found["positions"].group(1).strip())]
            if len(p) != k:
                k_problem = f"the K this line was logged with: it lists {len(p)} per-position rates"
            prev, cond = 1.0, []
            for x in p:
                cond.append(x / prev if prev > 0 and math.isfinite(x) else math.nan)
                prev = x
            pos = ";".join("nan" if math.isnan(a) else format(min(a, 1.0), ".6g") for a in cond)
        if isinstance(mean, float) and isinstance(rate, float) and rate > 0.02 and mean - 1 > 0.05:
            implied = (mean - 1.0) / rate
            if abs(implied - k) >= 0.5 and k_problem is None:
                k_problem = (
                    f"the K this line was logged with: mean length {mean:g} and accepted/drafted "
                    f"{rate:.4g} imply K ≈ {implied:.2f} (E[N] = 1 + K·accepted/drafted)"
                )
        if k_problem is not None:
            k_errors[len(rows)] = [RowError(lineno, "k", str(k), k_problem, "k (given)")]
        rows.append(lineno)
        means.append(mean)
        rates.append(rate)
        positions.append(pos)
        notes.append(f"vLLM SpecDecoding metrics, log line {lineno}")
    report.rows_read = len(rows)
    if not rows:
        raise MeasurementError(f"{name}: no 'SpecDecoding metrics' line found", report)
    report.conversions.append("vLLM per-position acceptance (unconditional p_i) → conditional a_i = p_i / p_(i−1)")
    cols = {
        "k": _Column("k", "k (given)", [k] * len(rows)),
        "mean_accepted_tokens": _Column("mean_accepted_tokens", "Mean acceptance length", means),
        "acceptance_rate": _Column("acceptance_rate", "Accepted / Drafted", rates),
        "per_position_acceptance": _Column("per_position_acceptance", "Per-position acceptance rate", positions),
        "notes": _Column("notes", "", notes),
    }
    return _Table(rows, cols, row_errors=k_errors)


# --------------------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------------------


def _check_positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1; got {value!r}")
    return int(value)


def load_measurements(
    data,
    name: str = "upload",
    *,
    format: str = "auto",
    k: int | None = None,
    max_bytes: int = 20 * 2**20,
    max_rows: int = 200_000,
    mean_tokens_without_bonus: bool = False,
) -> tuple[pd.DataFrame, LoadReport]:
    """Read measurements from any engine into the canonical schema, with a report of how.

    Parameters
    ----------
    data : bytes, str or os.PathLike (or a file object with ``read`` / ``getvalue``)
        The file's content (bytes), its text (a ``str`` is content, never a path), or a path.
    name : str
        Names the upload in messages and is the ``label`` of rows that have none.
    format : {"auto", "csv", "spec_bench", "vllm_log"}
        "auto" reads vLLM log text if a line holds ``SpecDecoding metrics``, Spec-Bench JSON
        lines if the first non-blank line starts with '{', else CSV.
    k : int, optional
        Draft length K for formats that do not state it (vLLM logs, Spec-Bench: required there)
        and for a CSV without a K column (a K column in the file wins).
    max_bytes, max_rows : int
        Size caps (default 20 MiB, 200,000 rows); a larger file is refused.
    mean_tokens_without_bonus : bool
        Declares that the file's mean acceptance length excludes the bonus token (= E[N] − 1);
        1 is added. Never guessed.

    Returns
    -------
    (DataFrame, LoadReport)
        One row per valid input row, indexed by the row number in the file (``row``): every
        column of :data:`COLUMNS` (empty where the file has none), the :data:`BENCH_COLUMNS`
        present in the file (``v`` also when derived), and :data:`DERIVED_COLUMNS`.

    Raises
    ------
    ValueError (:class:`MeasurementError`)
        Binary, empty, over the caps, missing required columns, no usable row, bad arguments.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty str; got {name!r}")
    fmt = _FORMATS.get(format) if isinstance(format, str) else None
    if fmt is None:
        raise ValueError(f"format must be one of {sorted(set(_FORMATS))}; got {format!r}")
    max_bytes = _check_positive_int(max_bytes, "max_bytes")
    max_rows = _check_positive_int(max_rows, "max_rows")
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer, float)) or not float(k).is_integer():
            raise ValueError(f"k must be an integer in [1, {theory.K_LIMIT}]; got {k!r}")
        k = int(theory.check_k(k))
    if not isinstance(mean_tokens_without_bonus, (bool, np.bool_)):  # ValueError, not TypeError: the contract
        bad_flag = mean_tokens_without_bonus
        raise ValueError(f"mean_tokens_without_bonus must be True or False; got {bad_flag!r}")

    report = LoadReport(name=name)
    raw = _read_input(data, name, max_bytes)
    if isinstance(raw, str):
        size = len(raw.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise MeasurementError(_too_big(name, size, max_bytes), report)
        # lone surrogates (only possible in a str) cannot be stored anywhere; make them visible
        text = raw.encode("utf-8", "surrogatepass").decode("utf-8", "replace").lstrip("\ufeff")
        _check_text(text, name)
        report.encoding = "text"
    else:
        if len(raw) > max_bytes:
            raise MeasurementError(_too_big(name, len(raw), max_bytes), report)
        if not raw.strip():
            raise MeasurementError(f"{name}: the file is empty", report)
        text, report.encoding = _decode(raw, name)
    if not text.strip():
        raise MeasurementError(f"{name}: the file is empty", report)

    if fmt == "auto":
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if "specdecoding metrics" in text.lower():
            fmt = "vllm_log"
        elif first.startswith("{"):
            fmt = "spec_bench"
        else:
            fmt = "csv"
    report.format = fmt
    if fmt in ("vllm_log", "spec_bench") and k is None:
        what = "vLLM log lines" if fmt == "vllm_log" else "Spec-Bench JSON lines"
        raise MeasurementError(
            f"{name}: k (the draft length K) is required for {what}, which do not state it; "
            f"got k=None. Pass k=<integer >= 1>",
            report,
        )
    if fmt == "vllm_log":
        table = _parse_vllm_log(text, name, report, max_rows, k)
    elif fmt == "spec_bench":
        table = _parse_spec_bench(text, name, report, max_rows)
    else:
        table = _read_csv(text, name, report, max_rows, k_given=k is not None)
        if k is not None and "k" in table.columns:
            report.warnings.append(
                f"k = {k} was given but the file has a K column ({table.columns['k'].header!r}); "
                f"the file's values are used"
            )
    df = _build(table, report, name, bool(mean_tokens_without_bonus), k)
    return df, report


# --------------------------------------------------------------------------------------
# template and samples
# --------------------------------------------------------------------------------------

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "data" / "samples"

#: Sample measurement files (in data/samples/) a new user can load in one click: file -> what it is.
SAMPLES: dict[str, str] = {
    "specviz_bench_bundled_cpu.csv": "our own `python -m specviz bench` output: the bundled pair on a 2-core CPU",
    "published_leviathan2023.csv": "published figures: Leviathan et al. 2023 (T5-XXL), not our measurements",
    "published_chen2023.csv": "published figures: Chen et al. 2023 (Chinchilla 70B; speedups only), "
    "not our measurements",
    "published_spec_bench.csv": "published figures: Spec-Bench leaderboard rows, not our measurements",
}


def available_samples() -> dict[str, str]:
    """The entries of :data:`SAMPLES` whose file is present."""
    return {name: what for name, what in SAMPLES.items() if (SAMPLES_DIR / name).is_file()}


def template_csv() -> str:
    """A CSV template: every canonical column, one illustrative row (label says it is not a measurement)."""
    example = {
        "label": "example — replace with your run",
        "k": "4",
        "alpha": "",
        "mean_accepted_tokens": "2.9",
        "acceptance_rate": "",
        "c": "",
        "t_target_ms": "22.0",
        "t_draft_ms": "1.1",
        "t_verify_ms": "24.5",
        "speedup": "2.1",
        "tokens_per_s": "",
        "baseline_tokens_per_s": "",
        "temperature": "0",
        "batch_size": "1",
        "target_model": "my-target",
        "draft_model": "my-draft",
        "hardware": "my GPU",
        "method": "draft model",
        "notes": "illustrative values, not a measurement",
    }
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerow([example.get(c, "") for c in COLUMNS])
    return buf.getvalue()

"""Headers serving stacks and papers write, the canonical column each becomes, and how (docs/design.md §6).

Headers match on :func:`normalise_header` (case, spaces, '#', '%', bracketed units, punctuation ignored);
an :class:`Alias` whose values need converting names its :class:`Conversion` and the text the report shows.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Phrase
from specviz.data.measurements.schema import BENCH_COLUMNS, COLUMNS, output_column


class Conversion(StrEnum):
    """How a file's value becomes the canonical one; the member's value is its text in reports."""

    NONE = ""  #: the value is already canonical
    K_MINUS_ONE = "K = value − 1 (chains verify K drafts + 1 root token)"  #: SGLang counts the root token
    ADD_BONUS = "E[N] = value + 1 (bonus token added)"  #: a mean length without the bonus token
    TIMES_K_PLUS_ONE = "E[N] = value × (K + 1)"  #: E[N] / (K + 1): vLLM V0 system efficiency, SGLang accept rate
    INVERSE_C_L = "c = 1 / c_L"  #: Leviathan et al.'s c_L = T_draft / T_target
    S_TO_MS = "ms = s × 1000"  #: a time in seconds
    US_TO_MS = "ms = µs / 1000"  #: a time in microseconds

    @property
    def deferred(self) -> bool:
        """Applied after the checks, and only where the canonical column is empty (c_L, E[N] / (K + 1))."""
        return self in (Conversion.INVERSE_C_L, Conversion.TIMES_K_PLUS_ONE)

    @property
    def file_unit(self) -> str:
        """The unit of the file's time column ("s", "µs"), or "" for the other conversions."""
        return {Conversion.S_TO_MS: "s", Conversion.US_TO_MS: "µs"}.get(self, "")

    @property
    def phrase(self) -> str:
        """The member's text (its value) as a :class:`~specviz.base.i18n.Phrase`: a page shows it in its language."""
        key = _PHRASES.get(self)
        return Phrase(key) if key else str(self)

    def apply(self, values: np.ndarray) -> np.ndarray:
        """The canonical values of a column read in the file's terms (deferred ones unchanged)."""
        with np.errstate(all="ignore"):
            return _APPLY.get(self, lambda a: a)(values)


#: The msgid of each conversion's text (the English text is the member's value).
_PHRASES: dict[Conversion, str] = {
    Conversion.K_MINUS_ONE: N_("K = value − 1 (chains verify K drafts + 1 root token)"),
    Conversion.ADD_BONUS: N_("E[N] = value + 1 (bonus token added)"),
    Conversion.TIMES_K_PLUS_ONE: N_("E[N] = value × (K + 1)"),
    Conversion.INVERSE_C_L: N_("c = 1 / c_L"),
    Conversion.S_TO_MS: N_("ms = s × 1000"),
    Conversion.US_TO_MS: N_("ms = µs / 1000"),
}

_APPLY: dict[Conversion, Callable[[np.ndarray], np.ndarray]] = {
    Conversion.K_MINUS_ONE: lambda a: a - 1.0,
    Conversion.ADD_BONUS: lambda a: a + 1.0,
    Conversion.S_TO_MS: lambda a: a * 1000.0,
    Conversion.US_TO_MS: lambda a: a / 1000.0,
}


@dataclass(frozen=True)
class Alias:
    """A header some engine or paper writes, and the canonical column it becomes."""

    header: str  #: the header as the engine writes it (matched after :func:`normalise_header`)
    column: str  #: canonical column (or the internal ``c_l`` / ``system_efficiency``)
    source: str  #: who writes it
    conversion: Conversion = Conversion.NONE  #: how the value becomes the canonical one


_K1, _BONUS, _TIMES_K1 = Conversion.K_MINUS_ONE, Conversion.ADD_BONUS, Conversion.TIMES_K_PLUS_ONE
_INV, _S, _US = Conversion.INVERSE_C_L, Conversion.S_TO_MS, Conversion.US_TO_MS

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
    Alias("speculative_num_draft_tokens", "k", "SGLang", _K1),
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
    Alias("mean_tokens_no_bonus", "mean_accepted_tokens", "declared by name", _BONUS),
    Alias("mean_accepted_drafts", "mean_accepted_tokens", "declared by name", _BONUS),
    Alias("accepted_drafts_per_round", "mean_accepted_tokens", "declared by name", _BONUS),
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
    Alias("system_efficiency", "system_efficiency", "vLLM V0", _TIMES_K1),
    Alias("sglang_accept_rate", "system_efficiency", "SGLang", _TIMES_K1),
    # c and c_L
    Alias("speed_ratio", "c", "generic"),
    Alias("target_draft_speed_ratio", "c", "generic"),
    Alias("c_L", "c_l", "Leviathan et al.", _INV),
    Alias("c_leviathan", "c_l", "Leviathan et al.", _INV),
    Alias("cost_coefficient", "c_l", "Leviathan et al.", _INV),
    Alias("draft-to-target cost ratio", "c_l", "Leviathan et al.", _INV),
    Alias("draft_target_cost_ratio", "c_l", "generic", _INV),
    # times
    Alias("t_target", "t_target_ms", "generic (ms)"),
    Alias("target_ms", "t_target_ms", "generic"),
    Alias("target_step_ms", "t_target_ms", "generic"),
    Alias("t_p_ms", "t_target_ms", "Leviathan et al. (M_p)"),
    Alias("t_target_s", "t_target_ms", "generic", _S),
    Alias("t_target_us", "t_target_ms", "generic", _US),
    Alias("t_draft", "t_draft_ms", "generic (ms)"),
    Alias("draft_ms", "t_draft_ms", "generic"),
    Alias("draft_step_ms", "t_draft_ms", "generic"),
    Alias("t_q_ms", "t_draft_ms", "Leviathan et al. (M_q)"),
    Alias("t_draft_s", "t_draft_ms", "generic", _S),
    Alias("t_draft_us", "t_draft_ms", "generic", _US),
    Alias("t_verify", "t_verify_ms", "generic (ms)"),
    Alias("verify_ms", "t_verify_ms", "generic"),
    Alias("verify_step_ms", "t_verify_ms", "generic"),
    Alias("t_verify_s", "t_verify_ms", "generic", _S),
    Alias("t_verify_us", "t_verify_ms", "generic", _US),
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
    Alias("context", "context_length", "generic"),
    Alias("ctx", "context_length", "generic"),
    Alias("context_len", "context_length", "generic"),
    Alias("seq_len", "context_length", "generic"),
    Alias("sequence_length", "context_length", "generic"),
    Alias("dataset", "domain", "generic"),
    Alias("dataset_name", "domain", "vLLM bench (--dataset-name)"),
    Alias("task", "domain", "generic"),
    Alias("category", "domain", "Spec-Bench / MT-Bench / SPEED-Bench"),
    Alias("subtask", "domain", "Spec-Bench"),
    Alias("num_drafts", "rounds", "vLLM (spec_decode_num_drafts)"),
    Alias("spec_decode_num_drafts", "rounds", "vLLM bench serve"),
    Alias("total_spec_decode_steps", "rounds", "AIPerf"),
    Alias("decoding_steps", "rounds", "Spec-Bench"),
    Alias("verification_rounds", "rounds", "generic"),
    Alias("num_rounds", "rounds", "generic"),
    Alias("note", "notes", "generic"),
    Alias("comment", "notes", "generic"),
    Alias("comments", "notes", "generic"),
    Alias("name", "label", "generic"),
    Alias("run", "label", "generic"),
    Alias("run_name", "label", "generic"),
    Alias("run_label", "label", "generic"),
)

#: Headers whose presence means an ``accept rate`` column is SGLang's E[N] / (K + 1), not llama.cpp's r.
SGLANG_MARKERS = frozenset(
    {"speculative_num_draft_tokens", "speculative_num_steps", "speculative_eagle_topk", "speculative_algorithm"}
)
#: What ``accept rate`` means in a file with SGLang columns.
SGLANG_ACCEPT_RATE = Alias("accept rate", "system_efficiency", "SGLang (the file has SGLang columns)", _TIMES_K1)

_GREEK = {"α": "alpha", "γ": "gamma", "τ": "tau", "μ": "u"}
_PERCENT_WORDS = re.compile(r"(?:^|_)(?:in_)?(?:pct|percent|percentage)(?=_|$)")


def normalise_header(header: str) -> tuple[str, bool]:
    """(normalised key, percent flag) of a header: lower case, α γ τ spelled out, accents dropped, runs of
    non-alphanumerics → '_', 'pct' / 'percent' / '%' set the flag. ``"Draft acceptance rate (%)"`` →
    ``("draft_acceptance_rate", True)``."""
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
    """Normalised key -> Alias; canonical names map to themselves; two columns for one key is a bug."""
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


def resolve_header(key: str, keys: set[str]) -> Alias | None:
    """The alias of normalised header ``key`` in a file whose headers normalise to ``keys`` (None: unknown)."""
    if key == "accept_rate" and keys & SGLANG_MARKERS:
        return SGLANG_ACCEPT_RATE
    return _ALIAS_INDEX.get(key)


def alias_table() -> pd.DataFrame:
    """Every known header alias: header, normalised key, canonical column, conversion, source."""
    rows = [
        {
            "header": a.header,
            "normalised": normalise_header(a.header)[0],
            "column": output_column(a.column),
            "conversion": str(a.conversion),
            "source": a.source,
        }
        for a in ALIASES
    ]
    return pd.DataFrame(rows)

"""The canonical measurement columns: names, units, kinds and allowed ranges (docs/design.md §3).

Names are lower case with the unit in the name (``t_target_ms``). :data:`COLUMNS` is what
every loaded frame holds, :data:`BENCH_COLUMNS` what ``python -m specviz bench`` adds, and
:data:`DERIVED_COLUMNS` what :func:`specviz.data.measurements.load_measurements` computes. Each
column has one *kind* (:func:`column_kind`), which decides how its cells are parsed and checked.
"""

from __future__ import annotations

from specviz.core import theory

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
    "predicted_speedup_basic": "specviz.core.theory.speedup(α, c, K)",
    "predicted_speedup_measured_cost": "specviz.core.theory.speedup(α, c, K, v, o)",
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
    "tree": "draft tree of a tree row, e.g. optimal:16,6 (16 drafts, depth 6); K is then its drafts",
    "tree_depth": "draft forwards per round of a tree row: its depth D, integer in [1, K]",
    "tree_p": "p_1;p_2;… positional acceptance by sibling rank, measured from the row's rounds",
    "predicted_tokens_per_round": "tree rows: F(T) = Σ over nodes of Π p along the path, at tree_p, in [1, K + 1]",
}

#: Columns computed on load (an input column of the same name is ignored and recomputed).
DERIVED_COLUMNS: dict[str, str] = {
    "alpha_used": "α used for predictions: alpha if given, else recovered from mean_accepted_tokens, "
    "else from acceptance_rate (specviz.core.theory); empty for speedup-only rows",
    "alpha_source": "which column alpha_used came from",
    "c_used": "c used for predictions: c if given (or 1 / c_L), else t_target_ms / t_draft_ms",
    "c_source": "which column(s) c_used came from",
    "predicted_speedup": "basic model: specviz.core.theory.speedup(alpha_used, c_used, k)",
    "predicted_speedup_measured_cost": "specviz.core.theory.speedup(alpha_used, c_used, k, v, o) "
    "where v or o is known (the other taken as 0)",
    "speedup_ratio": "measured / predicted: speedup / predicted_speedup",
}

#: Unit of each numeric column ("ratio": dimensionless; temperature and text have none).
UNITS: dict[str, str] = {
    **dict.fromkeys(("t_target_ms", "t_draft_ms", "t_verify_ms"), "ms"),
    **dict.fromkeys(("tokens_per_s", "baseline_tokens_per_s"), "tokens/s"),
    **dict.fromkeys(("alpha", "acceptance_rate", "alpha_overlap", "alpha_used"), "probability"),
    **dict.fromkeys(("speedup", "speedup_min", "speedup_max", "predicted_speedup_basic"), "×"),
    **dict.fromkeys(("predicted_speedup", "predicted_speedup_measured_cost"), "×"),
    **dict.fromkeys(("c", "c_used", "speedup_ratio", "speedup_vs_predicted"), "ratio"),
    "k": "draft tokens",
    "mean_accepted_tokens": "tokens per round",
    "predicted_tokens_per_round": "tokens per round",
    "tree_depth": "draft forwards per round",
    "batch_size": "sequences",
    "v": "target steps per drafted token",
    "o": "target steps per round",
    "per_position_acceptance": "probabilities",
    "runs": "runs",
    "new_tokens": "tokens",
}

#: Columns holding free text.
TEXT_COLUMNS: tuple[str, ...] = (
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
    "tree",
    "tree_p",
)
#: Rates in [0, 1]; a column in percent is detected and divided by 100.
UNIT_COLUMNS: tuple[str, ...] = ("alpha", "acceptance_rate", "alpha_overlap")
#: Finite numbers > 0.
POSITIVE_COLUMNS: tuple[str, ...] = (
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
    "predicted_tokens_per_round",
)
#: Finite numbers >= 0.
NONNEGATIVE_COLUMNS: tuple[str, ...] = ("temperature", "v", "o")
#: Integer counts >= 1 other than k.
INTEGER_COLUMNS: tuple[str, ...] = ("batch_size", "runs", "new_tokens", "tree_depth")
#: Columns whose cells may end in "x" / "×".
SPEEDUP_LIKE: tuple[str, ...] = ("speedup", "speedup_min", "speedup_max", "predicted_speedup_basic")
#: Internal columns of converted aliases (not in the output): Leviathan's c_L and SGLang's accept rate.
INTERNAL_COLUMNS: dict[str, str] = {"c_l": "c", "system_efficiency": "mean_accepted_tokens"}
#: Columns whose cells may end in '%' (rates; percent cells are divided by 100).
PERCENT_COLUMNS: tuple[str, ...] = (*UNIT_COLUMNS, "system_efficiency")
#: The acceptance measures; a row needs one of them (or a speedup).
ACCEPTANCE_COLUMNS: tuple[str, ...] = ("alpha", "mean_accepted_tokens", "acceptance_rate")

INT_MAX = 2**53  #: largest integer count accepted (exact in float64 and int64)

#: Allowed values of each column, as messages state them.
ALLOWED: dict[str, str] = {
    **dict.fromkeys(UNIT_COLUMNS, "[0, 1]"),
    **dict.fromkeys(POSITIVE_COLUMNS, "a finite number > 0"),
    **dict.fromkeys(NONNEGATIVE_COLUMNS, "a finite number >= 0"),
    **dict.fromkeys(INTEGER_COLUMNS, f"an integer in [1, {INT_MAX}]"),
    "k": f"an integer in [1, {theory.K_LIMIT}]",
    "mean_accepted_tokens": "[1, K + 1]",
    "c_l": "a finite number > 0 (c_L = T_draft / T_target)",
    "system_efficiency": "[1 / (K + 1), 1]",
    "per_position_acceptance": "K numbers in [0, 1] (or nan) separated by ';'",
    "greedy_exact": "true / false (or empty)",
    "tree_depth": "an integer in [1, K]",
    "predicted_tokens_per_round": "[1, K + 1]",
}


def column_kind(name: str) -> str:
    """How a column's cells are read: ``"text"``, ``"positions"`` (a ';' list), ``"bool"`` or ``"number"``."""
    if name in TEXT_COLUMNS:
        return "text"
    if name == "per_position_acceptance":
        return "positions"
    if name == "greedy_exact":
        return "bool"
    return "number"


def output_column(name: str) -> str:
    """The canonical column an internal one feeds (``c_l`` → ``c``); other names unchanged."""
    return INTERNAL_COLUMNS.get(name, name)


def suffixes(name: str) -> str:
    """Unit suffixes a cell of ``name`` may carry: '%' for rates, 'x' for speedups."""
    return ("%" if name in PERCENT_COLUMNS else "") + ("x" if name in SPEEDUP_LIKE else "")

"""The measurement CSV schema (DESIGN.md §3), shared by the bench CLI, the live page and uploads.

Canonical lower-case column names with units in the name. ``label`` and ``k`` are
required, plus at least one of ``alpha``, ``mean_accepted_tokens`` and
``acceptance_rate``. Everything else is optional.
"""

from __future__ import annotations

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

"""AIPerf's ``profile_export_aiperf.json`` (``aiperf profile``, schema 1.4, aiperf 0.13.0) → one row per run.

One JSON object: per-request metrics ``{"unit", "avg", "p1" … "p99", "min", "max", "std", "count",
"sum"}``, run-wide scalars ``{"unit", "avg"}`` (aiperf ``common/models/export_models.py``,
``exporters/metrics_json_exporter.py``). With vLLM ``--per-request-spec-decode-metrics``, summed:

* ``total_spec_decode_steps`` R, ``total_draft_tokens`` D, ``total_accepted_draft_tokens`` A: E[N] =
  1 + A / R, r = A / D (``spec_decode_overall_draft_acceptance_rate`` is r in percent, used without the
  counts), K = D / R where every step drafted alike, else the caller's k;
* ``pooled_spec_decode_acceptance_histogram`` ``{"j": steps}``: p_i = (steps accepting ≥ i) / R → a_i.

Serving: ``output_token_throughput`` → tokens_per_s; mean ISL / OSL → prompt_tokens, output_tokens;
p50/p90/p99 ``time_to_first_token`` → TTFT, ``inter_token_latency`` ((latency − TTFT) / (OSL − 1)) →
TPOT; ``--concurrency`` and ``--model`` from ``run_info.cli_command``.
"""

from __future__ import annotations

import re

from specviz.base.i18n import N_, Phrase
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import LogRow, json_count, json_number
from specviz.data.measurements.report import RowError
from specviz.data.measurements.table import RawColumn, RawTable

_HEADERS = {
    "k": "total_draft_tokens / total_spec_decode_steps",
    "mean_accepted_tokens": "1 + total_accepted_draft_tokens / total_spec_decode_steps",
    "acceptance_rate": "total_accepted_draft_tokens / total_draft_tokens",
    "per_position_acceptance": "pooled_spec_decode_acceptance_histogram",
    "tokens_per_s": "output_token_throughput",
}
#: serving column → (AIPerf metric, statistic)
_SERVING = {
    "prompt_tokens": ("input_sequence_length", "avg"),
    "output_tokens": ("output_sequence_length", "avg"),
    **{f"ttft_{q}_ms": ("time_to_first_token", q) for q in ("p50", "p90", "p99")},
    **{f"tpot_{q}_ms": ("inter_token_latency", q) for q in ("p50", "p90", "p99")},
}
_FLAG = {"concurrency": re.compile(r"--concurrency[ =]([0-9]+)"), "target_model": re.compile(r"--model[ =](\S+)")}


def detect(text: str) -> bool:
    """A JSON object with ``aiperf_version`` and ``schema_version`` near its start."""
    head = text.lstrip()[:4000]
    return head.startswith("{") and '"aiperf_version"' in head and '"schema_version"' in head


def read(text: str, ctx: ReadContext) -> RawTable:
    """The run as one row: E[N], r, K and per-position rates from the pooled counts; serving figures."""
    obj = log_lines.json_document(text, ctx)
    row, issues = parse_run(obj)
    table = log_lines.log_table(log_lines.collect([row], ctx, Phrase("AIPerf run")), ctx, _HEADERS)
    for field, value, allowed in issues:
        table.row_errors.setdefault(0, []).append(RowError(row.line, field, value, allowed, field))
    for name, value in serving_figures(obj).items():
        if value is not None:
            header = " ".join(_SERVING.get(name, ("run_info.cli_command",)))
            table.columns[name] = RawColumn(name, header, [value], guess_percent=False)
    ctx.report.conversions.append(
        Phrase(
            "AIPerf: E[N] = 1 + accepted / steps and r = accepted / draft tokens from the run's totals (else the overall rate, a percent); inter_token_latency is TPOT"
        )
    )
    return table


def _total(obj: dict, key: str) -> int | None:
    value = obj.get(key)
    return json_count(value, "avg") if isinstance(value, dict) else None


def parse_run(obj: dict) -> tuple[LogRow, list[tuple[str, str, str]]]:
    """E[N], r, K, unconditional p_i and tokens/s of a run, and its fields that are not what AIPerf writes."""
    row = LogRow(1, f"AIPerf {obj.get('aiperf_version', '?')} run {obj.get('benchmark_id', '?')}")
    issues: list[tuple[str, str, str]] = []
    throughput = obj.get("output_token_throughput")
    row.tokens_per_s = json_number(throughput, "avg") if isinstance(throughput, dict) else None
    steps, drafted, accepted = (
        _total(obj, f"total_{k}") for k in ("spec_decode_steps", "draft_tokens", "accepted_draft_tokens")
    )
    if not steps or not drafted or accepted is None:
        overall = obj.get("spec_decode_overall_draft_acceptance_rate")
        percent = json_number(overall, "avg") if isinstance(overall, dict) else None
        if percent is None or not 0 <= percent <= 100:
            absent = Phrase("the run's speculative totals (vLLM with --per-request-spec-decode-metrics writes them)")
            issues.append(("total_spec_decode_steps", str(obj.get("total_spec_decode_steps", "")), absent))
        else:
            row.rate = percent / 100.0  # AIPerf writes it in percent
        return row, issues
    row.mean, row.rate, row.rounds = 1.0 + accepted / steps, accepted / drafted, steps
    row.k = drafted // steps if drafted % steps == 0 else None
    row.positions = _positions(obj.get("pooled_spec_decode_acceptance_histogram"), steps, issues)
    if row.positions is not None and row.k is not None and len(row.positions) != row.k:
        row.problems.append(log_lines.positions_length_problem(row.positions, row.k, "acceptance histogram"))
    return row, issues


def _positions(histogram, steps: int, issues: list) -> list[float] | None:
    """p_i = (steps accepting ≥ i drafts) / R from ``{"j": steps}``, i = 1 … max j; None where absent or bad."""
    if histogram is None:
        return None
    try:
        counts = {int(j): int(n) for j, n in histogram.items() if float(n) == int(n) and int(n) >= 0}
    except (AttributeError, TypeError, ValueError):
        counts = {}
    if not counts or min(counts) < 0 or len(counts) != len(histogram) or sum(counts.values()) != steps:
        allowed = Phrase('steps per number of accepted drafts, {"0": n, …}, summing to total_spec_decode_steps')
        issues.append(("pooled_spec_decode_acceptance_histogram", f"{histogram!r:.80}", allowed))
        return None
    return [sum(n for j, n in counts.items() if j >= i) / steps for i in range(1, max(counts) + 1)]


def serving_figures(obj: dict) -> dict[str, float | int | str | None]:
    """The serving columns the run has (None where it lacks them)."""
    out: dict[str, float | int | str | None] = {}
    for name, (metric, stat) in _SERVING.items():
        value = obj.get(metric)
        out[name] = json_number(value, stat) if isinstance(value, dict) else None
    run_info = obj.get("run_info")
    command = run_info.get("cli_command") if isinstance(run_info, dict) else None
    for name, flag in _FLAG.items():
        found = flag.search(command) if isinstance(command, str) else None
        out[name] = (int(found.group(1)) if name == "concurrency" else found.group(1)) if found else None
    return out


READER = Reader(
    name="aiperf",
    title=Phrase(N_("AIPerf profile exports")),
    detect=detect,
    rule="a JSON object whose first keys include aiperf_version and schema_version (profile_export_aiperf.json)",
    read=read,
    spellings=("aiperf", "aiperf_profile", "profile_export_aiperf"),
    needs_k=False,
)

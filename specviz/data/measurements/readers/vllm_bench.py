"""``vllm bench serve --save-result`` result files → one row per run (per JSON object).

One JSON object (``--append-result``: one per line), written by ``vllm/benchmarks/serve.py`` (vLLM 0.34.0:
``benchmark()``, ``main_async()``). With speculative decoding on, it diffs the server's
``vllm:spec_decode_*_total`` counters (``fetch_spec_decode_metrics``) and writes:

* ``spec_decode_acceptance_length`` = 1 + accepted / drafts: E[N] (bonus counted);
* ``spec_decode_acceptance_rate`` = 100 · accepted / draft tokens: r **in percent**;
* ``spec_decode_num_drafts`` R, ``spec_decode_draft_tokens`` D, ``spec_decode_accepted_tokens`` A;
* ``spec_decode_per_position_acceptance_rates``: unconditional p_i, K of them (stored as conditional a_i).

K = that list's length, else D / R where every round drafts alike, else the caller's k; r = A / D where
given. Serving columns: ``output_throughput`` (tokens/s), ``max_concurrency``, ``request_rate`` (``"inf"``
leaves it empty), mean prompt and output tokens, ``median``/``p90``/``p99`` TTFT, TPOT, ITL (ms). The
counters are server-wide (said in the notes); a run without ``spec_decode_*`` keys is a row error.
"""

from __future__ import annotations

from specviz.base.i18n import N_, Phrase
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import LogRow
from specviz.data.measurements.report import RowError
from specviz.data.measurements.table import RawColumn, RawTable

#: keys only a ``vllm bench serve`` result has together (detection needs all of them in the first object)
SIGNATURE = ("output_throughput", "request_throughput", "model_id")
_HEADERS = {
    "k": "len(spec_decode_per_position_acceptance_rates)",
    "mean_accepted_tokens": "spec_decode_acceptance_length",
    "acceptance_rate": "spec_decode_accepted_tokens / spec_decode_draft_tokens",
    "per_position_acceptance": "spec_decode_per_position_acceptance_rates",
    "tokens_per_s": "output_throughput",
}
_QUANTILES = {"p50": "median", "p90": "p90", "p99": "p99"}
#: the serving columns, in table order: canonical name → what the result calls it
SERVING_HEADERS = {
    "concurrency": "max_concurrency",
    "request_rate": "request_rate",
    "prompt_tokens": "total_input_tokens / completed",
    "output_tokens": "total_output_tokens / completed",
    "target_model": "model_id",
    **{f"{m}_{q}_ms": f"{prefix}_{m}_ms" for m in ("ttft", "tpot", "itl") for q, prefix in _QUANTILES.items()},
}


def detect(text: str) -> bool:
    """The first non-blank line is a JSON object with every key of :data:`SIGNATURE`."""
    if not text.lstrip().startswith("{") or not all(f'"{key}"' in text[:200_000] for key in SIGNATURE):
        return False
    obj = log_lines.first_json_object(text)
    return obj is not None and all(key in obj for key in SIGNATURE)


def read(text: str, ctx: ReadContext) -> RawTable:
    """Every result object of ``text`` as a row; serving figures in the serving columns."""
    parsed = list(_results(text))
    rows = log_lines.collect((row for row, _, _ in parsed), ctx, Phrase("'vllm bench serve' result"))
    table = log_lines.log_table(rows, ctx, _HEADERS)
    for i, (row, _, issues) in enumerate(parsed):  # a field that is not what the format writes: named
        for field, value, allowed in issues:
            table.row_errors.setdefault(i, []).append(RowError(row.line, field, value, allowed, field))
    ctx.report.conversions.append(
        Phrase(
            "vllm bench serve: r = spec_decode_accepted_tokens / spec_decode_draft_tokens (else spec_decode_acceptance_rate, a percent); K = the number of per-position rates (else draft tokens / drafts)"
        )
    )
    for name, header in SERVING_HEADERS.items():
        values = [serving.get(name) for _, serving, _ in parsed]
        if any(v is not None for v in values):
            table.columns[name] = RawColumn(name, header, values, guess_percent=False)
    return table


def _results(text: str):
    """(row, serving figures) for every non-blank line: a result, or a row error saying why it is not one."""
    for lineno, obj, issue in log_lines.json_lines(text, Phrase("a vllm bench serve result")):
        if issue:
            yield LogRow(lineno, f"vllm bench serve result, line {lineno}"), {}, [issue]
        else:
            row, issues = parse_result(obj, lineno)
            yield row, serving_figures(obj), issues


def parse_result(obj: dict, lineno: int = 1) -> tuple[LogRow, list[tuple[str, str, str]]]:
    """One result as a row (E[N], r, p_i, K, tokens/s) and its malformed fields as (field, value, allowed)."""
    issues: list[tuple[str, str, str]] = []
    backend = obj.get("backend") if isinstance(obj.get("backend"), str) else "?"
    row = LogRow(
        lineno,
        f"vllm bench serve result ({backend}, {obj.get('num_prompts', '?')} prompts, {obj.get('date', '?')}), "
        f"line {lineno}; spec-decode counters are server-wide deltas over the run",
    )
    row.tokens_per_s = log_lines.json_number(obj, "output_throughput")
    row.domain = _dataset(obj)
    if not any(key.startswith("spec_decode_") for key in obj):
        absent = Phrase(
            "the run's speculative-decoding figures (absent: the server did not speculate, or exposed no spec-decode counters)"
        )
        return row, [("spec_decode_*", "", absent)]
    _acceptance(obj, row, issues)
    problem = log_lines.k_mismatch(row.mean, row.rate, row.k)
    row.problems += [problem] if problem else []
    if log_lines.positions_sum_off(row.positions, row.mean):
        row.warnings.append(log_lines.positions_sum_warning("vllm bench serve"))
    return row, issues


def _dataset(obj: dict) -> str | None:
    """The dataset named by ``vllm bench serve --metadata dataset_name=…`` or SGLang bench_serving's ``dataset_name``."""
    for key in ("dataset_name", "dataset"):
        if isinstance(obj.get(key), str) and obj[key].strip():
            return obj[key].strip()
    return None


def _acceptance(obj: dict, row: LogRow, issues: list) -> None:
    """E[N], r, the per-position rates and K of a result that has spec-decode keys, into ``row``."""
    mean = log_lines.json_number(obj, "spec_decode_acceptance_length")
    row.mean = mean if mean is not None and mean > 0 else None  # 0.0: no drafts were made
    drafts, drafted, accepted = (
        log_lines.json_count(obj, f"spec_decode_{key}") for key in ("num_drafts", "draft_tokens", "accepted_tokens")
    )
    row.rate = log_lines.ratio(accepted, drafted)
    row.rounds = drafts or None
    percent = log_lines.json_number(obj, "spec_decode_acceptance_rate")
    no_drafts = drafts == 0 or drafted == 0  # vLLM writes 0.0 for the rate and length when nothing was drafted
    if row.rate is None and percent is not None and not no_drafts:
        row.rate = percent / 100.0  # written in percent: 100 · accepted / draft tokens
    row.positions = _positions(obj, issues)
    row.k = len(row.positions) if row.positions else None
    if row.k is None and drafts and drafted and drafted % drafts == 0:
        row.k = drafted // drafts
    for key in ("spec_decode_acceptance_length", "spec_decode_acceptance_rate"):
        if key in obj and log_lines.json_number(obj, key) is None:
            issues.append((key, f"{obj[key]!r:.80}", Phrase("a finite number")))
    if no_drafts:
        row.mean = row.rate = row.positions = None
    if row.mean is None and row.rate is None and not issues:
        issues.append(
            (
                "spec_decode_num_drafts",
                str(obj.get("spec_decode_num_drafts")),
                Phrase("at least one draft (the run made none: no acceptance figure)"),
            )
        )


def _positions(obj: dict, issues: list) -> list[float] | None:
    """The per-position list as floats; None where absent, or (noted in ``issues``) not a list of numbers."""
    positions = obj.get("spec_decode_per_position_acceptance_rates")
    if positions is None:
        return None
    if not isinstance(positions, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in positions
    ):
        allowed = Phrase("a list of numbers in [0, 1] (fractions, one per draft position)")
        issues.append(("spec_decode_per_position_acceptance_rates", f"{positions!r:.80}", allowed))
        return None
    return [float(x) for x in positions]


def serving_figures(obj: dict) -> dict[str, float | int | str | None]:
    """The run's serving columns (None where the result lacks them)."""
    completed = log_lines.json_count(obj, "completed")
    out: dict[str, float | int | str | None] = {
        "concurrency": log_lines.json_count(obj, "max_concurrency"),
        "request_rate": log_lines.json_number(obj, "request_rate"),  # the string "inf" (all at once) is no rate
        "target_model": obj.get("model_id") if isinstance(obj.get("model_id"), str) else None,
    }
    for name, key in (("prompt_tokens", "total_input_tokens"), ("output_tokens", "total_output_tokens")):
        total = log_lines.json_number(obj, key)
        out[name] = total / completed if total is not None and completed else None
    for metric in ("ttft", "tpot", "itl"):
        for q, prefix in _QUANTILES.items():
            out[f"{metric}_{q}_ms"] = log_lines.json_number(obj, f"{prefix}_{metric}_ms")
    return out


READER = Reader(
    name="vllm_bench",
    title=Phrase(N_("vllm bench serve results")),
    detect=detect,
    rule="the first non-blank line is a JSON object with output_throughput, request_throughput and model_id",
    read=read,
    spellings=("vllm-bench", "vllm_bench_serve", "vllm bench serve"),
    needs_k=False,
)

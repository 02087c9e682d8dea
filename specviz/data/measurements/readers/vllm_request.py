"""vLLM's per-request speculative metrics → one row per request.

``vllm serve … --per-request-spec-decode-metrics summary|detailed`` (vLLM ≥ 0.29.0; read at 0.34.0:
``vllm/v1/metrics/stats.py`` ``RequestSpecDecodeMetrics``, ``vllm/entrypoints/generate/base/protocol.py``
``SpeculativeDecodingMetrics``) puts ``metrics.speculative_decoding`` in each response (streamed: the final
usage chunk): ``{"mean_acceptance_length": 2.56, "draft_acceptance_rate": 0.519, "acceptance_histogram":
[3, 1, 2, 3], "num_spec_steps": 9, "num_accepted_draft_tokens": 14, "num_draft_tokens": 27,
"num_spec_tokens": 3, …}``. Input: JSON lines, a JSON list, or server-sent events (``data: {…}``).

* h = ``acceptance_histogram`` (K + 1 entries, h_j = steps that accepted exactly j drafts): R = Σ h_j,
  E[N] = 1 + Σ j·h_j / R, unconditional p_i = Σ_{j ≥ i} h_j / R (stored as conditional a_i);
* K = ``num_spec_tokens`` (else len(h) − 1); r = accepted / draft tokens (a fraction);
* ``acceptance_histogram_by_draft_length`` ``{"k": [k + 1 counts]}`` (vLLM ``acceptance_metrics.md``):
  a row per draft length;
* ``usage``: ``context_length`` = P + G/2 (prompt, completion tokens); ``model`` → target.

A histogram that does not sum to the steps, or whose Σ j·h_j is not the accepted tokens, is a row error. A
stated ``mean_acceptance_length``, ``draft_acceptance_rate`` or ``per_step_*`` list that disagrees with the
histogram and totals is a warning naming the request, both values and the one used (the histogram's, the totals').
"""

from __future__ import annotations

import json

from specviz.base.i18n import N_, Phrase
from specviz.core.acceptance import request_context
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import LogRow, json_count
from specviz.data.measurements.report import RowError
from specviz.data.measurements.table import RawColumn, RawTable

_HEADERS = {
    "k": "num_spec_tokens",
    "mean_accepted_tokens": "1 + Σ j·acceptance_histogram[j] / num_spec_steps",
    "acceptance_rate": "num_accepted_draft_tokens / num_draft_tokens",
    "per_position_acceptance": "acceptance_histogram",
}
_KEY = '"speculative_decoding"'


def detect(text: str) -> bool:
    """A response whose ``metrics.speculative_decoding`` has an ``acceptance_histogram``, near the start."""
    head = text[:200_000]
    return _KEY in head and '"acceptance_histogram' in head and '"num_spec_steps"' in head


def _responses(text: str):
    """(line number, response object or None, issue) for each response in the text."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except (ValueError, RecursionError):
            items = None
        if not isinstance(items, list):
            yield 1, None, ("json", stripped[:80], Phrase("a JSON list of responses"))
            return
        yield from ((i, item, None) for i, item in enumerate(items, start=1) if _has_metrics(item))
        return
    lines = "\n".join(line[5:].strip() if line.startswith("data:") else line for line in text.splitlines())
    for lineno, obj, issue in log_lines.json_lines(lines, Phrase("a response with metrics.speculative_decoding")):
        if issue is not None and issue[1].strip() != "[DONE]":
            yield lineno, None, issue
        elif obj is not None and _has_metrics(obj):
            yield lineno, obj, None


def _has_metrics(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("metrics"), dict) and "speculative_decoding" in obj["metrics"]


def read(text: str, ctx: ReadContext) -> RawTable:
    """One row per request (or per request and draft length), with its context and model."""
    parsed, dropped = [], []
    for lineno, obj, issue in _responses(text):
        if issue is not None:
            dropped.append(RowError(lineno, issue[0], str(issue[1])[:200], issue[2]))
            continue
        parsed += [(lineno, obj.get("model"), row, issues) for row, issues in _request_rows(lineno, obj)]
    rows = log_lines.collect(
        [row for _, _, row, _ in parsed], ctx, Phrase("response with metrics.speculative_decoding")
    )
    table = log_lines.log_table(rows, ctx, _HEADERS)
    models = [model if isinstance(model, str) else None for _, model, _, _ in parsed]
    if any(models):
        table.columns["target_model"] = RawColumn("target_model", "model", models)
    for i, (lineno, _, _, issues) in enumerate(parsed):
        for field, value, allowed in issues:
            table.row_errors.setdefault(i, []).append(RowError(lineno, field, value, allowed, field))
    table.dropped += dropped
    table.n_dropped += len(dropped)
    ctx.report.conversions.append(
        Phrase(
            "vLLM per-request metrics: E[N] = 1 + Σ j·h_j / steps from acceptance_histogram h (drafts accepted per step, bonus not counted); per-position rates p_i = Σ_(j ≥ i) h_j / steps"
        )
    )
    return table


def _request_rows(lineno: int, obj: dict) -> list[tuple[LogRow, list]]:
    """The request's row (or one per draft length), with the fields that contradict each other."""
    spec = obj["metrics"]["speculative_decoding"]
    if not isinstance(spec, dict):
        allowed = Phrase("an object (vLLM --per-request-spec-decode-metrics)")
        return [
            (LogRow(lineno, "vLLM per-request metrics"), [("metrics.speculative_decoding", f"{spec!r:.80}", allowed)])
        ]
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
    context = request_context(json_count(usage, "prompt_tokens"), json_count(usage, "completion_tokens"))
    by_length = spec.get("acceptance_histogram_by_draft_length")
    if isinstance(by_length, dict) and len(by_length) > 1:
        out = [
            _histogram_row(lineno, counts, f"acceptance_histogram_by_draft_length.{k}")
            for k, counts in by_length.items()
        ]
    else:
        out = [_histogram_row(lineno, spec.get("acceptance_histogram"), "acceptance_histogram")]
        _check_totals(spec, *out[0])
        if not out[0][1]:
            _check_stated(spec, out[0][0], obj.get("id") if isinstance(obj.get("id"), str) else None)
    for row, _ in out:
        row.context = None if context is None else float(context)
    return out


def _check_totals(spec: dict, row: LogRow, issues: list) -> None:
    """K, r and the counts of a request's one histogram, against the totals it states."""
    row.rate = log_lines.ratio(json_count(spec, "num_accepted_draft_tokens"), json_count(spec, "num_draft_tokens"))
    row.k = json_count(spec, "num_spec_tokens") if row.k is None else row.k  # a bad histogram: the stated K
    if issues:
        return
    stated_k, steps = json_count(spec, "num_spec_tokens"), json_count(spec, "num_spec_steps")
    accepted = json_count(spec, "num_accepted_draft_tokens")
    if stated_k is not None and stated_k != row.k:
        allowed = Phrase("K = len(acceptance_histogram) − 1 = {k}", k=row.k)
        issues.append(("num_spec_tokens", f"{spec.get('num_spec_tokens')!r:.40}", allowed))
    if steps != row.rounds or accepted != round((row.mean - 1.0) * row.rounds):
        allowed = Phrase("the histogram's total steps ({steps}) and Σ j·h_j accepted drafts", steps=row.rounds)
        issues.append(("num_spec_steps", f"{steps!r} steps, {accepted!r} accepted", allowed))


#: how far a stated figure may be from the one computed (vLLM writes full floats; a file rounded to 3 decimals passes)
_CLOSE = 1e-3


def _check_stated(spec: dict, row: LogRow, request_id: str | None) -> None:
    """Warnings for the stated figures that disagree with the histogram and totals the row uses."""
    said = []
    mean = log_lines.json_number(spec, "mean_acceptance_length")
    if mean is not None and abs(mean - row.mean) > _CLOSE:
        said.append(
            Phrase(
                "mean_acceptance_length = {stated:g} disagrees with 1 + Σ j·h_j / steps = {used:.4g} from acceptance_histogram; {used:.4g} is used",
                stated=mean,
                used=row.mean,
            )
        )
    rate = log_lines.json_number(spec, "draft_acceptance_rate")
    accepted, drafted = json_count(spec, "num_accepted_draft_tokens"), json_count(spec, "num_draft_tokens")
    if rate is not None and isinstance(row.rate, float) and abs(rate - row.rate) > _CLOSE:
        said.append(
            Phrase(
                "draft_acceptance_rate = {stated:g} disagrees with num_accepted_draft_tokens / num_draft_tokens = {accepted} / {drafted} = {used:.4g}; {used:.4g} is used",
                stated=rate,
                accepted=accepted,
                drafted=drafted,
                used=row.rate,
            )
        )
    for what in said + _per_step_lists(spec, row, accepted, drafted):
        named = Phrase("vLLM request {id}: {what}", id=request_id, what=what) if request_id else None
        row.warnings.append(named or Phrase("vLLM request: {what}", what=what))


def _per_step_lists(spec: dict, row: LogRow, accepted: int | None, drafted: int | None) -> list[Phrase]:
    """Where ``per_step_accepted`` / ``per_step_drafted`` (detailed mode) disagree with the totals and the steps."""
    said = []
    for key, total, name in (
        ("per_step_accepted", accepted, "num_accepted_draft_tokens"),
        ("per_step_drafted", drafted, "num_draft_tokens"),
    ):
        steps = spec.get(key)
        if not isinstance(steps, list) or not all(isinstance(x, int | float) for x in steps) or total is None:
            continue
        if sum(steps) != total or len(steps) != row.rounds:
            said.append(
                Phrase(
                    "{key} sums to {sum:g} over {n} steps, but {name} = {total} over {steps} steps; the totals and acceptance_histogram are used",
                    key=key,
                    sum=sum(steps),
                    n=len(steps),
                    name=name,
                    total=total,
                    steps=row.rounds,
                )
            )
    return said


def _histogram_row(lineno: int, counts, field: str) -> tuple[LogRow, list]:
    """E[N], rounds and per-position rates of one acceptance histogram (K + 1 counts of steps)."""
    row = LogRow(lineno, f"vLLM per-request spec-decode metrics ({field}), line {lineno}")
    ok = (
        isinstance(counts, list)
        and len(counts) >= 2
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)
    )
    if not ok or not sum(counts):
        return row, [
            (field, f"{counts!r:.80}", Phrase("K + 1 whole numbers >= 0 (steps that accepted j drafts), not all 0"))
        ]
    steps = sum(counts)
    row.k, row.rounds = len(counts) - 1, steps
    row.mean = 1.0 + sum(j * c for j, c in enumerate(counts)) / steps
    row.positions = [sum(counts[i:]) / steps for i in range(1, len(counts))]
    return row, []


READER = Reader(
    name="vllm_request",
    title=Phrase(N_("vLLM per-request speculative metrics")),
    detect=detect,
    rule="a response's metrics.speculative_decoding with acceptance_histogram and num_spec_steps (JSON, JSON lines or server-sent events)",
    read=read,
    spellings=("vllm-request", "vllm_per_request", "per_request_spec_decode_metrics"),
    needs_k=False,
)

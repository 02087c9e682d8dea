"""SGLang ``scripts/playground/bench_speculative.py`` output (JSON lines) → one row per speculative configuration.

One object per measured configuration (sgl-project/sglang ``scripts/playground/bench_speculative.py``):
``{"batch_size": 1, "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": 2.718, "step_time":
0.00943, "speed": 288.23, "completion_tokens": 512.0}``.

* ``num_draft_tokens`` counts the root: K = num_draft_tokens − 1 (a chain when ``topk`` = 1, else a tree);
* ``acc_length`` → E[N] (bonus counted; the server's lifetime mean, warm-up included);
* ``step_time`` (s, 20th percentile) and ``speed`` = acc_length / step_time per request: ``tokens_per_s``
  = speed × batch_size;
* the all-zero line (steps, topk, draft tokens) is the target alone: no row, but its batch size's
  ``baseline_tokens_per_s`` (speed × batch_size) and ``t_target_ms``, so each row has a speedup.

Models, method and temperature are not in the file: label them when loading.
"""

from __future__ import annotations

from specviz.base.i18n import N_, Phrase
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import LogRow, json_count, json_number
from specviz.data.measurements.report import RowError
from specviz.data.measurements.table import RawColumn, RawTable

#: the keys every configuration line has (detection needs all of them in the first object)
SIGNATURE = ("batch_size", "steps", "topk", "num_draft_tokens", "acc_length", "step_time", "speed")
_HEADERS = {
    "k": "num_draft_tokens − 1",
    "mean_accepted_tokens": "acc_length",
    "tokens_per_s": "speed × batch_size",
    "batch_size": "batch_size",
}
_BASELINE = {
    "baseline_tokens_per_s": "speed × batch_size of the line with steps = topk = num_draft_tokens = 0",
    "t_target_ms": "step_time of that line (s → ms)",
}


def detect(text: str) -> bool:
    """The first non-blank line is a JSON object with every key of :data:`SIGNATURE`."""
    if not text.lstrip().startswith("{") or '"num_draft_tokens"' not in text[:200_000]:
        return False
    obj = log_lines.first_json_object(text)
    return obj is not None and all(key in obj for key in SIGNATURE)


def read(text: str, ctx: ReadContext) -> RawTable:
    """Every speculative configuration as a row, with its batch size's target-only line as the baseline."""
    lines = list(_objects(text))
    baselines = {json_count(obj, "batch_size"): obj for _, obj, issues in lines if not issues and _is_baseline(obj)}
    parsed = [(lineno, obj, issues) for lineno, obj, issues in lines if issues or not _is_baseline(obj)]
    rows = [_row(lineno, obj) for lineno, obj, _ in parsed]
    rows = log_lines.collect(rows, ctx, Phrase("SGLang bench_speculative configuration"))
    table = log_lines.log_table(rows, ctx, _HEADERS)
    for i, (lineno, _, issues) in enumerate(parsed):
        for field, value, allowed in issues:
            table.row_errors.setdefault(i, []).append(RowError(lineno, field, value, allowed, field))
    base = [baselines.get(json_count(obj, "batch_size") if obj else None) for _, obj, _ in parsed]
    for name, header in _BASELINE.items():
        values = [_baseline_figure(b, name) for b in base]
        if any(v is not None for v in values):
            table.columns[name] = RawColumn(name, header, values, guess_percent=False)
    ctx.report.conversions.append(
        Phrase(
            "SGLang bench_speculative: K = num_draft_tokens − 1 (SGLang counts the root); tokens/s = speed × batch_size; the baseline is the line with steps = topk = num_draft_tokens = 0 at the same batch size"
        )
    )
    return table


def _objects(text: str):
    for lineno, obj, issue in log_lines.json_lines(text, Phrase("a bench_speculative configuration")):
        yield lineno, obj, [issue] if issue else _issues(obj)


def _issues(obj: dict) -> list[tuple[str, str, str]]:
    """Fields that are not what the script writes, as (field, value, what is allowed)."""
    issues = []
    for key in ("batch_size", "steps", "topk", "num_draft_tokens"):
        if json_count(obj, key) is None:
            issues.append((key, f"{obj.get(key)!r:.80}", Phrase("a whole number >= 0")))
    for key in ("acc_length", "step_time", "speed"):
        x = json_number(obj, key)
        if x is None or x <= 0:
            issues.append((key, f"{obj.get(key)!r:.80}", Phrase("a finite number > 0")))
    if (
        not issues
        and not _is_baseline(obj)
        and (obj["num_draft_tokens"] < 2 or obj["acc_length"] > obj["num_draft_tokens"])
    ):
        allowed = Phrase("num_draft_tokens >= 2 (K + 1, the root counted) and acc_length in [1, num_draft_tokens]")
        issues.append(("num_draft_tokens", f"{obj['num_draft_tokens']!r} (acc_length {obj['acc_length']!r})", allowed))
    return issues


def _is_baseline(obj: dict) -> bool:
    return all(obj.get(key) == 0 for key in ("steps", "topk", "num_draft_tokens"))


def _row(lineno: int, obj: dict | None) -> LogRow:
    """One configuration as a row (its fields already checked; a bad line an empty row)."""
    if obj is None:
        return LogRow(lineno, f"SGLang bench_speculative, line {lineno}")
    shape = "chain" if obj.get("topk") == 1 else f"tree, top-k {obj.get('topk')}"
    row = LogRow(
        lineno,
        f"SGLang bench_speculative ({shape}, {obj.get('steps')} draft steps, step time p20 "
        f"{obj.get('step_time')} s), line {lineno}; acc_length is the server's lifetime mean",
    )
    ndt, batch, speed = (json_count(obj, "num_draft_tokens"), json_count(obj, "batch_size"), json_number(obj, "speed"))
    row.k = ndt - 1 if ndt is not None and ndt >= 2 else None
    row.mean = json_number(obj, "acc_length")
    row.batch_size = batch
    row.tokens_per_s = speed * batch if speed is not None and batch else None
    if json_count(obj, "topk") not in (None, 1):
        row.warnings.append(
            Phrase(
                "SGLang top-k > 1 drafts a tree of K nodes: an α read through the chain model from its E[N] is approximate"
            )
        )
    return row


def _baseline_figure(obj: dict | None, name: str) -> float | None:
    """The target-only line's throughput (× batch size) or its step time in ms."""
    if obj is None:
        return None
    if name == "t_target_ms":
        return 1e3 * obj["step_time"]
    return obj["speed"] * obj["batch_size"]


READER = Reader(
    name="sglang_bench",
    title=Phrase(N_("SGLang bench_speculative results")),
    detect=detect,
    rule="the first non-blank line is a JSON object with batch_size, steps, topk, num_draft_tokens, acc_length, step_time and speed",
    read=read,
    spellings=("sglang-bench", "sglang_bench_speculative", "bench_speculative"),
    needs_k=False,
)

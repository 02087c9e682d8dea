"""SGLang ``Decode batch`` log lines → one row per line that reports speculative decoding.

Both ``Decode batch,`` and the older ``Decode batch.`` (after a prefix such as ``[2025-06-01 10:00:00 TP0]``):
``Decode batch, #running-req: 3, #token: 1234, token usage: 0.05, accept len: 2.54, accept rate: 0.51,
gen throughput (token/s): 87.12, #queue-req: 0`` (older lines have no ``accept rate``).

Source: ``SchedulerMetricsMixin.log_decode_stats`` in ``python/sglang/srt/managers/scheduler_metrics_mixin.py``
(each verify step adds ``num_accepted_tokens + bs`` tokens and ``bs`` passes, ``update_spec_metrics``):

* ``accept len`` = accepted tokens / forward passes, bonus counted: E[N] → ``mean_accepted_tokens``;
* ``gen throughput (token/s)`` → ``tokens_per_s``; ``#running-req`` → ``batch_size``;
* ``accept rate``: before SGLang PR #23530 (April 2026) E[N] / speculative_num_draft_tokens = E[N] / (K + 1)
  for a chain, used only as a check of K; since then accepted / proposed = r = (E[N] − 1) / K, stored as
  r where the line fits it within rounding.

K (``--speculative-num-steps``) comes from the caller. accept len / accept rate = speculative_num_draft_tokens
(K + 1 for a chain), within the 2-decimal rounding (:func:`verified_per_round`): fewer than K + 1 is a
row error (k too large), more a warning (a tree, ``--speculative-eagle-topk`` > 1, or k below the depth).
Lines without ``accept len`` are not metrics lines.
"""

from __future__ import annotations

import re

from specviz.base.i18n import Message, Phrase
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import NUM, LogRow, integer, number
from specviz.data.measurements.report import MeasurementError
from specviz.data.measurements.table import RawTable

_BATCH = re.compile(r"Decode batch(?:\s*\[[0-9]+\])?\s*[.,]\s*#running-req:", re.IGNORECASE)
_FIELDS = {
    "mean": re.compile(r"accept len:\s*(" + NUM + ")", re.IGNORECASE),
    "rate": re.compile(r"accept rate:\s*(" + NUM + ")", re.IGNORECASE),
    "tps": re.compile(r"gen throughput \(token/s\):\s*(" + NUM + ")", re.IGNORECASE),
    "running": re.compile(r"#running-req:\s*([0-9]+)", re.IGNORECASE),
}
_RANK = re.compile(r"^\s*\[[0-9-]+ [0-9:.]+\s+([^\]]+)\]")  #: "[2025-06-01 10:00:00 TP0]" → "TP0"
_HEADERS = {
    "k": "k (given)",
    "mean_accepted_tokens": "accept len",
    "tokens_per_s": "gen throughput (token/s)",
    "batch_size": "#running-req",
}


def is_batch_line(line: str) -> bool:
    """An SGLang ``Decode batch`` line (with speculative decoding on or off)."""
    return _BATCH.search(line) is not None


def is_metrics_line(line: str) -> bool:
    """A ``Decode batch`` line that reports speculative decoding (it has ``accept len``)."""
    return is_batch_line(line) and _FIELDS["mean"].search(line) is not None


def read(text: str, ctx: ReadContext) -> RawTable:
    """Every ``Decode batch`` line with ``accept len`` as a row, with the caller's K."""
    lines = text.splitlines()
    if any(map(is_batch_line, lines)) and not any(map(is_metrics_line, lines)):
        raise MeasurementError(
            Message(
                "{name}: no SGLang 'Decode batch' line has 'accept len' (speculative decoding was off); a metrics line looks like 'Decode batch, #running-req: 3, …, accept len: 2.54, …'",
                name=ctx.name,
            ),
            ctx.report,
        )
    rows = (parse_line(line, ctx.k, n) for n, line in enumerate(lines, start=1) if is_metrics_line(line))
    what = Phrase("SGLang 'Decode batch' (with 'accept len')")
    return log_lines.log_table(log_lines.collect(rows, ctx, what), ctx, _HEADERS)


def parse_line(line: str, k: int | None, lineno: int = 1) -> LogRow:
    """E[N] from accept len, tokens/s, batch size; accept rate checked against K (row error or warning)."""
    found = {key: rx.search(line) for key, rx in _FIELDS.items()}
    rank = _RANK.search(line)
    form = "with accept rate" if found["rate"] else "accept len only"
    where = f", {rank.group(1).strip()}" if rank else ""
    row = LogRow(lineno, f"SGLang Decode batch ({form}){where}, log line {lineno}")
    row.mean = number(found["mean"])
    tps = number(found["tps"])
    row.tokens_per_s = tps if tps != 0.0 else None  # an idle interval, not a bad cell
    row.batch_size = integer(found["running"])
    rate = number(found["rate"])
    if rate is not None and is_accepted_over_proposed(row.mean, rate, k):
        row.rate = rate
        row.note += f"; accept rate {found['rate'].group(1)} (accepted / proposed: SGLang since PR #23530)"
        return row
    if rate is not None:
        row.note += f"; accept rate {found['rate'].group(1)} (E[N] / speculative_num_draft_tokens)"
    span = verified_per_round(row.mean, rate)
    if span is not None and k is not None:
        low, high = span
        if high < k + 1:
            row.problems.append(
                Phrase(
                    "the K this line was logged with: accept len {mean:g} / accept rate {rate:g} = {low:.2f}–{high:.2f} verified tokens per round, fewer than K + 1 = {k1}",
                    mean=row.mean,
                    rate=rate,
                    low=low,
                    high=high,
                    k1=k + 1,
                )
            )
        elif low > k + 1:
            row.warnings.append(
                Phrase(
                    "SGLang: accept len / accept rate (= speculative_num_draft_tokens) is more than K + 1: a tree (--speculative-eagle-topk > 1) verifies more tokens than its depth + 1, or k is less than --speculative-num-steps; accept len is read as E[N] of depth K"
                )
            )
    return row


def is_accepted_over_proposed(mean: float | None, rate: float, k: int | None) -> bool:
    """Whether ``accept rate`` reads as SGLang's newer definition (PR #23530, April 2026): accepted / proposed
    draft tokens r = (E[N] − 1) / K, within the 2-decimal rounding of both printed figures (± 0.005 + 0.005 / K)."""
    if mean is None or k is None or mean < 1.0:
        return False
    return abs(rate - (mean - 1.0) / k) <= 0.005 + 0.005 / k + 1e-9


def verified_per_round(mean: float | None, rate: float | None) -> tuple[float, float] | None:
    """[(L − 0.005) / (a + 0.005), (L + 0.005) / (a − 0.005)] widened by 0.05, the interval of accept len L /
    accept rate a printed to 2 decimals; None where a < 0.02 or a value is missing."""
    if mean is None or rate is None or not (rate >= 0.02 and mean >= 1.0):
        return None
    return (mean - 0.005) / (rate + 0.005) - 0.05, (mean + 0.005) / (rate - 0.005) + 0.05


READER = Reader(
    name="sglang_log",
    title=Phrase("SGLang log lines"),
    detect=lambda text: "decode batch" in text.lower() and any(map(is_batch_line, text.splitlines())),
    rule="a line holds 'Decode batch' followed by '#running-req:' (its 'accept len' lines are read)",
    read=read,
    spellings=("sglang",),
    needs_k=True,
)

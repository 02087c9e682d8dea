"""vLLM speculative-decoding log lines → one row per metrics line (one logging interval).

Three generations of the line, read wherever they are in a log:

* **V1, current**: ``SpecDecoding metrics: Mean acceptance length: 2.37, Accepted throughput: 12.50
  tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: 125 tokens, Drafted: 400 tokens, Per-position
  acceptance rate: 0.805, 0.632, 0.483, 0.320, Avg Draft acceptance rate: 31.2%``;
* **V1, 2025**: ``SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length: 2.16,
  Accepted: 116 tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.667, 0.333, 0.160``;
* **V0**: ``Speculative metrics: Draft acceptance rate: 0.607, System efficiency: 0.510, Number of
  speculative tokens: 4, Number of accepted tokens: 1200, Number of draft tokens: 1976, Number of
  emitted tokens: 2070.``

**V1**: E[N] = ``Mean acceptance length``; r = A / D from ``Accepted`` / ``Drafted`` (else the logged
rate); per-position p_i is unconditional (Σ p_i = E[N] − 1), stored as a_i = p_i / p_(i−1). K comes from
the caller; a list of another length, or E[N] = 1 + K·A/D implying another K, is a row error. The
throughputs count draft tokens only, so they go to ``notes``.

**V0** prints K (a different ``k=`` is a row error). With D draft, E emitted tokens and R = D / K steps:
E[N] = E·K / D, r = (E − R) / D = (E[N] − 1) / K, system efficiency = E[N] / (K + 1) (used where E is
missing). Its ``Draft acceptance rate`` (``%.3f``) is not r: it counts accepted positions after the first
rejection too (``num_accepted_tokens += accepted.sum()``, vLLM ``spec_decode_base_sampler.py``), so it
goes to ``notes``. Counts are running totals. A line whose efficiency ≠ E / (R·(K + 1)) or rate ≠ A / D
(beyond 0.0015), or with E − R > A (as the example: 0.838 ≠ 0.510, 1576 > 1200), loads from its counts
with a warning.
"""

from __future__ import annotations

import math
import re

from specviz.base.i18n import Phrase
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import NUM, LogRow, integer, number, ratio
from specviz.data.measurements.table import RawTable

MARKER = "specdecoding metrics"  #: a line holding this (any case) is a V1 metrics line
V0_MARKER = "speculative metrics:"  #: a line holding this (any case) is a V0 metrics line

_FIELDS = {
    "mean": re.compile(r"Mean acceptance length:\s*(" + NUM + ")", re.IGNORECASE),
    "accepted": re.compile(r"(?<![A-Za-z] )Accepted:\s*([0-9]+)\s*tokens", re.IGNORECASE),
    "drafted": re.compile(r"(?<![A-Za-z] )Drafted:\s*([0-9]+)\s*tokens", re.IGNORECASE),
    "positions": re.compile(r"Per-position acceptance rate:\s*(" + NUM + r"(?:\s*,\s*" + NUM + r")*)", re.IGNORECASE),
    "rate": re.compile(r"Draft acceptance rate:\s*(" + NUM + r")\s*%", re.IGNORECASE),
    "accepted_tps": re.compile(r"Accepted throughput:\s*(" + NUM + r")\s*tokens/s", re.IGNORECASE),
    "drafted_tps": re.compile(r"Drafted throughput:\s*(" + NUM + r")\s*tokens/s", re.IGNORECASE),
}
_V0_FIELDS = {
    "rate": re.compile(r"Draft acceptance rate:\s*(" + NUM + r")(?!\s*%)", re.IGNORECASE),
    "efficiency": re.compile(r"System efficiency:\s*(" + NUM + ")", re.IGNORECASE),
    "k": re.compile(r"Number of speculative tokens:\s*([0-9]+)", re.IGNORECASE),
    "accepted": re.compile(r"Number of accepted tokens:\s*([0-9]+)", re.IGNORECASE),
    "drafted": re.compile(r"Number of draft tokens:\s*([0-9]+)", re.IGNORECASE),
    "emitted": re.compile(r"Number of emitted tokens:\s*([0-9]+)", re.IGNORECASE),
}
_HEADERS = {
    "mean_accepted_tokens": "Mean acceptance length",
    "acceptance_rate": "Accepted / Drafted",
    "per_position_acceptance": "Per-position acceptance rate",
    "system_efficiency": "System efficiency",
}


def is_metrics_line(line: str) -> bool:
    """A V1 metrics line: ``SpecDecoding metrics`` (any case) and at least one metric field."""
    return MARKER in line.lower() and any(rx.search(line) for rx in _FIELDS.values())


def is_v0_line(line: str) -> bool:
    """A V0 metrics line: it holds ``Speculative metrics:`` (any case) and at least one V0 field."""
    return V0_MARKER in line.lower() and any(rx.search(line) for rx in _V0_FIELDS.values())


def read(text: str, ctx: ReadContext) -> RawTable:
    """Every V1 and V0 metrics line as a row (V1 rows with the caller's K, V0 rows with the K they state)."""
    rows = log_lines.collect(
        _rows(text, ctx.k), ctx, Phrase("'SpecDecoding metrics' (vLLM V1) or 'Speculative metrics' (vLLM V0)")
    )
    stated = [r.k is not None for r in rows]
    k_header = "Number of speculative tokens" if all(stated) else "k (logged or given)" if any(stated) else "k (given)"
    return log_lines.log_table(rows, ctx, {**_HEADERS, "k": k_header})


def _rows(text: str, k: int | None):
    for lineno, line in enumerate(text.splitlines(), start=1):
        if is_metrics_line(line):
            yield parse_line(line, k, lineno)
        elif is_v0_line(line):
            yield parse_v0_line(line, k, lineno)


def parse_line(line: str, k: int | None, lineno: int = 1) -> LogRow:
    """A V1 line: E[N], r = A / D (else the logged "x%"), unconditional p_i, throughputs in the note; K checks."""
    found = {key: rx.search(line) for key, rx in _FIELDS.items()}
    row = LogRow(lineno, f"vLLM V1 SpecDecoding metrics ({_v1_form(line)}), log line {lineno}")
    row.mean = number(found["mean"])
    row.rate = ratio(integer(found["accepted"]), integer(found["drafted"]))
    if row.rate is None and found["rate"]:
        row.rate = f"{found['rate'].group(1)}%"
    if found["positions"]:
        row.positions = log_lines.number_list(found["positions"].group(1))
    problem = log_lines.positions_length_problem(row.positions, k, Phrase("per-position acceptance rate"))
    problem = problem or log_lines.k_mismatch(row.mean, row.rate, k)
    row.problems += [problem] if problem else []
    if log_lines.positions_sum_off(row.positions, row.mean):
        row.warnings.append(log_lines.positions_sum_warning("vLLM"))
    if found["accepted_tps"] or found["drafted_tps"]:
        tps = ", ".join(
            f"{what} throughput {m.group(1)} tokens/s"
            for what, m in (("accepted", found["accepted_tps"]), ("drafted", found["drafted_tps"]))
            if m
        )
        row.note += f"; {tps} (draft tokens only, not tokens_per_s)"
    return row


def _v1_form(line: str) -> str:
    """Which V1 generation a line is: "current" (throughputs, Avg rate), "2025" (rate first), else "V1"."""
    lower = line.lower()
    if "throughput" in lower or "avg draft acceptance rate" in lower:
        return "current form"
    return "2025 form" if "draft acceptance rate" in lower else "V1 form"


def parse_v0_line(line: str, k_given: int | None, lineno: int = 1) -> LogRow:
    """A V0 line: K as stated, E[N] = E·K / D and r = (E − R) / D from the counts (R = D / K); checks."""
    found = {key: rx.search(line) for key, rx in _V0_FIELDS.items()}
    stated = integer(found["k"])
    k = stated if stated is not None else k_given
    acc, drafted, emitted = (integer(found[key]) for key in ("accepted", "drafted", "emitted"))
    printed_rate, printed_eff = number(found["rate"]), number(found["efficiency"])
    row = LogRow(lineno, f"vLLM V0 Speculative metrics, log line {lineno}", k=stated)
    rounds = drafted / k if drafted and k else None
    if rounds and emitted:
        row.mean = emitted / rounds
        row.rate = (emitted - rounds) / drafted
    elif printed_eff is not None and math.isfinite(printed_eff):
        row.efficiency = printed_eff
    if printed_rate is not None:
        row.note += f"; draft acceptance rate {found['rate'].group(1)} (accepted positions / draft tokens: not r)"
    problem = log_lines.stated_k_problem(stated, k_given, "Number of speculative tokens")
    row.problems += [problem] if problem else []
    if _v0_counts_off(k, acc, drafted, emitted, printed_rate, printed_eff):
        row.warnings.append(
            Phrase(
                "vLLM V0 line whose counts contradict its printed ratios (system efficiency ≠ E / (R·(K + 1)), draft acceptance rate ≠ A / D, or accepted prefixes E − R > accepted positions A); E[N] and r come from the counts"
            )
        )
    return row


def _v0_counts_off(k, acc, drafted, emitted, printed_rate, printed_eff) -> bool:
    """True where a V0 line's counts contradict its printed ratios (see the module docstring)."""
    if not k or not drafted or emitted is None:
        return False
    rounds = drafted / k
    off = acc is not None and emitted - rounds > acc + 1e-9
    if printed_eff is not None and math.isfinite(printed_eff):
        off |= abs(printed_eff - emitted / (rounds * (k + 1))) > 0.0015
    if printed_rate is not None and math.isfinite(printed_rate) and acc is not None:
        off |= abs(printed_rate - acc / drafted) > 0.0015
    return off


READER = Reader(
    name="vllm_log",
    title=Phrase("vLLM log lines"),
    detect=lambda text: MARKER in text.lower() and any(map(is_metrics_line, text.splitlines())),
    rule="a line holds 'SpecDecoding metrics' (any case) and one of its metric fields (V1; V0 lines in it are read too)",
    read=read,
    spellings=("vllm", "log"),
    needs_k=True,
)

READER_V0 = Reader(
    name="vllm_v0_log",
    title=Phrase("vLLM V0 log lines"),
    detect=lambda text: V0_MARKER in text.lower() and any(map(is_v0_line, text.splitlines())),
    rule="a line holds 'Speculative metrics:' (any case) and one of vLLM V0's fields (they state K)",
    read=read,
    spellings=("vllm_v0",),
)

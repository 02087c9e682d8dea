"""llama.cpp speculative-decoding statistics → one row per ``draft acceptance`` line (or ``statistics`` window).

Forms, read wherever they are in a log (sources: ggml-org/llama.cpp at b11434):

* **old**: ``draft acceptance rate = 0.81944 (  118 accepted /   144 generated)``;
* **per-position**: ``draft acceptance = 0.64479 (167 accepted / 259 generated), mean acceptance
  length = 2.92, acceptance rate per position = (0.805, 0.632, 0.483)``;
* **server slot timings** (``server_slot::print_timings``, ``tools/server/server-context.cpp`` lines
  714–718): ``draft acceptance = %0.5f (%5d accepted / %5d generated), mean len = %5.2f``; the
  trace-only ``acc per pos = (…)`` line gives the per-position rates of the line before it (same slot
  and task), the ``eval time = … tokens per second`` line (684–686) gives ``tokens_per_s``;
* **response timings** (``server_slot_stats::to_json``, ``tools/server/server-common.cpp`` 99–102):
  a saved response line with ``draft_n`` / ``draft_n_accepted`` is a row, r = draft_n_accepted /
  draft_n, ``predicted_per_second`` → ``tokens_per_s``;
* **speculative statistics** (``common_speculative_print_stats``, ``common/speculative.cpp``, ``-lv 4``),
  one line per drafting kind: ``statistics draft-eagle3: #calls(b,g,a) = 2 271 271, #gen drafts = 271,
  #acc drafts = 224, #gen tokens = 813, #acc tokens = 495, #mean acc len = 2.83, #acc rate/pos =
  (0.827, 0.616, 0.384), …`` (older builds: ``#calls = N``). Counts are cumulative over the server's
  life, so a row is the window since the kind's previous line: D = Δ#gen tokens, A = Δ#acc tokens,
  R = Δa, p_i = Δ(p_i·a) / R (±0.001·a / R); positions past the list, up to K, are 0. Rows only in a
  log with no ``draft acceptance`` lines (``llama-cli``, ``llama-speculative``).

Per verify step the server adds ``n_draft_accepted += n_accepted``, ``n_draft_verif_steps += 1``
(``server-context.cpp`` 4330–4331); with A accepted, D drafted tokens and R steps:

* r = A / D → ``acceptance_rate``; mean len = 1 + A / R (line 702) = E[N] → ``mean_accepted_tokens``;
* p_i = (steps that accepted ≥ i drafts) / R (lines 4337–4338, 710) is unconditional (Σ p_i = E[N] − 1),
  stored as a_i = p_i / p_(i−1); K entries (``common_speculative_n_max``, line 4335).

K (``--draft-max``) is not printed: the caller gives it. A list of another length, or D / R =
(E[N] − 1) / r above K + 0.5, is a row error; D / R below K (``--draft-p-min``, n-gram drafts) is
allowed, with a warning where r·(K − D / R) > 0.02·E[N].
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import zip_longest

from specviz.base.i18n import Phrase
from specviz.core.acceptance import request_context
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import NUM, LogRow, integer, number, ratio
from specviz.data.measurements.table import RawTable

_DRAFT = re.compile(
    r"draft acceptance( rate)?\s*=\s*(" + NUM + r")\s*\(\s*([0-9]+)\s*accepted\s*/\s*([0-9]+)\s*generated\s*\)",
    re.IGNORECASE,
)
_MEAN = re.compile(r"mean (acceptance length|len)\s*=\s*(" + NUM + ")", re.IGNORECASE)
_POSITIONS = re.compile(
    r"(?:acceptance rate per position|acc per pos)\s*=\s*\(\s*(" + NUM + r"(?:\s*,\s*" + NUM + r")*)?\s*\)",
    re.IGNORECASE,
)
_EVAL = re.compile(r"(?<!prompt )eval time\s*=.*?(" + NUM + r")\s*tokens per second", re.IGNORECASE)
#: "prompt eval time = 41.23 ms / 187 tokens" and "eval time = 1853.41 ms / 256 tokens": P and G of a request
_TOKENS = re.compile(r"(prompt )?eval time\s*=\s*" + NUM + r"\s*ms\s*/\s*([0-9]+)\s*tokens", re.IGNORECASE)
_SLOT = re.compile(r"\bid\s+([0-9]+)\s*\|\s*task\s+(-?[0-9]+)\s*\|")
_JSON = {
    "drafted": re.compile(r'"draft_n"\s*:\s*([0-9]+)'),
    "accepted": re.compile(r'"draft_n_accepted"\s*:\s*([0-9]+)'),
    "tps": re.compile(r'"predicted_per_second"\s*:\s*(' + NUM + ")"),
    "prompt": re.compile(r'"prompt_n"\s*:\s*([0-9]+)'),
    "generated": re.compile(r'"predicted_n"\s*:\s*([0-9]+)'),
}
_STATS = {
    "kind": re.compile(r"\bstatistics\s+([\w.+-]+)\s*:\s*#calls", re.IGNORECASE),
    "calls": re.compile(r"#calls(?:\(b,g,a\))?\s*=\s*([0-9]+(?:\s+[0-9]+)*)", re.IGNORECASE),
    "drafted": re.compile(r"#gen tokens\s*=\s*([0-9]+)", re.IGNORECASE),
    "accepted": re.compile(r"#acc tokens\s*=\s*([0-9]+)", re.IGNORECASE),
    "positions": re.compile(r"#acc rate/pos\s*=\s*\(\s*(" + NUM + r"(?:\s*,\s*" + NUM + r")*)?\s*\)", re.IGNORECASE),
}
_MAYBE = re.compile(
    r"generated\s*\)|\"draft_n_accepted\"|#acc tokens", re.IGNORECASE
)  #: a cheap test before the line-by-line one
_HEADERS = {
    "k": "k (given)",
    "mean_accepted_tokens": "mean acceptance length",
    "acceptance_rate": "accepted / generated",
    "per_position_acceptance": "acceptance rate per position",
    "tokens_per_s": "tokens per second",
}


def is_draft_line(line: str) -> bool:
    """A ``draft acceptance [rate] = x (A accepted / D generated)`` line (any of the log forms)."""
    return _DRAFT.search(line) is not None


def is_timings_line(line: str) -> bool:
    """A response ``timings`` object (JSON) with ``draft_n`` and ``draft_n_accepted``."""
    return '"draft_n_accepted"' in line and _JSON["drafted"].search(line) is not None


def is_statistics_line(line: str) -> bool:
    """A speculative ``statistics KIND: #calls… #gen tokens = D, #acc tokens = A`` line."""
    return all(_STATS[key].search(line) for key in ("kind", "calls", "drafted", "accepted"))


def read(text: str, ctx: ReadContext) -> RawTable:
    """Every ``draft acceptance`` / timings line as a row with the caller's K; without any, each ``statistics`` window."""
    lines = text.splitlines()
    found = any(is_draft_line(x) or is_timings_line(x) for x in lines)
    rows = _rows(lines, ctx.k) if found else _statistics_rows(lines, ctx.k)
    rows = log_lines.collect(rows, ctx, Phrase("llama.cpp 'draft acceptance' or 'statistics'"))
    return log_lines.log_table(rows, ctx, _HEADERS)


@dataclass(frozen=True)
class _Totals:
    """A statistics line's cumulative counts: verify steps, drafted, accepted, and p_i · a per position."""

    steps: int
    drafted: int
    accepted: int
    at_least: tuple[float, ...]

    @classmethod
    def of(cls, line: str) -> _Totals:
        calls = [int(x) for x in _STATS["calls"].search(line).group(1).split()]
        steps = calls[-1]  # (b, g, a): a = accept calls; an old "#calls = N": one per draft and verify
        rates = _STATS["positions"].search(line)
        positions = log_lines.number_list(rates.group(1) or "") if rates else []
        at_least = tuple(p * steps for p in positions)
        return cls(steps, integer(_STATS["drafted"].search(line)), integer(_STATS["accepted"].search(line)), at_least)

    def since(self, before: _Totals | None) -> _Totals:
        """The window after ``before`` (None, or counts that fell, as after a restart: the whole)."""
        if before is None or self.steps < before.steps or self.drafted < before.drafted:
            return self
        # positions past the longest acceptance seen were never reached: 0
        at_least = tuple(a - b for a, b in zip_longest(self.at_least, before.at_least, fillvalue=0.0))
        return _Totals(
            self.steps - before.steps, self.drafted - before.drafted, self.accepted - before.accepted, at_least
        )


def _statistics_rows(lines: list[str], k: int | None) -> Iterator[LogRow]:
    """One row per ``statistics`` line with verify steps since its kind's previous line."""
    last: dict[str, _Totals] = {}
    for lineno, line in enumerate(lines, start=1):
        if not is_statistics_line(line):
            continue
        kind = _STATS["kind"].search(line).group(1)
        totals = _Totals.of(line)
        window = totals.since(last.get(kind))
        last[kind] = totals
        if window.steps <= 0:
            continue
        row = LogRow(
            lineno, f"llama.cpp statistics ({kind}, {window.steps} verify steps since its last line), log line {lineno}"
        )
        row.rate = ratio(window.accepted, window.drafted)
        row.mean, row.rounds = 1.0 + window.accepted / window.steps, window.steps
        if window.at_least:
            row.positions = _padded([min(1.0, max(0.0, x / window.steps)) for x in window.at_least], k)
        yield check(row, k)


def _padded(positions: list[float], k: int | None) -> list[float]:
    """The rates up to K: positions past the longest acceptance seen were never reached (0)."""
    return positions + [0.0] * (k - len(positions)) if k is not None and len(positions) < k else positions


def _rows(lines: list[str], k: int | None) -> Iterator[LogRow]:
    """The rows in order; ``acc per pos`` and ``eval time`` lines joined to their slot's draft line."""
    eval_tps: dict[str, float] = {}  # slot/task -> tokens/s of its last "eval time" line
    tokens: dict[tuple[str, bool], int] = {}  # (slot/task, prompt?) -> tokens of its last (prompt) eval line
    last, last_slot = None, None
    for lineno, line in enumerate(lines, start=1):
        slot = _slot(line)
        if (m := _TOKENS.search(line)) and slot:
            tokens[slot, bool(m.group(1))] = integer(m, 2)
        if (m := _EVAL.search(line)) and slot:
            eval_tps[slot] = number(m)
        elif is_draft_line(line) or is_timings_line(line):
            if last is not None:
                yield check(last, k)
            last, last_slot = parse_line(line, lineno), slot
            if slot and last.tokens_per_s is None:
                last.tokens_per_s = eval_tps.pop(slot, None)
            if slot and last.context is None:
                last.context = _float(request_context(tokens.pop((slot, True), None), tokens.pop((slot, False), None)))
        elif last is not None and last.positions is None and slot == last_slot and (m := _POSITIONS.search(line)):
            last.positions = log_lines.number_list(m.group(1) or "") or None
            last.note += f"; per-position rates from log line {lineno}"
    if last is not None:
        yield check(last, k)


def _float(x) -> float | None:
    return None if x is None else float(x)


def _slot(line: str) -> str | None:
    """ "id 0 | task 12" of a server slot line, as "slot 0, task 12" (None: not a slot line)."""
    m = _SLOT.search(line)
    return f"slot {m.group(1)}, task {m.group(2)}" if m else None


def parse_line(line: str, lineno: int = 1) -> LogRow:
    """r = A / D, E[N] (mean length), unconditional p_i and tokens/s of one line (no K checks yet)."""
    draft = _DRAFT.search(line)
    if draft is None:  # a response timings line
        found = {key: rx.search(line) for key, rx in _JSON.items()}
        row = LogRow(lineno, f"llama.cpp response timings (draft_n, draft_n_accepted), log line {lineno}")
        row.rate = ratio(integer(found["accepted"]), integer(found["drafted"]))
        row.tokens_per_s = number(found["tps"])
        row.context = _float(request_context(integer(found["prompt"]), integer(found["generated"])))
        return row
    mean, positions = _MEAN.search(line), _POSITIONS.search(line)
    if draft.group(1):
        form = "old form"
    elif mean is not None and mean.group(1).lower() == "len":
        form = "server slot timings"
    else:
        form = "per-position form"
    slot = _slot(line)
    row = LogRow(lineno, f"llama.cpp draft acceptance ({form}{', ' + slot if slot else ''}), log line {lineno}")
    row.rate = ratio(integer(draft, 3), integer(draft, 4))
    row.mean = number(mean, 2)
    row.positions = (log_lines.number_list(positions.group(1) or "") or None) if positions else None
    return row


def check(row: LogRow, k: int | None) -> LogRow:
    """The row with its K checks: per-position list length, mean draft length (E[N] − 1) / r ≤ K + 0.5."""
    what = Phrase("acceptance rate per position")
    problem = log_lines.positions_length_problem(row.positions, k, what)
    implied = log_lines.drafts_per_round(row.mean, row.rate)
    if problem is None and implied is not None and k is not None and implied - k >= 0.5:
        problem = Phrase(
            "the K this line was logged with: mean length {mean:g} and accepted/generated {rate:.4g} imply {implied:.2f} drafted tokens per round (E[N] − 1) / r, more than K",
            mean=row.mean,
            rate=row.rate,
            implied=implied,
        )
    row.problems += [problem] if problem else []
    if problem is None and implied is not None and k is not None and row.rate * (k - implied) > 0.02 * row.mean:
        row.warnings.append(
            Phrase(
                "llama.cpp drafted fewer than K tokens per round on average (drafts stopped early: --draft-p-min, n-gram drafts), so E[N] ≠ 1 + K·r and the chain model's α is approximate"
            )
        )  # where the checks find E[N] ≠ 1 + K·r (> 2 %)
    if log_lines.positions_sum_off(row.positions, row.mean):
        row.warnings.append(log_lines.positions_sum_warning("llama.cpp"))
    return row


READER = Reader(
    name="llamacpp_log",
    title=Phrase("llama.cpp log lines"),
    detect=lambda text: (
        _MAYBE.search(text) is not None
        and any(is_draft_line(x) or is_timings_line(x) or is_statistics_line(x) for x in text.splitlines())
    ),
    rule="a line holds 'draft acceptance [rate] = x (A accepted / D generated)', a response's "
    "'draft_n_accepted' timing, or a speculative 'statistics' line ('#gen tokens', '#acc tokens')",
    read=read,
    spellings=("llamacpp", "llama.cpp", "llama_cpp"),
    needs_k=True,
)

"""NVIDIA Model-Optimizer's ``speculation_profile.json`` (schema 1.0) → rows; and a row → that profile.

Written by ``examples/specdec_bench`` (``specdec_bench/speculation_profile.py`` ``build_profile``) and
``examples/speculative_decoding/scripts/ar_validate.py``; read by vLLM's synthetic sampler. Fields:

* ``num_speculative_tokens`` → K; ``mean_accept_length`` → E[N] (per verify step, bonus counted);
* ``conditional_accept_rates`` a_i → ``per_position_acceptance``; ``marginal_accept_rates`` p_i =
  a_1 ⋯ a_i (checked against them, within 6 decimals);
* ``acceptance_length_histogram`` ``{"L": steps}``, L = 1 … K + 1; ``method`` → method;
* ``per_category`` ``{"coding": mean length, …}``: one more row per category (its E[N] only).

A profile with ``"measured": false`` (``stub_profile``) is refused.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.readers.base import ReadContext, Reader
from specviz.data.measurements.readers.log_lines import LogRow, json_count, json_number
from specviz.data.measurements.report import Joined, MeasurementError
from specviz.data.measurements.table import RawColumn, RawTable

SCHEMA_VERSION = "1.0"
_HEADERS = {
    "k": "num_speculative_tokens",
    "mean_accepted_tokens": "mean_accept_length",
    "per_position_acceptance": "marginal_accept_rates (checked against conditional_accept_rates)",
}


def detect(text: str) -> bool:
    """A JSON object with ``schema_version`` and ``conditional_accept_rates`` near its start."""
    head = text.lstrip()[:4000]
    return head.startswith("{") and '"conditional_accept_rates"' in head and '"schema_version"' in head


def read(text: str, ctx: ReadContext) -> RawTable:
    """The profile as a row, and a row per category where it has them."""
    obj = log_lines.json_document(text, ctx)
    if obj.get("measured") is False:
        message = Phrase('{name}: a speculation profile with no measurement ("measured": false)', name=ctx.name)
        raise MeasurementError(message, ctx.report)
    problems = type_problems(obj)
    if problems:
        raise MeasurementError(Phrase("{name}: {problems}", name=ctx.name, problems=Joined(problems)), ctx.report)
    rows = [parse_profile(obj), *category_rows(obj)]
    table = log_lines.log_table(log_lines.collect(rows, ctx, Phrase("speculation profile")), ctx, _HEADERS)
    labels = [ctx.name] + [f"{ctx.name} · {row.note.rpartition('category ')[2]}" for row in rows[1:]]
    table.columns["label"] = RawColumn("label", "per_category", labels, guess_percent=False)
    return table


_INTEGER, _LENGTH, _RATE = N_("a JSON integer >= 1"), N_("a JSON number >= 1"), N_("a JSON number in [0, 1]")
_RATES = N_("a JSON list of K numbers in [0, 1]")


def type_problems(obj: dict) -> list[Phrase]:
    """Each field of the wrong JSON type, by its path: the value and the type allowed (absent or null: none)."""
    found = []
    checks = [("num_speculative_tokens", _INTEGER), ("mean_accept_length", _LENGTH)]
    for key in ("conditional_accept_rates", "marginal_accept_rates"):
        values = obj.get(key)
        if values is not None and not isinstance(values, list):
            found.append(_wrong(key, values, _RATES))
        elif isinstance(values, list):
            checks += [(f"{key}[{i}]", _RATE, v) for i, v in enumerate(values)]
    categories = obj.get("per_category")
    if categories is not None and not isinstance(categories, dict):
        found.append(_wrong("per_category", categories, N_("a JSON object of category names and numbers >= 1")))
    elif isinstance(categories, dict):
        checks += [(f"per_category.{name}", _LENGTH, v) for name, v in categories.items()]
    for path, allowed, *value in checks:
        x = value[0] if value else obj.get(path)
        if value or obj.get(path) is not None:
            kind = _kind(x, allowed)
            found += [_wrong(path, x, allowed, kind)] if kind else []
    return found


def _kind(x, allowed: str) -> str | None:
    """What ``x`` is where it is not ``allowed`` (None: it is)."""
    if x is None:
        return N_("empty (null)")
    if isinstance(x, bool):
        return N_("a yes/no value")
    if isinstance(x, str):
        return N_("text")
    if isinstance(x, list | dict):
        return N_("a list") if isinstance(x, list) else N_("an object")
    try:
        x = float(x)
    except OverflowError:  # an integer past 1e308
        return N_("not finite")
    if not math.isfinite(x):
        return N_("not finite")
    if allowed == _INTEGER and not x.is_integer():
        return N_("a fraction")
    lo, hi = (0, 1) if allowed == _RATE else (1, math.inf)
    return None if lo <= x <= hi else N_("out of range")


def _wrong(path: str, value, allowed: str, kind: str | None = None) -> Phrase:
    shown = json.dumps(value)
    return Phrase(
        "{path} = {value} is {kind}; allowed: {allowed}",
        path=path,
        value=shown if len(shown) <= 60 else shown[:57] + "…",
        kind=Phrase(kind or _kind(value, allowed) or N_("not allowed")),
        allowed=Phrase(allowed),
    )


def parse_profile(obj: dict) -> LogRow:
    """K, E[N] and the unconditional p_i of the profile (the conditional ones must agree with them)."""
    who = obj.get("method") or obj.get("producer") or "?"
    row = LogRow(1, f"speculation_profile.json ({who}, schema {obj.get('schema_version', '?')})")
    row.k = json_count(obj, "num_speculative_tokens")
    row.mean = json_number(obj, "mean_accept_length")
    marginal, conditional = (_rates(obj, key) for key in ("marginal_accept_rates", "conditional_accept_rates"))
    row.positions = marginal or (_products(conditional) if conditional else None)
    if marginal and conditional and not _agree(marginal, _products(conditional)):
        row.problems.append(
            Phrase(
                "marginal_accept_rates equal to the running products of conditional_accept_rates (within 6 decimals)"
            )
        )
    problem = log_lines.positions_length_problem(row.positions, row.k, "marginal_accept_rates")
    row.problems += [problem] if problem else []
    if log_lines.positions_sum_off(row.positions, row.mean):
        row.warnings.append(log_lines.positions_sum_warning("speculation_profile.json"))
    return row


def category_rows(obj: dict) -> list[LogRow]:
    """One row per ``per_category`` entry: its mean acceptance length at the profile's K."""
    categories = obj.get("per_category")
    if not isinstance(categories, dict):
        return []
    rows = []
    for line, name in enumerate(categories, start=2):
        row = LogRow(line, f"speculation_profile.json, category {name}")
        row.k, row.mean = json_count(obj, "num_speculative_tokens"), json_number(categories, name)
        row.domain = str(name)
        rows.append(row)
    return rows


def _rates(obj: dict, key: str) -> list[float] | None:
    values = obj.get(key)
    if not isinstance(values, list) or not values:
        return None
    numbers = [json_number({"x": v}, "x") for v in values]
    return [float(x) for x in numbers] if all(x is not None and 0 <= x <= 1 for x in numbers) else None


def _products(conditional: list[float]) -> list[float]:
    """p_i = a_1 ⋯ a_i."""
    out, p = [], 1.0
    for a in conditional:
        p *= a
        out.append(p)
    return out


def _agree(a: list[float], b: list[float]) -> bool:
    """Same length, equal within the files' 6 decimals (each rounding compounds: 1e-6 · K)."""
    return len(a) == len(b) and all(abs(x - y) <= 1e-6 * (len(a) + 1) for x, y in zip(a, b, strict=True))


def to_profile(
    k: int, conditional: list[float], mean_accepted_tokens: float | None = None, method: str | None = None
) -> dict:
    """A measurement as a ``speculation_profile.json`` (schema 1.0) object: a_i from ``conditional``, p_i their
    running products, E[N] = 1 + Σ p_i where not given (the schema's ``chain_analytic`` model); 6 decimals."""
    if len(conditional) != k or not all(0 <= a <= 1 for a in conditional):
        raise ValueError(f"conditional rates must be K = {k} numbers in [0, 1]; got {conditional!r}")
    marginal = _products(conditional)
    mean = (
        1.0 + sum(marginal)
        if mean_accepted_tokens is None or math.isnan(mean_accepted_tokens)
        else mean_accepted_tokens
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "measured": True,
        "method": method,
        "num_speculative_tokens": k,
        "max_supported_k": k,
        "verification_method": "longest_prefix",
        "conditional_accept_rates": [round(a, 6) for a in conditional],
        "marginal_accept_rates": [round(p, 6) for p in marginal],
        "mean_accept_length": round(mean, 6),
        "accept_length_model": "chain_analytic",
        "accept_length_by_k": {str(k): round(mean, 6)},
    }


READER = Reader(
    name="speculation_profile",
    title=Phrase(N_("Model-Optimizer speculation profiles")),
    detect=detect,
    rule="a JSON object whose first keys include schema_version and conditional_accept_rates (speculation_profile.json)",
    read=read,
    spellings=("speculation-profile", "speculation_profile.json", "modelopt"),
    needs_k=False,
)


def profile_from_rows(frame) -> dict:
    """:func:`to_profile` of the row of largest K with per-position acceptance (unreached positions take the
    last rate), else with α (a_i = α); raises :class:`~specviz.base.i18n.Message` where there is none."""
    k = pd.to_numeric(frame.get("k"), errors="coerce") if len(frame) else pd.Series(dtype=float)
    cells = frame["per_position_acceptance"] if "per_position_acceptance" in frame else pd.Series("", index=frame.index)
    has = cells.fillna("").astype(str).str.strip().ne("") & k.notna()
    alpha = pd.to_numeric(frame.get("alpha_used"), errors="coerce") if "alpha_used" in frame else k * math.nan
    rows = frame[has] if has.any() else frame[alpha.notna() & k.notna()]
    if not len(rows):
        raise Message(
            "the selected runs have no row with per-position acceptance or α to write a speculation profile from"
        )
    row = rows.loc[pd.to_numeric(rows["k"]).idxmax()]
    kk = int(row["k"])
    if has.any():
        values = [float(x) for x in str(row["per_position_acceptance"]).split(";") if x.strip()]
        rates, last = [], next((v for v in values if math.isfinite(v)), float(row.get("alpha_used", 0.0)))
        for v in values[:kk] + [math.nan] * (kk - len(values)):
            last = v if math.isfinite(v) else last
            rates.append(min(1.0, max(0.0, last)))
    else:
        rates = [float(row["alpha_used"])] * kk
    mean = pd.to_numeric(pd.Series([row.get("mean_accepted_tokens")]), errors="coerce").iloc[0]
    method = row.get("method") if isinstance(row.get("method"), str) and row.get("method") else None
    return to_profile(kk, rates, None if pd.isna(mean) else float(mean), method)

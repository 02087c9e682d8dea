"""A load run as a row of the measurement schema (:func:`load_record`), and the speedup of two runs."""

from __future__ import annotations

import math
from collections.abc import Mapping

from specviz.base.i18n import N_, Message
from specviz.servers.loadgen.results import LoadResult
from specviz.servers.telemetry import Window, to_record


def measured_speedup(with_spec: LoadResult, without: LoadResult) -> float:
    """``with_spec.tokens_per_s / without.tokens_per_s``; ValueError naming a run without completion tokens."""
    for key, run in (
        (
            N_(
                "the run with speculative decoding has no completion tokens ({summary}); the speedup (tokens/s with ÷ tokens/s without) needs tokens in both runs"
            ),
            with_spec,
        ),
        (
            N_(
                "the run without speculative decoding has no completion tokens ({summary}); the speedup (tokens/s with ÷ tokens/s without) needs tokens in both runs"
            ),
            without,
        ),
    ):
        if run.tokens <= 0 or not run.tokens_per_s > 0:
            raise Message(key, summary=run.summary())
    return with_spec.tokens_per_s / without.tokens_per_s


#: The latency columns of a serving row: schema column → (the :class:`LoadResult` statistic, its percentile).
_LATENCY_COLUMNS: Mapping[str, tuple[str, str]] = {
    f"{stat}_{q}_ms": (stat, q) for stat in ("ttft", "tpot", "itl") for q in ("p50", "p90", "p99")
}


def load_record(
    result: LoadResult,
    *,
    label: str,
    k: int | None = None,
    window: Window | None = None,
    baseline: LoadResult | None = None,
    c: float | None = None,
    method: str | None = None,
    source: str = "",
) -> dict:
    """The run as a row of the measurement schema: ``window``'s :func:`to_record` row, else K = ``k`` and r from
    llama.cpp's drafts; speedup vs ``baseline``; serving columns (``tokens_per_s``: vllm's ``output_throughput``).

    Raises ValueError when K is unknown or there is neither an acceptance figure nor a speedup.
    """
    spec = result.spec
    label = label.strip() if isinstance(label, str) else ""
    origin = "load generator" + (f" {source}" if source else "")
    if window is not None:
        record = to_record(window, k=k, label=label, c=c, method=method, source=origin)
    else:
        if not k:
            raise Message("load run {label!r}: K is not known; give the K the serving stack runs with", label=label)
        record = {"label": label or f"load {spec.base_url}", "k": int(k), "method": method, "source": origin}
        if result.draft_acceptance is not None:
            record["acceptance_rate"] = round(min(max(result.draft_acceptance, 0.0), 1.0), 9)
        if c is not None:
            record["c"] = c
    if baseline is not None:
        record["speedup"] = round(measured_speedup(result, baseline), 9)
    if not any(record.get(name) is not None for name in ("mean_accepted_tokens", "acceptance_rate", "speedup")):
        raise Message(
            "load run {label!r}: no acceptance figure (no window of the serving stack's counters, no llama.cpp draft counts) and no speedup (no run without speculation to compare with); a row of the run library needs one of them",
            label=record["label"],
        )
    record |= _serving_columns(result)
    record["temperature"] = spec.temperature
    record["target_model"] = record.get("target_model") or spec.model
    mode = f"open loop at {spec.rate:g} requests/s" if spec.rate is not None else "closed loop"
    run = (
        f"load generator, {mode}, concurrency {spec.concurrency}: {result.done} requests ({result.failed} failed) "
        f"in {result.wall_s:.1f} s, {result.requests_per_s:.3g} requests/s"
    )
    record["notes"] = f"{run}; {record['notes']}" if record.get("notes") else run
    return record


def _serving_columns(result: LoadResult) -> dict[str, float | int]:
    """The serving columns of :func:`load_record` that the run measured (NaN statistics left out)."""
    spec = result.spec
    columns: dict[str, float | int] = {"concurrency": spec.concurrency}
    if spec.rate is not None:
        columns["request_rate"] = spec.rate
    for name, value in (
        ("prompt_tokens", result.prompt_tokens_mean),
        ("output_tokens", result.output_tokens_mean),
        ("tokens_per_s", result.output_tokens_per_s),
    ):
        if math.isfinite(value) and value > 0:
            columns[name] = round(value, 6)
    for name, (stat, q) in _LATENCY_COLUMNS.items():
        seconds = getattr(getattr(result, stat), q)
        if math.isfinite(seconds):
            columns[name] = round(seconds * 1e3, 6)
    return columns

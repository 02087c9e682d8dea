"""TensorRT-LLM ``trtllm-serve`` ``/metrics`` → the drafts of its iteration stats (JSON) or its counters (Prometheus).

JSON: iteration stats since the last call, each ``iterLatencyMS`` and ``specDecodingStats {numDraftTokens,
numAcceptedTokens, numRequestsWithDraftTokens, draftOverhead, …}``. Prometheus: counters
``trtllm_spec_decode_num_draft_tokens_total``, ``…_num_accepted_tokens_total``, gauges ``…_acceptance_length``
and ``…_draft_overhead`` (the last iteration's: tensorrt_llm/metrics/collector.py
``MetricsCollector.log_iteration_stats`` @ 050f80def8df236e326949c8bd9dee10fd896a83).
Draft overhead = draft ms / iteration ms, 0..1 (cpp/include/tensorrt_llm/executor/types.h ``SpecDecodingStats``
lines 311–314 @ a98a9061d72f6fd39f5d055ebdd2c6878a100e2c; tensorrt_llm/_torch/pyexecutor/py_executor.py
``_update_iter_stats`` @ 9521caf4696c1fb79b0f946f0d980f8f0ebd3e64); over iterations Σ draft ms / Σ iteration ms.
"""

from __future__ import annotations

import math

from specviz.servers.readers.checks import TelemetryError, _fraction, _json, _milliseconds, _now, _number, _with
from specviz.servers.readers.prometheus import _no_spec, _prometheus_counters, _series, prometheus_samples
from specviz.servers.telemetry import Telemetry, combine

_TRTLLM_OVERHEAD = "trtllm_spec_decode_draft_overhead"


def read_trtllm(text: str, *, k: int | None = None, now: float | None = None) -> Telemetry:
    """JSON: the iterations summed, overhead weighted by ``iterLatencyMS``; Prometheus: counters, gauges averaged.

    Raises TelemetryError naming the field for an overhead outside 0..1 or a negative or infinite ``iterLatencyMS``.
    """
    if text.lstrip()[:1] not in ("[", "{"):
        samples = prometheus_samples(text)
        groups = _prometheus_counters(
            [(n.replace("trtllm_spec_decode_", "trtllm:spec_decode_"), lb, v) for n, lb, v in samples],
            "trtllm:",
            "trtllm",
            _now(now),
            lambda lb: "",
        )
        if not groups:
            raise _no_spec("trtllm", samples)
        lengths = [v for n, _, v in samples if n == "trtllm_spec_decode_acceptance_length" and math.isfinite(v)]
        overheads = [
            _fraction(v, "TensorRT-LLM /metrics", _series(n, lb)) for n, lb, v in samples if n == _TRTLLM_OVERHEAD
        ]
        return _with(
            groups[""],
            k=k,
            mean_acceptance_length=lengths[0] if lengths else None,
            draft_overhead=sum(overheads) / len(overheads) if overheads else None,
        )
    what = "TensorRT-LLM /metrics"
    data = _json(text, what)
    stats = data if isinstance(data, list) else [data]
    readings = []
    for i, it in enumerate(stats):
        spec = it.get("specDecodingStats") if isinstance(it, dict) else None
        if not isinstance(spec, dict) or not spec.get("numDraftTokens"):
            continue

        def count(name: str, i=i, spec=spec) -> float:
            return _number(spec.get(name, 0), what, f"[{i}].specDecodingStats.{name}")

        overhead = spec.get("draftOverhead")
        latency = it.get("iterLatencyMS")
        readings.append(
            Telemetry(
                stack="trtllm",
                k=k,
                end=_now(now),
                drafts=count("numRequestsWithDraftTokens") or None,
                draft_tokens=count("numDraftTokens"),
                accepted_tokens=count("numAcceptedTokens"),
                cumulative=False,
                draft_overhead=(
                    None if overhead is None else _fraction(overhead, what, f"[{i}].specDecodingStats.draftOverhead")
                ),
                iteration_ms=None if latency is None else _milliseconds(latency, what, f"[{i}].iterLatencyMS"),
            )
        )
    if not readings:
        if not any(isinstance(it, dict) and "iter" in it for it in stats):
            raise TelemetryError("TensorRT-LLM /metrics: the JSON is not a list of iteration stats")
        raise TelemetryError(
            "TensorRT-LLM /metrics: no iteration with specDecodingStats.numDraftTokens > 0 since the last call (speculation off, idle, or enable_iter_perf_stats not set)"
        )
    return combine(readings)

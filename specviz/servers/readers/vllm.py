"""vLLM V1 ``/metrics`` → one cumulative reading, summed over its data-parallel engines or one of them.

Counters (vllm/v1/spec_decode/metrics.py): ``vllm:spec_decode_num_drafts_total``,
``…_num_draft_tokens_total``, ``…_num_accepted_tokens_total``,
``…_num_accepted_tokens_per_pos_total{position="i"}`` (i from 0: drafts that accepted ≥ i + 1 tokens)
and ``vllm:generation_tokens_total``; labels ``model_name`` and ``engine``, in any order.
"""

from __future__ import annotations

from specviz.servers.readers.checks import TelemetryError, _now
from specviz.servers.readers.prometheus import _no_spec, _prometheus_counters, prometheus_samples
from specviz.servers.telemetry import Telemetry, combine


def _engine(labels: dict[str, str]) -> str:
    return labels.get("engine", "")


def vllm_engines(text: str) -> list[str]:
    """The ``engine`` label values of a vLLM /metrics body that carry spec-decode counters."""
    return sorted(_prometheus_counters(prometheus_samples(text), "vllm:", "vllm", 0.0, _engine))


def read_vllm(text: str, *, engine_index: str | None = None, now: float | None = None) -> Telemetry:
    """Counters since the server started, summed over engines, or only ``engine_index``'s (its ``engine`` label)."""
    samples = prometheus_samples(text)
    groups = _prometheus_counters(samples, "vllm:", "vllm", _now(now), _engine)
    if not groups:
        raise _no_spec("vllm", samples)
    if engine_index is not None:
        if engine_index not in groups:
            raise TelemetryError(
                "vLLM /metrics: engine {index!r} not found; engines: {engines}",
                index=engine_index,
                engines=sorted(groups),
            )
        return groups[engine_index]
    return combine(list(groups.values())) if len(groups) > 1 else next(iter(groups.values()))

"""Which serving stack served a ``/metrics`` body, and the reader that turns it into a reading."""

from __future__ import annotations

from collections.abc import Callable

from specviz.servers.readers.checks import TelemetryError, _json, _with
from specviz.servers.readers.llamacpp import read_llamacpp
from specviz.servers.readers.prometheus import detect_stack_from_names, prometheus_samples
from specviz.servers.readers.sglang import read_sglang
from specviz.servers.readers.trtllm import read_trtllm
from specviz.servers.readers.vllm import read_vllm
from specviz.servers.telemetry import Telemetry

READERS: dict[str, Callable[..., Telemetry]] = {
    "vllm": read_vllm,
    "llamacpp": read_llamacpp,
    "sglang": read_sglang,
    "trtllm": read_trtllm,
}


def detect_stack(text: str) -> str:
    """The stack by its metric prefixes, or TensorRT-LLM's JSON; TelemetryError saying what the body looks like."""
    head = text.lstrip()[:1]
    if head in ("[", "{"):
        data = _json(text, "/metrics")
        items = data if isinstance(data, list) else [data]
        if any(isinstance(it, dict) and ("specDecodingStats" in it or "iterLatencyMS" in it) for it in items):
            return "trtllm"
        raise TelemetryError("/metrics: JSON, but not TensorRT-LLM iteration stats")
    return detect_stack_from_names({n for n, _, _ in prometheus_samples(text)})


def read_metrics(text: str, stack: str = "auto", *, k: int | None = None, now: float | None = None) -> Telemetry:
    """Any stack's /metrics body → Telemetry (``stack="auto"``: detected); ``k`` where the stack is silent."""
    kind = detect_stack(text) if stack == "auto" else stack
    if kind not in READERS:
        raise TelemetryError(
            "serving stack {engine!r} is not one of {allowed}", engine=stack, allowed=", ".join(["auto", *READERS])
        )
    t = READERS[kind](text, k=k, now=now) if kind == "trtllm" else READERS[kind](text, now=now)
    return t if t.k or not k else _with(t, k=k)

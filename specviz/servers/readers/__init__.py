"""One reader per serving stack's endpoint body → one Telemetry; every failure a :class:`TelemetryError`."""

from specviz.servers.readers.checks import MAX_MODEL, TelemetryError
from specviz.servers.readers.detect import READERS, detect_stack, read_metrics
from specviz.servers.readers.llamacpp import read_llamacpp, read_llamacpp_timings
from specviz.servers.readers.prometheus import (
    GENERATED,
    MAX_LINE,
    MAX_POSITION,
    MAX_SERIES,
    PER_POSITION,
    SPEC_COUNTERS,
    detect_stack_from_names,
    prometheus_samples,
)
from specviz.servers.readers.sglang import read_sglang, read_sglang_server_info, sglang_rate_meaning
from specviz.servers.readers.trtllm import read_trtllm
from specviz.servers.readers.vllm import read_vllm, vllm_engines

__all__ = [
    "GENERATED",
    "MAX_LINE",
    "MAX_MODEL",
    "MAX_POSITION",
    "MAX_SERIES",
    "PER_POSITION",
    "READERS",
    "SPEC_COUNTERS",
    "TelemetryError",
    "detect_stack",
    "detect_stack_from_names",
    "prometheus_samples",
    "read_llamacpp",
    "read_llamacpp_timings",
    "read_metrics",
    "read_sglang",
    "read_sglang_server_info",
    "read_trtllm",
    "read_vllm",
    "sglang_rate_meaning",
    "vllm_engines",
]

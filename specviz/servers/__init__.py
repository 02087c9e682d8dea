"""The serving stacks users run (vLLM, SGLang, llama.cpp, TensorRT-LLM), read live."""

from specviz.servers.readers import (
    READERS,
    TelemetryError,
    detect_stack,
    read_llamacpp,
    read_llamacpp_timings,
    read_metrics,
    read_sglang,
    read_sglang_server_info,
    read_trtllm,
    read_vllm,
    vllm_engines,
)
from specviz.servers.telemetry import STACKS, Telemetry, Window, combine, to_record, window, window_over

__all__ = [
    "READERS",
    "STACKS",
    "Telemetry",
    "TelemetryError",
    "Window",
    "combine",
    "detect_stack",
    "read_llamacpp",
    "read_llamacpp_timings",
    "read_metrics",
    "read_sglang",
    "read_sglang_server_info",
    "read_trtllm",
    "read_vllm",
    "to_record",
    "vllm_engines",
    "window",
    "window_over",
]

"""The serving stacks users run (vLLM, SGLang, llama.cpp, TensorRT-LLM), read live."""

from specviz.servers.readers import (
    READERS,
    TelemetryError,
    detect_engine,
    read_llamacpp,
    read_llamacpp_timings,
    read_metrics,
    read_sglang,
    read_sglang_server_info,
    read_trtllm,
    read_vllm,
    vllm_engines,
)
from specviz.servers.telemetry import ENGINES, Telemetry, Window, combine, to_record, window, window_over

__all__ = [
    "ENGINES",
    "READERS",
    "Telemetry",
    "TelemetryError",
    "Window",
    "combine",
    "detect_engine",
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

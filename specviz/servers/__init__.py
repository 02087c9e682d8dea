"""The engines users run (vLLM, SGLang, llama.cpp, TensorRT-LLM), read live. No streamlit here.

- :mod:`~specviz.servers.readers`: one reader per endpoint body → :class:`Telemetry`;
  :func:`detect_engine`, :func:`read_metrics`.
- :mod:`~specviz.servers.telemetry`: :class:`Telemetry`, :func:`window` (two readings → the
  deltas and the chapter's metrics), :func:`combine`, :func:`to_record` (a row of the
  measurement schema).
- :mod:`~specviz.servers.fetch`: fetching a user-typed URL within the hosted allow-list, with
  timeouts, redirect checks and a size cap.
- :mod:`~specviz.servers.loadgen`: a bounded load generator for OpenAI-compatible servers.
- :mod:`~specviz.servers.llamacpp`: starting a local llama.cpp server on our exported pair.
"""

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

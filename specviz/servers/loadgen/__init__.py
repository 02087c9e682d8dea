"""A bounded load generator for OpenAI-compatible servers, measuring what serving benchmarks measure."""

from specviz.servers.loadgen.record import load_record, measured_speedup
from specviz.servers.loadgen.results import (
    COLUMNS,
    ERRORS_KEPT,
    STOP_REASONS,
    LoadProgress,
    LoadResult,
    Percentiles,
    percentiles,
    summarize,
    tpot,
)
from specviz.servers.loadgen.runner import run_load
from specviz.servers.loadgen.spec import (
    LIMITS,
    RATE_RANGE,
    TEMPERATURE_RANGE,
    LoadSpec,
    arrival_times,
    bundled_prompts,
    padded_prompts,
    parse_rate,
)
from specviz.servers.loadgen.stream import completion_counts, completions_url, metrics_url, payload

__all__ = [
    "COLUMNS",
    "ERRORS_KEPT",
    "LIMITS",
    "RATE_RANGE",
    "STOP_REASONS",
    "TEMPERATURE_RANGE",
    "LoadProgress",
    "LoadResult",
    "LoadSpec",
    "Percentiles",
    "arrival_times",
    "bundled_prompts",
    "completion_counts",
    "completions_url",
    "load_record",
    "measured_speedup",
    "metrics_url",
    "padded_prompts",
    "parse_rate",
    "payload",
    "percentiles",
    "run_load",
    "summarize",
    "tpot",
]

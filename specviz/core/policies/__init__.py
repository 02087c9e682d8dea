"""Draft-length policies: how many tokens to draft each round, replayed on traces.

A policy decides token by token "draft one more, or stop" from q(x_i), the draft's probability of
its token at position i, and q_top, its top-1 probability; a stateful one also reads past rounds.
``rules`` holds the engines' rules, ``traces`` what a run saw, ``replay`` the policies run on traces.
"""

from __future__ import annotations

from specviz.core.policies.replay import SWEEPS, Replay, compare, replay, sweep
from specviz.core.policies.rules import (
    Policy,
    Schedule,
    constant,
    hf_confidence,
    hf_heuristic,
    llamacpp_pmin,
    oracle,
    oracle_speedup,
    specdecpp,
    vllm_by_batch,
    while_proposing,
)
from specviz.core.policies.traces import (
    MAX_TRACE_BYTES,
    MAX_TRACE_K,
    MAX_TRACE_ROUNDS,
    TRACE_FORMAT,
    Trace,
    concat,
    load_trace,
    parse_trace,
    save_trace,
    synthetic_trace,
    trace_text,
)

__all__ = [
    "MAX_TRACE_BYTES",
    "MAX_TRACE_K",
    "MAX_TRACE_ROUNDS",
    "SWEEPS",
    "TRACE_FORMAT",
    "Policy",
    "Replay",
    "Schedule",
    "Trace",
    "compare",
    "concat",
    "constant",
    "hf_confidence",
    "hf_heuristic",
    "llamacpp_pmin",
    "load_trace",
    "oracle",
    "oracle_speedup",
    "parse_trace",
    "replay",
    "save_trace",
    "specdecpp",
    "sweep",
    "synthetic_trace",
    "trace_text",
    "vllm_by_batch",
    "while_proposing",
]

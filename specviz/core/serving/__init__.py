"""Serving under load: traffic and service levels to TTFT, TPOT, throughput and the best K.

Metrics as ``vllm bench serve`` (vllm/benchmarks/serve.py, ``calculate_metrics``): TPOT = (E2E − TTFT) /
(output tokens − 1); ITL the gap between streamed chunks (≠ TPOT: a round's tokens come in one chunk).
Model (docs/design.md, "Serving under load"): μ(n) = min(n, cap) / (R·t(n)), R = E[G − 1] / E[N];
:func:`steady_state` solves it for Poisson λ or N users. It predicts means, not p90/p99.
"""

from specviz.core.serving.cost import gpu_price, usd_per_million_tokens
from specviz.core.serving.grid import (
    GRID_POINTS,
    PREFILL,
    CostGrid,
    Option,
    batch_cap,
    chain_options,
    cost_grid,
    grid_from_steps,
    prefill_seconds,
    round_seconds,
    tree_option,
)
from specviz.core.serving.queue import PREFILL_TAIL, TAIL_LEVELS, steady_state
from specviz.core.serving.simulate import open_loop_point, simulate_batching
from specviz.core.serving.sla import (
    best_by_load,
    gpus_needed,
    k_by_batch,
    max_rate,
    speculation_stops_paying,
    stops_paying_rate,
)
from specviz.core.serving.slots import (
    KV_LAYOUTS,
    SLOT_STACKS,
    lru_free_slot,
    lru_slot_layouts,
    run_lengths,
    scattered_steps,
)
from specviz.core.serving.traffic import (
    MAX_LENGTH,
    MAX_USERS,
    MIN_OUTPUT,
    MODES,
    Lengths,
    decode_context,
    mean_tokens_over_context,
)

__all__ = [
    "GRID_POINTS",
    "KV_LAYOUTS",
    "MAX_LENGTH",
    "MAX_USERS",
    "MIN_OUTPUT",
    "MODES",
    "PREFILL",
    "PREFILL_TAIL",
    "SLOT_STACKS",
    "TAIL_LEVELS",
    "CostGrid",
    "Lengths",
    "Option",
    "batch_cap",
    "best_by_load",
    "chain_options",
    "cost_grid",
    "decode_context",
    "gpu_price",
    "gpus_needed",
    "grid_from_steps",
    "k_by_batch",
    "lru_free_slot",
    "lru_slot_layouts",
    "max_rate",
    "mean_tokens_over_context",
    "open_loop_point",
    "prefill_seconds",
    "round_seconds",
    "run_lengths",
    "scattered_steps",
    "simulate_batching",
    "speculation_stops_paying",
    "steady_state",
    "stops_paying_rate",
    "tree_option",
    "usd_per_million_tokens",
]

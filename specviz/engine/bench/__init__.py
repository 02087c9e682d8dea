"""Sweeps over K (or draft trees) and temperature → rows in the measurement schema (``python -m specviz bench``)."""

from specviz.engine.bench.batched import BatchCell, batch_cell, batch_cells, batch_sweep
from specviz.engine.bench.cell import (
    PILOT,
    Progress,
    Run,
    Stopped,
    aggregate,
    mean_context,
    measure_runs,
    pilot_p,
    pilot_rounds,
    run_cell,
    tree_columns,
)
from specviz.engine.bench.engines import (
    ENGINES,
    compile_seconds,
    engine_columns,
    hardware_name,
    run_columns,
    warm_up,
    with_engine,
)
from specviz.engine.bench.loop import sweep
from specviz.engine.bench.prompts import PROMPTS_FILE, distinct_ngram_ratio, load_prompts, text_quality

__all__ = [
    "ENGINES",
    "PILOT",
    "PROMPTS_FILE",
    "BatchCell",
    "Progress",
    "Run",
    "Stopped",
    "aggregate",
    "batch_cell",
    "batch_cells",
    "batch_sweep",
    "compile_seconds",
    "distinct_ngram_ratio",
    "engine_columns",
    "hardware_name",
    "load_prompts",
    "mean_context",
    "measure_runs",
    "pilot_p",
    "pilot_rounds",
    "run_cell",
    "run_columns",
    "sweep",
    "text_quality",
    "tree_columns",
    "warm_up",
    "with_engine",
]

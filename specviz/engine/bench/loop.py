"""The sweep over (K or tree, temperature) cells behind ``python -m specviz bench`` and the live page."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np
import pandas as pd
import torch

from specviz.base.i18n import Message
from specviz.core import theory, trees
from specviz.engine import decoding
from specviz.engine.bench import cell
from specviz.engine.bench.cell import Progress, Run, aggregate, mean_context, pilot_p
from specviz.engine.bench.engines import compile_seconds, engine_columns, run_columns, warm_up, with_engine


def sweep(
    target,
    draft,
    tokenizer,
    prompts: list[str],
    ks: Iterable[int | str | trees.Tree],
    temperatures: Iterable[float],
    new_tokens: int,
    repeats: int,
    seed: int = 0,
    meta: dict | None = None,
    on_run: Callable[[], None] | None = None,
    on_row: Callable[[dict, list[Run]], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    tree_p=None,
    on_pilot: Callable[[float, np.ndarray], None] | None = None,
    engine: str = "eager",
) -> pd.DataFrame:
    """Run every (K or tree, temperature) cell; rows in the measurement schema.

    ``engine``: :data:`ENGINES` (compile time in ``compile_s``). ``ks`` entries: K, a Tree, or a shape
    ("optimal:16,6") built from ``tree_p`` or a :func:`pilot_p` run. ``on_row``, ``on_run`` and
    ``on_progress`` report as cells finish. Raises ValueError for bad K, temperature, repeats or prompts.
    """
    ks = [k if isinstance(k, (trees.Tree, str)) else int(theory.check_k(k)) for k in ks]
    temperatures = [float(t) for t in temperatures]
    if not ks:
        raise Message("a sweep needs at least one draft length K or tree")
    given_p = None if tree_p is None else trees.check_p(tree_p)
    sizes = [trees.parse_shape(k, [0.5]).drafts if isinstance(k, str) else getattr(k, "drafts", k) for k in ks]
    if any(t < 0 for t in temperatures):
        raise Message("temperature must be >= 0; got {temperatures}", temperatures=temperatures)
    if repeats < 1:
        raise Message("repeats must be >= 1; got {repeats}", repeats=repeats)
    encoded = [torch.tensor(tokenizer.encode(p), dtype=torch.long) for p in prompts]
    for i, p in enumerate(encoded):  # every cell must fit before the first one runs
        try:
            decoding.check_inputs([target, draft], p, new_tokens, max(temperatures), max(sizes))
        except ValueError as exc:
            raise Message("prompt {i}: {cause}", i=i + 1, cause=exc) from None
    target, draft = with_engine(target, draft, engine)
    compiled_s = compile_seconds(target, draft)  # the first cell's compile_s includes this warm-up's
    warm_up(target, draft, encoded[0])
    base = {"batch_size": 1, **run_columns(target, "specviz bench", meta)}
    cells = [(k, t) for t in temperatures for k in ks]
    per_cell = len(encoded) * repeats
    pilots: dict[float, np.ndarray] = {}

    def shape(k, t: float):
        if not isinstance(k, str):
            return k
        p = given_p
        if p is None and trees.shape_needs_p(k):
            if t not in pilots:
                pilots[t] = pilot_p(target, draft, encoded, t, new_tokens, seed)
                if on_pilot is not None:
                    on_pilot(t, pilots[t])
            p = pilots[t]
        return trees.parse_shape(k, p)

    rows = []
    for i, (k, t) in enumerate(cells, start=1):
        k = shape(k, t)
        drafts = k.drafts if isinstance(k, trees.Tree) else k
        on_start, on_end = _progress_callbacks(on_progress, on_run, Progress(i, len(cells), 0, per_cell, drafts, t, 0))
        if engine == "compiled" and on_progress is not None:
            on_progress(Progress(i, len(cells), 0, per_cell, drafts, t, (i - 1) * per_cell, compiling=True))
        warm_up(target, draft, encoded[0], k, t)
        compile_s, compiled_s = compile_seconds(target, draft) - compiled_s, compile_seconds(target, draft)
        runs = cell.measure_runs(
            target, draft, encoded, k, t, new_tokens, repeats, seed, on_end, should_stop, on_start=on_start
        )
        row = {
            **base,
            **aggregate(runs, k, t, new_tokens),
            "context_length": mean_context(encoded, new_tokens),
            **engine_columns(target, draft, compile_s),
        }
        rows.append(row)
        if on_row is not None:
            on_row(row, runs)
    return pd.DataFrame(rows)


def _progress_callbacks(
    on_progress: Callable[[Progress], None] | None, on_run: Callable[[], None] | None, cell: Progress
) -> tuple[Callable[[int], None], Callable[[int], None]]:
    """``measure_runs``' ``(on_start, on_run)`` for the cell placed by ``cell`` (its ``run`` and ``done`` ignored)."""
    before = (cell.cell - 1) * cell.runs  # runs of the earlier cells

    def on_start(j: int) -> None:
        if on_progress is not None:
            on_progress(replace(cell, run=j, done=before + j - 1))

    def on_end(j: int) -> None:
        if on_run is not None:
            on_run()
        if on_progress is not None and cell.cell == cell.cells and j == cell.runs:
            on_progress(replace(cell, run=j, done=cell.total))

    return on_start, on_end

"""Sweeps over K (or draft trees) and temperature → rows in the measurement schema (``python -m specviz bench``).

For every (K, temperature) cell, each prompt and each repeat runs the target-only
baseline and then speculative decoding on the same prompt; the cell's row pools
the rounds of all its runs. A cell may hold a draft tree (:mod:`specviz.core.trees`) instead of K:
it then runs :func:`specviz.engine.decoding.tree_generate`, and its row adds the tree, its depth, the
positional acceptance p̂ measured from its rounds and the tokens per round F(T) predicts at p̂.
The same :func:`run_cell` serves the CLI and the live page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from specviz.base import machine
from specviz.base.i18n import Message
from specviz.base.paths import DATA
from specviz.core import acceptance, theory, trees
from specviz.engine import decoding
from specviz.engine.models import compiled

PROMPTS_FILE = DATA / "prompts" / "stdlib_validation.jsonl"


def load_prompts(path: str | Path = PROMPTS_FILE) -> list[str]:
    """Prompts from a JSON-lines file (one object with a ``text`` field per line) or plain text.

    A plain-text file holds one prompt per block, blocks separated by a line with
    only ``---``.
    """
    path = Path(path)
    if not path.is_file():
        raise Message("prompts file {path!r} does not exist", path=str(path))
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        prompts = [json.loads(line)["text"] for line in text.splitlines() if line.strip()]
    else:
        prompts = [block.strip("\n") for block in text.split("\n---\n")]
    prompts = [p for p in prompts if p.strip()]
    if not prompts:
        raise Message("prompts file {path!r} holds no prompt", path=str(path))
    return prompts


def hardware_name(device: torch.device) -> str:
    """GPU name on CUDA, else the CPU model and core count."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"{props.name} ({props.total_memory / 2**30:.0f} GiB)"
    return f"{machine.cpu_name()} (CPU)"


def warm_up(target, draft, prompt: torch.Tensor, k: int | trees.Tree = 2, temperature: float = 0.0) -> None:
    """One short target-only and speculative run (a chain of K, or the tree) at ``temperature`` so that
    first-call costs, compiling a compiled engine's steps among them, stay out of the timings: a greedy
    round and a sampled one run different compiled calls (docs/engine.md), so a cell warms up at its own
    temperature (draws from a generator of its own, seeded)."""
    generator = torch.Generator(prompt.device).manual_seed(0) if temperature > 0 else None
    decoding.generate_target_only(target, prompt, 8, temperature, generator)
    if isinstance(k, trees.Tree):
        decoding.tree_generate(target, draft, prompt, k, temperature, 8, generator)
    else:
        decoding.speculative_generate(target, draft, prompt, k, temperature, 8, generator)


ENGINES = ("eager", "compiled")  #: how the bundled GPT's steps run (docs/engine.md)


def with_engine(target, draft, engine: str):
    """The pair as ``engine`` runs it: the models themselves (eager), or with compiled decode steps
    (:func:`specviz.engine.models.compiled.compile_steps`; models without a shape-static step stay eager)."""
    if engine not in ENGINES:
        raise Message("engine must be one of {allowed}; got {engine!r}", allowed=list(ENGINES), engine=engine)
    if engine == "eager":
        return compiled.eager(target), compiled.eager(draft)
    return compiled.compile_steps(target), compiled.compile_steps(draft)


def compile_seconds(*models) -> float:
    """Seconds the models' compiled steps have spent compiling so far (0 for eager models)."""
    return sum(sum(m.compile_s.values()) for m in models if isinstance(m, compiled.CompiledGPT))


def engine_columns(target, draft, compile_s: float) -> dict:
    """A row's engine columns: ``compiled`` (every step of both models ran compiled) and ``compile_s``;
    a fallback to eager is stated in ``notes``."""
    wrapped = [m for m in (target, draft) if isinstance(m, compiled.CompiledGPT)]
    fallback = next((m.fallback for m in wrapped if m.fallback), None)
    out = {"compiled": len(wrapped) == 2 and fallback is None, "compile_s": compile_s}
    if wrapped and (fallback or len(wrapped) < 2):
        out["notes"] = f"compiled engine ran eagerly: {fallback or 'a model without a shape-static step'}"
    return out


def distinct_ngram_ratio(tokens: list[int], n: int = 4) -> float:
    """Share of a sequence's n-grams that are distinct: |{t[i:i+n]}| / (len(t) − n + 1).

    1 when no n-gram repeats; a model stuck in a loop (128 spaces, "and and and") scores near 0.
    Raises ValueError for a sequence shorter than ``n``.
    """
    count = len(tokens) - n + 1
    if n < 1 or count < 1:
        raise ValueError(f"distinct n-grams need n >= 1 and at least n tokens; got n={n}, {len(tokens)} tokens")
    return len({tuple(tokens[i : i + n]) for i in range(count)}) / count


def text_quality(target, prompts: list[torch.Tensor], new_tokens: int = 128, n: int = 4) -> dict:
    """Greedy continuations of ``prompts`` by ``target`` (KV-cached target-only decoding) and their
    mean :func:`distinct_ngram_ratio`: does the model write text, or loop?

    A model with a short context continues by at most half of it, from the end of each prompt.
    """
    new_tokens = min(new_tokens, target.context_length // 2)
    keep = target.context_length - new_tokens - 1  # prompt tokens that fit (the engine keeps one position spare)
    ratios = [
        distinct_ngram_ratio(decoding.generate_target_only(target, p[-keep:], new_tokens, 0.0)[0].tolist(), n)
        for p in prompts
    ]
    return {
        f"distinct_{n}gram_ratio": round(float(np.mean(ratios)), 4),
        f"min_distinct_{n}gram_ratio": round(min(ratios), 4),
        "prompts": len(prompts),
        "new_tokens": new_tokens,
    }


class Stopped(Exception):
    """Raised between runs when ``should_stop()`` says so (wall-time cap, Stop button)."""


@dataclass(frozen=True)
class Progress:
    """Where a sweep stands: cell ``cell`` of ``cells``, run ``run`` of ``runs`` in that cell (1-based).

    :func:`sweep` reports one before each run starts (``done`` = runs finished before it) and one
    after its last run (``done == total``), so a caller needs no knowledge of the loop order.
    """

    cell: int  #: the cell running, 1..cells
    cells: int  #: (K, temperature) cells in the sweep
    run: int  #: the run within the cell, 1..runs
    runs: int  #: runs per cell = prompts × repeats
    k: int  #: the cell's draft length K
    temperature: float  #: the cell's temperature
    done: int  #: runs finished in the whole sweep, 0..total
    compiling: bool = False  #: the cell's decode steps are being compiled (before its first run)

    @property
    def total(self) -> int:
        """Runs in the whole sweep: cells × runs."""
        return self.cells * self.runs

    @property
    def fraction(self) -> float:
        """Share of the sweep's runs finished: done / total, in [0, 1]."""
        return self.done / self.total


@dataclass(frozen=True)
class Run:
    """One prompt × repeat of a cell: the target-only baseline and the speculative run, seeded alike."""

    prompt_index: int
    repeat: int
    baseline: decoding.GenerationStats
    speculative: decoding.GenerationStats
    baseline_tokens: torch.Tensor  # (new_tokens,)
    speculative_tokens: torch.Tensor  # (new_tokens,)

    @property
    def exact(self) -> bool:
        """The two outputs are identical token for token (required at T = 0)."""
        return torch.equal(self.baseline_tokens, self.speculative_tokens)


def measure_runs(
    target,
    draft,
    prompts: list[torch.Tensor],
    k: int | trees.Tree,
    temperature: float,
    new_tokens: int,
    repeats: int,
    seed: int = 0,
    on_run: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> list[Run]:
    """Every prompt × repeat of one (K, temperature) cell; ``k`` a :class:`~specviz.core.trees.Tree` drafts that tree.

    Each run decodes the prompt target-only and speculatively with generators seeded identically
    (``seed + 1000·prompt + repeat``). ``should_stop()`` is asked before each run and raises
    :class:`Stopped`; then ``on_start(i)`` is called as run i (1-based) starts and ``on_run(i)``
    after it ends (progress; both outside the timed regions).
    """
    device = target.device
    runs: list[Run] = []
    for pi, prompt in enumerate(prompts):
        for r in range(repeats):
            if should_stop is not None and should_stop():
                raise Stopped(f"stopped after {len(runs)} run(s) of the cell K = {k}, T = {temperature:g}")
            if on_start is not None:
                on_start(len(runs) + 1)
            s = seed + 1000 * pi + r
            base, b_stats = decoding.generate_target_only(
                target, prompt, new_tokens, temperature, torch.Generator(device).manual_seed(s)
            )
            g = torch.Generator(device).manual_seed(s)
            if isinstance(k, trees.Tree):
                spec, s_stats = decoding.tree_generate(target, draft, prompt, k, temperature, new_tokens, g)
            else:
                spec, s_stats = decoding.speculative_generate(target, draft, prompt, k, temperature, new_tokens, g)
            runs.append(Run(pi, r, b_stats, s_stats, base, spec))
            if on_run is not None:
                on_run(len(runs))
    return runs


def run_cell(
    target,
    draft,
    prompts: list[torch.Tensor],
    k: int | trees.Tree,
    temperature: float,
    new_tokens: int,
    repeats: int,
    seed: int = 0,
    on_run: Callable[[int], None] | None = None,
) -> dict:
    """Measure one (K or tree, temperature) cell over every prompt × repeat; return its aggregated row."""
    row = aggregate(
        measure_runs(target, draft, prompts, k, temperature, new_tokens, repeats, seed, on_run),
        k,
        temperature,
        new_tokens,
    )
    return row | {"context_length": mean_context(prompts, new_tokens)}


def mean_context(prompts: list[torch.Tensor], new_tokens: int) -> float:
    """The mean decode context of a cell: mean prompt tokens + new_tokens / 2 (acceptance.request_context)."""
    return float(acceptance.request_context(np.mean([len(p) for p in prompts]), new_tokens))


def aggregate(measured: list[Run], k: int | trees.Tree, temperature: float, new_tokens: int) -> dict:
    """Pool the rounds of all runs of a cell into one measurement row (see measurements.COLUMNS).

    A tree cell's row has K = the tree's drafts and adds ``tree`` (its shape), ``tree_depth``,
    ``tree_p`` (p̂ from the pooled rounds) and ``predicted_tokens_per_round`` (F(T) at p̂)."""
    tree = k if isinstance(k, trees.Tree) else None
    k = tree.drafts if tree is not None else k
    runs = [(m.baseline, m.speculative, m.exact) for m in measured]
    rounds = [r for _, s, _ in runs for r in s.rounds]
    pooled = decoding.GenerationStats(
        tree=tree,
        k=k,
        temperature=temperature,
        new_tokens=new_tokens,
        decode_s=1.0,
        prefill_ms=0.0,
        rounds=rounds,
        t_target_ms=float(np.median([b.t_target_ms for b, _, _ in runs])),
        t_draft_ms=float(np.median([s.t_draft_ms for _, s, _ in runs])),
        t_verify_ms=float(np.median([s.t_verify_ms for _, s, _ in runs])),
    )
    speedups = np.array([s.tokens_per_s / b.tokens_per_s for b, s, _ in runs])
    # each run against the measured-cost prediction from its own α̂, c, v, o (speedup is nonlinear in α,
    # so the median of per-run speedups is not the prediction at the pooled α̂ when prompts differ)
    per_run = np.array(
        [sp / s.predicted_speedup(measured_cost=True) for sp, (_, s, _) in zip(speedups, runs, strict=True)]
    )
    alpha = pooled.alpha_hat
    return {
        "k": k,
        "temperature": temperature,
        "alpha": alpha,
        "alpha_overlap": min(1.0, pooled.alpha_overlap),  # Σ min(p, q) can exceed 1 by rounding
        "mean_accepted_tokens": pooled.mean_tokens,
        "acceptance_rate": pooled.accepted_total / (len(rounds) * k),
        "per_position_acceptance": ";".join(f"{a:.4f}" for a in pooled.per_position_acceptance),
        "c": pooled.c,
        "t_target_ms": pooled.t_target_ms,
        "t_draft_ms": pooled.t_draft_ms,
        "t_verify_ms": pooled.t_verify_ms,
        "v": pooled.v,
        "o": pooled.o,
        "speedup": float(np.median(speedups)),
        "speedup_min": float(speedups.min()),
        "speedup_max": float(speedups.max()),
        "tokens_per_s": float(np.median([s.tokens_per_s for _, s, _ in runs])),
        "baseline_tokens_per_s": float(np.median([b.tokens_per_s for b, _, _ in runs])),
        "predicted_speedup_basic": pooled.predicted_speedup(),
        "predicted_speedup_measured_cost": pooled.predicted_speedup(measured_cost=True),
        "speedup_vs_predicted": float(np.median(per_run)),
        "runs": len(runs),
        "rounds": len(rounds),
        "new_tokens": new_tokens,
        "greedy_exact": all(same for _, _, same in runs) if temperature == 0 else None,
        **(tree_columns(pooled) if tree is not None else {}),
    }


PILOT = trees.independent_chains(8, 4)  #: the probe a pilot run drafts: ranks 1..8 at the root, rank 1 below


def pilot_rounds(
    target, draft, prompts: list[torch.Tensor], temperature: float, new_tokens: int, seed: int = 0
) -> list[decoding.RoundRecord]:
    """The rounds of one :data:`PILOT` run per prompt, seeded apart from the measured runs
    (``seed + 1000·prompt + 999``), so a shape built from them is judged on runs that did not pick it."""
    rounds = []
    for i, prompt in enumerate(prompts):
        g = torch.Generator(target.device).manual_seed(seed + 1000 * i + 999)
        _, stats = decoding.tree_generate(target, draft, prompt, PILOT, temperature, new_tokens, g, calibration_steps=0)
        rounds += stats.rounds
    return rounds


def pilot_p(
    target, draft, prompts: list[torch.Tensor], temperature: float, new_tokens: int, seed: int = 0
) -> np.ndarray:
    """Positional acceptance p̂ (8,) from the :func:`pilot_rounds` (ranks never reached: 0)."""
    rounds = pilot_rounds(target, draft, prompts, temperature, new_tokens, seed)
    return np.nan_to_num(trees.positional_acceptance(PILOT, rounds))


def tree_columns(stats: decoding.GenerationStats) -> dict:
    """A tree cell's extra columns: its shape, depth, the measured p̂ and F(T) at p̂ (tokens per round)."""
    return {
        "tree": stats.tree.describe(),
        "tree_depth": stats.tree.depth,
        "tree_p": ";".join(f"{x:.4f}" for x in stats.tree_p),
        "predicted_tokens_per_round": stats.predicted_tokens,
    }


def run_columns(target, source: str, meta: dict | None = None) -> dict:
    """The constant columns of a run's measurement rows: device, dtype, torch version, hardware,
    method and source, then ``meta`` (label, model names, …)."""
    return {
        "device": str(target.device),
        "dtype": str(target.dtype).removeprefix("torch."),
        "torch_version": torch.__version__,
        "hardware": hardware_name(target.device),
        "method": "draft model",
        "source": source,
        **(meta or {}),
    }


BatchCell = tuple[int, int, float]  #: (batch size B, draft length K, temperature)


def batch_cells(batches: Iterable[int], temperatures: Iterable[float], ks: Iterable[int]) -> list[BatchCell]:
    """The cells of a batched sweep in the order they run: batch size, then temperature, then K."""
    return [(b, k, t) for b in batches for t in temperatures for k in ks]


def batch_sweep(
    target,
    draft,
    prompts: list[torch.Tensor],
    cells: list[BatchCell],
    new_tokens: int,
    repeats: int,
    seed: int,
    base: dict,
    before_cell: Callable[[int, BatchCell], bool] = lambda i, cell: True,
):
    """The batched sweep of ``python -m specviz bench --batch-size`` and the live page: one warm-up, then
    each cell's measurement row (``base`` and :func:`batch_cell`), yielded as ``(cell, row)``.

    ``before_cell(i, cell)`` is asked before cell i is decoded; False ends the sweep there (the live
    page's Stop and wall-time cap), so no cell is measured after a stop is asked for.
    """
    warm_up(target, draft, prompts[0])
    for i, (b, k, t) in enumerate(cells):
        if not before_cell(i, (b, k, t)):
            return
        yield (b, k, t), {**base, **batch_cell(target, draft, prompts, k, t, new_tokens, b, repeats, seed)}


def batch_cell(
    target,
    draft,
    prompts: list[torch.Tensor],
    k: int,
    temperature: float,
    new_tokens: int,
    batch: int,
    repeats: int = 1,
    seed: int = 0,
) -> dict:
    """One (K, temperature) cell decoded ``batch`` sequences at a time: a measurement row.

    The batch cycles through ``prompts`` (row i decodes prompt i mod n). Each repeat decodes the batch
    target-only (:func:`decoding.generate_target_only_batch`) and speculatively
    (:func:`decoding.speculative_generate_batch`) with generators seeded alike; the speedup is the
    ratio of their tokens/s over the whole batch (median over repeats). α̂, E[N] and per-position
    acceptance pool every row's rounds. c, v and o are not measured here (a batched draft step is not
    timed apart), so the row has no model prediction.
    """
    rows = [prompts[i % len(prompts)] for i in range(batch)]
    device, speedups, spec_rates, base_rates, exact, rounds = target.device, [], [], [], True, []
    for r in range(repeats):
        base, base_s = decoding.generate_target_only_batch(
            target, rows, new_tokens, temperature, torch.Generator(device).manual_seed(seed + r)
        )
        spec, stats = decoding.speculative_generate_batch(
            target, draft, rows, k, temperature, new_tokens, torch.Generator(device).manual_seed(seed + r)
        )
        base_rates.append(batch * new_tokens / base_s)
        spec_rates.append(batch * new_tokens / stats[0].decode_s)
        speedups.append(spec_rates[-1] / base_rates[-1])
        exact = exact and torch.equal(base, spec)
        rounds += [rd for st in stats for rd in st.rounds]
    pooled = decoding.GenerationStats(
        k=k,
        temperature=temperature,
        new_tokens=new_tokens,
        decode_s=1.0,
        prefill_ms=0.0,
        t_target_ms=float("nan"),
        rounds=rounds,
    )
    return {
        "batch_size": batch,
        "k": k,
        "temperature": temperature,
        "alpha": pooled.alpha_hat,
        "alpha_overlap": min(1.0, pooled.alpha_overlap),
        "mean_accepted_tokens": pooled.mean_tokens,
        "acceptance_rate": pooled.accepted_total / (len(rounds) * k),
        "per_position_acceptance": ";".join(f"{a:.4f}" for a in pooled.per_position_acceptance),
        "speedup": float(np.median(speedups)),
        "speedup_min": float(min(speedups)),
        "speedup_max": float(max(speedups)),
        "tokens_per_s": float(np.median(spec_rates)),
        "baseline_tokens_per_s": float(np.median(base_rates)),
        "runs": repeats,
        "rounds": len(rounds),
        "context_length": mean_context(rows, new_tokens),
        "new_tokens": new_tokens,
        "greedy_exact": exact if temperature == 0 else None,
    }


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
    """Run every (K, temperature) cell; rows in the measurement schema.

    ``engine`` is ``"eager"`` or ``"compiled"`` (:func:`with_engine`). Each cell first warms up its own
    shapes, outside the timings; under the compiled engine that compiles them, and the row's
    ``compile_s`` says how long that took (0 once every shape is compiled).

    An entry of ``ks`` may be a draft tree: a :class:`~specviz.core.trees.Tree`, or a shape as
    :func:`specviz.core.trees.parse_shape` reads it ("optimal:16,6"). A shape built from p (top-k,
    optimal) is built at each temperature from ``tree_p`` or, without one, from the p̂ of a
    :func:`pilot_p` run at that temperature (reported to ``on_pilot(temperature, p̂)``).
    :func:`aggregate` names a tree cell's extra columns.

    ``meta`` adds constant columns (label, target_model, …). ``on_row(row, runs)`` is called
    with each finished row and its runs, so a caller that is interrupted (KeyboardInterrupt,
    :class:`Stopped` from ``should_stop``) keeps what finished. ``on_run()`` is called after
    each run; ``on_progress(p)`` with a :class:`Progress` before each run and after the last.
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
        runs = measure_runs(
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
    """``measure_runs``' ``(on_start, on_run)`` for one cell: :class:`Progress` before run j and after the last run.

    ``cell`` gives the cell's place in the sweep (its ``run`` and ``done`` are ignored).
    """
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

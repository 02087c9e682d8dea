"""One (K or tree, temperature) cell: its runs, target-only against speculative, pooled into one row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from specviz.core import acceptance, trees
from specviz.engine import decoding


class Stopped(Exception):
    """Raised between runs when ``should_stop()`` says so (wall-time cap, Stop button)."""


@dataclass(frozen=True)
class Progress:
    """Where a sweep stands: cell ``cell`` of ``cells``, run ``run`` of ``runs`` (1-based), ``done`` runs finished."""

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
    """Every prompt × repeat of one (K or tree, temperature) cell, target-only and speculative, seeded alike.

    Seed ``seed + 1000·prompt + repeat``. ``should_stop()`` before each run raises :class:`Stopped`;
    ``on_start(i)`` and ``on_run(i)`` (1-based) bracket run i outside the timed regions.
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
    """Pool a cell's rounds into one measurement row; a tree cell adds tree, tree_depth, tree_p and F(T) at p̂."""
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
    """The rounds of one :data:`PILOT` run per prompt, seeded ``seed + 1000·prompt + 999``."""
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

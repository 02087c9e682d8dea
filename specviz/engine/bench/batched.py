"""Batched cells: B sequences decoded at once, one row per (B, K, temperature)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch

from specviz.engine import decoding
from specviz.engine.bench.cell import mean_context
from specviz.engine.bench.engines import warm_up

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
    """One warm-up, then ``(cell, base | batch_cell(...))`` per cell; ``before_cell(i, cell)`` False stops."""
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
    """One (K, temperature) cell at ``batch`` rows (row i: prompt i mod n); speedup of batch tokens/s, median over
    repeats.

    α̂, E[N] and per-position acceptance pool every row's rounds; c, v, o are not measured.
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

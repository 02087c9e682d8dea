"""Where a speculative round's time goes, and whether the measured-cost model adds it up, on any device.

Run from the repository root::

    python benchmarks/round_costs.py                          # the bundled pair on the CPU
    python benchmarks/round_costs.py --device cuda --dtype float16

For each (temperature, K) it decodes every prompt target-only and speculatively (``run_cell``'s
runs) and prints, in milliseconds:

- ``T_p``, ``T_q``: the calibration steps (median single-token target and draft forwards, each
  synchronised) that the cost model divides by; ``base``: the target-only loop's wall time per
  token (the denominator of the measured speedup);
- ``round``: the speculative loop's wall time per round, and its parts from the round records:
  ``draft`` (K draft forwards), ``verify`` (the target forward over K + 1), ``other`` (the
  acceptance rule and the cursor update), and ``gap`` = round − (draft + verify + other);
- ``rule`` and ``commit``: ``other`` split in two by timing :func:`verify_step` and
  :func:`commit_step` alone on the last round's tensors (median of 50, synchronised);
- the measured speedup (target-only tokens/s ÷ speculative tokens/s), the measured-cost prediction
  E[N] / (1 + v·K + o + K/c) and their ratio.

Check: measured / predicted within ±15 % in every cell (the cost model is only useful if the
costs it is given add up to the loop's time). On the CPU this holds; on CUDA it did not on
2026-11-30 (docs/performance.md, GPU), which this breakdown exists to explain.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np
import torch
from _report import machine_line, record, summary

from specviz.engine import bench
from specviz.engine.decoding import chain, records
from specviz.engine.models import load_pair

TOL = 0.15


def _sync_ms(fn, device: torch.device, repeats: int = 50) -> float:
    """Median wall time of ``fn()`` in ms, the device synchronised before and after each call."""
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def rule_and_commit_ms(target, draft, prompt: torch.Tensor, k: int, temperature: float) -> tuple[float, float]:
    """The two halves of ``other_ms`` timed alone: the acceptance rule and the cursor update, on one round's tensors."""
    device = target.device
    sampler = records.Sampler(temperature, torch.Generator(device).manual_seed(0))
    prompt = prompt.to(device)
    for m in (target, draft):
        records._prefill(m, prompt)
    cursor = chain.Cursor.after_prefill(prompt)
    proposal = chain.draft_step(draft, cursor, k, sampler)
    p = chain.target_probs(target, cursor, proposal, sampler)  # (K+1, V)
    verdict = chain.verify_step(p, proposal, sampler)
    rule = _sync_ms(lambda: chain.verify_step(p, proposal, sampler), device)
    commit = _sync_ms(lambda: chain.commit_step(cursor, proposal, verdict), device)
    return rule, commit


def cell(target, draft, prompts: list[torch.Tensor], k: int, temperature: float, new_tokens: int) -> dict:
    """One (K, T) cell: the calibration costs, the loop's wall time per round and its recorded parts."""
    runs = bench.measure_runs(target, draft, prompts, k, temperature, new_tokens, repeats=1)
    spec = [r.speculative for r in runs]
    rounds = [x for s in spec for x in s.rounds]
    base_tps = np.median([r.baseline.tokens_per_s for r in runs])
    spec_tps = np.median([s.tokens_per_s for s in spec])
    row = bench.aggregate(runs, k, temperature, new_tokens)
    rule, commit = rule_and_commit_ms(target, draft, prompts[0], k, temperature)
    parts = {n: float(np.mean([getattr(x, f"{n}_ms") for x in rounds])) for n in ("draft", "verify", "other")}
    round_ms = 1e3 * sum(s.decode_s for s in spec) / len(rounds)
    return {
        "T": temperature,
        "K": k,
        "T_p": float(np.median([s.t_target_ms for s in spec])),
        "T_q": float(np.median([s.t_draft_ms for s in spec])),
        "base": float(np.median([1e3 * r.baseline.decode_s / r.baseline.new_tokens for r in runs])),
        "round": round_ms,
        **parts,
        "gap": round_ms - sum(parts.values()),
        "rule": rule,
        "commit": commit,
        "c": row["c"],
        "v": row["v"],
        "o": row["o"],
        "measured": float(spec_tps / base_tps),
        "predicted": row["predicted_speedup_measured_cost"],
    }


def attention_probe(device: torch.device, dtype: torch.dtype) -> list[tuple[int, float, float]]:
    """Per-call time of the cached attention (6 heads × 64, keys 200 … 231) at a key length never seen
    before and at the same length repeated, for a query of 1 token (no mask) and of 2 (a boolean mask).

    Returns [(query length, ms at a new key length, ms repeated)]: a backend that plans per shape
    (cuDNN's) pays at each new length, which a decode loop meets every step.
    """
    out = []
    for t in (1, 2):
        new, same = [], []
        for length in range(200, 232):
            q = torch.randn(1, 6, t, 64, device=device, dtype=dtype)
            kv = torch.randn(1, 6, length, 64, device=device, dtype=dtype)
            mask = None if t == 1 else torch.ones(t, length, dtype=torch.bool, device=device).tril(length - t)
            call = functools.partial(torch.nn.functional.scaled_dot_product_attention, q, kv, kv, attn_mask=mask)
            new.append(_sync_ms(call, device, repeats=1))
            same.append(_sync_ms(call, device, repeats=5))
        out.append((t, statistics.median(new), statistics.median(same)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="bundled")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, help="float32, float16 or bfloat16 (default: the pair's)")
    ap.add_argument("--ks", default="1,4")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--prompts", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument(
        "--cudnn-attention",
        action="store_true",
        help="let attention use cuDNN's backend again (load_pair turns it off on CUDA), to see what it costs",
    )
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    dtype = getattr(torch, args.dtype) if args.dtype else None
    target, draft, tok = load_pair(args.pair, device=args.device, dtype=dtype)
    prompts = [torch.tensor(tok.encode(p), dtype=torch.long) for p in bench.load_prompts()[: args.prompts]]
    if args.cudnn_attention:
        torch.backends.cuda.enable_cudnn_sdp(True)
    bench.warm_up(target, draft, prompts[0].to(target.device))
    where = f"device {args.device}, dtype {args.dtype or 'default'}"
    if target.device.type == "cuda":
        where += f", cuDNN attention {'on' if torch.backends.cuda.cudnn_sdp_enabled() else 'off'}"
    print(machine_line(where))
    for t, new, same in attention_probe(target.device, next(target.parameters()).dtype):
        print(f"attention, query of {t}: {new:.3f} ms at a new key length, {same:.3f} ms repeated")
    cols = ["T", "K", "T_p", "T_q", "base", "round", "draft", "verify", "other", "gap", "rule", "commit"]
    cols += ["c", "v", "o", "measured", "predicted"]
    print(" ".join(f"{c:>8}" for c in cols))
    worst = 0.0
    for temperature in (float(x) for x in args.temperatures.split(",")):
        for k in (int(x) for x in args.ks.split(",")):
            row = cell(target, draft, prompts, k, temperature, args.new_tokens)
            print(" ".join(f"{row[c]:8.3f}" for c in cols))
            worst = max(worst, abs(row["measured"] / row["predicted"] - 1.0))
    record("measured / predicted speedup, every cell", f"worst {worst:.1%}", f"within ±{TOL:.0%}", worst <= TOL)
    return summary(t_start)


if __name__ == "__main__":
    raise SystemExit(main())

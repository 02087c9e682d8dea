"""Draft-length policies (specviz.core.policies): replay speed against a per-round loop, and the live engine's
overhead of running a policy, with PASS/FAIL.

Run from the repository root::

    python benchmarks/policy_bench.py
    python benchmarks/policy_bench.py --rounds 100000 --new-tokens 32   # smoke run

1. Replay: a synthetic trace of ``--rounds`` (1e6) rounds × K_max = 16 (α = 0.8, calibrated
   confidences) through every rule, against the same rule as a plain Python loop over rounds (each
   round scanning its positions until the rule stops), on the first 1e5 rounds, same run. Targets:
   >= 1e6 rounds/s and >= 30× the loop for every rule replayed in one vectorised pass. transformers'
   heuristic schedule cannot be: each round's K depends on the last round's outcome, so it replays
   as a scalar walk, reported without a target.
2. Live overhead: the bundled pair, greedy, K = 4, 4 prompts × ``--new-tokens``: the engine with
   ``policy=constant(4)`` (token-by-token drafting, asking the rule after each token) against the
   default path (``policy=None``): ms per round of each prompt run back to back with both, 7 repeats
   in alternating order, the median of the paired ratios. Target: <= 5 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import torch
from _report import machine_line, record, summary

from specviz.core import policies as P
from specviz.engine import bench, decoding
from specviz.engine.models import load_pair

T0 = time.perf_counter()
RULES = {
    "constant K = 4": P.constant(4),
    "HF confidence 0.4": P.hf_confidence(0.4, 16),
    "llama.cpp p_min 0.75": P.llamacpp_pmin(0.75, 16),
    "llama.cpp p_min 0.75 (drop)": P.llamacpp_pmin(0.75, 16, n_min=2, keep_crossing=False),
    "SpecDec++ 0.7": P.specdecpp(0.7, 16),
    "oracle": P.oracle(),
    "HF heuristic": P.hf_heuristic(),
}


def loop_replay(policy: P.Policy, trace: P.Trace, c: float) -> float:
    """The same replay as nested Python loops: per round, scan positions until the rule stops."""
    tokens = cost = 0.0
    q, top, acc = trace.q_token.tolist(), trace.q_top.tolist(), trace.accepted.tolist()
    budget = min(policy.params.get("start", policy.params.get("k", trace.k_max)), trace.k_max)
    for r in range(trace.rounds):
        k = steps = 0
        if policy.kind == "oracle":
            k = steps = acc[r]
        else:
            for i in range(min(budget, trace.k_max)):
                steps += 1
                decision = policy.stop_here(q[r][: i + 1], top[r][: i + 1])
                if decision == "drop":
                    break
                k += 1
                if decision == "keep":
                    break
        if k < policy.min_drafts():
            k = 0
        got = min(k, acc[r])
        if policy.stateful:
            budget = min(budget + 2, trace.k_max) if got == k else max(1, budget - 1)
        tokens += got + 1
        cost += 1.0 + steps / c  # v = o = 0: a verify forward and a plain step both cost one target step
    return tokens / cost


def replay_speed(rounds: int) -> None:
    trace = P.synthetic_trace(0.8, 16, rounds, np.random.default_rng(0))
    small = P.Trace(trace.q_token[:100_000], trace.q_top[:100_000], trace.accepted[:100_000])
    print(f"\nreplay: {rounds:,} rounds × K_max = 16 (α = 0.8, calibrated confidences); loop on 100,000 rounds")
    for name, policy in RULES.items():
        t = time.perf_counter()
        fast = P.replay(policy, trace, c=10)
        dt = time.perf_counter() - t
        t = time.perf_counter()
        slow = loop_replay(policy, small, c=10)
        dl = (time.perf_counter() - t) * rounds / small.rounds  # scaled to the same number of rounds
        same = abs(P.replay(policy, small, c=10).speedup - slow) < 1e-9
        rate = rounds / dt
        print(
            f"  {name:<28} {rate:>12,.0f} rounds/s   loop {rounds / dl:>10,.0f} rounds/s   {dl / dt:>6.0f}×   S {fast.speedup:.3f}"
        )
        if policy.stateful:
            record(f"{name}: scalar walk (sequential rule)", f"{rate:,.0f} rounds/s", "(reported)", None)
        else:
            record(f"{name}: replay rate", f"{rate:,.0f} rounds/s", ">= 1,000,000", rate >= 1e6)
            record(f"{name}: vs per-round loop", f"{dl / dt:.0f}×", ">= 30×", dl / dt >= 30)
        record(f"{name}: same S as the loop", "equal" if same else f"{slow:.6f}", "equal", same)


def live_overhead(new_tokens: int) -> None:
    target, draft, tok = load_pair("bundled")
    prompts = [torch.tensor(tok.encode(t), dtype=torch.long) for t in bench.load_prompts()[:4]]
    bench.warm_up(target, draft, prompts[0])

    def ms_per_round(policy, prompt) -> float:
        _, stats = decoding.speculative_generate(target, draft, prompt, 4, 0.0, new_tokens, policy=policy)
        return 1e3 * stats.decode_s / len(stats.rounds)

    ratios, base, live = [], [], []
    for rep in range(7):  # pairs run back to back, in alternating order, so drift hits both alike
        for p in prompts:
            order = (None, P.constant(4)) if rep % 2 == 0 else (P.constant(4), None)
            times = {policy is None: ms_per_round(policy, p) for policy in order}
            base.append(times[True])
            live.append(times[False])
            ratios.append(times[False] / times[True])
    r = statistics.median(ratios)
    print(
        f"\nlive: K = 4, {len(prompts)} prompts × {new_tokens} tokens × 7: default {statistics.median(base):.3f} "
        f"ms/round, constant(4) policy {statistics.median(live):.3f} ms/round; median paired ratio {r:.3f}"
    )
    record("live policy overhead per round", f"{r - 1:+.1%}", "<= 5 %", r - 1 <= 0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1_000_000)
    parser.add_argument("--new-tokens", type=int, default=128)
    args = parser.parse_args()
    print(machine_line(f"torch {torch.__version__}, {torch.get_num_threads()} threads"))
    replay_speed(args.rounds)
    live_overhead(args.new_tokens)
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())

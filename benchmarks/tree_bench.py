"""Draft trees (specviz.core.trees, decoding.tree_generate): the DP's speed, and measured tokens against F(T), with PASS/FAIL.

Run from the repository root::

    python benchmarks/tree_bench.py                    # both parts, the bundled pair (about 10 min, 2 cores)
    python benchmarks/tree_bench.py --dp-only          # part 1 only (seconds)
    python benchmarks/tree_bench.py --prompts 2 --new-tokens 24 --temperatures 0   # smoke run

1. ``trees.optimal_tree_table`` for budgets up to 128, depth 10 and an 8-rank positional acceptance p
   (one DP pass, vectorised over the split of nodes between a child's subtree and the rest), against
   the same recurrence as nested Python loops, in the same run. Targets: <= 0.2 s and >= 20× the
   loops, with the same F in every cell. And the DP's optimal tree against the best of *every* tree
   of 1..7 drafts (depth 1, 2 and unbounded), enumerated: the same F.

2. Measured against predicted, on the bundled pair, at each temperature (default 0 and 1):

   a. p̂ from a pilot run (``bench.PILOT``: 8 chains × 4 from the root, seeded apart from the
      measured runs): pooled over depths (the positional model) and by depth (a depth-dependent fit).
   b. shapes built from the pooled p̂: the chain at the best K (the chain model's pick at the measured
      costs), and at each budget 4, 8, 16, 32 the chain of that many drafts, the best independent
      chains, the best top-k tree (EAGLE-2 / SGLang, depth ≤ 10) and Sequoia's optimal tree (depth ≤ 16,
      so never below the chain in F), plus
      ``trees.best_tree_for_hardware``'s pick from the measured draft step and verify forwards.
   c. every shape runs ``bench.run_cell`` (per prompt a target-only run and a tree run, same seed):
      measured tokens per round against F(T) at the pooled and the by-depth p̂, ms per round and the
      speedup over target-only decoding.

   Targets (greedy): measured tokens/round within ±10 % of F(T) at the pooled p̂ for every shape;
   the optimal tree's tokens/round >= 1.15× the chain's at the same budget (verify size). Reported,
   not judged: the same at T = 1, which shape wins on wall-clock and whether
   ``best_tree_for_hardware`` picked it.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch
from _report import machine_line, median_time, record, summary

from specviz.core import trees
from specviz.engine import bench, calibrate
from specviz.engine.models import load_pair

T0 = time.perf_counter()
P = [0.5, 0.15, 0.08, 0.05, 0.03, 0.02, 0.01, 0.01]
BUDGET, DEPTH = 128, 10


def direct(p: list[float], max_nodes: int, max_depth: int) -> list[list[float]]:
    """best[m][d] by the recurrence, one cell and one split at a time."""
    bmax = len(p)
    t = [
        [[1.0 if b == 0 else -1.0 for b in range(bmax + 1)] for _ in range(max_depth + 1)] for _ in range(max_nodes + 1)
    ]
    best = [[1.0] * (max_depth + 1) for _ in range(max_nodes + 1)]
    for d in range(1, max_depth + 1):
        for m in range(2, max_nodes + 1):
            for b in range(1, bmax + 1):
                t[m][d][b] = max(t[y][d][b - 1] + p[b - 1] * best[m - y][d - 1] for y in range(1, m))
            best[m][d] = max(t[m][d])
    return best


def all_trees(budget: int) -> set[frozenset]:
    """Every tree of ``budget`` drafts as a set of rank paths (prefix-closed; each node's ranks 1..m, no gaps)."""
    trees_ = {frozenset()}
    for _ in range(budget):
        trees_ = {
            frozenset({*t, (*parent, sum(q[:-1] == parent for q in t) + 1)}) for t in trees_ for parent in [(), *t]
        }
    return trees_


def brute_force() -> None:
    """Part 1b: the DP's optimal tree against the best of every tree, budgets 1..7, depths 1, 2 and unbounded."""
    worst, count = 0.0, 0
    for budget in range(1, 8):
        shapes = all_trees(budget)
        count += len(shapes)
        for depth in (1, 2, budget):
            best = max(1 + sum(np.prod([P[r - 1] for r in q]) for q in t) for t in shapes if max(map(len, t)) <= depth)
            got = trees.expected_tokens(trees.optimal_tree(P, budget, depth), P)
            worst = max(worst, abs(got - best))
    print(f"  brute force: {count} trees of 1..7 drafts; largest |F(DP) − F(best)| = {worst:.1e}")
    record(
        "optimal tree = brute-force best, budgets 1..7", f"{count} trees, |ΔF| ≤ {worst:.0e}", "equal", worst < 1e-12
    )


def dp_speed() -> None:
    """Part 1: the DP table against the direct recurrence."""
    print(f"p = {P}; budgets 1..{BUDGET}, depths 1..{DEPTH}")
    t_dp, _ = median_time(lambda: trees.optimal_tree_table(P, range(1, BUDGET + 1), DEPTH), repeats=5, warmup=1)
    t0 = time.perf_counter()
    slow = direct(P, BUDGET + 1, DEPTH)
    t_direct = time.perf_counter() - t0
    table = trees.optimal_tree_table(P, range(1, BUDGET + 1), DEPTH)
    want = np.array([slow[b + 1][d] for b, d in zip(table.budget, table.depth, strict=True)])
    same = np.allclose(table.expected_tokens.to_numpy(), want, rtol=1e-12)
    print(f"  optimal_tree_table: {t_dp * 1e3:.1f} ms (median of 5); direct loops: {t_direct * 1e3:.0f} ms")
    f = table.set_index(["budget", "depth"]).expected_tokens
    print(f"  F of the optimal tree: budget 16 → {f[(16, 10)]:.3f}, 32 → {f[(32, 10)]:.3f}, 128 → {f[(128, 10)]:.3f}")
    record("budget 128, depth 10 table", f"{t_dp * 1e3:.1f} ms", "<= 200 ms", t_dp <= 0.2)
    record("vs direct recurrence", f"{t_direct / t_dp:.0f}×", ">= 20×", t_direct / t_dp >= 20)
    record("same F in every cell", f"{len(table)} cells", "all equal", bool(same))


BUDGETS, MAX_DEPTH = (4, 8, 16, 32), 16  # the deepest tree drafted (the top-k tree: 10, as EAGLE-2 caps it)


def pilot(target, draft, prompts, temperature: float, new_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """(pooled p̂ (8,), by-depth p̂ (4, 8)) from bench's pilot rounds (ranks never reached: 0)."""
    rounds = bench.pilot_rounds(target, draft, prompts, temperature, new_tokens)
    pooled = np.nan_to_num(trees.positional_acceptance(bench.PILOT, rounds))
    return pooled, np.nan_to_num(trees.positional_acceptance(bench.PILOT, rounds, by_depth=True))


def verify_table(target, context: int) -> dict[int, float]:
    """Measured seconds of one target forward over n = 1..33 tokens after ``context`` cached positions."""
    return {n: calibrate.forward_seconds(target, 1, n, context, repeats=7) for n in range(1, max(BUDGETS) + 2)}


def shapes(p: np.ndarray, t_draft: float, t_verify: dict[int, float]) -> dict[str, trees.Tree]:
    """Every shape of part 2b, by name, built from p."""

    def chain_speedup(k: int) -> float:
        return trees.expected_tokens(trees.chain(k), p) * t_verify[1] / (k * t_draft + t_verify[k + 1])

    best_k = max(range(1, 17), key=chain_speedup)
    out = {f"chain:{best_k} (best K)": trees.chain(best_k)}
    for b in BUDGETS:
        out[f"chain:{b}"] = trees.chain(b)
        n = max(
            (n for n in range(1, b + 1) if b % n == 0 and b // n <= MAX_DEPTH),
            key=lambda n: trees.expected_tokens(trees.independent_chains(n, b // n), p),
        )
        out[f"chains:{n},{b // n}"] = trees.independent_chains(n, b // n)
        tree, depth, topk = trees.best_topk(p, b, 10)
        out[f"topk:{depth},{topk},{b}"] = tree
        out[f"optimal:{b},{MAX_DEPTH}"] = trees.optimal_tree(p, b, MAX_DEPTH)
    pick, predicted = trees.best_tree_for_hardware(p, t_draft, t_verify.__getitem__, max(BUDGETS), MAX_DEPTH)
    out[f"hardware pick ({pick.describe()}, predicted {predicted:.2f}×)"] = pick
    return out


def measured(args) -> None:
    """Part 2: every shape on the bundled pair, measured against F(T)."""
    target, draft, tok = load_pair("bundled")
    prompts = [torch.tensor(tok.encode(t), dtype=torch.long) for t in bench.load_prompts()[: args.prompts]]
    bench.warm_up(target, draft, prompts[0])
    context = int(np.median([p.numel() for p in prompts]))
    t_verify = verify_table(target, context)
    t_draft = calibrate.forward_seconds(draft, 1, 1, context, repeats=15)
    print(
        f"\nmeasured forwards at context {context}: draft step {t_draft * 1e3:.2f} ms; target over n tokens: "
        + ", ".join(f"{n}: {t_verify[n] * 1e3:.2f}" for n in (1, 2, 5, 9, 17, 33))
        + " ms"
    )
    for temperature in args.temperatures:
        p, by_depth = pilot(target, draft, prompts, temperature, args.new_tokens)
        print(f"\nT = {temperature:g}: pilot p̂ (pooled) = {np.round(p, 3).tolist()}")
        for d, row in enumerate(by_depth):
            print(f"  p̂ at depth {d} = {np.round(row, 3).tolist()}")
        print(
            f"  {'shape':<52} {'N':>3} {'D':>3} {'F pooled':>9} {'F depth':>8} {'measured':>9} "
            f"{'err':>7} {'ms/round':>9} {'speedup':>8}"
        )
        rows = {}
        for name, tree in shapes(p, t_draft, t_verify).items():
            row = bench.run_cell(target, draft, prompts, tree, temperature, args.new_tokens, 1)
            f_pooled, f_depth = trees.expected_tokens(tree, p), trees.expected_tokens(tree, by_depth)
            rows[name] = row | {"f": f_pooled, "f_depth": f_depth, "tree": tree}
            ms = float(row["tokens_per_s"]) and 1e3 * row["mean_accepted_tokens"] / row["tokens_per_s"]
            print(
                f"  {name:<52} {tree.drafts:>3} {tree.depth:>3} {f_pooled:>9.3f} {f_depth:>8.3f} "
                f"{row['mean_accepted_tokens']:>9.3f} {row['mean_accepted_tokens'] / f_pooled - 1:>+7.1%} "
                f"{ms:>9.2f} {row['speedup']:>7.2f}×"
            )
        judge(rows, temperature)


def judge(rows: dict[str, dict], temperature: float) -> None:
    """Part 2's checks for one temperature (greedy: PASS/FAIL; T > 0: reported as SKIP)."""
    greedy = temperature == 0
    at = f"T = {temperature:g}"
    worst = max(rows, key=lambda n: abs(rows[n]["mean_accepted_tokens"] / rows[n]["f"] - 1))
    err = rows[worst]["mean_accepted_tokens"] / rows[worst]["f"] - 1
    record(
        f"{at}: tokens/round vs F(T), worst shape",
        f"{err:+.1%} ({worst.split(' (')[0]})",
        "within ±10 %",
        abs(err) <= 0.10 if greedy else None,
    )
    worst_d = max(rows, key=lambda n: abs(rows[n]["mean_accepted_tokens"] / rows[n]["f_depth"] - 1))
    err_d = rows[worst_d]["mean_accepted_tokens"] / rows[worst_d]["f_depth"] - 1
    record(f"{at}: vs F(T) at the by-depth p̂, worst", f"{err_d:+.1%} ({worst_d.split(' (')[0]})", "(reported)", None)
    for b in BUDGETS:
        ratio = rows[f"optimal:{b},{MAX_DEPTH}"]["mean_accepted_tokens"] / rows[f"chain:{b}"]["mean_accepted_tokens"]
        record(
            f"{at}: optimal / chain tokens, budget {b}", f"{ratio:.2f}×", ">= 1.15×", ratio >= 1.15 if greedy else None
        )
    winner = max(rows, key=lambda n: rows[n]["speedup"])
    pick = next(n for n in rows if n.startswith("hardware pick"))
    record(f"{at}: wall-clock winner", f"{winner.split(' (')[0]} {rows[winner]['speedup']:.2f}×", "(reported)", None)
    share = rows[pick]["speedup"] / rows[winner]["speedup"]
    record(
        f"{at}: best_tree_for_hardware's pick",
        f"{rows[pick]['speedup']:.2f}× = {share:.0%} of the winner's",
        "(reported)",
        None,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dp-only", action="store_true", help="part 1 only")
    parser.add_argument("--prompts", type=int, default=8, help="bundled prompts per shape")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--temperatures", type=lambda s: [float(x) for x in s.split(",")], default=[0.0, 1.0])
    args = parser.parse_args()
    print(machine_line(f"torch {torch.__version__}, {torch.get_num_threads()} threads"))
    dp_speed()
    brute_force()
    if not args.dp_only:
        measured(args)
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())

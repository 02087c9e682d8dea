"""Speed of Sequoia's dynamic program (specviz.trees) against a direct Python implementation, with PASS/FAIL.

Run from the repository root::

    python benchmarks/tree_bench.py

``trees.optimal_tree_table`` for budgets up to 128, depth 10 and an 8-rank positional acceptance p
(one DP pass, vectorised over the split of nodes between a child's subtree and the rest), against the
same recurrence as nested Python loops, in the same run. Targets: <= 0.2 s and >= 20× the loops,
with the same F in every cell.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _report import machine_line, median_time, record, summary

from specviz import trees

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


def main() -> int:
    print(machine_line())
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
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())

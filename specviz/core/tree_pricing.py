"""A token tree priced on a pair and a GPU as a serving stack runs it (Sequoia's shape, the roofline's costs)."""

from __future__ import annotations

import numpy as np

from specviz.core import hardware, trees
from specviz.core.profiles import Efficiency


def level_costs(
    target: str, draft: str, gpu: str, batch: int, ctx: int, most: int, efficiency: Efficiency | None = None
) -> dict:
    """:func:`specviz.core.hardware.pair_costs` over n = 1..``most``: t_draft[n − 1] (draft_tokens = n, a level of
    n nodes), t_verify[n − 1] (verify_tokens = n + 1), t_target and o."""
    n = np.arange(1, most + 1)
    return hardware.pair_costs(
        target, draft, gpu, batch, ctx, 1, efficiency=efficiency, draft_tokens=n, verify_tokens=n + 1
    )


def priced_tree(p: np.ndarray, costs: dict, budget: int, depth: int) -> tuple[trees.Tree, float]:
    """The best tree for ``costs`` (:func:`level_costs`, shape by :func:`specviz.core.trees.best_tree_for_hardware`)
    and its speedup as an engine runs it: S = F·t_target / (Σ_l t_draft(w_(l−1)) + t_verify(n + 1) + o·t_target),
    one draft forward per level over its w_(l−1) parents; S ≤ 1 gives the root alone, S = 1."""
    t_target, t_draft, t_verify = float(costs["t_target"]), costs["t_draft"], costs["t_verify"]
    round_s = float(costs["o"]) * t_target

    def verify(m: int) -> float:
        return t_target if m == 1 else float(t_verify[m - 2]) + round_s

    tree, _ = trees.best_tree_for_hardware(p, float(t_draft[0]), verify, budget, depth)
    if tree.drafts == 0:
        return tree, 1.0
    widths = np.bincount(tree.depths)[: tree.depth]  # the nodes each draft forward extends
    cost = float(sum(t_draft[w - 1] for w in widths)) + verify(tree.drafts + 1)
    s = trees.expected_tokens(tree, p) * t_target / cost
    return (tree, s) if s > 1.0 else (trees.NO_TREE, 1.0)

"""A token tree priced on a pair and a GPU as an engine runs it (the Drafting strategies page's hardware view).

Sequoia's hardware-aware choice (:func:`specviz.core.trees.best_tree_for_hardware`) picks the tree's
shape; the costs of its draft and verify forwards come from the roofline with an engine profile
(:func:`specviz.core.hardware.pair_costs`).
"""

from __future__ import annotations

import numpy as np

from specviz.core import hardware, trees
from specviz.core.engines import Efficiency


def level_costs(
    target: str, draft: str, gpu: str, batch: int, ctx: int, most: int, efficiency: Efficiency | None = None
) -> dict:
    """:func:`specviz.core.hardware.pair_costs` for a forward over n = 1..``most`` tokens: t_draft[n − 1]
    (draft_tokens = n, a tree level of n nodes) and t_verify[n − 1] (verify_tokens = n + 1, a tree of
    n drafts and its root), with t_target and o of ``efficiency`` (None: the GPU's default)."""
    n = np.arange(1, most + 1)
    return hardware.pair_costs(
        target, draft, gpu, batch, ctx, 1, efficiency=efficiency, draft_tokens=n, verify_tokens=n + 1
    )


def priced_tree(p: np.ndarray, costs: dict, budget: int, depth: int) -> tuple[trees.Tree, float]:
    """The best tree for ``costs`` (:func:`level_costs`) and its speedup over target-only decoding.

    The shape is Sequoia's hardware-aware choice (:func:`specviz.core.trees.best_tree_for_hardware`)
    with a round of n drafts costing depth · t_draft(1) + t_verify(n + 1) + o·t_target. The chosen tree
    is then priced as an engine runs it: level l drafted by one forward over the w_(l−1) nodes at depth
    l − 1 (draft_tokens), all n + 1 nodes verified in one forward (verify_tokens):
    S = F · t_target / (Σ_l t_draft(w_(l−1)) + t_verify(n + 1) + o · t_target). Where S ≤ 1 the answer
    is not to speculate (the root alone, S = 1).
    """
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

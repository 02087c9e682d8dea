"""Token trees: tokens per round of a draft tree, and the best tree for a budget (Sequoia, arXiv 2402.12374).

Positional acceptance: at any node the target takes the draft's rank-r child with probability p_r
(disjoint, Σ p_r ≤ 1), so F(T) = Σ_u Π_{v on root→u} p_rank(v) with the root counting 1; a chain
of K drafts with p = (α,) gives E[N]. A budget n counts draft tokens and verifies n + 1 positions.
"""

from __future__ import annotations

from specviz.core.trees.acceptance import (
    check_p,
    check_p_by_depth,
    expected_tokens,
    geometric_p,
    path_probabilities,
    positional_acceptance,
    tokens_pmf,
)
from specviz.core.trees.inputs import MAX_SHAPE_DEPTH, p_from_measurements, parse_p, parse_shape, shape_needs_p
from specviz.core.trees.optimal import (
    best_topk,
    best_tree_for_hardware,
    optimal_tree,
    optimal_tree_table,
    shapes_by_budget,
)
from specviz.core.trees.shapes import chain, from_topk, independent_chains
from specviz.core.trees.tree import NO_TREE, Tree

__all__ = [
    "MAX_SHAPE_DEPTH",
    "NO_TREE",
    "Tree",
    "best_topk",
    "best_tree_for_hardware",
    "chain",
    "check_p",
    "check_p_by_depth",
    "expected_tokens",
    "from_topk",
    "geometric_p",
    "independent_chains",
    "optimal_tree",
    "optimal_tree_table",
    "p_from_measurements",
    "parse_p",
    "parse_shape",
    "path_probabilities",
    "positional_acceptance",
    "shape_needs_p",
    "shapes_by_budget",
    "tokens_pmf",
]

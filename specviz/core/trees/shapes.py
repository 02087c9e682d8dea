"""The tree shapes serving stacks draft: a chain, independent chains (SpecInfer), EAGLE-2 / SGLang top-k."""

from __future__ import annotations

from specviz.core import theory
from specviz.core.trees.acceptance import check_p
from specviz.core.trees.tree import Tree, _tree_of_paths


def chain(k: int) -> Tree:
    """K drafts in a line, rank 1 each."""
    k = int(theory.check_k(k))
    return Tree(tuple(range(-1, k)), (0, *([1] * k)))


def independent_chains(n: int, depth: int) -> Tree:
    """``n`` chains of ``depth`` drafts from the root (SpecInfer): root children ranks 1..n, then rank 1."""
    n, depth = int(theory.check_k(n, "n")), int(theory.check_k(depth, "depth"))
    parents, ranks = [-1], [0]
    for c in range(1, n + 1):
        prev = 0
        for d in range(depth):
            parents.append(prev)
            ranks.append(c if d == 0 else 1)
            prev = len(parents) - 1
    return Tree(tuple(parents), tuple(ranks))


def from_topk(depth: int, topk: int, budget: int, p) -> Tree:
    """EAGLE-2 / SGLang tree: top-``topk`` children of the kept nodes for ``depth`` levels, best ``budget`` paths kept.

    Ties: earlier level, lower rank. SGLang flags: num-steps = depth, eagle-topk = topk, num-draft-tokens = budget + 1.
    """
    depth, topk, budget = (int(theory.check_k(v, n)) for v, n in ((depth, "depth"), (topk, "topk"), (budget, "budget")))
    pp = check_p(p)
    # candidates: (path prob, level, rank path) grown level by level from the top-k frontier
    frontier, candidates = [((), 1.0)], []
    for level in range(1, depth + 1):
        grown = [
            (path + (r,), prob * (pp[r - 1] if r <= pp.size else 0.0))
            for path, prob in frontier
            for r in range(1, topk + 1)
        ]
        grown.sort(key=lambda c: (-c[1], c[0]))
        frontier = grown[:topk]  # EAGLE-2 expands the top-k of each level
        candidates += [(prob, level, path) for path, prob in grown]
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    kept: set[tuple[int, ...]] = set()
    for _, _, path in candidates:
        if len(kept) == budget:
            break
        if path[:-1] in kept or len(path) == 1:  # keep the tree connected
            kept.add(path)
    return _tree_of_paths(kept)

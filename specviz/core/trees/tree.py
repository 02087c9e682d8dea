"""A draft tree as parent and rank tuples, built from rank paths."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from specviz.base.i18n import Phrase


@dataclass(frozen=True)
class Tree:
    """A draft tree: ``parents[i]`` (root: node 0, parent −1) and ``ranks[i]`` among siblings (1 = likeliest)."""

    parents: tuple[int, ...]
    ranks: tuple[int, ...]
    name: str = field(default="", compare=False)  #: the shape it was built from, e.g. "optimal:16,6" (optional)

    def __post_init__(self):
        if not self.parents or self.parents[0] != -1 or self.ranks[0] != 0 or len(self.parents) != len(self.ranks):
            raise ValueError("a tree needs a root (node 0: parent −1, rank 0) and one rank per node")
        seen: dict[int, set[int]] = {}
        for i, (parent, rank) in enumerate(zip(self.parents[1:], self.ranks[1:], strict=True), start=1):
            if not 0 <= parent < i:
                raise ValueError(f"node {i}: parent {parent} must be an earlier node (0..{i - 1})")
            if rank < 1 or rank in seen.setdefault(parent, set()):
                raise ValueError(f"node {i}: rank {rank} must be >= 1 and distinct among node {parent}'s children")
            seen[parent].add(rank)

    def __len__(self) -> int:
        return len(self.parents)

    @property
    def drafts(self) -> int:
        """Draft tokens: the nodes but the root (the tree's budget)."""
        return len(self.parents) - 1

    @cached_property
    def depths(self) -> tuple[int, ...]:
        out = [0] * len(self.parents)
        for i in range(1, len(self.parents)):
            out[i] = out[self.parents[i]] + 1
        return tuple(out)

    @property
    def depth(self) -> int:
        """The longest root-to-leaf path in drafts (a chain of K has depth K)."""
        return max(self.depths)

    def children(self, node: int) -> list[int]:
        kids = [i for i, p in enumerate(self.parents) if p == node]
        return sorted(kids, key=lambda i: self.ranks[i])

    def paths(self) -> list[list[int]]:
        """Every root-to-leaf path as node indices."""
        leaves = [i for i in range(len(self)) if not self.children(i)]
        out = []
        for leaf in leaves:
            path = [leaf]
            while self.parents[path[-1]] != -1:
                path.append(self.parents[path[-1]])
            out.append(path[::-1])
        return out

    def layout(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) per node for drawing: y = −depth, x = the mean of its leaves' positions."""
        x = np.zeros(len(self))
        leaf = itertools.count()

        def place(node: int) -> float:
            kids = self.children(node)
            x[node] = next(leaf) if not kids else float(np.mean([place(k) for k in kids]))
            return x[node]

        place(0)
        return x, -np.asarray(self.depths, dtype=float)

    def describe(self) -> str:
        if self.name:
            return Phrase(
                "{name} ({drafts} drafts, depth {depth})", name=self.name, drafts=self.drafts, depth=self.depth
            )
        return Phrase("{drafts} drafts, depth {depth}", drafts=self.drafts, depth=self.depth)


NO_TREE = Tree((-1,), (0,))  #: the root alone: do not speculate (F = 1)


def _tree_of_paths(paths) -> Tree:
    """The tree whose non-root nodes are the rank paths ``paths`` (each prefix present), in level order."""
    order = sorted(paths, key=lambda q: (len(q), q))
    index = {(): 0}
    parents, ranks = [-1], [0]
    for q in order:
        index[q] = len(parents)
        parents.append(index[q[:-1]])
        ranks.append(q[-1])
    return Tree(tuple(parents), tuple(ranks))

"""Token trees: how many tokens a draft tree buys per round, and the best tree for a budget (Sequoia).

The positional acceptance model (Sequoia, arXiv 2402.12374): at any node, the target accepts the
child the draft ranked r-th with probability p_r, the events disjoint (Σ_r p_r ≤ 1), whatever the
depth. A tree's expected tokens per round is then

.. math::  F(T) = \\sum_{\\text{nodes } u} \\prod_{v \\text{ on the path root} \\to u} p_{\\text{rank}(v)}

with the root (the token every round emits: the correction or bonus) counting 1. A chain of K
drafts with p = (α,) gives F = (1 − α^{K+1}) / (1 − α) = E[N] (:func:`specviz.core.theory.expected_tokens`).

Budgets count draft tokens (the non-root nodes): a tree of budget n verifies n + 1 positions in one
target forward, as a chain of K = n does. numpy and pandas only.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.core import theory

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
    "positional_acceptance",
    "shape_needs_p",
    "shapes_by_budget",
    "tokens_pmf",
]


@dataclass(frozen=True)
class Tree:
    """A draft tree: ``parents[i]`` is node i's parent (−1 for the root, node 0) and ``ranks[i]`` its
    rank among its siblings (1 = the draft's likeliest; 0 for the root). Parents come before children."""

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
        """Each node's depth (the root 0)."""
        out = [0] * len(self.parents)
        for i in range(1, len(self.parents)):
            out[i] = out[self.parents[i]] + 1
        return tuple(out)

    @property
    def depth(self) -> int:
        """The longest root-to-leaf path, in draft tokens (a chain of K drafts has depth K)."""
        return max(self.depths)

    def children(self, node: int) -> list[int]:
        """Node's children, by rank."""
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
        """(x, y) per node for drawing: y = −depth, x = the mean of its leaves' positions (leaves 0, 1, …)."""
        x = np.zeros(len(self))
        leaf = itertools.count()

        def place(node: int) -> float:
            kids = self.children(node)
            x[node] = next(leaf) if not kids else float(np.mean([place(k) for k in kids]))
            return x[node]

        place(0)
        return x, -np.asarray(self.depths, dtype=float)

    def describe(self) -> str:
        """Short text: the shape's name (if any), size and depth, e.g. "optimal:16,6 (16 drafts, depth 5)"."""
        if self.name:
            return Phrase(
                "{name} ({drafts} drafts, depth {depth})", name=self.name, drafts=self.drafts, depth=self.depth
            )
        return Phrase("{drafts} drafts, depth {depth}", drafts=self.drafts, depth=self.depth)


NO_TREE = Tree((-1,), (0,))  #: the root alone: do not speculate (F = 1)


def check_p(p) -> np.ndarray:
    """Positional acceptance as a float array: each p_r in [0, 1], Σ p_r ≤ 1 (ValueError naming what is wrong)."""
    a = theory.check_alpha(np.atleast_1d(np.asarray(p, dtype=float)), "p")
    if a.ndim != 1 or a.size == 0:
        raise Message("p must be a non-empty vector p_1, p_2, …; got shape {shape}", shape=a.shape)
    if a.sum() > 1 + 1e-9:
        raise Message(
            "p must sum to at most 1 (the ranks' acceptances are disjoint); got sum {total:.6g}", total=a.sum()
        )
    return a


def check_p_by_depth(p) -> np.ndarray:
    """A depth-dependent profile (D, R): row d is the positional acceptance at nodes of depth d (the
    root's children are drawn at depth 0); each row as :func:`check_p` requires."""
    a = np.asarray(p, dtype=float)
    if a.ndim != 2 or a.shape[0] == 0:
        raise Message(
            "p by depth must be a (depth, ranks) table with at least one row; got shape {shape}", shape=a.shape
        )
    return np.stack([check_p(row) for row in a])


def path_probabilities(tree: Tree, p) -> np.ndarray:
    """Π p_rank along the path from the root to each node (the root 1; a rank beyond p gives 0).

    ``p`` is one profile (R,) for every depth, or a table (D, R) whose row d applies to the children of
    nodes at depth d (the last row to every deeper node): p_r(d) in place of p_r.
    """
    table = check_p_by_depth(p) if np.ndim(p) == 2 else check_p(p)[None, :]  # (D, R)
    out = np.ones(len(tree))
    for i in range(1, len(tree)):
        row = table[min(tree.depths[tree.parents[i]], len(table) - 1)]
        r = tree.ranks[i]
        out[i] = out[tree.parents[i]] * (row[r - 1] if r <= row.size else 0.0)
    return out


def expected_tokens(tree: Tree, p) -> float:
    """F(T): expected tokens per round of ``tree`` under positional acceptance ``p`` (module docstring;
    a (D, R) ``p`` makes the acceptance depend on depth, :func:`path_probabilities`)."""
    return float(path_probabilities(tree, p).sum())


def tokens_pmf(tree: Tree, p) -> np.ndarray:
    """P(N = n), n = 1..depth + 1: the distribution of tokens per round under the positional model.

    A round stops at node u (emitting depth(u) + 1 tokens) when it reaches u and the target takes
    none of u's children: P(stop at u) = P(reach u) · (1 − Σ_children p_rank). Sums to 1; its mean is F(T).
    """
    reach = path_probabilities(tree, p)  # (N,)
    taken = np.zeros(len(tree))
    for i in range(1, len(tree)):
        taken[tree.parents[i]] += reach[i] / reach[tree.parents[i]] if reach[tree.parents[i]] > 0 else 0.0
    pmf = np.zeros(tree.depth + 1)
    np.add.at(pmf, np.asarray(tree.depths), reach * (1.0 - taken))
    return pmf


# --------------------------------------------------------------------------------------
# shapes engines use
# --------------------------------------------------------------------------------------


def chain(k: int) -> Tree:
    """K drafts in a line (rank 1 each): the classic speculative round."""
    k = int(theory.check_k(k))
    return Tree(tuple(range(-1, k)), (0, *([1] * k)))


def independent_chains(n: int, depth: int) -> Tree:
    """``n`` chains of ``depth`` drafts from the root (SpecInfer): the root's children have ranks 1..n,
    each continues with rank-1 children."""
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
    """The EAGLE-2 / SGLang shape: expand every kept node's top-``topk`` children for ``depth`` levels,
    then keep the ``budget`` drafts with the largest path probability (ties: earlier level, lower rank).

    SGLang's ``--speculative-num-steps`` is depth, ``--speculative-eagle-topk`` topk and
    ``--speculative-num-draft-tokens`` budget + 1 (it counts the root).
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


# --------------------------------------------------------------------------------------
# Sequoia's dynamic program
# --------------------------------------------------------------------------------------


def _dp(p: np.ndarray, max_nodes: int, max_depth: int, with_arg: bool = True):
    """T[m, d, b]: the best F of a tree of at most m nodes (root included), depth ≤ d, the root with b
    children; best[m, d] = max over b. Children beyond len(p) are worthless (p = 0), so b ≤ len(p).

    T[m, d, 0] = 1;  T[m, d, b] = max_{1 ≤ y ≤ m−1} T[y, d, b−1] + p_b · best[m − y, d − 1]
    (the b-th child's subtree takes at most m − y nodes). Returns T, best and the argmax y (only
    ``with_arg``: a table of F needs no tree rebuilt, and a max is cheaper than an argmax).
    """
    bmax = p.size
    T = np.full((max_nodes + 1, max_depth + 1, bmax + 1), -np.inf)
    arg = np.zeros((max_nodes + 1, max_depth + 1, bmax + 1), dtype=np.int64)
    T[1:, :, 0] = 1.0
    best = np.full((max_nodes + 1, max_depth + 1), 1.0)  # row 0 is never a real subtree (penalised below)
    # every (m, y) split at once: a max-plus convolution per (depth, b) over an (m, y) grid
    y = np.arange(1, max_nodes + 1)[None, :]  # (1, M): nodes kept for the root and its first b − 1 children
    rest = np.arange(max_nodes + 1)[:, None] - y  # (M + 1, M): nodes left for the b-th child's subtree
    penalty = np.where(rest < 1, -np.inf, 0.0)  # splits that leave the subtree no node
    rest = np.maximum(rest, 1)
    rows = np.arange(max_nodes + 1)
    value = np.empty(penalty.shape)  # (M + 1, M), reused
    for d in range(1, max_depth + 1):
        subtree = best[:, d - 1][rest]  # (M + 1, M): best F of the b-th child's subtree (finite)
        for b in range(1, bmax + 1):
            np.multiply(subtree, p[b - 1], out=value)
            value += penalty
            value += T[1:, d, b - 1][None, :]
            if with_arg:
                i = value.argmax(1)  # first maximum: the smallest y on ties
                T[:, d, b] = value[rows, i]
                arg[:, d, b] = i + 1
            else:
                T[:, d, b] = value.max(1)
        T[:2, d, 1:] = -np.inf  # 0 or 1 node: no child
        best[1:, d] = T[1:, d, :].max(1)
    return T, best, arg


def _rebuild(T: np.ndarray, best: np.ndarray, arg: np.ndarray, m: int, d: int) -> list[tuple[int, ...]]:
    """The rank paths of an optimal tree of at most m nodes and depth ≤ d (from the DP's argmaxes)."""
    if m == 1 or d == 0:
        return []
    b = int(np.argmax(T[m, d, :] >= best[m, d] - 1e-15))  # fewest root children among the optima
    paths: list[tuple[int, ...]] = []
    while b > 0:
        y = int(arg[m, d, b])
        paths += [(b,)] + [(b, *q) for q in _rebuild(T, best, arg, m - y, d - 1)]
        m, b = y, b - 1
    return paths


def _padded(paths: list[tuple[int, ...]], budget: int) -> list[tuple[int, ...]]:
    """``paths`` with root children of the next unused ranks added up to ``budget`` drafts (they add
    nothing to F: the optimum leaves budget unused only where every further node has p = 0)."""
    used = max((q[0] for q in paths), default=0)
    return paths + [(used + i,) for i in range(1, budget - len(paths) + 1)]


def optimal_tree(p, budget: int, max_depth: int) -> Tree:
    """The tree of ``budget`` drafts and depth ≤ ``max_depth`` with the largest F under ``p`` (Sequoia's DP;
    ties go to fewer root children, then to the smaller first subtree). Drafts no rank of ``p`` can
    pay for (p = 0 beyond its length) are placed as further root children."""
    pp = check_p(p)
    budget, max_depth = int(theory.check_k(budget, "budget")), int(theory.check_k(max_depth, "max_depth"))
    T, best, arg = _dp(pp, budget + 1, max_depth)
    return _tree_of_paths(_padded(_rebuild(T, best, arg, budget + 1, max_depth), budget))


def optimal_tree_table(p, budgets: Sequence[int], max_depth: int) -> pd.DataFrame:
    """F of the optimal tree for every budget in ``budgets`` and every depth 1..max_depth, from one DP pass.

    Columns: budget, depth, expected_tokens, and chain (F of the chain of min(budget, depth) drafts).
    """
    pp = check_p(p)
    budgets = np.unique(theory.check_k(np.asarray(list(budgets)), "budget")).astype(int)  # sorted, distinct
    max_depth = int(theory.check_k(max_depth, "max_depth"))
    _, best, _ = _dp(pp, int(budgets[-1]) + 1, max_depth, with_arg=False)
    b, d = np.meshgrid(budgets, np.arange(1, max_depth + 1), indexing="ij")  # (nB, D)
    return pd.DataFrame(
        {
            "budget": b.ravel(),
            "depth": d.ravel(),
            "expected_tokens": best[b + 1, d].ravel(),
            "chain": theory.expected_tokens(pp[0], np.minimum(b, d)).ravel(),
        }
    )


def best_tree_for_hardware(
    p, t_draft: float, t_verify_of_size: Callable[[int], float], max_budget: int, max_depth: int
) -> tuple[Tree, float]:
    """The tree with the largest speedup over target-only decoding, Sequoia's hardware-aware choice.

    A round of a tree of budget n and depth d costs d · t_draft (one draft forward per level) plus
    ``t_verify_of_size(n + 1)`` (one target forward over n + 1 positions) and yields F tokens;
    target-only decoding yields one token per ``t_verify_of_size(1)``. So

    .. math::  S(n, d) = \\frac{F_{n,d} \\cdot t_{verify}(1)}{d \\cdot t_{draft} + t_{verify}(n + 1)}

    maximised over n ≤ ``max_budget`` and d ≤ ``max_depth`` (d ≤ n). ``t_verify_of_size`` may come from
    :mod:`specviz.core.hardware`, a measured table, or the measured-cost model (1 + v (n)) T_p.
    Returns (tree, speedup); when no tree beats target-only decoding (every S ≤ 1), the answer is
    not to speculate: the root alone (0 drafts, depth 0) and speedup 1.
    """
    pp = check_p(p)
    if not (np.isfinite(t_draft) and t_draft >= 0):
        raise Message("t_draft must be a finite number >= 0; got {t_draft}", t_draft=t_draft)
    max_budget, max_depth = int(theory.check_k(max_budget, "max_budget")), int(theory.check_k(max_depth, "max_depth"))
    T, best, arg = _dp(pp, max_budget + 1, max_depth)
    t1 = float(t_verify_of_size(1))
    if not (np.isfinite(t1) and t1 > 0):
        raise Message("t_verify_of_size(1) must be a finite time > 0; got {t1}", t1=t1)
    choice, top = (1, 1), -np.inf
    for n in range(1, max_budget + 1):
        tv = float(t_verify_of_size(n + 1))
        for d in range(1, min(n, max_depth) + 1):
            s = best[n + 1, d] * t1 / (d * t_draft + tv)
            if s > top + 1e-15:
                choice, top = (n, d), s
    if top <= 1.0:
        return NO_TREE, 1.0
    n, d = choice
    return _tree_of_paths(_padded(_rebuild(T, best, arg, n + 1, d), n)), float(top)


def _contiguous_ranks(tree: Tree, node: int) -> int:
    """m such that ``node`` offers ranks 1..m (it may offer more after a gap)."""
    offered = {tree.ranks[child] for child in tree.children(node)}
    m = 0
    while m + 1 in offered:
        m += 1
    return m


def positional_acceptance(tree: Tree, rounds, by_depth: bool = False) -> np.ndarray:
    """Estimate p_1, p_2, … from rounds of a tree run (records with ``path`` and ``accept_mask``).

    A round tests the root and then each accepted node that has children. At a tested node the
    target takes the rank-1 child with probability p_1, else the rank-2 one with probability
    h_2 = p_2 / (1 − p_1), and so on (the positional model as a sequence of conditional tests; a node
    with m children offers ranks 1..m). The maximum-likelihood estimate is therefore

        h_r = (tests that took rank r) / (tests that reached rank r),   p_r = h_r · Π_{s<r} (1 − h_s)

    where a test reaches rank r when it took none of ranks < r and its node offers ranks 1..r, or it
    took rank r itself. A node may skip a rank (a top-k tree built from a p that is not decreasing
    offers its k likeliest ranks, e.g. 1, 2, 3, 5): a refusal there is censored at the gap (the target's token may have
    been the rank not offered), a take of rank 5 still shows that ranks 1..4 were not it.
    Σ p̂_r ≤ 1 by construction. Returns (R,) with R the tree's widest node, NaN (and NaN beyond) where
    no test reached a rank; with ``by_depth``, a (D, R) table, row d from the tests at depth d, where
    a rank no test at that depth reached takes the pooled h_r (so every row still sums to ≤ 1).
    """
    width = max(tree.ranks, default=0)  # the highest rank offered anywhere
    took, reached = np.zeros((max(tree.depth, 1), width)), np.zeros((max(tree.depth, 1), width))
    for r in rounds:
        for d, ok in enumerate(r.accept_mask):
            node = 0 if d == 0 else r.path[d - 1]
            rank = tree.ranks[r.path[d]] if ok else None
            reached[d, : _contiguous_ranks(tree, node) if rank is None else rank] += 1
            if rank is not None:
                took[d, rank - 1] += 1
    pooled = _hazards(took.sum(0), reached.sum(0))  # (R,)
    if not by_depth:
        return _p_of(pooled)
    rows = _hazards(took, reached)  # (D, R)
    return _p_of(np.where(np.isnan(rows), pooled[None, :], rows))


def _hazards(took: np.ndarray, reached: np.ndarray) -> np.ndarray:
    """h_r = took_r / reached_r, NaN where no test reached rank r."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(reached > 0, took / reached, np.nan)


def _p_of(h: np.ndarray) -> np.ndarray:
    """p_r = h_r Π_{s<r} (1 − h_s) along the last axis (NaN from the first NaN hazard on)."""
    survive = np.cumprod(1 - h, axis=-1)
    return h * np.concatenate([np.ones_like(h[..., :1]), survive[..., :-1]], axis=-1)


MAX_SHAPE_DEPTH = 16  #: the deepest shape :func:`parse_shape` builds by default (the bench and the live page)


def shape_needs_p(text: str) -> bool:
    """The shape named by ``text`` is built from a positional acceptance p (``topk:`` and ``optimal:``)."""
    return str(text).strip().partition(":")[0] in ("topk", "optimal")


def parse_shape(text: str, p=None, max_depth: int = MAX_SHAPE_DEPTH) -> Tree:
    """A draft shape as the bench CLI and the live page take it (ValueError naming the field otherwise):

    * ``chain:K`` — K drafts in a line;
    * ``chains:N,D`` — N independent chains of D drafts (SpecInfer);
    * ``topk:D,k,N`` — the EAGLE-2 / SGLang tree: depth D, top-k, N drafts (:func:`from_topk`, needs p);
    * ``optimal:N,D`` — Sequoia's tree of N drafts and depth ≤ D (:func:`optimal_tree`, needs p).

    The depth of any shape is at most ``max_depth``.
    """
    kind, _, args = str(text).strip().partition(":")
    arity = {"chain": 1, "chains": 2, "topk": 3, "optimal": 2}
    try:
        values = [int(a) for a in args.split(",")]
    except ValueError:
        values = []
    if kind not in arity or len(values) != arity[kind] or min(values, default=0) < 1:
        raise Message(
            "tree: {text!r} is not a draft shape; use chain:K, chains:N,D, topk:D,k,N or optimal:N,D (e.g. optimal:16,6), every number an integer >= 1",
            text=text,
        )
    if shape_needs_p(text) and p is None:
        raise Message("tree: {text!r} is built from a positional acceptance p; none was given", text=text)
    depth = {"chain": values[0], "chains": values[-1], "topk": values[0], "optimal": values[-1]}[kind]
    if depth > max_depth:
        raise Message(
            "tree: {text!r} has depth {depth}; at most {max_depth} is allowed here",
            text=text,
            depth=depth,
            max_depth=max_depth,
        )
    if kind == "chain":
        tree = chain(values[0])
    elif kind == "chains":
        tree = independent_chains(*values)
    elif kind == "topk":
        tree = from_topk(*values, p)
    else:
        tree = optimal_tree(p, *values)
    return replace(tree, name=f"{kind}:{','.join(map(str, values))}")


# --------------------------------------------------------------------------------------
# inputs and engine settings
# --------------------------------------------------------------------------------------


def geometric_p(alpha: float, ranks: int) -> np.ndarray:
    """A geometric positional profile: p_r = α (1 − α)^(r−1), r = 1..ranks (sums to 1 − (1 − α)^ranks)."""
    a = float(theory.check_alpha(alpha))
    r = np.arange(int(theory.check_k(ranks, "ranks")))
    return a * (1 - a) ** r


def p_from_measurements(frame: pd.DataFrame, what: str) -> tuple[np.ndarray, str]:
    """(p, where it came from) for measured rows (the canonical schema): the ``tree_p`` of the first
    tree row, else (α,) from the first row with an ``alpha_used`` (a chain run shows only rank 1).
    Rows are named by their place in ``frame`` (1-based). ValueError naming ``what`` when no row has either."""
    if "tree_p" in frame:
        for n, (text, shape) in enumerate(zip(frame["tree_p"], frame.get("tree", frame["tree_p"]), strict=True)):
            if isinstance(text, str) and text.strip():
                return check_p([float(x) for x in text.split(";")]), Phrase(
                    "{what}, row {row} (tree {shape})", what=what, row=n + 1, shape=shape
                )
    alphas = frame["alpha_used"].reset_index(drop=True).dropna() if "alpha_used" in frame else pd.Series()
    if alphas.empty:
        raise Message("{what} has no tree row with a measured p and no α: nothing to take p from", what=what)
    n = int(alphas.index[0])
    return check_p([float(alphas.iloc[0])]), Phrase(
        "{what}, row {row} (a chain: only p_1 = α is measured)", what=what, row=n + 1
    )


def parse_p(text: str) -> np.ndarray:
    """Comma-separated p_1, p_2, … as typed; ValueError naming the field and what is allowed."""
    try:
        values = [float(x) for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise Message("p: {text!r} is not a comma-separated list of numbers (e.g. 0.6, 0.2, 0.1)", text=text) from None
    if not values:
        raise Message("p: type at least one number p_1 (e.g. 0.6, 0.2, 0.1)")
    return check_p(values)


def best_topk(p, budget: int, max_depth: int, max_topk: int = 8) -> tuple[Tree, int, int]:
    """The EAGLE-2 / SGLang top-k tree of ``budget`` drafts with the largest F over depth ≤ max_depth
    and top-k ≤ max_topk: (tree, depth, topk).

    Such a tree has at most topk + (depth − 1) · topk² drafts (the top-k of each level expand topk
    children each); ValueError when no (depth, topk) in range holds ``budget``.
    """
    best, choice = None, (1, 1)
    for depth in range(1, max_depth + 1):
        for topk in range(1, max_topk + 1):
            tree = from_topk(depth, topk, budget, p)
            if tree.drafts < budget:
                continue
            f = expected_tokens(tree, p)
            if best is None or f > expected_tokens(best, p) + 1e-12:
                best, choice = tree, (depth, topk)
    if best is None:
        most = max_topk + (max_depth - 1) * max_topk**2
        raise Message(
            "budget must be at most {most} for a top-k tree of depth ≤ {max_depth} and top-k ≤ {max_topk} (top-k + (depth − 1) · top-k² drafts); got {budget}",
            most=most,
            max_depth=max_depth,
            max_topk=max_topk,
            budget=budget,
        )
    return best, *choice


def shapes_by_budget(p, budgets, max_depth: int) -> pd.DataFrame:
    """Expected tokens per round by budget for the chain (K = min(budget, depth)), the best independent
    chains (n chains of depth budget // n ≤ max_depth), the best top-k tree (NaN where none of depth ≤
    max_depth holds the budget) and the optimal tree."""
    pp = check_p(p)
    table = optimal_tree_table(pp, budgets, max_depth)
    optimal = table[table.depth == max_depth].set_index("budget")["expected_tokens"]
    rows = []
    for b in optimal.index:
        spec = max(
            (independent_chains(n, b // n) for n in range(1, b + 1) if 1 <= b // n <= max_depth),
            key=lambda t: expected_tokens(t, pp),
        )
        try:
            top_f = expected_tokens(best_topk(pp, int(b), max_depth)[0], pp)
        except ValueError:  # no top-k tree of this depth holds the budget
            top_f = float("nan")
        rows += [
            {
                "budget": int(b),
                "shape": "chain",
                "expected_tokens": float(theory.expected_tokens(pp[0], min(b, max_depth))),
            },
            {"budget": int(b), "shape": "independent chains", "expected_tokens": expected_tokens(spec, pp)},
            {"budget": int(b), "shape": "top-k tree", "expected_tokens": top_f},
            {"budget": int(b), "shape": "optimal tree", "expected_tokens": float(optimal[b])},
        ]
    return pd.DataFrame(rows)

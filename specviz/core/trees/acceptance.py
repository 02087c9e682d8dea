"""Positional acceptance on a tree: F(T), the tokens pmf, and p estimated from tree runs."""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Message
from specviz.core import theory
from specviz.core.trees.tree import Tree


def check_p(p) -> np.ndarray:
    """``p`` as a float vector with each p_r in [0, 1] and Σ p_r ≤ 1; ValueError naming what is wrong."""
    a = theory.check_alpha(np.atleast_1d(np.asarray(p, dtype=float)), "p")
    if a.ndim != 1 or a.size == 0:
        raise Message("p must be a non-empty vector p_1, p_2, …; got shape {shape}", shape=a.shape)
    if a.sum() > 1 + 1e-9:
        raise Message(
            "p must sum to at most 1 (the ranks' acceptances are disjoint); got sum {total:.6g}", total=a.sum()
        )
    return a


def check_p_by_depth(p) -> np.ndarray:
    """A (D, R) profile, row d the positional acceptance at depth d; each row as :func:`check_p`."""
    a = np.asarray(p, dtype=float)
    if a.ndim != 2 or a.shape[0] == 0:
        raise Message(
            "p by depth must be a (depth, ranks) table with at least one row; got shape {shape}", shape=a.shape
        )
    return np.stack([check_p(row) for row in a])


def path_probabilities(tree: Tree, p) -> np.ndarray:
    """Π p_rank along the root-to-node path (root 1; 0 past p's ranks); ``p`` (R,), or (D, R) by parent depth."""
    table = check_p_by_depth(p) if np.ndim(p) == 2 else check_p(p)[None, :]  # (D, R)
    out = np.ones(len(tree))
    for i in range(1, len(tree)):
        row = table[min(tree.depths[tree.parents[i]], len(table) - 1)]
        r = tree.ranks[i]
        out[i] = out[tree.parents[i]] * (row[r - 1] if r <= row.size else 0.0)
    return out


def expected_tokens(tree: Tree, p) -> float:
    """F(T) under positional acceptance ``p`` (package docstring; (D, R) ``p`` depends on depth)."""
    return float(path_probabilities(tree, p).sum())


def tokens_pmf(tree: Tree, p) -> np.ndarray:
    """P(N = n), n = 1..depth + 1: P(stop at u) = P(reach u)(1 − Σ_children p_rank), N = depth(u) + 1."""
    reach = path_probabilities(tree, p)  # (N,)
    taken = np.zeros(len(tree))
    for i in range(1, len(tree)):
        taken[tree.parents[i]] += reach[i] / reach[tree.parents[i]] if reach[tree.parents[i]] > 0 else 0.0
    pmf = np.zeros(tree.depth + 1)
    np.add.at(pmf, np.asarray(tree.depths), reach * (1.0 - taken))
    return pmf


def _contiguous_ranks(tree: Tree, node: int) -> int:
    offered = {tree.ranks[child] for child in tree.children(node)}
    m = 0
    while m + 1 in offered:
        m += 1
    return m


def positional_acceptance(tree: Tree, rounds, by_depth: bool = False) -> np.ndarray:
    """MLE of p_1, p_2, … from tree rounds (records with ``path`` and ``accept_mask``): h_r = took rank r / tests
    reaching rank r, p_r = h_r Π_{s<r}(1 − h_s), a refusal at a rank gap censored there. Returns (R,), NaN where
    no test reached a rank; ``by_depth``: (D, R), unreached ranks take the pooled h_r."""
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
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(reached > 0, took / reached, np.nan)


def _p_of(h: np.ndarray) -> np.ndarray:
    survive = np.cumprod(1 - h, axis=-1)
    return h * np.concatenate([np.ones_like(h[..., :1]), survive[..., :-1]], axis=-1)


def geometric_p(alpha: float, ranks: int) -> np.ndarray:
    """p_r = α (1 − α)^(r−1), r = 1..ranks (sums to 1 − (1 − α)^ranks)."""
    a = float(theory.check_alpha(alpha))
    r = np.arange(int(theory.check_k(ranks, "ranks")))
    return a * (1 - a) ** r

"""The best tree for a budget: Sequoia's dynamic program, its hardware-aware choice, the best top-k tree."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core import theory
from specviz.core.trees.acceptance import check_p, expected_tokens
from specviz.core.trees.shapes import from_topk, independent_chains
from specviz.core.trees.tree import NO_TREE, Tree, _tree_of_paths


def _dp(p: np.ndarray, max_nodes: int, max_depth: int, with_arg: bool = True):
    """Sequoia's DP: T[m, d, b] = max_{1≤y<m} T[y, d, b−1] + p_b · best[m − y, d − 1], T[m, d, 0] = 1."""
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
    """The rank paths of an optimal tree of ≤ m nodes and depth ≤ d, from the DP's argmaxes."""
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
    """``paths`` padded with further root children up to ``budget`` drafts (they add nothing to F)."""
    used = max((q[0] for q in paths), default=0)
    return paths + [(used + i,) for i in range(1, budget - len(paths) + 1)]


def optimal_tree(p, budget: int, max_depth: int) -> Tree:
    """The tree of ``budget`` drafts, depth ≤ ``max_depth``, with the largest F (Sequoia); ties: fewer root children."""
    pp = check_p(p)
    budget, max_depth = int(theory.check_k(budget, "budget")), int(theory.check_k(max_depth, "max_depth"))
    T, best, arg = _dp(pp, budget + 1, max_depth)
    return _tree_of_paths(_padded(_rebuild(T, best, arg, budget + 1, max_depth), budget))


def optimal_tree_table(p, budgets: Sequence[int], max_depth: int) -> pd.DataFrame:
    """F of the optimal tree per budget and depth 1..max_depth: columns budget, depth, expected_tokens, chain."""
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
    r"""Sequoia's hardware-aware tree: argmax over n ≤ max_budget, d ≤ max_depth of

    .. math::  S(n, d) = F_{n,d} \, t_{verify}(1) / (d \, t_{draft} + t_{verify}(n + 1))

    Returns (tree, S); (:data:`NO_TREE`, 1.0) when every S ≤ 1.
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


def best_topk(p, budget: int, max_depth: int, max_topk: int = 8) -> tuple[Tree, int, int]:
    """(tree, depth, topk): the top-k tree of ``budget`` drafts with the largest F; ValueError if none holds it."""
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
    """F by budget: chain, best independent chains, best top-k tree (NaN if none), optimal tree."""
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

"""Token trees (specviz.core.trees): F(T), the shapes engines use, Sequoia's DP against brute force."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from _tiers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.core import theory, trees
from specviz.engine import decoding

SETTINGS = settings(max_examples=examples(100), deadline=None)


@st.composite
def positional(draw, max_ranks: int = 4):
    """A positional acceptance vector: descending, each in [0, 1], summing to at most 1."""
    raw = draw(st.lists(st.floats(0, 1), min_size=1, max_size=max_ranks))
    total = draw(st.floats(0.05, 1.0))
    p = np.sort(np.asarray(raw))[::-1]
    return (p / p.sum() * total).tolist() if p.sum() > 0 else [total]


@SETTINGS
@given(alpha=st.floats(0, 1), k=st.integers(1, 40))
def test_a_chain_is_the_iid_model(alpha, k):
    assert trees.expected_tokens(trees.chain(k), [alpha]) == pytest.approx(theory.expected_tokens(alpha, k), abs=1e-12)


def test_expected_tokens_by_hand():
    # root with children of rank 1 and 2; the rank-1 child has a rank-1 child
    tree = trees.Tree((-1, 0, 0, 1), (0, 1, 2, 1))
    assert trees.expected_tokens(tree, [0.6, 0.3]) == pytest.approx(1 + 0.6 + 0.3 + 0.36)
    assert tree.depth == 2 and tree.drafts == 3 and sorted(tree.paths()) == [[0, 1, 3], [0, 2]]
    assert trees.expected_tokens(tree, [0.6]) == pytest.approx(1 + 0.6 + 0.36)  # rank 2 beyond p: 0
    x, y = tree.layout()
    assert y.tolist() == [0, -1, -1, -2] and x[0] == pytest.approx((x[1] + x[2]) / 2)


def test_independent_chains_and_topk_shapes():
    spec = trees.independent_chains(3, 2)
    assert spec.drafts == 6 and spec.depth == 2
    assert sorted(spec.ranks[i] for i in spec.children(0)) == [1, 2, 3]
    p = [0.5, 0.2, 0.1]
    assert trees.expected_tokens(spec, p) == pytest.approx(1 + (0.5 + 0.2 + 0.1) * 1.5)
    top = trees.from_topk(depth=3, topk=2, budget=6, p=p)
    assert top.drafts == 6 and top.depth <= 3
    # no tree of that size and depth does better than the optimum
    assert trees.expected_tokens(top, p) <= trees.expected_tokens(trees.optimal_tree(p, 6, 3), p) + 1e-12


@cache
def _all_trees(budget: int) -> list[frozenset]:
    """Every tree of ``budget`` drafts as a set of rank paths, ranks 1..budget (prefix-closed, ranks 1..k gap-free)."""
    if budget == 0:
        return [frozenset()]
    out = set()
    for smaller in _all_trees(budget - 1):
        nodes = [(), *smaller]
        for parent in nodes:
            kids = [q for q in smaller if q[:-1] == parent]
            out.add(frozenset({*smaller, (*parent, len(kids) + 1)}))
    return list(out)


def _f(paths, p) -> float:
    return 1 + sum(np.prod([p[r - 1] if r <= len(p) else 0 for r in q]) for q in paths)


@pytest.mark.parametrize("budget", range(1, 8))
def test_the_dp_is_the_brute_force_optimum(budget):
    rng = np.random.default_rng(budget)
    for _ in range(3):
        p = np.sort(rng.dirichlet(np.ones(4)) * rng.uniform(0.5, 1))[::-1]
        for depth in (1, 2, budget):
            brute = max(_f(t, p) for t in _all_trees(budget) if max(map(len, t)) <= depth)
            tree = trees.optimal_tree(p, budget, depth)
            assert tree.drafts == budget and tree.depth <= depth
            assert trees.expected_tokens(tree, p) == pytest.approx(brute, rel=1e-12)


@SETTINGS
@given(p=positional(), budget=st.integers(1, 24), depth=st.integers(1, 8))
def test_optimal_f_grows_with_budget_and_depth_and_beats_chains(p, budget, depth):
    table = trees.optimal_tree_table(p, range(1, budget + 2), depth + 1).set_index(["budget", "depth"])
    f = table["expected_tokens"]
    assert f[(budget + 1, depth)] >= f[(budget, depth)] - 1e-12
    assert f[(budget, depth + 1)] >= f[(budget, depth)] - 1e-12
    chain_k = min(budget, depth)
    assert f[(budget, depth)] >= trees.expected_tokens(trees.chain(chain_k), p) - 1e-12
    tree = trees.optimal_tree(p, budget, depth)
    assert trees.expected_tokens(tree, p) == pytest.approx(f[(budget, depth)], rel=1e-12)
    # the chain-only restriction (one rank) is the i.i.d. chain
    only_first = trees.optimal_tree_table(p[:1], [budget], depth)
    assert only_first["expected_tokens"].iloc[-1] == pytest.approx(theory.expected_tokens(p[0], chain_k), rel=1e-12)


def test_optimal_beats_independent_chains_of_the_same_size():
    p = [0.55, 0.2, 0.1, 0.05]
    for n, d in ((2, 4), (4, 4), (8, 2)):
        spec = trees.independent_chains(n, d)
        assert trees.expected_tokens(trees.optimal_tree(p, spec.drafts, d), p) >= trees.expected_tokens(spec, p)


def test_hardware_choice_trades_tokens_for_verify_cost():
    p = [0.6, 0.2, 0.1]
    free = trees.best_tree_for_hardware(p, 0.0, lambda n: 1.0, 32, 8)  # verifying is free: the biggest tree wins
    assert free[0].drafts == 32
    costly = trees.best_tree_for_hardware(p, 0.05, lambda n: 1.0 + 0.1 * (n - 1), 32, 8)
    assert costly[0].drafts < 32 and costly[1] > 1
    tree, s = costly
    assert s == pytest.approx(trees.expected_tokens(tree, p) / (tree.depth * 0.05 + 1.0 + 0.1 * tree.drafts), rel=1e-9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: trees.expected_tokens(trees.chain(2), [0.7, 0.5]), "p must sum to at most 1"),
        (lambda: trees.expected_tokens(trees.chain(2), [1.5]), r"p must be in \[0, 1\]"),
        (lambda: trees.Tree((-1, 2, 0), (0, 1, 1)), "node 1: parent 2 must be an earlier node"),
        (lambda: trees.Tree((-1, 0, 0), (0, 1, 1)), "node 2: rank 1 must be >= 1 and distinct"),
        (lambda: trees.optimal_tree([0.5], 0, 3), "budget must be an integer"),
        (lambda: trees.best_topk([0.5], 9, 1), r"budget must be at most 8 for a top-k tree of depth ≤ 1 .*got 9"),
        (lambda: trees.best_topk([0.5], 73, 2), "budget must be at most 72 .*got 73"),
        (lambda: trees.parse_shape("tree:3"), "tree: 'tree:3' is not a draft shape; use chain:K"),
        (lambda: trees.parse_shape("chains:3"), "tree: 'chains:3' is not a draft shape"),
        (lambda: trees.parse_shape("optimal:8,4"), "built from a positional acceptance p; none was given"),
        (lambda: trees.parse_shape("chain:9", max_depth=8), "has depth 9; at most 8"),
        (lambda: trees.expected_tokens(trees.chain(2), [[0.5, 0.0], [0.7, 0.4]]), "p must sum to at most 1"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_table_of_budget_128_depth_10_comes_from_one_pass():
    p = [0.5, 0.15, 0.08, 0.05, 0.03, 0.02, 0.01, 0.01]
    table = trees.optimal_tree_table(p, [1, 2, 4, 8, 16, 32, 64, 128], 10)
    assert len(table) == 8 * 10
    f = table.set_index(["budget", "depth"])["expected_tokens"]
    assert f[(128, 10)] > f[(8, 8)] > trees.expected_tokens(trees.chain(8), p)


def test_shapes_by_budget_leaves_the_top_k_tree_out_where_none_holds_the_budget():
    frame = trees.shapes_by_budget([0.6, 0.2], [4, 8, 16], 1).set_index(["budget", "shape"])["expected_tokens"]
    assert np.isnan(frame[(16, "top-k tree")]) and frame[(8, "top-k tree")] == pytest.approx(1 + 0.6 + 0.2)
    assert frame[(16, "optimal tree")] == pytest.approx(1 + 0.6 + 0.2)  # depth 1: the two useful ranks


def test_when_no_tree_pays_the_hardware_choice_is_not_to_speculate():
    tree, s = trees.best_tree_for_hardware([0.1], 1.0, lambda n: 1.0 + 0.5 * (n - 1), 16, 4)
    assert tree is trees.NO_TREE and s == 1.0 and trees.expected_tokens(tree, [0.1]) == 1.0


def test_shapes_parse_to_the_trees_they_name():
    p = [0.6, 0.2, 0.1]
    cases = {
        "chain:4": trees.chain(4),
        "chains:3,2": trees.independent_chains(3, 2),
        "topk:3,2,6": trees.from_topk(3, 2, 6, p),
        " optimal:12,5 ": trees.optimal_tree(p, 12, 5),
    }
    for text, want in cases.items():
        got = trees.parse_shape(text, p)
        assert got == want and got.name == text.strip() and got.describe().startswith(text.strip() + " (")


def test_positional_acceptance_is_the_sequential_mle_when_widths_differ():
    """Root: 3 children; node 1: 1 child. Rank 2 is reached only at roots that refused rank 1, so
    p_2 = h_2 (1 − h_1) with h_2 = 1/2, not hits / (tests at wide nodes) = 1/4."""
    tree = trees.Tree((-1, 0, 0, 0, 1), (0, 1, 2, 3, 1))

    def record(mask, path):
        return decoding.RoundRecord([], len(path), [], mask, [], 0, 0, 0, path=path)

    rounds = [
        record([True, True], [1, 4]),  # root takes rank 1, node 1 takes rank 1
        record([True, False], [1]),  # rank 1, then node 1 refuses
        record([True], [2]),  # rank 2 (a leaf)
        record([False], []),  # all three refused
    ]
    h1, h2, h3 = 3 / 6, 1 / 2, 0 / 1  # rank 1 reached by 4 roots + 2 node-1 tests; rank 2 by 2; rank 3 by 1
    p = trees.positional_acceptance(tree, rounds)
    assert p == pytest.approx([h1, h2 * (1 - h1), h3 * (1 - h1) * (1 - h2)])
    by_depth = trees.positional_acceptance(tree, rounds, by_depth=True)
    assert by_depth[0] == pytest.approx([2 / 4, (1 / 2) * (1 - 2 / 4), 0.0])  # roots: rank 1 in 2 of 4
    # node 1: rank 1 in 1 of 2 tests; ranks 2, 3 never reached there take the pooled h_2 = 1/2, h_3 = 0
    assert by_depth[1] == pytest.approx([1 / 2, (1 / 2) * (1 - 1 / 2), 0.0])
    assert p.sum() <= 1 and (by_depth.sum(1) <= 1 + 1e-12).all()


def test_positional_acceptance_with_a_gap_in_the_offered_ranks():
    """A top-k tree built from a p that is not decreasing (p_5 > p_4) offers ranks 1, 2, 3, 5 at a node.

    A take of rank 5 shows ranks 1..4 were not the target's token; a refusal is censored at the gap
    (rank 4 was not offered, the token may have been it). This shape crashed the estimate (IndexError).
    """
    tree = trees.Tree((-1, 0, 0, 0, 0), (0, 1, 2, 3, 5))

    def record(mask, path):
        return decoding.RoundRecord([], len(path), [], mask, [], 0, 0, 0, path=path)

    rounds = [record([True], [1]), record([True], [4]), record([False], []), record([False], [])]
    h = [1 / 4, 0 / 3, 0 / 3, 0 / 1, 1 / 1]  # rank 4: reached only by the rank-5 take; rank 5: 1 of 1
    want = [h[0], *(h[r] * np.prod([1 - x for x in h[:r]]) for r in range(1, 5))]
    assert trees.positional_acceptance(tree, rounds) == pytest.approx(want)
    p = np.array([0.738, 0.077, 0.043, 0.009, 0.022, 0.009, 0.009, 0.003])  # T = 1 pilot, bundled pair
    shape = trees.best_topk(p, 32, 10)[0]  # tree_bench's topk:10,5,32: a node offers ranks 1, 2, 3, 5
    assert max(shape.ranks) == 5 and trees.positional_acceptance(shape, []).shape == (5,)


@SETTINGS
@given(p=positional(), depth=st.integers(1, 4), budget=st.integers(1, 12))
def test_a_depth_table_of_equal_rows_is_the_positional_model(p, depth, budget):
    tree = trees.optimal_tree(p, budget, 4)
    assert trees.expected_tokens(tree, [p] * depth) == pytest.approx(trees.expected_tokens(tree, p), abs=1e-12)


def test_a_depth_table_applies_row_d_below_depth_d():
    tree = trees.chain(3)  # F = 1 + p(0) + p(0) p(1) + p(0) p(1) p(2), the last row reused beyond
    assert trees.expected_tokens(tree, [[0.9], [0.5]]) == pytest.approx(1 + 0.9 + 0.9 * 0.5 + 0.9 * 0.5 * 0.5)


@SETTINGS
@given(p=positional(), budget=st.integers(1, 16), depth=st.integers(1, 6))
def test_the_tokens_pmf_sums_to_one_with_mean_f(p, budget, depth):
    tree = trees.optimal_tree(p, budget, depth)
    pmf = trees.tokens_pmf(tree, p)
    assert len(pmf) == tree.depth + 1 and (pmf >= -1e-12).all()
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert (np.arange(1, len(pmf) + 1) * pmf).sum() == pytest.approx(trees.expected_tokens(tree, p), abs=1e-12)


def test_a_chains_tokens_pmf_is_the_truncated_geometric():
    np.testing.assert_allclose(trees.tokens_pmf(trees.chain(5), [0.7]), theory.accepted_length_pmf(0.7, 5), atol=1e-12)

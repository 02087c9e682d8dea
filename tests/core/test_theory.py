"""Example-based tests of specviz.core.theory against docs/design.md §1 and the source chapter.

Fixed values (the chapter's tables and exercise 2), the speedup bound, numerical
stability of E[N] against an exact reference, the distribution of N, the
measured-cost model, break-even, optimal K, the metric converters and argument
validation (every message names the parameter, the value and the allowed range).
"""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from specviz.core import chapter
from specviz.core import theory as t

# --------------------------------------------------------------------------------------
# the chapter's printed numbers
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("alpha", "k", "printed"), chapter.TABLE_4_4)
def test_table_4_4_expected_tokens(alpha, k, printed):
    e = float(t.expected_tokens(alpha, k))
    assert round(e, chapter.decimals(printed)) == float(printed)


@pytest.mark.parametrize(("alpha", "c", "k", "e_printed", "s_printed"), chapter.TABLE_5_3)
def test_table_5_3_speedup(alpha, c, k, e_printed, s_printed):
    e = float(t.expected_tokens(alpha, k))
    s = float(t.speedup(alpha, c, k))
    assert round(e, chapter.decimals(e_printed)) == float(e_printed)
    assert round(s, chapter.decimals(s_printed)) == float(s_printed)


def test_exercise_2_speedups():
    ex = chapter.EXERCISE_2
    a, c = ex["alpha"], ex["c"]
    assert (a, c) == (0.7, 8.0)
    assert round(float(t.speedup(a, c, 4)), 2) == 1.85
    assert round(float(t.speedup(a, c, 8)), 2) == 1.60
    assert float(ex["speedup_k4"]) == 1.85 and float(ex["speedup_k8"]) == 1.60


def test_exercise_2_break_even():
    a_star = float(t.break_even_alpha(4, 8.0))
    assert round(a_star, 2) == 0.34 == float(chapter.EXERCISE_2["break_even_k4"])
    # D = 1 + K/c = 1.5 lies between E[N](0.33) and E[N](0.34), so 0.33 < α* < 0.34.
    assert t.expected_tokens(0.33, 4) < 1.5 < t.expected_tokens(0.34, 4)
    assert 0.33 < a_star < 0.34


@pytest.mark.parametrize("table", [chapter.table_4_4, chapter.table_5_3, chapter.exercise_2])
def test_chapter_tables_all_match(table):
    df = table()
    assert len(df) > 0
    assert df["matches"].map(bool).all(), df


def test_chapter_table_lengths():
    assert len(chapter.table_4_4()) == len(chapter.TABLE_4_4) == 10
    assert len(chapter.table_5_3()) == len(chapter.TABLE_5_3) == 5
    assert len(chapter.exercise_2()) == 3


# The chapter's printed digits, spelled out once more as the oracle for the project's copy in
# data/chapter/tables.json (§4.4 table, §5.3 table, §9 exercise 2): a slip in that file fails here.
PRINTED_4_4 = {
    (0.5, 4): "1.94",
    (0.5, 8): "1.996",
    (0.6, 4): "2.31",
    (0.6, 8): "2.47",
    (0.7, 4): "2.77",
    (0.7, 8): "3.20",
    (0.8, 4): "3.36",
    (0.8, 8): "4.33",
    (0.9, 4): "4.10",
    (0.9, 8): "6.13",
}
PRINTED_5_3 = [
    (0.8, 10, 4, "3.36", "2.40"),
    (0.8, 10, 8, "4.33", "2.40"),
    (0.9, 10, 8, "6.13", "3.40"),
    (0.6, 10, 4, "2.31", "1.65"),
    (0.8, 5, 4, "3.36", "1.87"),
]
PRINTED_EX_2 = {"alpha": 0.7, "c": 8, "speedup_k4": "1.85", "speedup_k8": "1.60", "break_even_k4": "0.34"}


def test_chapter_file_holds_the_printed_digits():
    assert {(a, k): e for a, k, e in chapter.TABLE_4_4} == PRINTED_4_4
    assert len(chapter.TABLE_4_4) == len(PRINTED_4_4)
    assert list(chapter.TABLE_5_3) == PRINTED_5_3
    assert chapter.EXERCISE_2 == PRINTED_EX_2
    # printed values stay strings, so "2.40" keeps its two decimals
    printed = [e for *_, e in chapter.TABLE_4_4] + [x for row in chapter.TABLE_5_3 for x in row[3:]]
    assert all(isinstance(x, str) for x in printed)
    assert chapter.TABLES_PATH.parts[-3:] == ("data", "chapter", "tables.json")


def test_chapter_file_errors_name_the_field(tmp_path):
    good = json.loads(chapter.TABLES_PATH.read_text(encoding="utf-8"))
    assert chapter.load_tables(chapter.TABLES_PATH) == (chapter.TABLE_4_4, chapter.TABLE_5_3, chapter.EXERCISE_2)
    bad = json.loads(json.dumps(good))
    bad["table_5_3"]["rows"][1][4] = 2.4  # a number loses the printed decimals
    path = tmp_path / "tables.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tables.json: table_5_3 row 1 speedup .*got 2.4"):
        chapter.load_tables(path)
    bad = json.loads(json.dumps(good))
    del bad["exercise_2"]["c"]
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=r"exercise_2.c must be a number; got None"):
        chapter.load_tables(path)
    bad = json.loads(json.dumps(good))
    bad["table_4_4"]["columns"] = ["alpha", "k"]
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=r"table_4_4 must have columns"):
        chapter.load_tables(path)


def test_decimals():
    assert chapter.decimals("1.996") == 3
    assert chapter.decimals("2.40") == 2
    assert chapter.decimals("3") == 0


# --------------------------------------------------------------------------------------
# the speedup bound
# --------------------------------------------------------------------------------------

ALPHAS = [0.0, 1e-9, 0.1, 0.33, 0.5, 0.7, 0.8, 0.9, 0.99, 1 - 1e-9, 1.0]
CS_ABOVE_1 = [1.01, 1.5, 2.0, 5.0, 8.0, 10.0, 30.0, 100.0, 1e3]
KS = [1, 2, 3, 4, 5, 8, 16, 64, 1000]


@pytest.mark.parametrize("c", CS_ABOVE_1)
@pytest.mark.parametrize("k", KS)
def test_speedup_below_bound_below_c(c, k):
    s = t.speedup(np.array(ALPHAS), c, k)
    bound = t.speedup_bound(c, k)
    assert np.all(s <= bound)
    assert bound < c
    # closed form of the bound
    assert bound == pytest.approx((k + 1) * c / (c + k), rel=1e-15)


@pytest.mark.parametrize("c", CS_ABOVE_1 + [0.5, 1.0])
@pytest.mark.parametrize("k", KS)
def test_bound_reached_at_alpha_1(c, k):
    assert t.speedup(1.0, c, k) == t.speedup_bound(c, k)


def test_bound_tends_to_c():
    c = 8.0
    b = [float(t.speedup_bound(c, k)) for k in (1, 10, 100, 1000, 10**6)]
    assert b == sorted(b)  # rises with K
    assert all(x < c for x in b)
    assert abs(b[-1] - c) / c < 1e-4


def test_bound_measured_model_equality():
    k, c, v, o = 4, 10.0, 0.05, 0.1
    assert t.speedup_bound(c, k, v, o) == t.speedup(1.0, c, k, v, o)
    assert float(t.speedup_bound(c, k, v, o)) == pytest.approx(5 / (1 + 0.2 + 0.1 + 0.4), rel=1e-14)


# --------------------------------------------------------------------------------------
# numerical stability of E[N]
# --------------------------------------------------------------------------------------

STABILITY_ALPHAS = [1 - 1e-12, 1 - 1e-9, 1 - 1e-6, 0.5, 1e-300, 0.0, 1.0]
STABILITY_KS = [1, 2, 7, 64, 1024]


def _exact_sum_fraction(alpha: float, k: int) -> Fraction:
    a = Fraction(alpha)  # the float's exact value
    total, p = Fraction(0), Fraction(1)
    for _ in range(k + 1):
        total += p
        p *= a
    return total


@pytest.mark.parametrize("alpha", STABILITY_ALPHAS)
@pytest.mark.parametrize("k", STABILITY_KS)
def test_expected_tokens_vs_mpmath(alpha, k):
    with mpmath.workdps(50):
        a = mpmath.mpf(alpha)  # exact binary value of the float
        ref = mpmath.fsum(a**i for i in range(k + 1))
        got = t.expected_tokens(alpha, k)
        rel = abs((mpmath.mpf(float(got)) - ref) / ref)
    assert float(rel) <= 1e-13, (alpha, k, float(got), ref)


@pytest.mark.parametrize("alpha", [1 - 1e-12, 0.5, 0.3, 0.01])
@pytest.mark.parametrize("k", [1, 2, 7, 64])
def test_expected_tokens_vs_fraction(alpha, k):
    ref = _exact_sum_fraction(alpha, k)
    got = Fraction(float(t.expected_tokens(alpha, k)))
    assert abs(got - ref) / ref <= Fraction(1, 10**13)


@pytest.mark.parametrize("k", STABILITY_KS + [10**6])
def test_expected_tokens_exact_limits(k):
    assert t.expected_tokens(0.0, k) == 1.0
    assert t.expected_tokens(1.0, k) == k + 1


def test_expected_tokens_no_warnings_at_limits():
    with np.errstate(all="raise"):
        e = t.expected_tokens(np.array([0.0, 1e-300, 0.5, 1 - 1e-16, 1.0]), 8)
    assert np.all(np.isfinite(e))
    assert e[0] == 1.0 and e[-1] == 9.0


def test_expected_tokens_vectorised_matches_scalar():
    alphas = np.array(STABILITY_ALPHAS)
    for k in STABILITY_KS:
        vec = t.expected_tokens(alphas, k)
        assert np.array_equal(vec, [t.expected_tokens(a, k) for a in alphas])


# --------------------------------------------------------------------------------------
# distribution of N
# --------------------------------------------------------------------------------------


def test_pmf_example():
    assert t.accepted_length_pmf(0.5, 3).tolist() == [0.5, 0.25, 0.125, 0.125]


def test_pmf_broadcast_pads_with_zeros():
    p = t.accepted_length_pmf(0.5, [1, 3])
    assert p.shape == (2, 4)
    assert p[0].tolist() == [0.5, 0.5, 0.0, 0.0]
    assert p[1].tolist() == [0.5, 0.25, 0.125, 0.125]
    assert np.allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-15)


def test_pmf_broadcast_alpha_and_k():
    p = t.accepted_length_pmf(np.array([[0.2], [0.9]]), np.array([[2, 5]]))
    assert p.shape == (2, 2, 6)
    assert np.all(p[:, 0, 3:] == 0.0)
    assert np.allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("k", [1, 2, 7, 64])
def test_pmf_limits(k):
    p1 = t.accepted_length_pmf(1.0, k)
    assert p1.shape == (k + 1,)
    assert p1[-1] == 1.0 and np.all(p1[:-1] == 0.0)
    p0 = t.accepted_length_pmf(0.0, k)
    assert p0[0] == 1.0 and np.all(p0[1:] == 0.0)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.8, 0.99])
@pytest.mark.parametrize("k", [1, 4, 8, 33])
def test_pmf_mean_is_expected_tokens(alpha, k):
    p = t.accepted_length_pmf(alpha, k)
    i = np.arange(1, k + 2)
    assert p.sum() == pytest.approx(1.0, abs=1e-14)
    assert (i * p).sum() == pytest.approx(float(t.expected_tokens(alpha, k)), rel=1e-13)


# --------------------------------------------------------------------------------------
# speedup
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("c", [0.5, 1.0, 2.0, 8.0, 30.0])
@pytest.mark.parametrize("k", [1, 4, 8, 64])
def test_speedup_basic_model(alpha, c, k):
    e = float(t.expected_tokens(alpha, k))
    expected = e * c / (c + k)
    assert float(t.speedup(alpha, c, k)) == pytest.approx(expected, rel=1e-15, abs=0)
    # explicit zeros reproduce the default exactly
    assert t.speedup(alpha, c, k, v=0.0, o=0.0) == t.speedup(alpha, c, k)


def test_speedup_measured_cost_by_hand():
    alpha, c, k, v, o = 0.8, 10.0, 4, 0.05, 0.1
    e = 1 + 0.8 + 0.8**2 + 0.8**3 + 0.8**4  # 3.3616
    expected = e / (1 + v * k + o + k / c)  # 3.3616 / 1.7
    assert float(t.speedup(alpha, c, k, v, o)) == pytest.approx(expected, rel=1e-14)
    assert float(t.speedup(alpha, c, k, v, o)) == pytest.approx(3.3616 / 1.7, rel=1e-14)


def test_speedup_decreases_with_overheads():
    s0 = t.speedup(0.8, 10.0, 4)
    assert t.speedup(0.8, 10.0, 4, v=0.05) < s0
    assert t.speedup(0.8, 10.0, 4, o=0.1) < s0


def test_speedup_returns_scalar_for_scalars():
    s = t.speedup(0.8, 10.0, 4)
    assert np.ndim(s) == 0
    assert isinstance(s, float)


# --------------------------------------------------------------------------------------
# break-even
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", [1.0, 0.5, 0.01])
@pytest.mark.parametrize("k", [1, 2, 4, 8, 64, 1000])
def test_break_even_nan_when_c_at_most_1(c, k):
    assert math.isnan(float(t.break_even_alpha(k, c)))


@pytest.mark.parametrize(
    ("k", "c", "v", "o"),
    [
        (4, 8.0, 1.0, 0.0),  # D = 1 + 4 + 0.5 = 5.5 > 5
        (4, 8.0, 0.0, 3.5),  # D = 1 + 3.5 + 0.5 = 5 = K + 1: equality counts as never
        (4, 8.0, 0.875, 0.0),  # D = 1 + 3.5 + 0.5 = 5
        (1, 100.0, 0.5, 0.5),  # D = 2.01 > 2
        (8, 1e3, 0.0, 8.0),  # D = 9.008 > 9
    ],
)
def test_break_even_nan_with_overheads(k, c, v, o):
    assert 1 + v * k + o + k / c >= k + 1
    assert math.isnan(float(t.break_even_alpha(k, c, v, o)))


@pytest.mark.parametrize(
    ("k", "c", "v", "o"),
    [
        (4, 8.0, 0.0, 0.0),
        (1, 2.0, 0.0, 0.0),
        (8, 10.0, 0.0, 0.0),
        (64, 30.0, 0.0, 0.0),
        (1000, 1e3, 0.0, 0.0),
        (4, 8.0, 0.05, 0.1),
        (4, 1.01, 0.0, 0.0),
        (4, 8.0, 0.85, 0.0),  # D = 4.9, just below K + 1 = 5
        (16, 1e3, 0.01, 0.0),
    ],
)
def test_break_even_finite_and_speedup_one(k, c, v, o):
    a_star = float(t.break_even_alpha(k, c, v, o))
    assert 0.0 < a_star < 1.0
    assert float(t.speedup(a_star, c, k, v, o)) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("c", [1.01, 1.5, 2.0, 3.0, 8.0, 10.0, 100.0, 1e3])
def test_break_even_k1_closed_form(c):
    # K = 1: E[N] = 1 + α and D = 1 + 1/c, so α* = 1/c.
    assert float(t.break_even_alpha(1, c)) == pytest.approx(1.0 / c, rel=1e-13)


def test_break_even_broadcast_mixed_nan():
    a = t.break_even_alpha(np.array([[1], [4]]), np.array([[0.5, 1.0, 8.0]]))
    assert a.shape == (2, 3)
    assert np.isnan(a[:, :2]).all()
    assert np.isfinite(a[:, 2]).all()
    assert a[0, 2] == pytest.approx(1 / 8, rel=1e-13)


# --------------------------------------------------------------------------------------
# optimal K
# --------------------------------------------------------------------------------------


def _brute_force_k(alpha, c, k_max=32, v=0.0, o=0.0):
    s = [float(t.speedup(alpha, c, k, v, o)) for k in range(1, k_max + 1)]
    best = max(s)
    if best <= 1.0:
        return 0, 1.0
    return s.index(best) + 1, best  # index() gives the smallest argmax


def test_optimal_k_chapter_example():
    res = t.optimal_k(0.8, 10.0)
    k_bf, s_bf = _brute_force_k(0.8, 10.0)
    assert isinstance(res, t.OptimalK)
    assert np.ndim(res.k) == 0 and np.ndim(res.speedup) == 0
    assert np.issubdtype(np.asarray(res.k).dtype, np.integer)
    assert int(res.k) == k_bf == 6
    assert float(res.speedup) == s_bf
    assert float(res.speedup) == pytest.approx(2.4696, abs=1e-4)
    k, s = res  # unpacks as a pair
    assert k == res.k and s == res.speedup


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0, 10.0, 1e3])
def test_optimal_k_alpha_zero_does_not_speculate(c):
    res = t.optimal_k(0.0, c)
    assert int(res.k) == 0
    assert float(res.speedup) == 1.0


@pytest.mark.parametrize("c", [0.1, 0.5, 1.0])
def test_optimal_k_c_at_most_1_does_not_speculate(c):
    res = t.optimal_k(np.array([0.5, 0.9, 1.0]), c, k_max=64)
    assert np.all(res.k == 0) and np.all(res.speedup == 1.0)


def test_optimal_k_exact_tie_goes_to_smaller_k():
    # α = 0.5, c = 5: S(1) = 1.5·5/6 = 1.25 = 1.75·5/7 = S(2) (exact in binary floating point too).
    s = [float(t.speedup(0.5, 5.0, k)) for k in (1, 2, 3)]
    assert s[0] == s[1] == 1.25 > s[2]
    res = t.optimal_k(0.5, 5.0)
    assert int(res.k) == 1
    assert float(res.speedup) == 1.25


@pytest.mark.parametrize(
    ("alpha", "c", "k_max", "v", "o"),
    [
        (0.8, 10.0, 32, 0.0, 0.0),
        (0.9, 30.0, 64, 0.0, 0.0),
        (0.99, 100.0, 128, 0.0, 0.0),
        (0.6, 3.0, 16, 0.0, 0.0),
        (0.8, 10.0, 32, 0.05, 0.1),
        (1.0, 8.0, 20, 0.0, 0.0),  # S rises with K: the best is K_max
        (0.3, 2.0, 8, 0.2, 0.2),
    ],
)
def test_optimal_k_is_smallest_brute_force_argmax(alpha, c, k_max, v, o):
    res = t.optimal_k(alpha, c, k_max, v, o)
    assert (int(res.k), float(res.speedup)) == _brute_force_k(alpha, c, k_max, v, o)


def test_optimal_k_alpha_one_takes_k_max():
    assert int(t.optimal_k(1.0, 8.0, k_max=20).k) == 20


def test_optimal_k_broadcast():
    res = t.optimal_k(np.array([[0.0], [0.8], [0.9]]), np.array([[0.5, 10.0]]), k_max=16)
    assert res.k.shape == res.speedup.shape == (3, 2)
    for i, a in enumerate([0.0, 0.8, 0.9]):
        for j, c in enumerate([0.5, 10.0]):
            assert (int(res.k[i, j]), float(res.speedup[i, j])) == _brute_force_k(a, c, 16)


@pytest.mark.parametrize("k_max", [0, -1, 2.5, float("nan"), [4, 8], np.array([4, 8])])
def test_optimal_k_k_max_validation(k_max):
    with pytest.raises(ValueError, match=r"^k_max must (not )?be"):
        t.optimal_k(0.8, 10.0, k_max)  # "must be" or "must not be NaN"


def test_optimal_k_k_max_message():
    with pytest.raises(ValueError, match=r"k_max must be an integer in \[1, 2147483647\]; got 0(\.0)?$"):
        t.optimal_k(0.8, 10.0, 0)
    with pytest.raises(ValueError, match=r"k_max must be a single integer >= 1; got"):
        t.optimal_k(0.8, 10.0, [4, 8])


# --------------------------------------------------------------------------------------
# converters
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 4, 8, 64])
def test_acceptance_rate_limits(k):
    assert t.acceptance_rate(0.0, k) == 0.0
    assert t.acceptance_rate(1.0, k) == 1.0


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.8, 0.95])
@pytest.mark.parametrize("k", [1, 4, 8])
def test_acceptance_rate_formula(alpha, k):
    expected = (alpha - alpha ** (k + 1)) / (k * (1 - alpha))
    assert float(t.acceptance_rate(alpha, k)) == pytest.approx(expected, rel=1e-13)
    # K = 1: r = α
    assert float(t.acceptance_rate(alpha, 1)) == pytest.approx(alpha, rel=1e-14)


@pytest.mark.parametrize("k", [1, 2, 4, 8, 64, 1024])
def test_alpha_from_mean_tokens_limits_exact(k):
    assert t.alpha_from_mean_tokens(1.0, k) == 0.0
    assert t.alpha_from_mean_tokens(k + 1.0, k) == 1.0
    assert t.alpha_from_acceptance_rate(0.0, k) == 0.0
    assert t.alpha_from_acceptance_rate(1.0, k) == 1.0


@pytest.mark.parametrize("alpha", [0.0, 1e-6, 0.1, 0.34, 0.5, 0.8, 0.99, 1 - 1e-9, 1.0])
@pytest.mark.parametrize("k", [1, 2, 4, 8, 64])
def test_converters_round_trip(alpha, k):
    r = t.acceptance_rate(alpha, k)
    assert float(t.alpha_from_acceptance_rate(r, k)) == pytest.approx(alpha, abs=1e-12)
    e = t.expected_tokens(alpha, k)
    assert float(t.alpha_from_mean_tokens(e, k)) == pytest.approx(alpha, abs=1e-12)


def test_alpha_from_mean_tokens_chapter_values():
    # table §4.4 backwards: E[N] = 3.3616 at K = 4 is α = 0.8
    assert float(t.alpha_from_mean_tokens(3.3616, 4)) == pytest.approx(0.8, abs=1e-13)
    assert float(t.alpha_from_mean_tokens(1.9375, 4)) == pytest.approx(0.5, abs=1e-13)


def test_leviathan_convention():
    assert t.c_to_leviathan(8) == 0.125
    assert t.c_from_leviathan(0.125) == 8
    assert t.c_from_leviathan(t.c_to_leviathan(30.0)) == pytest.approx(30.0, rel=1e-15)
    assert np.array_equal(t.c_to_leviathan(np.array([2.0, 4.0])), [0.5, 0.25])


def test_system_efficiency():
    assert float(t.system_efficiency(0.5, 3)) == pytest.approx(1.875 / 4, rel=1e-15)
    assert t.system_efficiency(1.0, 7) == 1.0
    assert float(t.system_efficiency(0.0, 4)) == pytest.approx(0.2, rel=1e-15)


def test_convert_metric_mean_tokens_example():
    out = t.convert_metric(2.5, 4, "mean_tokens")
    assert set(out) == {"alpha", *t.METRICS}
    assert float(out["mean_tokens"]) == pytest.approx(2.5, rel=1e-13)
    assert float(out["acceptance_rate"]) == pytest.approx(0.375, rel=1e-13)
    assert float(out["mean_tokens_no_bonus"]) == pytest.approx(1.5, rel=1e-13)
    assert float(out["system_efficiency"]) == pytest.approx(0.5, rel=1e-13)
    assert 0.0 < out["alpha"] < 1.0
    assert float(t.expected_tokens(out["alpha"], 4)) == pytest.approx(2.5, rel=1e-13)


@pytest.mark.parametrize("metric", sorted(t.METRICS))
@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.8, 1.0])
def test_convert_metric_round_trip_each_metric(metric, alpha):
    k = 4
    full = t.convert_metric(alpha, k, "alpha")
    back = t.convert_metric(full[metric], k, metric)
    assert float(back["alpha"]) == pytest.approx(alpha, abs=1e-12)
    for name in t.METRICS:
        assert float(back[name]) == pytest.approx(float(full[name]), rel=1e-12, abs=1e-12)


def test_convert_metric_alpha_values():
    out = t.convert_metric(0.8, 4, "alpha")
    assert out["alpha"] == 0.8
    assert float(out["mean_tokens"]) == pytest.approx(3.3616, rel=1e-14)
    assert float(out["acceptance_rate"]) == pytest.approx(2.3616 / 4, rel=1e-14)


def test_convert_metric_alpha_tolerance_stays_in_range():
    k = 4
    try:
        out = t.convert_metric(1.0 + 1e-13, k, "alpha")
    except ValueError:
        return  # rejecting is also acceptable
    assert out["alpha"] <= 1.0
    assert out["mean_tokens"] <= k + 1
    assert out["acceptance_rate"] <= 1.0


def test_convert_metric_tolerance_other_metrics_clipped():
    # a value a hair outside the range (float noise from an engine) is clipped, not rejected
    out = t.convert_metric(5.0 + 1e-12, 4, "mean_tokens")
    assert out["alpha"] == 1.0


def test_convert_metric_broadcast():
    out = t.convert_metric(np.array([[1.0], [2.5], [3.0]]), np.array([[2, 4]]), "mean_tokens")
    for name, val in out.items():
        assert np.shape(val) == (3, 2), name
    assert np.all(out["alpha"][0] == 0.0)
    assert out["alpha"][2, 0] == 1.0  # 3 = K + 1 for K = 2


# --------------------------------------------------------------------------------------
# validation: ValueError naming the parameter, the value and the allowed range
# --------------------------------------------------------------------------------------

#: name -> (function, valid keyword arguments)
FUNCS = {
    "expected_tokens": (t.expected_tokens, dict(alpha=0.5, k=4)),
    "accepted_length_pmf": (t.accepted_length_pmf, dict(alpha=0.5, k=4)),
    "speedup": (t.speedup, dict(alpha=0.5, c=8.0, k=4, v=0.0, o=0.0)),
    "speedup_bound": (t.speedup_bound, dict(c=8.0, k=4, v=0.0, o=0.0)),
    "break_even_alpha": (t.break_even_alpha, dict(k=4, c=8.0, v=0.0, o=0.0)),
    "optimal_k": (t.optimal_k, dict(alpha=0.5, c=8.0, k_max=8, v=0.0, o=0.0)),
    "acceptance_rate": (t.acceptance_rate, dict(alpha=0.5, k=4)),
    "system_efficiency": (t.system_efficiency, dict(alpha=0.5, k=4)),
    "alpha_from_mean_tokens": (t.alpha_from_mean_tokens, dict(mean_tokens=2.5, k=4)),
    "alpha_from_acceptance_rate": (t.alpha_from_acceptance_rate, dict(rate=0.5, k=4)),
    "c_to_leviathan": (t.c_to_leviathan, dict(c=8.0)),
    "c_from_leviathan": (t.c_from_leviathan, dict(c_l=0.125)),
    "convert_metric": (t.convert_metric, dict(value=2.5, k=4, metric="mean_tokens")),
    "speedup_from_tokens": (t.speedup_from_tokens, dict(mean_tokens=2.5, c=8.0, k=4, v=0.0, o=0.0)),
    "expected_tokens_by_position": (t.expected_tokens_by_position, dict(acceptance=[0.8, 0.6])),
}

ALPHA_RANGE = r"alpha must be in \[0, 1\]; got "
K_RANGE = r"must be an integer in \[1, 2147483647\]; got "
POS_RANGE = r"must be a finite number > 0; got "
NONNEG_RANGE = r"must be a finite number >= 0; got "

#: (parameter, bad value, regex for the message); "k" also covers optimal_k's k_max.
BAD = [
    ("alpha", 1.2, ALPHA_RANGE + r"1\.2$"),
    ("alpha", -0.1, ALPHA_RANGE + r"-0\.1$"),
    ("alpha", np.inf, ALPHA_RANGE + r"infinity$"),
    ("k", 0, "{name} " + K_RANGE + r"0(\.0)?$"),
    ("k", 2.5, "{name} " + K_RANGE + r"2\.5$"),
    ("k", -1, "{name} " + K_RANGE + r"-1(\.0)?$"),
    ("c", 0.0, "{name} " + POS_RANGE + r"0(\.0)?$"),
    ("c", -1.0, "{name} " + POS_RANGE + r"-1(\.0)?$"),
    ("c", np.inf, "{name} " + POS_RANGE + r"infinity$"),
    ("v", -0.1, "v " + NONNEG_RANGE + r"-0\.1$"),
    ("v", np.inf, "v " + NONNEG_RANGE + r"infinity$"),
    ("o", -0.1, "o " + NONNEG_RANGE + r"-0\.1$"),
    ("mean_tokens", 5.5, r"mean_tokens must be in \[1, K \+ 1\]; got 5\.5$"),
    ("mean_tokens", 0.5, r"mean_tokens must be in \[1, K \+ 1\]; got 0\.5$"),
    ("rate", 1.5, r"rate must be in \[0, 1\]; got 1\.5$"),
    ("rate", -0.1, r"rate must be in \[0, 1\]; got -0\.1$"),
    ("metric", "foo", r"metric must be one of \[.*'mean_tokens'.*\]; got 'foo'$"),
    ("acceptance", [0.9, 1.2], r"acceptance must be in \[0, 1\]; got 1\.2 \(value 2 of 2\)$"),
    ("acceptance", 0.5, r"acceptance must list at least one position \(shape \(\.\.\., K_max\)\); got shape \(\)$"),
]

#: how the parameter is called in the message
MESSAGE_NAME = {"k_max": "k_max", "c_l": "c_L"}


def _cases(bad):
    for fname, (fn, kwargs) in FUNCS.items():
        for param, value, pattern in bad:
            targets = [p for p in kwargs if p == param or (param, p) in {("k", "k_max"), ("c", "c_l")}]
            for p in targets:
                name = MESSAGE_NAME.get(p, p)
                yield pytest.param(fn, p, value, pattern.format(name=name), id=f"{fname}-{p}={value!r}")


@pytest.mark.parametrize(("fn", "param", "value", "pattern"), list(_cases(BAD)))
def test_invalid_argument_message(fn, param, value, pattern):
    kwargs = dict(FUNCS[fn.__name__][1])
    kwargs[param] = value
    with pytest.raises(ValueError, match=pattern):
        fn(**kwargs)


def test_every_public_function_is_validated():
    public = {n for n in t.__all__ if callable(getattr(t, n)) and not isinstance(getattr(t, n), type)}
    assert public == set(FUNCS)
    # every function rejects at least one bad argument
    tested = {c.values[0].__name__ for c in _cases(BAD)}
    assert tested == set(FUNCS)


@pytest.mark.parametrize(
    ("metric", "value", "pattern"),
    [
        ("alpha", 1.2, r"alpha must be in \[0, 1\]; got 1\.2$"),
        ("alpha", -0.1, r"alpha must be in \[0, 1\]; got -0\.1$"),
        ("mean_tokens", 5.5, r"mean_tokens must be in \[1, K \+ 1\]; got 5\.5$"),
        ("mean_tokens", 0.5, r"mean_tokens must be in \[1, K \+ 1\]; got 0\.5$"),
        ("acceptance_rate", 1.5, r"acceptance_rate must be in \[0, 1\]; got 1\.5$"),
        ("acceptance_rate", -0.1, r"acceptance_rate must be in \[0, 1\]; got -0\.1$"),
        ("mean_tokens_no_bonus", 4.5, r"mean_tokens_no_bonus must be in \[0, K\]; got 4\.5$"),
        ("mean_tokens_no_bonus", -0.5, r"mean_tokens_no_bonus must be in \[0, K\]; got -0\.5$"),
        ("system_efficiency", 0.1, r"system_efficiency must be in \[1/\(K \+ 1\), 1\]; got 0\.1$"),
        ("system_efficiency", 1.5, r"system_efficiency must be in \[1/\(K \+ 1\), 1\]; got 1\.5$"),
    ],
)
def test_convert_metric_value_out_of_range(metric, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        t.convert_metric(value, 4, metric)


def test_invalid_array_element_reports_index():
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]; got 1\.2 \(value 2 of 3\)"):
        t.expected_tokens([0.5, 1.2, 0.3], 4)
    with pytest.raises(ValueError, match=r"c must be a finite number > 0; got 0 \(value 2 of 2\)"):
        t.speedup(0.5, [[1.0, 0.0]], 4)
    with pytest.raises(ValueError, match=r"mean_tokens must be in \[1, K \+ 1\]; got 4 \(value 1 of 2\)"):
        t.alpha_from_mean_tokens([4.0, 4.0], [2, 4])  # 4 > K + 1 = 3 for the first K only


def test_non_numeric_argument():
    with pytest.raises(ValueError, match=r"alpha must be a number; got 'high'"):
        t.expected_tokens("high", 4)


NAN_CASES = [
    (fn, p)
    for fn, kwargs in FUNCS.values()
    for p in kwargs
    if p in {"alpha", "k", "k_max", "c", "c_l", "v", "o", "mean_tokens", "rate", "value"}
]


@pytest.mark.parametrize(("fn", "param"), NAN_CASES, ids=[f"{f.__name__}-{p}" for f, p in NAN_CASES])
def test_nan_rejected_naming_parameter(fn, param):
    kwargs = dict(FUNCS[fn.__name__][1])
    kwargs[param] = float("nan")
    name = {"c_l": "c_L", "value": "mean_tokens"}.get(param, param)
    with pytest.raises(ValueError, match=rf"^{name} must .*; got not a number"):
        fn(**kwargs)


_NAN_RANGE = {
    "alpha": r"\[0, 1\]",
    "c": r"> 0",
    "c_l": r"> 0",
    "v": r">= 0",
    "o": r">= 0",
    "k": r">= 1",
    "k_max": r">= 1",
    "mean_tokens": r"\[1, K \+ 1\]",
    "value": r"\[1, K \+ 1\]",
    "rate": r"\[0, 1\]",
}


@pytest.mark.parametrize(("fn", "param"), [(t.expected_tokens, "alpha"), (t.speedup, "c"), (t.speedup, "v")])
def test_nan_message_names_allowed_range(fn, param):
    kwargs = dict(FUNCS[fn.__name__][1])
    kwargs[param] = float("nan")
    with pytest.raises(ValueError, match=rf"{param} must .*{_NAN_RANGE[param]}.*; got not a number"):
        fn(**kwargs)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("k", [2**63, 1e300])
def test_huge_k_not_silently_wrong(k):
    try:
        e = float(t.expected_tokens(0.5, k))
    except ValueError:
        return  # rejecting K beyond int64 is acceptable
    assert e == 2.0


@pytest.mark.parametrize("shapes", [((301, 1), (1, 457)), ((1, 457), (301, 1)), ((137_000,), ())])
def test_optimal_k_threaded_blocks_equal_single_block(monkeypatch, shapes):
    """Large grids are split over threads by rows; the answer must not depend on it."""
    rng = np.random.default_rng(7)
    alpha = rng.uniform(0, 1, shapes[0])
    c = rng.uniform(0.5, 50, shapes[1]) if shapes[1] else 8.0
    shape = np.broadcast_shapes(np.shape(alpha), np.shape(c))
    assert len(t._row_blocks(shape)) == min(os.cpu_count() or 1, 8, shape[0])  # really split (1 on 1 core)
    threaded = t.optimal_k(alpha, c, 24, v=0.02, o=0.1)
    monkeypatch.setattr(t, "_PARALLEL_MIN", 10**12)
    single = t.optimal_k(alpha, c, 24, v=0.02, o=0.1)
    np.testing.assert_array_equal(threaded.k, single.k)
    np.testing.assert_array_equal(threaded.speedup, single.speedup)

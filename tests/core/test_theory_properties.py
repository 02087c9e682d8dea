"""Hypothesis property tests of specviz.core.theory: ranges, monotonicity, identities,
inverses, broadcasting and argument validation (docs/design.md §1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _tiers import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from specviz.core import theory as t

SETTINGS = settings(max_examples=examples(200), deadline=None)

alphas = st.floats(0.0, 1.0)
ks = st.integers(1, 64)
cs = st.floats(1e-3, 1e3)
overheads = st.floats(0.0, 0.5)


def _rel_le(a: float, b: float, rel: float = 1e-14) -> bool:
    """a <= b up to a relative tolerance (for round-off in separately computed values)."""
    return a <= b + rel * abs(b)


# --------------------------------------------------------------------------------------
# E[N] and the distribution of N
# --------------------------------------------------------------------------------------


@SETTINGS
@given(alphas, ks)
def test_expected_tokens_in_range(alpha, k):
    e = float(t.expected_tokens(alpha, k))
    assert 1.0 <= e <= k + 1
    assert e >= (1.0 + alpha) * (1 - 1e-15)  # at least the first two terms (K >= 1)


@SETTINGS
@given(alphas, alphas, ks)
def test_expected_tokens_nondecreasing_in_alpha(a1, a2, k):
    a1, a2 = min(a1, a2), max(a1, a2)
    assert _rel_le(float(t.expected_tokens(a1, k)), float(t.expected_tokens(a2, k)))


@SETTINGS
@given(alphas, ks, ks)
def test_expected_tokens_nondecreasing_in_k(alpha, k1, k2):
    k1, k2 = min(k1, k2), max(k1, k2)
    assert _rel_le(float(t.expected_tokens(alpha, k1)), float(t.expected_tokens(alpha, k2)))


@SETTINGS
@given(alphas, ks)
def test_pmf_is_a_distribution_with_mean_expected_tokens(alpha, k):
    p = t.accepted_length_pmf(alpha, k)
    assert p.shape == (k + 1,)
    assert np.all(p >= 0.0)
    assert abs(p.sum() - 1.0) <= 1e-12
    mean = float(np.sum(np.arange(1, k + 2) * p))
    assert mean == pytest.approx(float(t.expected_tokens(alpha, k)), rel=1e-10)


# --------------------------------------------------------------------------------------
# speedup, break-even, optimal K
# --------------------------------------------------------------------------------------


@SETTINGS
@given(alphas, cs, ks, overheads, overheads)
def test_speedup_at_most_bound(alpha, c, k, v, o):
    s = float(t.speedup(alpha, c, k, v, o))
    b = float(t.speedup_bound(c, k, v, o))
    assert 0.0 < s <= b
    if c > 1 and v == 0 and o == 0:
        assert b < c or math.isclose(b, c, rel_tol=1e-15)


@SETTINGS
@given(alphas, cs, ks)
def test_speedup_basic_model_formula(alpha, c, k):
    e = float(t.expected_tokens(alpha, k))
    assert float(t.speedup(alpha, c, k)) == pytest.approx(e * c / (c + k), rel=1e-15, abs=0)


@SETTINGS
@given(ks, cs, overheads, overheads)
def test_break_even(k, c, v, o):
    a_star = float(t.break_even_alpha(k, c, v, o))
    d = 1.0 + v * k + o + k / c  # same order of operations as the contract
    assert math.isnan(a_star) == (d >= k + 1)
    if not math.isnan(a_star):
        assert 0.0 <= a_star < 1.0
        assert float(t.speedup(a_star, c, k, v, o)) == pytest.approx(1.0, abs=1e-9)


@SETTINGS
@given(ks, st.floats(1e-3, 1.0))
def test_break_even_nan_for_c_at_most_1(k, c):
    assert math.isnan(float(t.break_even_alpha(k, c)))


@SETTINGS
@given(alphas, cs, st.integers(1, 40), overheads, overheads)
def test_optimal_k_is_brute_force_argmax(alpha, c, k_max, v, o):
    s = [float(t.speedup(alpha, c, k, v, o)) for k in range(1, k_max + 1)]
    best = max(s)
    if best <= 1.0:
        k_bf, s_bf = 0, 1.0
    else:
        k_bf, s_bf = s.index(best) + 1, best  # smallest argmax
    res = t.optimal_k(alpha, c, k_max, v, o)
    assert int(res.k) == k_bf
    assert float(res.speedup) == s_bf


@SETTINGS
@given(alphas, st.floats(1e-3, 1.0), st.integers(1, 40))
def test_optimal_k_never_speculates_for_c_at_most_1(alpha, c, k_max):
    res = t.optimal_k(alpha, c, k_max)
    assert int(res.k) == 0 and float(res.speedup) == 1.0


# --------------------------------------------------------------------------------------
# converters
# --------------------------------------------------------------------------------------


@SETTINGS
@given(alphas, ks)
def test_alpha_from_mean_tokens_round_trip(alpha, k):
    e = t.expected_tokens(alpha, k)
    assert float(t.alpha_from_mean_tokens(e, k)) == pytest.approx(alpha, abs=1e-9)


@SETTINGS
@given(alphas, ks)
def test_alpha_from_acceptance_rate_round_trip(alpha, k):
    r = t.acceptance_rate(alpha, k)
    assert 0.0 <= r <= 1.0
    assert float(t.alpha_from_acceptance_rate(r, k)) == pytest.approx(alpha, abs=1e-9)


@SETTINGS
@given(alphas, ks, st.sampled_from(sorted(t.METRICS)))
def test_convert_metric_round_trip(alpha, k, metric):
    full = t.convert_metric(alpha, k, "alpha")
    assert set(full) == set(t.METRICS)
    back = t.convert_metric(full[metric], k, metric)
    assert float(back["alpha"]) == pytest.approx(alpha, abs=1e-9)
    assert 0.0 <= back["alpha"] <= 1.0


@SETTINGS
@given(st.floats(1e-3, 1e3))
def test_leviathan_round_trip(c):
    assert float(t.c_from_leviathan(t.c_to_leviathan(c))) == pytest.approx(c, rel=1e-15)


# --------------------------------------------------------------------------------------
# broadcasting
# --------------------------------------------------------------------------------------


def _arr(shape, lo, hi, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def _k_arr(shape, seed=1):
    return np.random.default_rng(seed).integers(1, 17, size=shape)


def test_broadcast_3x1_by_1x4():
    a, c = _arr((3, 1), 0, 1), _arr((1, 4), 0.5, 20)
    k_row, k_col = _k_arr((1, 4)), _k_arr((3, 1))
    assert t.expected_tokens(a, k_row).shape == (3, 4)
    assert t.speedup(a, c, 4).shape == (3, 4)
    assert t.break_even_alpha(k_col, c).shape == (3, 4)
    res = t.optimal_k(a, c, 8)
    assert res.k.shape == res.speedup.shape == (3, 4)
    assert t.accepted_length_pmf(a, k_row).shape == (3, 4, int(k_row.max()) + 1)


@SETTINGS
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
def test_broadcast_shapes(shapes):
    (s1, s2), out = shapes.input_shapes, shapes.result_shape
    a, c = _arr(s1, 0, 1), _arr(s2, 0.5, 20)
    k1, k2 = _k_arr(s1), _k_arr(s2)
    assert np.shape(t.expected_tokens(a, k2)) == out
    assert np.shape(t.speedup(a, c, 4)) == out
    assert np.shape(t.speedup(a, 8.0, k2, v=_arr(s1, 0, 0.1))) == out
    assert np.shape(t.break_even_alpha(k1, c)) == out
    res = t.optimal_k(a, c, 6)
    assert np.shape(res.k) == np.shape(res.speedup) == out
    assert np.shape(t.acceptance_rate(a, k2)) == out
    assert np.shape(t.alpha_from_mean_tokens(t.expected_tokens(a, k2), k2)) == out
    # elementwise equal to the scalar calls
    ab, cb, kb = np.broadcast_arrays(a, c, k2)
    s = t.speedup(a, c, k2)
    for idx in np.ndindex(out):
        assert s[idx] == t.speedup(float(ab[idx]), float(cb[idx]), int(kb[idx]))


@SETTINGS
@given(alphas, cs, ks)
def test_scalars_in_scalars_out(alpha, c, k):
    for value in (
        t.expected_tokens(alpha, k),
        t.speedup(alpha, c, k),
        t.speedup_bound(c, k),
        t.break_even_alpha(k, c),
        t.acceptance_rate(alpha, k),
        t.system_efficiency(alpha, k),
        t.alpha_from_mean_tokens(t.expected_tokens(alpha, k), k),
        t.c_to_leviathan(c),
        *t.optimal_k(alpha, c, 4),
        *t.convert_metric(alpha, k, "alpha").values(),
    ):
        assert np.ndim(value) == 0
        assert isinstance(value, (float, np.floating, np.integer))
    assert isinstance(t.expected_tokens(alpha, k), float)
    assert isinstance(t.optimal_k(alpha, c, 4).k, (int, np.integer))


# --------------------------------------------------------------------------------------
# invalid inputs
# --------------------------------------------------------------------------------------

bad_alphas = st.one_of(
    st.floats(max_value=0.0, exclude_max=True, allow_nan=False),
    st.floats(min_value=1.0, exclude_min=True, allow_nan=False),
)


def shown_value(text: str) -> float:
    """The number a message shows, as written for a person: digits, or "infinity" / "minus infinity"."""
    return {"infinity": math.inf, "minus infinity": -math.inf}.get(text) or float(text)


@SETTINGS
@given(bad_alphas, ks, cs)
def test_alpha_out_of_range_rejected(alpha, k, c):
    pattern = r"^alpha must be in \[0, 1\]; got "
    for call in (
        lambda: t.expected_tokens(alpha, k),
        lambda: t.accepted_length_pmf(alpha, k),
        lambda: t.speedup(alpha, c, k),
        lambda: t.optimal_k(alpha, c, 4),
        lambda: t.acceptance_rate(alpha, k),
        lambda: t.system_efficiency(alpha, k),
    ):
        with pytest.raises(ValueError, match=pattern) as info:
            call()
        assert shown_value(str(info.value).rsplit("got ", 1)[1]) == alpha


@SETTINGS
@given(alphas, st.integers(max_value=0), cs)
def test_k_nonpositive_rejected(alpha, k, c):
    assume(abs(k) < 2**53)  # keep the value exactly representable in the message
    pattern = r"^k must be an integer in \[1, 2147483647\]; got "
    for call in (
        lambda: t.expected_tokens(alpha, k),
        lambda: t.accepted_length_pmf(alpha, k),
        lambda: t.speedup(alpha, c, k),
        lambda: t.break_even_alpha(k, c),
        lambda: t.acceptance_rate(alpha, k),
        lambda: t.alpha_from_mean_tokens(1.0, k),
        lambda: t.convert_metric(alpha, k, "alpha"),
    ):
        with pytest.raises(ValueError, match=pattern) as info:
            call()
        assert float(str(info.value).rsplit("got ", 1)[1]) == k
    with pytest.raises(ValueError, match=r"^k_max must be an integer in \[1, 2147483647\]; got "):
        t.optimal_k(alpha, c, k)


@SETTINGS
@given(alphas, ks, st.floats(1.0, 1e6).filter(lambda x: x != int(x)))
def test_k_non_integer_rejected(alpha, k, kf):
    with pytest.raises(ValueError, match=r"^k must be an integer in \[1, 2147483647\]; got "):
        t.expected_tokens(alpha, kf)


@SETTINGS
@given(alphas, ks, st.floats(max_value=0.0, allow_nan=False))
def test_c_nonpositive_rejected(alpha, k, c):
    with pytest.raises(ValueError, match=r"^c must be a finite number > 0; got "):
        t.speedup(alpha, c, k)
    with pytest.raises(ValueError, match=r"^c must be a finite number > 0; got "):
        t.break_even_alpha(k, c)


def test_the_quick_tier_explores_less_only_when_slow_tests_are_deselected(request):
    quick = "not slow" in (request.config.getoption("markexpr") or "")
    assert examples(200) == (50 if quick else 200)


@SETTINGS
@given(alpha=st.floats(0, 1), k_max=st.integers(1, 24))
def test_positional_acceptance_equal_to_alpha_is_the_iid_model(alpha, k_max):
    """a_i = α for every position gives E[N] = (1 − α^(K+1)) / (1 − α) for each K."""
    by_position = t.expected_tokens_by_position(np.full(k_max, alpha))
    ks = np.arange(1, k_max + 1)
    np.testing.assert_allclose(by_position, t.expected_tokens(alpha, ks), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(alpha=st.floats(0, 1), c=st.floats(0.01, 1e4), k=st.integers(1, 64), v=st.floats(0, 2), o=st.floats(0, 2))
def test_speedup_from_tokens_is_speedup_at_the_models_mean(alpha, c, k, v, o):
    mean = t.expected_tokens(alpha, k)
    assert t.speedup_from_tokens(mean, c, k, v, o) == pytest.approx(t.speedup(alpha, c, k, v, o), rel=1e-12)
    # a chain drafts K times a round: D = K is the default
    assert t.speedup_from_tokens(mean, c, k, v, o, draft_steps=k) == pytest.approx(t.speedup(alpha, c, k, v, o))


@SETTINGS
@given(c=st.floats(0.01, 1e4), k=st.integers(1, 64), v=st.floats(0, 2), data=st.data())
def test_a_trees_speedup_pays_one_draft_forward_per_level(c, k, v, data):
    """S = F / (1 + vK + D/c): fewer draft forwards (a shallower tree of the same size) never cost more."""
    d = data.draw(st.integers(1, k))
    f = data.draw(st.floats(1, d + 1))
    s = t.speedup_from_tokens(f, c, k, v, draft_steps=d)
    assert s == pytest.approx(f / (1 + v * k + d / c), rel=1e-12)
    assert s >= t.speedup_from_tokens(f, c, k, v) * (1 - 1e-12)
    with pytest.raises(ValueError, match=r"draft_steps must be in \[1, K\]"):
        t.speedup_from_tokens(f, c, k, draft_steps=k + 1)

"""The tune's arithmetic: the round-cost line per load, E[N] from per-position shares, the best K, the tiers,
the static-vs-schedule gain, and the leave-one-load-out check on points made from a known line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _tiers import examples
from _tune_points import SHARES, synthetic
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.base.i18n import Message
from specviz.core import theory, tuning


def test_mean_tokens_sums_the_shares_and_continues_geometrically():
    assert tuning.mean_tokens(SHARES, 0) == 1.0
    assert tuning.mean_tokens(SHARES, 3) == pytest.approx(1 + 0.8 + 0.6 + 0.45)
    q = 0.12 / 0.2  # the last conditional acceptance repeats past the measured positions
    assert tuning.mean_tokens(SHARES, 8) == pytest.approx(1 + sum(SHARES) + 0.12 * q + 0.12 * q * q)


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(0.0, 0.99), st.integers(1, 12))
def test_constant_acceptance_shares_give_the_closed_form(alpha, k):
    shares = [alpha**i for i in range(1, 4)]  # three positions measured, the rest extrapolated
    assert tuning.mean_tokens(shares, k) == pytest.approx(float(theory.expected_tokens(alpha, k)), rel=1e-9)


def test_a_load_with_k0_and_two_k_recovers_its_line_exactly():
    f = tuning.fit_load(synthetic(4e-3, 0.5, 0.2, 2, [0, 2, 5]), 2)
    assert (f.t0_s, f.overhead, f.per_token, f.how) == (
        pytest.approx(4e-3),
        pytest.approx(0.5),
        pytest.approx(0.2),
        tuning.OWN,
    )


def test_one_k_with_k0_takes_r_from_the_profile_and_without_k0_takes_both():
    prof = tuning.Profile(0.5, 0.2, "test")
    f = tuning.fit_load(synthetic(4e-3, 0.5, 0.2, 2, [0, 3]), 2, prof)
    assert f.how == "o fitted, r from the profile" and f.overhead == pytest.approx(0.5)
    f = tuning.fit_load(synthetic(4e-3, 0.5, 0.2, 2, [3]), 2, prof)
    assert f.how == "T0 fitted, o and r from the profile" and f.t0_s == pytest.approx(4e-3)


def test_one_k_with_k0_and_no_profile_takes_o_as_zero():
    f = tuning.fit_load(synthetic(4e-3, 0.0, 0.3, 2, [0, 3]), 2)
    assert f.how == "r fitted, o taken as 0" and (f.overhead, f.per_token) == (0.0, pytest.approx(0.3))


def test_points_that_cannot_fix_a_line_are_a_message_naming_the_load_and_the_ks():
    with pytest.raises(Message, match="at 4 requests in flight the points measured \\(K = 3\\)"):
        tuning.fit_load(synthetic(4e-3, 0.5, 0.2, 4, [3]), 4)


def test_the_best_k_is_the_argmax_of_the_predicted_throughput_and_zero_where_drafting_loses():
    fast = tuning.fit_load(synthetic(4e-3, 0.1, 0.05, 1, [0, 1, 4]), 1)
    slow = tuning.fit_load(synthetic(4e-3, 1.5, 0.9, 8, [0, 1, 4]), 8)
    ks = range(0, 9)
    for f in (fast, slow):
        p = tuning.predict(f, SHARES, ks, 0.02, 128)
        assert tuning.best_k(f, SHARES, ks, 0.02, 128).k == int(np.argmax(p["tokens_per_s"]))
    assert tuning.best_k(fast, SHARES, ks, 0.02, 128).k >= 3 and tuning.best_k(slow, SHARES, ks, 0.02, 128).k == 0


def test_tiers_start_where_k_changes_and_k_at_reads_them_back():
    choices = [tuning.Choice(c, k, 1.0, 1.0, 1.0) for c, k in [(1, 5), (2, 5), (4, 3), (8, 0), (16, 0)]]
    sched = tuning.tiers(choices)
    assert sched == [(1, 5), (4, 3), (8, 0)]
    assert [tuning.k_at(sched, c) for c in (1, 3, 4, 7, 8, 100)] == [5, 5, 3, 3, 0, 0]


def test_a_schedule_gains_over_the_best_static_k_by_the_time_weighted_mean():
    table = {(0, 1): 100, (3, 1): 150, (0, 8): 400, (3, 8): 300}
    static, tps, best, sched, gain = tuning.static_vs_schedule(table, [1, 8], [0, 3], {1: 0.5, 8: 0.5})
    assert (static, best) == (0, {1: 3, 8: 0})  # 0: (100 + 400) / 2 = 250 beats 3: (150 + 300) / 2 = 225
    assert (tps, sched, gain) == (250, 275, pytest.approx(0.1))
    with pytest.raises(Message, match="traffic mix"):
        tuning.mix_weights([1, 8], {1: -1.0})


def test_analyse_fits_every_load_and_predicts_the_measured_points_exactly():
    points = [p for c, r in [(1, 0.1), (4, 0.2)] for p in synthetic(3e-3 * c, 0.4, r, c, [0, 1, 3, 6])]
    a = tuning.analyse(points)
    measured = a.table.dropna()
    assert len(measured) == 8
    assert np.allclose(measured["tpot_s"], measured["measured_tpot_s"])
    assert np.allclose(measured["tokens_per_s"], measured["measured_tokens_per_s"])
    assert a.profile.overhead == pytest.approx(0.4) and a.profile.per_token == pytest.approx(0.15)


def test_a_remote_tune_at_one_k_predicts_the_others_with_the_carried_profile():
    truth = synthetic(5e-3, 0.4, 0.2, 2, range(0, 7))
    a = tuning.analyse([p for p in truth if p["k"] == 6], tuning.Profile(0.4, 0.2, "earlier tune"))
    got = a.table.set_index("k")["tpot_s"]
    assert all(got[p["k"]] == pytest.approx(p["tpot_s"]) for p in truth)


def test_leave_one_load_out_is_exact_when_every_load_shares_the_rounds_fixed_seconds_and_r():
    """A round's fixed work o·T0 carries between loads in seconds (T0 grows with the load, that work hardly
    does); r in target steps. Loads sharing both are predicted exactly; sharing o in steps instead, they are
    not, unless T0 is the same."""
    geometric = [0.7**i for i in range(1, 7)]  # what an anchor's tail extrapolates is then the truth
    seconds = 6e-4  # o·T0 at every load
    points = [p for c in (1, 2, 4) for p in synthetic(2e-3 * c, seconds / (2e-3 * c), 0.12, c, range(0, 5), geometric)]
    errs = tuning.single_k_errors(points)
    assert len(errs) == 3 * 4 * 4  # 3 loads × 4 anchors × the 4 other K
    assert errs[["tpot_err", "tokens_per_s_err"]].abs().max().max() < 1e-9
    steps = [p for c in (1, 2, 4) for p in synthetic(2e-3 * c, 0.3, 0.12, c, range(0, 5), geometric)]
    assert tuning.single_k_errors(steps)["tpot_err"].abs().max() > 0.01
    same_t0 = [p for c in (1, 2, 4) for p in synthetic(2e-3, 0.3, 0.12, c, range(0, 5), geometric)]
    assert tuning.single_k_errors(same_t0)[["tpot_err", "tokens_per_s_err"]].abs().max().max() < 1e-9


def test_the_profile_of_an_answer_round_trips_and_bad_fields_are_named():
    a = tuning.analyse([p for c in (1, 2) for p in synthetic(2e-3, 0.3, 0.12, c, [0, 2, 4])])
    profile = {"profile": tuning.answer_json(a)["profile"]}
    back = tuning.read_profile(json.loads(json.dumps(profile, allow_nan=False)))
    assert (back.overhead, back.per_token, back.overhead_s) == pytest.approx((0.3, 0.12, 0.3 * 2e-3))
    old = tuning.answer_json(a) | {"profile": {"overhead": 0.3, "per_token": 0.12, "source": "before seconds"}}
    assert math.isnan(tuning.read_profile(old).overhead_s)  # an answer.json from before: o carried in steps
    with pytest.raises(Message, match="profile field per_token must be a finite number; got 'x'"):
        tuning.read_profile({"profile": {"overhead": 0.1, "per_token": "x"}})
    assert math.isfinite(a.choices[0].tokens_per_s)


def test_one_fixed_k_is_the_best_on_average_and_loses_nothing_where_it_is_each_cells_best():
    s = np.array([[1.5, 1.8, 1.7], [1.2, 1.1, 0.9], [0.8, 0.7, 0.6]])  # S at K = 1..3 in three cells
    k, loss = tuning.fixed_k_loss(s)
    ratios = np.array([[1 / 1.8, 1.5 / 1.8, 1, 1.7 / 1.8], [1 / 1.2, 1, 1.1 / 1.2, 0.9 / 1.2], [1, 0.8, 0.7, 0.6]])
    assert k == int(np.argmax(ratios.mean(axis=0))) and np.allclose(loss, 1 - ratios[:, k])
    assert tuning.fixed_k_loss(np.full((4, 3), 0.9))[0] == 0  # nothing pays: K = 0 everywhere, no loss
    assert not tuning.fixed_k_loss(np.full((4, 3), 0.9))[1].any()


def test_confirm_puts_an_earlier_tunes_prediction_beside_each_measured_point():
    geo = [0.7**i for i in range(1, 7)]  # the earlier tune's tail past K = 3 is then the truth
    earlier = tuning.analyse([p for c in (1, 4) for p in synthetic(2e-3 * c, 0.3, 0.2, c, [0, 1, 3], geo)])
    later = synthetic(2e-3, 0.3, 0.2, 1, [5], geo) + synthetic(8e-3, 0.3, 0.2, 4, [2], geo)  # K not measured before
    got = tuning.confirm(earlier, later)
    assert sorted(zip(got["k"], got["concurrency"], strict=True)) == [(2, 4), (5, 1)]
    assert got["error"].abs().max() < 1e-9  # the same line measured again: predicted exactly
    assert tuning.confirm(earlier, []).empty


def test_what_to_measure_next_is_each_loads_best_k_where_it_is_not_the_servers():
    a = tuning.analyse([p for c, r in [(1, 0.05), (8, 1.5)] for p in synthetic(2e-3 * c, 0.1, r, c, [0, 1, 4])])
    best = {c.concurrency: c.k for c in a.choices}
    nxt = tuning.next_to_measure(a, 4)
    assert [(load, k) for load, k, _ in nxt] == [(c, k) for c, k in best.items() if k != 4]
    assert all(gain > 0 for _, _, gain in nxt)


def test_a_load_is_given_the_nearest_loads_round_cost_linear_in_log_c_and_flat_beyond():
    fits = [
        tuning.fit_load(synthetic(0.004, 1.0, 0.1, 1, range(4)), 1),
        tuning.fit_load(synthetic(0.008, 0.25, 0.5, 4, range(4)), 4),
    ]
    o_s = [f.overhead * f.t0_s for f in fits]  # 4 ms and 2 ms of fixed work per round
    mid = tuning.profile_at(fits, 2, "t")
    assert mid.per_token == pytest.approx(0.3) and mid.overhead_s == pytest.approx(sum(o_s) / 2)
    assert tuning.profile_at(fits, 64, "t").per_token == pytest.approx(0.5)  # held flat past the last load
    assert tuning.profile_at(fits, 1, "t").overhead_s == pytest.approx(o_s[0])

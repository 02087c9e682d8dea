"""A tune's points as rows of the run library: the speedup against K = 0 at the same load and length, the
acceptance by position, which points make no row, and that the rows pass the library's own checks."""

from __future__ import annotations

import math

import pytest
from _tune_points import SHARES, synthetic, two_contexts
from hypothesis import given
from hypothesis import strategies as st

from specviz.base.paths import DATA
from specviz.core import tuning
from specviz.data.measurements import load_records
from specviz.servers import tune


def test_each_point_with_k_is_a_row_against_k0_at_its_own_load():
    points = synthetic(0.004, 0.5, 0.1, 1, range(4)) + synthetic(0.006, 0.3, 0.08, 8, range(4))
    rows = tuning.library_records(points, label="t", target="a", draft="b", method="model")
    assert [(r["k"], r["concurrency"]) for r in rows] == [(k, c) for c in (1, 8) for k in (1, 2, 3)]
    by = {(p["k"], p["concurrency"]): p for p in points}
    for r in rows:
        p, base = by[r["k"], r["concurrency"]], by[0, r["concurrency"]]
        assert r["speedup"] == pytest.approx(p["tokens_per_s"] / base["tokens_per_s"], rel=1e-12)
        assert r["t_target_ms"] == pytest.approx(base["tpot_s"] * 1e3) and r["batch_size"] == r["concurrency"]
        assert (r["target_model"], r["draft_model"], r["method"]) == ("a", "b", "model")
        assert r["label"] == f"t: K = {r['k']}, {r['concurrency']} in flight"


def test_lengths_are_matched_and_named():
    rows = tuning.library_records(two_contexts(), label="t")
    assert {r["label"].rsplit(", ", 1)[1] for r in rows} == {"64-token prompts", "2048-token prompts"}
    # each row's baseline is K = 0 at its own length: at 2048 tokens the step is dearer
    base = {r["label"].rsplit(", ", 1)[1]: r["t_target_ms"] for r in rows}
    assert base["2048-token prompts"] > base["64-token prompts"]


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8).map(lambda u: sorted(u, reverse=True)))
def test_conditional_acceptance_rebuilds_the_shares(shares):
    a = tuning.conditional(shares)
    rebuilt, prod = [], 1.0
    for x in a:
        prod *= 0.0 if math.isnan(x) else x
        rebuilt.append(prod)
    assert rebuilt == pytest.approx(shares, abs=1e-12)


def test_points_without_k0_or_acceptance_make_no_row_and_failed_points_are_skipped():
    p = synthetic(0.004, 0.5, 0.1, 2, [0, 2])
    p[1]["shares"], p[1]["mean_accepted"] = [], None
    assert tuning.library_records(p[1:], label="t") == []  # no K = 0 to compare with, no acceptance
    only_k0_failed = [dict(p[0], failed=32), p[1]]
    assert tuning.library_records(only_k0_failed, label="t") == []
    with_shares = synthetic(0.004, 0.5, 0.1, 2, [2])
    (row,) = tuning.library_records(with_shares, label="t")
    assert "speedup" not in row and row["mean_accepted_tokens"] == pytest.approx(1 + SHARES[0] + SHARES[1])
    assert row["per_position_acceptance"] == f"{SHARES[0]:.6g};{SHARES[1] / SHARES[0]:.6g}"


def test_the_shipped_tunes_load_as_runs_with_the_measured_acceptance():
    for folder in (DATA / "tune" / "llamacpp-bundled", DATA / "tune" / "llamacpp-bundled-lengths"):
        points = tune.read_points(folder)
        rows = tuning.library_records(points, label="example")
        frame, report = load_records(rows, name="example")
        assert len(frame) == len([p for p in points if p["k"] > 0]) and report.rows_skipped == 0
        measured = [p["mean_accepted"] for p in points if p["k"] > 0]
        assert frame["mean_accepted_tokens"].tolist() == pytest.approx(measured)
        assert frame["alpha_used"].between(0, 1).all()

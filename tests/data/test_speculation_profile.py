"""Model-Optimizer speculation_profile.json (fixtures tests/fixtures/formats/speculation_profile*.json, from
specdec_bench/speculation_profile.py build_profile; see the fixtures' README): read, and written back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specviz.data.measurements import load_measurements
from specviz.data.measurements.readers.speculation_profile import to_profile

FORMATS = Path(__file__).parents[1] / "fixtures" / "formats"
PROFILE = json.loads((FORMATS / "speculation_profile.json").read_text())


def load(obj, name="speculation_profile.json", **kw):
    return load_measurements(json.dumps(obj, indent=2), name, **kw)


def conditional(df, i=0) -> list[float]:
    return [float(x) for x in df.per_position_acceptance.iloc[i].split(";")]


def test_the_profile_and_its_categories():
    df, report = load(PROFILE)
    assert report.format == "speculation_profile" and not report.row_errors and not report.warnings
    assert df.k.iloc[0] == 3 and df.mean_accepted_tokens.iloc[0] == 2.45865
    np.testing.assert_allclose(conditional(df), PROFILE["conditional_accept_rates"], atol=2e-6)
    # the histogram's survival: P(length >= i + 2) = marginal p_i; 1 + Σ p_i = the mean
    hist = {int(n): c for n, c in PROFILE["acceptance_length_histogram"].items()}
    p = [sum(c for n, c in hist.items() if n >= i + 2) / sum(hist.values()) for i in range(3)]
    np.testing.assert_allclose(np.cumprod(conditional(df)), p, atol=2e-6)
    assert 1 + sum(p) == pytest.approx(df.mean_accepted_tokens.iloc[0], abs=1e-5)
    cats = df.iloc[1:]
    assert list(cats.label) == [f"speculation_profile.json · {c}" for c in PROFILE["per_category"]]
    assert cats.mean_accepted_tokens.tolist() == list(PROFILE["per_category"].values())


def test_ar_validate_profile_reads_too():
    df, report = load_measurements((FORMATS / "speculation_profile.ar_validate.json").read_text(), "ar.json")
    assert report.format == "speculation_profile" and len(df) == 1 and df.mean_accepted_tokens.iloc[0] == 2.397695


def test_round_trip_through_the_schema():
    df, _ = load(PROFILE)
    out = to_profile(int(df.k.iloc[0]), conditional(df), float(df.mean_accepted_tokens.iloc[0]), "eagle3")
    for key in ("schema_version", "num_speculative_tokens", "mean_accept_length", "method"):
        assert out[key] == PROFILE[key]
    np.testing.assert_allclose(out["conditional_accept_rates"], PROFILE["conditional_accept_rates"], atol=2e-6)
    np.testing.assert_allclose(out["marginal_accept_rates"], PROFILE["marginal_accept_rates"], atol=2e-6)
    again, report = load(out)
    assert not report.row_errors and again.mean_accepted_tokens.iloc[0] == df.mean_accepted_tokens.iloc[0]
    np.testing.assert_allclose(conditional(again), conditional(df), atol=2e-6)


@pytest.mark.slow
@given(st.lists(st.floats(0.05, 1.0), min_size=1, max_size=8))
def test_written_profiles_are_consistent_and_read_back(rates):
    out = to_profile(len(rates), rates)
    assert out["mean_accept_length"] == pytest.approx(1 + sum(out["marginal_accept_rates"]), abs=1e-5)
    assert all(b <= a for a, b in zip(out["marginal_accept_rates"], out["marginal_accept_rates"][1:], strict=False))
    df, report = load(out)
    assert df.k.iloc[0] == len(rates) and not report.row_errors


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"measured": False}, "no measurement"),
        ({"marginal_accept_rates": [0.7, 0.5, 0.29]}, "running products of conditional_accept_rates"),
        ({"num_speculative_tokens": 4}, "lists 3 per-position rates"),
        (
            {"conditional_accept_rates": [69.9, 66.9, 62.1], "marginal_accept_rates": None, "mean_accept_length": None},
            r"conditional_accept_rates\[0\] = 69.9 is out of range; allowed: a JSON number in \[0, 1\]",
        ),
    ],
    ids=["stub", "inconsistent", "wrong-k", "percent"],
)
def test_hostile_profiles_are_refused_naming_the_field(change, match):
    run = PROFILE | change
    run.pop("per_category")
    with pytest.raises(ValueError, match=match):
        load(run)


def test_truncated_profile_is_refused():
    with pytest.raises(ValueError, match="not a complete JSON object"):
        load_measurements((FORMATS / "speculation_profile.json").read_text()[:300], "p.json", format="modelopt")

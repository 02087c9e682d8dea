"""vLLM's per-request speculative metrics (``--per-request-spec-decode-metrics``), read into one row per
request, and the distribution of N they give against the chapter's pmf."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.app import overlays
from specviz.core import theory
from specviz.data.measurements import load_measurements

FIXTURE = Path(__file__).parents[1] / "fixtures" / "formats" / "vllm-per-request-spec.json"
RESPONSE = json.loads(FIXTURE.read_text())


def _with(**spec) -> dict:
    out = json.loads(json.dumps(RESPONSE))
    out["metrics"]["speculative_decoding"].update(spec)
    return out


def test_the_fixture_is_one_request_with_its_histogram():
    frame, report = load_measurements(FIXTURE)
    assert report.format == "vllm_request" and len(frame) == 1
    row = frame.iloc[0]
    # acceptance_histogram [3, 1, 2, 3]: 9 steps, 0·3 + 1·1 + 2·2 + 3·3 = 14 accepted drafts
    assert row["k"] == 3 and row["rounds"] == 9
    assert row["mean_accepted_tokens"] == pytest.approx(1 + 14 / 9)
    assert row["acceptance_rate"] == pytest.approx(14 / 27)
    assert row["per_position_acceptance"] == "0.666667;0.833333;0.6"  # p = 6/9, 5/9, 3/9 → conditional
    assert row["context_length"] == 57 + 24 / 2 and row["target_model"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_json_lines_a_list_and_server_sent_events_read_alike():
    second = _with(acceptance_histogram=[1, 0, 0, 4], num_spec_steps=5, num_accepted_draft_tokens=12)
    lines = "\n".join(json.dumps(r) for r in (RESPONSE, second))
    events = "\n\n".join(f"data: {json.dumps(r)}" for r in ({"choices": []}, RESPONSE, second)) + "\n\ndata: [DONE]\n"
    frames = [load_measurements(text)[0] for text in (lines, json.dumps([RESPONSE, second]), events)]
    for frame in frames:
        assert frame["rounds"].tolist() == [9, 5]
        assert frame["mean_accepted_tokens"].tolist() == pytest.approx([1 + 14 / 9, 1 + 12 / 5])


def test_a_histogram_per_draft_length_gives_a_row_per_length():
    by_length = {"2": [1, 1, 2], "3": [0, 1, 0, 3]}
    frame, _ = load_measurements(json.dumps(_with(acceptance_histogram_by_draft_length=by_length)))
    assert frame["k"].tolist() == [2, 3] and frame["rounds"].tolist() == [4, 4]
    assert frame["mean_accepted_tokens"].tolist() == pytest.approx([1 + 5 / 4, 1 + 10 / 4])


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"acceptance_histogram": [3, "1", 2, 3]}, "acceptance_histogram"),
        ({"acceptance_histogram": [3, -1, 2, 3]}, "acceptance_histogram"),
        ({"acceptance_histogram": [0, 0, 0, 0]}, "acceptance_histogram"),
        ({"acceptance_histogram": 0.55}, "acceptance_histogram"),
        ({"num_spec_steps": 10}, "num_spec_steps"),
        ({"num_accepted_draft_tokens": 15}, "num_spec_steps"),
        ({"num_spec_tokens": 4}, "num_spec_tokens"),
    ],
)
def test_hostile_requests_are_row_errors_naming_the_field(spec, field):
    good = json.dumps(_with(acceptance_histogram=[1, 0, 0, 4], num_spec_steps=5, num_accepted_draft_tokens=12))
    frame, report = load_measurements(good + "\n" + json.dumps(_with(**spec)))
    assert len(frame) == 1 and frame["rounds"].iloc[0] == 5
    assert [e.column for e in report.row_errors] == [field] and report.row_errors[0].row == 2


def test_a_truncated_file_and_metrics_that_are_no_object_are_named():
    text = json.dumps(RESPONSE)
    _, report = load_measurements(
        text + "\n" + text[: len(text) // 2] + '"speculative_decoding"', format="vllm_request"
    )
    assert [e.column for e in report.row_errors] == ["json"]
    bad = json.loads(text)
    bad["metrics"]["speculative_decoding"] = "summary"
    with pytest.raises(ValueError, match="metrics.speculative_decoding"):
        load_measurements(json.dumps(bad), format="vllm_request")


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 0.95), st.integers(1, 8))
def test_the_distribution_of_n_equals_the_chapters_pmf_at_one_alpha(alpha, k):
    table = pd.DataFrame({"series": "s", "k": k, "position": range(1, k + 1), "a": alpha, "alpha_used": alpha})
    dist = overlays.n_distribution(table)
    assert dist["n"].tolist() == list(range(1, k + 2))
    assert dist["measured"].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(dist["measured"], dist["chapter"], atol=1e-12)
    np.testing.assert_allclose(dist["chapter"], theory.accepted_length_pmf(alpha, k))


def test_the_distribution_of_n_from_the_fixture_is_its_histogram():
    frame, _ = load_measurements(FIXTURE)
    points = overlays.with_series(frame)
    dist = overlays.n_distribution(overlays.per_position(points))
    assert dist["measured"].tolist() == pytest.approx(
        [3 / 9, 1 / 9, 2 / 9, 3 / 9], abs=1e-6
    )  # h / steps (rates kept to 6 digits)

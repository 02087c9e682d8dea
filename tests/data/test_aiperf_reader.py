"""AIPerf profile_export_aiperf.json (fixture tests/fixtures/formats/aiperf-profile-export.json, made with aiperf
0.13.0's own export classes; see the fixtures' README)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specviz.data.measurements import load_measurements

FIXTURE = Path(__file__).parents[1] / "fixtures" / "formats" / "aiperf-profile-export.json"
RUN = json.loads(FIXTURE.read_text())


def load(obj_or_text, **kw):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text, indent=2)
    return load_measurements(text, "profile_export_aiperf.json", **kw)


def test_the_run_from_its_totals_and_histogram():
    df, report = load(FIXTURE.read_text())
    assert report.format == "aiperf" and len(df) == 1 and not report.row_errors
    row = df.iloc[0]
    # 7737 steps, 23211 draft and 11399 accepted tokens: K = 3, E[N] = 1 + A / R, r = A / D
    assert row.k == 3 and row.mean_accepted_tokens == pytest.approx(1 + 11399 / 7737)
    assert row.acceptance_rate == pytest.approx(11399 / 23211)
    assert row.mean_accepted_tokens == pytest.approx(RUN["spec_decode_token_weighted_acceptance_length"]["avg"])
    hist = {0: 1993, 1: 2148, 2: 1537, 3: 2059}  # steps by accepted drafts
    p = [sum(n for j, n in hist.items() if j >= i) / 7737 for i in (1, 2, 3)]
    stored = [float(x) for x in row.per_position_acceptance.split(";")]
    np.testing.assert_allclose(np.cumprod(stored), p, rtol=1e-5)
    assert sum(p) == pytest.approx(row.mean_accepted_tokens - 1)  # unconditional p_i sum to E[N] − 1
    assert (row.concurrency, row.target_model) == (8, "meta-llama/Llama-3.1-8B-Instruct")
    assert row.tpot_p50_ms == pytest.approx(RUN["inter_token_latency"]["p50"])  # AIPerf's ITL is TPOT
    assert row.ttft_p99_ms == pytest.approx(RUN["time_to_first_token"]["p99"])
    assert row.tokens_per_s == pytest.approx(RUN["output_token_throughput"]["avg"])


def test_without_counts_the_percent_rate_is_read_as_a_fraction():
    run = {k: v for k, v in RUN.items() if not k.startswith("total_spec") and not k.startswith("total_accepted")}
    df, _ = load(run, k=3)
    assert df.acceptance_rate.iloc[0] == pytest.approx(0.49110335616733444)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            {"pooled_spec_decode_acceptance_histogram": {"0": 1993, "1": "many"}},
            "pooled_spec_decode_acceptance_histogram",
        ),
        ({"pooled_spec_decode_acceptance_histogram": {"0": 1, "1": 2}}, "pooled_spec_decode_acceptance_histogram"),
        ({"spec_decode_overall_draft_acceptance_rate": {"unit": "%", "avg": 491.1}}, "total_spec_decode_steps"),
    ],
    ids=["wrong-type", "not-summing", "percent-over-100"],
)
def test_hostile_runs_are_refused_naming_the_field(change, field):
    """One run is one row: a bad field leaves no usable row, and the message names the field and what is allowed."""
    run = RUN | change
    if field == "total_spec_decode_steps":  # no totals: only the (bad) percent is left
        run = {k: v for k, v in run.items() if not k.startswith("total_spec") and not k.startswith("total_accepted")}
    with pytest.raises(ValueError, match=f"{field}.*allowed"):
        load(run, k=3)


def test_truncated_file_is_refused_clearly():
    with pytest.raises(ValueError, match="not a complete JSON object"):
        load(FIXTURE.read_text()[:500], format="aiperf")

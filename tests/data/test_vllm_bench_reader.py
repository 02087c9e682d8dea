"""``vllm bench serve --save-result`` files through ``load_measurements``: the fixture built from vLLM
0.34.0's vllm/benchmarks/serve.py (tests/fixtures/formats/README.md §1), appended results, and hostile
variants (truncated, wrong types, percent where a fraction is expected, missing fields)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from specviz.core import theory
from specviz.data.measurements import load_measurements
from specviz.data.measurements.readers import detect, vllm_bench

FIXTURE = Path(__file__).parents[1] / "fixtures" / "formats" / "vllm-bench-serve.json"
RESULT = json.loads(FIXTURE.read_text())


def load(text: str, **kw):
    return load_measurements(text, kw.pop("name", "result.json"), **kw)


def dumped(**changes) -> str:
    """The fixture's result with ``changes`` (a value of ``...`` removes the key), as one JSON line."""
    obj = {k: v for k, v in {**RESULT, **changes}.items() if v is not ...}
    return json.dumps(obj)


def test_the_fixture_reads_as_one_run_with_its_serving_figures():
    df, report = load(FIXTURE.read_text())
    assert report.format == "vllm_bench" and len(df) == 1 and not report.row_errors
    row = df.iloc[0]
    # K from the per-position list (3), E[N] as written, r = A / D from the counts (not the percent)
    assert (row.k, row.mean_accepted_tokens) == (3, pytest.approx(1 + 2465 / 1615))
    assert row.acceptance_rate == pytest.approx(2465 / 4845)
    assert row.acceptance_rate * 100 == pytest.approx(RESULT["spec_decode_acceptance_rate"])
    p = RESULT["spec_decode_per_position_acceptance_rates"]
    cond = [float(x) for x in row.per_position_acceptance.split(";")]
    assert cond == pytest.approx([p[0], p[1] / p[0], p[2] / p[1]], rel=1e-5)
    assert sum(p) == pytest.approx(row.mean_accepted_tokens - 1)  # unconditional: Σ p_i = E[N] − 1
    assert row.tokens_per_s == pytest.approx(RESULT["output_throughput"])
    assert (row.concurrency, row.request_rate) == (4, 8.0)
    assert (row.prompt_tokens, row.output_tokens) == (1024.0, 256.0)
    assert row.target_model == "meta-llama/Llama-3.1-8B-Instruct"
    for metric in ("ttft", "tpot", "itl"):
        assert row[f"{metric}_p50_ms"] == pytest.approx(RESULT[f"median_{metric}_ms"])
        assert row[f"{metric}_p90_ms"] == pytest.approx(RESULT[f"p90_{metric}_ms"])
        assert row[f"{metric}_p99_ms"] == pytest.approx(RESULT[f"p99_{metric}_ms"])
    assert "server-wide deltas" in row.notes
    assert row.alpha_used == pytest.approx(float(theory.alpha_from_mean_tokens(row.mean_accepted_tokens, 3)))


def test_detected_before_spec_bench_and_by_name():
    assert detect(FIXTURE.read_text()).name == "vllm_bench"
    assert detect('{"question_id": 1, "model_id": "x", "choices": []}').name == "spec_bench"
    df, report = load(FIXTURE.read_text(), format="vllm-bench")
    assert report.format == "vllm_bench" and len(df) == 1


def test_appended_results_are_one_row_each_and_an_infinite_rate_is_no_rate():
    text = "\n".join([dumped(), dumped(request_rate="inf", max_concurrency=None, label="burst")]) + "\n"
    df, report = load(text)
    assert list(df.index) == [1, 2] and report.rows_read == 2
    assert df.request_rate.iloc[0] == 8.0 and math.isnan(df.request_rate.iloc[1])
    assert df.concurrency.iloc[0] == 4 and df.concurrency.isna().iloc[1]


def test_without_counts_the_percent_is_read_as_a_percent_and_k_from_drafts():
    text = dumped(
        spec_decode_accepted_tokens=...,
        spec_decode_draft_tokens=...,
        spec_decode_per_position_acceptance_rates=...,
        spec_decode_acceptance_rate=40.0,
        spec_decode_acceptance_length=2.2,
    )
    df, _ = load(text, k=3)
    assert (df.k.iloc[0], df.acceptance_rate.iloc[0]) == (3, pytest.approx(0.40))
    # K = draft tokens / drafts where the list is missing
    df, _ = load(dumped(spec_decode_per_position_acceptance_rates=...))
    assert df.k.iloc[0] == 3


@pytest.mark.parametrize(
    "changes, field, allowed",
    [
        (
            {"spec_decode_acceptance_length": ..., **{k: ... for k in RESULT if k.startswith("spec_decode_")}},
            "spec_decode_*",
            "speculative-decoding figures",
        ),
        (
            {"spec_decode_per_position_acceptance_rates": "0.7,0.5"},
            "spec_decode_per_position_acceptance_rates",
            "fractions",
        ),
        ({"spec_decode_acceptance_length": "2.5"}, "spec_decode_acceptance_length", "a finite number"),
        (
            {
                "spec_decode_num_drafts": 0,
                "spec_decode_draft_tokens": 0,
                "spec_decode_accepted_tokens": 0,
                "spec_decode_acceptance_length": 0.0,
                "spec_decode_acceptance_rate": 0.0,
                "spec_decode_per_position_acceptance_rates": [0.0, 0.0, 0.0],
            },
            "spec_decode_num_drafts",
            "at least one draft",
        ),
    ],
)
def test_a_bad_result_is_a_row_error_naming_the_field(changes, field, allowed):
    text = dumped() + "\n" + dumped(**changes)  # the good run still loads
    df, report = load(text)
    assert list(df.index) == [1]
    err = report.row_errors[0]  # the reader's; validation may add its own (no K, no acceptance figure)
    assert {e.row for e in report.row_errors} == {2}
    assert (err.row, err.column) == (2, field) and allowed in str(err)


def test_a_truncated_file_says_it_is_not_a_json_object():
    text = FIXTURE.read_text()
    with pytest.raises(ValueError, match="one JSON object per line"):
        load(text[: len(text) // 2], format="vllm_bench")


def test_a_fraction_where_the_percent_belongs_is_caught():
    # a hand-edited file with r as a fraction in the percent field and no counts: read as 0.51 %, it
    # contradicts E[N] = 2.53 at K = 3; the row loads on E[N] and the report says they disagree
    text = dumped(spec_decode_accepted_tokens=..., spec_decode_draft_tokens=..., spec_decode_acceptance_rate=0.51)
    df, report = load(text)
    assert df.acceptance_rate.iloc[0] == pytest.approx(0.0051)
    assert any("disagree" in w and "alpha_used comes from mean_accepted_tokens" in w for w in report.warnings)
    # a percent over 100 is refused, naming the column
    df, report = load(dumped() + "\n" + dumped(spec_decode_accepted_tokens=..., spec_decode_acceptance_rate=250.0))
    assert list(df.index) == [1] and "acceptance_rate" in {e.column for e in report.row_errors}


def test_percentiles_the_run_did_not_ask_for_stay_empty():
    text = dumped(p90_ttft_ms=..., p90_tpot_ms=..., p90_itl_ms=...)
    df, _ = load(text)
    assert "ttft_p90_ms" not in df or df.ttft_p90_ms.isna().all()
    assert vllm_bench.serving_figures({"completed": 0, "total_input_tokens": 10})["prompt_tokens"] is None

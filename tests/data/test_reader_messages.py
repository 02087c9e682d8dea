"""What the readers say about a file that contradicts itself or has wrong types (issue 56, defects 3-5): a
speculation profile's wrong types by JSON path, value and type; a vLLM per-request file's values that
disagree, with the ones used; JSON lines in the measurement schema read as such, not as Spec-Bench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specviz.base import i18n
from specviz.data import measurements
from specviz.data.measurements import load_measurements

FORMATS = Path(__file__).parents[1] / "fixtures" / "formats"
PROFILE = json.loads((FORMATS / "speculation_profile.json").read_text())
RESPONSE = json.loads((FORMATS / "vllm-per-request-spec.json").read_text())


def refusal(obj) -> tuple[str, str]:
    with pytest.raises(ValueError) as info:
        load_measurements(json.dumps(obj), "speculation_profile.json")
    return info.value.text("en"), info.value.text("zh")


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("num_speculative_tokens", "three", 'num_speculative_tokens = "three" is text; allowed: a JSON integer >= 1'),
        ("num_speculative_tokens", 2.5, "num_speculative_tokens = 2.5 is a fraction; allowed: a JSON integer >= 1"),
        ("mean_accept_length", "2.7", 'mean_accept_length = "2.7" is text; allowed: a JSON number >= 1'),
        ("conditional_accept_rates", "x", 'conditional_accept_rates = "x" is text; allowed: a JSON list of'),
        ("marginal_accept_rates", [0.8, "a", 0.3], 'marginal_accept_rates[1] = "a" is text; allowed: a JSON number'),
        ("per_category", {"coding": None}, "per_category.coding = null is empty (null); allowed: a JSON number >= 1"),
    ],
)
def test_a_speculation_profile_with_a_wrong_type_names_its_path_value_and_type(field, value, said):
    en, zh = refusal(PROFILE | {field: value})
    assert said in en and "''" not in en, en
    assert said.split(" = ")[0] in zh and "允许" in zh, zh


def test_the_speculation_profile_still_reads():
    frame, report = load_measurements(json.dumps(PROFILE), "speculation_profile.json")
    assert report.format == "speculation_profile" and not report.row_errors and frame.k.iloc[0] == 3


def response(**spec) -> str:
    out = json.loads(json.dumps(RESPONSE))
    out["metrics"]["speculative_decoding"].update(spec)
    return json.dumps(out)


def test_vllm_per_request_values_that_disagree_are_named_with_the_ones_used():
    text = "\n".join([response(), response(mean_acceptance_length=3.9, draft_acceptance_rate=0.9)])
    frame, report = load_measurements(text, "requests.jsonl")
    assert len(frame) == 2 and frame.mean_accepted_tokens.iloc[1] == pytest.approx(1 + 14 / 9)
    warnings = [i18n.localized(w, "en") for w in report.warnings]
    mean = next(w for w in warnings if "mean_acceptance_length = 3.9" in w)
    assert (
        "line(s) 2" in mean
        and "chatcmpl-" in mean
        and "2.556" in mean
        and "acceptance_histogram" in mean
        and "is used" in mean
    ), mean
    rate = next(w for w in warnings if "draft_acceptance_rate = 0.9" in w)
    assert "14 / 27 = 0.5185" in rate and "is used" in rate, rate
    assert not [w for w in warnings if "line(s) 1" in w]  # the first request agrees with itself
    assert "请求" in i18n.localized(report.warnings[0], "zh") or "采用" in i18n.localized(report.warnings[0], "zh")


def test_vllm_per_step_lists_that_disagree_with_the_totals_are_named():
    text = response(per_step_accepted=[3, 3, 3, 1, 3, 2, 0, 3, 0])
    _, report = load_measurements(text, "requests.jsonl")
    warnings = [i18n.localized(w, "en") for w in report.warnings]
    assert any("per_step_accepted sums to 18" in w and "num_accepted_draft_tokens = 14" in w for w in warnings)


SCHEMA_LINES = "\n".join(
    json.dumps(row)
    for row in (
        {"label": "eagle K=3", "k": 3, "alpha": 0.7, "speedup": 2.1},
        {"label": "eagle K=5", "k": 5, "mean_accepted_tokens": 3.2, "target_model": "meta-llama/Llama-3.1-8B"},
    )
)


def test_json_lines_in_the_measurement_schema_are_read_as_such():
    frame, report = load_measurements(SCHEMA_LINES, "mine.jsonl")
    assert report.format == "schema_jsonl" and len(frame) == 2 and not report.row_errors
    assert frame.k.tolist() == [3, 5] and frame.alpha.iloc[0] == 0.7 and frame.speedup.iloc[0] == 2.1
    assert frame.mean_accepted_tokens.iloc[1] == 3.2 and list(frame.label) == ["eagle K=3", "eagle K=5"]
    assert (
        i18n.localized(measurements.reader_note(report), "en")
        == "Read as JSON lines in the measurement schema (detected from the content)."
    )


def test_a_bad_cell_of_a_schema_line_is_named_by_line_field_and_value():
    text = SCHEMA_LINES + "\n" + json.dumps({"label": "bad", "k": 3, "alpha": 1.5})
    frame, report = load_measurements(text, "mine.jsonl")
    assert len(frame) == 2 and [(e.row, e.column, e.value) for e in report.row_errors] == [(3, "alpha", "1.5")]


def test_spec_bench_answers_still_go_to_spec_bench():
    answer = {"question_id": 1, "model_id": "m", "choices": [{"turns": ["x"], "accept_lengths": [2, 3]}]}
    with pytest.raises(ValueError) as info:
        load_measurements(json.dumps(answer), "answers.jsonl")
    assert info.value.report.format == "spec_bench"
    assert i18n.localized(measurements.reader_note(info.value.report), "en").startswith("Read as Spec-Bench JSON lines")

"""SGLang scripts/playground/bench_speculative.py JSON lines (fixture: tests/fixtures/formats/sglang-bench-speculative.jsonl,
built from the script at sgl-project/sglang@96fd6bf0; see the fixtures' README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specviz.data.measurements import load_measurements

FIXTURE = Path(__file__).parents[1] / "fixtures" / "formats" / "sglang-bench-speculative.jsonl"
TEXT = FIXTURE.read_text()
LINES = TEXT.splitlines()


def load(text: str, **kw):
    return load_measurements(text, "output.jsonl", **kw)


def test_fixture_reads_as_a_batch_by_tree_grid_against_its_baselines():
    df, report = load(TEXT)
    assert report.format == "sglang_bench" and not report.row_errors
    # the two target-only lines (batch 1 and 8) are baselines, not rows
    assert len(df) == len(LINES) - 2 and set(df.batch_size) == {1, 8}
    first = json.loads(LINES[1])  # batch 1, steps 3, topk 1, num_draft_tokens 4
    row = df.loc[2]
    assert row.k == 3 and row.mean_accepted_tokens == first["acc_length"]
    assert row.tokens_per_s == pytest.approx(first["speed"]) and row.baseline_tokens_per_s == pytest.approx(144.674)
    assert row.t_target_ms == pytest.approx(6.91) and row.speedup == pytest.approx(288.23 / 144.674)
    eight = df[df.batch_size == 8].iloc[0]
    assert eight.tokens_per_s == pytest.approx(8 * json.loads(LINES[8])["speed"])  # per request × batch
    assert eight.baseline_tokens_per_s == pytest.approx(8 * json.loads(LINES[7])["speed"])
    assert any("tree of K nodes" in w for w in report.warnings)
    assert any("K = num_draft_tokens − 1" in c for c in report.conversions)


def test_auto_detection_prefers_it_to_spec_bench_and_format_spellings_work():
    for fmt in ("auto", "sglang-bench", "bench_speculative"):
        assert load(TEXT, format=fmt)[1].format == "sglang_bench"


def test_without_a_baseline_line_no_speedup():
    df, _ = load("\n".join(x for x in LINES if '"steps": 0' not in x))
    assert df.baseline_tokens_per_s.isna().all() and df.speedup.isna().all()


def _with(index: int, **change) -> str:
    obj = json.loads(LINES[index]) | change
    return "\n".join([LINES[0], json.dumps(obj), LINES[2]])


@pytest.mark.parametrize(
    ("text", "field", "allowed"),
    [
        (_with(1, acc_length=None), "acc_length", "a finite number > 0"),
        (_with(1, step_time="9 ms"), "step_time", "a finite number > 0"),
        (_with(1, batch_size=1.5), "batch_size", "a whole number >= 0"),
        (_with(1, num_draft_tokens=1), "num_draft_tokens", "num_draft_tokens >= 2"),
        (_with(1, acc_length=271.8), "num_draft_tokens", "acc_length in [1, num_draft_tokens]"),  # a percent
        ("\n".join([LINES[0], LINES[1][:40], LINES[2]]), "json", "one JSON object per line"),  # truncated
    ],
    ids=["missing", "wrong-type", "fraction-count", "no-drafts", "percent", "truncated"],
)
def test_hostile_lines_are_row_errors_naming_the_field(text, field, allowed):
    df, report = load(text, format="sglang_bench")
    err, *consequences = report.row_errors  # a line without K or E[N] also lacks them downstream
    assert (err.row, err.column) == (2, field) and allowed in err.allowed
    assert all(e.row == 2 for e in consequences)
    assert list(df.index) == [3]  # the good line still loads

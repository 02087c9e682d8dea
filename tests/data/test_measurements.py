"""specviz.data.measurements: every engine's names and formats into the canonical schema (docs/design.md §3, §6),
row-level validation, derived columns, and fuzzing (only ValueError ever escapes)."""

from __future__ import annotations

import ast
import csv
import inspect
import io
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _tiers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specviz.core import theory
from specviz.data import measurements
from specviz.data.measurements import (
    ALIASES,
    BENCH_COLUMNS,
    COLUMNS,
    DERIVED_COLUMNS,
    READERS,
    Conversion,
    LoadReport,
    RawColumn,
    RawTable,
    Reader,
    alias_table,
    checks,
    load_measurements,
    load_records,
    normalise_header,
    readers,
    reference,
)


def load(text: str | bytes, **kw):
    return load_measurements(text.encode() if isinstance(text, str) else text, kw.pop("name", "t"), **kw)


# --------------------------------------------------------------------------------------
# headers and aliases
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "key", "percent"),
    [
        ("#Mean accepted tokens", "mean_accepted_tokens", False),
        ("Draft acceptance rate (%)", "draft_acceptance_rate", True),
        ("accept %", "accept", True),
        ("acceptance_rate_pct", "acceptance_rate", True),
        ("  T_Target (ms) ", "t_target_ms", False),
        ("α", "alpha", False),
        ("γ", "gamma", False),
        ("c_L", "c_l", False),
        ("--draft-max", "draft_max", False),
        ("\ufeffLabel", "label", False),
        ("gen throughput (token/s)", "gen_throughput_token_s", False),
    ],
)
def test_normalise_header(header, key, percent):
    assert normalise_header(header) == (key, percent)


#: a value in the canonical column's terms for each alias family, and the file's value
_CANONICAL_VALUE = {
    "k": 4,
    "mean_accepted_tokens": 2.5,
    "acceptance_rate": 0.375,
    "alpha": 0.7,
    "c": 8.0,
    "t_target_ms": 10.0,
    "t_draft_ms": 2.0,
    "t_verify_ms": 12.0,
    "speedup": 1.8,
    "tokens_per_s": 100.0,
    "baseline_tokens_per_s": 50.0,
    "temperature": 0.7,
    "batch_size": 2,
    "context_length": 2048.0,
    "rounds": 120,
}


def _file_value(alias) -> tuple[str, str, float | str]:
    """(canonical column, cell text, expected canonical value) for one alias."""
    col = alias.column
    if col == "c_l":
        return "c", "0.125", 8.0
    if col == "system_efficiency":
        return "mean_accepted_tokens", "0.5", 2.5  # × (K + 1) with K = 4
    if col in _CANONICAL_VALUE:
        x = _CANONICAL_VALUE[col]
        if alias.conversion.startswith("K = value − 1"):
            cell = x + 1
        elif alias.conversion.startswith("E[N] = value + 1"):
            cell = x - 1
        elif alias.conversion == "ms = s × 1000":
            cell = x / 1000
        elif alias.conversion == "ms = µs / 1000":
            cell = x * 1000
        elif normalise_header(alias.header)[1]:
            cell = x * 100
        else:
            cell = x
        return col, repr(cell), x
    return col, "some text", "some text"


@pytest.mark.parametrize("alias", ALIASES, ids=[f"{a.header}->{a.column}" for a in ALIASES])
def test_every_alias_maps_to_its_column(alias):
    col, cell, expected = _file_value(alias)
    header, cells = [alias.header], [cell]
    if col != "k":
        header, cells = header + ["k"], cells + ["4"]
    if col not in ("alpha", "mean_accepted_tokens", "acceptance_rate"):
        header, cells = header + ["alpha"], cells + ["0.7"]
    text = ",".join(f'"{h}"' for h in header) + "\n" + ",".join(cells) + "\n"
    df, report = load(text)
    assert len(df) == 1, report.summary()
    got = df[col].iloc[0]
    assert got == pytest.approx(expected) if isinstance(expected, float | int) else got == expected
    assert report.mapped.get(alias.header, col) == col
    if alias.conversion:
        assert any(alias.conversion in c for c in report.conversions), report.conversions


def test_alias_table_lists_every_alias():
    table = alias_table()
    assert len(table) == len(ALIASES)
    assert {"header", "normalised", "column", "conversion", "source"} <= set(table.columns)
    assert set(table.column) <= set(COLUMNS) | set(BENCH_COLUMNS)


# --------------------------------------------------------------------------------------
# engines' own files: each alias family, and α recovered exactly
# --------------------------------------------------------------------------------------

TRUE = [(0.1, 1), (0.5, 3), (0.8, 4), (0.95, 8), (0.62, 2)]


def _mean(a, k):
    return float(theory.expected_tokens(a, k))


def _rate(a, k):
    return float(theory.acceptance_rate(a, k))


def test_vllm_style_csv_recovers_alpha_from_mean_and_from_rate():
    lines = ["run,num_speculative_tokens,mean_acceptance_length,draft_acceptance_rate"]
    for i, (a, k) in enumerate(TRUE):
        lines.append(f"r{i},{k},{_mean(a, k)!r},")
        lines.append(f"q{i},{k},,{_rate(a, k)!r}")
    df, report = load("\n".join(lines))
    assert report.mapped == {
        "run": "label",
        "num_speculative_tokens": "k",
        "mean_acceptance_length": "mean_accepted_tokens",
        "draft_acceptance_rate": "acceptance_rate",
    }
    truth = np.repeat([a for a, _ in TRUE], 2)
    np.testing.assert_allclose(df.alpha_used, truth, rtol=1e-9, atol=1e-12)
    assert list(df.alpha_source) == ["mean_accepted_tokens", "acceptance_rate"] * len(TRUE)
    assert list(df.index) == list(range(2, 2 + 2 * len(TRUE)))  # file row numbers (header = 1)


def test_sglang_accept_rate_is_mean_over_k_plus_one_and_draft_tokens_is_k_plus_one():
    lines = ["speculative_num_draft_tokens,accept rate"]
    for a, k in TRUE:
        lines.append(f"{k + 1},{_mean(a, k) / (k + 1)!r}")
    df, report = load("\n".join(lines))
    assert list(df.k) == [k for _, k in TRUE]
    np.testing.assert_allclose(df.mean_accepted_tokens, [_mean(a, k) for a, k in TRUE], rtol=1e-12)
    np.testing.assert_allclose(df.alpha_used, [a for a, _ in TRUE], rtol=1e-9)
    assert report.mapped["accept rate"] == "mean_accepted_tokens"
    assert any("K = value − 1" in c for c in report.conversions)
    assert any("× (K + 1)" in c for c in report.conversions)


def test_sglang_steps_and_accept_len_beat_converted_columns():
    text = "speculative_num_steps,speculative_num_draft_tokens,accept len,accept rate\n3,4,2.6,0.65\n"
    df, report = load(text)
    assert df.k.iloc[0] == 3 and df.mean_accepted_tokens.iloc[0] == 2.6
    assert "duplicate" in report.ignored["speculative_num_draft_tokens"]


def test_llama_cpp_accept_percent_and_n_draft():
    a, k = 0.7, 5
    r = _rate(a, k)
    df, report = load(f"n_draft,accept %\n{k},{100 * r!r}\n{k},{100 * r:.3f}%\n")
    np.testing.assert_allclose(df.acceptance_rate, [r, round(100 * r, 3) / 100], rtol=1e-12)
    assert df.alpha_used.iloc[0] == pytest.approx(a, rel=1e-9)
    assert any("percent" in c for c in report.conversions)


def test_llama_cpp_accept_rate_is_r_without_sglang_columns():
    df, report = load("draft_max,accept_rate\n4,0.5\n")
    assert df.acceptance_rate.iloc[0] == 0.5 and report.mapped["accept_rate"] == "acceptance_rate"
    # SGLang's accept rate without SGLang columns: read as r (never guessed), but the mismatch is shown
    df, report = load("k,accept len,accept rate\n4,2.5,0.5\n")
    assert df.alpha_source.iloc[0] == "mean_accepted_tokens"
    assert any("disagree" in w and "sglang_accept_rate" in w for w in report.warnings)


def test_tensorrt_hf_specbench_and_leviathan_names():
    df, _ = load("max_draft_len,avg_decoded_tokens_per_iter\n4,2.5\n")
    assert (df.k.iloc[0], df.mean_accepted_tokens.iloc[0]) == (4, 2.5)
    df, _ = load("num_assistant_tokens,tau,Speedup\n5,3.1,1.9x\n")
    assert (df.k.iloc[0], df.mean_accepted_tokens.iloc[0], df.speedup.iloc[0]) == (5, 3.1, 1.9)
    df, _ = load(
        "Method,#Mean accepted tokens,Tokens per second,Tokens per second for the baseline,γ\nSpS,2.28,50,33.5,4\n"
    )
    assert df.method.iloc[0] == "SpS" and df.speedup.iloc[0] == pytest.approx(50 / 33.5)
    df, _ = load("γ,α,c_L,label\n7,0.8,0.05,T5-XXL/T5-small\n3,0.8,,x\n")
    assert df.c.iloc[0] == pytest.approx(20.0) and df.c_source.iloc[0] == "1 / c_L" and pd.isna(df.c_source.iloc[1])
    assert df.predicted_speedup.iloc[0] == pytest.approx(theory.speedup(0.8, 20.0, 7))
    df, _ = load('gamma,alpha,"draft-to-target cost ratio"\n4,0.6,0.1\n')
    assert df.c_used.iloc[0] == pytest.approx(10.0)


def test_declared_no_bonus_variant_adds_one_and_reports_range():
    a, k = 0.6, 4
    no_bonus = _mean(a, k) - 1
    df, report = load(f"k,mean_acceptance_length\n{k},{no_bonus!r}\n{k},4.5\n", mean_tokens_without_bonus=True)
    assert df.mean_accepted_tokens.iloc[0] == pytest.approx(_mean(a, k))
    assert df.alpha_used.iloc[0] == pytest.approx(a, rel=1e-9)
    assert any("without the bonus" in c for c in report.conversions)
    (err,) = report.row_errors
    assert (err.row, err.column, err.value) == (3, "mean_accepted_tokens", "4.5") and "[0, 4]" in err.allowed
    df2, _ = load(f"k,mean_acceptance_length\n{k},{no_bonus!r}\n")  # not declared: read as E[N], never guessed
    assert df2.mean_accepted_tokens.iloc[0] == pytest.approx(no_bonus)


# --------------------------------------------------------------------------------------
# Spec-Bench JSON lines and vLLM log text
# --------------------------------------------------------------------------------------


def _specbench_line(qid, model_id, accept_lengths, new_tokens, wall_time):
    return json.dumps(
        {
            "question_id": qid,
            "category": "writing",
            "answer_id": "x",
            "model_id": model_id,
            "choices": [
                {
                    "index": 0,
                    "turns": ["..."],
                    "decoding_steps": [len(accept_lengths)],
                    "new_tokens": new_tokens,
                    "wall_time": wall_time,
                    "accept_lengths": accept_lengths,
                }
            ],
            "tstamp": 1.0,
        }
    )


def test_spec_bench_jsonl():
    mid = "vicuna-7b-v1.3-sps-68m-float16-temp-0.0"
    lines = [
        _specbench_line(1, mid, [1, 2, 3, 2], [8], [0.5]),
        _specbench_line(2, mid, [3, 3], [6], [0.25]),
        "not json",
        _specbench_line(3, mid, "oops", [1], [1.0]),
    ]
    df, report = load("\n".join(lines), k=4, name="sps")
    assert report.format == "spec_bench" and len(df) == 1
    row = df.iloc[0]
    assert row.mean_accepted_tokens == pytest.approx(np.mean([1, 2, 3, 2, 3, 3]))
    assert row.tokens_per_s == pytest.approx(np.mean([8 / 0.5, 6 / 0.25]))
    assert row.temperature == 0.0 and row.k == 4 and row.label == "sps"
    assert row.alpha_used == pytest.approx(float(theory.alpha_from_mean_tokens(row.mean_accepted_tokens, 4)))
    assert [(e.row, e.column) for e in report.row_errors] == [(3, "json"), (4, "choices[0].accept_lengths")]
    assert (report.rows_read, report.rows_loaded, report.rows_skipped) == (4, 2, 2)
    with pytest.raises(ValueError, match="do not state the draft length K"):
        load("\n".join(lines))
    df2, _ = load(
        "\n".join(lines[:2] + [_specbench_line(4, "other-temperature-1.0", [1, 1], [2], [1.0])]),
        k=4,
        format="spec_bench",
    )
    assert list(df2.label) == [f"t: {mid}", "t: other-temperature-1.0"] and list(df2.temperature) == [0.0, 1.0]


VLLM = (
    "INFO 05-12 10:00:01 [loggers.py:123] SpecDecoding metrics: Mean acceptance length: {mean:.2f}, "
    "Accepted throughput: 21.30 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: {acc} tokens, "
    "Drafted: {dr} tokens, Per-position acceptance rate: {pos}, Avg Draft acceptance rate: {pct:.1f}%"
)


def _vllm_line(a: float, k: int, drafts: int = 100_000) -> str:
    acc = round(drafts * (_mean(a, k) - 1))
    pos = ", ".join(f"{a ** (i + 1):.3f}" for i in range(k))  # unconditional P(≥ i+1 accepted) = α^(i+1)
    return VLLM.format(mean=1 + acc / drafts, acc=acc, dr=drafts * k, pos=pos, pct=100 * acc / (drafts * k))


def test_vllm_log_lines():
    text = "\n".join(["INFO starting", _vllm_line(0.8, 3), "WARNING x", _vllm_line(0.5, 3), _vllm_line(0.7, 5)])
    df, report = load(text, k=3)
    assert report.format == "vllm_log" and list(df.index) == [2, 4]
    np.testing.assert_allclose(df.alpha_used, [0.8, 0.5], atol=5e-3)  # the mean is printed with 2 decimals
    np.testing.assert_allclose(df.acceptance_rate, [_rate(0.8, 3), _rate(0.5, 3)], atol=1e-5)
    a_i = [float(x) for x in df.per_position_acceptance.iloc[0].split(";")]
    np.testing.assert_allclose(a_i, [0.8, 0.8, 0.8], atol=2e-3)  # conditional a_i = p_i / p_(i−1)
    (err, *_) = report.row_errors  # the K = 5 line does not fit K = 3
    assert err.row == 5 and err.column == "k" and "5 per-position" in err.allowed
    with pytest.raises(ValueError, match="do not state the draft length K"):
        load(text)


def test_vllm_log_older_format_and_wrong_k_from_counts():
    old = (
        "SpecDecoding metrics: Draft acceptance rate: 62.5%, Mean acceptance length: 3.50, Accepted: 250 tokens, "
        "Drafted: 400 tokens"
    )
    df, _ = load(old, k=4)
    assert df.acceptance_rate.iloc[0] == 0.625 and df.mean_accepted_tokens.iloc[0] == 3.5
    with pytest.raises(ValueError, match="imply K"):
        load(old, k=2)
    df, _ = load("SpecDecoding metrics: Draft acceptance rate: 62.5%", k=4, format="vllm")
    assert df.acceptance_rate.iloc[0] == pytest.approx(0.625)
    with pytest.raises(ValueError, match="no 'SpecDecoding metrics'"):
        load("label,k\n", format="vllm_log", k=2)


# --------------------------------------------------------------------------------------
# encodings, delimiters, decimal commas, percent
# --------------------------------------------------------------------------------------

TEXT = "label,k,alpha\nCafé ñ,4,0.7\n"


@pytest.mark.parametrize(
    ("encoded", "encoding"),
    [
        (TEXT.encode("utf-8"), "utf-8"),
        (b"\xef\xbb\xbf" + TEXT.encode("utf-8"), "utf-8-sig"),
        (TEXT.encode("utf-16"), "utf-16"),
        (b"\xfe\xff" + TEXT.encode("utf-16-be"), "utf-16"),
        (TEXT.encode("utf-32"), "utf-32"),
        (TEXT.encode("utf-16-le"), "utf-16-le (no BOM)"),
        (TEXT.encode("cp1252").replace(b"\n", b"\r\n"), "cp1252"),
    ],
)
def test_encodings(encoded, encoding):
    df, report = load(encoded)
    assert report.encoding == encoding
    assert list(df.columns[:3]) == ["label", "k", "alpha"]
    assert df.label.iloc[0] == "Café ñ" and df.alpha.iloc[0] == 0.7


def test_latin1_fallback_and_str_input():
    raw = b"label,k,alpha\n\x81x\xe9,4,0.7\n"  # 0x81 is not cp1252
    df, report = load(raw)
    assert report.encoding == "latin-1" and df.label.iloc[0] == "\x81xé"
    df, report = load_measurements("\ufefflabel,k,alpha\nA,2,0.5\n", "pasted")
    assert report.encoding == "text" and df.alpha.iloc[0] == 0.5


def test_line_endings_surrogates_and_file_objects():
    df, _ = load("label,k,alpha\rA,4,0.5\rB,3,0.25\r")
    assert list(df.k) == [4, 3]
    df, _ = load_measurements("label,k,alpha\n\ud800x,4,0.5\n", "lone surrogate")  # a str may hold one
    assert df.label.iloc[0].endswith("x") and "\ud800" not in df.label.iloc[0]
    df, _ = load_measurements(io.StringIO("label\tk\talpha\nA\t4\t0.5\n"))
    assert df.alpha.iloc[0] == 0.5
    df, report = load('label,k,alpha,notes\nA,4,0.5,"two\nlines"\nB,4,x,\n')
    assert df.notes.iloc[0] == "two\nlines" and report.row_errors[0].row == 4  # the line number in the file


def test_k_argument_with_a_k_column_and_per_position_lengths():
    df, report = load("label,k,alpha,per_position_acceptance\nA,2,0.5,0.5;0.4\nB,3,0.5,0.5;0.4\nC,1,0.5,2\n", k=7)
    assert list(df.k) == [2] and df.per_position_acceptance.iloc[0] == "0.5;0.4"
    assert any("k = 7 was given" in w for w in report.warnings)
    assert [(e.row, e.column) for e in report.row_errors] == [
        (3, "per_position_acceptance"),
        (4, "per_position_acceptance"),
    ]


@pytest.mark.parametrize(
    ("text", "delimiter", "decimal_comma"),
    [
        ("label,k,alpha,c\nA,4,0.75,12.5\n", ",", False),
        ("label;k;alpha;c\nA;4;0,75;12,5\n", ";", True),
        ("label\tk\talpha\tc\nA\t4\t0,75\t12,5\n", "\t", True),
        ("label\tk\talpha\tc\nA\t4\t0.75\t12.5\n", "\t", False),
        ("label;k;alpha;c\nA;4;0.75;12.5\n", ";", False),
        ('label,k,alpha,c\n"A, b",4,0.75,12.5\n', ",", False),
    ],
)
def test_delimiters_and_decimal_commas(text, delimiter, decimal_comma):
    df, report = load(text)
    assert (report.delimiter, report.decimal_comma) == (delimiter, decimal_comma)
    assert df.alpha.iloc[0] == 0.75 and df.c.iloc[0] == 12.5 and df.k.iloc[0] == 4


def test_mixed_decimal_separators_are_not_guessed():
    df, report = load("label;k;alpha\nA;4;0,75\nB;4;0.5\n")
    assert not report.decimal_comma and any("both" in w for w in report.warnings)
    assert list(df.index) == [3]
    (err,) = report.row_errors
    assert (err.row, err.column, err.value) == (2, "alpha", "0,75")


def test_decimal_comma_per_position_list():
    df, _ = load("label;k;alpha;per_position_acceptance\nA;2;0,5;0,9;0,7\n".replace("0,9;0,7", "0,9 0,7"))
    assert df.per_position_acceptance.iloc[0] == "0.9;0.7"


def test_percent_detection():
    df, report = load("label,k,acceptance_rate\nA,4,60\nB,4,75.5\nC,4,0\n")
    np.testing.assert_allclose(df.acceptance_rate, [0.6, 0.755, 0.0])
    assert any("percent" in c for c in report.conversions)
    df, report = load("label,k,alpha (%)\nA,4,0.5\n")  # the header says percent: 0.5 %
    assert df.alpha.iloc[0] == pytest.approx(0.005)
    df, report = load("label,k,alpha\nA,4,0.8\nB,4,80\n")  # mixed: not guessed
    assert list(df.index) == [2] and report.row_errors[0].column == "alpha" and report.warnings
    df, report = load("label,k,acceptance_rate\nA,4,150\nB,4,0.5\n")
    assert list(df.index) == [3]  # > 100 can't be percent
    df, report = load("label,k,acceptance_rate\nA,4,1.5\n")  # only a percentage makes sense: reported
    assert df.acceptance_rate.iloc[0] == pytest.approx(0.015) and "values in [0, 100]" in report.summary()


# --------------------------------------------------------------------------------------
# validation: bad cells by row and column, valid rows load
# --------------------------------------------------------------------------------------

BAD_ROWS = """label,k,alpha,mean_accepted_tokens,acceptance_rate,c,t_target_ms,speedup,temperature,batch_size,tokens_per_s
good,4,0.8,,,10,,1.5,0,1,100
k0,0,0.8,,,,,,,,
kfrac,2.5,0.8,,,,,,,,
alphaneg,4,-0.1,,,,,,,,
meanbig,4,,5.5,,,,,,,
meansmall,4,,0.5,,,,,,,
rateneg,4,,,-0.2,,,,,,
cneg,4,0.5,,,-3,,,,,
tinf,4,0.5,,,,inf,,,,
speed0,4,0.5,,,,,0,,,
tempneg,4,0.5,,,,,,-1,,
bsfrac,4,0.5,,,,,,,1.5,
tpsstr,4,0.5,,,,,,,,fast
noacc,4,,,,,,,,,
,3,0.5,,,,,,,,
"""


def test_row_errors_by_row_and_column():
    df, report = load(BAD_ROWS, name="mine")
    assert list(df.index) == [2, 16] and list(df.label) == ["good", "mine"]
    got = {(e.row, e.column) for e in report.row_errors}
    assert got == {
        (3, "k"),
        (4, "k"),
        (5, "alpha"),
        (6, "mean_accepted_tokens"),
        (7, "mean_accepted_tokens"),
        (8, "acceptance_rate"),
        (9, "c"),
        (10, "t_target_ms"),
        (11, "speedup"),
        (12, "temperature"),
        (13, "batch_size"),
        (14, "tokens_per_s"),
        (15, "alpha"),
    }
    by_row = {e.row: e for e in report.row_errors}
    assert by_row[6].value == "5.5" and "[1, 5]" in by_row[6].allowed
    assert "integer" in by_row[4].allowed and "[0, 1]" in by_row[5].allowed
    assert (report.rows_read, report.rows_loaded, report.rows_skipped) == (15, 2, 13)
    assert report.skipped_rows == list(range(3, 16))
    s = report.summary()
    assert "row 6, mean_accepted_tokens: '5.5'" in s and "loaded 2, skipped 13" in s


def test_extra_fields_and_short_rows():
    df, report = load("label,k,alpha\nA,4,0.5,junk\nB,4\nC,4,0.5,\n")
    assert list(df.index) == [4]
    assert {(e.row, e.column) for e in report.row_errors} == {(2, "(row)"), (3, "alpha")}


def test_duplicate_headers_first_wins():
    df, report = load("k,gamma,alpha,alpha,K\n4,5,0.5,0.9,6\n")
    assert df.k.iloc[0] == 4 and df.alpha.iloc[0] == 0.5
    assert set(report.ignored) == {"gamma", "alpha [column 4]", "K"}


def test_missing_required_columns_named():
    with pytest.raises(ValueError, match=r"missing required column\(s\): k .*Found columns: 'label', 'alpha'"):
        load("label,alpha\nA,0.5\n")
    with pytest.raises(ValueError, match="one of alpha, mean_accepted_tokens"):
        load("label,gamma,c\nA,4,20\n")


def test_speedup_only_rows_load_without_alpha():
    """A published table with a speedup but no acceptance figure (Chen et al. 2023 Table 1)."""
    df, report = load("label,gamma,speedup,alpha\nA,4,2.0,\nB,4,,0.7\nC,4,,\n")
    assert list(df.label) == ["A", "B"] and np.isnan(df.alpha_used.iloc[0]) and df.alpha_used.iloc[1] == 0.7
    assert np.isnan(df.predicted_speedup.iloc[0]) and df.speedup.iloc[0] == 2.0
    assert any("speedup-only" in w and "2" in w for w in report.warnings)
    (err,) = report.row_errors
    assert err.row == 4 and "or speedup (all empty in this row)" in err.allowed
    df, report = load("label,k,tokens_per_s,baseline_tokens_per_s\nA,4,133,70.9\n")
    assert df.speedup.iloc[0] == pytest.approx(133 / 70.9) and any("speedup-only" in w for w in report.warnings)
    df, report = load("label,alpha\nA,0.5\n", k=3)  # K given by the caller
    assert df.k.iloc[0] == 3 and any("given by the caller" in c for c in report.conversions)


def test_unusable_files_raise_one_clear_value_error(tmp_path):
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    for data, match in [
        (png, "not a text file"),
        (bytes(range(256)) * 4, "not a text file"),
        (b"", "empty"),
        (b" \n\t\n", "empty"),
        ("\n\n", "empty"),
        (b"label,k,alpha\n", "no data rows"),
        (b"k,accept len,accept_rate\n", "no data rows"),
        (b"label,k,alpha\nA,0,2\n", "no usable row"),
        (b"\xff\xfe\x00\xd8", "not a text file"),
    ]:
        with pytest.raises(ValueError, match=match):
            load(data)
    big = "label,k,alpha\n" + "A,4,0.5\n" * 20
    with pytest.raises(ValueError, match="max_bytes"):
        load(big, max_bytes=100)
    with pytest.raises(ValueError, match="max_rows = 5"):
        load(big, max_rows=5)
    path = tmp_path / "big.csv"
    path.write_text(big)
    with pytest.raises(ValueError, match="max_bytes"):
        load_measurements(path, max_bytes=100)
    assert len(load_measurements(path)[0]) == 20
    with pytest.raises(ValueError, match="pathlib.Path"):
        load_measurements(str(path))  # a str is content, never a path: say so
    with pytest.raises(ValueError, match="does not exist"):
        load_measurements(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="field larger"):
        load("label,k,alpha,notes\nA,4,0.5," + "x" * 200_000 + "\n")


def test_the_upload_cap_is_one_number_for_streamlit_and_the_loader():
    """server.maxUploadSize (.streamlit/config.toml) is MAX_UPLOAD_MB, and the loader's default cap is that
    many megabytes of 10**6 bytes, as Streamlit 1.67's uploader counts them (its frontend refuses a file
    over maxUploadSize * 1000**2 bytes outside Windows), so no file it lets through is refused for size.

    Was a defect: the uploader refused files over 20,000,000 bytes while the loader's cap was 20 MiB.
    """
    from specviz.data.measurements import load as loader

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == loader.MAX_UPLOAD_MB
    assert loader.MAX_BYTES == loader.MAX_UPLOAD_MB * 10**6
    assert inspect.signature(load_measurements).parameters["max_bytes"].default == loader.MAX_BYTES
    over = b"label,k,alpha\n" + b" " * (loader.MAX_BYTES + 1 - len(b"label,k,alpha\n"))
    with pytest.raises(
        ValueError, match=f"{loader.MAX_BYTES + 1:,} bytes; the limit is max_bytes = 20,000,000 bytes .20 MB."
    ):
        load_measurements(over, "big.csv")


def test_arguments_are_checked():
    ok = b"label,k,alpha\nA,4,0.5\n"
    for kw, match in [
        ({"format": "xlsx"}, "format"),
        ({"k": 0}, "k"),
        ({"k": 2.5}, "k"),
        ({"k": True}, "k"),
        ({"max_bytes": 0}, "max_bytes"),
        ({"max_rows": -1}, "max_rows"),
        ({"mean_tokens_without_bonus": "yes"}, "mean_tokens_without_bonus"),
    ]:
        with pytest.raises(ValueError, match=match):
            load_measurements(ok, **kw)
    with pytest.raises(ValueError, match="name"):
        load_measurements(ok, "")
    with pytest.raises(ValueError, match="data must be"):
        load_measurements(12345)
    assert len(load_measurements(io.BytesIO(ok))[0]) == 1
    assert len(load_measurements(bytearray(ok))[0]) == 1


# --------------------------------------------------------------------------------------
# derived columns, and our own bench CSV
# --------------------------------------------------------------------------------------


def test_derived_columns():
    text = (
        "label,k,alpha,t_target_ms,t_draft_ms,t_verify_ms,o,tokens_per_s,baseline_tokens_per_s\n"
        "A,4,0.8,10,1,12,0.1,150,60\n"
        "B,2,0.5,10,1,9,,100,50\n"
    )
    df, report = load(text)
    assert any("v = max(0" in c for c in report.conversions)
    assert list(df.c_used) == [10.0, 10.0] and list(df.c_source) == ["t_target_ms / t_draft_ms"] * 2
    assert np.isnan(df.c).all()
    np.testing.assert_allclose(df.v, [(12 / 10 - 1) / 4, 0.0])  # floored at 0
    np.testing.assert_allclose(df.predicted_speedup, [theory.speedup(0.8, 10, 4), theory.speedup(0.5, 10, 2)])
    np.testing.assert_allclose(
        df.predicted_speedup_measured_cost,
        [theory.speedup(0.8, 10, 4, 0.05, 0.1), theory.speedup(0.5, 10, 2, 0.0, 0.0)],
    )
    np.testing.assert_allclose(df.speedup, [2.5, 2.0])
    np.testing.assert_allclose(df.speedup_ratio, df.speedup / df.predicted_speedup)
    assert set(DERIVED_COLUMNS) <= set(df.columns) and set(COLUMNS) <= set(df.columns)
    df, _ = load("label,k,alpha\nA,4,0.8\n")  # no c: no prediction, row still valid
    assert np.isnan(df.predicted_speedup.iloc[0]) and df.c_source.isna().all()


def _bench_csv() -> str:
    """Two rows with exactly the columns `python -m specviz bench` writes (bench.aggregate + sweep's base)."""
    rows = []
    for t, greedy in ((0.0, True), (1.0, None)):
        a, k, c, v, o = 0.7, 3, 12.0, 0.04, 0.02
        rows.append(
            {
                "batch_size": 1,
                "device": "cpu",
                "dtype": "float32",
                "torch_version": "2.4.0",
                "hardware": "cpu, 2 cores",
                "method": "draft model",
                "source": "specviz bench",
                "label": "tiny",
                "target_model": "t/target",
                "draft_model": "t/draft",
                "k": k,
                "temperature": t,
                "alpha": a,
                "alpha_overlap": 0.75,
                "mean_accepted_tokens": _mean(a, k),
                "acceptance_rate": _rate(a, k),
                "per_position_acceptance": "0.7000;0.7000;0.7000",
                "c": c,
                "t_target_ms": 3.6,
                "t_draft_ms": 0.3,
                "t_verify_ms": 4.0,
                "v": v,
                "o": o,
                "speedup": 1.9,
                "speedup_min": 1.7,
                "speedup_max": 2.1,
                "tokens_per_s": 500.0,
                "baseline_tokens_per_s": 263.0,
                "predicted_speedup_basic": float(theory.speedup(a, c, k)),
                "predicted_speedup_measured_cost": float(theory.speedup(a, c, k, v, o)),
                "runs": 2,
                "new_tokens": 8,
                "greedy_exact": greedy,
            }
        )
    return pd.DataFrame(rows).to_csv(index=False)


def test_own_bench_csv_loads_with_no_mapping():
    df_in = pd.read_csv(io.StringIO(_bench_csv()))
    assert set(df_in.columns) <= set(COLUMNS) | set(BENCH_COLUMNS)
    df, report = load(_bench_csv())
    assert report.mapped == {} and report.row_errors == [] and report.warnings == []
    assert set(report.ignored) == {"predicted_speedup_measured_cost"}  # recomputed, same formula
    assert (report.rows_read, report.rows_loaded) == (2, 2)
    np.testing.assert_allclose(df.predicted_speedup, df_in.predicted_speedup_basic, rtol=1e-12)
    np.testing.assert_allclose(df.predicted_speedup_measured_cost, df_in.predicted_speedup_measured_cost, rtol=1e-12)
    assert list(df.alpha_source) == ["alpha", "alpha"] and list(df.c_source) == ["c", "c"]
    assert df.greedy_exact.iloc[0] and pd.isna(df.greedy_exact.iloc[1])
    assert df.per_position_acceptance.iloc[0] == "0.7;0.7;0.7" and list(df.runs) == [2, 2]
    for col in df_in.columns:
        if col not in ("per_position_acceptance", "greedy_exact", "predicted_speedup_measured_cost"):
            assert (df[col].to_numpy() == df_in[col].to_numpy()).all() or np.allclose(df[col], df_in[col]), col


def test_summary_mentions_everything():
    _, report = load("Run;Gamma;accept %;junk\nA;4;50;x\nB;0;50;y\n")
    s = report.summary()
    for part in (
        "read 2 row(s)",
        "delimiter ';'",
        "'Gamma' → k",
        "'accept %' → acceptance_rate",
        "percent",
        "'junk' (unknown column)",
        "row 3, k ('Gamma'): '0'",
    ):
        assert part in s, s
    assert isinstance(report, LoadReport)


# --------------------------------------------------------------------------------------
# fuzzing: whatever the input, a (DataFrame, LoadReport) or a ValueError
# --------------------------------------------------------------------------------------

_HEADERS = [
    *COLUMNS,
    *BENCH_COLUMNS,
    *DERIVED_COLUMNS,
    *(a.header for a in ALIASES),
    "speculative_eagle_topk",
    "junk",
    "",
    "K",
    "Alpha (%)",
    "#",
    "%",
    "ALPHA",
    "c_L (%)",
]
_plausible = st.one_of(
    st.floats(0, 1).map(lambda x: f"{x:.4g}"), st.integers(1, 8).map(str), st.floats(1, 9).map(lambda x: f"{x:.3g}")
)
_cells = st.one_of(
    _plausible,
    _plausible,
    _plausible,
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(-5, 200).map(lambda x: f"{x:.3f}"),
    st.floats(0, 1).map(repr),
    st.integers(-3, 12).map(str),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(
        [
            "",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "1e999",
            "-0",
            "N/A",
            "true",
            "x",
            "0,5",
            "12,5%",
            "50%",
            "1.5x",
            "0.9;0.8",
            "[0.5, 0.4]",
            '"',
            "'",
            "\\",
            ";",
            ",",
            "\t",
            "é",
            "\u2028",
        ]
    ),
    st.text(max_size=12),
)


@st.composite
def _tables(draw) -> tuple[bytes | str, dict]:
    n_cols = draw(st.integers(1, 8))
    header = draw(st.lists(st.sampled_from(_HEADERS), min_size=n_cols, max_size=n_cols))  # duplicates allowed
    if draw(st.integers(0, 3)):  # mostly: a K column and an acceptance column, so rows get validated and loaded
        header[0] = draw(st.sampled_from(["k", "gamma", "num_speculative_tokens", "speculative_num_draft_tokens"]))
        header.insert(
            1,
            draw(
                st.sampled_from(
                    [
                        "alpha",
                        "mean_acceptance_length",
                        "accept %",
                        "accept rate",
                        "draft_acceptance_rate",
                        "system_efficiency",
                        "tau",
                    ]
                )
            ),
        )
    width = len(header)
    row = st.one_of(st.lists(_cells, min_size=width, max_size=width), st.lists(_cells, max_size=width + 2))
    rows = draw(st.lists(row, min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=8))
    if header[0] in ("k", "gamma", "num_speculative_tokens") and draw(st.booleans()):
        for r in rows:  # mostly valid K and acceptance cells, so the derivations run on what the other cells hold
            if len(r) >= 2:
                r[0] = str(draw(st.integers(1, 8)))
                r[1] = draw(st.sampled_from(["0.5", "1", "1.7", "0", "40", "2.5", r[1]]))
                r[2:] = [c if draw(st.integers(0, 3)) == 0 else draw(_plausible) for c in r[2:]]
    if draw(st.integers(0, 20)) == 0:  # a huge field
        rows.append(["4", "x" * draw(st.sampled_from([10_000, 140_000]))])
    delim = draw(st.sampled_from([",", ";", "\t"]))

    def quote(cell: str) -> str:
        return '"' + cell.replace('"', '""') + '"' if any(ch in cell for ch in f'"\n\r{delim}') else cell

    text = "\n".join(delim.join(quote(c) for c in r) for r in [header, *rows]) + draw(st.sampled_from(["", "\n"]))
    enc = draw(st.sampled_from(["str", "utf-8", "utf-8-sig", "utf-16", "cp1252"]))
    data = text if enc == "str" else text.encode(enc, errors="replace")
    return data, draw(_kwargs())


@st.composite
def _kwargs(draw) -> dict:
    kw: dict = {}
    mode = draw(st.integers(0, 19))
    if mode < 15:
        kw["k"] = draw(st.integers(1, 10))
    elif mode < 18:
        kw["k"] = draw(st.sampled_from([3.0, 2**31 - 1, 0, -1, 2.5, None, 2**40, True, "4"]))
    if draw(st.booleans()):
        kw["mean_tokens_without_bonus"] = draw(st.booleans())
    if draw(st.integers(0, 9)) == 0:
        kw["max_rows"] = draw(st.integers(1, 4))
    if draw(st.integers(0, 9)) == 0:
        kw["max_bytes"] = draw(st.integers(1, 200))
    if draw(st.integers(0, 9)) == 0:
        kw["format"] = draw(st.sampled_from(["auto", "csv", "spec_bench", "vllm_log", "nope"]))
    return kw


_json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
_num_lists = st.one_of(
    st.lists(st.integers(1, 5), min_size=1, max_size=6),
    st.lists(st.floats(0.01, 10), min_size=1, max_size=6),
    st.lists(
        st.one_of(
            st.floats(-1, 10),
            st.integers(-1, 10),
            st.just(float("nan")),
            st.text(max_size=2),
            st.integers(),
            st.just(10**400),
            st.floats(),
        ),
        max_size=6,
    ),
)


@st.composite
def _jsonl(draw) -> tuple[str, dict]:
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            lines.append(json.dumps(draw(_json_values)))
        elif kind == 1:
            lines.append(draw(st.text(max_size=20)))
        else:
            ch = {"accept_lengths": draw(_num_lists), "new_tokens": draw(_num_lists), "wall_time": draw(_num_lists)}
            choices = draw(st.sampled_from([[ch], [ch], [ch], [], ch, [1]]))
            lines.append(
                json.dumps({"model_id": draw(st.sampled_from(["m-temp-0.7", "x", 3, None])), "choices": choices})
            )
    return "\n".join(["{}", *lines]), draw(_kwargs())


_v_num = st.one_of(st.floats(0, 10).map(lambda x: f"{x:.2f}"), st.integers(0, 10**6).map(str), st.just("nan"))


@st.composite
def _vllm(draw) -> tuple[str, dict]:
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        parts = draw(
            st.lists(
                st.sampled_from(
                    [
                        "Mean acceptance length: {}",
                        "Accepted: {} tokens",
                        "Drafted: {} tokens",
                        "Draft acceptance rate: {}%",
                        "Per-position acceptance rate: {}, {}, {}",
                        "Avg Draft acceptance rate: {}%",
                        "junk: {}",
                    ]
                ),
                max_size=6,
            )
        )
        lines.append("SpecDecoding metrics: " + ", ".join(p.format(*(draw(_v_num) for _ in range(3))) for p in parts))
    lines.append(draw(st.text(max_size=30)))
    return "\n".join(lines), draw(_kwargs())


_inputs = st.one_of(
    st.tuples(st.binary(max_size=600), _kwargs()),
    st.tuples(st.text(max_size=300), _kwargs()),
    _tables(),
    _tables(),
    _tables(),
    _jsonl(),
    _vllm(),
)


def _check_one(data, kw) -> None:
    try:
        out = load_measurements(data, "fuzz", **kw)
    except ValueError as exc:
        assert str(exc)
        return
    df, report = out
    assert isinstance(df, pd.DataFrame) and isinstance(report, LoadReport)
    assert len(df) == report.rows_loaded >= 1 or report.format == "spec_bench"
    assert report.rows_read >= report.rows_loaded and isinstance(report.summary(), str)
    assert set(COLUMNS) | set(DERIVED_COLUMNS) <= set(df.columns)
    assert (df.k >= 1).all() and df.label.notna().all()
    ok = df.alpha_used.notna()
    speedup_only = df.speedup.notna() & df[["alpha", "mean_accepted_tokens", "acceptance_rate"]].isna().all(axis=1)
    assert (ok | speedup_only).all() and df.alpha_used.dropna().between(0, 1).all()
    assert df.predicted_speedup[~ok].isna().all()
    m = df.mean_accepted_tokens.dropna()
    assert ((m >= 1) & (m <= df.k[m.index] + 1)).all()
    for col in ("c_used", "predicted_speedup", "speedup"):
        x = df[col].dropna()
        assert (x > 0).all() or (col == "predicted_speedup" and (x >= 0).all()), col
    assert all(math.isfinite(e.row) for e in report.row_errors)
    numeric = df.select_dtypes("number")
    assert not np.isinf(numeric.to_numpy(dtype=float, na_value=np.nan)).any()


_FUZZ_SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


@settings(max_examples=examples(60), **_FUZZ_SETTINGS)
@given(_inputs)
def test_fuzz_quick(case):
    _check_one(*case)


@pytest.mark.slow
@settings(max_examples=examples(1000), **_FUZZ_SETTINGS)
@given(_inputs)
def test_fuzz_only_value_errors(case):
    """≥ 1,000 generated inputs: random bytes and text, random tables (canonical names, aliases, junk and
    duplicate headers; NaN/inf/negative/huge/text cells; huge fields; four encodings), JSON lines and log text."""
    _check_one(*case)


# --------------------------------------------------------------------------------------
# the package: conversions as an enum, the reader registry, named steps, the generated doc
# --------------------------------------------------------------------------------------


def test_conversions_are_enum_members_that_carry_their_text_and_rule():
    converted = [a for a in ALIASES if a.conversion]
    assert converted and all(isinstance(a.conversion, Conversion) for a in ALIASES)
    assert {a.conversion for a in converted} == set(Conversion) - {Conversion.NONE}
    assert not Conversion.NONE and str(Conversion.S_TO_MS) == "ms = s × 1000"
    x = np.array([0.5, 3.0, np.nan])
    np.testing.assert_array_equal(Conversion.S_TO_MS.apply(x), [500.0, 3000.0, np.nan])
    np.testing.assert_array_equal(Conversion.US_TO_MS.apply(x), [0.0005, 0.003, np.nan])
    np.testing.assert_array_equal(Conversion.K_MINUS_ONE.apply(x), [-0.5, 2.0, np.nan])
    np.testing.assert_array_equal(Conversion.ADD_BONUS.apply(x), [1.5, 4.0, np.nan])
    for deferred in (Conversion.INVERSE_C_L, Conversion.TIMES_K_PLUS_ONE):  # applied where the column is empty
        assert deferred.deferred
        np.testing.assert_array_equal(deferred.apply(x), x)
    assert Conversion.S_TO_MS.file_unit == "s" and Conversion.US_TO_MS.file_unit == "µs"
    assert not Conversion.K_MINUS_ONE.file_unit


def test_an_out_of_range_time_in_seconds_is_reported_in_seconds():
    _, report = load("label,k,alpha,t_target_s\nA,4,0.7,-0.02\nB,4,0.7,0.02\n")
    (error,) = report.row_errors
    assert (error.row, error.column, error.header, error.value) == (2, "t_target_ms", "t_target_s", "-0.02")
    assert error.allowed == "a finite number > 0 (s)"


def test_tree_rows_are_checked_against_k_and_predicted_from_f():
    df, report = load(
        "label,k,c,tree,tree_depth,predicted_tokens_per_round,alpha\n"
        'ok,8,4,"optimal:8,4 (8 drafts)",4,3.2,0.7\n'
        "deep,4,4,chain:5,5,2.0,0.7\n"
        "many,4,4,chain:4,4,5.5,0.7\n"
    )
    assert [(e.row, e.column, e.allowed) for e in report.row_errors] == [
        (3, "tree_depth", "an integer in [1, 4] (a tree of K = 4 drafts)"),
        (4, "predicted_tokens_per_round", "[1, 5] (tokens per round, K = 4)"),
    ]
    assert list(df.label) == ["ok"] and df.tree.iloc[0] == "optimal:8,4 (8 drafts)"
    assert df.predicted_speedup.iloc[0] == pytest.approx(3.2 / (1 + 4 / 4))  # F / (1 + D/c), not S(α, c, K)


def test_readers_are_an_explicit_registry_tried_in_order_csv_last():
    assert list(READERS) == [
        "vllm_log",
        "vllm_v0_log",
        "sglang_log",
        "llamacpp_log",
        "vllm_bench",
        "sglang_bench",
        "aiperf",
        "speculation_profile",
        "vllm_request",
        "schema_jsonl",
        "spec_bench",
        "csv",
    ]
    assert all(isinstance(r, Reader) and r.rule for r in READERS.values())
    assert readers.detect("x\nINFO SpecDecoding metrics: Mean acceptance length: 2.0").name == "vllm_log"
    assert readers.detect('\n{"choices": []}\n').name == "spec_bench"
    assert readers.detect("label,k,alpha\n").name == "csv"
    # a cell that merely names the phrase is not a vLLM metrics line (found by the store's fuzz test)
    df, _ = load("label,k,alpha\nSpecDecoding metrics,4,0.7\n")
    assert list(df["label"]) == ["SpecDecoding metrics"] and readers.detect("a\nspecdecoding metrics\n").name == "csv"
    formats = readers.formats()
    assert formats["jsonl"] == "spec_bench" and formats["vllm"] == "vllm_log" and formats["auto"] == "auto"
    assert {r.name for r in READERS.values() if r.needs_k} == {"vllm_log", "sglang_log", "llamacpp_log", "spec_bench"}


def _key_value_reader() -> Reader:
    """A made-up engine format: lines 'k=4 alpha=0.7 label=x' (one reader, no other change)."""

    def read(text: str, ctx) -> RawTable:
        rows, records = [], []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if line.startswith("kv:"):
                rows.append(lineno)
                records.append(dict(part.split("=", 1) for part in line[3:].split()))
        names = dict.fromkeys(name for r in records for name in r)
        columns = {n: RawColumn(n, n, [r.get(n, "") for r in records]) for n in names}
        ctx.report.conversions.append("kv: one row per 'kv:' line")
        return RawTable(rows, columns)

    return Reader("kv", "key=value lines", lambda text: text.startswith("kv:"), "lines start with 'kv:'", read)


def test_a_new_format_is_one_reader(monkeypatch):
    monkeypatch.setattr(readers, "READERS", {"kv": _key_value_reader(), **readers.READERS})
    df, report = load("kv: label=a k=4 alpha=0.7\nnoise\nkv: label=b k=4 alpha=1.7\n")
    assert report.format == "kv" and "kv: one row per 'kv:' line" in report.conversions
    assert df.label.tolist() == ["a"] and df.index.tolist() == [1]  # validation and derivation as for CSV
    assert df.predicted_speedup.isna().all() and df.alpha_used.tolist() == [0.7]
    assert [(e.row, e.column) for e in report.row_errors] == [(3, "alpha")]
    assert load("kv: label=a k=2 alpha=0.5\n", format="kv")[1].format == "kv"
    assert load("label,k,alpha\na,2,0.5\n")[1].format == "csv"  # the others are untouched


def test_report_fields_as_sentences_are_what_the_summary_says():
    _, report = load("name;K;accept %;junk\nA;4;70,5;x\n")
    assert report.how == "csv, utf-8, delimiter ';', decimal comma"
    assert report.headline == "t: read 1 row(s) (csv, utf-8, delimiter ';', decimal comma); loaded 1, skipped 0."
    assert report.mapped_text == "Mapped columns: 'name' → label, 'K' → k, 'accept %' → acceptance_rate."
    assert report.conversions_text.startswith("Conversions: decimal comma: 1 numeric cell(s)")
    assert report.ignored_text == "Ignored columns: 'junk' (unknown column)."
    lines = report.summary().splitlines()
    assert lines[:4] == [report.headline, report.mapped_text, report.conversions_text, report.ignored_text]
    clean = LoadReport(name="x")
    assert clean.mapped_text == clean.conversions_text == clean.ignored_text == ""
    assert clean.summary() == clean.headline


def test_validation_steps_return_their_errors_and_leave_their_inputs_alone():
    table = RawTable(
        [2, 3, 4],
        {
            "k": RawColumn("k", "K", ["4", "4", "4"]),
            "alpha": RawColumn("alpha", "α", ["0.5", "1.5", "x"]),
        },
    )
    report = LoadReport(name="t")
    values, errors, not_numbers = checks.parse_numbers(table, report)
    assert not_numbers == {("alpha", 2)} and [(i, e.row, e.column) for i, e in errors] == [(2, 4, "alpha")]
    values, k, errors = checks.check_k(table, values, not_numbers, None, report, "t")
    assert errors == [] and k.ok.all()
    before = {name: arr.copy() for name, arr in values.items()}
    checked, errors = checks.check_ranges(table, values, k, no_bonus=False)
    assert [(i, e.value, e.header) for i, e in errors] == [(1, "1.5", "α")]
    for name, arr in before.items():  # a step returns new values; it does not write into its input
        np.testing.assert_array_equal(values[name], arr)
    assert checked["alpha"][0] == 0.5


def test_derived_alpha_and_c_follow_the_documented_formulas():
    k, alpha, c = 5, 0.6, 12.0
    mean = (1 - alpha ** (k + 1)) / (1 - alpha)
    rate = (mean - 1) / k
    text = (
        "label,k,mean_accepted_tokens,acceptance_rate,t_target_ms,t_draft_ms,t_verify_ms,c_L\n"
        f"m,{k},{mean!r},,24,2,30,\n"
        f"r,{k},,{rate!r},24,2,,\n"
        f"l,{k},{mean!r},,,,,{1 / c!r}\n"
    )
    df, _ = load(text)
    assert df.alpha_used.tolist() == pytest.approx([alpha] * 3, abs=1e-9)
    assert df.alpha_source.tolist() == ["mean_accepted_tokens", "acceptance_rate", "mean_accepted_tokens"]
    assert df.c_used.tolist() == pytest.approx([12.0, 12.0, 12.0])
    assert df.c_source.tolist() == ["t_target_ms / t_draft_ms", "t_target_ms / t_draft_ms", "1 / c_L"]
    assert df.v.iloc[0] == pytest.approx((30 / 24 - 1) / k)
    assert df.predicted_speedup.tolist() == pytest.approx([mean * c / (c + k)] * 3)
    assert df.predicted_speedup_measured_cost.iloc[0] == pytest.approx(mean / (1 + df.v.iloc[0] * k + k / c))


def test_no_function_in_the_package_is_over_40_lines():
    root = Path(measurements.__file__).parent
    long = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                body = node.body[1:] if ast.get_docstring(node) is not None else node.body
                if body and body[-1].end_lineno - body[0].lineno + 1 > 40:
                    long.append(f"{path.relative_to(root)}:{node.name}")
    assert not long, long


def test_schema_doc_is_generated_from_the_code_and_lists_every_column_and_alias():
    doc = reference.DOC.read_text(encoding="utf-8")
    assert reference.render(doc) == doc, (
        "docs/measurement-schema.md is stale: python -m specviz.data.measurements.reference"
    )
    for name in (*COLUMNS, *BENCH_COLUMNS, *DERIVED_COLUMNS, *READERS):
        assert f"`{name}`" in doc, name
    for alias in ALIASES:
        assert f"`{alias.header}`" in doc, alias.header
    for conversion in set(Conversion) - {Conversion.NONE}:
        assert str(conversion) in doc
    stale = doc.replace("| `k` | draft tokens |", "| `k` | tokens |")
    assert reference.render(stale) == doc  # a hand edit inside a block is overwritten
    with pytest.raises(ValueError, match="nope"):
        reference.render("<!-- BEGIN GENERATED: nope -->\n<!-- END GENERATED: nope -->")


def test_records_in_memory_load_as_their_csv_does():
    path = measurements.SAMPLES_DIR / "specviz_bench_bundled_cpu.csv"
    from_file, _ = load_measurements(path, "bench")
    with path.open(newline="", encoding="utf-8") as f:
        records = list(csv.DictReader(f))
    from_records, report = load_records(records, "bench")
    assert report.format == "records" and report.rows_loaded == len(records) == len(from_file)
    pd.testing.assert_frame_equal(from_records.reset_index(drop=True), from_file.reset_index(drop=True))
    typed = [{"label": "a", "k": 4, "alpha": 0.7, "c": 10.0, "greedy_exact": True}, {"k": 2, "alpha": 1.5, "c": 3.0}]
    df, report = load_records(typed, "live")
    assert df.index.tolist() == [1] and bool(df.greedy_exact.iloc[0]) and df.alpha_used.iloc[0] == 0.7
    assert [(e.row, e.column, e.value) for e in report.row_errors] == [(2, "alpha", "1.5")]
    # in-memory rows are never guessed to be in percent: 1.0 and 1.5 are α values, and 1.5 is an error
    df, report = load_records([{"k": 2, "alpha": 1.0, "c": 3.0}, {"k": 2, "alpha": 1.5, "c": 3.0}], "live")
    assert df.alpha.tolist() == [1.0] and not any("percent" in c for c in report.conversions)
    assert [(e.row, e.column) for e in report.row_errors] == [(2, "alpha")]
    with pytest.raises(ValueError, match="unknown column"):
        load_records([{"k": 4, "alpha": 0.5, "bogus": 1}])

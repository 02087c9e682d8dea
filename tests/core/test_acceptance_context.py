"""Acceptance by context length and by domain (specviz.core.acceptance) and the readers that fill
context_length, domain and rounds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.core import acceptance, theory
from specviz.data.measurements import load_measurements

FORMATS = Path(__file__).parents[1] / "fixtures" / "formats"


def _rounds(rng: np.random.Generator, alpha: float, k: int, n: int) -> np.ndarray:
    """Tokens per round N of ``n`` rounds under the chain model: draws from the chapter's pmf."""
    pmf = theory.accepted_length_pmf(alpha, k)
    return rng.choice(np.arange(1, k + 2), size=n, p=pmf / pmf.sum())


def test_wilson_matches_the_published_interval():
    # Newcombe (1998), Statistics in Medicine 17:857, table I: 81/263 → 0.2553–0.3662 (method 3, Wilson)
    lo, hi = acceptance.wilson(81, 263)
    assert (round(float(lo), 4), round(float(hi), 4)) == (0.2553, 0.3662)
    lo, hi = acceptance.wilson(0, 10)
    assert float(lo) == 0.0 and 0.0 < float(hi) < 0.35


@pytest.mark.parametrize(("alpha", "k", "n"), [(0.7, 4, 200), (0.35, 2, 60), (0.92, 6, 400)])
def test_alpha_interval_covers_the_true_alpha_at_its_level(alpha, k, n):
    rng = np.random.default_rng(20261204)
    trials = 1500
    means = np.array([_rounds(rng, alpha, k, n).mean() for _ in range(trials)])
    _, lo, hi = acceptance.alpha_interval(means, k, n)
    covered = float(np.mean((lo <= alpha) & (alpha <= hi)))
    # a 95 % interval: the share of intervals that cover α is binomial(trials, 0.95)
    tolerance = 3.5 * math.sqrt(0.95 * 0.05 / trials)
    assert abs(covered - 0.95) < tolerance, covered
    true_mean = float(theory.expected_tokens(alpha, k))
    m_lo, m_hi = theory.expected_tokens(lo, k), theory.expected_tokens(hi, k)
    assert np.mean((m_lo <= true_mean) & (true_mean <= m_hi)) == pytest.approx(covered)  # one monotone map


def test_alpha_interval_is_nan_without_rounds_and_narrows_with_more():
    a, lo, hi = acceptance.alpha_interval(2.5, 3, np.nan)
    assert np.isnan(lo) and np.isnan(hi) and 0 < a < 1
    _, lo1, hi1 = acceptance.alpha_interval(2.5, 3, 100)
    _, lo2, hi2 = acceptance.alpha_interval(2.5, 3, 400)
    assert lo1 < lo2 < a < hi2 < hi1
    assert (hi2 - lo2) == pytest.approx((hi1 - lo1) / 2, rel=0.05)  # width ∝ 1 / √n


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["alpha_used"] = theory.alpha_from_mean_tokens(frame["mean_accepted_tokens"], frame["k"])
    return frame


def test_row_context_takes_the_column_else_prompt_plus_half_the_output():
    frame = pd.DataFrame(
        {"context_length": [900.0, None, None], "prompt_tokens": [1.0, 1000.0, None], "output_tokens": [1, 256, 9]}
    )
    assert acceptance.row_context(frame).tolist()[:2] == [900.0, 1128.0]
    assert math.isnan(acceptance.row_context(frame).iloc[2])


def test_bucket_labels_and_order():
    assert acceptance.bucket_label(100) == "≤ 256"
    assert acceptance.bucket_label(256) == "≤ 256"
    assert acceptance.bucket_label(3000) == "2k–4k"
    assert acceptance.bucket_label(10**6) == "> 128k"
    assert acceptance.bucket_order(100) < acceptance.bucket_order(3000) < acceptance.bucket_order(10**6)


def test_by_group_pools_by_rounds_and_gives_intervals_only_where_counted():
    frame = _frame(
        [
            {"k": 3, "mean_accepted_tokens": 3.0, "rounds": 100, "context_length": 600, "domain": "code"},
            {"k": 3, "mean_accepted_tokens": 2.0, "rounds": 300, "context_length": 700, "domain": "code"},
            {"k": 3, "mean_accepted_tokens": 1.5, "rounds": None, "context_length": 9000, "domain": "chat"},
            {"k": 3, "mean_accepted_tokens": 2.2, "rounds": 50, "context_length": None, "domain": None},
        ]
    )
    rows = acceptance.row_acceptance(frame)
    buckets = acceptance.by_group(rows, "bucket")
    assert buckets["bucket"].tolist() == ["512–1k", "8k–16k"]
    first = buckets.iloc[0]
    assert first["mean_tokens"] == pytest.approx((3.0 * 100 + 2.0 * 300) / 400) and first["rounds"] == 400
    assert first["mean_lo"] < first["mean_tokens"] < first["mean_hi"]
    assert first["alpha"] == pytest.approx(float(theory.alpha_from_mean_tokens(2.25, 3)))
    assert math.isnan(buckets.iloc[1]["alpha_lo"])  # no rounds: no interval
    domains = acceptance.by_group(rows, "domain")
    assert sorted(domains["domain"]) == ["chat", "code"] and domains["rows"].sum() == 3


def test_by_group_refuses_an_unknown_grouping():
    with pytest.raises(ValueError, match="bucket"):
        acceptance.by_group(acceptance.row_acceptance(_frame([{"k": 2, "mean_accepted_tokens": 2.0}])), "model")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.floats(-2.0, 3.0), st.floats(0.0, 1.2), st.sampled_from([1, 3, 6]))
def test_fit_decay_recovers_a_noise_free_decay(a, b, k):
    fit = acceptance.DecayFit(a, b)
    contexts = np.array([300.0, 1500.0, 6000.0, 24000.0])
    alpha = np.clip(fit.alpha(contexts), 1e-3, 1 - 1e-3)
    mean = theory.expected_tokens(alpha, k)
    frame = _frame(
        [{"k": k, "mean_accepted_tokens": m, "context_length": c} for m, c in zip(mean, contexts, strict=True)]
    )
    got = acceptance.fit_decay(acceptance.row_acceptance(frame))
    if np.all((fit.alpha(contexts) > 1e-3) & (fit.alpha(contexts) < 1 - 1e-3)):
        assert got.a == pytest.approx(a, abs=1e-4) and got.b == pytest.approx(b, abs=1e-4)
    assert got.contexts == 4 and not got.weighted


def test_fit_decay_from_counted_rounds_lands_within_its_interval():
    rng = np.random.default_rng(7)
    truth = acceptance.DecayFit(1.2, 0.35)
    rows = []
    for context in (512, 2048, 8192, 32768):
        for _ in range(3):
            n = _rounds(rng, float(truth.alpha(context)), 4, 400)
            rows.append({"k": 4, "mean_accepted_tokens": n.mean(), "rounds": 400, "context_length": context})
    fit = acceptance.fit_decay(acceptance.row_acceptance(_frame(rows)))
    assert fit.weighted and fit.points == 12
    (vaa, _), (_, vbb) = fit.cov
    assert abs(fit.a - truth.a) < 4 * math.sqrt(vaa) and abs(fit.b - truth.b) < 4 * math.sqrt(vbb)
    lo, hi = fit.band([512, 32768])
    assert np.all(lo < fit.alpha([512, 32768])) and np.all(fit.alpha([512, 32768]) < hi)
    assert fit.alpha(32768) < fit.alpha(512)  # it decays


def test_fit_decay_needs_two_contexts():
    frame = _frame([{"k": 2, "mean_accepted_tokens": 2.0, "context_length": 1000}] * 3)
    with pytest.raises(ValueError, match="two or more context lengths"):
        acceptance.fit_decay(acceptance.row_acceptance(frame))


def test_a_fit_travels_in_a_link_and_bad_text_is_named():
    fit = acceptance.DecayFit(1.23456, 0.4)
    back = acceptance.DecayFit.from_param(fit.to_param())
    assert back.to_param() == "1.2346;0.4000" and back.alpha(4096) == pytest.approx(fit.alpha(4096), abs=1e-4)
    for bad in ("", "1", "a;b", "1;2;3", "nan;1", "99;0"):
        with pytest.raises(ValueError, match=acceptance.FIT_PARAM):
            acceptance.DecayFit.from_param(bad)


# --------------------------------------------------------------------------------------
# readers fill context_length, domain and rounds
# --------------------------------------------------------------------------------------


def _specbench_line(model_id: str, category: str, accept_lengths: list[int]) -> str:
    choice = {"turns": ["…"], "new_tokens": [sum(accept_lengths)], "wall_time": [0.5], "accept_lengths": accept_lengths}
    return json.dumps({"question_id": 1, "category": category, "model_id": model_id, "choices": [choice]})


def test_spec_bench_rows_per_category_with_their_domain_and_rounds():
    lines = [
        _specbench_line("m", "coding", [3, 3, 2]),
        _specbench_line("m", "math_reasoning", [1, 2]),
        _specbench_line("m", "coding", [4]),
    ]
    frame, _ = load_measurements("\n".join(lines), name="sb", k=3)
    assert frame["label"].tolist() == ["sb", "sb · coding", "sb · math_reasoning"]
    assert frame["domain"].tolist()[1:] == ["coding", "math_reasoning"] and pd.isna(frame["domain"].iloc[0])
    assert frame["rounds"].tolist() == [6, 4, 2]
    assert frame["mean_accepted_tokens"].tolist() == pytest.approx([15 / 6, 3.0, 1.5])


def test_one_category_is_the_domain_of_the_only_row():
    frame, _ = load_measurements(_specbench_line("m", "writing", [2, 2]), name="sb", k=3)
    assert len(frame) == 1 and frame["domain"].iloc[0] == "writing" and frame["rounds"].iloc[0] == 2


def test_engine_files_carry_their_rounds_and_context():
    llama, _ = load_measurements(FORMATS / "llamacpp-spec-stats.log", k=3)
    assert llama["context_length"].iloc[0] == 187 + 256 / 2  # prompt eval 187 tokens, eval 256 tokens
    aiperf, _ = load_measurements(FORMATS / "aiperf-profile-export.json")
    assert aiperf["rounds"].iloc[0] == 7737  # total_spec_decode_steps
    vllm, _ = load_measurements(FORMATS / "vllm-bench-serve.json")
    assert (
        vllm["rounds"].iloc[0] == json.loads((FORMATS / "vllm-bench-serve.json").read_text())["spec_decode_num_drafts"]
    )
    result = json.loads((FORMATS / "vllm-bench-serve.json").read_text()) | {"dataset_name": "sharegpt"}
    assert load_measurements(json.dumps(result))[0]["domain"].iloc[0] == "sharegpt"  # --metadata dataset_name=…
    profile, _ = load_measurements(FORMATS / "speculation_profile.json")
    assert profile["domain"].iloc[1:].tolist() == list(
        json.loads((FORMATS / "speculation_profile.json").read_text())["per_category"]
    )
    assert pd.isna(profile["domain"].iloc[0])  # the profile's overall row
    timings = '{"timings": {"prompt_n": 100, "predicted_n": 50, "draft_n": 40, "draft_n_accepted": 30}}'
    row, _ = load_measurements(timings, k=4)
    assert row["context_length"].iloc[0] == 125.0


def test_a_csv_names_context_domain_and_rounds_its_own_way():
    text = "k,tau,ctx,category,num_drafts\n3,2.5,4096,code,120\n"
    frame, report = load_measurements(text)
    assert frame[["context_length", "domain", "rounds"]].iloc[0].tolist() == [4096.0, "code", 120]
    assert report.mapped["ctx"] == "context_length"

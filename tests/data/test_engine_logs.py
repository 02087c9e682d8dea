"""Engine log import: every generation of speculative-decoding log line that vLLM (V1 current, V1 2025,
V0), SGLang (``Decode batch``) and llama.cpp (old, per-position, server slot timings, response timings)
print, through ``load_measurements`` (docs/measurement-schema.md, "Input formats")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _tiers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specviz.core import theory
from specviz.data.measurements import READERS, load_measurements, readers
from specviz.data.measurements.readers import log_lines

# the exact lines of each form
V1_CURRENT = (
    "SpecDecoding metrics: Mean acceptance length: 2.37, Accepted throughput: 12.50 tokens/s, Drafted "
    "throughput: 40.00 tokens/s, Accepted: 125 tokens, Drafted: 400 tokens, Per-position acceptance rate: "
    "0.805, 0.632, 0.483, 0.320, Avg Draft acceptance rate: 31.2%"
)
V1_2025 = (
    "SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length: 2.16, Accepted: 116 tokens, "
    "Drafted: 300 tokens, Per-position acceptance rate: 0.667, 0.333, 0.160"
)
V1_2025_NO_POSITIONS = (
    "SpecDecoding metrics: Draft acceptance rate: 40.0%, Mean acceptance length: 2.20, Accepted: 120 tokens, "
    "Drafted: 300 tokens"
)
V0 = (
    "Speculative metrics: Draft acceptance rate: 0.607, System efficiency: 0.510, Number of speculative tokens: 4, "
    "Number of accepted tokens: 1200, Number of draft tokens: 1976, Number of emitted tokens: 2070."
)
# a V0 line whose numbers agree: R = 2000 / 4 = 500, E[N] = 1600 / 500 = 3.2, efficiency 1600 / 2500 = 0.640
V0_CONSISTENT = (
    "Speculative metrics: Draft acceptance rate: 0.605, System efficiency: 0.640, Number of speculative tokens: 4, "
    "Number of accepted tokens: 1210, Number of draft tokens: 2000, Number of emitted tokens: 1600."
)
SGLANG = (
    "[2025-06-01 10:00:00 TP0] Decode batch, #running-req: 3, #token: 1234, token usage: 0.05, accept len: 2.54, "
    "accept rate: 0.51, gen throughput (token/s): 87.12, #queue-req: 0"
)
SGLANG_OLD = (
    "Decode batch. #running-req: 1, #token: 400, token usage: 0.01, accept len: 3.10, gen throughput (token/s): "
    "120.55, #queue-req: 0"
)
SGLANG_OFF = (
    "[2025-06-01 10:00:02 TP0] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, cuda graph: True, "
    "gen throughput (token/s): 40.00, #queue-req: 0"
)
LLAMA_OLD = "draft acceptance rate = 0.81944 (  118 accepted /   144 generated)"
LLAMA_POSITIONS = (
    "draft acceptance = 0.64479 (167 accepted / 259 generated), mean acceptance length = 2.92, "
    "acceptance rate per position = (0.805, 0.632, 0.483)"
)
LLAMA_SLOT = (
    "slot print_timing: id  0 | task 12 | draft acceptance = 0.64479 (  167 accepted /   259 generated), "
    "mean len =  2.92"
)
LLAMA_TIMINGS = (
    '{"content": "…", "timings": {"prompt_n": 12, "prompt_ms": 35.12, "predicted_n": 120, '
    '"predicted_ms": 4567.89, "predicted_per_second": 26.27, "draft_n": 259, "draft_n_accepted": 167}}'
)

# realistic logs: the metrics lines among the engine's other lines
VLLM_LOG = "\n".join(
    [
        "INFO 06-01 10:00:00 [api_server.py:1090] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "INFO 06-01 10:00:10 [loggers.py:118] Engine 000: Avg prompt throughput: 51.2 tokens/s, Avg generation "
        "throughput: 88.4 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2%",
        f"INFO 06-01 10:00:10 [metrics.py:82] {V1_2025}",
        'INFO:     127.0.0.1:50000 - "POST /v1/completions HTTP/1.1" 200 OK',
        f"INFO 06-01 10:00:20 [metrics.py:82] {V1_2025_NO_POSITIONS}",
        "WARNING 06-01 10:00:21 [scheduler.py:10] Sequence group 3 is preempted",
    ]
)
VLLM_V0_LOG = "\n".join(
    [
        "INFO 06-01 10:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='m'",
        "INFO 06-01 10:00:05 metrics.py:349] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
        "95.2 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.3%.",
        f"INFO 06-01 10:00:05 metrics.py:375] {V0_CONSISTENT}",
    ]
)
SGLANG_LOG = "\n".join(
    [
        "[2025-06-01 09:59:50] server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE', "
        "speculative_num_steps=4, speculative_eagle_topk=1, speculative_num_draft_tokens=5)",
        "[2025-06-01 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: "
        "0.01, #running-req: 0, #queue-req: 0",
        SGLANG,
        SGLANG_OFF,
        '[2025-06-01 10:00:03] INFO:     127.0.0.1:50000 - "POST /generate HTTP/1.1" 200 OK',
        "[2025-06-01 10:00:04 TP0] Decode batch, #running-req: 3, #token: 1300, token usage: 0.05, accept len: "
        "3.05, accept rate: 0.61, cuda graph: True, gen throughput (token/s): 101.40, #queue-req: 0",
    ]
)
LLAMA_LOG = "\n".join(
    [
        "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
        "slot launch_slot_: id  0 | task 12 | processing task",
        "slot print_timing: id  0 | task 12 | prompt eval time =      35.12 ms /    12 tokens (    2.93 ms per "
        "token,   341.69 tokens per second)",
        "slot print_timing: id  0 | task 12 |        eval time =    4567.89 ms /   120 tokens (   38.07 ms per "
        "token,    26.27 tokens per second)",
        "slot print_timing: id  0 | task 12 |       total time =    4603.01 ms /   132 tokens",
        LLAMA_SLOT,
        "slot print_timing: id  0 | task 12 |      acc per pos = (0.805, 0.632, 0.483)",
        "statistics draft: #calls = 87, #gen drafts = 87, #acc drafts = 80, #gen tokens = 259, #acc tokens = 167",
        "srv  log_server_r: request: POST /completion 127.0.0.1 200",
        "slot print_timing: id  0 | task 40 |        eval time =    2000.00 ms /    64 tokens (   31.25 ms per "
        "token,    32.00 tokens per second)",
        "slot print_timing: id  0 | task 40 | draft acceptance = 0.70312 (   90 accepted /   128 generated), "
        "mean len =  2.88",
    ]
)


def load(text: str, **kw):
    return load_measurements(text, kw.pop("name", "log"), **kw)


def cond(*p: float) -> list[float]:
    """Unconditional p_i as conditional a_i = p_i / p_(i−1)."""
    return [x / prev for prev, x in zip((1.0, *p[:-1]), p, strict=True)]


def positions(df) -> list[list[float]]:
    return [[float(x) for x in cell.split(";")] for cell in df.per_position_acceptance]


# --------------------------------------------------------------------------------------
# vLLM
# --------------------------------------------------------------------------------------


def test_vllm_v1_current_line():
    df, report = load(V1_CURRENT, k=4)
    assert report.format == "vllm_log" and list(df.index) == [1]
    row = df.iloc[0]
    assert (row.k, row.mean_accepted_tokens, row.acceptance_rate) == (4, 2.37, 125 / 400)
    np.testing.assert_allclose(positions(df)[0], cond(0.805, 0.632, 0.483, 0.320), rtol=1e-5)
    # accepted throughput counts accepted draft tokens only: kept in notes, not tokens_per_s
    assert math.isnan(row.tokens_per_s)
    assert row.notes == (
        "vLLM V1 SpecDecoding metrics (current form), log line 1; accepted throughput 12.50 tokens/s, "
        "drafted throughput 40.00 tokens/s (draft tokens only, not tokens_per_s)"
    )
    # the example's p_i sum to 2.24, not E[N] − 1 = 1.37: said, and read all the same
    assert any("do not sum to mean length − 1" in w and "line(s) 1" in w for w in report.warnings)
    assert "k = 4 (given by the caller) for the lines that do not state K" in report.conversions


def test_vllm_v1_2025_lines_with_and_without_positions():
    df, report = load(VLLM_LOG, k=3)
    assert report.format == "vllm_log" and list(df.index) == [3, 5] and report.rows_read == 2
    assert df.mean_accepted_tokens.tolist() == [2.16, 2.20]
    assert df.acceptance_rate.tolist() == pytest.approx([116 / 300, 120 / 300])
    np.testing.assert_allclose(positions(df.iloc[:1])[0], [0.667, 0.333 / 0.667, 0.160 / 0.333], rtol=1e-5)
    assert df.per_position_acceptance.isna().tolist() == [False, True]
    assert df.notes.tolist() == [
        "vLLM V1 SpecDecoding metrics (2025 form), log line 3",
        "vLLM V1 SpecDecoding metrics (2025 form), log line 5",
    ]
    assert not report.warnings  # Σ p_i = 1.16 = E[N] − 1, E[N] = 1 + 3·r
    assert df.alpha_used.iloc[0] == pytest.approx(float(theory.alpha_from_mean_tokens(2.16, 3)))
    with pytest.raises(ValueError, match="vLLM log lines do not state the draft length K"):
        load(VLLM_LOG)
    with pytest.raises(ValueError, match="lists 3 per-position rates"):  # the one usable row has K = 3
        load(f"{V1_2025}\n", k=4)


def test_vllm_v0_states_k_and_its_rate_is_a_fraction_not_r():
    df, report = load(VLLM_V0_LOG)  # no k=: the line states K
    assert report.format == "vllm_v0_log" and list(df.index) == [3]
    row = df.iloc[0]
    assert row.k == 4
    assert row.mean_accepted_tokens == pytest.approx(1600 / (2000 / 4))  # E[N] = E·K / D = 3.2
    assert row.acceptance_rate == pytest.approx((1600 - 500) / 2000)  # r = (E − R) / D = (E[N] − 1) / K
    assert row.acceptance_rate == pytest.approx((row.mean_accepted_tokens - 1) / 4)
    # 0.605 is a fraction (not 0.605 %), and counts positions after the first rejection: a note, not r
    assert row.notes == (
        "vLLM V0 Speculative metrics, log line 3; draft acceptance rate 0.605 (accepted positions / draft "
        "tokens: not r)"
    )
    assert not report.warnings and not any("percent" in c for c in report.conversions)
    assert load(VLLM_V0_LOG, k=4)[0].k.tolist() == [4]


def test_vllm_v0_example_line_is_inconsistent_and_loads_from_its_counts():
    df, report = load(V0)
    row = df.iloc[0]
    assert row.k == 4 and row.mean_accepted_tokens == pytest.approx(2070 / (1976 / 4))
    assert row.acceptance_rate == pytest.approx((2070 - 494) / 1976)
    # efficiency 0.510 ≠ 2070 / (494·5) = 0.838, and E − R = 1576 > A = 1200
    (warning,) = report.warnings
    assert warning.startswith("vLLM V0 line whose counts contradict its printed ratios") and "line(s) 1" in warning
    assert "draft acceptance rate 0.607" in row.notes


def test_vllm_v0_k_mismatch_is_a_row_error_naming_both():
    other = V0_CONSISTENT.replace("speculative tokens: 4", "speculative tokens: 5")
    df, report = load(f"{V0_CONSISTENT}\n{other}\n", k=4)
    assert list(df.index) == [1]
    (err,) = report.row_errors
    assert (err.row, err.column, err.value) == (2, "k", "5")
    assert "Number of speculative tokens: 5" in err.allowed and "k=4 was given" in err.allowed


def test_vllm_v0_without_counts_uses_system_efficiency():
    line = (
        "Speculative metrics: Draft acceptance rate: 0.700, System efficiency: 0.640, Number of speculative tokens: 4."
    )
    df, report = load(line)
    assert df.mean_accepted_tokens.iloc[0] == pytest.approx(0.640 * 5)  # E[N] = efficiency × (K + 1)
    assert "'System efficiency': E[N] = value × (K + 1)" in report.conversions


def test_vllm_log_with_v1_and_v0_lines_reads_both():
    df, report = load(f"{V1_2025}\n{V0_CONSISTENT}\n", k=3)
    assert report.format == "vllm_log" and list(df.index) == [1]  # the V0 line states K = 4
    assert [(e.row, e.column) for e in report.row_errors] == [(2, "k")]


# --------------------------------------------------------------------------------------
# SGLang
# --------------------------------------------------------------------------------------


def test_sglang_lines_both_forms():
    df, report = load(SGLANG, k=4)
    assert report.format == "sglang_log"
    row = df.iloc[0]
    assert (row.k, row.mean_accepted_tokens, row.tokens_per_s, row.batch_size) == (4, 2.54, 87.12, 3)
    assert math.isnan(row.acceptance_rate)  # accept rate is E[N] / (K + 1), not r: checked, not stored
    assert row.notes == (
        "SGLang Decode batch (with accept rate), TP0, log line 1; accept rate 0.51 (E[N] / speculative_num_draft_tokens)"
    )
    assert not report.warnings and not report.row_errors
    df, _ = load(SGLANG_OLD, k=4)
    row = df.iloc[0]
    assert (row.mean_accepted_tokens, row.tokens_per_s, row.batch_size) == (3.10, 120.55, 1)
    assert row.notes == "SGLang Decode batch (accept len only), log line 1"


def test_sglang_log_skips_other_lines_and_speculation_off():
    df, report = load(SGLANG_LOG, k=4)
    assert report.format == "sglang_log" and list(df.index) == [3, 6] and report.rows_read == 2
    assert df.mean_accepted_tokens.tolist() == [2.54, 3.05] and df.batch_size.tolist() == [3, 3]
    assert df.tokens_per_s.tolist() == [87.12, 101.40]
    with pytest.raises(ValueError, match="speculative decoding was off"):
        load(f"{SGLANG_OFF}\n{SGLANG_OFF}\n", k=4)
    with pytest.raises(ValueError, match="SGLang log lines do not state the draft length K"):
        load(SGLANG_LOG)


def test_sglang_accept_rate_checks_k():
    # accept len / accept rate = 2.54 / 0.51 ≈ 5 verified tokens per round: a chain of K = 4
    with pytest.raises(ValueError, match="fewer than K \\+ 1 = 6"):
        load(SGLANG, k=5)  # e.g. speculative_num_draft_tokens passed as k
    df, report = load(SGLANG, k=2)  # more than K + 1 verified: a tree, or k below the depth
    assert len(df) == 1 and any("tree" in w for w in report.warnings)
    # at k = 3 the same line also reads as the newer accept rate, r = (2.54 − 1) / 3 = 0.513: taken as r
    df, report = load(SGLANG, k=3)
    assert df.acceptance_rate.iloc[0] == 0.51 and not any("tree" in w for w in report.warnings)
    assert log_lines.drafts_per_round(2.54, 0.51) is not None
    low, high = readers.sglang_log.verified_per_round(2.54, 0.51)
    assert low < 5 < high and high - low < 0.3


# --------------------------------------------------------------------------------------
# llama.cpp
# --------------------------------------------------------------------------------------


def test_llamacpp_old_and_per_position_forms():
    df, report = load(LLAMA_OLD, k=3)
    assert report.format == "llamacpp_log"
    assert df.acceptance_rate.iloc[0] == pytest.approx(118 / 144) and math.isnan(df.mean_accepted_tokens.iloc[0])
    assert df.notes.iloc[0] == "llama.cpp draft acceptance (old form), log line 1"
    df, report = load(LLAMA_POSITIONS, k=3)
    row = df.iloc[0]
    assert row.acceptance_rate == pytest.approx(167 / 259) and row.mean_accepted_tokens == 2.92
    # unconditional p_i (steps accepting ≥ i drafts / steps): Σ p_i = 1.92 = E[N] − 1; stored conditional
    np.testing.assert_allclose(positions(df)[0], cond(0.805, 0.632, 0.483), rtol=1e-5)
    assert not report.warnings and any("conditional a_i" in c for c in report.conversions)
    assert df.notes.iloc[0] == "llama.cpp draft acceptance (per-position form), log line 1"


def test_llamacpp_server_log_joins_its_slot_lines():
    df, report = load(LLAMA_LOG, k=3)
    assert report.format == "llamacpp_log" and list(df.index) == [6, 11]
    assert df.acceptance_rate.tolist() == pytest.approx([167 / 259, 90 / 128])
    assert df.mean_accepted_tokens.tolist() == [2.92, 2.88]
    assert df.tokens_per_s.tolist() == [26.27, 32.00]  # the slot's "eval time" line, not "prompt eval time"
    np.testing.assert_allclose(positions(df.iloc[:1])[0], cond(0.805, 0.632, 0.483), rtol=1e-5)
    assert df.per_position_acceptance.isna().tolist() == [False, True]
    assert df.notes.tolist() == [
        "llama.cpp draft acceptance (server slot timings, slot 0, task 12), log line 6; per-position rates "
        "from log line 7",
        "llama.cpp draft acceptance (server slot timings, slot 0, task 40), log line 11",
    ]
    # task 40 drafted 128 / (90 / 1.88) ≈ 2.67 < K tokens per round: E[N] ≠ 1 + K·r, and the report says why
    assert len(report.warnings) == 2 and all("11" in w for w in report.warnings)
    assert any("fewer than K tokens per round" in w for w in report.warnings)


def test_llamacpp_response_timings():
    df, report = load(LLAMA_TIMINGS, k=3)
    assert report.format == "llamacpp_log"
    assert df.acceptance_rate.iloc[0] == pytest.approx(167 / 259) and df.tokens_per_s.iloc[0] == 26.27


def test_llamacpp_k_checks():
    with pytest.raises(ValueError, match="lists 3 per-position rates"):
        load(LLAMA_POSITIONS, k=4)
    # (E[N] − 1) / r = 1.92 / 0.6448 ≈ 2.98 drafted tokens per round: more than K = 2 is impossible
    with pytest.raises(ValueError, match="2.98 drafted tokens per round"):
        load(LLAMA_SLOT, k=2)
    df, report = load(LLAMA_SLOT, k=5)  # fewer is allowed: llama.cpp stops drafts early
    assert len(df) == 1 and any("fewer than K tokens per round" in w for w in report.warnings)


# --------------------------------------------------------------------------------------
# detection, refusals, the shared helpers, fuzz
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reader"),
    [
        (V1_CURRENT, "vllm_log"),
        (VLLM_LOG, "vllm_log"),
        (f"{V0}\n{V1_2025}", "vllm_log"),
        (VLLM_V0_LOG, "vllm_v0_log"),
        (SGLANG_LOG, "sglang_log"),
        (SGLANG_OLD, "sglang_log"),
        (SGLANG_OFF, "sglang_log"),
        (LLAMA_LOG, "llamacpp_log"),
        (LLAMA_OLD, "llamacpp_log"),
        (LLAMA_TIMINGS, "llamacpp_log"),
        ('{"choices": []}', "spec_bench"),
        ("label,k,alpha\na,4,0.7\n", "csv"),
        ("label,k,notes\na,4,draft acceptance rate\n", "csv"),
    ],
)
def test_detection_picks_the_engine(text, reader):
    assert readers.detect(text).name == reader
    assert list(READERS).index(reader) < list(READERS).index("spec_bench") or reader in ("spec_bench", "csv")


def test_irrelevant_or_empty_text_is_refused_clearly():
    with pytest.raises(ValueError, match="the file is empty"):
        load("")
    irrelevant = "INFO starting server\nINFO ready\n"
    with pytest.raises(ValueError, match="missing required column"):
        load(irrelevant)  # no engine claims it: read as CSV, which has no K or acceptance column
    for fmt, what in [
        ("vllm", "no 'SpecDecoding metrics' \\(vLLM V1\\) or 'Speculative metrics' \\(vLLM V0\\) line found"),
        ("vllm_v0", "no 'SpecDecoding metrics'"),
        ("sglang", "no SGLang 'Decode batch' \\(with 'accept len'\\) line found"),
        ("llama.cpp", "no llama.cpp 'draft acceptance' or 'statistics' line found"),
    ]:
        with pytest.raises(ValueError, match=what):
            load(irrelevant, format=fmt, k=3)


def test_shared_helpers():
    assert log_lines.conditional([0.8, 0.4, 0.0, 0.0]) == "0.8;0.5;0;nan"
    assert log_lines.conditional([0.5, 0.6]) == "0.5;1"  # capped at 1
    assert log_lines.positions_sum_off([0.805, 0.632, 0.483], 2.92) is False
    assert log_lines.positions_sum_off([0.805, 0.632, 0.483, 0.320], 2.37) is True
    assert log_lines.drafts_per_round(2.16, 116 / 300) == pytest.approx(3.0)
    assert log_lines.drafts_per_round(1.01, 0.5) is None and log_lines.drafts_per_round(2.0, "40%") is None
    assert log_lines.k_mismatch(3.5, 0.625, 4) is None and "imply K ≈ 4.00" in log_lines.k_mismatch(3.5, 0.625, 2)
    assert log_lines.stated_k_problem(4, 3, "Number of speculative tokens") == (
        "the K this line states (Number of speculative tokens: 4); k=3 was given"
    )
    assert log_lines.stated_k_problem(4, None, "x") is None
    assert log_lines.number_list("0.5, nan,1e-3") == [0.5, pytest.approx(math.nan, nan_ok=True), 0.001]


_num = st.one_of(
    st.floats(0, 10).map(lambda x: f"{x:.2f}"), st.integers(0, 10**30).map(str), st.sampled_from(["nan", "-nan"])
)
_PARTS = [
    "accept len: {}",
    "accept rate: {}",
    "gen throughput (token/s): {}",
    "#running-req: {}",
    "draft acceptance = {} ({} accepted / {} generated)",
    "mean len = {}",
    "acceptance rate per position = ({}, {}, {})",
    "Number of speculative tokens: {}",
    "Number of draft tokens: {}",
    "Number of emitted tokens: {}",
    "System efficiency: {}",
    '"draft_n": {}, "draft_n_accepted": {}',
]
_PREFIXES = ["Decode batch, ", "Decode batch. ", "slot print_timing: id  0 | task 1 | ", "Speculative metrics: ", ""]


@st.composite
def _engine_log(draw) -> tuple[str, dict]:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        parts = draw(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=5))
        body = ", ".join(p.format(*(draw(_num) for _ in range(3))) for p in parts)
        lines.append(draw(st.sampled_from(_PREFIXES)) + body)
    kw = {"k": draw(st.one_of(st.none(), st.integers(1, 8)))}
    if draw(st.booleans()):
        kw["format"] = draw(st.sampled_from(["auto", "vllm_v0", "sglang", "llamacpp"]))
    return "\n".join(lines), kw


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_engine_log())
@pytest.mark.slow
def test_fuzzed_engine_lines_load_or_raise_value_error(case):
    text, kw = case
    try:
        df, report = load(text, **kw)
    except ValueError as exc:
        assert str(exc)
        return
    assert len(df) == report.rows_loaded >= 1 and (df.k >= 1).all()
    m = df.mean_accepted_tokens.dropna()
    assert ((m >= 1) & (m <= df.k[m.index] + 1)).all() and df.alpha_used.dropna().between(0, 1).all()


def test_sglang_accept_rate_in_its_newer_meaning_is_r():
    """Since SGLang PR #23530 (April 2026) accept rate is accepted / proposed: r = (E[N] − 1) / K."""
    from specviz.data.measurements import load_measurements

    line = "[2026-05-01 10:00:00 TP0] Decode batch, #running-req: 2, #token: 900, token usage: 0.02, accept len: 2.80, accept rate: 0.60, gen throughput (token/s): 95.10, #queue-req: 0\n"
    frame, _ = load_measurements(line, name="sglang.log", k=3)
    row = frame.iloc[0]
    assert row["mean_accepted_tokens"] == 2.8 and row["acceptance_rate"] == 0.6
    assert "PR #23530" in row["notes"]

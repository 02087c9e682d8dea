"""A tune's cost: USD per million output tokens from a GPU-hour's price, the best K within a TPOT limit per load
against no speculation, the cheapest (K, load), and iso-cost lines that sit where their cost says."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _tiers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.app.figures.serving import MAX_COST_LINES, cost_levels
from specviz.base.i18n import Message
from specviz.core import serving, tuning


def table(rows) -> pd.DataFrame:
    """Answer.table rows from (k, concurrency, tpot_ms, tokens_per_s)."""
    frame = pd.DataFrame(rows, columns=["k", "concurrency", "tpot_ms", "tokens_per_s"])
    return frame.assign(tpot_s=frame.pop("tpot_ms") / 1e3)


ROWS = table(
    [
        (0, 1, 20.0, 48.0),
        (3, 1, 12.0, 80.0),
        (5, 1, 11.0, 86.0),
        (0, 8, 25.0, 310.0),
        (3, 8, 24.0, 330.0),
        (5, 8, 30.0, 260.0),
    ]
)


def test_cost_is_the_hourly_price_over_the_tokens_served_in_an_hour():
    """USD 2 per GPU-hour × 2 GPUs over 80 tokens/s: 4 / (80 × 3600) × 10⁶ = 13.888… USD per million."""
    frame = tuning.priced(ROWS, 2.0, 2)
    row = frame[(frame["k"] == 3) & (frame["concurrency"] == 1)].iloc[0]
    assert row["usd_per_m"] == pytest.approx(4.0 / (80 * 3600) * 1e6, rel=1e-12)
    assert row["per_gpu"] == 40.0 and row["per_user"] == pytest.approx(1 / 0.012)


def test_per_load_the_best_k_is_the_fastest_within_the_tpot_limit_and_is_never_dearer_than_k_0():
    by = tuning.cost_by_load(tuning.priced(ROWS, 2.0, 1), tpot_sla_s=0.026)
    assert by["k"].tolist() == [5, 3]  # at 8 in flight K = 5 is too slow per token (30 ms > 26 ms)
    assert by["saving"].iloc[0] == pytest.approx(1 - 48 / 86) and (by["saving"] >= 0).all()
    tight = tuning.cost_by_load(tuning.priced(ROWS, 2.0, 1), tpot_sla_s=0.0115)
    assert tight["k"].iloc[0] == 5 and math.isnan(tight["plain_usd_per_m"].iloc[0])  # only speculation meets it
    assert math.isnan(tight["k"].iloc[1]) and math.isnan(tight["usd_per_m"].iloc[1])  # nothing at 8 in flight


def test_the_cheapest_setup_serves_the_most_tokens_within_the_limit():
    frame = tuning.priced(ROWS, 2.0, 1)
    best, plain = tuning.cheapest(frame, None)
    assert (best["k"], best["concurrency"]) == (3, 8) and (plain["k"], plain["concurrency"]) == (0, 8)
    best, plain = tuning.cheapest(frame, 0.0115)
    assert (best["k"], best["concurrency"]) == (5, 1) and plain is None
    assert tuning.cheapest(frame, 0.001) == (None, None)


@pytest.mark.parametrize("bad", [0.0, -0.01, math.nan, math.inf])
def test_a_tpot_limit_that_is_not_a_positive_time_is_named(bad):
    with pytest.raises(Message, match="TPOT limit must be a number of milliseconds > 0"):
        tuning.cost_by_load(tuning.priced(ROWS, 2.0, 1), bad)


def test_a_price_or_gpu_count_that_is_not_positive_is_named():
    with pytest.raises(Message, match="price per GPU-hour must be a finite number > 0; got -1"):
        tuning.priced(ROWS, -1.0, 1)
    with pytest.raises(Message, match="GPUs must be a finite number > 0; got 0"):
        tuning.priced(ROWS, 2.0, 0)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.floats(0.05, 500.0),
    st.floats(0.01, 1e5),
)
def test_tokens_per_s_at_a_cost_inverts_the_cost_of_tokens_per_s(price, rate):
    usd = serving.usd_per_million_tokens(price, 1, rate)
    assert tuning.tokens_per_s_at_cost(price, usd) == pytest.approx(rate, rel=1e-12)


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(0.05, 500.0), st.floats(0.1, 1e4), st.floats(1.0, 1e3))
def test_iso_cost_lines_are_round_costs_inside_the_drawn_range(price, low, spread):
    per_gpu = np.array([low, low * spread])
    lines = cost_levels(price, per_gpu)
    assert len(lines) <= MAX_COST_LINES
    for usd, y in lines:
        mantissa = usd / 10 ** math.floor(math.log10(usd) + 1e-9)
        assert min(abs(mantissa - m) for m in (1, 1.5, *range(2, 10))) < 1e-6
        assert low * (1 - 1e-9) <= y <= low * spread * (1 + 1e-9)
        assert serving.usd_per_million_tokens(price, 1, y) == pytest.approx(usd, rel=1e-9)
    if spread >= 10:  # a decade always holds a 1, 2 or 5
        assert lines
    if spread >= 2:  # [x, 2x] always holds one of 1..9 x 10^n (ceil(x) <= 2x for x >= 1)
        assert lines


def test_no_price_no_cost_lines():
    assert cost_levels(0.0, [10.0, 100.0]) == [] and cost_levels(2.0, [math.nan]) == []


def test_the_cli_text_names_the_cheapest_setup_and_the_loads_no_k_meets():
    frame = tuning.priced(ROWS, 2.0, 1)
    text = tuning.cost_text(tuning.cost_by_load(frame, 0.0115), *tuning.cheapest(frame, 0.0115), 2.0, 1, 0.0115)
    assert "TPOT <= 11.5 ms" in text  # 2 / (86 × 3600) × 10⁶ = 6.46 below
    assert "cheapest: K = 5 at 1 in flight, USD 6.46 per million tokens (86 tokens/s)" in text
    assert "cheapest without speculation: no point meets the TPOT limit" in text
    assert "   8   —" in text

"""Your rows are checked against physical limits before a fit (issue 56, defect 2): a speedup above its own τ,
a step time outside 1 µs – 60 s; each refusal names the row, the field, the value and what is allowed."""

from __future__ import annotations

import pandas as pd
import pytest

from specviz.core import published, validation

SPEEDUP = dict(
    kind="speedup",
    target="meta-llama/Llama-3.1-8B-Instruct",
    draft="meta-llama/Llama-3.2-1B-Instruct",
    method="model",
    gpu="H100-SXM5-80GB",
    batch="1",
    k="4",
    tau="3",
    speedup="2",
)
STEP = dict(kind="step", target="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-SXM5-80GB", batch="1", t_step_ms="9")


def checked(*rows: dict) -> tuple[pd.DataFrame, list[str], list[str]]:
    good, problems = validation.check_rows(pd.DataFrame(list(rows)))
    return good, [p.text("en") for p in problems], [p.text("zh") for p in problems]


def test_plausible_rows_pass():
    good, en, _ = checked(SPEEDUP, STEP, STEP | dict(t_step_ms="0.001"), STEP | dict(t_step_ms="60000"))
    assert en == [] and len(good) == 4


def test_a_speedup_above_its_tau_is_refused_naming_row_field_and_value():
    good, en, zh = checked(SPEEDUP, SPEEDUP | dict(speedup="1e6"), SPEEDUP | dict(speedup="3.01"))
    assert len(good) == 1 and len(en) == 2, en
    assert en[0].startswith("row 2: speedup = '1e6' is not allowed; allowed: ") and "τ = 3" in en[0], en
    assert "at least one target step" in en[0]
    assert en[1].startswith("row 3: speedup = '3.01'")
    assert zh[0].startswith("第 2 行：speedup = '1e6'") and "τ = 3" in zh[0], zh


@pytest.mark.parametrize("value", ["1e-9", "0.0009", "60001", "1e300"])
def test_a_step_time_outside_1_us_to_60_s_is_refused(value):
    good, en, zh = checked(STEP, STEP | dict(t_step_ms=value))
    assert len(good) == 1 and len(en) == 1, en
    assert en[0].startswith(f"row 2: t_step_ms = {value!r} is not allowed; allowed: ")
    assert "0.001" in en[0] and "60000" in en[0], en
    assert zh[0].startswith(f"第 2 行：t_step_ms = {value!r}")


def test_only_impossible_rows_leave_nothing_to_fit():
    good, en, _ = checked(SPEEDUP | dict(speedup="1e6"), STEP | dict(t_step_ms="1e-9"), STEP | dict(t_step_ms="1e300"))
    assert good.empty and [e.split(":")[0] for e in en] == ["row 1", "row 2", "row 3"]


@pytest.mark.parametrize("field", ["kv_tokens", "plain_kv_tokens"])
def test_a_kv_capacity_is_a_whole_number_of_tokens_and_caps_the_runs_batch(field):
    good, en, zh = checked(SPEEDUP | {field: "abc"}, SPEEDUP | {field: "0"})
    assert good.empty and len(en) == 2, en
    assert en[0].startswith(f"row 1: {field} = 'abc' is not allowed; allowed: an integer >= 1"), en
    assert zh[0].startswith(f"第 1 行：{field} = 'abc'"), zh
    good, en, _ = checked(SPEEDUP | dict(batch="64", context="100", kv_tokens="3000", plain_kv_tokens="6400"))
    assert en == [] and published.running_batches(good.iloc[0]) == (3000 // 105, 64)  # L + K + 1 = 105 slots with K = 4

"""ui.table's cells: one unit and format per column, "—" for a missing value with its reason in the
column's tooltip, thousands separators, percentages with "%", numbers right-aligned; the data sent unchanged."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from _tiers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from specviz.app import ui

EMPTY_WORDS = {"none", "nan", "<na>", "nat", "null", "inf", ""}
ANY_CELL = st.one_of(
    st.none(),
    st.just(float("nan")),
    st.just(pd.NA),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**15), 10**15),
    st.booleans(),
    st.text(max_size=8).filter(
        lambda s: s.strip().lower() not in EMPTY_WORDS - {""}
    ),  # a person's text shows as written
)
KINDS = st.sampled_from(["auto", "int", "number", "percent", "bool", "text"])


@settings(max_examples=examples(400), deadline=None)
@given(ANY_CELL, KINDS, st.integers(0, 4))
def test_no_cell_reads_as_an_empty_word(value, kind, digits):
    text = ui.cell_text(value, ui.Col(kind=kind, digits=digits))
    assert text.strip().lower() not in EMPTY_WORDS
    assert (text == ui.MISSING) == (
        value is None
        or value is pd.NA
        or (isinstance(value, float) and math.isnan(value))
        or (isinstance(value, str) and not value.strip())
    )


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(-(10**15), 10**15))
def test_integers_have_thousands_separators_and_no_decimals(n):
    for value in (n, float(n), np.int64(n)):
        text = ui.cell_text(value, ui.Col(kind="int"))
        assert re.fullmatch(r"-?\d{1,3}(,\d{3})*", text), text
        assert int(text.replace(",", "")) == n


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(-1e9, 1e9), st.integers(0, 4), st.sampled_from([1.0, 1e3]))
def test_numbers_keep_their_value_to_the_digits_shown(x, digits, scale):
    text = ui.cell_text(x, ui.Col(kind="number", digits=digits, scale=scale))
    assert re.fullmatch(r"-?\d{1,3}(,\d{3})*" + (rf"\.\d{{{digits}}}" if digits else ""), text), text
    assert abs(float(text.replace(",", "")) - x * scale) <= 0.5 * 10**-digits + 1e-9 * abs(x * scale)


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(0, 1), st.integers(0, 2))
def test_a_fraction_shows_as_a_percentage(x, digits):
    text = ui.cell_text(x, ui.Col(kind="percent", digits=digits))
    assert text.endswith(" %")
    assert abs(float(text[:-2].replace(",", "")) / 100 - x) <= 0.5 * 10**-digits / 100 + 1e-12


@given(st.text(min_size=1, max_size=12), st.sampled_from(["ms", "s", "×", "tokens/s"]))
def test_the_unit_is_named_once_in_the_heading(name, unit):
    head = ui.display.heading(name, ui.Col(name, unit))
    assert head.endswith(f"({unit})") and head.count(f"({unit})") == name.count(f"({unit})") + (
        0 if name.endswith(f"({unit})") else 1
    )
    assert ui.display.heading(head, ui.Col(head, unit)) == head  # already named: not twice
    assert ui.display.heading("share", ui.Col("share", "%", kind="percent")) == "share"  # "%" is in its cells


def test_kinds_follow_the_values_when_not_named():
    frame = pd.DataFrame(
        {"k": [1.0, 2.0, None], "x": [0.5, 1.25, 2.0], "ok": [True, False, True], "s": ["a", None, "c"]}
    )
    assert ui.shown_cells(frame).values.tolist() == [
        ["1", "0.500", "yes", "a"],
        ["2", "1.250", "no", "—"],
        ["—", "2.000", "yes", "c"],
    ]


def _page():
    import pandas as pd

    from specviz.app import ui

    frame = pd.DataFrame({"tpot_s": [0.0072, None], "share": [0.871, 0.5], "gpus": [54_900, 3], "name": ["a", ""]})
    why = "overloaded: no K keeps up with this load"
    ui.table(
        frame,
        {
            "tpot_s": ui.Col("TPOT", "ms", digits=1, scale=1e3, missing=why),
            "share": ui.Col("share", kind="percent", digits=1),
            "gpus": ui.Col("GPUs", kind="int"),
        },
        key="t",
    )


@pytest.mark.slow
def test_a_table_sends_raw_numbers_and_shows_them_formatted():
    at = AppTest.from_function(_page).run()
    assert not at.exception
    (table,) = at.dataframe
    assert table.value["TPOT (ms)"].iloc[0] == 0.0072 and table.value["GPUs"].tolist() == [54_900, 3]  # raw numbers
    shown = dataframe_util.convert_arrow_bytes_to_pandas_df(table.proto.arrow_data.styler.display_values)
    assert shown.values.tolist() == [["7.2", "87.1 %", "54,900", "a"], ["—", "50.0 %", "3", "—"]]
    config = json.loads(table.proto.columns)
    assert config["TPOT (ms)"]["label"] == "TPOT (ms)" and config["TPOT (ms)"]["alignment"] == "right"
    assert "overloaded" in config["TPOT (ms)"]["help"] and config["TPOT (ms)"]["help"].startswith("—")
    assert config["GPUs"]["alignment"] == "right" and config["name"].get("alignment") != "right"
    assert "no value for this row" in config["name"]["help"]


def test_an_empty_table_with_a_date_column_is_shown():
    """Was a defect: an empty datetime column's map gave datetimes, whose ``any()`` pandas refuses."""
    from specviz.app.ui.display import any_missing

    assert not any_missing(pd.Series(pd.to_datetime([])))
    assert any_missing(pd.Series(pd.to_datetime(["2026-12-06", None])))

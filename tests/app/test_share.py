"""The query-parameter codec: round trips, defaults omitted, invalid values reported."""

from __future__ import annotations

import pytest
from _tiers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.app import share
from specviz.app.share import MAX_ITEMS, Param, check_items, check_work, decode, encode, share_url

SPEC = (
    Param("alpha", 0.8, "float", 0.0, 1.0),
    Param("k", 4, "int", 1, 64),
    Param("view", "Heatmap", "choice", choices=("Heatmap", "3-D surface")),
    Param("range", (0.0, 1.0), "range", 0.0, 1.0),
    Param("cs", [2.0, 8.0], "floats", 1e-3, 1e4, max_items=4),
    Param("flag", False, "bool"),
    Param("ks", [], "ints", 1, 64, max_items=8),
)

values_strategy = st.fixed_dictionaries(
    {
        "alpha": st.floats(0.0, 1.0),
        "k": st.integers(1, 64),
        "view": st.sampled_from(["Heatmap", "3-D surface"]),
        "range": st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)).filter(lambda r: r[0] < r[1]),
        "cs": st.lists(st.floats(1e-3, 1e4), min_size=1, max_size=4, unique=True).map(sorted),
        "flag": st.booleans(),
        "ks": st.lists(st.integers(1, 64), max_size=8, unique=True).map(sorted),
    }
)


@settings(max_examples=examples(300), deadline=None)
@given(values_strategy)
def test_decode_inverts_encode(values):
    decoded, warnings = decode(SPEC, encode(SPEC, values))
    assert warnings == {}
    assert decoded == {**values, "range": tuple(values["range"])}


def test_defaults_are_left_out_of_the_url():
    defaults = {p.key: p.default for p in SPEC}
    assert encode(SPEC, defaults) == {}
    assert encode(SPEC, {**defaults, "k": 8}) == {"k": "8"}


def test_missing_params_take_defaults_without_warning():
    values, warnings = decode(SPEC, {})
    assert values == {p.key: p.default for p in SPEC} and warnings == {}


@pytest.mark.parametrize(
    "key, raw, allowed",
    [
        ("alpha", "1.5", "a number in [0, 1]"),
        ("alpha", "nan", "a number in [0, 1]"),
        ("alpha", "inf", "a number in [0, 1]"),
        ("k", "2.5", "an integer in [1, 64]"),
        ("k", "0", "an integer in [1, 64]"),
        ("view", "pie", "one of Heatmap, 3-D surface"),
        ("range", "0.9,0.1", "two numbers lo,hi with lo < hi in [0, 1]"),
        ("range", "0.5", "two numbers lo,hi with lo < hi in [0, 1]"),
        ("cs", "", "at most 4 comma-separated numbers in [0.001, 10000]"),
        ("cs", "1,-2", "at most 4 comma-separated numbers in [0.001, 10000]"),
        ("cs", "1,2,3,4,5", "at most 4 comma-separated numbers in [0.001, 10000]"),
        ("ks", "1,2,3,4,5,6,7,8,9", "at most 8 comma-separated integers in [1, 64]"),
        ("flag", "maybe", "true or false"),
    ],
)
def test_invalid_values_fall_back_with_a_message(key, raw, allowed):
    values, warnings = decode(SPEC, {key: raw, "k": "9"} if key != "k" else {key: raw})
    default = next(p.default for p in SPEC if p.key == key)
    assert values[key] == default
    shown_default = {"alpha": "0.8", "k": "4", "view": "Heatmap", "range": "0,1", "cs": "2,8", "flag": "false"}
    assert warnings[key] == (
        f"Ignored URL parameter {key}={raw!r}: it must be {allowed}. "
        f"Using the default {shown_default.get(key, '(empty)')}."
    )
    if key != "k":
        assert values["k"] == 9  # the valid neighbour still applies


def test_repeated_param_uses_last_value():
    assert decode(SPEC, {"k": ["3", "5"]})[0]["k"] == 5


def test_share_url_joins_base_page_and_query():
    assert share_url("http://host:8501/design-space", "design-space", {"k": "8", "view": "3-D surface"}) == (
        "http://host:8501/design-space?k=8&view=3-D+surface"
    )
    assert share_url("https://team.example/specviz/", "converter", {}) == "https://team.example/specviz/converter"
    assert share_url(None, "break-even", {"k_max": "40"}) == "/break-even?k_max=40"


def test_a_list_longer_than_its_cap_is_refused_naming_the_parameter_and_the_cap():
    """/break-even?curves= with 1,500 values drew 1,500 curves: now the link falls back, with a warning."""
    raw = ",".join(str(i) for i in range(1, 1501))
    values, warnings = decode(SPEC, {"cs": raw, "ks": ",".join(["3"] * 100)})
    assert values["cs"] == [2.0, 8.0]
    message = warnings["cs"]
    assert message.startswith("Ignored URL parameter cs='1,2,3,4,5,6,7,8,9,10,")
    assert f"… ({len(raw):,} characters): it must be at most 4 comma-separated numbers" in message
    assert len(message) < 250  # the 6,000-character value is not repeated in full
    assert values["ks"] == [3] and "ks" not in warnings  # the cap counts distinct values
    assert decode(SPEC, {"cs": "1,2,3,4"}) == ({**values, "cs": [1.0, 2.0, 3.0, 4.0], "ks": []}, {})  # at the cap


def test_list_kinds_have_a_default_cap_and_check_items_applies_the_same_rule():
    p = Param("xs", [1.0], "floats", 0.0, 1e9)
    assert p.max_items == MAX_ITEMS == 64
    assert decode((p,), {"xs": ",".join(str(i) for i in range(64))})[1] == {}
    assert "xs" in decode((p,), {"xs": ",".join(str(i) for i in range(65))})[1]
    check_items(p, list(range(64)))
    with pytest.raises(ValueError, match=r"^xs: 65 values; at most 64 per view$"):
        check_items(p, list(range(65)))


def test_check_work_names_each_factor_the_product_and_the_cap():
    assert check_work("frontier", {"curves": 16, "K values": 64}, 1024) == 1024
    with pytest.raises(ValueError, match=r"^frontier: 1,500 curves × 64 K values = 96,000; at most 1,024 per view$"):
        check_work("frontier", {"curves": 1500, "K values": 64}, 1024)


def test_a_choice_is_read_from_its_slug_an_alias_or_its_english_label():
    p = Param(
        "src",
        "typed",
        "choice",
        choices=("typed", "live"),
        labels=("typed", "the live page's last run"),
        aliases=(("live run", "live"),),
    )
    values, warnings = decode([p], {"src": "the live page's last run"})
    assert values["src"] == "live" and not warnings
    assert decode([p], {"src": "live run"})[0]["src"] == "live"
    assert decode([p], {"src": "live"})[0]["src"] == "live"
    values, warnings = decode([p], {"src": "nope"})
    assert values["src"] == "typed" and "src" in warnings
    assert encode([p], {"src": "live"}) == {"src": "live"}  # a link carries the slug
    with pytest.raises(ValueError, match="an alias names no choice"):
        Param("src", "typed", "choice", choices=("typed",), aliases=(("x", "y"),))
    with pytest.raises(ValueError, match="2 labels for 1 choices"):
        Param("src", "typed", "choice", choices=("typed",), labels=("a", "b"))


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("http://host:8501/measured-data?runs=1", "http://host:8501"),
        ("http://host/base/measured-data/", "http://host/base"),
        ("http://host/base/", "http://host/base"),
        ("", ""),
        (None, ""),
    ],
)
def test_app_root_is_where_another_pages_link_starts(url, root):
    assert share.app_root(url, "measured-data") == root
    assert share.share_url(share.app_root(url, "measured-data"), "hardware", {"a": "1"}) == f"{root}/hardware?a=1"

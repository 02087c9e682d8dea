"""The run library's custom engine profiles (specviz.data.store save_profile / list_profiles / delete_profile),
and the terms text they are stored in (specviz.core.profiles.encode_terms / decode_terms).

Every test uses a throw-away SQLite file under pytest's tmp directory. Covered: round trip of a profile,
names refused (taken, empty, too long), bad terms, base profile or row count refused with the field named, delete, a library file
written before the profiles table existed gaining it on open with its runs kept, a library file
deleted while the server runs, and the terms text round trip (hypothesis).
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import asdict, fields

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specviz.base.i18n import Message
from specviz.core import profiles
from specviz.core.profiles import DEFAULT_EFFICIENCY, FRACTIONS, Efficiency, decode_terms, encode_terms
from specviz.data import store


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'lib.sqlite'}"


@pytest.fixture
def engine(url):
    eng = store.open_library(url)
    yield eng
    eng.dispose()


def one_run() -> pd.DataFrame:
    return pd.DataFrame({"label": pd.array(["r"], dtype="str"), "k": [4], "alpha": [0.7], "c": [5.0]})


# --------------------------------------------------------------------------------------
# the terms text
# --------------------------------------------------------------------------------------

fraction = st.floats(min_value=1e-6, max_value=1.0, allow_nan=False)
seconds = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_subnormal=False)
efficiencies = st.builds(
    Efficiency, **{f.name: (fraction if f.name in FRACTIONS else seconds) for f in fields(Efficiency)}
)


@given(efficiencies)
def test_decode_of_encode_is_the_same_profile(eff):
    text = encode_terms(eff)
    assert decode_terms(text) == eff
    assert all(ch.isalnum() or ch in "_.=,-+" for ch in text)  # URL-safe as it is


@given(efficiencies, st.integers(min_value=1, max_value=8))
def test_rounded_terms_round_trip_and_stay_within_their_digits(eff, digits):
    text = encode_terms(eff, digits=digits)
    again = decode_terms(text)
    assert encode_terms(again) == text  # the rounded text is a fixed point
    for name, value in asdict(eff).items():
        assert math.isclose(getattr(again, name), value, rel_tol=10.0 ** (1 - digits), abs_tol=1e-300)


def test_only_the_terms_that_differ_from_the_default_are_written():
    assert encode_terms(DEFAULT_EFFICIENCY) == ""
    assert decode_terms("") == DEFAULT_EFFICIENCY
    eff = Efficiency(overhead_s=5e-4, layer_overhead_s=1.6e-4)
    assert encode_terms(eff) == "overhead_s=0.0005,layer_overhead_s=0.00016"
    assert decode_terms(" layer_overhead_s = 0.00016 , overhead_s=5e-4 ") == eff


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("speed=2", ["'speed'", "overhead_s", "round_overhead_s"]),
        ("memory=1.5", ["memory", "'1.5'", "(0, 1]"]),
        ("overhead_s=-1", ["overhead_s", "'-1'", ">= 0"]),
        ("overhead_s=lots", ["overhead_s", "'lots'"]),
        ("overhead_s", ["name=value"]),
        ("memory=0.5,memory=0.6", ["'memory'", "twice"]),
        ("x" * 500, ["480"]),
    ],
)
def test_a_bad_terms_text_names_the_term_the_value_and_what_is_allowed(text, said):
    with pytest.raises(Message) as info:
        decode_terms(text)
    for part in said:
        assert part in info.value.text("en")
    assert info.value.text("zh") != info.value.text("en")  # translated


# --------------------------------------------------------------------------------------
# the library's profiles table
# --------------------------------------------------------------------------------------


def test_a_saved_profile_lists_back_as_saved(engine):
    eff = profiles.profile("hf-transformers")
    pid = store.save_profile(
        engine,
        name="my eager box",
        terms=encode_terms(eff),
        base_engine="hf-transformers",
        target="lmsys/vicuna-7b-v1.3",
        gpu="RTX-3090-24GB",
        n_rows=12,
    )
    listed = store.list_profiles(engine)
    assert listed["id"].tolist() == [pid]
    row = listed.iloc[0]
    assert (row["name"], row["base_engine"], row["target"], row["gpu"], row["n_rows"]) == (
        "my eager box",
        "hf-transformers",
        "lmsys/vicuna-7b-v1.3",
        "RTX-3090-24GB",
        12,
    )
    assert decode_terms(row["terms"]) == eff
    assert row["created_at"].tzinfo is not None


def test_profiles_list_newest_first_and_delete_removes_only_the_one_named(engine):
    for name, overhead in (("a", 1e-4), ("b", 2e-4), ("c", 3e-4)):
        store.save_profile(engine, name=name, terms=f"overhead_s={overhead}", base_engine="roofline")
    assert store.list_profiles(engine)["name"].tolist() == ["c", "b", "a"]
    assert store.delete_profile(engine, "b") == 1
    assert store.delete_profile(engine, "b") == 0  # already gone
    assert store.list_profiles(engine)["name"].tolist() == ["c", "a"]


def test_an_empty_library_lists_no_profiles_with_the_columns(engine):
    listed = store.list_profiles(engine)
    assert listed.empty and tuple(listed.columns) == store.PROFILE_COLUMNS


@pytest.mark.parametrize(
    ("name", "terms", "said"),
    [
        ("", "overhead_s=0.001", "profile name must be 1 to 80 characters"),
        ("x" * 81, "overhead_s=0.001", "profile name must be 1 to 80 characters"),
        ("ok", "memory=7", "engine term memory = '7' is not allowed"),
        ("ok", "warp=1", "engine term 'warp' is not one of"),
        ("ok", "overhead_s=0.001", "base_engine must be one of roofline, .*; got 'warp-drive'"),
        ("ok", "overhead_s=0.001", "n_rows must be an integer >= 0; got '-1'"),
    ],
)
def test_a_bad_profile_is_refused_and_nothing_is_stored(engine, name, terms, said):
    base, n_rows = ("warp-drive" if "base_engine" in said else "roofline"), (-1 if "n_rows" in said else 0)
    with pytest.raises(store.StoreError, match=said.replace("(", r"\(")):
        store.save_profile(engine, name=name, terms=terms, base_engine=base, n_rows=n_rows)
    assert store.list_profiles(engine).empty


def test_a_taken_name_is_refused_and_the_first_profile_kept(engine):
    store.save_profile(engine, name="mine", terms="overhead_s=0.001", base_engine="roofline")
    with pytest.raises(store.StoreError, match="'mine' is already in the library"):
        store.save_profile(engine, name=" mine ", terms="overhead_s=0.002", base_engine="roofline")
    assert store.list_profiles(engine)["terms"].tolist() == ["overhead_s=0.001"]


def test_a_library_without_the_profiles_table_gains_it_and_keeps_its_runs(tmp_path):
    path = tmp_path / "before.sqlite"
    first = store.open_library(f"sqlite:///{path}")
    run_id = store.save_run(first, one_run(), label="kept", source="s")
    before = store.load_run(first, run_id)
    first.dispose()
    con = sqlite3.connect(path)  # a library written before the table existed
    con.execute("DROP TABLE profiles")
    con.commit()
    assert "profiles" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()

    engine = store.open_library(f"sqlite:///{path}")
    assert store.list_profiles(engine).empty
    store.save_profile(engine, name="new", terms="overhead_s=0.001", base_engine="vllm")
    pd.testing.assert_frame_equal(store.load_run(engine, run_id), before)
    assert store.list_runs(engine)["label"].tolist() == ["kept"]
    assert store.load_run(engine, run_id)["alpha"].tolist() == [0.7]
    assert store.list_profiles(engine)["name"].tolist() == ["new"]
    engine.dispose()


def test_profiles_of_a_deleted_library_file_are_refused(tmp_path):
    path = tmp_path / "gone.sqlite"
    engine = store.open_library(f"sqlite:///{path}")
    store.list_profiles(engine)
    engine.dispose()
    for f in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        f.unlink(missing_ok=True)
    for use in (
        lambda: store.list_profiles(engine),
        lambda: store.save_profile(engine, name="x", terms="", base_engine="roofline"),
        lambda: store.delete_profile(engine, "x"),
    ):
        with pytest.raises(store.StoreError, match="deleted"):
            use()
    assert not path.exists()

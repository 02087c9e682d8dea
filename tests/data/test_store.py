"""specviz.data.store: the run library (SQLAlchemy Core over SQLite).

Every test uses a throw-away SQLite file under pytest's tmp directory. Covered: exact round trips
(save_run → load_run, and export_csv → load_measurements), load_runs / list_runs, all-or-nothing
saves, concurrent writers (threads and spawned processes), schema creation races, migration of an
older database, delete_runs, CSV-injection escaping, the library URL, and a library file deleted or
replaced while the server runs.
"""

from __future__ import annotations

import csv
import io
import json
import math
import multiprocessing
import os
import shutil
import sqlite3
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _apps import open_app, rerun, shown_errors
from _spawn import plain_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specviz.data import measurements as m
from specviz.data import store

CANONICAL = [*m.COLUMNS, *m.DERIVED_COLUMNS]
TEXT_COLUMNS = [c for c in CANONICAL if c in (*m.TEXT_COLUMNS, "alpha_source", "c_source")]


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def lib_url(directory: Path, name: str = "lib.sqlite") -> str:
    return f"sqlite:///{directory / name}"


@pytest.fixture
def url(tmp_path) -> str:
    return lib_url(tmp_path)


@pytest.fixture
def engine(url):
    eng = store.open_library(url)
    yield eng
    eng.dispose()


def db_path(url: str) -> str:
    return url.removeprefix("sqlite:///")


def counts(url: str) -> tuple[int, int]:
    """(runs, measurements) counted with plain sqlite3, independent of the code under test."""
    con = sqlite3.connect(db_path(url))
    try:
        return (
            con.execute("SELECT count(*) FROM runs").fetchone()[0],
            con.execute("SELECT count(*) FROM measurements").fetchone()[0],
        )
    finally:
        con.close()


def load(text: str, name: str = "t.csv") -> pd.DataFrame:
    df, _ = m.load_measurements(text.encode("utf-8"), name)
    return df


def to_csv_text(header: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


#: A CSV with text that needs quoting, unicode, missing cells, per-position lists, booleans, counts,
#: and every column the bench CLI writes (v, o, alpha_overlap, t_verify_ms, speedup_min, ...).
MIXED_CSV = to_csv_text(
    [
        "label",
        "k",
        "alpha",
        "mean_accepted_tokens",
        "acceptance_rate",
        "c",
        "t_target_ms",
        "t_draft_ms",
        "t_verify_ms",
        "speedup",
        "tokens_per_s",
        "baseline_tokens_per_s",
        "temperature",
        "batch_size",
        "target_model",
        "draft_model",
        "hardware",
        "method",
        "notes",
        "alpha_overlap",
        "v",
        "o",
        "per_position_acceptance",
        "predicted_speedup_basic",
        "speedup_vs_predicted",
        "speedup_min",
        "speedup_max",
        "runs",
        "new_tokens",
        "greedy_exact",
        "device",
        "dtype",
        "torch_version",
        "source",
    ],
    [
        [
            'run "A", with commas',
            "4",
            "0.8125",
            "3.5",
            "0.625",
            "12.5",
            "20.0",
            "1.6",
            "24.5",
            "2.1",
            "105.25",
            "50.1",
            "0",
            "1",
            "llama-3-8b",
            "llama-3-1b",
            "H100 80GB",
            "draft model",
            '=HYPERLINK("x")',
            "0.9",
            "0.05",
            "0.1",
            "0.95;0.9;0.8;nan",
            "2.6",
            "0.93",
            "1.9",
            "2.3",
            "6",
            "128",
            "true",
            "cuda",
            "bfloat16",
            "2.9.0",
            "specviz bench",
        ],
        [
            "ünïcødé ✓ 模型 🚀",
            "2",
            "",
            "2.2",
            "",
            "",
            "10",
            "2",
            "",
            "",
            "",
            "",
            "0.7",
            "",
            "qwen2-7b",
            "",
            "",
            "EAGLE",
            '-leading minus, "quoted"',
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "false",
            "",
            "",
            "",
            "",
        ],
        [
            "nan alpha row",
            "7",
            "nan",
            "",
            "0.5",
            "3",
            "",
            "",
            "",
            "1.5",
            "",
            "",
            "1",
            "4",
            "llama-3-8b",
            "tiny",
            "A100",
            "n-gram",
            "",
            "0.4",
            "0.2",
            "",
            "0.5;0.5;0.5;0.5;0.5;0.5;0.5",
            "",
            "",
            "",
            "",
            "3",
            "",
            "",
            "cpu",
            "float32",
            "",
            "@import",
        ],
        [
            "k=1",
            "1",
            "0",
            "",
            "",
            "1e3",
            "5",
            "0.005",
            "5.5",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "1",
            "",
            "",
            "",
            "",
            "",
            "1",
            "",
            "",
            "",
            "",
            "",
        ],
    ],
)


def mixed_frame() -> pd.DataFrame:
    return load(MIXED_CSV)


def simple_frame(n: int, tag: str = "r", k: int = 3) -> pd.DataFrame:
    """n valid rows; row i has k = k, alpha = i / (n + 1) and notes = f'{tag}:{i}' (to check rows later)."""
    header = ["label", "k", "alpha", "c", "notes"]
    rows = [[f"{tag} label", str(k), repr(i / (n + 1)), "4", f"{tag}:{i}"] for i in range(n)]
    return load(to_csv_text(header, rows))


def expected_reload(frame: pd.DataFrame) -> pd.DataFrame:
    """What export_csv → load_measurements should give: the frame with formula-like text escaped."""
    return store.escape_formulas(frame).reset_index(drop=True)


def assert_export_round_trip(frame: pd.DataFrame) -> None:
    data = store.export_csv(frame)
    assert isinstance(data, bytes)
    back, report = m.load_measurements(data, "export.csv")
    assert report.row_errors == [], report.summary()
    assert len(back) == len(frame)
    expected = expected_reload(frame)
    back = back.reset_index(drop=True)
    assert set(CANONICAL) <= set(back.columns)
    # every canonical column, and the bench columns the frame had, come back with the same values and dtypes;
    # a column that is empty throughout comes back empty (load_measurements types an empty canonical column
    # the file lacks as float64 but an empty one it has by its kind, e.g. Int64: that is not the store's doing)
    for column in dict.fromkeys([*CANONICAL, *frame.columns]):
        assert column in back.columns, column
        if expected[column].isna().all():
            assert back[column].isna().all(), column
        else:
            pd.testing.assert_series_equal(back[column], expected[column], obj=column)


# --------------------------------------------------------------------------------------
# 1. round trips
# --------------------------------------------------------------------------------------


def test_mixed_frame_fixture_is_what_the_tests_assume():
    df = mixed_frame()
    assert len(df) == 4
    assert list(df.index) == [2, 3, 4, 5] and df.index.name == "row"
    assert df["label"].iloc[0] == 'run "A", with commas'
    assert df["label"].iloc[1] == "ünïcødé ✓ 模型 🚀"
    assert df["greedy_exact"].dtype == "boolean" and df["runs"].dtype == "Int64"
    assert df["alpha"].isna().sum() == 2
    for col in (
        "alpha_overlap",
        "v",
        "o",
        "t_verify_ms",
        "per_position_acceptance",
        "speedup_min",
        "new_tokens",
        "torch_version",
        "source",
        "greedy_exact",
    ):
        assert col in df.columns, col


def test_save_then_load_run_is_exact(engine):
    df = mixed_frame()
    run_id = store.save_run(engine, df, label="mixed", source="t.csv", note="a note", report="r")
    assert isinstance(run_id, int)
    back = store.load_run(engine, run_id)
    pd.testing.assert_frame_equal(back, df, check_exact=True)
    assert back.index.name == "row" and back.index.dtype == "int64"
    assert list(back.columns) == list(df.columns)


def test_save_does_not_modify_the_frame(engine):
    df = mixed_frame()
    before = df.copy(deep=True)
    store.save_run(engine, df, label="x", source="s")
    pd.testing.assert_frame_equal(df, before)


def test_skipped_rows_keep_their_file_row_numbers(engine):
    df = load("label,k,alpha\na,2,0.5\nbad,0,0.5\nc,3,0.25\n")
    assert list(df.index) == [2, 4]
    back = store.load_run(engine, store.save_run(engine, df, label="gaps", source="s"))
    assert list(back.index) == [2, 4]
    pd.testing.assert_frame_equal(back, df)


def test_export_csv_loads_back_to_the_same_columns(engine):
    df = mixed_frame()
    stored = store.load_run(engine, store.save_run(engine, df, label="mixed", source="t.csv"))
    assert_export_round_trip(stored)
    # the formula-like notes really were escaped on the way out
    back, _ = m.load_measurements(store.export_csv(stored), "e.csv")
    assert back["notes"].iloc[0] == '\'=HYPERLINK("x")'
    assert back["notes"].iloc[1] == '\'-leading minus, "quoted"'
    assert back["source"].iloc[2] == "'@import"
    assert back["label"].iloc[1] == "ünïcødé ✓ 模型 🚀"


# hypothesis: random valid CSVs through load_measurements

_text = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=0, max_size=24)
_unit = st.one_of(st.floats(0, 1, allow_nan=False), st.just(math.nan))
_pos = st.floats(1e-3, 1e4, allow_nan=False)


def _cell(x) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return "nan" if math.isnan(x) else repr(x)
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)


@st.composite
def csv_rows(draw):
    n = draw(st.integers(1, 6))
    header = [
        "label",
        "k",
        "alpha",
        "mean_accepted_tokens",
        "c",
        "t_target_ms",
        "t_draft_ms",
        "t_verify_ms",
        "v",
        "o",
        "alpha_overlap",
        "temperature",
        "runs",
        "greedy_exact",
        "per_position_acceptance",
        "target_model",
        "hardware",
        "notes",
    ]
    rows = []
    for _ in range(n):
        k = draw(st.integers(1, 64))
        alpha = draw(_unit)
        # every row needs an acceptance measure: E[N] in [1, K + 1] where alpha is NaN
        mean = (
            draw(st.floats(1, k + 1, allow_nan=False))
            if math.isnan(alpha)
            else draw(st.one_of(st.none(), st.floats(1, k + 1, allow_nan=False)))
        )
        ppa = draw(st.one_of(st.none(), st.lists(_unit, min_size=k, max_size=k)))
        rows.append(
            [
                draw(_text),
                k,
                alpha,
                mean,
                draw(st.one_of(st.none(), _pos)),
                draw(st.one_of(st.none(), _pos)),
                draw(st.one_of(st.none(), _pos)),
                draw(st.one_of(st.none(), _pos)),
                draw(st.one_of(st.none(), st.floats(0, 10, allow_nan=False))),
                draw(st.one_of(st.none(), st.floats(0, 10, allow_nan=False))),
                draw(_unit),
                draw(st.one_of(st.none(), st.floats(0, 2, allow_nan=False))),
                draw(st.one_of(st.none(), st.integers(1, 2**53))),
                draw(st.one_of(st.none(), st.booleans())),
                None if ppa is None else ";".join(_cell(a) for a in ppa),
                draw(st.one_of(st.none(), _text)),
                draw(st.one_of(st.none(), _text)),
                draw(st.one_of(st.none(), _text)),
            ]
        )
    return to_csv_text(header, [[_cell(x) for x in row] for row in rows]), n


@pytest.fixture(scope="module")
def hyp_engine(tmp_path_factory):
    eng = store.open_library(lib_url(tmp_path_factory.mktemp("hyp")))
    yield eng
    eng.dispose()


@pytest.mark.slow
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_rows(), _text)
def test_random_frames_round_trip(hyp_engine, data, run_label):
    text, n = data
    df, report = m.load_measurements(text.encode("utf-8"), "gen.csv")
    assert len(df) == n, report.summary()
    label = run_label.strip() or "run"
    run_id = store.save_run(hyp_engine, df, label=label, source="gen.csv")
    back = store.load_run(hyp_engine, run_id)
    pd.testing.assert_frame_equal(back, df, check_exact=True)
    both = store.load_runs(hyp_engine, [run_id])
    assert (both["run_id"] == run_id).all() and (both["run"] == label).all()
    pd.testing.assert_frame_equal(both.drop(columns=["run_id", "run"]), df.reset_index(drop=True), check_exact=True)
    assert_export_round_trip(back)


# --------------------------------------------------------------------------------------
# 2. load_runs
# --------------------------------------------------------------------------------------


def test_load_runs_follows_the_given_order_and_unions_columns(engine):
    plain = simple_frame(3, "plain")
    bench = mixed_frame()
    other = simple_frame(2, "other", k=5)
    id_plain = store.save_run(engine, plain, label="plain run", source="a")
    id_bench = store.save_run(engine, bench, label="bench run", source="b")
    id_other = store.save_run(engine, other, label="other run", source="c")

    out = store.load_runs(engine, [id_other, id_bench, id_plain])
    assert isinstance(out.index, pd.RangeIndex) and len(out) == 2 + 4 + 3
    assert list(out.columns[:2]) == ["run_id", "run"]
    assert out["run_id"].tolist() == [id_other] * 2 + [id_bench] * 4 + [id_plain] * 3
    assert out["run"].tolist() == ["other run"] * 2 + ["bench run"] * 4 + ["plain run"] * 3
    assert set(out.columns) == {"run_id", "run", *plain.columns, *bench.columns, *other.columns}
    # each run's block is that run, in its own row order; columns it lacks are empty
    for run_id, frame, sl in (
        (id_other, other, slice(0, 2)),
        (id_bench, bench, slice(2, 6)),
        (id_plain, plain, slice(6, 9)),
    ):
        block = out.iloc[sl]
        for column in frame.columns:
            pd.testing.assert_series_equal(
                block[column].reset_index(drop=True),
                frame[column].reset_index(drop=True),
                check_dtype=False,
                check_exact=True,
                obj=f"run {run_id} {column}",
            )
        for column in set(out.columns) - set(frame.columns) - {"run_id", "run"}:
            assert block[column].isna().all(), (run_id, column)
    assert out.loc[out["run_id"] == id_plain, "notes"].tolist() == ["plain:0", "plain:1", "plain:2"]
    assert out["run_id"].dtype == "int64" and out["k"].dtype == "int64"
    assert out["label"].dtype == bench["label"].dtype and out["run"].dtype == bench["label"].dtype
    assert out["greedy_exact"].dtype == "boolean" and out["runs"].dtype == "Int64"


def test_load_runs_repeated_and_empty_ids(engine):
    a = store.save_run(engine, simple_frame(2, "a"), label="a", source="s")
    out = store.load_runs(engine, [a, a])
    assert out["run_id"].tolist() == [a] * 4
    empty = store.load_runs(engine, [])
    assert empty.empty and list(empty.columns[:2]) == ["run_id", "run"]
    assert set(m.COLUMNS) <= set(empty.columns)


def test_load_of_an_unknown_id_names_it(engine):
    a = store.save_run(engine, simple_frame(1), label="a", source="s")
    with pytest.raises(store.StoreError, match=r"\[12345\]"):
        store.load_runs(engine, [a, 12345])
    with pytest.raises(store.StoreError, match="not in the library"):
        store.load_run(engine, 12345)


# --------------------------------------------------------------------------------------
# 3. list_runs
# --------------------------------------------------------------------------------------


def test_list_runs_newest_first_with_facets(engine):
    assert store.list_runs(engine).empty
    t0 = datetime.now(UTC)
    f1 = load(
        to_csv_text(
            ["label", "k", "alpha", "target_model", "draft_model", "hardware", "method"],
            [
                ["x", "2", "0.5", "zeta-7b", "tiny", "H100", "EAGLE"],
                ["x", "3", "0.5", "alpha-1b", "", "H100", "draft model"],
                ["x", "4", "0.5", "zeta-7b", "small", "", "EAGLE"],
            ],
        )
    )
    id1 = store.save_run(engine, f1, label="  first  ", source="one.csv", note="n1")
    id2 = store.save_run(engine, simple_frame(5), label="second", source="", note="")
    id3 = store.save_run(engine, mixed_frame(), label="third", source="three.csv")
    t1 = datetime.now(UTC)

    runs = store.list_runs(engine)
    assert list(runs.columns) == [
        "id",
        "label",
        "source",
        "uploaded_at",
        "note",
        "n_rows",
        "created_by",
        "target_model",
        "draft_model",
        "hardware",
        "method",
    ]
    assert runs["id"].tolist() == [id3, id2, id1]
    assert runs["id"].dtype == "int64"
    assert runs["label"].tolist() == ["third", "second", "first"]  # the name is stripped
    assert runs["source"].tolist() == ["three.csv", "unknown", "one.csv"]
    assert runs["note"].tolist() == ["", "", "n1"]
    assert [int(x) for x in runs["n_rows"]] == [4, 5, 3]
    first = runs.set_index("id").loc[id1]
    assert first["target_model"] == "alpha-1b, zeta-7b"
    assert first["draft_model"] == "small, tiny"
    assert first["hardware"] == "H100"
    assert first["method"] == "EAGLE, draft model"
    second = runs.set_index("id").loc[id2]
    assert (second["target_model"], second["draft_model"], second["hardware"], second["method"]) == ("",) * 4
    third = runs.set_index("id").loc[id3]
    assert third["target_model"] == "llama-3-8b, qwen2-7b"
    assert third["hardware"] == "A100, H100 80GB"
    assert str(runs["uploaded_at"].dt.tz) == "UTC"
    times = runs["uploaded_at"].tolist()
    assert times == sorted(times, reverse=True)
    slack = pd.Timedelta(seconds=1)
    assert all(pd.Timestamp(t0) - slack <= t <= pd.Timestamp(t1) + slack for t in times)


# --------------------------------------------------------------------------------------
# 4. a failed save stores nothing
# --------------------------------------------------------------------------------------


def test_check_constraint_failure_in_last_row_stores_nothing(engine, url):
    store.save_run(engine, simple_frame(3, "kept"), label="kept", source="s")
    before_list = store.list_runs(engine)
    before_counts = counts(url)
    bad = simple_frame(6, "bad")
    bad.loc[bad.index[-1], "k"] = 0  # violates CHECK (k >= 1) only after 5 good rows went in
    with pytest.raises(store.StoreError) as info:
        store.save_run(engine, bad, label="doomed run", source="s")
    msg = str(info.value)
    assert "'doomed run'" in msg and "nothing was stored" in msg, msg
    assert "k_at_least_1" in msg or "CHECK" in msg, msg
    assert counts(url) == before_counts == (1, 3)
    pd.testing.assert_frame_equal(store.list_runs(engine), before_list)
    # the library is still usable, and the next run gets the next id
    ok = store.save_run(engine, simple_frame(2), label="after", source="s")
    assert counts(url) == (2, 5)
    assert store.load_run(engine, ok)["k"].tolist() == [3, 3]


@pytest.mark.parametrize(
    ("case", "pattern"),
    [
        ("empty frame", "at least one measurement row"),
        ("unknown column", r"\['bogus'\].*not measurement columns"),
        ("no k column", "'k' is required"),
        ("blank label", "run name must be 1 to 200"),
        ("long label", "run name must be 1 to 200"),
        ("not a frame", "at least one measurement row"),
    ],
)
def test_invalid_saves_raise_and_store_nothing(engine, url, case, pattern):
    store.save_run(engine, simple_frame(2), label="existing", source="s")
    before = counts(url)
    df = simple_frame(3)
    label = "fine"
    if case == "empty frame":
        df = df.iloc[0:0]
    elif case == "unknown column":
        df = df.assign(bogus=1)
    elif case == "no k column":
        df = df.drop(columns=["k"])
    elif case == "blank label":
        label = " \t "
    elif case == "long label":
        label = "x" * 201
    elif case == "not a frame":
        df = df.to_dict()
    with pytest.raises(store.StoreError, match=pattern):
        store.save_run(engine, df, label=label, source="s")
    assert counts(url) == before


def test_label_length_limit_is_200(engine):
    run_id = store.save_run(engine, simple_frame(1), label="é" * 200, source="s")
    assert store.list_runs(engine)["label"].tolist() == ["é" * 200]
    assert store.load_runs(engine, [run_id])["run"].tolist() == ["é" * 200]


def test_unencodable_label_is_a_store_error(engine, url):
    """save_run promises StoreError for any failure; a lone surrogate in the name escapes as UnicodeEncodeError."""
    with pytest.raises(store.StoreError, match="lone surrogate"):
        store.save_run(engine, simple_frame(1), label="bad \ud800 name", source="s")
    assert counts(url) == (0, 0)


# --------------------------------------------------------------------------------------
# 5. concurrency
# --------------------------------------------------------------------------------------

N_THREADS, RUNS_PER_THREAD, ROWS_PER_RUN = 8, 25, 20


def _frame_for(tag: str, rows: int = ROWS_PER_RUN) -> pd.DataFrame:
    return simple_frame(rows, tag, k=1 + sum(map(ord, tag)) % 60)


def _check_runs_intact(engine, url, expected: dict[int, str], rows: int = ROWS_PER_RUN) -> None:
    assert counts(url) == (len(expected), len(expected) * rows)
    listed = store.list_runs(engine)
    assert sorted(listed["id"]) == sorted(expected)
    assert dict(zip(listed["id"], listed["label"], strict=True)) == expected
    out = store.load_runs(engine, list(expected))
    for run_id, tag in expected.items():
        block = out[out["run_id"] == run_id]
        assert block["notes"].tolist() == [f"{tag}:{i}" for i in range(rows)], tag
        assert (block["k"] == 1 + sum(map(ord, tag)) % 60).all(), tag
        assert (block["run"] == tag).all()


def _save_from_threads(
    make_engine,
    n_threads: int,
    runs_per_thread: int,
    frames: dict[str, pd.DataFrame],
    barrier: threading.Barrier | None = None,
) -> tuple[dict[int, str], list[BaseException]]:
    saved: dict[int, str] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = barrier or threading.Barrier(n_threads)

    def work(t: int) -> None:
        try:
            eng = make_engine()
            start.wait(timeout=60)
            for r in range(runs_per_thread):
                tag = f"t{t}-r{r}"
                run_id = store.save_run(eng, frames[tag], label=tag, source=f"thread {t}")
                with lock:
                    saved[run_id] = tag
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "a writer thread hung"
    return saved, errors


def _thread_frames(n_threads: int, runs_per_thread: int) -> dict[str, pd.DataFrame]:
    base = simple_frame(ROWS_PER_RUN, "x")
    frames = {}
    for t in range(n_threads):
        for r in range(runs_per_thread):
            tag = f"t{t}-r{r}"
            f = base.copy()
            f["notes"] = pd.array([f"{tag}:{i}" for i in range(ROWS_PER_RUN)], dtype="str")
            f["k"] = np.int64(1 + sum(map(ord, tag)) % 60)
            frames[tag] = f
    return frames


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False], ids=["shared-engine", "engine-per-thread"])
def test_threads_saving_concurrently_lose_nothing(url, shared):
    frames = _thread_frames(N_THREADS, RUNS_PER_THREAD)
    first = store.open_library(url)
    engines = []

    def make():
        if shared:
            return first
        eng = store.open_library(url)
        engines.append(eng)
        return eng

    saved, errors = _save_from_threads(make, N_THREADS, RUNS_PER_THREAD, frames)
    assert errors == [], errors
    assert len(saved) == N_THREADS * RUNS_PER_THREAD == 200
    _check_runs_intact(first, url, saved)
    assert counts(url) == (200, 4000)
    for eng in [first, *engines]:
        eng.dispose()


def save_runs_worker(url: str, n_runs: int, tag: str, barrier, results) -> None:
    """Spawned process: wait for the others, open the library by URL, save n_runs runs, report ids or the error."""
    try:
        barrier.wait(timeout=120)
        engine = store.open_library(url)
        ids = {}
        for r in range(n_runs):
            name = f"{tag}-r{r}"
            ids[store.save_run(engine, _frame_for(name), label=name, source=f"process {tag}")] = name
        engine.dispose()
        results.put((tag, ids, None))
    except BaseException as exc:
        results.put((tag, {}, f"{type(exc).__name__}: {exc}"))


def _run_processes(url: str, n_procs: int, n_runs: int, parent_work=None):
    """Start n_procs spawned workers and release them together with parent_work (run in this process)."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(n_procs + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=save_runs_worker, args=(url, n_runs, f"p{i}", barrier, results), daemon=True)
        for i in range(n_procs)
    ]
    with plain_main():
        for p in procs:
            p.start()
    try:
        parent_result = parent_work(barrier) if parent_work else barrier.wait(timeout=120)
        got = [results.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return got, parent_result


class _ProcessBarrierAdapter:
    """Lets the parent's threads be released by the processes' barrier: the first thread waits on it."""

    def __init__(self, proc_barrier, n_threads: int):
        self._proc = proc_barrier
        self._threads = threading.Barrier(n_threads, action=lambda: self._proc.wait(timeout=120))

    def wait(self, timeout=None):
        return self._threads.wait(timeout)


@pytest.mark.slow
def test_processes_and_threads_saving_concurrently_lose_nothing(url):
    store.open_library(url).dispose()
    n_procs, proc_runs, n_threads, thread_runs = 2, 15, 4, 10
    frames = {f"t{t}-r{r}": _frame_for(f"t{t}-r{r}") for t in range(n_threads) for r in range(thread_runs)}
    engine = store.open_library(url)

    def parent(barrier):
        return _save_from_threads(
            lambda: engine, n_threads, thread_runs, frames, barrier=_ProcessBarrierAdapter(barrier, n_threads)
        )

    got, (saved, errors) = _run_processes(url, n_procs, proc_runs, parent)
    assert errors == [], errors
    assert [err for _, _, err in got] == [None] * n_procs, got
    expected = dict(saved)
    for _, ids, _ in got:
        assert len(ids) == proc_runs
        assert not set(ids) & set(expected), "two writers got the same run id"
        expected.update(ids)
    assert len(expected) == n_procs * proc_runs + n_threads * thread_runs
    _check_runs_intact(engine, url, expected)
    engine.dispose()


def open_race_worker(directory: str, n_files: int, barrier, results) -> None:
    """Spawned process: for each of n_files fresh paths, wait for the other process, then open_library it."""
    errors = []
    try:
        for i in range(n_files):
            barrier.wait(timeout=120)
            try:
                store.open_library(lib_url(Path(directory) / f"fresh{i}")).dispose()
            except Exception as exc:
                errors.append(f"file {i}: {type(exc).__name__}: {exc}")
    except BaseException as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    results.put(errors)


RACES = 40  #: fresh libraries two processes open at the same instant (a lost race shows up in ~1 of 100-300)


@pytest.mark.slow
def test_two_processes_creating_the_schema_at_once_both_succeed(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=open_race_worker, args=(str(tmp_path), RACES, barrier, results), daemon=True)
        for _ in range(2)
    ]
    with plain_main():
        for p in procs:
            p.start()
    try:
        errors = [e for _ in procs for e in results.get(timeout=120)]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert errors == [], (
        "regression (fixed bug): store.open_library: two processes opening a fresh library at once failed with 'database is "
        "locked' (PRAGMA journal_mode = WAL in _on_connect does not wait for the busy timeout; see "
        f"test_open_library_waits_for_a_writer_on_a_rollback_journal_library): {errors[:3]}"
    )
    for i in range(RACES):
        con = sqlite3.connect(tmp_path / f"fresh{i}" / "lib.sqlite")
        try:
            assert con.execute("SELECT key, value FROM specviz_info").fetchall() == [
                ("schema_version", str(store.SCHEMA_VERSION))
            ]
            assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        finally:
            con.close()


@pytest.mark.slow
def test_open_library_waits_for_a_writer_on_a_rollback_journal_library(tmp_path):
    """An older specviz (rollback journal, not yet WAL) is saving a run while this one opens the library:
    open_library should wait for it (the 60 s busy timeout), as it does for a reader, not fail at once."""
    path = tmp_path / "old.sqlite"
    _make_old_library(path)
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    assert writer.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    writer.execute("BEGIN IMMEDIATE")
    writer.execute(
        "INSERT INTO runs (label, source, uploaded_at, note, schema_version, n_rows, dtypes, report) "
        "VALUES ('second', 's', '2024-05-02 00:00:00.000000', '', 1, 0, '{}', '')"
    )
    done = threading.Timer(0.5, lambda: writer.execute("COMMIT"))
    done.start()
    t0 = time.monotonic()
    try:
        engine = store.open_library(f"sqlite:///{path}")
    except store.StoreError as exc:
        pytest.fail(
            f"regression (fixed bug): store.open_library failed after {time.monotonic() - t0:.2f} s instead of waiting for "
            f"the other writer: {exc} -- SQLite returns SQLITE_BUSY for 'PRAGMA journal_mode = WAL' "
            f"(in _on_connect) without calling the busy handler while another connection holds the "
            f"write lock of a rollback-journal database, so the 60 s busy timeout does not apply"
        )
    finally:
        done.join()
        writer.close()
    assert store.list_runs(engine)["label"].tolist() == ["second", "old run"]
    engine.dispose()


# --------------------------------------------------------------------------------------
# 6. migration
# --------------------------------------------------------------------------------------

_OLD_MEASUREMENT_COLUMNS = ["label", "k", "alpha", "c", "target_model", "notes"]


def _make_old_library(path: Path, version: str = "1") -> None:
    """A library as an older specviz wrote it: fewer measurement columns, one stored run."""
    con = sqlite3.connect(path)
    con.executescript(f"""
        CREATE TABLE specviz_info (key VARCHAR(64) PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO specviz_info VALUES ('schema_version', '{version}');
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT, label VARCHAR(200) NOT NULL, source TEXT NOT NULL,
            uploaded_at DATETIME NOT NULL, note TEXT NOT NULL, schema_version INTEGER NOT NULL,
            n_rows INTEGER NOT NULL, dtypes TEXT NOT NULL, report TEXT NOT NULL);
        CREATE TABLE measurements (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            position INTEGER NOT NULL, file_row BIGINT,
            label TEXT, k BIGINT, alpha FLOAT, c FLOAT, target_model TEXT, notes TEXT,
            CONSTRAINT k_at_least_1 CHECK (k >= 1));
        CREATE INDEX ix_measurements_run_id ON measurements (run_id);
    """)
    dtypes = {"label": "str", "k": "int64", "alpha": "float64", "c": "float64", "target_model": "str", "notes": "str"}
    con.execute(
        "INSERT INTO runs (label, source, uploaded_at, note, schema_version, n_rows, dtypes, report) "
        "VALUES ('old run', 'old.csv', '2024-05-01 12:00:00.000000', 'from v1', 1, 2, ?, '')",
        (json.dumps(dtypes),),
    )
    con.executemany(
        "INSERT INTO measurements (run_id, position, file_row, label, k, alpha, c, target_model, notes) "
        "VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(0, 2, "a", 4, 0.75, 3.5, "llama", None), (1, 5, 'b, "q"', 2, None, None, None, "ü")],
    )
    con.commit()
    con.close()


def test_open_library_migrates_an_older_database(tmp_path):
    path = tmp_path / "old.sqlite"
    _make_old_library(path)
    engine = store.open_library(f"sqlite:///{path}")

    con = sqlite3.connect(path)
    have = {row[1] for row in con.execute("PRAGMA table_info(measurements)")}
    con.close()
    assert set(store.STORED_COLUMNS) <= have
    assert set(store.STORED_COLUMNS) - set(_OLD_MEASUREMENT_COLUMNS) <= have  # the added ones

    old = store.load_run(engine, 1)
    expected = pd.DataFrame(
        {
            "label": pd.array(["a", 'b, "q"'], dtype="str"),
            "k": np.array([4, 2], dtype=np.int64),
            "alpha": [0.75, np.nan],
            "c": [3.5, np.nan],
            "target_model": pd.array(["llama", None], dtype="str"),
            "notes": pd.array([None, "ü"], dtype="str"),
        },
        index=pd.Index([2, 5], dtype="int64", name="row"),
    )
    pd.testing.assert_frame_equal(old, expected)
    listed = store.list_runs(engine)
    assert listed["label"].tolist() == ["old run"] and listed["target_model"].tolist() == ["llama"]
    assert listed["uploaded_at"].iloc[0] == pd.Timestamp("2024-05-01 12:00:00", tz="UTC")

    # new runs with every column go in next to it, and opening again changes nothing
    new_id = store.save_run(engine, mixed_frame(), label="new", source="s")
    engine.dispose()
    engine = store.open_library(f"sqlite:///{path}")
    pd.testing.assert_frame_equal(store.load_run(engine, new_id), mixed_frame())
    pd.testing.assert_frame_equal(store.load_run(engine, 1), expected)
    assert counts(f"sqlite:///{path}") == (2, 6)
    engine.dispose()


def test_open_library_refuses_a_newer_database(tmp_path):
    path = tmp_path / "future.sqlite"
    _make_old_library(path, version="99")
    with pytest.raises(store.StoreError, match="newer") as info:
        store.open_library(f"sqlite:///{path}")
    assert "99" in str(info.value)
    con = sqlite3.connect(path)  # and it did not touch the database
    try:
        assert con.execute("SELECT value FROM specviz_info").fetchall() == [("99",)]
        assert {row[1] for row in con.execute("PRAGMA table_info(measurements)")} == {
            "id",
            "run_id",
            "position",
            "file_row",
            *_OLD_MEASUREMENT_COLUMNS,
        }
    finally:
        con.close()


def test_reopening_a_library_keeps_its_runs(url):
    engine = store.open_library(url)
    run_id = store.save_run(engine, mixed_frame(), label="keep", source="s")
    engine.dispose()
    engine = store.open_library(url)
    pd.testing.assert_frame_equal(store.load_run(engine, run_id), mixed_frame())
    con = sqlite3.connect(db_path(url))
    assert con.execute("SELECT * FROM specviz_info").fetchall() == [("schema_version", str(store.SCHEMA_VERSION))]
    con.close()
    engine.dispose()


# --------------------------------------------------------------------------------------
# 7. delete_runs
# --------------------------------------------------------------------------------------


def test_delete_runs_moves_only_those_runs_to_the_trash_and_a_purge_removes_them(engine, url):
    ids = [store.save_run(engine, simple_frame(n, f"run{n}"), label=f"run{n}", source="s") for n in (1, 2, 3, 4)]
    assert counts(url) == (4, 10)
    assert store.delete_runs(engine, [ids[1], ids[3]]) == 2
    assert counts(url) == (4, 10)  # in the trash: nothing deleted yet
    assert store.list_trash(engine)["id"].tolist() == [ids[3], ids[1]]
    assert store.purge_runs(engine, [ids[1], ids[3]]) == 2
    assert counts(url) == (2, 4)
    assert store.list_runs(engine)["id"].tolist() == [ids[2], ids[0]]
    pd.testing.assert_frame_equal(store.load_run(engine, ids[2]), simple_frame(3, "run3"))
    pd.testing.assert_frame_equal(store.load_run(engine, ids[0]), simple_frame(1, "run1"))
    con = sqlite3.connect(db_path(url))
    assert sorted(r[0] for r in con.execute("SELECT DISTINCT run_id FROM measurements")) == [ids[0], ids[2]]
    con.close()
    with pytest.raises(store.StoreError, match=str(ids[1])):
        store.load_runs(engine, [ids[0], ids[1]])
    with pytest.raises(store.StoreError):
        store.load_run(engine, ids[3])
    with pytest.raises(store.StoreError, match=rf"run id\(s\) \[{ids[1]}, 999\] are not in the library"):
        store.delete_runs(engine, [ids[1], 999])  # already gone / never there: said so
    assert store.delete_runs(engine, []) == 0
    assert counts(url) == (2, 4)


def test_ids_of_deleted_runs_are_not_reused(engine):
    """A page (or a share link) can still hold the id of a run someone else deleted; _fetch then says
    "deleted by someone else?". If a new run could take over that id, the stale id would silently load
    another run's measurements instead."""
    ids = [store.save_run(engine, simple_frame(1, f"old{i}"), label=f"old{i}", source="s") for i in range(3)]
    assert store.delete_runs(engine, ids[1:]) == 2  # the newest runs: their ids are max(id) and below
    new = [store.save_run(engine, simple_frame(1, f"new{i}"), label=f"new{i}", source="s") for i in range(2)]
    reused = sorted(set(new) & set(ids))
    assert not reused, (
        f"regression (fixed bug): store: run id(s) {reused} of deleted runs were given to new runs, so a stale id loads another "
        f"run's data (runs.id is 'INTEGER PRIMARY KEY' without SQLite's AUTOINCREMENT, which reuses the "
        f"largest deleted rowid; sa.Table(..., sqlite_autoincrement=True) would prevent it)"
    )


# --------------------------------------------------------------------------------------
# 8. escaping and export
# --------------------------------------------------------------------------------------


def test_escape_formulas_prefixes_only_formula_like_text():
    frame = pd.DataFrame(
        {
            "obj": pd.array(
                ["=1+2", "+cmd", "-x", "@SUM(A1)", "\tTAB", "\rCR", "plain", "a=b", -3.5, 7, None], dtype=object
            ),
            "text": pd.array(["=x", "-1", "fine", None, "ü=", "@", "+", "'", "", "x-", "-"], dtype="str"),
            "num": [-1.0, -2.5, 0.0, 1.0, np.nan, -1e300, 3.0, 4.0, 5.0, 6.0, 7.0],
            "ints": np.arange(-5, 6, dtype=np.int64),
        }
    )
    before = frame.copy(deep=True)
    out = store.escape_formulas(frame)
    pd.testing.assert_frame_equal(frame, before)  # the input is not modified
    assert out["obj"].tolist()[:8] == ["'=1+2", "'+cmd", "'-x", "'@SUM(A1)", "'\tTAB", "'\rCR", "plain", "a=b"]
    assert out["obj"].iloc[8] == -3.5 and out["obj"].iloc[9] == 7 and out["obj"].iloc[10] is None
    assert out["text"].tolist()[:3] == ["'=x", "'-1", "fine"]
    assert pd.isna(out["text"].iloc[3])
    assert out["text"].tolist()[4:] == ["ü=", "'@", "'+", "'", "", "x-", "'-"]
    pd.testing.assert_series_equal(out["num"], frame["num"])
    pd.testing.assert_series_equal(out["ints"], frame["ints"])


def test_export_csv_is_utf8_and_parses_with_pandas():
    frame = pd.DataFrame(
        {
            "label": pd.array(["ünïcødé ✓ 模型", "=cmd()", 'comma, "quote"', "line\nbreak"], dtype="str"),
            "k": np.array([1, 2, 3, 4], dtype=np.int64),
            "alpha": [0.5, np.nan, -0.25, 1.0],
            "greedy_exact": pd.array([True, None, False, True], dtype="boolean"),
        },
        index=pd.Index([7, 8, 9, 10], name="row"),
    )
    data = store.export_csv(frame)
    assert isinstance(data, bytes)
    text = data.decode("utf-8")  # strict: raises if not UTF-8
    assert "ünïcødé ✓ 模型".encode() in data
    assert not text.startswith("row") and "\n7," not in text  # no index column
    parsed = pd.read_csv(io.BytesIO(data), encoding="utf-8", keep_default_na=False)
    assert list(parsed.columns) == ["label", "k", "alpha", "greedy_exact"]
    assert parsed["label"].tolist() == ["ünïcødé ✓ 模型", "'=cmd()", 'comma, "quote"', "line\nbreak"]
    assert parsed["k"].tolist() == [1, 2, 3, 4]
    assert parsed["alpha"].astype(str).tolist() == ["0.5", "", "-0.25", "1.0"]  # -0.25 not escaped
    assert parsed["greedy_exact"].astype(str).tolist() == ["True", "", "False", "True"]


def test_export_of_load_runs_loads_back(engine):
    a = store.save_run(engine, mixed_frame(), label="a", source="s")
    b = store.save_run(engine, simple_frame(2), label="b", source="s")
    combined = store.load_runs(engine, [a, b])
    back, report = m.load_measurements(store.export_csv(combined), "combined.csv")
    assert len(back) == 6, report.summary()
    expected = store.escape_formulas(combined)
    for column in CANONICAL:
        if column != "label":
            # concat in load_runs may widen a dtype (Int64 next to float64 → Float64): compare values here
            pd.testing.assert_series_equal(
                back[column].reset_index(drop=True), expected[column], obj=column, check_dtype=False
            )
    assert back["label"].tolist() == expected["label"].tolist(), (
        "regression (fixed bug): store.export_csv: exporting a load_runs frame writes the 'run' column (the run's name) before "
        "'label'; load_measurements maps the header 'run' to label (an alias; the left-most header wins) and "
        "ignores the real 'label' column, so every row's label becomes the run name on re-upload. "
        f"Report: {report.summary()}"
    )


# --------------------------------------------------------------------------------------
# 9. where the library lives
# --------------------------------------------------------------------------------------


def test_default_url_prefers_the_environment_variable(tmp_path):
    env = {"SPECVIZ_DB_URL": "  postgresql+psycopg://u:p@db.example/specviz  ", "XDG_DATA_HOME": str(tmp_path)}
    assert store.default_url(env) == "postgresql+psycopg://u:p@db.example/specviz"
    assert store.ENV_URL == "SPECVIZ_DB_URL"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG data dir on Linux / other Unix only")
def test_default_url_under_xdg_data_home(tmp_path, monkeypatch):
    for env in ({"XDG_DATA_HOME": str(tmp_path)}, {"XDG_DATA_HOME": str(tmp_path), "SPECVIZ_DB_URL": "   "}):
        assert store.default_url(env) == f"sqlite:///{tmp_path}/specviz/runs.sqlite"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.default_url({}) == f"sqlite:///{tmp_path}/home/.local/share/specviz/runs.sqlite"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG data dir on Linux / other Unix only")
def test_open_library_with_the_default_url_creates_the_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("SPECVIZ_DB_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    engine = store.open_library()
    path = tmp_path / "data" / "specviz" / "runs.sqlite"
    assert path.is_file()
    assert str(engine.url) == f"sqlite:///{path}"
    store.save_run(engine, simple_frame(1), label="x", source="s")
    assert counts(f"sqlite:///{path}") == (1, 1)
    engine.dispose()
    # SPECVIZ_DB_URL from the environment wins over the data directory
    monkeypatch.setenv("SPECVIZ_DB_URL", lib_url(tmp_path / "elsewhere"))
    engine = store.open_library()
    assert (tmp_path / "elsewhere" / "lib.sqlite").is_file()
    assert store.list_runs(engine).empty
    engine.dispose()


def test_open_library_creates_missing_parent_directories(tmp_path):
    url = lib_url(tmp_path / "a" / "b" / "c")
    engine = store.open_library(url)
    assert (tmp_path / "a" / "b" / "c" / "lib.sqlite").is_file()
    assert store.list_runs(engine).empty
    engine.dispose()


@pytest.mark.parametrize("bad", ["not a url", "", "sqlite//missing-colon.db", "://nothing"])
def test_open_library_rejects_malformed_urls(bad):
    with pytest.raises(store.StoreError, match="SPECVIZ_DB_URL must be a SQLAlchemy database URL") as info:
        store.open_library(bad)
    assert repr(bad) in str(info.value)


def test_open_library_with_a_malformed_port_is_a_store_error():
    """A URL whose port is not a number is malformed too; open_library must say so with StoreError."""
    bad = "postgresql://user@db.example:notaport/specviz"
    try:
        store.open_library(bad)
    except store.StoreError as exc:
        assert "notaport" in str(exc)
    except Exception as exc:
        pytest.fail(
            f"regression (fixed bug): store.open_library({bad!r}) raised {type(exc).__name__}: {exc} instead of StoreError "
            f"(sa.make_url raises ValueError here, and only sa.exc.ArgumentError is caught)"
        )
    else:
        pytest.fail("open_library accepted a URL with a non-numeric port")


@pytest.mark.parametrize("bad", ["postgresql+nonexistentdriver://x/y", "nosuchdialect://x/y"])
def test_open_library_with_an_uninstalled_driver(bad):
    with pytest.raises(store.StoreError, match="not installed") as info:
        store.open_library(bad)
    assert bad.split(":")[0] in str(info.value)
    assert "SPECVIZ_DB_URL" in str(info.value)


def test_open_library_on_a_file_that_is_not_a_database(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not an SQLite database\n" * 200)
    with pytest.raises(store.StoreError, match="cannot open the run library"):
        store.open_library(f"sqlite:///{path}")
    assert path.read_bytes() == b"this is not an SQLite database\n" * 200


def test_open_library_on_a_directory(tmp_path):
    with pytest.raises(store.StoreError, match="cannot open the run library"):
        store.open_library(f"sqlite:///{tmp_path}")


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_in_memory_sqlite_is_refused(url):
    with pytest.raises(store.StoreError, match="in-memory"):
        store.open_library(url)


# --------------------------------------------------------------------------------------
# 10. the library file deleted or replaced while the server runs
# --------------------------------------------------------------------------------------


def library_files(path: Path) -> list[Path]:
    """The database file and the WAL-mode files next to it."""
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def labels_on_disk(path: Path) -> list[str] | None:
    """The run labels a fresh connection (plain sqlite3) reads at ``path``; None when no file is there."""
    if not path.exists():
        return None
    con = sqlite3.connect(path)
    try:
        return [row[0] for row in con.execute("SELECT label FROM runs ORDER BY id")]
    finally:
        con.close()


def open_descriptors(path: Path) -> list[str]:
    """What this process's open file descriptors under ``path``'s folder point at (Linux /proc)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


@pytest.fixture
def served(tmp_path):
    """A library at <tmp>/lib/runs.sqlite opened as a server opens it, holding one run, "first"."""
    path = tmp_path / "lib" / "runs.sqlite"
    engine = store.open_library(f"sqlite:///{path}")
    store.save_run(engine, simple_frame(2, "first"), label="first", source="s")
    assert labels_on_disk(path) == ["first"]
    yield path, engine
    engine.dispose()


def assert_refused(engine, path: Path, what: str) -> None:
    """Two more saves, reads and a delete are refused with a StoreError naming ``path`` and saying ``what``."""
    for label in ("second", "third"):  # the reported bug: "Saved as run #2", then "#3", and nothing on disk
        with pytest.raises(store.StoreError) as info:
            store.save_run(engine, simple_frame(1, label), label=label, source="s")
        message = str(info.value)
        assert f"saving run {label!r} failed, nothing was stored" in message, message
        assert str(path) in message and what in message, message
        assert "restart the server" in message.lower(), message
    for use in (
        lambda: store.list_runs(engine),
        lambda: store.load_runs(engine, [1]),
        lambda: store.delete_runs(engine, [1]),
    ):
        with pytest.raises(store.StoreError, match=what):
            use()


def test_saves_after_the_library_file_was_deleted_are_refused(served):
    path, engine = served
    with engine.connect(), engine.connect():  # two pooled connections hold the file open
        pass
    for f in library_files(path):
        f.unlink(missing_ok=True)
    with pytest.raises(store.StoreError):
        store.list_runs(engine)
    if Path("/proc/self/fd").is_dir():  # the first refusal let go of the deleted file: no more writes to it
        assert open_descriptors(path) == [], "the engine still holds the deleted file open"
    assert_refused(engine, path, "was deleted while the server was running")
    assert labels_on_disk(path) is None, "an empty library was made in the deleted one's place"
    # a restart starts a new, empty library there, as the message says
    fresh = store.open_library(f"sqlite:///{path}")
    assert store.list_runs(fresh).empty
    fresh.dispose()


def test_saves_after_the_library_folder_was_deleted_are_refused(served):
    path, engine = served
    shutil.rmtree(path.parent)
    assert_refused(engine, path, f"the folder {path.parent} of the run library")
    assert not path.parent.exists(), "the deleted folder was made again"


def test_saves_after_the_library_file_was_replaced_are_refused(served, tmp_path):
    path, engine = served
    other = tmp_path / "other" / "runs.sqlite"
    built = store.open_library(f"sqlite:///{other}")
    store.save_run(built, simple_frame(3, "restored"), label="restored", source="backup")
    built.dispose()
    os.replace(other, path)  # e.g. a backup restored with mv; this library's -wal and -shm are left as they were
    assert_refused(engine, path, "was replaced by another file while the server was running")
    assert labels_on_disk(path) == ["restored"], "the refused saves went into, or damaged, the file now there"
    # a restart opens the file now at that path
    fresh = store.open_library(f"sqlite:///{path}")
    assert store.list_runs(fresh)["label"].tolist() == ["restored"]
    pd.testing.assert_frame_equal(store.load_run(fresh, 1), simple_frame(3, "restored"))
    fresh.dispose()


def test_a_library_file_moved_away_and_back_is_used_again(served, tmp_path):
    path, engine = served
    aside = tmp_path / "aside"
    aside.mkdir()
    moved = [f for f in library_files(path) if f.exists()]
    for f in moved:
        os.replace(f, aside / f.name)
    with pytest.raises(store.StoreError, match="was deleted while the server was running"):
        store.save_run(engine, simple_frame(1, "lost"), label="lost", source="s")
    for f in moved:
        os.replace(aside / f.name, f)
    second = store.save_run(engine, simple_frame(1, "second"), label="second", source="s")
    assert store.list_runs(engine)["label"].tolist() == ["second", "first"]
    assert labels_on_disk(path) == ["first", "second"]
    pd.testing.assert_frame_equal(store.load_run(engine, second), simple_frame(1, "second"))


def test_a_save_whose_file_is_deleted_before_it_commits_is_not_confirmed(served):
    """The file vanishes after the save's connection was checked, while its rows go in: the commit lands in the
    deleted file, so save_run must still raise rather than return an id."""
    path, engine = served

    def delete_files(_conn):
        for f in library_files(path):
            f.unlink(missing_ok=True)

    sa = pytest.importorskip("sqlalchemy")
    sa.event.listen(engine, "commit", delete_files)
    try:
        with pytest.raises(store.StoreError, match="nothing was stored.*was deleted while the server was running"):
            store.save_run(engine, simple_frame(1, "second"), label="second", source="s")
    finally:
        sa.event.remove(engine, "commit", delete_files)
    assert labels_on_disk(path) is None


@pytest.mark.slow
def test_the_measured_data_page_shows_a_deleted_library_as_an_error(db_url):
    """The page lists the library on every run: once the file is deleted it shows the StoreError and offers no save
    (so it cannot say "Saved as run #2") instead of a traceback or a confirmation."""
    at = open_app("pages/measured-data.py")  # the page's engine opens the library
    path = Path(db_path(db_url))
    assert path.exists() and not at.error
    for f in library_files(path):
        f.unlink(missing_ok=True)
    at.file_uploader(key="measured.files").upload("b.csv", b"label,k,alpha\nb,3,0.7\n", "text/csv")
    rerun(at)
    errors = shown_errors(at)
    assert any(str(path) in e and "was deleted while the server was running" in e for e in errors), errors
    assert not [b for b in at.button if b.label == "Save to library"]
    assert labels_on_disk(path) is None

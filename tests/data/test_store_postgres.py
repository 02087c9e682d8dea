"""The run library on PostgreSQL: round trip, failed saves, concurrent writers (threads and processes), migration,
saved engine profiles.

They need a throw-away database in SPECVIZ_TEST_POSTGRES_URL; every table of it is dropped before each
test. ``scripts/postgres`` starts a throw-away cluster and sets the variable (it is what ``.ci/run`` does)::

    scripts/postgres run python -m pytest tests/data/test_store_postgres.py

Without the variable the tests are skipped, except in CI (``CI`` or ``SPECVIZ_REQUIRE_POSTGRES`` set),
where they fail: CI must exercise PostgreSQL. The driver is psycopg 3 (``psycopg[binary]``,
requirements-dev.txt).
"""

from __future__ import annotations

import multiprocessing
import os
import threading

import pandas as pd
import pytest
import sqlalchemy as sa
from _spawn import spawned

from specviz.data import measurements as m
from specviz.data import store

URL = os.environ.get("SPECVIZ_TEST_POSTGRES_URL", "")
REQUIRED = bool(os.environ.get("CI") or os.environ.get("SPECVIZ_REQUIRE_POSTGRES"))
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not URL and not REQUIRED, reason="set SPECVIZ_TEST_POSTGRES_URL (e.g. `scripts/postgres run python -m pytest`)"
    ),
]

CSV = (
    "label,k,alpha,c,speedup,per_position_acceptance,greedy_exact,runs,target_model,notes\n"
    'A,4,0.8,20,2.1,0.9;0.8;0.7;0.6,true,3,=cmd,"quoted, text é"\nB,2,0.7,,,,,,,\n'
)


@pytest.fixture
def engine():
    if not URL:
        pytest.fail(
            "SPECVIZ_TEST_POSTGRES_URL is not set although CI requires the PostgreSQL tests to run: "
            "start a cluster with `source scripts/postgres` (as .ci/run does)",
            pytrace=False,
        )
    drop_tables(URL)
    eng = store.open_library(URL)
    yield eng
    eng.dispose()


def frame() -> pd.DataFrame:
    return m.load_measurements(CSV, name="pg")[0]


def tagged_frame(tag: str, rows: int) -> pd.DataFrame:
    """``rows`` rows whose notes are ``tag:0`` … and whose k follows from the tag (to tell runs apart later)."""
    k = 1 + sum(map(ord, tag)) % 60
    text = "label,k,alpha,c,notes\n" + "".join(f"{tag},{k},{i / (rows + 1)!r},4,{tag}:{i}\n" for i in range(rows))
    return m.load_measurements(text, name=tag)[0]


def counts(engine) -> tuple[int, int, int]:
    """(runs, measurements, measurements whose run is missing), counted in SQL."""
    with engine.connect() as conn:
        return tuple(
            conn.exec_driver_sql(sql).scalar_one()
            for sql in (
                "SELECT count(*) FROM runs",
                "SELECT count(*) FROM measurements",
                "SELECT count(*) FROM measurements WHERE run_id NOT IN (SELECT id FROM runs)",
            )
        )


def test_round_trip_and_export(engine):
    df = frame()
    run_id = store.save_run(engine, df, label="pg run", source="pg.csv")
    pd.testing.assert_frame_equal(store.load_run(engine, run_id), df)
    back, _ = m.load_measurements(store.export_csv(store.load_runs(engine, [run_id])), name="x")
    assert back.label.tolist() == ["A", "B"] and back.target_model.iloc[0] == "'=cmd"


def test_failed_save_stores_nothing_and_ids_are_not_reused(engine):
    a = store.save_run(engine, frame(), label="a", source="s")
    bad = frame()
    bad.loc[3, "k"] = 0
    with pytest.raises(store.StoreError, match="nothing was stored"):
        store.save_run(engine, bad, label="bad", source="s")
    assert store.list_runs(engine).id.tolist() == [a]
    assert counts(engine) == (1, 2, 0)
    b = store.save_run(engine, frame(), label="b", source="s")
    store.delete_runs(engine, [b])
    assert store.save_run(engine, frame(), label="c", source="s") > b


def test_threads_saving_concurrently_lose_nothing(engine):
    errors: list[str] = []

    def work(t: int) -> None:
        for r in range(10):
            try:
                store.save_run(engine, frame(), label=f"t{t}-{r}", source="thread")
            except Exception as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    runs = store.list_runs(engine)
    assert len(runs) == 80 and runs.n_rows.sum() == 160
    assert counts(engine) == (80, 160, 0)


PROCESS_RUNS, PROCESS_ROWS = 20, 12


def save_runs_worker(url: str, tag: str, barrier, results) -> None:
    """Spawned process: open the library by URL, wait for the other process, save PROCESS_RUNS runs, report ids."""
    try:
        engine = store.open_library(url)
        frames = {f"{tag}-r{r}": tagged_frame(f"{tag}-r{r}", PROCESS_ROWS) for r in range(PROCESS_RUNS)}
        barrier.wait(timeout=120)
        ids = {store.save_run(engine, f, label=name, source=f"process {tag}"): name for name, f in frames.items()}
        engine.dispose()
        results.put((tag, ids, None))
    except BaseException as exc:
        results.put((tag, {}, f"{type(exc).__name__}: {exc}"))


@pytest.mark.slow
def test_two_processes_saving_concurrently_lose_nothing(engine):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    with spawned(ctx, save_runs_worker, [(URL, f"p{i}", barrier, results) for i in range(2)]) as procs:
        got = [results.get(timeout=300) for _ in procs]
    assert [err for _, _, err in got] == [None, None], got
    assert [p.exitcode for p in procs] == [0, 0]
    expected: dict[int, str] = {}
    for _, ids, _ in got:
        assert len(ids) == PROCESS_RUNS
        assert not set(ids) & set(expected), "two processes got the same run id"
        expected.update(ids)
    assert counts(engine) == (2 * PROCESS_RUNS, 2 * PROCESS_RUNS * PROCESS_ROWS, 0)
    listed = store.list_runs(engine)
    assert dict(zip(listed.id, listed.label, strict=True)) == expected
    assert (listed.n_rows == PROCESS_ROWS).all()
    out = store.load_runs(engine, list(expected))
    for run_id, tag in expected.items():  # every run whole, and only its own rows
        block = out[out.run_id == run_id]
        assert block.notes.tolist() == [f"{tag}:{i}" for i in range(PROCESS_ROWS)], tag
        assert (block.k == 1 + sum(map(ord, tag)) % 60).all() and (block.run == tag).all(), tag


def drop_tables(url: str) -> None:
    raw = sa.create_engine(url)
    with raw.begin() as conn:
        for table in ("measurements", "runs", "profiles", "specviz_info", "audit", "alembic_version"):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table} CASCADE")
    raw.dispose()


OPEN_RACES = 10  #: fresh databases two processes open at the same instant (without the schema lock, ~1 in 2 failed)


def open_race_worker(url: str, barrier, results) -> None:
    """Spawned process: OPEN_RACES times, wait until the parent has emptied the database, then open_library it."""
    errors = []
    try:
        for i in range(OPEN_RACES):
            barrier.wait(timeout=120)  # the parent has dropped every table
            try:
                store.open_library(url).dispose()
            except Exception as exc:
                errors.append(f"round {i}: {type(exc).__name__}: {exc}")
            barrier.wait(timeout=120)  # both have opened it
    except BaseException as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    results.put(errors)


@pytest.mark.slow
def test_two_processes_creating_the_schema_at_once_both_succeed(engine):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(3), ctx.Queue()  # two processes and this one, which empties the database
    with spawned(ctx, open_race_worker, [(URL, barrier, results)] * 2) as procs:
        for _ in range(OPEN_RACES):
            drop_tables(URL)
            barrier.wait(timeout=120)
            barrier.wait(timeout=120)
        errors = [e for _ in procs for e in results.get(timeout=120)]
    assert errors == [], errors
    assert [p.exitcode for p in procs] == [0, 0]
    assert store.list_runs(engine).empty and counts(engine) == (0, 0, 0)


def test_profiles_round_trip_a_taken_name_and_a_database_without_the_table(engine):
    """The profiles table on PostgreSQL: a name of 80 characters (not bytes) fits, a taken one is refused,
    and a database written before the table existed gains it on open with its runs kept."""
    run_id = store.save_run(engine, frame(), label="kept", source="s")
    name = "é" * 80
    pid = store.save_profile(engine, name=name, terms="overhead_s=0.001", base_engine="vllm", n_rows=3)
    listed = store.list_profiles(engine)
    assert listed["id"].tolist() == [pid] and listed["name"].tolist() == [name]
    assert listed["terms"].tolist() == ["overhead_s=0.001"] and listed["n_rows"].tolist() == [3]
    assert listed["created_at"].iloc[0].tzinfo is not None
    with pytest.raises(store.StoreError, match="already in the library"):
        store.save_profile(engine, name=name, terms="overhead_s=0.002", base_engine="vllm")
    assert store.delete_profile(engine, name) == 1
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE profiles")
    engine.dispose()
    again = store.open_library(URL)
    assert store.list_profiles(again).empty
    store.save_profile(again, name="new", terms="", base_engine="roofline")
    assert store.list_profiles(again)["name"].tolist() == ["new"]
    pd.testing.assert_frame_equal(store.load_run(again, run_id), frame())
    again.dispose()


def test_missing_columns_are_added_on_open(engine):
    run_id = store.save_run(engine, frame(), label="old", source="s")
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE measurements DROP COLUMN notes")
    engine.dispose()
    again = store.open_library(URL)
    assert store.load_run(again, run_id).label.tolist() == ["A", "B"]
    store.save_run(again, frame(), label="new", source="s")
    again.dispose()


def test_a_postgres_library_from_c5ccf13_upgrades_in_place():
    """The dump of a library written by c5ccf13 (schema 1, before Alembic) opens with today's store."""
    from pathlib import Path

    from test_store_upgrade import check_upgraded

    if not URL:
        pytest.fail("SPECVIZ_TEST_POSTGRES_URL is not set although CI requires the PostgreSQL tests", pytrace=False)
    drop_tables(URL)
    dump = Path(__file__).parents[1] / "fixtures" / "library" / "library-c5ccf13.postgres.sql"
    script = "\n".join(line for line in dump.read_text().splitlines() if not line.startswith("\\"))
    raw = sa.create_engine(URL)
    with raw.begin() as conn:  # psycopg runs a script of many statements; psql's own commands are left out
        conn.exec_driver_sql(script)
    raw.dispose()
    engine = store.open_library(URL)
    try:
        check_upgraded(engine)
    finally:
        engine.dispose()


def test_editors_and_an_admin_changing_the_same_runs_at_once(engine):
    from test_store_roles import concurrent_changes

    concurrent_changes(engine)

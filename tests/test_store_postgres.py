"""The run library on PostgreSQL: set SPECVIZ_TEST_POSTGRES_URL to a throw-away database to run these.

    SPECVIZ_TEST_POSTGRES_URL=postgresql+psycopg://specviz:specviz@localhost/specviz_test \\
        python -m pytest tests/test_store_postgres.py

Every table of that database is dropped before each test. Needs ``pip install psycopg[binary]``.
"""

from __future__ import annotations

import os
import threading

import pandas as pd
import pytest

from specviz import measurements as m
from specviz import store

URL = os.environ.get("SPECVIZ_TEST_POSTGRES_URL", "")
pytestmark = pytest.mark.skipif(not URL, reason="set SPECVIZ_TEST_POSTGRES_URL to a throw-away PostgreSQL database")

CSV = (
    "label,k,alpha,c,speedup,per_position_acceptance,greedy_exact,runs,target_model,notes\n"
    'A,4,0.8,20,2.1,0.9;0.8;0.7;0.6,true,3,=cmd,"quoted, text é"\nB,2,0.7,,,,,,,\n'
)


@pytest.fixture
def engine():
    sa = pytest.importorskip("sqlalchemy")
    raw = sa.create_engine(URL)
    with raw.begin() as conn:
        for table in ("measurements", "runs", "specviz_info"):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table} CASCADE")
    raw.dispose()
    eng = store.open_library(URL)
    yield eng
    eng.dispose()


def frame() -> pd.DataFrame:
    return m.load_measurements(CSV, name="pg")[0]


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


def test_missing_columns_are_added_on_open(engine):
    run_id = store.save_run(engine, frame(), label="old", source="s")
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE measurements DROP COLUMN notes")
    engine.dispose()
    again = store.open_library(URL)
    assert store.load_run(again, run_id).label.tolist() == ["A", "B"]
    store.save_run(again, frame(), label="new", source="s")
    again.dispose()

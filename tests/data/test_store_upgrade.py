"""A run library written by specviz before Alembic, owners and the trash (commit c5ccf13, schema version 1)
opens in place with today's store and loses nothing (tests/fixtures/library/README.md). The PostgreSQL case
is in tests/data/test_store_postgres.py and runs the same checks on that library's dump."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from specviz.base import access
from specviz.data import measurements, migrations, store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "library"
SAMPLE = Path(__file__).parents[2] / "data" / "samples" / "specviz_bench_bundled_cpu.csv"
ADMIN = access.Identity("boss@example.com", "admin", "oidc")
EDITOR = access.Identity("ed@example.com", "editor", "oidc")


def check_upgraded(engine) -> None:
    """What the c5ccf13 library held, read back through today's store, and what the upgrade added."""
    runs = store.list_runs(engine)
    assert runs["id"].tolist() == [2, 1] and runs["label"].tolist() == ["context sweep", "bundled pair (CPU)"]
    assert runs["n_rows"].tolist() == [2, 12] and runs["created_by"].tolist() == ["", ""]
    assert runs.set_index("id").loc[1, "note"] == "sample"
    sample, _ = measurements.load_measurements(SAMPLE.read_bytes(), name="bench.csv")
    old = store.load_run(engine, 1)
    for column in ("label", "k", "alpha", "mean_accepted_tokens", "speedup", "per_position_acceptance"):
        pd.testing.assert_series_equal(old[column].reset_index(drop=True), sample[column].reset_index(drop=True))
    sweep = store.load_run(engine, 2)
    assert sweep["context_length"].tolist() == [512.0, 32768.0] and sweep["rounds"].tolist() == [400, 400]
    assert sweep["domain"].tolist() == ["code", "chat"]
    profiles = store.list_profiles(engine)
    assert profiles["name"].tolist() == ["my vllm"] and profiles["terms"].tolist() == ["overhead_s=0.002"]
    assert store.list_trash(engine).empty and store.audit_trail(engine, who=ADMIN).empty
    # what the upgrade brought: owners, the trash, the audit trail; ids never reused
    with engine.connect() as conn:
        assert migrations.current(conn) == migrations.head()
    with pytest.raises(access.AccessError, match="admin"):  # an editor does not own a run from before owners
        store.delete_runs(engine, [1], who=EDITOR)
    assert store.delete_runs(engine, [1], who=ADMIN, page="test") == 1
    assert store.restore_runs(engine, [1], who=ADMIN) == 1
    new = store.save_run(engine, sample.head(2), label="new", source="s", who=EDITOR)
    assert new == 4  # run 3 was deleted by the old version: its id stays unused
    trail = store.audit_trail(engine, who=ADMIN)
    assert trail["action"].tolist() == ["save", "restore", "trash"] and trail["who"].iloc[0] == EDITOR.email


def test_a_sqlite_library_from_c5ccf13_upgrades_in_place(tmp_path):
    path = tmp_path / "runs.sqlite"
    shutil.copyfile(FIXTURES / "library-c5ccf13.sqlite", path)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM specviz_info").fetchall() == [("1",)]
        assert "alembic_version" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    engine = store.open_library(f"sqlite:///{path}")
    check_upgraded(engine)
    engine.dispose()
    again = store.open_library(f"sqlite:///{path}")  # a second open changes nothing
    assert store.list_runs(again)["id"].tolist() == [4, 2, 1]
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM specviz_info").fetchall() == [(str(store.SCHEMA_VERSION),)]


def test_the_older_specviz_refuses_the_upgraded_library(tmp_path):
    """Version 1 code reads specviz_info: 2 is newer than it understands, so it cannot bypass the trash."""
    path = tmp_path / "runs.sqlite"
    shutil.copyfile(FIXTURES / "library-c5ccf13.sqlite", path)
    store.open_library(f"sqlite:///{path}").dispose()
    with sqlite3.connect(path) as con:
        assert int(con.execute("SELECT value FROM specviz_info").fetchone()[0]) > 1


def test_a_new_library_is_stamped_at_the_newest_revision(tmp_path):
    engine = store.open_library(f"sqlite:///{tmp_path / 'new.sqlite'}")
    with engine.connect() as conn:
        assert migrations.current(conn) == migrations.head() == "0002"

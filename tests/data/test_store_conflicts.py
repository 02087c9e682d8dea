"""Two people changing the same runs at once, on SQLite and on PostgreSQL: the one who loses is told what
happened (renamed, trashed, restored or purged meanwhile, and by whom), nothing of theirs half-applies,
and the audit trail records each change once.

The PostgreSQL cases need SPECVIZ_TEST_POSTGRES_URL (``scripts/postgres run python -m pytest ...``)."""

from __future__ import annotations

import os
import threading

import pytest
from test_store_postgres import drop_tables

from specviz.base import access
from specviz.data import measurements, store

EDITOR = access.Identity("ed@example.com", "editor", "oidc")
ADMIN = access.Identity("boss@example.com", "admin", "oidc")
PG_URL = os.environ.get("SPECVIZ_TEST_POSTGRES_URL", "")


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.skipif(not PG_URL, reason="no PostgreSQL")]),
    ]
)
def engine(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    else:
        url = PG_URL
        drop_tables(url)
    eng = store.open_library(url)
    yield eng
    eng.dispose()


def saved(engine, tag: str = "r") -> int:
    frame = measurements.load_measurements(f"label,k,alpha\n{tag},3,0.7\n", name=tag)[0]
    return store.save_run(engine, frame, label=tag, source="s", note="n0", who=EDITOR, page="test")


def actions(engine, action: str) -> list[str]:
    trail = store.audit_trail(engine, who=ADMIN)
    return trail.loc[trail["action"] == action, "runs"].tolist()


def test_a_rename_over_someone_elses_is_refused_and_names_them(engine):
    run = saved(engine, "first")
    seen = {"label": "first", "note": "n0"}  # what both opened the form with
    store.edit_run(engine, run, label="admin's name", note="n0", seen=seen, who=ADMIN, page="test")
    with pytest.raises(store.StoreError, match=r"run #\d+ was changed by boss@example.com meanwhile") as err:
        store.edit_run(engine, run, label="editor's name", note="n1", seen=seen, who=EDITOR, page="test")
    assert "admin's name" in str(err.value) and "not saved" in str(err.value)
    row = store.list_runs(engine).set_index("id").loc[run]
    assert (row["label"], row["note"]) == ("admin's name", "n0")  # the first change kept, nothing of the second
    assert actions(engine, "edit") == [str(run)]
    # the loser reads the new name and saves again: now it goes through
    store.edit_run(engine, run, label="editor's name", seen={"label": "admin's name", "note": "n0"}, who=EDITOR)
    assert actions(engine, "edit") == [str(run), str(run)]


def test_trashing_a_run_someone_else_trashed_meanwhile_is_refused(engine):
    a, b = saved(engine, "a"), saved(engine, "b")
    assert store.trash_runs(engine, [a], who=ADMIN, page="test") == 1
    with pytest.raises(store.StoreError, match=r"#\d+ were moved to the trash by boss@example.com meanwhile"):
        store.trash_runs(engine, [a, b], who=EDITOR, page="test")
    assert set(store.list_runs(engine)["id"]) == {b}  # all or nothing: b was not moved either
    assert store.trashed(engine, [a])["trashed_by"].tolist() == [ADMIN.email]
    assert actions(engine, "trash") == [str(a)]
    with pytest.raises(store.StoreError, match=r"moved to the trash by boss@example.com meanwhile.*not saved"):
        store.edit_run(engine, a, label="x", seen={"label": "a", "note": "n0"}, who=EDITOR)
    assert actions(engine, "edit") == []


def test_restoring_or_purging_a_run_restored_or_purged_meanwhile_is_refused(engine):
    a, b = saved(engine, "a"), saved(engine, "b")
    store.trash_runs(engine, [a, b], who=EDITOR, page="test")
    assert store.restore_runs(engine, [a], who=ADMIN, page="test") == 1
    with pytest.raises(store.StoreError, match=r"no longer in the trash: boss@example.com restored them meanwhile"):
        store.restore_runs(engine, [a, b], who=EDITOR, page="test")
    with pytest.raises(store.StoreError, match="no longer in the trash"):
        store.purge_runs(engine, [a], who=ADMIN)
    assert store.purge_runs(engine, [b], who=ADMIN) == 1
    with pytest.raises(store.StoreError, match="purged from the trash meanwhile"):
        store.restore_runs(engine, [b], who=EDITOR)
    assert set(store.list_runs(engine)["id"]) == {a} and store.list_trash(engine).empty
    assert actions(engine, "restore") == [str(a)] and actions(engine, "purge") == [str(b)]


@pytest.mark.parametrize("what", ["rename", "trash", "restore"])
def test_of_people_changing_one_run_at_the_same_instant_one_wins_and_the_others_are_told(engine, what):
    run = saved(engine, "shared")
    if what == "restore":
        store.trash_runs(engine, [run], who=EDITOR)
    people = [ADMIN, EDITOR] * 3
    do = {
        "rename": lambda who, n: store.edit_run(
            engine, run, label=f"name {n}", seen={"label": "shared", "note": "n0"}, who=who
        ),
        "trash": lambda who, n: store.trash_runs(engine, [run], who=who),
        "restore": lambda who, n: store.restore_runs(engine, [run], who=who),
    }[what]
    start, won, lost = threading.Barrier(len(people)), [], []

    def person(who, n):
        start.wait()
        try:
            do(who, n)
            won.append(n)
        except store.StoreError as exc:
            lost.append(str(exc))

    threads = [threading.Thread(target=person, args=(who, n)) for n, who in enumerate(people)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == len(people) - 1, (won, lost)
    assert all("meanwhile" in text for text in lost), lost
    action = {"rename": "edit"}.get(what, what)
    assert actions(engine, action) == [str(run)]  # recorded once, by the one who won
    if what == "rename":
        assert store.list_runs(engine).set_index("id").loc[run, "label"] == f"name {won[0]}"

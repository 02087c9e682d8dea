"""Roles enforced by the run library itself: every write path called directly with each role, the local
user refused where sign-in is configured or the server is hosted, the trash's lifecycle, the audit trail,
and editors and an admin changing the same runs at once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from specviz.base import access
from specviz.data import measurements, store

VIEWER = access.Identity("vi@example.com", "viewer", "oidc")
EDITOR = access.Identity("ed@example.com", "editor", "oidc")
OTHER = access.Identity("other@example.com", "editor", "proxy")
ADMIN = access.Identity("boss@example.com", "admin", "oidc")


@pytest.fixture
def engine(tmp_path):
    eng = store.open_library(f"sqlite:///{tmp_path / 'runs.sqlite'}")
    yield eng
    eng.dispose()


def frame(tag: str = "r") -> pd.DataFrame:
    return measurements.load_measurements(f"label,k,alpha\n{tag},3,0.7\n{tag},4,0.6\n", name=tag)[0]


def saved(engine, who=EDITOR, tag="r") -> int:
    return store.save_run(engine, frame(tag), label=tag, source="s", who=who, page="test")


# every write path, by role -------------------------------------------------------------


def test_a_viewer_can_read_but_not_write(engine):
    run = saved(engine)
    assert store.load_run(engine, run)["k"].tolist() == [3, 4]
    writes = {
        "save": lambda: store.save_run(engine, frame(), label="x", source="s", who=VIEWER),
        "edit": lambda: store.edit_run(engine, run, label="y", who=VIEWER),
        "trash": lambda: store.delete_runs(engine, [run], who=VIEWER),
        "restore": lambda: store.restore_runs(engine, [run], who=VIEWER),
        "purge": lambda: store.purge_runs(engine, [run], who=VIEWER),
        "profile": lambda: store.save_profile(
            engine, name="p", terms="overhead_s=0.001", base_engine="vllm", who=VIEWER
        ),
        "profile delete": lambda: store.delete_profile(engine, "p", who=VIEWER),
        "audit": lambda: store.audit_trail(engine, who=VIEWER),
    }
    for name, write in writes.items():
        with pytest.raises(access.AccessError, match="you are viewer") as caught:
            write()
        assert "role" in str(caught.value), name
    assert store.list_runs(engine)["label"].tolist() == ["r"] and store.list_profiles(engine).empty


def test_an_editor_changes_their_own_runs_and_not_others(engine):
    mine, theirs = saved(engine, EDITOR, "mine"), saved(engine, OTHER, "theirs")
    assert store.list_runs(engine).set_index("id")["created_by"].to_dict() == {
        mine: EDITOR.email,
        theirs: OTHER.email,
    }
    store.edit_run(engine, mine, label="renamed", note="n", who=EDITOR)
    for change in (
        lambda: store.edit_run(engine, theirs, label="x", who=EDITOR),
        lambda: store.delete_runs(engine, [mine, theirs], who=EDITOR),  # one not allowed: nothing moves
    ):
        with pytest.raises(access.AccessError, match="that someone else saved, you need the admin role"):
            change()
    assert store.list_trash(engine).empty
    assert store.delete_runs(engine, [mine], who=EDITOR) == 1
    with pytest.raises(access.AccessError, match="admin"):
        store.purge_runs(engine, [mine], who=EDITOR)
    assert store.restore_runs(engine, [mine], who=EDITOR) == 1
    assert store.list_runs(engine).set_index("id").loc[mine, "label"] == "renamed"


def test_an_admin_trashes_restores_and_purges_anyones_runs(engine):
    a, b = saved(engine, EDITOR, "a"), saved(engine, OTHER, "b")
    assert store.delete_runs(engine, [a, b], who=ADMIN, page="measured-data") == 2
    trash = store.list_trash(engine)
    assert trash["id"].tolist() == [b, a] and set(trash["trashed_by"]) == {ADMIN.email}
    assert store.restore_runs(engine, [a], who=EDITOR) == 1  # its owner may restore it
    with pytest.raises(access.AccessError):
        store.restore_runs(engine, [b], who=EDITOR)
    assert store.purge_runs(engine, [b], who=ADMIN) == 1
    assert store.list_trash(engine).empty and store.list_runs(engine)["id"].tolist() == [a]
    trail = store.audit_trail(engine, who=ADMIN)
    assert trail["action"].tolist() == ["purge", "restore", "trash", "save", "save"]
    assert trail["runs"].tolist()[:3] == [str(b), str(a), f"{a}, {b}"]
    assert trail["page"].tolist()[2] == "measured-data" and trail["role"].tolist()[0] == "admin"


def test_profiles_are_owned_too(engine):
    store.save_profile(engine, name="p", terms="overhead_s=0.001", base_engine="vllm", who=EDITOR)
    assert store.list_profiles(engine)["name"].tolist() == ["p"]
    with pytest.raises(access.AccessError, match="admin"):
        store.delete_profile(engine, "p", who=OTHER)
    assert store.delete_profile(engine, "p", who=ADMIN) == 1


def test_a_link_to_a_trashed_run_says_so(engine):
    run = saved(engine)
    store.delete_runs(engine, [run], who=EDITOR)
    with pytest.raises(store.StoreError, match=r"run id\(s\) \[1\] are in the trash"):
        store.load_runs(engine, [run])
    assert store.trashed(engine, [run, 99])[["id", "trashed_by"]].values.tolist() == [[run, EDITOR.email]]


def test_expired_runs_are_purged_and_the_purge_is_audited(engine):
    old, fresh = saved(engine, tag="old"), saved(engine, tag="fresh")
    store.delete_runs(engine, [old, fresh], who=ADMIN)
    assert store.purge_expired(engine, days=30, now=datetime.now(UTC) + timedelta(days=29)) == 0
    assert store.purge_expired(engine, days=30, now=datetime.now(UTC) + timedelta(days=31)) == 2
    trail = store.audit_trail(engine, who=ADMIN)
    assert trail.iloc[0][["who", "action"]].tolist() == ["system", "purge"] and "30 days" in trail.iloc[0]["detail"]


# the local user ---------------------------------------------------------------------------


WRITES = {
    "save_run": lambda e: store.save_run(e, frame(), label="x", source="s"),
    "edit_run": lambda e: store.edit_run(e, 1, label="y"),
    "delete_runs": lambda e: store.delete_runs(e, [1]),
    "restore_runs": lambda e: store.restore_runs(e, [1]),
    "purge_runs": lambda e: store.purge_runs(e, [1]),
    "save_profile": lambda e: store.save_profile(e, name="p", terms="overhead_s=0.001", base_engine="vllm"),
    "delete_profile": lambda e: store.delete_profile(e, "p"),
}


@pytest.mark.slow
@pytest.mark.parametrize("setup", ["hosted", "proxy header", "oidc secrets"])
@pytest.mark.parametrize("write", list(WRITES))
def test_no_write_without_a_named_person_once_sign_in_is_configured(engine, monkeypatch, tmp_path, setup, write):
    saved(engine, ADMIN)
    if setup == "hosted":
        monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    elif setup == "proxy header":
        monkeypatch.setenv("SPECVIZ_AUTH_HEADER", "X-Forwarded-Email")
    else:
        secrets = tmp_path / "secrets.toml"
        secrets.write_text('[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\n')
        monkeypatch.setenv("STREAMLIT_SECRETS_FILES", str(secrets))
    with pytest.raises(access.AccessError, match="signed-in person"):
        WRITES[write](engine)
    with pytest.raises(access.AccessError, match="signed-in person"):
        store.save_run(engine, frame(), label="x", source="s", who=access.LOCAL)  # naming LOCAL is no way round
    assert store.list_runs(engine)["label"].tolist() == ["r"]


def test_on_ones_own_machine_the_local_user_may_do_everything(engine):
    run = store.save_run(engine, frame(), label="x", source="s")
    assert store.list_runs(engine)["created_by"].tolist() == [""]
    assert store.delete_runs(engine, [run]) == 1 and store.purge_runs(engine, [run]) == 1
    assert store.audit_trail(engine)["who"].tolist() == ["", "", ""]


# at the same time ---------------------------------------------------------------------------


@pytest.mark.slow
def test_two_editors_and_an_admin_at_once_leave_every_run_in_one_place(engine):
    concurrent_changes(engine)


def concurrent_changes(engine) -> None:
    """Editors trash and restore their runs while an admin purges the trash and a viewer reads: each run
    ends in the library, in the trash or purged, a change that comes too late is refused saying why (all
    or nothing), and every change is in the audit trail (SQLite here,
    PostgreSQL in tests/data/test_store_postgres.py)."""
    mine = [saved(engine, EDITOR, f"e{i}") for i in range(6)]
    theirs = [saved(engine, OTHER, f"o{i}") for i in range(6)]
    errors: list[BaseException] = []

    def loop(fn):
        try:
            for _ in range(8):
                try:
                    fn()
                except store.StoreError as exc:  # purged or restored by another meanwhile: said so, nothing done
                    if "meanwhile" not in str(exc) and "not in the library" not in str(exc):
                        raise
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)

    def read():
        ids = store.list_runs(engine)["id"].tolist()
        try:
            store.load_runs(engine, ids)
        except store.StoreError as exc:  # trashed meanwhile: said so, not a crash
            assert "trash" in str(exc) or "not in the library" in str(exc)

    workers = [
        lambda: (store.delete_runs(engine, mine, who=EDITOR), store.restore_runs(engine, mine, who=EDITOR)),
        lambda: (store.delete_runs(engine, theirs, who=OTHER), store.restore_runs(engine, theirs, who=OTHER)),
        lambda: store.purge_runs(engine, store.list_trash(engine)["id"].tolist(), who=ADMIN),
        read,
    ]
    threads = [threading.Thread(target=loop, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    live, trash = set(store.list_runs(engine)["id"]), set(store.list_trash(engine)["id"])
    assert not live & trash and live | trash <= set(mine + theirs)
    trail = store.audit_trail(engine, who=ADMIN)
    purged = {int(i) for runs in trail[trail["action"] == "purge"]["runs"] for i in runs.split(", ")}
    assert live | trash | purged == set(mine + theirs)

"""The Run library page when someone else changed the same run meanwhile (another tab, another replica): the
rename, trash or restore that comes second is refused with a message saying what happened and by whom, in
the session's language, and the page goes on (no traceback, the trash and audit still shown).
End to end on two app processes and PostgreSQL: tests/browser/test_browser_replicas.py."""

from __future__ import annotations

import pytest
from _apps import click, open_app, rerun, shown_errors

from specviz.app import ui
from specviz.base import access, i18n
from specviz.data import measurements, store

EDITOR = access.Identity("ed@example.com", "editor", "oidc")
ADMIN = access.Identity("boss@example.com", "admin", "oidc")


@pytest.fixture
def library(db_url, monkeypatch):
    monkeypatch.setattr(ui, "identity", lambda: EDITOR)
    monkeypatch.setenv("SPECVIZ_AUTH_HEADER", "X-Forwarded-Email")  # sign-in configured: no local user
    engine = store.open_library(db_url)
    frame, _ = measurements.load_measurements("label,k,alpha\nseed,3,0.7\n", name="seed")
    store.save_run(engine, frame, label="other", source="s", who=EDITOR)  # the library stays listed
    run = store.save_run(engine, frame, label="seed", source="s", who=EDITOR)
    yield engine, run
    engine.dispose()


def test_a_rename_saved_over_by_someone_else_is_refused_and_says_so(library):
    engine, run = library
    at = open_app("pages/run-library.py", runs=str(run))
    at.text_input(key=f"measured.edit_name.{run}").set_value("my name")
    seen = {"label": "seed", "note": ""}
    store.edit_run(engine, run, label="their name", seen=seen, who=ADMIN, page="other replica")
    click(at, "Save the changes")
    assert any(f"run #{run} was changed by boss@example.com meanwhile" in e for e in shown_errors(at)), shown_errors(at)
    assert not at.exception
    assert store.list_runs(engine)["label"].tolist() == ["their name", "other"]  # theirs kept, not overwritten
    click(at, "Save the changes")  # having read the message, the editor saves again: now it goes through
    assert store.list_runs(engine)["label"].tolist() == ["my name", "other"]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_trashing_a_run_someone_else_trashed_meanwhile_says_who(library, lang):
    engine, run = library
    at = open_app("pages/run-library.py", runs=str(run), lang=lang)
    click(at, i18n.text(lang, "Move the selected runs to the trash…"))
    store.trash_runs(engine, [run], who=ADMIN, page="other replica")
    click(at, i18n.text(lang, "Yes, move to the trash"))
    said = i18n.text(
        lang,
        "run(s) {ids} were moved to the trash by {who} meanwhile; nothing was moved",
        ids=f"#{run}",
        who="boss@example.com",
    )
    assert any(said in e for e in shown_errors(at)), shown_errors(at)
    assert not at.exception
    assert store.trashed(engine, [run])["trashed_by"].tolist() == [ADMIN.email]
    trail = store.audit_trail(engine, who=ADMIN)
    assert trail.loc[trail["action"] == "trash", "who"].tolist() == [ADMIN.email]  # recorded once, by the winner


@pytest.mark.slow
def test_restoring_a_run_someone_else_restored_meanwhile_says_who(library):
    engine, run = library
    store.trash_runs(engine, [run], who=EDITOR)
    at = open_app("pages/run-library.py")
    at.multiselect(key="measured.trash_pick").set_value([run])
    rerun(at)
    store.restore_runs(engine, [run], who=ADMIN, page="other replica")
    click(at, "Restore")
    said = f"run(s) #{run} are no longer in the trash: boss@example.com restored them meanwhile"
    assert any(said in w.value for w in at.warning), [w.value for w in at.warning]
    assert not at.exception and at.multiselect(key="measured.runs").options
    trail = store.audit_trail(engine, who=ADMIN)
    assert trail.loc[trail["action"] == "restore", "who"].tolist() == [ADMIN.email]
    store.trash_runs(engine, [run], who=EDITOR)  # again; this time the editor restores it alone: no notice
    rerun(at)
    at.multiselect(key="measured.trash_pick").set_value([run])
    rerun(at)
    click(at, "Restore")
    assert not [w.value for w in at.warning if "no longer in the trash" in w.value]
    assert run in store.list_runs(engine)["id"].tolist()

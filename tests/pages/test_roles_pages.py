"""What each role can do on the pages, in AppTest (the session's identity stands in for a sign-in; the browser
tests in test_browser_signin.py walk the real OpenID Connect flow): Measured data, Live benchmark, Engine
monitor, and hosted mode without sign-in, in both languages."""

from __future__ import annotations

import pytest
from _apps import open_app, rerun

from specviz.app import queues, ui
from specviz.base import access, i18n
from specviz.data import measurements, store

VIEWER = access.Identity("vi@example.com", "viewer", "oidc")
EDITOR = access.Identity("ed@example.com", "editor", "oidc")
ADMIN = access.Identity("boss@example.com", "admin", "oidc")
CSV = "label,k,alpha\nmine,3,0.7\n"


@pytest.fixture
def as_user(monkeypatch):
    def use(who: access.Identity) -> None:
        monkeypatch.setattr(ui, "identity", lambda: who)
        monkeypatch.setenv("SPECVIZ_AUTH_HEADER", "X-Forwarded-Email")  # sign-in configured: no local user

    return use


def seeded(db_url: str, who=EDITOR) -> int:
    frame, _ = measurements.load_measurements(CSV, name="seed")
    return store.save_run(store.open_library(db_url), frame, label="seed", source="s", who=who)


def buttons(at) -> list[str]:
    return [b.label for b in at.button]


@pytest.mark.slow
def test_a_viewer_browses_and_is_told_why_nothing_saves(db_url, as_user):
    run = seeded(db_url)
    as_user(VIEWER)
    at = open_app("pages/run-library.py", runs=str(run))
    at.text_area(key="measured.paste").set_value(CSV)
    rerun(at)
    assert "Save to library" not in buttons(at) and "Move the selected runs to the trash…" not in buttons(at)
    assert any("you need the editor role; you are viewer (vi@example.com)" in c.value for c in at.caption)
    assert not [e for e in at.expander if e.label == "Audit trail"]
    assert at.multiselect(key="measured.runs").value == [run]  # browsing and overlays still work


@pytest.mark.slow
def test_an_editor_saves_and_trashes_their_own_runs(db_url, as_user):
    theirs = seeded(db_url, ADMIN)
    as_user(EDITOR)
    at = open_app("pages/measured-data.py")
    at.text_area(key="measured.paste").set_value(CSV)
    rerun(at)
    next(b for b in at.button if b.label == "Save to library").click()
    rerun(at)
    runs = store.list_runs(store.open_library(db_url))
    mine = int(runs.loc[runs["created_by"] == EDITOR.email, "id"].iloc[0])
    at = open_app("pages/run-library.py", runs=f"{mine},{theirs}")
    next(b for b in at.button if b.label == "Move the selected runs to the trash…").click()
    rerun(at)
    next(b for b in at.button if b.label == "Yes, move to the trash").click()
    rerun(at)
    assert any("that someone else saved, you need the admin role" in e.value for e in at.error)
    assert store.list_trash(store.open_library(db_url)).empty  # one not allowed: nothing moved
    assert not [e for e in at.expander if e.label == "Audit trail"]


@pytest.mark.slow
def test_an_admin_sees_the_audit_trail_and_the_trash(db_url, as_user):
    run = seeded(db_url)
    store.delete_runs(store.open_library(db_url), [run], who=EDITOR, page="test")
    as_user(ADMIN)
    at = open_app("pages/run-library.py", runs=str(run))
    assert any(f"Run #{run} seed is in the trash (moved by ed@example.com" in w.value for w in at.warning)
    assert f"Restore run #{run}" in buttons(at)
    assert [e.label for e in at.expander if e.label.startswith(("Trash", "Audit"))] == ["Trash (1)", "Audit trail"]
    trail = next(d.value for d in at.dataframe if "action" in d.value.columns)
    assert trail["action"].tolist() == ["trash", "save"] and trail["who"].tolist() == [EDITOR.email] * 2
    next(b for b in at.button if b.label == f"Restore run #{run}").click()
    rerun(at)
    assert store.list_runs(store.open_library(db_url))["id"].tolist() == [run]
    assert at.multiselect(key="measured.runs").value == [run]


@pytest.mark.slow
def test_hosted_without_sign_in_the_library_is_read_only_and_says_why(db_url, monkeypatch):
    seeded(db_url, access.LOCAL)
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    for lang in ("en", "zh"):
        at = open_app("pages/measured-data.py", lang=lang)
        why = i18n.text(
            lang,
            "This hosted server has no sign-in configured, so its run library is read-only: browse, overlay and download. The operator sets up sign-in (docs/deploy.md §8) to save.",
        )
        assert any(why in i.value for i in at.info)


def test_the_live_benchmark_needs_an_editor_and_counts_runs_per_hour(as_user, monkeypatch):
    as_user(VIEWER)
    at = open_app("pages/live.py")
    run = next(b for b in at.button if b.label == "Run")
    assert run.disabled and any("to run the Live benchmark you need the editor role" in i.value for i in at.info)
    quota = queues.HourlyQuota("SPECVIZ_LIVE_PER_HOUR", "live runs")
    monkeypatch.setenv("SPECVIZ_LIVE_PER_HOUR", "2")
    quota.take("ed@example.com", hosted=False, now=0.0)
    quota.take("ed@example.com", hosted=False, now=10.0)
    quota.take("other@example.com", hosted=False, now=10.0)  # another person's count is their own
    with pytest.raises(ValueError, match=r"started 2 live runs in the last hour.*SPECVIZ_LIVE_PER_HOUR.*60 min"):
        quota.take("ed@example.com", hosted=False, now=20.0)
    quota.take("ed@example.com", hosted=False, now=3601.0)  # the first has left the hour
    quota.take("", hosted=False, now=3602.0)  # the local user is not counted


@pytest.mark.slow
def test_the_load_generator_needs_an_editor(as_user):
    as_user(VIEWER)
    at = open_app("pages/server-monitor.py")
    at.session_state["server-monitor._lg"] = True  # the Load generator expander, opened
    rerun(at)
    assert next(b for b in at.button if b.label == "Run load").disabled
    assert any("to run the load generator you need the editor role" in c.value for c in at.caption)


@pytest.mark.slow
def test_the_owner_renames_a_run_and_the_change_is_audited(db_url, as_user):
    run = seeded(db_url, EDITOR)
    as_user(access.Identity("other@example.com", "editor", "oidc"))
    at = open_app("pages/run-library.py", runs=str(run))
    assert not [e for e in at.expander if e.label.startswith("Rename run")]  # not theirs
    as_user(EDITOR)
    at = open_app("pages/run-library.py", runs=str(run))
    at.text_input(key=f"measured.edit_name.{run}").set_value("renamed")
    rerun(at)
    next(b for b in at.button if b.label == "Save the changes").click()
    rerun(at)
    assert store.list_runs(store.open_library(db_url))["label"].tolist() == ["renamed"]
    trail = store.audit_trail(store.open_library(db_url), who=ADMIN)
    assert trail.iloc[0][["who", "action", "page"]].tolist() == [EDITOR.email, "edit", "run-library"]

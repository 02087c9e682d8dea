"""Two replicas on one PostgreSQL run library (docs/deploy.md §5), in headless Chromium: an editor on one app
process and an admin on another save, rename, trash and restore the same runs at the same moment.

Each person signs in through a trusted proxy's header (``SPECVIZ_AUTH_HEADER``, a proxy in this process as in
test_browser_signin.py) in their own browser context. Nothing is lost (both saves are in the library with
their rows), each change that came second is refused and the one who lost sees why on their page (renamed,
trashed or restored by the other, named), and the audit trail holds every change exactly once, by the one
who made it.

Needs PostgreSQL (``source scripts/postgres`` exports SPECVIZ_TEST_POSTGRES_URL; every table of that database
is dropped first) and Debian's ``chromium`` on PATH.
"""

from __future__ import annotations

import contextlib
import os
import re

import pytest
import sqlalchemy as sa
from _browser import CHROMIUM, ServerError, browser_fixture, streamlit_server
from playwright.sync_api import expect
from test_browser import RUN_TIMEOUT_MS, open_page, wait_drawn
from test_browser_signin import (
    ADMIN,
    EDITOR,
    HEADER,
    ROLES_ENV,
    TRASH_BUTTON,
    choose,
    eventually,
    header_proxy,
    measurements_csv,
    new_page,
    no_secrets,
    open_expander,
    paste,
)

from specviz.base import access
from specviz.data import measurements, store

PG_URL = os.environ.get("SPECVIZ_TEST_POSTGRES_URL", "")
REQUIRED = bool(os.environ.get("CI") or os.environ.get("SPECVIZ_REQUIRE_POSTGRES"))
pytestmark = [
    pytest.mark.browser,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
    pytest.mark.skipif(not PG_URL and not REQUIRED, reason="set SPECVIZ_TEST_POSTGRES_URL (source scripts/postgres)"),
]
AS_EDITOR = access.Identity(EDITOR, "editor", "proxy")
AS_ADMIN = access.Identity(ADMIN, "admin", "proxy")


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """The library (its tables dropped, then created by this process: the first to open it) holding two runs
    of the editor; two app processes on it, each behind a proxy signing in its person. Yields (library,
    editor's base URL, admin's base URL, the two runs' ids)."""
    if not PG_URL:
        pytest.fail("SPECVIZ_TEST_POSTGRES_URL is not set although CI requires PostgreSQL", pytrace=False)
    raw = sa.create_engine(PG_URL)
    with raw.begin() as conn:  # as tests/data/test_store_postgres.py: a library of this test's own
        for table in ("measurements", "runs", "profiles", "specviz_info", "audit", "alembic_version"):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table} CASCADE")
    raw.dispose()
    library = store.open_library(PG_URL)
    seeds = []
    for label in ("shared one", "shared two"):
        frame, _ = measurements.load_measurements(measurements_csv(label))
        seeds.append(store.save_run(library, frame, label=label, source="seed", who=AS_EDITOR, page="test"))
    env = {
        **ROLES_ENV,
        "SPECVIZ_DB_URL": PG_URL,
        "SPECVIZ_AUTH_HEADER": HEADER,
        "STREAMLIT_SECRETS_FILES": no_secrets(tmp_path_factory),
    }
    try:
        with contextlib.ExitStack() as stack:
            bases = [
                stack.enter_context(streamlit_server("app.py", tmp_path_factory.mktemp(name) / "log", env=env))
                for name in ("replica-a", "replica-b")
            ]
            front_a = stack.enter_context(header_proxy(bases[0], {HEADER: EDITOR}))
            front_b = stack.enter_context(header_proxy(bases[1], {HEADER: ADMIN}))
            yield library, front_a, front_b, seeds
    except ServerError as exc:
        pytest.fail(str(exc))
    finally:
        library.dispose()


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


def shows(page, pattern: str) -> bool:
    """Whether an error or warning box on ``page`` says ``pattern`` (a regular expression)."""
    boxes = page.locator('[data-testid="stAlertContentError"], [data-testid="stAlertContentWarning"]')
    return any(re.search(pattern, text) for text in boxes.all_inner_texts())


def no_exception(page, where: str) -> None:
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, f"exception on {where}:\n" + "\n".join(boxes.all_inner_texts())


def both_drawn(*pages) -> None:
    for page in pages:
        wait_drawn(page)


def trail(library):
    return store.audit_trail(library, who=AS_ADMIN)


def test_two_editors_on_two_replicas_lose_nothing_and_each_conflict_is_shown(replicas, browser):
    library, front_a, front_b, (one, two) = replicas
    people = {EDITOR: "editor", ADMIN: "admin"}
    with new_page(browser) as ed, new_page(browser) as boss:
        # 1. both save a pasted file at the same moment, each on their replica: both are kept, rows and all
        for page, front, label in ((ed, front_a, "editor's run"), (boss, front_b, "admin's run")):
            open_page(page, f"{front}/run-library")
            paste(page, measurements_csv(label))
        ed.get_by_role("button", name="Save to library").click()
        boss.get_by_role("button", name="Save to library").click()
        for page in (ed, boss):
            expect(page.get_by_text(re.compile(r"Saved as run #\d+\."))).to_be_visible(timeout=RUN_TIMEOUT_MS)
        eventually(lambda: len(store.list_runs(library)) == 4, "both saves are stored")
        runs = store.list_runs(library)
        saved = dict(zip(runs["label"], runs["id"], strict=True))
        for label, who in (("editor's run", EDITOR), ("admin's run", ADMIN)):
            assert runs.set_index("id").loc[saved[label], "created_by"] == who
            assert len(store.load_run(library, saved[label])) == 2  # both rows of each file

        # 2. both rename run `one` from the same form at the same moment: one wins, the other is told by whom
        for page, front, name in ((ed, front_a, "named by the editor"), (boss, front_b, "named by the admin")):
            open_page(page, f"{front}/run-library?runs={one}")
            form = open_expander(page, f"Rename run #{one} or change its note")
            box = form.get_by_label("Run name")
            box.fill(name)
            box.press("Enter")
            wait_drawn(page)
        ed.get_by_role("button", name="Save the changes").click()
        boss.get_by_role("button", name="Save the changes").click()
        both_drawn(ed, boss)
        label = eventually(
            lambda: (n := store.list_runs(library).set_index("id").loc[one, "label"]) != "shared one" and n,
            "one rename is stored",
        )
        winner = EDITOR if label == "named by the editor" else ADMIN
        loser = boss if winner == EDITOR else ed
        expect(
            loser.get_by_text(re.compile(rf"run #{one} was changed by {re.escape(winner)} meanwhile"))
        ).to_be_visible()
        edits = trail(library).query("action == 'edit'")
        assert edits[["who", "runs"]].values.tolist() == [[winner, str(one)]]

        # 3. both move run `two` to the trash at the same moment: one moves it, the other is told by whom
        for page, front in ((ed, front_a), (boss, front_b)):
            open_page(page, f"{front}/run-library?runs={two}")
            page.get_by_role("button", name=TRASH_BUTTON).click()
            wait_drawn(page)
        ed.get_by_role("button", name="Yes, move to the trash").click()
        boss.get_by_role("button", name="Yes, move to the trash").click()
        both_drawn(ed, boss)
        moved = eventually(lambda: store.trashed(library, [two])["trashed_by"].tolist(), "run two is in the trash")
        winner = moved[0]
        loser = boss if winner == EDITOR else ed
        eventually(lambda: shows(loser, rf"#{two} were moved to the trash by {re.escape(winner)} meanwhile"), "told")
        assert trail(library).query("action == 'trash'")[["who", "runs"]].values.tolist() == [[winner, str(two)]]

        # 4. both restore it from the trash at the same moment: one restores it, the other is told by whom
        for page, front in ((ed, front_a), (boss, front_b)):
            open_page(page, f"{front}/run-library")
            trash = open_expander(page, "Trash (1)")
            page.mouse.wheel(0, 3000)  # the list of options opens below the box: room for it on screen
            choose(page, trash, "Runs in the trash", f"#{two} shared two")
        ed.get_by_role("button", name="Restore", exact=True).click()
        boss.get_by_role("button", name="Restore", exact=True).click()
        both_drawn(ed, boss)
        eventually(lambda: two in set(store.list_runs(library)["id"]), "run two is back")
        restores = trail(library).query("action == 'restore'")
        assert restores["runs"].tolist() == [str(two)]  # once
        winner = restores["who"].iloc[0]
        loser = boss if winner == EDITOR else ed
        eventually(lambda: shows(loser, rf"#{two} are no longer in the trash: {re.escape(winner)} restored"), "told")
        for page, who in ((ed, EDITOR), (boss, ADMIN)):
            no_exception(page, f"run-library as {people[who]}")

    # nothing lost: the four runs, in the library, each with its rows; the audit holds each change once
    runs = store.list_runs(library)
    assert set(runs["id"]) == set(saved.values()) and len(runs) == 4 and store.list_trash(library).empty
    assert all(len(store.load_run(library, i)) == 2 for i in runs["id"])
    actions = trail(library)["action"].value_counts().to_dict()
    assert actions == {"save": 4, "edit": 1, "trash": 1, "restore": 1}, actions

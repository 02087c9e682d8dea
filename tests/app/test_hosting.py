"""Hosted mode: the one SPECVIZ_HOSTED rule, and messages that show no server path, URL or database."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from specviz.app import live, ui
from specviz.base import hosting
from specviz.data import store

PG = "postgresql+psycopg://specviz:s3cret@db.internal:5432/specviz"


@pytest.mark.parametrize(("value", "hosted"), [("1", True), (" TRUE ", True), ("on", True), ("0", False), ("", False)])
def test_is_hosted_is_the_live_pages_rule(value, hosted):
    assert hosting.is_hosted({"SPECVIZ_HOSTED": value}) is hosted
    assert live.limits_from_env({"SPECVIZ_HOSTED": value}).hosted is hosted


@pytest.mark.parametrize(
    "path",
    [
        "/srv/specviz/runs.sqlite",
        "/home/me/.cache/huggingface/hub/models--gpt2",
        r"C:\Users\me\runs.sqlite",
        "C:/Users/me/runs.sqlite",
        r"\\fileserver\share\runs.sqlite",
        "~/models/x",
        "~bob/models/x",
        "sqlite:////srv/specviz/runs.sqlite",
        "https://hub.internal/api/models/x",
    ],
)
def test_redact_hides_absolute_paths_and_urls(path):
    for around in ("{}", "at '{}': no", "at {}: no", "({})", "failed: {}."):
        text = around.format(path)
        shown = hosting.redact(text)
        assert shown == around.format(hosting.HIDDEN), (text, shown)


@pytest.mark.parametrize(
    "text",
    [
        "α̂ = A/(A+R) and 1/2, a / b, and/or",
        "pair 'meta-llama/Llama-3-70B,meta-llama/Llama-3-8B' is not allowed",
        "relative ./models and ../x stay",
        "K values: 3 is outside [1, 64]",
    ],
)
def test_redact_keeps_text_that_is_no_absolute_path(text):
    assert hosting.redact(text) == text


def test_database_forms_cover_how_messages_spell_the_url():
    forms = store.database_forms(PG)
    assert PG in forms and "postgresql+psycopg://specviz:***@db.internal:5432/specviz" in forms
    assert "runs.sqlite" in store.database_forms("sqlite:///runs.sqlite")  # a relative SQLite file
    assert store.database_forms("not a database url") == ("not a database url",)


def test_a_library_error_in_hosted_mode_shows_no_path_or_url(monkeypatch):
    """A StoreError quoting the database (as store.open_library's do) and a file path: hidden when hosted."""
    monkeypatch.setenv(store.ENV_URL, PG)
    parsed = f"{sa.make_url(PG)!r}"
    exc = store.StoreError(
        f"cannot open the run library at {parsed}: [Errno 13] Permission denied: '/srv/specviz/runs.sqlite'"
    )
    shown = ui.public_message(str(exc), hosted=True)
    assert shown == "cannot open the run library at [hidden]: [Errno 13] Permission denied: '[hidden]'"
    assert ui.public_message(f"{store.ENV_URL} must be a URL; got {PG!r}", hosted=True).endswith("got '[hidden]'")
    assert ui.public_message(str(exc), hosted=False) == str(exc)  # the operator's own server shows all
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    assert ui.public_message(str(exc)) == shown  # the default reads SPECVIZ_HOSTED
    monkeypatch.setenv(store.ENV_URL, "sqlite:///relative/runs.sqlite")
    assert ui.public_message("no such file: relative/runs.sqlite") == "no such file: [hidden]"

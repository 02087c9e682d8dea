"""specviz.base.settings: every SPECVIZ_* variable the code reads is a setting, and docs/deploy.md lists them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specviz.app import live
from specviz.app.live import request
from specviz.base import settings

ROOT = Path(__file__).resolve().parents[2]
#: the test harness's variables (docs/testing.md), not settings of the app
HARNESS = {"SPECVIZ_TEST_POSTGRES_URL", "SPECVIZ_REQUIRE_POSTGRES", "SPECVIZ_REQUIRE_LLAMA"}
NAME = re.compile(r"SPECVIZ_[A-Z][A-Z_]*[A-Z]\b")


def source_names() -> set[str]:
    files = [ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "specviz").rglob("*.py")]
    return {n for f in files for n in NAME.findall(f.read_text(encoding="utf-8"))} - HARNESS


def test_every_variable_the_code_names_is_a_setting():
    names = {s.name for s in settings.SETTINGS}
    assert source_names() == names, (sorted(source_names() - names), sorted(names - source_names()))


def deploy_table() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text[text.index("## 7. Every setting") :]
    rows = re.findall(r"^\| `(SPECVIZ_[A-Z_]+)` \|(.*)\|$", section, re.M)
    return {name: [c.strip() for c in cells.split("|")] for name, cells in rows}


def test_the_deploy_guides_table_is_the_settings_table():
    table = deploy_table()
    assert list(table) == [s.name for s in settings.SETTINGS]
    for s in settings.SETTINGS:
        kind, default, hosted, _ = table[s.name]
        assert kind == s.kind, s.name
        if s.kind in ("count", "seconds"):
            assert float(default) == s.default and float(hosted) == s.hosted, (s.name, default, hosted)


def test_the_live_limits_take_their_defaults_from_the_settings():
    for field, name in request.CAPS.items():
        assert getattr(live.Limits(), field) == settings.setting(name).default
        assert getattr(live.HOSTED_DEFAULTS, field) == settings.setting(name).hosted
    assert live.limits_from_env({"SPECVIZ_HOSTED": "1", "SPECVIZ_MAX_CELLS": " 5 "}).max_cells == 5


@pytest.mark.parametrize(
    ("raw", "kind", "want"),
    [("", "count", 64), ("  ", "count", 64), ("7", "count", 7), ("2.5", "seconds", 2.5), ("1e9", "seconds", 1e9)],
)
def test_a_number_setting_reads_its_value_or_its_default(raw, kind, want):
    name = "SPECVIZ_MAX_CELLS" if kind == "count" else "SPECVIZ_MAX_WALL_S"
    got = settings.number(name, {name: raw})
    assert got == want and type(got) is (int if kind == "count" else float)


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "abc", "3.5", "inf", "1e400", "1" * 20])
def test_a_bad_count_is_a_message_naming_the_variable_and_the_value(raw):
    with pytest.raises(ValueError) as info:
        settings.number("SPECVIZ_MAX_CELLS", {"SPECVIZ_MAX_CELLS": raw})
    assert "SPECVIZ_MAX_CELLS" in str(info.value) and raw in str(info.value)


def test_an_unknown_name_or_a_text_read_as_a_number_is_a_programming_error():
    with pytest.raises(KeyError):
        settings.value("SPECVIZ_NO_SUCH")
    with pytest.raises(TypeError):
        settings.number("SPECVIZ_DB_URL", {})

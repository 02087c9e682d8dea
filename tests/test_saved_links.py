"""Links saved from an earlier main open the same views: the page mirrors the same query into its URL.

``tests/fixtures/links/2026-12-02.json`` holds one link per page with every control it declares set (both
languages), and what each page published back into its URL on main at 5041932. A page that renamed a
control, changed a choice's value or its codec would publish something else, and a shared link would no
longer open the view it was sent for. A new choice value must accept the old one as an alias.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
SAVED = json.loads((ROOT / "tests" / "fixtures" / "links" / "2026-12-02.json").read_text(encoding="utf-8"))
LINKS = SAVED["links"]


def test_every_page_with_controls_has_saved_links_in_both_languages():
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py")} - {"pages/home.py"}
    assert {(link["page"], link["query"]["lang"]) for link in LINKS} == {
        (p, lang) for p in pages for lang in ("en", "zh")
    }


@pytest.mark.parametrize("link", LINKS, ids=[f"{x['page'].removeprefix('pages/')}-{x['query']['lang']}" for x in LINKS])
def test_a_saved_link_opens_the_same_view(link, db_url):
    at = AppTest.from_file(str(ROOT / link["page"]), default_timeout=120)
    for name, value in link["query"].items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    published = {k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in at.query_params.items()}
    assert published == link["published"]
    assert not at.warning, [w.value for w in at.warning]

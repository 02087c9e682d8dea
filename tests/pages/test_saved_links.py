"""Links saved from an earlier main open the same views: the page mirrors the same query into its URL.

``tests/fixtures/links/2026-12-02.json`` holds one link per page with every control it declares set (both
languages), and what each page published back into its URL on main at 5041932; each later file in that
folder (``2026-12-04.json``: the Validation page; ``2026-12-04-serving.json``: the Serving page) does the same for
the pages added since (``2026-12-07-tune.json``: the Tune page). A page that renamed a
control, changed a choice's value or its codec would publish something else, and a shared link would no
longer open the view it was sent for. A renamed choice value (an English phrase that became a short
slug) must accept the old one as an alias: it is listed in :data:`RENAMED`, and the page publishes the
new value for it with no warning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
SAVED = [
    json.loads(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "tests" / "fixtures" / "links").glob("*.json"))
]
LINKS = [link for saved in SAVED for link in saved["links"]]
#: (page, control) -> {value on main at 5041932: the slug that replaced it}
LIVE, LIBRARY = "the live page's last run", "a run in the library"
RENAMED = {
    ("pages/design-space.py", "view"): {"Heatmap": "heatmap", "3-D surface": "surface"},
    ("pages/design-space.py", "map"): {
        "Speedup over (α, c)": "s_c",
        "Speedup over (α, K)": "s_k",
        "E[N] over (α, K)": "en",
    },
    ("pages/design-space.py", "tab"): {"Maps": "maps", "Point inspector": "inspector"},
    ("pages/break-even.py", "view"): {
        "Break-even frontier": "frontier",
        "Optimal K": "optimum",
        "Chapter numbers": "chapter",
    },
    ("pages/break-even.py", "opt_map"): {"K*(α, c)": "kstar", "Speedup at K*": "speedup"},
    ("pages/sampling-lab.py", "view"): {
        "Acceptance is overlap": "overlap",
        "Tokens per round": "tokens",
        "Emitted tokens": "emitted",
    },
    ("pages/hardware.py", "view"): {
        "Step time": "step",
        "c and v": "costs",
        "Speedup by batch": "speedup",
        "Batch × context": "map",
        "Memory": "memory",
        "Engine configs": "engine",
    },
    ("pages/hardware.py", "a_src"): {LIBRARY: "library", LIVE: "live"},
    ("pages/hardware.py", "gpu"): {"custom figures": "custom"},
    ("pages/hardware.py", "pair"): {"custom (choose target and draft)": "custom"},
    ("pages/strategies.py", "view"): {
        "Optimal tree": "tree",
        "Shapes by budget": "shapes",
        "Budget × depth": "budget_depth",
        "Hardware-aware": "hardware",
        "Engine flags": "flags",
        "Draft-length policies": "policies",
        "N-gram drafts": "ngram",
    },
    ("pages/strategies.py", "p_src"): {"geometric from α": "geometric", LIBRARY: "library", LIVE: "live"},
    ("pages/strategies.py", "trace_src"): {"an uploaded trace": "upload", LIVE: "live"},
    ("pages/strategies.py", "cost"): {"c and v": "cv", "a pair on a GPU": "gpu"},
    ("pages/strategies.py", "pol_cost"): {"c and v": "cv", "a pair on a GPU": "gpu"},
    ("pages/strategies.py", "ng_src"): {"bundled prompts": "bundled", "my text": "text"},
    ("pages/engine-monitor.py", "c_src"): {
        "the Hardware page's model": "hardware",
        "measured by the load generator": "loadgen",
    },
}


def renamed(page: str, published: dict) -> dict:
    """``published`` (as main at 5041932 wrote it) with each renamed choice written as its slug."""
    return {k: RENAMED.get((page, k), {}).get(v, v) for k, v in published.items()}


PAGE_KEYS = {
    "pages/strategies.py": "strategies",
    "pages/hardware.py": "hardware",
    "pages/engine-monitor.py": "server-monitor",  # the old address opens the Server monitor
    "pages/server-monitor.py": "server-monitor",
    "pages/design-space.py": "design",
    "pages/break-even.py": "breakeven",
    "pages/sampling-lab.py": "lab",
}
#: the page's default of each renamed control (a default is not published)
DEFAULTS = {
    ("pages/strategies.py", "p_src"): "geometric",
    ("pages/design-space.py", "view"): "heatmap",
    ("pages/design-space.py", "map"): "s_c",
    ("pages/design-space.py", "tab"): "maps",
    ("pages/break-even.py", "view"): "frontier",
    ("pages/break-even.py", "opt_map"): "kstar",
    ("pages/sampling-lab.py", "view"): "overlap",
    ("pages/hardware.py", "view"): "speedup",
    ("pages/strategies.py", "view"): "tree",
    ("pages/strategies.py", "trace_src"): "synthetic",
    ("pages/strategies.py", "cost"): "cv",
    ("pages/strategies.py", "pol_cost"): "cv",
    ("pages/strategies.py", "ng_src"): "bundled",
}
OLD_VALUES = [(page, name, old, new) for (page, name), olds in RENAMED.items() for old, new in olds.items()]


@pytest.mark.slow
@pytest.mark.parametrize(("page", "name", "old", "new"), OLD_VALUES, ids=[f"{n}={o}" for _, n, o, _ in OLD_VALUES])
def test_a_renamed_choice_opens_from_its_old_value(page, name, old, new, db_url):
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    at.query_params[name] = old
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[f"{PAGE_KEYS[page]}.{name}"] == new
    published = {k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in at.query_params.items()}
    assert published.get(name, DEFAULTS.get((page, name))) == new  # a default is not published
    assert not at.warning, [w.value for w in at.warning]


def test_every_page_with_controls_has_saved_links_in_both_languages():
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py")} - {"pages/home.py"}
    assert {(link["page"], link["query"]["lang"]) for link in LINKS} == {
        (p, lang) for p in pages for lang in ("en", "zh")
    }


@pytest.mark.slow
@pytest.mark.parametrize("link", LINKS, ids=[f"{x['page'].removeprefix('pages/')}-{x['query']['lang']}" for x in LINKS])
def test_a_saved_link_opens_the_same_view(link, db_url):
    at = AppTest.from_file(str(ROOT / link["page"]), default_timeout=120)
    for name, value in link["query"].items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    published = {k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in at.query_params.items()}
    assert published == renamed(link["page"], link["published"])
    assert not at.warning, [w.value for w in at.warning]

"""Every page shows the same numbers as a recorded render: its default view and each saved link.

``tests/fixtures/numbers.json`` holds, per view, the numbers each kind of element showed
(metrics, tables, charts, text) when the pages were rendered at the commit it names. A refactor that moves
code must leave them as they were; a change that means to alter a number writes a new file
(``SPECVIZ_RECORD_NUMBERS=1 python -m pytest tests/pages/test_same_numbers.py -k record``) and says why in its commit. Numbers are compared as
sorted lists rounded to 4 significant digits (a long list by its length and hash), so moving an element on the page is not a change but
a different value, a missing value or an extra one is.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = ROOT / "tests" / "fixtures" / "numbers.json"
LINKS = [
    link
    for p in sorted((ROOT / "tests" / "fixtures" / "links").glob("*.json"))
    for link in json.loads(p.read_text(encoding="utf-8"))["links"]
]
#: Home is rendered through the router (its page links need the navigation the router builds)
DEFAULTS = [{"page": "app.py", "query": {}}] + [
    {"page": p.relative_to(ROOT).as_posix(), "query": {}}
    for p in sorted((ROOT / "pages").glob("*.py"))
    if p.stem != "home"
]
VIEWS = DEFAULTS + LINKS
#: pages split out of an older page after the numbers were recorded -> that page: a view of one shows the
#: numbers recorded for the older page's view with the same query, else for its default view
SPLIT_FROM = dict.fromkeys(
    ("pages/run-library.py", "pages/compare-runs.py", "pages/published-acceptance.py"), "pages/measured-data.py"
) | {"pages/server-monitor.py": "pages/engine-monitor.py"}  # renamed: the old address forwards to it
_NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def view_id(view: dict) -> str:
    """``page`` or ``page?lang=…&…``: the key of a view in the recorded file."""
    query = "&".join(f"{k}={v}" for k, v in sorted(view["query"].items()))
    return view["page"] + (f"?{query}" if query else "")


def recorded_id(view: dict, views: dict) -> str:
    """The key of the recorded numbers ``view`` must show (its own where recorded, else per :data:`SPLIT_FROM`)."""
    old = SPLIT_FROM.get(view["page"])
    if old is None or view_id(view) in views:
        return view_id(view)
    same = view_id({"page": old, "query": view["query"]})
    return same if same in views else old


def _round(x: float) -> float | str:
    """``x`` to 4 significant digits (NaN and infinities as text, so JSON keeps them)."""
    if not math.isfinite(x):
        return str(x)
    return float(f"{x:.4g}")


def _numbers_in_text(text: str) -> list[float | str]:
    return [_round(float(m.replace(",", "").replace("−", "-"))) for m in _NUMBER.findall(text)]


def _numbers_in_json(node, out: list) -> None:
    """Every number in a plotly figure's data (not its layout: ticks and sizes are presentation)."""
    if isinstance(node, bool):
        return
    if isinstance(node, int | float):
        out.append(_round(float(node)))
    elif isinstance(node, list):
        for item in node:
            _numbers_in_json(item, out)
    elif isinstance(node, dict) and "bdata" in node:  # plotly's typed array: base64 of a numpy buffer
        array = np.frombuffer(base64.b64decode(node["bdata"]), dtype=np.dtype(node["dtype"]))
        out += [_round(float(v)) for v in array]
    elif isinstance(node, dict):
        for key, item in node.items():
            if key not in {"marker", "line", "colorbar", "hoverlabel", "textfont", "legendgroup", "opacity"}:
                _numbers_in_json(item, out)


def _sorted(values: list) -> list:
    return sorted(values, key=lambda v: (isinstance(v, str), v if not isinstance(v, str) else 0, str(v)))


def render(view: dict) -> dict[str, list]:
    """The numbers a view shows, by kind of element, each list sorted."""
    at = AppTest.from_file(str(ROOT / view["page"]), default_timeout=180)
    for name, value in view["query"].items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    metrics: list = []
    for m in at.metric:
        metrics += _numbers_in_text(str(m.value))
    tables: list = []
    for frame in [*at.dataframe, *at.table]:
        values = frame.value.to_numpy().ravel().tolist()
        for v in values:
            if isinstance(v, int | float) and not isinstance(v, bool):
                tables.append(_round(float(v)))
            elif isinstance(v, str):
                tables += _numbers_in_text(v)
    charts: list = []
    for chart in at.get("plotly_chart"):
        _numbers_in_json(json.loads(chart.proto.spec).get("data", []), charts)
    text: list = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "latex", "code"):
        for element in at.get(kind):
            text += _numbers_in_text(str(element.value))
    return {k: _sorted(v) for k, v in (("metrics", metrics), ("tables", tables), ("charts", charts), ("text", text))}


FULL = 2000  #: lists longer than this are recorded as their length and a hash of their values


def digest(values: list) -> list | dict:
    """``values`` as recorded: the list itself, or its length and SHA-256 when it is long."""
    if len(values) <= FULL:
        return values
    return {"n": len(values), "sha256": hashlib.sha256(json.dumps(values).encode()).hexdigest()}


def recorded() -> tuple[str, dict]:
    data = json.loads(NUMBERS.read_text(encoding="utf-8"))
    return data["commit"], data["views"]


@pytest.mark.slow
@pytest.mark.parametrize("view", VIEWS, ids=view_id)
def test_a_view_shows_the_recorded_numbers(view, db_url):
    commit, views = recorded()
    key = recorded_id(view, views)
    assert key in views, f"{key} has no recorded numbers (record them at a commit where it renders as intended)"
    now = render(view)
    for kind, before in views[key].items():
        assert digest(now[kind]) == before, f"{key}: the {kind} differ from {commit}"


def test_every_page_has_a_recorded_default_view():
    _, views = recorded()
    assert {recorded_id(v, views) for v in DEFAULTS} <= set(views)


@pytest.mark.slow
def test_record(db_url):
    """``SPECVIZ_RECORD_NUMBERS=1 python -m pytest tests/pages/test_same_numbers.py -k record`` writes the file."""
    if not os.environ.get("SPECVIZ_RECORD_NUMBERS"):
        pytest.skip("set SPECVIZ_RECORD_NUMBERS=1 to record the numbers of this commit")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    out = {"commit": commit.strip(), "views": {view_id(v): {k: digest(x) for k, x in render(v).items()} for v in VIEWS}}
    NUMBERS.write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")

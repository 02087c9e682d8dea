"""The layout rules of docs/design.md §2: modules with one job, thin pages, and a module map that matches the tree.

(The share of docstrings in specviz/core is tests/core/test_docstrings.py's.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p for p in (ROOT / "specviz").rglob("*.py") if "migrations/versions" not in p.as_posix())
PAGES = sorted((ROOT / "pages").glob("*.py"))
MAX_MODULE, MAX_PAGE = 500, 400
#: a map entry: a module or package name at an indentation below the descriptions' column
ENTRY = re.compile(r"^( {0,15})([\w.]+(?:\.py|/))(?:\s|$)")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def lines(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("\n")


def test_no_module_is_over_500_lines():
    assert [(rel(p), lines(p)) for p in MODULES if lines(p) > MAX_MODULE] == []


def test_no_page_is_over_400_lines():
    assert [(rel(p), lines(p)) for p in PAGES if lines(p) > MAX_PAGE] == []


@pytest.mark.parametrize("path", MODULES, ids=rel)
def test_a_module_opens_with_one_sentence_that_says_its_job(path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc, f"{rel(path)} has no module docstring"
    first = doc.strip().split("\n\n")[0].replace("\n", " ").strip()
    # one sentence: no sentence boundary inside it, and it ends as a sentence does (or opens a list)
    assert not re.search(r"[.!?]\s+[A-Z`(*]", first), f"{rel(path)}: more than one sentence: {first!r}"
    assert re.search(r"[.:]$", first), f"{rel(path)}: {first!r} does not end as a sentence"


def module_map(design: str) -> set[str]:
    """The paths under specviz/ that the map in §2's first code block names, from the entries' indentation."""
    section = design[design.index("## 2. Layout") :]
    block = section[section.index("```") + 3 :]
    block = block[: block.index("```")]
    named, stack = set(), []  # stack: (indent, folder) of the enclosing entries
    for line in block.splitlines():
        m = ENTRY.match(line)
        if not m:
            continue
        indent, name = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([folder for _, folder in stack] + [name.rstrip("/")])
        if path.startswith("specviz/"):
            named.add(path)
        if name.endswith("/"):
            stack.append((indent, name.rstrip("/")))
    return named


def tree() -> set[str]:
    """Every module and package under specviz/ (a package by its folder; Alembic's revisions left out)."""
    return {rel(p.parent) if p.name == "__init__.py" else rel(p) for p in MODULES} - {"specviz"}


def test_module_map_reads_nested_entries():
    design = "## 2. Layout\n```\nspecviz/\n  core/             x\n    theory.py         y\n                      theory.py z\n```\n"
    assert module_map(design) == {"specviz/core", "specviz/core/theory.py"}


def test_the_module_map_in_the_design_matches_the_tree():
    named = module_map((ROOT / "docs" / "design.md").read_text(encoding="utf-8"))
    present = tree()
    assert sorted(present - named) == [], "in specviz/ but not in docs/design.md §2"
    assert sorted(named - present) == [], "in docs/design.md §2 but not in specviz/"

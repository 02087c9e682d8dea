"""Docstrings of specviz/core stay short: module, class and function docstrings are at most 10 % of its lines.

Docstrings state the formula, its source, units and shapes; narration and history belong in commit messages.
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "specviz" / "core"
MOST = 0.10  #: the largest share of docstring lines in specviz/core
_DEFS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstring_lines(source: str) -> int:
    """Lines of the module, class and function docstrings of ``source``, from opening to closing quotes."""
    lines = 0
    for node in ast.walk(ast.parse(source)):
        first = node.body[0] if isinstance(node, _DEFS) and node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            lines += first.end_lineno - first.lineno + 1
    return lines


def test_docstring_lines_count_every_definition_and_nothing_else():
    source = '"""Module."""\n\n\nclass A:\n    """Two\n    lines."""\n\n    def f(self):\n        x = "no docstring"\n'
    source += '        return x\n\n\nasync def g():\n    """One."""\n\n\ndef h():\n    pass  # """not one"""\n'
    assert docstring_lines(source) == 4


def test_docstrings_are_at_most_a_tenth_of_core():
    counts = {}
    for path in sorted(CORE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        counts[path.relative_to(CORE).as_posix()] = (docstring_lines(text), text.count("\n") + 1)
    assert len(counts) > 20, f"specviz/core not found at {CORE}"
    doc = sum(d for d, _ in counts.values())
    total = sum(n for _, n in counts.values())
    worst = sorted(counts, key=lambda p: counts[p][0] - MOST * counts[p][1], reverse=True)[:5]
    shown = ", ".join(f"{p} {counts[p][0]}/{counts[p][1]}" for p in worst)
    assert doc <= MOST * total, f"docstrings are {doc / total:.1%} of specviz/core's {total} lines; most over: {shown}"

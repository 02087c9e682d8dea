"""The tables of docs/measurement-schema.md, generated from the code between ``<!-- BEGIN GENERATED: name -->``
and ``<!-- END GENERATED: name -->`` (``python -m specviz.data.measurements.reference [--check]``)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from specviz.base.paths import DOCS
from specviz.data.measurements.aliases import ALIASES, SGLANG_ACCEPT_RATE, SGLANG_MARKERS, Conversion, normalise_header
from specviz.data.measurements.readers import READERS
from specviz.data.measurements.schema import (
    ACCEPTANCE_COLUMNS,
    ALLOWED,
    BENCH_COLUMNS,
    COLUMNS,
    DERIVED_COLUMNS,
    INTEGER_COLUMNS,
    UNITS,
    column_kind,
    output_column,
)

DOC = DOCS / "measurement-schema.md"
_BLOCK = re.compile(r"(<!-- BEGIN GENERATED: (\w+) -->\n)(.*?)(<!-- END GENERATED: \2 -->)", re.DOTALL)


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def column_type(name: str) -> str:
    kind = column_kind(name)
    if kind == "number":
        return "integer" if name == "k" or name in INTEGER_COLUMNS else "number"
    return {"text": "text", "bool": "boolean", "positions": "list of numbers (';')"}[kind]


def requirement(name: str) -> str:
    if name == "label":
        return "required (rows without one get the file's name)"
    if name == "k":
        return "required (or the caller's k=)"
    if name in ACCEPTANCE_COLUMNS:
        return "one of alpha, mean_accepted_tokens, acceptance_rate (or a speedup)"
    return "derived on load (a file's column is recomputed)" if name in DERIVED_COLUMNS else "optional"


def columns_block(columns: dict[str, str]) -> str:
    """One row per column: name, unit, type, allowed values, required or not, meaning."""
    rows = [
        (f"`{name}`", UNITS.get(name, ""), column_type(name), ALLOWED.get(name, ""), requirement(name), what)
        for name, what in columns.items()
    ]
    return _table(("column", "unit", "type", "allowed", "required", "meaning"), rows)


def aliases_block() -> str:
    """One table per canonical column: every header that becomes it, its normalised key, conversion, source."""
    families: dict[str, list] = {}
    for a in ALIASES:
        families.setdefault(output_column(a.column), []).append(a)
    parts = []
    for column, aliases in families.items():
        rows = [
            (f"`{a.header}`", f"`{normalise_header(a.header)[0]}`", str(a.conversion) or "—", a.source) for a in aliases
        ]
        parts.append(f"#### `{column}`\n\n" + _table(("header", "normalised", "conversion", "written by"), rows))
    markers = ", ".join(f"`{m}`" for m in sorted(SGLANG_MARKERS))
    parts.append(
        f"In a file that also has one of {markers}, `accept_rate` / `accept rate` is "
        f"{SGLANG_ACCEPT_RATE.source.split(' (')[0]}'s accept rate, not llama.cpp's: "
        f"`{output_column(SGLANG_ACCEPT_RATE.column)}` by {SGLANG_ACCEPT_RATE.conversion}.\n"
    )
    return "\n".join(parts)


def conversions_block() -> str:
    rows = []
    for conv in Conversion:
        if conv is Conversion.NONE:
            continue
        headers = ", ".join(f"`{a.header}`" for a in ALIASES if a.conversion is conv)
        when = "after the checks, where the canonical column is empty" if conv.deferred else "on read"
        rows.append((f"`{conv.name}`", str(conv), when, headers))
    return _table(("Conversion", "rule", "applied", "headers"), rows)


def readers_block() -> str:
    rows = [
        (
            f"`{r.name}`",
            r.title,
            ", ".join(f"`{s}`" for s in (r.name, *r.spellings)),
            r.rule,
            "yes" if r.needs_k else "no",
        )
        for r in READERS.values()
    ]
    return _table(("format", "input", "format= spellings", "detected when", "needs k="), rows)


BLOCKS: dict[str, Callable[[], str]] = {
    "columns": lambda: columns_block(COLUMNS),
    "bench_columns": lambda: columns_block(BENCH_COLUMNS),
    "derived_columns": lambda: columns_block(DERIVED_COLUMNS),
    "aliases": aliases_block,
    "conversions": conversions_block,
    "readers": readers_block,
}


def render(doc: str) -> str:
    """``doc`` with every generated block rewritten from the code (unknown block names raise ValueError)."""

    def one(m: re.Match) -> str:
        if m.group(2) not in BLOCKS:
            raise ValueError(f"generated block {m.group(2)!r} is not one of {sorted(BLOCKS)}")
        return m.group(1) + "\n" + BLOCKS[m.group(2)]() + "\n" + m.group(4)

    return _BLOCK.sub(one, doc)


def main(argv: list[str]) -> int:
    """Rewrite docs/measurement-schema.md (``--check``: exit 1 if it is not up to date)."""
    doc = DOC.read_text(encoding="utf-8")
    fresh = render(doc)
    if "--check" in argv:
        print(
            "up to date" if fresh == doc else f"{DOC} is out of date: run python -m specviz.data.measurements.reference"
        )
        return 0 if fresh == doc else 1
    DOC.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

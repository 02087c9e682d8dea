"""Every page's tables as a person reads them, in both languages: no "None" or "nan" cell, one unit per
column (a time under a second in ms), percentages with "%", integers with thousands separators, numbers
right-aligned (st.dataframe through ui.table, Markdown tables through ui.static_table)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from _apps import open_app
from _tiers import first_quick
from streamlit import dataframe_util

from specviz.data import measurements, store

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "samples" / "specviz_bench_bundled_cpu.csv"
#: each page's default view (Home through the router), and the views that hold its tables
VIEWS = [("app.py", {})] + [(p.relative_to(ROOT).as_posix(), {}) for p in sorted((ROOT / "pages").glob("*.py"))]
VIEWS = [v for v in VIEWS if v[0] != "pages/home.py"] + [
    ("pages/serving.py", {"view": "table"}),
    ("pages/strategies.py", {"view": "budget_depth"}),
    ("pages/strategies.py", {"view": "policies"}),
    ("pages/strategies.py", {"view": "ngram"}),
    ("pages/validation.py", {"view": "errors"}),
    ("pages/break-even.py", {"view": "chapter"}),
    ("pages/run-library.py", {"runs": "RUN"}),
    ("pages/compare-runs.py", {"runs": "RUN"}),
    ("pages/published-acceptance.py", {"runs": "RUN"}),
]
MISSING = {"none", "nan", "<na>", "nat", "null", ""}
_CELL = re.compile(r"(?P<sign>[-−+]?)(?P<num>[\d,]*\.?\d+(?:[eE][-+]?\d+)?)\s*(?P<unit>%|ms|s|×|x)?")
_PERCENT_WORDS = ("%", "|err|", "share", "within", "误差", "占比", "比例")


def number(cell: str) -> tuple[float, str | None] | None:
    """(value, unit) of a cell that shows one number, else None."""
    m = _CELL.fullmatch(cell.strip())
    if not m:
        return None
    return float(m["sign"].replace("−", "-") + m["num"].replace(",", "")), m["unit"]


def shown(value) -> str:
    """A cell as st.dataframe draws it without a Styler (a missing value reads "None" / "nan")."""
    return str(value)


def dataframes(at) -> list[tuple[list[str], list[list[str]], list[bool]]]:
    """(headings, rows of shown cells, right-aligned per column) of each st.dataframe / st.table."""
    out = []
    for element in [*at.dataframe, *at.table]:
        data = element.value
        styled = element.proto.arrow_data.styler.display_values
        cells = dataframe_util.convert_arrow_bytes_to_pandas_df(styled) if styled else data.map(shown)
        config = json.loads(element.proto.columns or "{}") if hasattr(element.proto, "columns") else {}
        heads, right = [], []
        for i, c in enumerate(data.columns):
            conf = config.get(str(c)) or config.get(f"_pos:{i}") or {}
            heads.append(conf.get("label") or str(c))
            numeric = pd.api.types.is_numeric_dtype(data[c]) and not pd.api.types.is_bool_dtype(data[c])
            right.append(conf.get("alignment") == "right" or (numeric and conf.get("alignment") in (None, "right")))
        out.append((heads, [[str(x) for x in row] for row in cells.itertuples(index=False)], right))
    return out


def markdown_tables(at) -> list[tuple[list[str], list[list[str]], list[bool]]]:
    out = []
    for element in at.markdown:
        lines = [line for line in str(element.value).splitlines() if line.startswith("|")]
        if len(lines) < 2 or not set(lines[1]) <= set("|-: "):
            continue
        split = [[c.strip().replace("\\", "") for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
        right = [spec.endswith(":") for spec in split[1]]
        out.append((split[0], split[2:], right))
    return out


def defects(heads: list[str], rows: list[list[str]], right: list[bool]) -> list[str]:
    """What a careful reader would object to in one table."""
    found = []
    for i, head in enumerate(heads):
        cells = [r[i] for r in rows]
        found += [f"{head!r}: cell {c!r}" for c in cells if c.strip().lower() in MISSING]
        parsed = [number(c) for c in cells if c.strip() not in ("—", "")]
        nums = [p for p in parsed if p is not None]
        if not nums or len(nums) < len(parsed):
            continue  # a text column
        units = {u for _, u in nums}
        if len(units) > 1:
            found.append(f"{head!r}: units {sorted(map(str, units))} in one column")
        if "(s)" in head and all(abs(v) < 1 for v, _ in nums):
            found.append(f"{head!r}: times under a second in s (ms elsewhere)")
        lowered = head.lower()
        fraction = units == {None} and all(0 <= v <= 1 for v, _ in nums) and any(v not in (0, 1) for v, _ in nums)
        if fraction and any(w in lowered for w in _PERCENT_WORDS):
            found.append(f"{head!r}: a percentage shown as a fraction ({cells[:3]})")
        found += [f"{head!r}: {c!r} in scientific notation" for c in cells if re.search(r"\d[eE][-+]?\d", c)]
        if not any(w in lowered for w in ("id", "#", "year", "seed")):
            found += [
                f"{head!r}: {c!r} without thousands separators" for c in cells if re.fullmatch(r"-?\d{4,}(\.\d+)?", c)
            ]
        if not right[i]:
            found.append(f"{head!r}: numbers not right-aligned")
    return found


def seeded(db_url: str) -> str:
    df, report = measurements.load_measurements(SAMPLE.read_text(encoding="utf-8"), name=SAMPLE.name)
    return str(store.save_run(store.open_library(db_url), df, label="bundled", source="test", report=report.summary()))


@pytest.mark.slow
@pytest.mark.parametrize("lang", first_quick(["en", "zh"]))
@pytest.mark.parametrize("page,query", VIEWS, ids=[p + "".join(f"-{v}" for v in q.values()) for p, q in VIEWS])
def test_every_table_reads_in_one_unit_per_column_with_no_empty_words(page, query, lang, db_url):
    if "RUN" in query.values():
        query = {k: seeded(db_url) if v == "RUN" else v for k, v in query.items()}
    at = open_app(page, timeout=180, lang=lang, **query)
    tables = dataframes(at) + markdown_tables(at)
    problems = [p for heads, rows, right in tables for p in defects(heads, rows, right)]
    assert not problems, problems


def test_the_checks_catch_each_defect():
    rows = [["None", "0.0072", "0.87", "54900", "5.49e+04", "12 ms"], ["nan", "0.0081", "0.6", "1", "2", "1.2 s"]]
    heads = ["name", "TPOT (s)", "within ±15 %", "GPUs", "count", "step"]
    found = defects(heads, rows, [False, True, True, True, True, True])
    assert len([f for f in found if "cell" in f]) == 2
    assert any("TPOT (s)" in f for f in found) and any("as a fraction" in f for f in found)
    assert any("thousands" in f for f in found) and any("scientific" in f for f in found)
    assert any("units" in f for f in found)
    assert not defects(["TPOT (ms)", "share"], [["7.2", "87.2 %"], ["—", "1,234.0 %"]], [True, True])

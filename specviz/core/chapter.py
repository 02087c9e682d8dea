"""The source chapter's printed numbers, and the same numbers recomputed live.

Printed values (``data/chapter/tables.json``, cited in ``data/chapter/README.md``): table §4.4 E[N],
table §5.3 speedup and exercise 2 (§9) of a study chapter on Leviathan et al. 2023 (arXiv 2211.17192),
kept digit for digit as strings; ``computed`` columns come from :mod:`specviz.core.theory`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from specviz.base.paths import DATA
from specviz.core import theory

#: The project's copy of the chapter's tables and exercise 2.
TABLES_PATH = DATA / "chapter" / "tables.json"


def _rows(tables: dict, key: str, columns: tuple[str, ...], where: str) -> list[list]:
    """The rows of table ``key``, or ValueError unless its columns are exactly ``columns``."""
    table = tables.get(key)
    if not isinstance(table, dict) or tuple(table.get("columns", ())) != columns:
        raise ValueError(f"{where}: {key} must have columns {list(columns)}; got {table!r:.120}")
    rows = table.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == len(columns) for r in rows):
        raise ValueError(f"{where}: {key}.rows must be lists of {len(columns)} values; got {rows!r:.120}")
    return rows


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} must be a number; got {value!r}")
    return float(value)


def _printed(value, where: str) -> str:
    """A printed value: a string holding a decimal number ("2.40"), kept as written."""
    if not isinstance(value, str) or not value.replace(".", "", 1).isdigit():
        raise ValueError(f'{where} must be a printed number in a string such as "2.40"; got {value!r}')
    return value


def load_tables(path: Path = TABLES_PATH) -> tuple[tuple, tuple, dict]:
    """``(TABLE_4_4, TABLE_5_3, EXERCISE_2)`` from ``path``; ValueError naming file, table and field if malformed."""
    name = Path(path).name
    tables = json.loads(Path(path).read_text(encoding="utf-8"))
    t44 = tuple(
        (
            _number(a, f"{name}: table_4_4 row {i} alpha"),
            int(_number(k, f"{name}: table_4_4 row {i} k")),
            _printed(e, f"{name}: table_4_4 row {i} expected_tokens"),
        )
        for i, (a, k, e) in enumerate(_rows(tables, "table_4_4", ("alpha", "k", "expected_tokens"), name))
    )
    t53 = tuple(
        (
            _number(a, f"{name}: table_5_3 row {i} alpha"),
            _number(c, f"{name}: table_5_3 row {i} c"),
            int(_number(k, f"{name}: table_5_3 row {i} k")),
            _printed(e, f"{name}: table_5_3 row {i} expected_tokens"),
            _printed(s, f"{name}: table_5_3 row {i} speedup"),
        )
        for i, (a, c, k, e, s) in enumerate(
            _rows(tables, "table_5_3", ("alpha", "c", "k", "expected_tokens", "speedup"), name)
        )
    )
    ex = tables.get("exercise_2") or {}
    ex2: dict[str, float | str] = {key: _number(ex.get(key), f"{name}: exercise_2.{key}") for key in ("alpha", "c")}
    for key in ("speedup_k4", "speedup_k8", "break_even_k4"):
        ex2[key] = _printed(ex.get(key), f"{name}: exercise_2.{key}")
    return t44, t53, ex2


_T44, _T53, _EX2 = load_tables()

#: §4.4 — (α, K, printed E[N]); printed to 2 decimals except 1.996 (α = 0.5, K = 8).
TABLE_4_4: tuple[tuple[float, int, str], ...] = _T44

#: §5.3 — (α, c, K, printed E[N], printed speedup).
TABLE_5_3: tuple[tuple[float, float, int, str, str], ...] = _T53

#: Exercise 2 — c = 8, α = 0.7: speedups at K = 4 and K = 8; break-even α for K = 4.
EXERCISE_2: dict[str, float | str] = _EX2


def decimals(printed: str) -> int:
    """Number of decimals a printed value carries ("1.996" -> 3)."""
    return len(printed.split(".")[1]) if "." in printed else 0


def rounds_to(value: float, printed: str) -> bool:
    """``value`` rounded to the printed decimals equals ``printed`` (half-ulp guard, so 2.4055 vs "2.40" rounds)."""
    d = decimals(printed)
    return abs(value - float(printed)) <= 0.5 * 10.0**-d + 1e-12


def table_4_4() -> pd.DataFrame:
    """Table §4.4 with the chapter's printed E[N] beside the computed one."""
    rows = []
    for alpha, k, printed in TABLE_4_4:
        e = float(theory.expected_tokens(alpha, k))
        rows.append({"α": alpha, "K": k, "E[N] chapter": printed, "E[N] computed": e, "matches": rounds_to(e, printed)})
    return pd.DataFrame(rows)


def table_5_3() -> pd.DataFrame:
    """Table §5.3 with the chapter's printed E[N] and speedup beside the computed ones."""
    rows = []
    for alpha, c, k, e_printed, s_printed in TABLE_5_3:
        e = float(theory.expected_tokens(alpha, k))
        s = float(theory.speedup(alpha, c, k))
        rows.append(
            {
                "α": alpha,
                "c": c,
                "K": k,
                "E[N] chapter": e_printed,
                "E[N] computed": e,
                "speedup chapter": s_printed,
                "speedup computed": s,
                "matches": rounds_to(e, e_printed) and rounds_to(s, s_printed),
            }
        )
    return pd.DataFrame(rows)


def exercise_2() -> pd.DataFrame:
    """Exercise 2: S(K=4), S(K=8) at α = 0.7, c = 8 and α* for K = 4, c = 8."""
    a, c = EXERCISE_2["alpha"], EXERCISE_2["c"]
    items = [
        ("speedup, K = 4", float(theory.speedup(a, c, 4)), EXERCISE_2["speedup_k4"]),
        ("speedup, K = 8", float(theory.speedup(a, c, 8)), EXERCISE_2["speedup_k8"]),
        ("break-even α, K = 4", float(theory.break_even_alpha(4, c)), EXERCISE_2["break_even_k4"]),
    ]
    return pd.DataFrame([{"quantity": q, "chapter": p, "computed": v, "matches": rounds_to(v, p)} for q, v, p in items])

"""The source chapter's printed numbers, and the same numbers recomputed live.

Source: ``shared/reference/chapter-01-acceptance-math.zh.txt`` (study chapter on
Leviathan et al. 2023, arXiv 2211.17192): table §4.4 (E[N]), table §5.3 (speedup)
and exercise 2 (§9). The printed values are the chapter's, digit for digit; the
``computed`` columns come from :mod:`specviz.theory`. Tests and the Break-even page
both read from here, so the comparison is made in one place.
"""

from __future__ import annotations

import pandas as pd

from specviz import theory

#: §4.4 — (α, K, printed E[N]); printed to 2 decimals except 1.996 (α = 0.5, K = 8).
TABLE_4_4: tuple[tuple[float, int, str], ...] = (
    (0.5, 4, "1.94"),
    (0.5, 8, "1.996"),
    (0.6, 4, "2.31"),
    (0.6, 8, "2.47"),
    (0.7, 4, "2.77"),
    (0.7, 8, "3.20"),
    (0.8, 4, "3.36"),
    (0.8, 8, "4.33"),
    (0.9, 4, "4.10"),
    (0.9, 8, "6.13"),
)

#: §5.3 — (α, c, K, printed E[N], printed speedup).
TABLE_5_3: tuple[tuple[float, float, int, str, str], ...] = (
    (0.8, 10.0, 4, "3.36", "2.40"),
    (0.8, 10.0, 8, "4.33", "2.40"),
    (0.9, 10.0, 8, "6.13", "3.40"),
    (0.6, 10.0, 4, "2.31", "1.65"),
    (0.8, 5.0, 4, "3.36", "1.87"),
)

#: Exercise 2 — c = 8, α = 0.7: speedups at K = 4 and K = 8; break-even α for K = 4.
EXERCISE_2 = {"alpha": 0.7, "c": 8.0, "speedup_k4": "1.85", "speedup_k8": "1.60", "break_even_k4": "0.34"}


def decimals(printed: str) -> int:
    """Number of decimals a printed value carries ("1.996" -> 3)."""
    return len(printed.split(".")[1]) if "." in printed else 0


def rounds_to(value: float, printed: str) -> bool:
    """True when ``value`` rounded to the printed number of decimals equals the printed value.

    Decimal-exact comparison with a half-ulp guard, so 2.4055 vs "2.40" is judged
    by rounding, not by float noise.
    """
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

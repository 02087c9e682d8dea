"""The columns computed on load from the checked rows (docs/design.md §1, §3).

* ``alpha_used``: ``alpha``; else α from E[N] = (1 − α^(K+1)) / (1 − α); else from r = (E[N] − 1) / K
  (:mod:`specviz.core.theory`'s monotone root-finds).
* ``c_used``: ``c`` (or 1 / c_L), else ``t_target_ms / t_draft_ms``;
  ``v`` = max(0, (t_verify_ms / t_target_ms − 1) / K) where the file has times but no v.
* ``predicted_speedup`` S = E[N]·c / (c + K); ``predicted_speedup_measured_cost`` = E[N] / (1 + v·K + o + K/c)
  (v or o known, the other 0); ``speedup_ratio`` = speedup / prediction.
* Tree rows (F = ``predicted_tokens_per_round``, D = ``tree_depth``): S = F / (1 + D/c) and
  F / (1 + v·K + o + D/c) (:func:`specviz.core.theory.speedup_from_tokens`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.base.i18n import Phrase
from specviz.core import theory
from specviz.data.measurements.checks import CheckedTable
from specviz.data.measurements.report import LoadReport
from specviz.data.measurements.schema import (
    BENCH_COLUMNS,
    COLUMNS,
    DERIVED_COLUMNS,
    INTEGER_COLUMNS,
    TEXT_COLUMNS,
    column_kind,
)

#: Where alpha_used comes from, in order of preference, with the recovery α = f(value, K) (None: as is).
ALPHA_SOURCES = (
    ("alpha", None),
    ("mean_accepted_tokens", theory.alpha_from_mean_tokens),
    ("acceptance_rate", theory.alpha_from_acceptance_rate),
)


def derive(checked: CheckedTable, report: LoadReport) -> pd.DataFrame:
    """The DataFrame of the valid rows with alpha_used, c_used, v, predictions and the ratio."""
    keep = checked.keep
    v = {name: arr[keep] for name, arr in checked.values.items()}
    t = {name: [x for x, ok in zip(col, keep, strict=True) if ok] for name, col in checked.text.items()}
    m = int(keep.sum())
    k = v["k"].astype(np.int64)  # (m,)
    alpha, alpha_source = alpha_used(v, k, m)
    c, c_source = c_used(v, checked.c_from_c_l[keep], m)
    vv, computed = verify_cost(v, k, m)
    if computed.any():
        v["v"] = vv
        report.conversions.append(
            Phrase("v = max(0, (t_verify_ms / t_target_ms − 1) / K) for {rows} row(s)", rows=int(computed.sum()))
        )
    pred, pred_mc, ratio = predictions(alpha, c, k, vv, _get(v, "o", m), _get(v, "speedup", m))
    tree_predictions(pred, pred_mc, ratio, c, k, vv, _get(v, "o", m), v, m)
    derived = {
        "alpha_used": alpha,
        "alpha_source": pd.array(list(alpha_source), dtype="str"),
        "c_used": c,
        "c_source": pd.array(list(c_source), dtype="str"),
        "predicted_speedup": pred,
        "predicted_speedup_measured_cost": pred_mc,
        "speedup_ratio": ratio,
    }
    index = pd.Index([r for r, ok in zip(checked.rows, keep, strict=True) if ok], name="row", dtype="int64")
    return pd.DataFrame({**output_columns(v, t, k, m), **derived}, index=index)


def _get(v: dict[str, np.ndarray], name: str, m: int) -> np.ndarray:
    return v[name] if name in v else np.full(m, np.nan)


def alpha_used(v: dict[str, np.ndarray], k: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(α (m,), source column (m,) object): the first of :data:`ALPHA_SOURCES` present in each row."""
    alpha, source = np.full(m, np.nan), np.full(m, None, dtype=object)
    for name, recover in ALPHA_SOURCES:
        given = _get(v, name, m)
        idx = np.flatnonzero(np.isnan(alpha) & ~np.isnan(given))
        if idx.size:
            alpha[idx] = given[idx] if recover is None else recover(given[idx], k[idx])
            source[idx] = name
    return alpha, source


def c_used(v: dict[str, np.ndarray], c_from_c_l: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(c (m,), source (m,) object): c (or 1 / c_L) if given, else t_target_ms / t_draft_ms; NaN if not > 0."""
    c, source = np.full(m, np.nan), np.full(m, None, dtype=object)
    given = ~np.isnan(_get(v, "c", m))
    c[given] = _get(v, "c", m)[given]
    source[given] = np.where(c_from_c_l[given], "1 / c_L", "c")
    with np.errstate(all="ignore"):
        times = _get(v, "t_target_ms", m) / _get(v, "t_draft_ms", m)
        from_times = np.isnan(c) & np.isfinite(times)
        c[from_times] = times[from_times]
        source[from_times] = "t_target_ms / t_draft_ms"
        bad = ~(np.isfinite(c) & (c > 0))  # a ratio of extreme times can overflow
    c[bad], source[bad] = np.nan, None
    return c, source


def verify_cost(v: dict[str, np.ndarray], k: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(v (m,), rows where it was computed): the file's v, else max(0, (t_verify_ms / t_target_ms − 1) / K)."""
    vv = _get(v, "v", m).copy()
    with np.errstate(all="ignore"):
        ratio = _get(v, "t_verify_ms", m) / _get(v, "t_target_ms", m)
        computed = np.isnan(vv) & np.isfinite(ratio)
        vv[computed] = np.maximum(0.0, (ratio - 1.0)[computed] / k[computed])
    vv[~np.isfinite(vv)] = np.nan
    return vv, computed


def predictions(
    alpha: np.ndarray, c: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray, speedup: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S = E[N]·c / (c + K), S = E[N] / (1 + v·K + o + K/c), their ratio), each (m,); NaN where inputs are missing."""
    ok = ~np.isnan(alpha) & ~np.isnan(c)
    pred, pred_mc = np.full(len(alpha), np.nan), np.full(len(alpha), np.nan)
    with np.errstate(all="ignore"):
        if ok.any():
            pred[ok] = theory.speedup(alpha[ok], c[ok], k[ok])
        cost = ok & (~np.isnan(v) | ~np.isnan(o))
        if cost.any():
            pred_mc[cost] = theory.speedup(
                alpha[cost], c[cost], k[cost], np.nan_to_num(v[cost]), np.nan_to_num(o[cost])
            )
        ratio = speedup / pred
    ratio[~np.isfinite(ratio)] = np.nan
    return pred, pred_mc, ratio


def tree_predictions(
    pred: np.ndarray,
    pred_mc: np.ndarray,
    ratio: np.ndarray,
    c: np.ndarray,
    k: np.ndarray,
    vv: np.ndarray,
    o: np.ndarray,
    v: dict[str, np.ndarray],
    m: int,
) -> None:
    """Overwrite the predictions (m,) of tree rows in place with F / (1 + v·K + o + D/c) (module docstring)."""
    f, depth = _get(v, "predicted_tokens_per_round", m), _get(v, "tree_depth", m)
    rows = ~np.isnan(f) & ~np.isnan(depth) & ~np.isnan(c)
    if not rows.any():
        return
    f, depth, c, k = f[rows], depth[rows].astype(np.int64), c[rows], k[rows]
    pred[rows] = theory.speedup_from_tokens(f, c, k, draft_steps=depth)
    cost = ~np.isnan(vv[rows]) | ~np.isnan(o[rows])
    pred_mc[rows] = np.where(
        cost, theory.speedup_from_tokens(f, c, k, np.nan_to_num(vv[rows]), np.nan_to_num(o[rows]), depth), np.nan
    )
    speedup = _get(v, "speedup", m)[rows]
    with np.errstate(all="ignore"):
        ratio[rows] = np.where(np.isfinite(speedup / pred[rows]), speedup / pred[rows], np.nan)


def output_columns(v: dict[str, np.ndarray], t: dict[str, list], k: np.ndarray, m: int) -> dict[str, object]:
    """Every canonical column (empty where the file has none), then the bench columns the file has, typed."""
    data: dict[str, object] = {}
    for name in (*COLUMNS, *BENCH_COLUMNS):
        if name in DERIVED_COLUMNS:
            continue
        if name in t:
            data[name] = pd.array(t[name], dtype="boolean" if column_kind(name) == "bool" else "str")
        elif name == "k":
            data[name] = k
        elif name in INTEGER_COLUMNS and name in v:
            data[name] = pd.array([None if np.isnan(x) else int(x) for x in v[name]], dtype="Int64")
        elif name in v:
            data[name] = v[name]
        elif name in COLUMNS:  # every canonical column is always there (empty when the file lacks it)
            data[name] = pd.array([None] * m, dtype="str") if name in TEXT_COLUMNS else np.full(m, np.nan)
    return data

"""Which profiles predict the published rows, the error targets, and the tables that score them.

Predictors: ``loso`` held out, leave-one-source-out (``published.load_predictions``, written by
``benchmarks/validation_bench.py``); ``shipped`` the profiles of ``data/catalog/profiles.csv`` fitted
on every row (in-sample); ``default`` the default roofline profile (``profiles.DEFAULT_EFFICIENCY``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core import profiles, published, regimes
from specviz.core.profiles import DEFAULT_EFFICIENCY

PREDICTORS = ("loso", "shipped", "default")  #: who predicts the published rows (slugs: a link names them)
KINDS_SCORED = ("speedup", "step")
WITHIN = 0.15  #: the band of :func:`specviz.core.published.errors`' within_15: |predicted / measured − 1| ≤ 15 %
#: the targets as benchmarks/validation_bench.py states them (issue 31): (kind, statistic, at most / at least, bound)
TARGETS = (
    ("speedup", "median_abs_err", "max", 0.10),
    ("speedup", "within_15", "min", 0.75),
    ("step", "median_abs_err", "max", 0.15),
)


def published_rows() -> pd.DataFrame:
    frame = published.load_measurements()
    return frame[published.priceable(frame)]


def _profile_for(which: str):
    """row -> Efficiency of predictor ``which`` for rows outside the published fit: default, or the stack's profile."""
    if which == "default":
        return lambda row: DEFAULT_EFFICIENCY
    return lambda row: profiles.profile_for(row["stack"])


def inputs_stamp() -> str:
    """Paths and mtimes of the measurements, profile catalogue and predictions file (a cache key)."""
    parts = []
    for path in (published.MEASUREMENTS, profiles.PROFILES_CSV, Path(published.PREDICTIONS)):
        parts.append(f"{path}@{path.stat().st_mtime_ns if path.exists() else 'absent'}")
    return "|".join(parts)


def predictions(which: str) -> pd.DataFrame:
    """Priceable published rows with measured, predicted, ratio and regime (:mod:`specviz.core.regimes`) by
    ``which`` (loso: + profile_from); Message else."""
    if which not in PREDICTORS:
        raise Message("predictor must be one of {allowed}; got {value!r}", allowed=", ".join(PREDICTORS), value=which)
    if which == "loso":
        if not Path(published.PREDICTIONS).exists():
            raise Message(
                "the held-out predictions are not written yet: run python benchmarks/validation_bench.py, or choose another predictor"
            )
        table = published.load_predictions(published.PREDICTIONS)
        rows = published_rows()
        index = pd.Series(rows.index, index=rows["row_id"])  # the published rows' own index, as the others have
        table = table[table["row_id"].isin(index.index)]
        table.index = pd.Index(table["row_id"].map(index).to_numpy(), name=rows.index.name)
        return table.assign(predicted=table["loso_predicted"], ratio=table["loso_predicted"] / table["measured"])
    rows = published_rows()
    return published.predict(rows, _profile_for(which)).assign(regime=published.regime_keys(rows))


def predict_yours(rows: pd.DataFrame, which: str) -> pd.DataFrame:
    """Your rows priced as ``which`` prices a new source (default, or the stack's catalogue profile)."""
    return published.predict(rows, _profile_for(which))


def keep(frame: pd.DataFrame, stacks_kept: list[str], sources_kept: list[str]) -> pd.DataFrame:
    """The rows of the stacks and sources kept (an empty list keeps all)."""
    mask = pd.Series(True, index=frame.index)
    if stacks_kept:
        mask &= frame["stack"].isin(stacks_kept)
    if sources_kept:
        mask &= frame["source_id"].isin(sources_kept)
    return frame[mask]


def names_in(text: str) -> list[str]:
    return [s.strip() for s in str(text).split(",") if s.strip()]


#: the columns of :func:`per_row`: what identifies a published row, then its prices
ROW_COLUMNS = ("row_id", "kind", "stack", "source_id", "target", "draft", "method", "gpu", "tp", "dtype", "batch")


def per_row(chosen: pd.DataFrame, default: pd.DataFrame) -> pd.DataFrame:
    """One row per published row: :data:`ROW_COLUMNS`, measured, predicted, ratio, source, and the default's."""
    table = chosen[[*ROW_COLUMNS, "measured", "predicted", "ratio", "source"]]
    return table.assign(default_predicted=default["predicted"], default_ratio=default["ratio"])


def regime_errors(chosen: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per kind ("speedup", "step"): :func:`specviz.core.regimes.summary` of the chosen predictions, most rows first."""
    out = {}
    for kind in KINDS_SCORED:
        rows = chosen[chosen["kind"] == kind]
        cells = rows["regime"].map(regimes.Regime.from_key)
        table = regimes.summary(pd.DataFrame({"regime": cells, "ratio": rows["ratio"], "source_id": rows["source_id"]}))
        out[kind] = table.sort_values(["rows", "median_abs_err"], ascending=[False, True])
    return out


def verdicts(errors: pd.DataFrame) -> pd.DataFrame:
    """Each of :data:`TARGETS` against ``errors``: value, bound, at_most, passed (None: no such kind)."""
    out = []
    for kind, stat, side, bound in TARGETS:
        value = float(errors.loc[kind, stat]) if kind in errors.index else np.nan
        passed = None if value != value else bool(value <= bound if side == "max" else value >= bound)
        out.append(dict(kind=kind, statistic=stat, value=value, bound=bound, at_most=side == "max", passed=passed))
    return pd.DataFrame(out)


def side_by_side(chosen: pd.DataFrame, default: pd.DataFrame, by: str) -> pd.DataFrame:
    """``published.errors`` per ``by`` for the chosen predictor beside the default profile's."""
    mine = published.errors(chosen, by)
    base = published.errors(default.loc[default.index.intersection(chosen.index)], by)
    base = base[["median_abs_err", "within_15"]].add_prefix("default_")
    return mine.join(base, how="left").reset_index()

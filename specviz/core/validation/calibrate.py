"""A profile fitted to your rows, and how it compares with the profile it started from."""

from __future__ import annotations

import pandas as pd

from specviz.base.i18n import Message
from specviz.core import profiles, published
from specviz.core.profiles import Efficiency


def calibrate(rows: pd.DataFrame, base: Efficiency) -> tuple[Efficiency, pd.DataFrame]:
    """(profile fitted to ``rows`` from ``base``, 4 significant digits; rows with its and base's predicted/ratio)."""
    if rows.empty:
        raise Message("there are no valid rows of yours to fit a profile to")
    fitted = profiles.decode_terms(profiles.encode_terms(published.fit_profile(rows, prior=base), digits=4))
    mine = published.predict(rows, dict.fromkeys(rows["stack"].unique(), fitted))
    base_pred = published.predict(rows, dict.fromkeys(rows["stack"].unique(), base))
    return fitted, mine.assign(base_predicted=base_pred["predicted"], base_ratio=base_pred["ratio"])


def fit_errors(table: pd.DataFrame) -> dict[str, float]:
    """Median |predicted / measured − 1| of :func:`calibrate`'s table by ``base`` and ``fitted``."""
    return {
        "base": float((table["base_ratio"] - 1).abs().median()),
        "fitted": float((table["ratio"] - 1).abs().median()),
    }


def fit_summary(rows: pd.DataFrame) -> dict:
    """What a fitted profile was fitted on, as ``store.save_profile`` stores it: targets, GPUs, n_rows."""
    return {
        "target": ", ".join(sorted(rows["target"].unique())),
        "gpu": ", ".join(sorted(rows["gpu"].unique())),
        "n_rows": len(rows),
    }


def terms_table(fitted: Efficiency, base: Efficiency) -> pd.DataFrame:
    """Every term of the fitted profile beside the base's: term, fitted, base, changed."""
    names = profiles.TERMS
    return pd.DataFrame(
        {
            "term": names,
            "fitted": [getattr(fitted, n) for n in names],
            "base": [getattr(base, n) for n in names],
            "changed": [getattr(fitted, n) != getattr(base, n) for n in names],
        }
    )

"""The band around a predicted number: the held-out errors of the prediction's own regime.

``data/validation/predictions.csv`` (``benchmarks/validation_bench.py --write-profiles``) holds, per published
row, the ratio predicted / measured of each predictor and the row's regime (:mod:`specviz.core.regimes`).
A profile's band in a regime is the 10–90 % range of those ratios; the number a page shows is unchanged and
the band is the hull of it and point / hi … point / lo, so the point always lies inside.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core import profiles, regimes

KINDS = ("step", "speedup")
EVERY = "every-stack"  #: :func:`held_out`'s name for every row, each in its own engine (no profile has it)


@cache
def _predictions(path: str) -> pd.DataFrame | None:
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError):
        return None
    return frame if "regime" in frame else None


def reload() -> None:
    """Forget the predictions read so far (after ``validation_bench.py --write-profiles`` rewrote them)."""
    _predictions.cache_clear()
    held_out.cache_clear()


def engine_for(name: str) -> str:
    """The engine part of the regime profile ``name``'s predictions fall in: a stack's own engine family,
    HF eager for the eager family, else :data:`regimes.ANY` (the roofline default, the compiled family, a
    profile of your own: tied to no one engine)."""
    if name == "eager":
        return "hf-eager"
    if name in (profiles.DEFAULT_PROFILE, "compiled") or name not in profiles.profile_names():
        return regimes.ANY
    return regimes.engine_of(name)


@cache
def held_out(name: str, kind: str, path: str = str(profiles.PREDICTIONS_CSV)) -> pd.DataFrame | None:
    """:func:`regimes.summary` of the held-out ratios that stand for profile ``name``'s ``kind`` predictions: the
    default roofline's own (it is fitted on nothing), else leave-one-source-out; rows of the compiled family
    for the compiled profile; the engine part :data:`regimes.ANY` where :func:`engine_for` says so."""
    if kind not in KINDS:
        raise Message("kind must be 'step' or 'speedup'; got {value!r}", value=kind)
    frame = _predictions(path)
    if frame is None:
        return None
    frame = frame[frame["kind"] == kind]
    column = "default_predicted" if name == profiles.DEFAULT_PROFILE else "loso_predicted"
    if name == "compiled":
        frame = frame[frame["stack"].map(profiles.family) == "compiled"]
    if frame.empty:
        return None
    cells = frame["regime"].map(regimes.Regime.from_key)
    if name != EVERY and engine_for(name) == regimes.ANY:
        cells = cells.map(lambda r: regimes.Regime(regimes.ANY, r.draft, r.target, r.load))
    ratios = pd.DataFrame(
        {"regime": cells, "ratio": frame[column] / frame["measured"], "source_id": frame["source_id"]}
    )
    return regimes.summary(ratios)


def band_for(
    name: str, kind: str, method, moe: bool, batch, request_rate=None, path: Path = profiles.PREDICTIONS_CSV
) -> regimes.Band | None:
    """The band of profile ``name``'s ``kind`` prediction for a setup drafting with ``method`` ("none" for a plain
    step) on a dense or MoE target at ``batch`` (or an open-loop ``request_rate``); None without predictions."""
    table, every = held_out(name, kind, str(path)), held_out(EVERY, kind, str(path))
    if table is None:
        table = every
    if table is None:
        return None
    draft = "none" if kind == "step" else method
    load = regimes.load_of(batch, request_rate)
    r = regimes.Regime(engine_for(name), regimes.draft_of(draft), "moe" if moe else "dense", load)
    return regimes.band(r, table, every)


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its band; ``low ≤ point ≤ high`` by construction (:func:`estimate`)."""

    point: float | np.ndarray  #: the prediction every chart draws, unchanged
    low: float | np.ndarray
    high: float | np.ndarray
    band: regimes.Band
    bias: float | None = None  #: median measured / predicted − 1 where the whole range lies on one side, else None


def estimate(point, band: regimes.Band) -> Estimate:
    """``point`` (scalar or array, > 0) with the hull of itself and point / ``band.hi`` … point / ``band.lo``
    (ratios predicted / measured: the range of measured given this prediction)."""
    as_given = (lambda x: np.asarray(x, dtype=float)) if np.ndim(point) else float
    point = as_given(point)
    lo, hi = sorted((float(band.lo), float(band.hi)))
    low, high = as_given(np.minimum(point, point / hi)), as_given(np.maximum(point, point / lo))
    one_sided = band.validated and (hi < 1 or lo > 1)  # every held-out row measured above (below) its prediction
    bias = 1.0 / float(band.median) - 1.0 if one_sided else None
    return Estimate(point, low, high, band, bias)

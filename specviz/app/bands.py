"""A predicted number's band on a page: its regime's held-out range, in words and as a shaded area.

The band is :func:`specviz.core.bands.band_for` of the profile that priced the number, the drafting method,
whether the target is a mixture of experts and the load; the words say which regime it is, and where the
regime is unvalidated, that it is, with the nearest validated one.
"""

from __future__ import annotations

import numpy as np

from specviz.app import ui
from specviz.core import bands, regimes


def estimate(profile: str, kind: str, point: float, method: str, moe: bool, batch, rate=None) -> bands.Estimate | None:
    """``point`` (``kind`` "step" or "speedup") at ``batch`` (or request ``rate``) inside its regime's band."""
    b = bands.band_for(profile, kind, method, moe, batch, rate)
    return None if b is None else bands.estimate(point, b)


def shade(profile: str, kind: str, points, batches, method: str, moe: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """(low, high) of each of ``points`` at its batch, each in its own batch's regime; None without bands."""
    points = np.asarray(points, dtype=float)
    low, high = points.copy(), points.copy()
    for i, (p, b) in enumerate(zip(points, np.asarray(batches), strict=True)):
        e = estimate(profile, kind, float(p), method, moe, int(b))
        if e is None:
            return None
        low[i], high[i] = e.low, e.high
    return low, high


def text(e: bands.Estimate, fmt: str) -> str:
    """What a measurement typically is beside the prediction, in which regime, and the held-out bias."""
    b = e.band
    fields = dict(low=fmt.format(e.low), high=fmt.format(e.high), n=b.rows, regime=regimes.label(b.regime, ui.t))
    if not b.validated:
        return ui.t(
            "Unvalidated regime ({regime}): {n} held-out published rows, fewer than {least}. Shown: the widest validated band, {low} to {high}. Nearest validated regime: {nearest}.",
            least=regimes.MIN_ROWS,
            nearest=regimes.label(b.nearest, ui.t),
            **fields,
        )
    said = ui.t(
        "Measured is typically between {low} and {high}: the 10–90 % range of {n} held-out published rows in this regime ({regime}).",
        **fields,
    )
    if e.bias is None:
        return said
    share = f"{abs(e.bias):.0%}"
    if e.bias > 0:
        return said + " " + ui.t("Held-out rows measured {share} above the prediction (median).", share=share)
    return said + " " + ui.t("Held-out rows measured {share} below the prediction (median).", share=share)


def note(profile: str, kind: str, point: float, fmt: str, method: str, moe: bool, batch, rate=None) -> str | None:
    """The caption of ``point``'s band under its metric, or None without a band."""
    e = estimate(profile, kind, point, method, moe, batch, rate)
    return None if e is None else text(e, fmt)

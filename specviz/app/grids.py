"""Grids over the design space, as plain arrays and tidy DataFrames (no streamlit).

The pages cache these (``ui.cached``); :mod:`specviz.app.figures` draws them; the CSV downloads
are :func:`tidy` of the same arrays, so what you download is what you see.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.core import theory

#: The two conventions for the speed ratio: key -> axis label.
C_CONVENTIONS = {
    "c": "c = T_target / T_draft",
    "c_L": "c_L = T_draft / T_target (Leviathan)",
}


def to_c(x, convention: str) -> np.ndarray:
    """Our c from a value in ``convention`` ("c" is identity, "c_L" is 1/x)."""
    if convention not in C_CONVENTIONS:
        raise Message(
            "convention must be one of {allowed}; got {value!r}", allowed=list(C_CONVENTIONS), value=convention
        )
    return np.asarray(x, float) if convention == "c" else theory.c_from_leviathan(x)


def from_c(c, convention: str) -> np.ndarray:
    """A value of c expressed in ``convention`` (inverse of :func:`to_c`)."""
    return to_c(c, convention)  # both maps are involutions


def log_axis(lo: float, hi: float, n: int, name: str) -> np.ndarray:
    """``n`` log-spaced points from lo to hi (both > 0, lo < hi)."""
    lo = float(theory.check_positive(lo, Phrase("{name} min", name=name)))
    hi = float(theory.check_positive(hi, Phrase("{name} max", name=name)))
    if not lo < hi:
        raise Message("{name} min must be below {name} max; got {lo:g} and {hi:g}", name=name, lo=lo, hi=hi)
    return np.geomspace(lo, hi, n)


def lin_axis(lo: float, hi: float, n: int, name: str) -> np.ndarray:
    """``n`` evenly spaced points from lo to hi (lo < hi)."""
    if not lo < hi:
        raise Message("{name} min must be below {name} max; got {lo:g} and {hi:g}", name=name, lo=lo, hi=hi)
    return np.linspace(lo, hi, n)


@dataclass(frozen=True)
class Grid:
    """A 2-D grid z[y, x] with named axes (shape ``(len(y), len(x))``)."""

    x: np.ndarray  # (nx,)
    y: np.ndarray  # (ny,)
    z: np.ndarray  # (ny, nx)
    x_name: str
    y_name: str
    z_name: str

    def tidy(self) -> pd.DataFrame:
        """Long format: one row per grid point, columns x_name, y_name, z_name."""
        xx, yy = np.meshgrid(self.x, self.y)
        return pd.DataFrame({self.x_name: xx.ravel(), self.y_name: yy.ravel(), self.z_name: self.z.ravel()})

    def downsampled(self, max_points: int) -> Grid:
        """Every n-th point per axis so that each axis has at most ``max_points`` (keeps the ends)."""
        ix = thin(len(self.x), max_points)
        iy = thin(len(self.y), max_points)
        return Grid(self.x[ix], self.y[iy], self.z[np.ix_(iy, ix)], self.x_name, self.y_name, self.z_name)


def level_crossing(grid: Grid, level: float = 1.0) -> np.ndarray:
    """For each row y_j, the x where z[j, :] first rises through ``level``; NaN where it never does.

    Between neighbours with z_i ≤ level < z_(i+1) the crossing is interpolated linearly:
    x = x_i + (level − z_i) (x_(i+1) − x_i) / (z_(i+1) − z_i). For a grid increasing in x along
    each row (the speedup over α at any fixed c and K, and its maximum over K) this is the
    whole ``z = level`` line, e.g. the break-even α* of each row for ``level = 1``.

    Returns
    -------
    np.ndarray
        Shape ``(len(y),)``, float64.
    """
    d = np.asarray(grid.z, float) - level  # (ny, nx)
    up = (d[:, :-1] <= 0.0) & (d[:, 1:] > 0.0)  # (ny, nx - 1), NaN compares False
    i = up.argmax(axis=1)  # (ny,) first rise, 0 where none
    rows = np.arange(d.shape[0])
    d0, d1 = d[rows, i], d[rows, i + 1]
    x = np.asarray(grid.x, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        cross = x[i] + (x[i + 1] - x[i]) * (-d0) / (d1 - d0)
    return np.where(up.any(axis=1), cross, np.nan)


def thin(n: int, max_points: int) -> np.ndarray:
    """(≤ max_points,) indices into ``n`` points, evenly spaced, keeping the first and the last."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(int))


def expected_tokens_grid(alpha: np.ndarray, ks: np.ndarray) -> Grid:
    """E[N] over α (x) × K (y)."""
    z = theory.expected_tokens(alpha[None, :], ks[:, None])  # (nK, nα)
    return Grid(alpha, ks, z, "alpha", "k", "expected_tokens")


def speedup_alpha_c_grid(alpha, c_values, convention: str, k: int, v: float, o: float) -> Grid:
    """Speedup over α (x) × c (y, in ``convention``) at fixed K."""
    c = to_c(c_values, convention)
    z = theory.speedup(alpha[None, :], c[:, None], k, v, o)  # (nc, nα)
    return Grid(alpha, np.asarray(c_values, float), z, "alpha", convention, "speedup")


def speedup_alpha_k_grid(alpha, ks, c: float, v: float, o: float) -> Grid:
    """Speedup over α (x) × K (y) at fixed c."""
    z = theory.speedup(alpha[None, :], c, ks[:, None], v, o)  # (nK, nα)
    return Grid(alpha, ks, z, "alpha", "k", "speedup")


def break_even_grid(ks, c_values, convention: str, v: float, o: float) -> Grid:
    """α*(K, c) over K (x) × c (y, in ``convention``); NaN where speculation never pays."""
    c = to_c(c_values, convention)
    z = theory.break_even_alpha(ks[None, :], c[:, None], v, o)  # (nc, nK)
    return Grid(np.asarray(ks), np.asarray(c_values, float), z, "k", convention, "break_even_alpha")


def optimal_k_grids(alpha, c_values, convention: str, k_max: int, v: float, o: float) -> tuple[Grid, Grid]:
    """K*(α, c) and S(K*) over α (x) × c (y, in ``convention``)."""
    c = to_c(c_values, convention)
    best = theory.optimal_k(alpha[None, :], c[:, None], k_max, v, o)  # (nc, nα) each
    cv = np.asarray(c_values, float)
    return (
        Grid(alpha, cv, best.k, "alpha", convention, "optimal_k"),
        Grid(alpha, cv, best.speedup, "alpha", convention, "speedup_at_optimal_k"),
    )

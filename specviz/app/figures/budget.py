"""The budget of what one figure sends to the browser: :func:`within_budget` thins a figure of more
than :data:`MAX_POINTS` values evenly (``ui.chart`` applies it to every chart)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specviz.app.grids import thin

# --------------------------------------------------------------------------------------
# the budget of what one figure sends to the browser
# --------------------------------------------------------------------------------------

#: Most values one figure sends to the browser: points of its traces, or cells of a heatmap / surface.
#: Every chart of the app stays below it with its own data (the largest, a design-space heatmap, draws
#: ~24,000); an upload or a long recording that would exceed it is thinned by :func:`within_budget`.
MAX_POINTS = 50_000
_PER_POINT = ("x", "y", "text", "hovertext", "customdata", "ids", "lat", "lon", "values", "labels")
_PER_POINT_NESTED = (("marker", "color"), ("marker", "size"), ("error_x", "array"), ("error_y", "array"))


def _size(value) -> int:
    """How many points an array-like property holds (0 for a scalar or None)."""
    if value is None or isinstance(value, str | bytes | dict):
        return 0
    try:
        return len(value)
    except TypeError:
        return 0


def _get(trace, *path):
    """The property at ``path`` of a plotly trace (None where the trace type has no such property)."""
    value = trace
    for name in path:
        if value is None or name not in value:
            return None
        value = value[name]
    return value


def trace_points(trace) -> int:
    """Values a plotly trace draws: the cells of its ``z`` where it has one (heatmap, contour,
    surface), else the length of its longest per-point array."""
    z = _get(trace, "z")
    if _size(z):
        return sum(max(_size(row), 1) for row in z)
    return max((_size(_get(trace, name)) for name in _PER_POINT), default=0)


def point_count(fig: go.Figure) -> int:
    """Values the figure sends to the browser (:func:`trace_points` summed over its traces)."""
    return sum(trace_points(t) for t in fig.data)


def _taken(value, index: np.ndarray, n: int):
    """``value`` at ``index`` when it is an array of one entry per point (length ``n``), else as it is."""
    if _size(value) != n:
        return value
    return (value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object))[index]


def _thinned(trace, share: float):
    """A copy of ``trace`` keeping about ``share`` of its values, evenly spaced (first and last kept)."""
    out = type(trace)(trace)
    z = _get(trace, "z")
    if _size(z) and np.ndim(np.asarray(z, dtype=object)) == 2:  # a grid: thin both axes by √share
        rows, cols = np.shape(np.asarray(z, dtype=object))
        iy, ix = thin(rows, max(2, int(rows * share**0.5))), thin(cols, max(2, int(cols * share**0.5)))
        out.update(z=np.asarray(z)[np.ix_(iy, ix)])
        out.update(x=_taken(_get(trace, "x"), ix, cols), y=_taken(_get(trace, "y"), iy, rows))
        for name in ("customdata", "text", "hovertext"):
            if _size(_get(trace, name)) == rows:
                out.update({name: np.asarray(trace[name], dtype=object)[np.ix_(iy, ix)]})
        return out
    n = trace_points(trace)
    index = thin(n, max(2, int(n * share)))
    out.update({name: _taken(_get(trace, name), index, n) for name in _PER_POINT if _size(_get(trace, name)) == n})
    for path in _PER_POINT_NESTED:
        if _size(_get(trace, *path)) == n:
            out.update({path[0]: {path[1]: _taken(_get(trace, *path), index, n)}})
    return out


def within_budget(fig: go.Figure, most: int = MAX_POINTS) -> tuple[go.Figure, int, int]:
    """(figure, values it had, values it sends): ``fig`` itself when it sends at most ``most`` values,
    else a copy whose every trace keeps the same share of its values, evenly spaced (first and last
    kept; a grid keeps √share of each axis), so that the browser receives at most ``most``."""
    total = point_count(fig)
    if total <= most:
        return fig, total, total
    share = most / total
    thinned = go.Figure(data=[_thinned(t, share) for t in fig.data], layout=fig.layout)
    return thinned, total, point_count(thinned)

"""The design-space and break-even figures: grids of E[N], speedup, break-even α and K* (heatmaps and
surfaces), their axes and hover templates, the S = 1 line, the pmf of N, f(K) and the metric conversions."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from specviz.app.grids import Grid, level_crossing
from specviz.base.i18n import N_, text

#: The grid variables that have an axis title (:data:`AXIS_TITLES` holds each one's msgid).
AXES = ("alpha", "k", "c", "c_L", "expected_tokens", "speedup", "break_even_alpha", "optimal_k", "speedup_at_optimal_k")


AXIS_TITLES = {
    "alpha": N_("α (per-token acceptance)"),
    "break_even_alpha": N_("break-even α*"),
    "c": N_("c = T_target / T_draft"),
    "c_L": N_("c_L = T_draft / T_target (Leviathan)"),
    "expected_tokens": N_("E[N]"),
    "k": N_("K (draft length)"),
    "optimal_k": N_("K*"),
    "speedup": N_("speedup S"),
    "speedup_at_optimal_k": N_("S at K*"),
}  #: grid variable -> its axis title


def axis_title(name: str, lang: str = "en") -> str:
    """The axis title of grid variable ``name`` (one of :data:`AXES`) in ``lang``; symbols stay as they are."""
    if name not in AXES:
        raise KeyError(f"no axis title for {name!r}; one of {', '.join(AXES)}")
    return text(lang, AXIS_TITLES[name])


#: Axis titles of the grid variables, in English (:func:`axis_title` gives them in any language).
TITLES = {name: axis_title(name) for name in AXES}
SYMBOLS = {"alpha": "α", "k": "K"}  #: how a hover names a grid variable (the others by their own name: c, c_L)
_FORMAT = {"alpha": ":.3f", "k": ":d", "c": ":.3g", "c_L": ":.3g"}  # d3 format of hover values
_SURFACE_MAX = 81  # points per axis of a 3-D surface: keeps payloads small (≈ 81² floats)
_SLOWER, _EVEN, _FASTER = "#b2182b", "#f7f7f7", "#2166ac"  # S < 1 red, S = 1 white, S > 1 blue
BREAK_EVEN_COLOR = "black"


def compact(values) -> np.ndarray:
    """``values`` as sent to the browser: floats as float32, integers in the smallest integer type.

    float32 keeps 7 significant digits, more than any hover format here (at most 4); plotly
    sends numpy arrays as typed binary, so this is 4 bytes a float instead of 8 (and 1 for a
    small integer such as K).
    """
    a = np.asarray(values)
    if a.dtype.kind == "f":
        return a.astype(np.float32)
    if a.dtype.kind in "iub" and a.size:
        lo, hi = int(a.min()), int(a.max())
        for t in (np.int8, np.int16, np.int32):
            if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
                return a.astype(t)
    return a


def _is_log(name: str) -> bool:
    return name in ("c", "c_L")


def drawn(values, name: str) -> np.ndarray:
    """Coordinates as drawn on the axis of variable ``name``: log10 of a speed ratio, else the values.

    A speed-ratio axis is a *linear* axis of log10(c) with ticks labelled in c (:func:`log_ticks`),
    not plotly's log axis: a heatmap on a log axis is drawn brick by brick, about 250 ms more for a
    201 × 121 grid on a first draw in Chromium, against one image on a linear axis. Hover text then
    reads c from ``customdata`` (:func:`heatmap_coords`). Annotations already take log10 on both.
    """
    return compact(np.log10(values)) if _is_log(name) else compact(values)


def log_ticks(lo: float, hi: float) -> tuple[np.ndarray, list[str]]:
    """Tick positions (log10) and labels for a log10 axis from ``lo`` to ``hi`` (> 0): 1, 2, 5 per decade,
    or only the powers of ten when the range spans more than three decades."""
    decades = np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
    steps = (1.0,) if decades.size > 4 else (1.0, 2.0, 5.0)
    values = np.array([m * 10.0**d for d in decades for m in steps])
    values = values[(values >= lo * (1 - 1e-9)) & (values <= hi * (1 + 1e-9))]
    return np.log10(values), [f"{v:g}" for v in values]


def heatmap_coords(grid: Grid) -> dict:
    """``x``, ``y`` (and, for a speed-ratio y axis, ``customdata`` holding c per cell) of a heatmap of ``grid``."""
    if _is_log(grid.x_name):
        raise ValueError(f"a speed ratio is drawn on the y axis only; got x = {grid.x_name!r}")
    coords = dict(x=drawn(grid.x, grid.x_name), y=drawn(grid.y, grid.y_name))
    if _is_log(grid.y_name):
        coords["customdata"] = compact(np.broadcast_to(grid.y[:, None], grid.z.shape))  # (ny, nx)
    return coords


def _hover_value(name: str, coord: str) -> str:
    """Hover text of one axis value: the coordinate itself, or ``customdata`` for a log10-drawn axis."""
    return (
        f"%{{customdata{_FORMAT.get(name, ':.3g')}}}" if _is_log(name) else f"%{{{coord}{_FORMAT.get(name, ':.3g')}}}"
    )


def _symbol(name: str) -> str:
    return SYMBOLS.get(name, name)


def _hovertemplate(grid: Grid, lang: str = "en") -> str:
    return (
        f"{_symbol(grid.x_name)} = {_hover_value(grid.x_name, 'x')}<br>"
        f"{_symbol(grid.y_name)} = {_hover_value(grid.y_name, 'y')}<br>"
        f"{axis_title(grid.z_name, lang)} = %{{z:.4g}}<extra></extra>"
    )


def grid_figure(
    grid: Grid, *, mode: str = "heatmap", break_even: bool = False, title: str = "", lang: str = "en"
) -> go.Figure:
    """Heatmap (with hover values) or 3-D surface of ``grid``.

    Parameters
    ----------
    grid : Grid
        z[y, x] with named axes; c axes are drawn log-scaled.
    mode : {"heatmap", "surface"}
        Surfaces are downsampled to at most 81 points per axis.
    break_even : bool
        Draw the S = 1 line (black, :func:`break_even_line`) and make the colour scale white at 1.
    title : str
        Figure title (the caller's, shown as given).
    lang : str
        Language of the axis, colour-bar and legend texts ("en" or "zh").
    """
    if mode not in ("heatmap", "surface"):
        raise ValueError(f"mode must be 'heatmap' or 'surface'; got {mode!r}")
    scale = speedup_colorscale(np.nanmin(grid.z), np.nanmax(grid.z)) if break_even else "Viridis"
    colorbar = dict(title=dict(text=axis_title(grid.z_name, lang)))
    fig = go.Figure()
    if mode == "heatmap":
        fig.add_trace(
            go.Heatmap(
                **heatmap_coords(grid),
                z=compact(grid.z),
                colorscale=scale,
                colorbar=colorbar,
                hovertemplate=_hovertemplate(grid, lang),
                name=axis_title(grid.z_name, lang),
            )
        )
        if break_even:
            fig.add_trace(break_even_line(grid, lang))
        _data_extent_axes(fig, grid, lang)
    else:
        g = grid.downsampled(_SURFACE_MAX)
        contours = (
            dict(z=dict(show=True, start=1.0, end=1.0, size=1.0, color=BREAK_EVEN_COLOR, width=6)) if break_even else {}
        )
        fig.add_trace(
            go.Surface(
                x=compact(g.x),
                y=compact(g.y),
                z=compact(g.z),
                colorbar=colorbar,
                contours=contours,
                colorscale=scale,
                hovertemplate=_hovertemplate(g, lang),
            )
        )
        fig.update_layout(
            scene=dict(
                xaxis=dict(title=axis_title(g.x_name, lang), type="log" if _is_log(g.x_name) else "linear"),
                yaxis=dict(title=axis_title(g.y_name, lang), type="log" if _is_log(g.y_name) else "linear"),
                zaxis=dict(title=axis_title(g.z_name, lang)),
            )
        )
    fig.update_layout(
        title=title,
        margin=dict(l=10, r=10, t=40, b=10),
        height=460,
    )
    return fig


def speedup_colorscale(zmin: float, zmax: float) -> list:
    """Red below S = 1, white at exactly S = 1, blue above, over the data range [zmin, zmax].

    Unlike a symmetric ``zmid`` this never stretches the colour bar to impossible
    (negative) speedups.
    """
    if zmax <= 1.0:
        return [[0.0, _SLOWER], [1.0, _EVEN]]
    if zmin >= 1.0:
        return [[0.0, _EVEN], [1.0, _FASTER]]
    at_one = (1.0 - zmin) / (zmax - zmin)
    return [[0.0, _SLOWER], [at_one, _EVEN], [1.0, _FASTER]]


def _data_extent_axes(fig: go.Figure, grid: Grid, lang: str = "en") -> None:
    """Titles and ranges that end exactly at the grid's first and last points; a speed-ratio axis is
    linear in log10(c) with ticks labelled in c (:func:`drawn`)."""
    for axis, values, name in ((fig.update_xaxes, grid.x, grid.x_name), (fig.update_yaxes, grid.y, grid.y_name)):
        lo, hi = float(np.min(values)), float(np.max(values))
        if _is_log(name):
            tickvals, ticktext = log_ticks(lo, hi)
            axis(
                title=axis_title(name, lang),
                type="linear",
                range=[np.log10(lo), np.log10(hi)],
                tickvals=tickvals,
                ticktext=ticktext,
            )
        else:
            axis(title=axis_title(name, lang), type="linear", range=[lo, hi])


def break_even_line(grid: Grid, lang: str = "en") -> go.Scatter:
    """The S = 1 line of a speedup grid increasing in x along each row: per row y, the x where S
    rises through 1 (:func:`specviz.app.grids.level_crossing`); gaps where a row never crosses."""
    x_name, y_name = grid.x_name, grid.y_name
    return go.Scatter(
        x=compact(level_crossing(grid, 1.0)),
        y=drawn(grid.y, y_name),
        customdata=compact(grid.y),
        mode="lines",
        line=dict(color=BREAK_EVEN_COLOR, width=2.5),
        name=text(lang, "S = 1 (break-even)"),
        hovertemplate=text(
            lang,
            "S = 1 at {x_name} = {x}, {y_name} = {y}",
            x_name=_symbol(x_name),
            x=_hover_value(x_name, "x"),
            y_name=_symbol(y_name),
            y=_hover_value(y_name, "y"),
        )
        + "<extra></extra>",
        showlegend=True,
    )


def pmf_figure(pmf: np.ndarray, expected: float, lang: str = "en") -> go.Figure:
    """Bar chart of P(N = i), i = 1..K+1, with the mean E[N] marked."""
    i = np.arange(1, len(pmf) + 1)
    fig = go.Figure(go.Bar(x=i, y=pmf, name="P(N = i)", hovertemplate="N = %{x}<br>P = %{y:.4f}<extra></extra>"))
    fig.add_vline(x=expected, line_dash="dash", annotation_text=f"E[N] = {expected:.3f}")
    fig.update_layout(
        xaxis_title=text(lang, "N (tokens produced in one round)"),
        yaxis_title=text(lang, "probability"),
        height=320,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    fig.update_xaxes(dtick=1)
    return fig


def break_even_curves(ks: np.ndarray, curves: dict[str, np.ndarray], lang: str = "en") -> go.Figure:
    """α*(K) for several c: one line per entry of ``curves`` (label -> α* over ``ks``).

    Gaps (NaN) are where speculation never pays off at that K; a curve that is
    NaN everywhere is listed in the legend as "never pays off".
    """
    fig = go.Figure()
    for label, alpha_star in curves.items():
        never = bool(np.all(np.isnan(alpha_star)))
        fig.add_trace(
            go.Scatter(
                x=ks,
                y=alpha_star,
                mode="lines+markers",
                name=text(lang, "{label} (never pays off)", label=label) if never else label,
                hovertemplate="K = %{x}<br>α* = %{y:.4f}<extra>" + label + "</extra>",
            )
        )
    fig.update_layout(
        xaxis_title=axis_title("k", lang),
        yaxis_title=text(lang, "break-even α* (S = 1)"),
        yaxis_range=[0, 1],
        height=400,
        margin=dict(l=10, r=10, t=30, b=10),
        legend_title_text=text(lang, "speed ratio"),
    )
    return fig


def break_even_map(grid: Grid, lang: str = "en") -> go.Figure:
    """α*(K, c) as a heatmap in bands of 0.05 (one column per integer K), a few levels labelled
    (:func:`contour_labels`); the region where no α pays off is grey and labelled.

    A heatmap, not filled contours: K is an integer, so there is nothing to interpolate between
    columns, and the browser draws a heatmap as one image (about 100 ms less than plotly's
    marching-squares contours on a first draw).
    """
    never = np.isnan(grid.z)
    fig = go.Figure(
        go.Heatmap(
            **heatmap_coords(grid),
            z=compact(grid.z),
            colorscale=stepped(sample_colorscale("Viridis", list(np.linspace(0.0, 1.0, ALPHA_BANDS)))),
            zmin=0,
            zmax=1,
            colorbar=dict(title=dict(text="α*"), tickvals=np.linspace(0.0, 1.0, 11)),
            hovertemplate=_hovertemplate(grid, lang),
            name="α*",
        )
    )
    if never.any():
        fig.add_trace(
            go.Heatmap(
                x=drawn(grid.x, grid.x_name),
                y=drawn(grid.y, grid.y_name),
                z=compact(np.where(never, 1.0, np.nan)),
                colorscale=[[0, "lightgrey"], [1, "lightgrey"]],
                showscale=False,
                hovertemplate=text(lang, "never pays off") + "<extra></extra>",
                name=text(lang, "never pays off"),
            )
        )
        iy, ix = np.argwhere(never)[len(np.argwhere(never)) // 2]
        fig.add_annotation(
            x=grid.x[ix],
            y=np.log10(grid.y[iy]) if _is_log(grid.y_name) else grid.y[iy],
            text=text(lang, "never pays off"),
            showarrow=False,
            font=dict(size=14),
        )
    for label in contour_labels(grid, LABEL_LEVELS):
        fig.add_annotation(**label)
    _data_extent_axes(fig, grid, lang)
    fig.update_layout(height=440, margin=dict(l=10, r=10, t=30, b=10))
    return fig


#: α* levels labelled on the break-even map, and its number of colour bands (one per 0.05)
LABEL_LEVELS = (0.2, 0.4, 0.6, 0.8)
ALPHA_BANDS = 20


def stepped(colours: list[str]) -> list[list]:
    """A plotly colour scale of ``len(colours)`` equal bands of flat colour over [0, 1]:
    band i covers [i / n, (i + 1) / n]."""
    n = len(colours)
    return [[edge / n, colour] for i, colour in enumerate(colours) for edge in (i, i + 1)]


def contour_labels(grid: Grid, levels) -> list[dict]:
    """One label annotation per level, placed on its ``z = level`` line in the middle row that crosses it.

    The crossings come from :func:`specviz.app.grids.level_crossing` (z increasing in x along each row,
    as α*(K, c) is in K); a level that no row reaches gets no label. A few annotations cost the
    browser far less than plotly's ``contours.showlabels``, which measures and places text along
    every contour line.
    """
    labels = []
    for level in levels:
        cross = level_crossing(grid, level)  # (ny,)
        rows = np.flatnonzero(np.isfinite(cross))
        if rows.size:
            j = rows[rows.size // 2]
            labels.append(
                dict(
                    x=float(cross[j]),
                    y=float(np.log10(grid.y[j])) if _is_log(grid.y_name) else float(grid.y[j]),
                    text=f"α* = {level:g}",
                    showarrow=False,
                    font=dict(size=11, color="black"),
                    bgcolor="rgba(255, 255, 255, 0.75)",
                )
            )
    return labels


def optimal_k_map(grid: Grid, lang: str = "en") -> go.Figure:
    """K*(α, c) with one discrete colour per K and a labelled "don't speculate" (K* = 0) region.

    z is K* itself: the colour scale has one flat band per integer from the smallest to the largest
    K* (an integer no cell takes keeps its band, unseen), and the colour bar labels the K* present.
    """
    levels = np.unique(grid.z)  # the K* present, ascending
    lo, hi = int(levels[0]), int(levels[-1])
    scale = stepped(_qualitative(hi - lo + 1, has_zero=lo == 0))
    shown = levels[_tick_subset(len(levels), max_ticks=16, keep_first=lo == 0)]
    ticktext = [text(lang, "don't speculate") if k == 0 else f"K* = {k}" for k in shown]
    fig = go.Figure(
        go.Heatmap(
            **heatmap_coords(grid),
            z=compact(grid.z),
            colorscale=scale,
            zmin=lo - 0.5,
            zmax=hi + 0.5,
            colorbar=dict(title=dict(text="K*"), tickvals=shown, ticktext=ticktext),
            hovertemplate=f"α = %{{x:.3f}}<br>{_symbol(grid.y_name)} = {_hover_value(grid.y_name, 'y')}<br>K* = %{{z:d}}"
            "<extra></extra>",
        )
    )
    if levels[0] == 0:
        iy, ix = np.argwhere(grid.z == 0)[np.count_nonzero(grid.z == 0) // 2]
        fig.add_annotation(
            x=grid.x[ix],
            y=np.log10(grid.y[iy]) if _is_log(grid.y_name) else grid.y[iy],
            text=text(lang, "don't speculate"),
            showarrow=False,
            font=dict(size=14, color="white"),
        )
    _data_extent_axes(fig, grid, lang)
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=30, b=10))
    return fig


def _tick_subset(n: int, max_ticks: int, keep_first: bool) -> list[int]:
    """At most ``max_ticks`` evenly spread indices of 0..n-1, always with the last (and first)."""
    if n <= max_ticks:
        return list(range(n))
    picks = set(np.linspace(0, n - 1, max_ticks).round().astype(int).tolist())
    if keep_first:
        picks.add(0)
    return sorted(picks)


def _qualitative(n: int, has_zero: bool) -> list[str]:
    """n colours from a perceptually ordered scale; K* = 0 gets dark grey."""
    steps = n - 1 if has_zero else n
    colours = sample_colorscale("Turbo", [0.1 + 0.85 * i / max(steps - 1, 1) for i in range(steps)]) if steps else []
    return (["#404040"] if has_zero else []) + colours


def speedup_vs_k(ks: np.ndarray, s: np.ndarray, k_star: int, s_star: float, lang: str = "en") -> go.Figure:
    """f(K) = S(α, c, K) with the optimum marked and the S = 1 line."""
    fig = go.Figure(
        go.Scatter(
            x=ks, y=s, mode="lines+markers", name="f(K)", hovertemplate="K = %{x}<br>S = %{y:.4f}<extra></extra>"
        )
    )
    fig.add_hline(y=1.0, line_dash="dot", line_color=BREAK_EVEN_COLOR, annotation_text="S = 1")
    if k_star > 0:
        fig.add_trace(
            go.Scatter(
                x=[k_star],
                y=[s_star],
                mode="markers",
                name=f"K* = {k_star}",
                marker=dict(size=16, symbol="star", color="gold", line=dict(width=1)),
            )
        )
    fig.update_layout(
        xaxis_title=axis_title("k", lang),
        yaxis_title=axis_title("speedup", lang),
        height=380,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return fig


def metrics_vs_alpha(
    alpha: np.ndarray, series: dict[str, np.ndarray], point: dict[str, float], lang: str = "en"
) -> go.Figure:
    """Engine metrics as functions of α at fixed K, with the converted point marked."""
    fig = go.Figure()
    for label, y in series.items():
        fig.add_trace(go.Scatter(x=alpha, y=y, mode="lines", name=label))
    for label, y in point.items():
        if label in series:
            fig.add_trace(
                go.Scatter(
                    x=[point["α"]],
                    y=[y],
                    mode="markers",
                    showlegend=False,
                    marker=dict(size=10, color="black"),
                    hovertemplate=label + " = %{y:.4f}<extra></extra>",
                )
            )
    fig.update_layout(
        xaxis_title=axis_title("alpha", lang),
        yaxis_title=text(lang, N_("value")),
        height=380,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return fig

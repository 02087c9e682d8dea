"""Plotly figure builders: data in, ``go.Figure`` out (no streamlit, no computation
beyond layout). Every chart of the app is built here so it is testable without a
browser.

Grid arrays go out compact (:func:`compact`): plotly serialises numpy arrays as typed
binary, so float32 and small integers halve to an eighth of the bytes the browser must
receive and decode, and no grid is sent twice (the S = 1 line is a line, not a second
copy of z).

The words a figure writes itself (axis, colour-bar and legend titles, trace names, hover templates,
annotations) come from the catalogues (keys ``fig.*``, :func:`specviz.base.i18n.text`) in the ``lang`` a
builder is given, English by default. Symbols and formulas (α, K, c, E[N], S) and the data's own
labels (series, rules, cells) stay as they are; plotly's ``%{…}`` fields are filled in as values, never
written in a catalogue text.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from specviz.app.grids import Grid, level_crossing, thin
from specviz.base import i18n
from specviz.base.i18n import text

#: The grid variables that have an axis title (catalogue keys ``fig.axis.<name>``).
AXES = ("alpha", "k", "c", "c_L", "expected_tokens", "speedup", "break_even_alpha", "optimal_k", "speedup_at_optimal_k")


def axis_title(name: str, lang: str = "en") -> str:
    """The axis title of grid variable ``name`` (one of :data:`AXES`) in ``lang``; symbols stay as they are."""
    if name not in AXES:
        raise KeyError(f"no axis title for {name!r}; one of {', '.join(AXES)}")
    return text(lang, f"fig.axis.{name}")


#: Axis titles of the grid variables, in English (:func:`axis_title` gives them in any language).
TITLES = {name: axis_title(name) for name in AXES}
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


def _hovertemplate(grid: Grid, lang: str = "en") -> str:
    return (
        f"{grid.x_name} = {_hover_value(grid.x_name, 'x')}<br>{grid.y_name} = {_hover_value(grid.y_name, 'y')}<br>"
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
        legend=dict(orientation="h", x=1.0, xanchor="right", y=1.02, yanchor="bottom"),
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
        name=text(lang, "fig.break_even_line"),
        hovertemplate=text(
            lang,
            "fig.break_even_hover",
            x_name=x_name,
            x=_hover_value(x_name, "x"),
            y_name=y_name,
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
        xaxis_title=text(lang, "fig.pmf_x"),
        yaxis_title=text(lang, "fig.probability"),
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
                name=text(lang, "fig.label_never_pays_off", label=label) if never else label,
                hovertemplate="K = %{x}<br>α* = %{y:.4f}<extra>" + label + "</extra>",
            )
        )
    fig.update_layout(
        xaxis_title=axis_title("k", lang),
        yaxis_title=text(lang, "fig.break_even_y"),
        yaxis_range=[0, 1],
        height=400,
        margin=dict(l=10, r=10, t=30, b=10),
        legend_title_text=text(lang, "fig.speed_ratio"),
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
                hovertemplate=text(lang, "fig.never_pays_off") + "<extra></extra>",
                name=text(lang, "fig.never_pays_off"),
            )
        )
        iy, ix = np.argwhere(never)[len(np.argwhere(never)) // 2]
        fig.add_annotation(
            x=grid.x[ix],
            y=np.log10(grid.y[iy]) if _is_log(grid.y_name) else grid.y[iy],
            text=text(lang, "fig.never_pays_off"),
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
    ticktext = [text(lang, "fig.dont_speculate") if k == 0 else f"K* = {k}" for k in shown]
    fig = go.Figure(
        go.Heatmap(
            **heatmap_coords(grid),
            z=compact(grid.z),
            colorscale=scale,
            zmin=lo - 0.5,
            zmax=hi + 0.5,
            colorbar=dict(title=dict(text="K*"), tickvals=shown, ticktext=ticktext),
            hovertemplate=f"α = %{{x:.3f}}<br>{grid.y_name} = {_hover_value(grid.y_name, 'y')}<br>K* = %{{z:d}}"
            "<extra></extra>",
        )
    )
    if levels[0] == 0:
        iy, ix = np.argwhere(grid.z == 0)[np.count_nonzero(grid.z == 0) // 2]
        fig.add_annotation(
            x=grid.x[ix],
            y=np.log10(grid.y[iy]) if _is_log(grid.y_name) else grid.y[iy],
            text=text(lang, "fig.dont_speculate"),
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
        yaxis_title=text(lang, "fig.value"),
        height=380,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return fig


# ----------------------------------------------------------------------------- rejection-sampling lab


def distribution_bars(p: np.ndarray, q: np.ndarray, lang: str = "en") -> go.Figure:
    """p, q, min(p, q) and the residual (p − q)⁺ over the vocabulary (chapter §6.4).

    The accepted mass min(p, q) plus the residual (p − q)⁺ stack up to exactly p.
    """
    x = np.arange(len(p))
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=np.minimum(p, q), name=text(lang, "fig.accepted_directly"), marker_color="#2ca02c"))
    fig.add_trace(
        go.Bar(
            x=x,
            y=np.clip(p - q, 0, None),
            name=text(lang, "fig.residual"),
            marker_color="#ff7f0e",
        )
    )
    _target_and_draft(fig, x, p, q, lang)
    fig.update_layout(
        barmode="stack",
        xaxis_title=text(lang, "fig.token_x"),
        yaxis_title=text(lang, "fig.probability"),
        height=380,
        legend=dict(orientation="h", y=1.12),
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return fig


def _target_and_draft(fig: go.Figure, x: np.ndarray, p: np.ndarray, q: np.ndarray, lang: str) -> None:
    """The target p (black line and markers) and the draft q (dotted) over the vocabulary."""
    fig.add_trace(
        go.Scatter(
            x=x,
            y=p,
            mode="lines+markers",
            name=text(lang, "fig.p_target"),
            line=dict(color="black"),
            marker=dict(size=4),
        )
    )
    fig.add_trace(
        go.Scatter(x=x, y=q, mode="lines", name=text(lang, "fig.q_draft"), line=dict(color="#1f77b4", dash="dot"))
    )


def n_histogram(
    n_counts: np.ndarray, pmf: np.ndarray, rounds: int, observed: str | None = None, lang: str = "en"
) -> go.Figure:
    """Observed frequency of N = 1..K+1 (bars named ``observed``, by default "simulated" in ``lang``)
    against the pmf P(N = i)."""
    i = np.arange(1, len(pmf) + 1)
    name = text(lang, "fig.simulated") if observed is None else observed
    fig = go.Figure(go.Bar(x=i, y=n_counts / rounds, name=name, marker_color="#1f77b4"))
    fig.add_trace(
        go.Scatter(
            x=i,
            y=pmf,
            mode="markers",
            name=text(lang, "fig.pmf_formula"),
            marker=dict(size=12, symbol="diamond", color="black"),
        )
    )
    fig.update_layout(
        xaxis_title=text(lang, "fig.n_in_round"),
        yaxis_title=text(lang, "fig.frequency"),
        height=340,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    fig.update_xaxes(dtick=1)
    return fig


def emitted_vs_target(freq: np.ndarray, p: np.ndarray, q: np.ndarray, lang: str = "en") -> go.Figure:
    """Empirical frequency of the emitted tokens against the target p (and the draft q for reference)."""
    x = np.arange(len(p))
    fig = go.Figure(go.Bar(x=x, y=freq, name=text(lang, "fig.emitted"), marker_color="#9467bd"))
    _target_and_draft(fig, x, p, q, lang)
    fig.update_layout(
        xaxis_title=text(lang, "fig.token_x"),
        yaxis_title=text(lang, "fig.probability"),
        height=360,
        legend=dict(orientation="h", y=1.12),
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return fig


# --------------------------------------------------------------------------------------
# measured points over the theory (inputs from specviz.app.overlays)
# --------------------------------------------------------------------------------------

_SERIES_COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
)


_PLOTLY_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "%": "&#37;"})


def plotly_text(text) -> str:
    """``text`` for a plotly trace name, hover template or hover text, shown exactly as written.

    Plotly renders these as a small HTML subset (``<b>``, ``<a href>``, ``<br>``, …) and decodes numeric
    entities and only the names amp, lt, gt, nbsp, times, plusmn, deg, mu (not ``&quot;``, which it
    would show as typed). So ``&``, ``<`` and ``>`` become ``&amp;`` ``&lt;`` ``&gt;`` (no tag can be
    injected) and ``%`` becomes ``&#37;`` (no ``%{…}`` template field); quotes stay as they are.
    """
    return str(text).translate(_PLOTLY_ESCAPES)


def _series_color(names: list[str]) -> dict[str, str]:
    return {name: _SERIES_COLORS[i % len(_SERIES_COLORS)] for i, name in enumerate(names)}


def _layout(fig: go.Figure, x: str, y: str, height: int = 420) -> go.Figure:
    fig.update_layout(
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin=dict(l=10, r=10, t=30, b=10),
        legend=dict(orientation="h", y=-0.2, yanchor="top"),
        hovermode="closest",
    )
    return fig


def _error_bars(points) -> dict | None:
    """Asymmetric error bars from speedup_min / speedup_max where the rows have them."""
    if "speedup_min" not in points.columns or "speedup_max" not in points.columns:
        return None
    lo = (points["speedup"] - points["speedup_min"]).astype(float)
    hi = (points["speedup_max"] - points["speedup"]).astype(float)
    if lo.isna().all() and hi.isna().all():
        return None
    return dict(type="data", symmetric=False, array=hi.fillna(0).to_numpy(), arrayminus=lo.fillna(0).to_numpy())


def overlay_speedup_vs_k(points, curves, params, lang: str = "en") -> go.Figure:
    """Measured speedup vs K per series over S(α, c, K) at the series' α and c (solid) and the
    measured-cost S(α, c, K, v, o) (dashed), each curve's K* starred; error bars span min..max over runs.

    ``points`` from overlays.with_series (rows with a measured speedup are drawn), ``curves`` from
    overlays.curves, ``params`` from overlays.series_params.
    """
    names = list(params["series"])
    color = _series_color(names)
    fig = go.Figure()
    fig.add_hline(y=1.0, line_dash="dot", line_color=BREAK_EVEN_COLOR, annotation_text="S = 1")
    for name in names:
        cv = curves[curves["series"] == name]
        p = params[params["series"] == name].iloc[0]
        shown = plotly_text(name)
        for model, dash in (("basic", "solid"), ("cost", "dash")):
            y = cv[f"speedup_{model}"]
            if len(cv) == 0 or y.isna().all():
                continue
            what = text(lang, "fig.basic_model" if model == "basic" else "fig.cost_model_vo")
            at = text(lang, "fig.model_at", what=what, alpha=f"{p.alpha:.3f}", c=f"{p.c:.3g}")
            fig.add_trace(
                go.Scatter(
                    x=cv["k"],
                    y=y,
                    mode="lines",
                    line=dict(color=color[name], dash=dash),
                    legendgroup=name,
                    name=text(lang, "fig.series_basic" if model == "basic" else "fig.series_cost", series=shown),
                    hovertemplate=f"{shown}<br>{at}<br>K = %{{x}}<br>S = %{{y:.3f}}<extra></extra>",
                )
            )
            k_star, s_star = p[f"k_star_{model}"], p[f"s_star_{model}"]
            if np.isfinite(k_star) and k_star > 0:
                fig.add_trace(
                    go.Scatter(
                        x=[k_star],
                        y=[s_star],
                        mode="markers",
                        legendgroup=name,
                        showlegend=False,
                        marker=dict(symbol="star", size=14, color=color[name], line=dict(width=1, color="black")),
                        hovertemplate=text(
                            lang, "fig.star_hover", series=shown, k=int(k_star), what=what, s=f"{s_star:.3f}"
                        )
                        + "<extra></extra>",
                    )
                )
        pts = points[(points["series"] == name) & points["speedup"].notna()]
        if len(pts):
            fig.add_trace(
                go.Scatter(
                    x=pts["k"],
                    y=pts["speedup"],
                    mode="markers",
                    legendgroup=name,
                    name=text(lang, "fig.series_measured", series=shown),
                    marker=dict(size=10, color=color[name], line=dict(width=1, color="black")),
                    error_y=_error_bars(pts),
                    text=pts["hover"],
                    hovertemplate="%{text}<extra></extra>",
                )
            )
    return _layout(fig, axis_title("k", lang), axis_title("speedup", lang))


def overlay_alpha_c(grid: Grid, points, k: int, lang: str = "en") -> go.Figure:
    """Measured (α used, c used) of every row on the S(α, c) heatmap at draft length ``k`` with its
    S = 1 contour. Rows measured at this K are filled circles, rows at other K open ones."""
    fig = grid_figure(grid, break_even=True, title=text(lang, "fig.overlay_title", k=k), lang=lang)
    pts = points[points["alpha_used"].notna() & points["c_used"].notna()]
    for same, symbol, label in (
        (True, "circle", text(lang, "fig.measured_at_k", k=k)),
        (False, "circle-open", text(lang, "fig.other_k")),
    ):
        sel = pts[(pts["k"] == k) == same]
        if len(sel):
            fig.add_trace(
                go.Scatter(
                    x=sel["alpha_used"],
                    y=drawn(sel["c_used"].to_numpy(float), grid.y_name),
                    mode="markers",
                    name=label,
                    text=sel["hover"],
                    marker=dict(symbol=symbol, size=11, color="black", line=dict(width=2, color="gold")),
                    hovertemplate="%{text}<extra></extra>",
                )
            )
    return fig


def overlay_expected_tokens(points, curves, params, lang: str = "en") -> go.Figure:
    """E[N] vs K at each series' α (lines) with the measured mean accepted tokens (markers)."""
    names = list(params["series"])
    color = _series_color(names)
    fig = go.Figure()
    for name in names:
        cv = curves[curves["series"] == name]
        if len(cv):
            fig.add_trace(
                go.Scatter(
                    x=cv["k"],
                    y=cv["expected_tokens"],
                    mode="lines",
                    legendgroup=name,
                    line=dict(color=color[name]),
                    name=text(lang, "fig.series_expected", series=plotly_text(name)),
                    hovertemplate="K = %{x}<br>E[N] = %{y:.3f}<extra></extra>",
                )
            )
        pts = points[(points["series"] == name)]
        if "mean_accepted_tokens" in pts.columns:
            pts = pts[pts["mean_accepted_tokens"].notna()]
            if len(pts):
                fig.add_trace(
                    go.Scatter(
                        x=pts["k"],
                        y=pts["mean_accepted_tokens"],
                        mode="markers",
                        legendgroup=name,
                        name=text(lang, "fig.series_measured", series=plotly_text(name)),
                        text=pts["hover"],
                        hovertemplate="%{text}<extra></extra>",
                        marker=dict(size=10, color=color[name], line=dict(width=1, color="black")),
                    )
                )
    return _layout(fig, axis_title("k", lang), text(lang, "fig.tokens_per_round_en"))


def parity(points, lang: str = "en") -> go.Figure:
    """Measured speedup against the predicted one (basic: circles; measured-cost: diamonds), with y = x."""
    fig = go.Figure()
    lo, hi = np.inf, -np.inf
    for column, symbol, what in (
        ("predicted_speedup", "circle", text(lang, "fig.basic_model")),
        ("predicted_speedup_measured_cost", "diamond", text(lang, "fig.cost_model")),
    ):
        if column not in points.columns:
            continue
        sel = points[points[column].notna() & points["speedup"].notna()]
        if not len(sel):
            continue
        x, y = sel[column].astype(float), sel["speedup"].astype(float)
        lo, hi = min(lo, x.min(), y.min()), max(hi, x.max(), y.max())
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="markers",
                name=what,
                text=sel["hover"],
                marker=dict(symbol=symbol, size=10, line=dict(width=1, color="black")),
                hovertemplate=f"{what}<br>%{{text}}<extra></extra>",
            )
        )
    if np.isfinite(lo):
        pad = 0.05 * (hi - lo or 1.0)
        fig.add_trace(
            go.Scatter(
                x=[lo - pad, hi + pad],
                y=[lo - pad, hi + pad],
                mode="lines",
                name="y = x",
                line=dict(color="grey", dash="dot"),
                hoverinfo="skip",
            )
        )
    return _layout(fig, text(lang, "fig.predicted_speedup"), text(lang, "fig.measured_speedup"))


def per_position_figure(table, lang: str = "en") -> go.Figure:
    """Conditional acceptance a_i by draft position, one line per (series, K), with the i.i.d. α as a dotted line."""
    fig = go.Figure()
    names = list(dict.fromkeys(table["series"]))
    color = _series_color(names)
    for (name, k), g in table.groupby(["series", "k"], sort=False):
        fig.add_trace(
            go.Scatter(
                x=g["position"],
                y=g["a"],
                mode="lines+markers",
                line=dict(color=color[name]),
                name=f"{plotly_text(name)}, K = {k}",
                legendgroup=name,
                hovertemplate=text(lang, "fig.position_hover", x="%{x}", y="%{y:.3f}") + "<extra></extra>",
            )
        )
        alpha = float(g["alpha_used"].iloc[0])
        fig.add_trace(
            go.Scatter(
                x=[g["position"].min(), g["position"].max()],
                y=[alpha, alpha],
                mode="lines",
                line=dict(color=color[name], dash="dot"),
                legendgroup=name,
                showlegend=False,
                hovertemplate=f"i.i.d. α = {alpha:.3f}<extra></extra>",
            )
        )
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, text(lang, "fig.draft_position"), text(lang, "fig.acceptance_given"))


def cost_breakdown(cells: list[str], draft_ms, verify_ms, other_ms, basic_model_ms, lang: str = "en") -> go.Figure:
    """Mean round time per cell, stacked: K draft steps, the verify forward, everything else; with the
    basic model's round (one target step + K draft steps) as a diamond, so the gap is visible."""
    fig = go.Figure()
    for name, values, color in (
        (text(lang, "fig.cost.draft"), draft_ms, "#9ecae1"),
        (text(lang, "fig.cost.verify"), verify_ms, "#3182bd"),
        (text(lang, "fig.cost.other"), other_ms, "#fd8d3c"),
    ):
        fig.add_trace(
            go.Bar(
                x=cells,
                y=values,
                name=name,
                marker_color=color,
                hovertemplate="%{x}<br>" + text(lang, "fig.hover_ms", name=name, y="%{y:.3f}") + "<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=cells,
            y=basic_model_ms,
            mode="markers",
            name=text(lang, "fig.basic_model_formula"),
            marker=dict(symbol="diamond", size=12, color="black"),
            hovertemplate="%{x}<br>" + text(lang, "fig.basic_round_hover", y="%{y:.3f}") + "<extra></extra>",
        )
    )
    fig.update_layout(barmode="stack")
    return _layout(fig, text(lang, "fig.cell"), text(lang, "fig.ms_per_round"))


def speedup_by_batch_measured(frame, lang: str = "en") -> go.Figure:
    """Measured speedup against the batch size B, one line per (K, temperature), S = 1 dashed."""
    fig = go.Figure()
    for (k, t), cell in frame.sort_values("batch_size").groupby(["k", "temperature"]):
        fig.add_trace(
            go.Scatter(
                x=cell["batch_size"],
                y=compact(cell["speedup"]),
                mode="lines+markers",
                name=f"K = {int(k)}, T = {t:g}",
                hovertemplate=f"K = {int(k)}, T = {t:g}<br>B = %{{x}}<br>S = %{{y:.3f}}×<extra></extra>",
            )
        )
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    fig.update_xaxes(type="log")
    return _layout(fig, text(lang, "fig.batch_size"), text(lang, "fig.measured_speedup_s"))


def tree_figure(x, y, parents, path_prob, labels, lang: str = "en") -> go.Figure:
    """A draft tree: node i at (x[i], y[i]) (y = −depth), edges to ``parents``, coloured by path probability."""
    ex, ey = [], []
    for i, parent in enumerate(parents):
        if parent >= 0:
            ex += [x[parent], x[i], None]
            ey += [y[parent], y[i], None]
    fig = go.Figure(
        [
            go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#999", width=1), hoverinfo="skip", showlegend=False),
            go.Scatter(
                x=compact(x),
                y=compact(y),
                mode="markers+text",
                text=labels,
                textposition="middle center",
                textfont=dict(size=9, color="white"),
                marker=dict(
                    size=18,
                    color=compact(path_prob),
                    colorscale="Viridis",
                    cmin=0,
                    cmax=1,
                    colorbar=dict(title=dict(text=text(lang, "fig.tree_path"))),
                ),
                customdata=compact(path_prob),
                hovertemplate=text(lang, "fig.tree_hover", rank="%{text}", p="%{customdata:.3f}") + "<extra></extra>",
                showlegend=False,
            ),
        ]
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(title=text(lang, "fig.depth"), tickvals=sorted(set(np.asarray(y).tolist())), ticktext=None)
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=30, b=10))
    return fig


def tokens_by_budget(frame, lang: str = "en") -> go.Figure:
    """Expected tokens per round against the draft budget, one line per tree shape."""
    fig = go.Figure()
    for shape, part in frame.groupby("shape", sort=False):
        shape = i18n.name(lang, "note.trees.shape", shape)
        fig.add_trace(
            go.Scatter(
                x=part["budget"],
                y=compact(part["expected_tokens"]),
                mode="lines+markers",
                name=plotly_text(shape),
                hovertemplate=text(lang, "fig.budget_hover", shape=plotly_text(shape), x="%{x}", y="%{y:.3f}")
                + "<extra></extra>",
            )
        )
    fig.update_xaxes(type="log")
    return _layout(fig, text(lang, "fig.budget_x"), text(lang, "fig.expected_f"))


def measured_vs_predicted(cells: list[str], measured, predicted, y: str, what: str, lang: str = "en") -> go.Figure:
    """One pair of bars per cell: the measured value and the model's prediction (``what`` names the model;
    ``what`` and the y-axis title ``y`` are the caller's, shown as given)."""
    fig = go.Figure()
    for name, values, color in ((text(lang, "fig.measured"), measured, "#3182bd"), (what, predicted, "#bdbdbd")):
        fig.add_trace(
            go.Bar(
                x=[plotly_text(c) for c in cells],
                y=compact(values),
                name=name,
                marker_color=color,
                hovertemplate="%{x}<br>" + plotly_text(name) + ": %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(barmode="group")
    return _layout(fig, text(lang, "fig.cell"), y)


POLICY_COLORS = {"rule": "#3182bd", "best static K": "#969696", "oracle": "#d62728"}


def policy_bars(frame, lang: str = "en") -> go.Figure:
    """Speedup of each draft-length rule (``policies.compare``), with the best static K and the oracle."""
    fig = go.Figure(
        go.Bar(
            x=[plotly_text(i18n.localized(p, lang)) for p in frame["policy"]],
            y=compact(frame["speedup"]),
            marker_color=[POLICY_COLORS[k] for k in frame["kind"]],
            customdata=np.stack([frame["tokens_per_round"], frame["drafts_per_round"]], axis=-1),
            hovertemplate="%{x}<br>S = %{y:.3f}×<br>"
            + text(lang, "fig.policy_hover", tokens="%{customdata[0]:.2f}", drafts="%{customdata[1]:.2f}")
            + "<extra></extra>",
        )
    )
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    return _layout(fig, text(lang, "fig.rule"), text(lang, "fig.over_target"))


def k_over_rounds(ks: dict[str, np.ndarray], rounds: int = 200, lang: str = "en") -> go.Figure:
    """Drafts verified in each of the first ``rounds`` rounds, one line per rule."""
    fig = go.Figure()
    for rule, k in ks.items():
        k = np.asarray(k)[:rounds]
        shown = plotly_text(i18n.localized(rule, lang))
        fig.add_trace(go.Scatter(x=np.arange(1, len(k) + 1), y=k, mode="lines", name=shown, line=dict(shape="hv")))
    return _layout(fig, text(lang, "fig.round"), text(lang, "fig.drafts_verified"))


def draft_length_histogram(ks: dict[str, np.ndarray], k_max: int, lang: str = "en") -> go.Figure:
    """Share of rounds verifying 0..K_max drafts, one bar series per rule."""
    fig = go.Figure()
    bins = np.arange(k_max + 1)
    for rule, k in ks.items():
        share = np.bincount(np.asarray(k, dtype=np.int64), minlength=k_max + 1)[: k_max + 1] / max(len(k), 1)
        fig.add_trace(go.Bar(x=bins, y=share, name=plotly_text(i18n.localized(rule, lang))))
    fig.update_layout(barmode="group")
    return _layout(fig, text(lang, "fig.drafts_in_round"), text(lang, "fig.share_rounds"))


def policy_sweep(frame, name: str, best_static: float, oracle: float, lang: str = "en") -> go.Figure:
    """Speedup against one rule's parameter (``policies.sweep``), with the best static K and the oracle as lines."""
    fig = go.Figure(
        go.Scatter(x=compact(frame["value"]), y=compact(frame["speedup"]), mode="lines+markers", name=plotly_text(name))
    )
    fig.add_hline(
        y=best_static,
        line_dash="dot",
        line_color=POLICY_COLORS["best static K"],
        annotation_text=text(lang, "fig.best_static"),
    )
    fig.add_hline(
        y=oracle, line_dash="dot", line_color=POLICY_COLORS["oracle"], annotation_text=text(lang, "fig.oracle")
    )
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    return _layout(fig, plotly_text(name), text(lang, "fig.over_target"))


def ngram_by_k(frame, lang: str = "en") -> go.Figure:
    """Prompt lookup's tokens per round and speedup against K, one line per rule (``ngram.lookup_table``)."""
    fig = go.Figure()
    for rule, part in frame.groupby("rule", sort=False):
        fig.add_trace(
            go.Scatter(
                x=part["k"],
                y=compact(part["tokens_per_round"]),
                mode="lines+markers",
                name=text(lang, "fig.ngram_tokens", rule=rule),
            )
        )
        fig.add_trace(
            go.Scatter(
                x=part["k"],
                y=compact(part["speedup"]),
                mode="lines+markers",
                name=text(lang, "fig.ngram_speedup", rule=rule),
                line=dict(dash="dot"),
            )
        )
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    return _layout(fig, text(lang, "fig.ngram_x"), text(lang, "fig.ngram_y"))


def acceptance_by_position(unconditional: np.ndarray, conditional: np.ndarray, lang: str = "en") -> go.Figure:
    """An engine's acceptance by draft position i = 1..P: u_i (share of drafts accepting ≥ i tokens)
    and a_i = u_i / u_(i−1) (given the positions before it accepted), as grouped bars."""
    positions = np.arange(1, len(unconditional) + 1)
    fig = go.Figure()
    for y, name, color in (
        (conditional, text(lang, "fig.conditional"), _FASTER),
        (unconditional, text(lang, "fig.unconditional"), "#92c5de"),
    ):
        fig.add_trace(
            go.Bar(x=positions, y=y, name=name, marker_color=color, hovertemplate="i = %{x}<br>%{y:.3f}<extra></extra>")
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(range=[0, 1.02])
    fig.update_xaxes(dtick=1)
    return _layout(fig, text(lang, "fig.draft_position"), text(lang, "fig.acceptance"), height=320)


def engine_rates(frame, lang: str = "en") -> go.Figure:
    """Drafted and accepted tokens per second over time (one point per poll interval), with the
    mean acceptance length on a second axis."""
    fig = go.Figure()
    for column, name, color in (
        ("drafted_per_s", text(lang, "fig.drafted_tps"), "#92c5de"),
        ("accepted_per_s", text(lang, "fig.accepted_tps"), _FASTER),
    ):
        fig.add_trace(
            go.Scatter(
                x=frame["time"],
                y=frame[column],
                name=name,
                mode="lines",
                line=dict(color=color),
                hovertemplate="t = %{x:.0f} s<br>%{y:.1f} tokens/s<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=frame["time"],
            y=frame["mean_length"],
            name=text(lang, "fig.mean_length"),
            mode="lines",
            yaxis="y2",
            line=dict(color="black", dash="dot"),
            hovertemplate="t = %{x:.0f} s<br>E[N] = %{y:.2f}<extra></extra>",
        )
    )
    fig.update_layout(
        yaxis2=dict(title=text(lang, "fig.mean_length"), overlaying="y", side="right", rangemode="tozero")
    )
    return _layout(fig, text(lang, "fig.since_start"), "tokens/s", height=320)


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

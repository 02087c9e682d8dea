"""Plotly figure builders: data in, ``go.Figure`` out (no streamlit, no computation
beyond layout). Every chart of the app is built here so it is testable without a
browser.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specviz.grids import C_CONVENTIONS, Grid

#: Axis titles of the grid variables.
TITLES = {
    "alpha": "α (per-token acceptance)",
    "k": "K (draft length)",
    "c": C_CONVENTIONS["c"],
    "c_L": C_CONVENTIONS["c_L"],
    "expected_tokens": "E[N]",
    "speedup": "speedup S",
    "break_even_alpha": "break-even α*",
    "optimal_k": "K*",
    "speedup_at_optimal_k": "S at K*",
}
_FORMAT = {"alpha": ":.3f", "k": ":d", "c": ":.3g", "c_L": ":.3g"}  # d3 format of hover values
_SURFACE_MAX = 81  # points per axis of a 3-D surface: keeps payloads small (≈ 81² floats)
_SLOWER, _EVEN, _FASTER = "#b2182b", "#f7f7f7", "#2166ac"  # S < 1 red, S = 1 white, S > 1 blue
BREAK_EVEN_COLOR = "black"


def _is_log(name: str) -> bool:
    return name in ("c", "c_L")


def _hovertemplate(grid: Grid) -> str:
    x_fmt, y_fmt = _FORMAT.get(grid.x_name, ":.3g"), _FORMAT.get(grid.y_name, ":.3g")
    return (f"{grid.x_name} = %{{x{x_fmt}}}<br>{grid.y_name} = %{{y{y_fmt}}}<br>"
            f"{TITLES[grid.z_name]} = %{{z:.4g}}<extra></extra>")  # fmt: skip


def grid_figure(grid: Grid, *, mode: str = "heatmap", break_even: bool = False, title: str = "") -> go.Figure:
    """Heatmap (with hover values) or 3-D surface of ``grid``.

    Parameters
    ----------
    grid : Grid
        z[y, x] with named axes; c axes are drawn log-scaled.
    mode : {"heatmap", "surface"}
        Surfaces are downsampled to at most 81 points per axis.
    break_even : bool
        Draw the S = 1 contour (black line) and centre the colour scale at 1.
    title : str
        Figure title.
    """
    if mode not in ("heatmap", "surface"):
        raise ValueError(f"mode must be 'heatmap' or 'surface'; got {mode!r}")
    scale = speedup_colorscale(np.nanmin(grid.z), np.nanmax(grid.z)) if break_even else "Viridis"
    colorbar = dict(title=dict(text=TITLES[grid.z_name]))
    fig = go.Figure()
    if mode == "heatmap":
        fig.add_trace(go.Heatmap(x=grid.x, y=grid.y, z=grid.z, colorscale=scale, colorbar=colorbar,
                                 hovertemplate=_hovertemplate(grid), name=TITLES[grid.z_name]))  # fmt: skip
        if break_even:
            fig.add_trace(break_even_contour(grid))
        _data_extent_axes(fig, grid)
    else:
        g = grid.downsampled(_SURFACE_MAX)
        contours = dict(z=dict(show=True, start=1.0, end=1.0, size=1.0, color=BREAK_EVEN_COLOR, width=6)) \
            if break_even else {}  # fmt: skip
        fig.add_trace(go.Surface(x=g.x, y=g.y, z=g.z, colorbar=colorbar, contours=contours, colorscale=scale,
                                 hovertemplate=_hovertemplate(g)))  # fmt: skip
        fig.update_layout(scene=dict(
            xaxis=dict(title=TITLES[g.x_name], type="log" if _is_log(g.x_name) else "linear"),
            yaxis=dict(title=TITLES[g.y_name], type="log" if _is_log(g.y_name) else "linear"),
            zaxis=dict(title=TITLES[g.z_name])))  # fmt: skip
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=40, b=10), height=460,
                      legend=dict(orientation="h", x=1.0, xanchor="right", y=1.02, yanchor="bottom"))  # fmt: skip
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


def _data_extent_axes(fig: go.Figure, grid: Grid) -> None:
    """Titles, log type for c axes, and ranges that end exactly at the grid's first and last points."""
    for axis, values, name in ((fig.update_xaxes, grid.x, grid.x_name), (fig.update_yaxes, grid.y, grid.y_name)):
        lo, hi = float(np.min(values)), float(np.max(values))
        if _is_log(name):
            axis(title=TITLES[name], type="log", range=[np.log10(lo), np.log10(hi)])
        else:
            axis(title=TITLES[name], type="linear", range=[lo, hi])


def break_even_contour(grid: Grid) -> go.Contour:
    """The S = 1 line of a speedup grid, as a line-only contour trace."""
    return go.Contour(x=grid.x, y=grid.y, z=grid.z, contours=dict(start=1.0, end=1.0, size=1.0, coloring="none",
                      showlabels=True, labelfont=dict(color=BREAK_EVEN_COLOR)),
                      line=dict(color=BREAK_EVEN_COLOR, width=2.5), showscale=False, hoverinfo="skip",
                      name="S = 1 (break-even)", showlegend=True)  # fmt: skip


def pmf_figure(pmf: np.ndarray, expected: float) -> go.Figure:
    """Bar chart of P(N = i), i = 1..K+1, with the mean E[N] marked."""
    i = np.arange(1, len(pmf) + 1)
    fig = go.Figure(go.Bar(x=i, y=pmf, name="P(N = i)", hovertemplate="N = %{x}<br>P = %{y:.4f}<extra></extra>"))
    fig.add_vline(x=expected, line_dash="dash", annotation_text=f"E[N] = {expected:.3f}")
    fig.update_layout(xaxis_title="N (tokens produced in one round)", yaxis_title="probability",
                      height=320, margin=dict(l=10, r=10, t=30, b=10))  # fmt: skip
    fig.update_xaxes(dtick=1)
    return fig


def break_even_curves(ks: np.ndarray, curves: dict[str, np.ndarray]) -> go.Figure:
    """α*(K) for several c: one line per entry of ``curves`` (label -> α* over ``ks``).

    Gaps (NaN) are where speculation never pays off at that K; a curve that is
    NaN everywhere is listed in the legend as "never pays off".
    """
    fig = go.Figure()
    for label, alpha_star in curves.items():
        never = bool(np.all(np.isnan(alpha_star)))
        fig.add_trace(go.Scatter(x=ks, y=alpha_star, mode="lines+markers",
                                 name=f"{label} (never pays off)" if never else label,
                                 hovertemplate="K = %{x}<br>α* = %{y:.4f}<extra>" + label + "</extra>"))  # fmt: skip
    fig.update_layout(xaxis_title=TITLES["k"], yaxis_title="break-even α* (S = 1)", yaxis_range=[0, 1],
                      height=400, margin=dict(l=10, r=10, t=30, b=10),
                      legend_title_text="speed ratio")  # fmt: skip
    return fig


def break_even_map(grid: Grid) -> go.Figure:
    """α*(K, c) as filled contours; the region where no α pays off is grey and labelled."""
    never = np.isnan(grid.z)
    fig = go.Figure(go.Contour(x=grid.x, y=grid.y, z=grid.z, colorscale="Viridis", zmin=0, zmax=1,
                               contours=dict(start=0.05, end=0.95, size=0.05, showlabels=True),
                               colorbar=dict(title=dict(text="α*")), hovertemplate=_hovertemplate(grid),
                               name="α*"))  # fmt: skip
    if never.any():
        fig.add_trace(go.Heatmap(x=grid.x, y=grid.y, z=np.where(never, 1.0, np.nan),
                                 colorscale=[[0, "lightgrey"], [1, "lightgrey"]], showscale=False,
                                 hovertemplate="never pays off<extra></extra>", name="never pays off"))  # fmt: skip
        iy, ix = np.argwhere(never)[len(np.argwhere(never)) // 2]
        fig.add_annotation(x=grid.x[ix], y=np.log10(grid.y[iy]) if _is_log(grid.y_name) else grid.y[iy],
                           text="never pays off", showarrow=False, font=dict(size=14))  # fmt: skip
    _data_extent_axes(fig, grid)
    fig.update_layout(height=440, margin=dict(l=10, r=10, t=30, b=10))
    return fig


def optimal_k_map(grid: Grid) -> go.Figure:
    """K*(α, c) with one discrete colour per K and a labelled "don't speculate" (K* = 0) region."""
    z = grid.z.astype(float)
    levels = np.unique(grid.z)
    n = len(levels)
    # Map each distinct K* to an index 0..n-1 so the colours are discrete steps.
    index = np.searchsorted(levels, grid.z).astype(float)
    palette = _qualitative(n, has_zero=bool(levels[0] == 0))
    scale = []
    for i, colour in enumerate(palette):
        scale += [[i / n, colour], [(i + 1) / n, colour]]
    shown = _tick_subset(n, max_ticks=16, keep_first=bool(levels[0] == 0))
    ticktext = ["don't speculate" if levels[i] == 0 else f"K* = {levels[i]}" for i in shown]
    fig = go.Figure(go.Heatmap(
        x=grid.x, y=grid.y, z=index, customdata=z, colorscale=scale, zmin=-0.5, zmax=n - 0.5,
        colorbar=dict(title=dict(text="K*"), tickvals=shown, ticktext=ticktext),
        hovertemplate="α = %{x:.3f}<br>" + grid.y_name + " = %{y:.3g}<br>K* = %{customdata:d}<extra></extra>"))
    if levels[0] == 0:
        iy, ix = np.argwhere(grid.z == 0)[np.count_nonzero(grid.z == 0) // 2]
        fig.add_annotation(x=grid.x[ix], y=np.log10(grid.y[iy]) if _is_log(grid.y_name) else grid.y[iy],
                           text="don't speculate", showarrow=False, font=dict(size=14, color="white"))  # fmt: skip
    _data_extent_axes(fig, grid)
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
    from plotly.colors import sample_colorscale

    steps = n - 1 if has_zero else n
    colours = sample_colorscale("Turbo", [0.1 + 0.85 * i / max(steps - 1, 1) for i in range(steps)]) if steps else []
    return (["#404040"] if has_zero else []) + colours


def speedup_vs_k(ks: np.ndarray, s: np.ndarray, k_star: int, s_star: float) -> go.Figure:
    """f(K) = S(α, c, K) with the optimum marked and the S = 1 line."""
    fig = go.Figure(go.Scatter(x=ks, y=s, mode="lines+markers", name="f(K)",
                               hovertemplate="K = %{x}<br>S = %{y:.4f}<extra></extra>"))  # fmt: skip
    fig.add_hline(y=1.0, line_dash="dot", line_color=BREAK_EVEN_COLOR, annotation_text="S = 1")
    if k_star > 0:
        fig.add_trace(go.Scatter(x=[k_star], y=[s_star], mode="markers", name=f"K* = {k_star}",
                                 marker=dict(size=16, symbol="star", color="gold", line=dict(width=1))))  # fmt: skip
    fig.update_layout(xaxis_title=TITLES["k"], yaxis_title="speedup S", height=380,
                      margin=dict(l=10, r=10, t=30, b=10))  # fmt: skip
    return fig


def metrics_vs_alpha(alpha: np.ndarray, series: dict[str, np.ndarray], point: dict[str, float]) -> go.Figure:
    """Engine metrics as functions of α at fixed K, with the converted point marked."""
    fig = go.Figure()
    for label, y in series.items():
        fig.add_trace(go.Scatter(x=alpha, y=y, mode="lines", name=label))
    for label, y in point.items():
        if label in series:
            fig.add_trace(go.Scatter(x=[point["α"]], y=[y], mode="markers", showlegend=False,
                                     marker=dict(size=10, color="black"),
                                     hovertemplate=label + " = %{y:.4f}<extra></extra>"))  # fmt: skip
    fig.update_layout(xaxis_title=TITLES["alpha"], yaxis_title="value", height=380,
                      margin=dict(l=10, r=10, t=30, b=10))  # fmt: skip
    return fig


# ----------------------------------------------------------------------------- rejection-sampling lab


def distribution_bars(p: np.ndarray, q: np.ndarray) -> go.Figure:
    """p, q, min(p, q) and the residual (p − q)⁺ over the vocabulary (chapter §6.4).

    The accepted mass min(p, q) plus the residual (p − q)⁺ stack up to exactly p.
    """
    x = np.arange(len(p))
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=np.minimum(p, q), name="min(p, q) — accepted directly", marker_color="#2ca02c"))
    fig.add_trace(go.Bar(x=x, y=np.clip(p - q, 0, None), name="(p − q)⁺ — residual, resampled after a rejection",
                         marker_color="#ff7f0e"))  # fmt: skip
    fig.add_trace(go.Scatter(x=x, y=p, mode="lines+markers", name="p (target)", line=dict(color="black"),
                             marker=dict(size=4)))  # fmt: skip
    fig.add_trace(go.Scatter(x=x, y=q, mode="lines", name="q (draft)", line=dict(color="#1f77b4", dash="dot")))
    fig.update_layout(barmode="stack", xaxis_title="token x", yaxis_title="probability", height=380,
                      legend=dict(orientation="h", y=1.12), margin=dict(l=10, r=10, t=30, b=10))  # fmt: skip
    return fig


def n_histogram(n_counts: np.ndarray, pmf: np.ndarray, rounds: int) -> go.Figure:
    """Observed frequency of N = 1..K+1 against the pmf P(N = i)."""
    i = np.arange(1, len(pmf) + 1)
    fig = go.Figure(go.Bar(x=i, y=n_counts / rounds, name="simulated", marker_color="#1f77b4"))
    fig.add_trace(go.Scatter(x=i, y=pmf, mode="markers", name="P(N = i), formula",
                             marker=dict(size=12, symbol="diamond", color="black")))  # fmt: skip
    fig.update_layout(xaxis_title="N (tokens in a round)", yaxis_title="frequency", height=340,
                      margin=dict(l=10, r=10, t=30, b=10))  # fmt: skip
    fig.update_xaxes(dtick=1)
    return fig


def emitted_vs_target(freq: np.ndarray, p: np.ndarray, q: np.ndarray) -> go.Figure:
    """Empirical frequency of the emitted tokens against the target p (and the draft q for reference)."""
    x = np.arange(len(p))
    fig = go.Figure(go.Bar(x=x, y=freq, name="emitted (simulated)", marker_color="#9467bd"))
    fig.add_trace(go.Scatter(x=x, y=p, mode="lines+markers", name="p (target)", line=dict(color="black"),
                             marker=dict(size=4)))  # fmt: skip
    fig.add_trace(go.Scatter(x=x, y=q, mode="lines", name="q (draft)", line=dict(color="#1f77b4", dash="dot")))
    fig.update_layout(xaxis_title="token x", yaxis_title="probability", height=360,
                      legend=dict(orientation="h", y=1.12), margin=dict(l=10, r=10, t=30, b=10))  # fmt: skip
    return fig

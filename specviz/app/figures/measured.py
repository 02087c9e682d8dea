"""Measured points over the theory (inputs from :mod:`specviz.app.overlays`): speedup against K, the
(α, c) map, E[N], parity, per-position acceptance, the live page's cost breakdown, speedup by batch."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specviz.app.figures.design import BREAK_EVEN_COLOR, axis_title, compact, drawn, grid_figure
from specviz.app.grids import Grid
from specviz.base.i18n import N_, text

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
        hovermode="closest",
    )
    return fig


def parity_lines(lo: float, hi: float, band: float, lang: str = "en") -> list[go.Scatter]:
    """The guides of a predicted-against-measured chart over [``lo``, ``hi``]: y = x (solid, black) and
    y = x·(1 ± ``band``) (dotted, grey, one legend entry "±100·band %")."""
    lines = ((1.0, "solid", text(lang, "predicted = measured")), (1 + band, "dot", f"±{band * 100:g} %"))
    return [
        go.Scatter(
            x=[lo, hi],
            y=[lo * scale, hi * scale],
            mode="lines",
            line=dict(color="black" if scale == 1 else "#999", dash=dash, width=1),
            name=name or "",
            showlegend=name is not None,
            hoverinfo="skip",
        )
        for scale, dash, name in (*lines, (1 - band, "dot", None))
    ]


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
            what = text(lang, N_("basic model") if model == "basic" else N_("measured-cost model (v, o)"))
            at = text(lang, "{what} at α = {alpha}, c = {c}", what=what, alpha=f"{p.alpha:.3f}", c=f"{p.c:.3g}")
            fig.add_trace(
                go.Scatter(
                    x=cv["k"],
                    y=y,
                    mode="lines",
                    line=dict(color=color[name], dash=dash),
                    legendgroup=name,
                    name=text(
                        lang,
                        N_("{series}: basic model") if model == "basic" else N_("{series}: measured-cost model (v, o)"),
                        series=shown,
                    ),
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
                            lang,
                            "{series}: K* = {k} ({what}), S = {s}",
                            series=shown,
                            k=int(k_star),
                            what=what,
                            s=f"{s_star:.3f}",
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
                    name=text(lang, "{series}: measured", series=shown),
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
    fig = grid_figure(
        grid, break_even=True, title=text(lang, "S(α, c) at K = {k} with the measured points", k=k), lang=lang
    )
    pts = points[points["alpha_used"].notna() & points["c_used"].notna()]
    for same, symbol, label in (
        (True, "circle", text(lang, "measured at K = {k}", k=k)),
        (False, "circle-open", text(lang, "other K")),
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
                    name=text(lang, "{series}: E[N] at α", series=plotly_text(name)),
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
                        name=text(lang, "{series}: measured", series=plotly_text(name)),
                        text=pts["hover"],
                        hovertemplate="%{text}<extra></extra>",
                        marker=dict(size=10, color=color[name], line=dict(width=1, color="black")),
                    )
                )
    return _layout(fig, axis_title("k", lang), text(lang, "tokens per round E[N]"))


def parity(points, lang: str = "en") -> go.Figure:
    """Measured speedup against the predicted one (basic: circles; measured-cost: diamonds), with y = x."""
    fig = go.Figure()
    lo, hi = np.inf, -np.inf
    for column, symbol, what in (
        ("predicted_speedup", "circle", text(lang, "basic model")),
        ("predicted_speedup_measured_cost", "diamond", text(lang, "measured-cost model")),
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
    return _layout(fig, text(lang, "predicted speedup"), text(lang, "measured speedup"))


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
                hovertemplate=text(lang, "position {x}<br>a = {y}", x="%{x}", y="%{y:.3f}") + "<extra></extra>",
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
    return _layout(fig, text(lang, "draft position i"), text(lang, "acceptance a_i (given positions < i accepted)"))


def cost_breakdown(cells: list[str], draft_ms, verify_ms, other_ms, basic_model_ms, lang: str = "en") -> go.Figure:
    """Mean round time per cell, stacked: K draft steps, the verify forward, everything else; with the
    basic model's round (one target step + K draft steps) as a diamond, so the gap is visible."""
    fig = go.Figure()
    for name, values, color in (
        (text(lang, "draft (K steps)"), draft_ms, "#9ecae1"),
        (text(lang, "verify (K + 1 tokens)"), verify_ms, "#3182bd"),
        (text(lang, "other (rule, bookkeeping)"), other_ms, "#fd8d3c"),
    ):
        fig.add_trace(
            go.Bar(
                x=cells,
                y=values,
                name=name,
                marker_color=color,
                hovertemplate="%{x}<br>" + text(lang, "{name}: {y} ms", name=name, y="%{y:.3f}") + "<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=cells,
            y=basic_model_ms,
            mode="markers",
            name=text(lang, "basic model: T_p + K·T_q"),
            marker=dict(symbol="diamond", size=12, color="black"),
            hovertemplate="%{x}<br>" + text(lang, "basic model round: {y} ms", y="%{y:.3f}") + "<extra></extra>",
        )
    )
    fig.update_layout(barmode="stack")
    return _layout(fig, text(lang, "cell"), text(lang, "ms per round"))


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
    return _layout(fig, text(lang, "batch size B"), text(lang, "measured speedup S"))


def _k_colors(cells) -> dict[str, str]:
    """A colour per "K = k" of a by-group table (:func:`specviz.core.acceptance.by_group`)."""
    return _series_color([f"K = {k}" for k in sorted({int(k) for k in cells["k"]})])


def _interval(g) -> dict:
    """Plotly's asymmetric error bars of α's interval (alpha_lo … alpha_hi) in a by-group table."""
    return dict(type="data", symmetric=False, array=g["alpha_hi"] - g["alpha"], arrayminus=g["alpha"] - g["alpha_lo"])


def acceptance_by_context(buckets, fit=None, lang: str = "en") -> go.Figure:
    """α by context bucket (at the bucket's median context, log axis) with its interval, one colour per K;
    the fitted decay α(L) and its band where ``fit`` (a :class:`specviz.core.acceptance.DecayFit`) is given."""
    fig = go.Figure()
    color = _k_colors(buckets)
    for k, g in buckets.groupby("k", sort=True):
        fig.add_trace(
            go.Scatter(
                x=g["context"],
                y=g["alpha"],
                mode="markers",
                marker=dict(size=9, color=color[f"K = {int(k)}"]),
                error_y=_interval(g),
                name=f"K = {int(k)}",
                customdata=np.column_stack([g["bucket"], g["mean_tokens"], g["rows"]]),
                hovertemplate=text(
                    lang, "{bucket} tokens<br>α = {alpha}<br>E[N] = {mean}<br>{rows} row(s)",
                    bucket="%{customdata[0]}", alpha="%{y:.3f}", mean="%{customdata[1]:.2f}", rows="%{customdata[2]}",
                )
                + "<extra></extra>",
            )
        )  # fmt: skip
    if fit is not None and len(buckets):
        x = np.geomspace(max(float(buckets["context"].min()) / 2, 16.0), float(buckets["context"].max()) * 2, 80)
        lo, hi = fit.band(x)
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[hi, lo[::-1]], fill="toself", line=dict(width=0),
                                 fillcolor="rgba(120,120,120,0.18)", hoverinfo="skip", showlegend=False))  # fmt: skip
        fig.add_trace(
            go.Scatter(x=x, y=fit.alpha(x), mode="lines", line=dict(color=BREAK_EVEN_COLOR, dash="dash"),
                       name=text(lang, "fitted α(L)"), hovertemplate="L = %{x:,.0f}<br>α = %{y:.3f}<extra></extra>")
        )  # fmt: skip
    fig.update_xaxes(type="log")
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, text(lang, "decode context L (tokens)"), text(lang, "acceptance α (95 % interval)"))


def acceptance_by_domain(domains, lang: str = "en") -> go.Figure:
    """α by domain with its interval, grouped bars, one colour per K."""
    fig = go.Figure()
    color = _k_colors(domains)
    for k, g in domains.groupby("k", sort=True):
        fig.add_trace(
            go.Bar(
                x=g["domain"],
                y=g["alpha"],
                marker_color=color[f"K = {int(k)}"],
                error_y=_interval(g),
                name=f"K = {int(k)}",
                hovertemplate="%{x}<br>α = %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, text(lang, "domain"), text(lang, "acceptance α (95 % interval)"))


def n_distribution_figure(frame, lang: str = "en", most: int = 6) -> go.Figure:
    """P(N = n) measured (bars) and the chapter's pmf at the series' α (markers), for the first ``most``
    (series, K) of an :func:`specviz.app.overlays.n_distribution` frame."""
    fig = go.Figure()
    cells = list(dict.fromkeys(zip(frame["series"], frame["k"], strict=True)))[:most]
    color = _series_color([f"{name}, K = {k}" for name, k in cells])
    for name, k in cells:
        g = frame[(frame["series"] == name) & (frame["k"] == k)]
        label, c = f"{plotly_text(name)}, K = {k}", color[f"{name}, K = {k}"]
        fig.add_trace(go.Bar(x=g["n"], y=g["measured"], marker_color=c, name=label, legendgroup=label,
                             hovertemplate="N = %{x}<br>P = %{y:.3f}<extra></extra>"))  # fmt: skip
        fig.add_trace(
            go.Scatter(x=g["n"], y=g["chapter"], mode="markers", marker=dict(symbol="diamond-open", size=11, color=c),
                       name=text(lang, "chapter's pmf at α"), legendgroup=label, showlegend=False,
                       hovertemplate=text(lang, "chapter's pmf at α") + ": %{y:.3f}<extra></extra>")
        )  # fmt: skip
    fig.update_layout(barmode="group")
    return _layout(fig, text(lang, "tokens per round N"), text(lang, "share of rounds"))

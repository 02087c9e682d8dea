"""The Serving page's figures: the deployment's Pareto (tokens/s per GPU against tokens/s per user, with
iso-cost lines) and TPOT by load, one line per option (no speculation and each K), the SLA region shaded.

Their own words come from the catalogues in the ``lang`` given.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from specviz.app.figures.design import compact
from specviz.app.figures.measured import _layout, _series_color
from specviz.base.i18n import text
from specviz.core import tuning

PLAIN_COLOR = "#000000"  #: no speculation: the line every K is judged against
SLA_FILL = "rgba(46, 160, 67, 0.12)"
COST_LINE = "#8c8c8c"  #: iso-cost lines: grey, behind the options' lines
MAX_COST_LINES = 5
COST_LADDERS = ((1, 2, 5), (1, 1.5, 2, 3, 5, 7), tuple(range(1, 10)))  #: round mantissas, coarse to fine


def _colors(frame: pd.DataFrame) -> dict[str, str]:
    """A colour per option (its label): black for no speculation."""
    labels = list(dict.fromkeys(frame["option"]))
    plain = frame.loc[frame["k"] == 0, "option"].iloc[0]
    return {plain: PLAIN_COLOR, **_series_color([x for x in labels if x != plain])}


def _lines(ok: pd.DataFrame):
    """(label, is the option without speculation, its rows) per option, in the order of the options."""
    for label in dict.fromkeys(ok["option"]):
        rows = ok[ok["option"] == label]
        yield label, bool((rows["k"] == 0).all()), rows


def _load_name(mode: str, lang: str) -> str:
    return text(lang, "requests/s") if mode == "open" else text(lang, "users")


def shade_sla(fig: go.Figure, tpot_sla_s: float | None, per_user, lang: str) -> None:
    """Shade the region x ≥ 1 / TPOT limit of a Pareto whose x axis (log) is tokens/s per user."""
    x = np.asarray(per_user, dtype=float)
    if not tpot_sla_s or not len(x):
        return
    x0 = 1.0 / tpot_sla_s
    x1 = max(float(np.nanmax(x)) * 1.1, x0 * 1.1)
    fig.add_vrect(x0=x0, x1=x1, fillcolor=SLA_FILL, line_width=0, layer="below")
    fig.add_annotation(
        x=np.log10(x0),  # an annotation on a log axis is placed in log10 units (a shape in data units)
        y=1,
        yref="paper",
        text=text(lang, "meets TPOT ≤ {ms} ms", ms=f"{tpot_sla_s * 1e3:g}"),
        showarrow=False,
        xanchor="left",
        yanchor="top",
    )


def cost_levels(usd_per_gpu_hour: float, per_gpu) -> list[tuple[float, float]]:
    """(USD per million tokens, tokens/s per GPU) of round costs whose iso-cost line falls within the tokens/s
    per GPU drawn: 1, 2, 5 × 10ⁿ, or a finer ladder of :data:`COST_LADDERS` where that gives fewer than three
    lines; at most :data:`MAX_COST_LINES`, spread evenly."""
    y = np.asarray(per_gpu, dtype=float)
    y = y[np.isfinite(y) & (y > 0)]
    if not len(y) or not (np.isfinite(usd_per_gpu_hour) and usd_per_gpu_hour > 0):
        return []
    lo, hi = (float(tuning.tokens_per_s_at_cost(usd_per_gpu_hour, 1.0) / v) for v in (y.max(), y.min()))
    decades = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    for ladder in COST_LADDERS:
        inside = [m * 10.0**e for e in decades for m in ladder if lo <= m * 10.0**e <= hi]
        if len(inside) >= 3:
            break
    if len(inside) > MAX_COST_LINES:
        inside = [inside[round(i * (len(inside) - 1) / (MAX_COST_LINES - 1))] for i in range(MAX_COST_LINES)]
    return [(c, float(tuning.tokens_per_s_at_cost(usd_per_gpu_hour, c))) for c in inside]


def add_cost_lines(fig: go.Figure, usd_per_gpu_hour: float | None, per_gpu, lang: str, log_y: bool = True) -> None:
    """Dotted iso-cost lines across a Pareto of tokens/s per GPU (cost per token depends on it alone), each
    labelled with its USD per million output tokens at the right edge."""
    if not usd_per_gpu_hour:
        return
    for usd, y in cost_levels(usd_per_gpu_hour, per_gpu):
        fig.add_hline(y=y, line_dash="dot", line_color=COST_LINE, line_width=1, layer="below")
        fig.add_annotation(
            x=1,
            xref="paper",
            y=math.log10(y) if log_y else y,  # an annotation on a log axis is placed in log10 units
            text=text(lang, "USD {usd} / M tokens", usd=f"{usd:g}"),
            showarrow=False,
            xanchor="right",
            yanchor="bottom",
            font=dict(size=11, color=COST_LINE),
        )


def pareto(
    frame: pd.DataFrame, mode: str, tpot_sla_s: float | None, lang: str = "en", usd_per_gpu_hour: float | None = None
) -> go.Figure:
    """Tokens/s per GPU (y) against tokens/s per user (x), one line per option over the loads
    (:func:`specviz.core.serving.steady_state` rows; overloaded loads left out), no speculation in black
    and thicker; where a TPOT limit is given, the region x ≥ 1 / TPOT it allows is shaded; where a price
    per GPU-hour is given, iso-cost lines (:func:`add_cost_lines`)."""
    fig = go.Figure()
    ok = frame[~frame["overloaded"]]
    colors = _colors(frame)
    shade_sla(fig, tpot_sla_s, ok["tokens_per_s_per_user"], lang)
    for option, plain, rows in _lines(ok):
        label = text(lang, "no speculation") if plain else option
        fig.add_trace(
            go.Scatter(
                x=compact(rows["tokens_per_s_per_user"]),
                y=compact(rows["tokens_per_s_per_gpu"]),
                mode="lines+markers",
                name=label,
                line=dict(color=colors[option], width=3 if plain else 1.5),
                customdata=np.stack([rows["load"], rows["batch"], rows["tpot_s"] * 1e3, rows["ttft_s"]], -1),
                hovertemplate=(
                    f"{label}<br>"
                    + text(lang, "load {load}", load="%{customdata[0]:.3g}")
                    + "<br>"
                    + text(lang, "running batch {b}", b="%{customdata[1]:.1f}")
                    + "<br>TPOT %{customdata[2]:.2f} ms, TTFT %{customdata[3]:.3g} s<extra></extra>"
                ),
            )
        )
    return pareto_finish(fig, usd_per_gpu_hour, ok["tokens_per_s_per_gpu"], lang)


def pareto_finish(fig: go.Figure, usd_per_gpu_hour: float | None, per_gpu, lang: str) -> go.Figure:
    """A Pareto's iso-cost lines (:func:`add_cost_lines`), its axis titles and its two log axes."""
    add_cost_lines(fig, usd_per_gpu_hour, per_gpu, lang)
    fig = _layout(fig, text(lang, "tokens/s per user (1 / TPOT)"), text(lang, "output tokens/s per GPU"))
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return fig


def tpot_by_load(frame: pd.DataFrame, mode: str, tpot_sla_s: float | None, lang: str = "en") -> go.Figure:
    """TPOT (ms) against the load, one line per option; the TPOT limit as a dashed line."""
    fig = go.Figure()
    ok = frame[~frame["overloaded"]]
    colors = _colors(frame)
    for option, plain, rows in _lines(ok):
        label = text(lang, "no speculation") if plain else option
        fig.add_trace(
            go.Scatter(
                x=compact(rows["load"]),
                y=compact(rows["tpot_s"] * 1e3),
                mode="lines+markers",
                name=label,
                line=dict(color=colors[option], width=3 if plain else 1.5),
            )
        )
    if tpot_sla_s:
        fig.add_hline(y=tpot_sla_s * 1e3, line_dash="dash", line_color="#2ea043")
    fig = _layout(fig, _load_name(mode, lang), "TPOT (ms)")
    fig.update_xaxes(type="log")
    return fig

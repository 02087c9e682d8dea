"""The Serving page's figures: the deployment's Pareto (tokens/s per GPU against tokens/s per user) and
TPOT by load, one line per option (no speculation and each K), the SLA region shaded.

Their own words come from the catalogues in the ``lang`` given.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from specviz.app.figures.design import compact
from specviz.app.figures.measured import _layout, _series_color
from specviz.base.i18n import text

PLAIN_COLOR = "#000000"  #: no speculation: the line every K is judged against
SLA_FILL = "rgba(46, 160, 67, 0.12)"


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


def pareto(frame: pd.DataFrame, mode: str, tpot_sla_s: float | None, lang: str = "en") -> go.Figure:
    """Tokens/s per GPU (y) against tokens/s per user (x), one line per option over the loads
    (:func:`specviz.core.serving.steady_state` rows; overloaded loads left out), no speculation in black
    and thicker; where a TPOT limit is given, the region x ≥ 1 / TPOT it allows is shaded."""
    fig = go.Figure()
    ok = frame[~frame["overloaded"]]
    colors = _colors(frame)
    if tpot_sla_s and len(ok):
        x0 = 1.0 / tpot_sla_s
        x1 = max(float(ok["tokens_per_s_per_user"].max()) * 1.1, x0 * 1.1)
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

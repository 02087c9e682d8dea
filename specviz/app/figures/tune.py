"""The Tune page's figures: output tokens/s against K, one colour per load, predicted as a line and measured
as dots, the best K of each load ringed; and the tuned server's Pareto with iso-cost lines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from specviz.app.figures.design import compact
from specviz.app.figures.measured import _layout, _series_color
from specviz.app.figures.serving import PLAIN_COLOR, pareto_finish, shade_sla
from specviz.base.i18n import text


def tokens_by_k(table: pd.DataFrame, best: dict[int, int], lang: str = "en") -> go.Figure:
    """``table``: rows of :attr:`specviz.core.tuning.Answer.table`; ``best``: load -> its best K."""
    fig = go.Figure()
    loads = sorted(table["concurrency"].unique())
    colors = _series_color([str(c) for c in loads])
    for c in loads:
        rows = table[table["concurrency"] == c].sort_values("k")
        name = text(lang, "{n} in flight", n=int(c))
        color = colors[str(c)]
        fig.add_trace(
            go.Scatter(
                x=compact(rows["k"]),
                y=compact(rows["tokens_per_s"]),
                mode="lines",
                name=name,
                legendgroup=name,
                line=dict(color=color),
                hovertemplate="K = %{x}<br>%{y:.0f} " + text(lang, "tokens/s (predicted)") + "<extra></extra>",
            )
        )
        seen = rows.dropna(subset=["measured_tokens_per_s"])
        fig.add_trace(
            go.Scatter(
                x=compact(seen["k"]),
                y=compact(seen["measured_tokens_per_s"]),
                mode="markers",
                name=name,
                legendgroup=name,
                showlegend=False,
                marker=dict(color=color, size=8),
                hovertemplate="K = %{x}<br>%{y:.0f} " + text(lang, "tokens/s (measured)") + "<extra></extra>",
            )
        )
        k = best.get(int(c))
        at = rows[rows["k"] == k]
        if len(at):
            fig.add_trace(
                go.Scatter(
                    x=compact(at["k"]),
                    y=compact(at["tokens_per_s"]),
                    mode="markers",
                    showlegend=False,
                    legendgroup=name,
                    marker=dict(color="rgba(0,0,0,0)", size=16, line=dict(color=color, width=2)),
                    hoverinfo="skip",
                )
            )
    return _layout(fig, "K", text(lang, "output tokens/s"))


def pareto(
    frame: pd.DataFrame, usd_per_gpu_hour: float | None, tpot_sla_s: float | None, lang: str = "en"
) -> go.Figure:
    """Tokens/s per GPU (y) against tokens/s per user (x) of a :func:`specviz.core.tuning.priced` frame, one
    line per K over the loads (no speculation black and thicker), the TPOT limit's region shaded and
    iso-cost lines at the price per GPU-hour."""
    fig = go.Figure()
    shade_sla(fig, tpot_sla_s, frame["per_user"], lang)
    ks = sorted(int(k) for k in frame["k"].unique())
    colors = _series_color([str(k) for k in ks if k])
    for k in ks:
        rows = frame[frame["k"] == k].sort_values("concurrency")
        name = text(lang, "no speculation") if k == 0 else f"K = {k}"
        fig.add_trace(
            go.Scatter(
                x=compact(rows["per_user"]),
                y=compact(rows["per_gpu"]),
                mode="lines+markers",
                name=name,
                line=dict(color=PLAIN_COLOR if k == 0 else colors[str(k)], width=3 if k == 0 else 1.5),
                customdata=np.stack([rows["concurrency"], rows["usd_per_m"]], -1),
                hovertemplate=(
                    f"{name}<br>"
                    + text(lang, "{n} in flight", n="%{customdata[0]:.0f}")
                    + "<br>%{x:.1f} "
                    + text(lang, "tokens/s per user")
                    + ", %{y:.1f} "
                    + text(lang, "tokens/s per GPU")
                    + "<br>"
                    + text(lang, "USD {usd} / M tokens", usd="%{customdata[1]:.3g}")
                    + "<extra></extra>"
                ),
            )
        )
    return pareto_finish(fig, usd_per_gpu_hour, frame["per_gpu"], lang)


def k_map(frame: pd.DataFrame, lang: str = "en") -> go.Figure:
    """K*(C, L): the best K (cell text, colour) by requests in flight (x) and prompt length (y) of
    :func:`specviz.core.tuning.k_by_context` rows; hover gives tokens/s and the gain over K = 0."""
    loads = sorted(frame["concurrency"].unique())
    lengths = sorted(frame["context"].unique())
    at = frame.set_index(["context", "concurrency"])
    z = [[float(at.loc[(n, c), "k"]) if (n, c) in at.index else None for c in loads] for n in lengths]
    gain = [[float(at.loc[(n, c), "gain"]) * 100 if (n, c) in at.index else None for c in loads] for n in lengths]
    fig = go.Figure(
        go.Heatmap(
            x=[str(c) for c in loads],
            y=[str(n) if n else text(lang, "as given") for n in lengths],
            z=z,
            text=[["" if v is None else f"{v:.0f}" for v in row] for row in z],
            texttemplate="%{text}",
            customdata=gain,
            colorscale="Blues",
            zmin=0,
            showscale=False,
            hovertemplate="K = %{z}<br>%{customdata:+.1f} % " + text(lang, "vs K = 0") + "<extra></extra>",
        )
    )
    fig = _layout(fig, text(lang, "requests in flight"), text(lang, "prompt tokens"), height=120 + 40 * len(lengths))
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig

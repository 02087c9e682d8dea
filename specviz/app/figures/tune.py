"""The Tune page's figure: output tokens/s against K, one colour per load, predicted as a line and measured
as dots, the best K of each load ringed."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from specviz.app.figures.design import compact
from specviz.app.figures.measured import _layout, _series_color
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

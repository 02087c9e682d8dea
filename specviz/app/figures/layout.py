"""The layout every chart shares (:func:`readable`): legend above the plot, log ticks that write their values.

``ui.chart`` applies it to every chart, so a figure builder sets only what is its own (titles, heights,
axes). A legend lies in a row above the plot area, left-aligned, in a margin plotly reserves for it as it
wraps on a narrow screen, so it never covers data; a chart's title becomes the legend's heading, so the two
never overlap. A log axis labels each tick with its value (0.5, 20, 2,000), never plotly's bare mantissa
("5" at 0.5). A trace without a hover text of its own reads its values against the axis titles, which
carry the units. No chart has a fixed width: each fills its container.
"""

from __future__ import annotations

import plotly.graph_objects as go

#: d3 format of a log axis' tick labels: the value, thousands separated, no trailing zeros
LOG_TICKFORMAT = ",~g"
_XY = ("scatter", "scattergl", "bar")  #: trace types drawn as values at (x, y)
LEGEND = dict(orientation="h", x=0.0, xanchor="left", y=1.02, yanchor="bottom", yref="paper")


def _log_ticks(axis) -> None:
    if axis.type == "log" and not axis.tickformat and axis.tickmode != "array":
        axis.tickformat = LOG_TICKFORMAT


def _title(layout, axis: str) -> str:
    """The title of axis ``axis`` ("x", "y2", …) of ``layout`` ("" where it has none)."""
    name = f"{axis[0]}axis{axis[1:]}"
    return (layout[name].title.text or "") if name in layout else ""


def _hover(fig: go.Figure) -> None:
    """Every x/y trace without a hover text of its own: its values against the axis titles (with their units)."""
    for trace in fig.data:
        if trace.hovertemplate or trace.hoverinfo in ("skip", "none", "text") or trace.type not in _XY:
            continue
        x, y = _title(fig.layout, trace.xaxis or "x"), _title(fig.layout, trace.yaxis or "y")
        x, y = (f"{x}: " if x else "x = "), (f"{y}: " if y else "y = ")
        trace.hovertemplate = f"{x}%{{x}}<br>{y}%{{y}}"


NO_LEGEND = ("heatmap", "surface", "contour", "histogram2d", "histogram2dcontour")  #: traces plotly never lists


def _legend_items(fig: go.Figure) -> int:
    """How many traces the legend lists: named, not hidden from it, of a kind plotly lists."""
    return sum(bool(t.name) and t.showlegend is not False and t.type not in NO_LEGEND for t in fig.data)


def readable(fig: go.Figure) -> go.Figure:
    """``fig`` laid out to read at a glance at any width (changed in place, and returned): the legend above
    the plot area (the title, if any, as its heading), log ticks as values, hover texts with units, the width
    the container's."""
    title = fig.layout.title.text
    legend = dict(LEGEND)
    if title and _legend_items(fig):  # a chart without legend entries (a heatmap) keeps its own title
        legend["title"] = dict(text=f"<b>{title}</b>", side="top left", font=dict(size=14))
        fig.update_layout(title_text=None, showlegend=True)
    fig.update_layout(legend=legend, width=None, autosize=True)
    fig.for_each_xaxis(_log_ticks)
    fig.for_each_yaxis(_log_ticks)
    _hover(fig)
    return fig

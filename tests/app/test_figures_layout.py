"""The layout every chart shares (:func:`specviz.app.figures.readable`, applied by ``ui.chart``) and the
tree's depth axis: legends above the plot area with the title as their heading, log ticks that write their
values, hover texts naming the axes (and so their units), no fixed width; depth labelled 0, 1, 2 from the root.

The drawn result, in Chromium at 1280 and 390 px, is tests/browser/test_browser_layout.py's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from specviz.app import figures
from specviz.app.figures import hardware as hardware_figures


def test_the_legend_lies_above_the_plot_area_and_a_title_heads_it():
    fig = go.Figure([go.Scatter(x=[1, 2], y=[3, 4], name="a"), go.Scatter(x=[1, 2], y=[4, 5], name="b")])
    fig.update_layout(title="Roofline", legend=dict(y=0.5, yanchor="top"), width=900)
    figures.readable(fig)
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.y > 1 and legend.yanchor == "bottom" and legend.yref == "paper"
    assert legend.title.text == "<b>Roofline</b>" and not fig.layout.title.text  # never two texts in one margin
    assert fig.layout.width is None and fig.layout.autosize
    assert figures.readable(fig).layout.legend.title.text == "<b>Roofline</b>"  # applying it twice changes nothing


def test_log_axes_write_their_values_and_given_ticks_stay():
    fig = go.Figure(go.Scatter(x=[0.5, 20, 2000], y=[1, 2, 3], xaxis="x", yaxis="y"))
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log", tickmode="array", tickvals=[1, 2], ticktext=["one", "two"])
    figures.readable(fig)
    assert fig.layout.xaxis.tickformat == ",~g"  # 0.5, 20, 2,000: never plotly's bare "5" at 0.5
    assert fig.layout.yaxis.tickformat is None  # labels the figure gave are its own


def test_every_trace_without_a_hover_reads_against_the_axis_titles():
    """k over rounds had no hover of its own: its values now read against "round" and "drafts verified"."""
    fig = figures.k_over_rounds({"fixed": np.array([3, 4, 2])})
    figures.readable(fig)
    assert fig.data[0].hovertemplate == "round: %{x}<br>drafts verified: %{y}"
    frame = pd.DataFrame({"batch": [1, 2], "c": [5.0, 4.0], "v": [1.1, 1.2]})
    costs = figures.readable(hardware_figures.costs_by_batch(frame, k=4, lang="zh"))
    assert costs.data[0].hovertemplate == "批大小 B: %{x}<br>c: %{y}"
    assert costs.data[1].hovertemplate == "批大小 B: %{x}<br>v: %{y}"  # the right-hand axis' title


def test_hovers_a_figure_gave_are_kept():
    fig = figures.pmf_figure(np.array([0.5, 0.3, 0.2]), 1.7)
    before = fig.data[0].hovertemplate
    assert figures.readable(fig).data[0].hovertemplate == before


def test_tree_depth_axis_reads_0_1_2_from_the_root():
    x, y = np.array([0.0, -1.0, 1.0, -1.0]), np.array([0.0, -1.0, -1.0, -2.0])
    fig = figures.tree_figure(x, y, [-1, 0, 0, 1], np.array([1.0, 0.6, 0.3, 0.4]), ["•", "1", "2", "1"])
    axis = fig.layout.yaxis
    assert list(axis.ticktext) == ["2", "1", "0"] and list(axis.tickvals) == [-2.0, -1.0, 0.0]

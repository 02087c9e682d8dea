"""The Server monitor's figures: acceptance by position, tokens/s and the draft overhead over time."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specviz.app.figures.design import _FASTER
from specviz.app.figures.measured import _layout
from specviz.base.i18n import text


def acceptance_by_position(unconditional: np.ndarray, conditional: np.ndarray, lang: str = "en") -> go.Figure:
    """An engine's acceptance by draft position i = 1..P: u_i (share of drafts accepting ≥ i tokens)
    and a_i = u_i / u_(i−1) (given the positions before it accepted), as grouped bars."""
    positions = np.arange(1, len(unconditional) + 1)
    fig = go.Figure()
    for y, name, color in (
        (conditional, text(lang, "conditional a_i"), _FASTER),
        (unconditional, text(lang, "unconditional u_i (the serving stack's per-position rate)"), "#92c5de"),
    ):
        fig.add_trace(
            go.Bar(x=positions, y=y, name=name, marker_color=color, hovertemplate="i = %{x}<br>%{y:.3f}<extra></extra>")
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(range=[0, 1.02])
    fig.update_xaxes(dtick=1)
    return _layout(fig, text(lang, "draft position i"), text(lang, "acceptance"), height=320)


def stack_rates(frame, lang: str = "en") -> go.Figure:
    """Drafted and accepted tokens per second over time (one point per poll interval), with the
    mean acceptance length on a second axis."""
    fig = go.Figure()
    for column, name, color in (
        ("drafted_per_s", text(lang, "drafted tokens/s"), "#92c5de"),
        ("accepted_per_s", text(lang, "accepted tokens/s"), _FASTER),
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
            name=text(lang, "mean acceptance length"),
            mode="lines",
            yaxis="y2",
            line=dict(color="black", dash="dot"),
            hovertemplate="t = %{x:.0f} s<br>E[N] = %{y:.2f}<extra></extra>",
        )
    )
    fig.update_layout(
        yaxis2=dict(title=text(lang, "mean acceptance length"), overlaying="y", side="right", rangemode="tozero")
    )
    return _layout(fig, text(lang, "seconds since monitoring started"), "tokens/s", height=320)


def draft_overhead(frame, lang: str = "en") -> go.Figure:
    """The share of iteration time an engine spent drafting, over time (one point per reading that
    reports it: TensorRT-LLM's draftOverhead)."""
    fig = go.Figure(
        go.Scatter(
            x=frame["time"],
            y=frame["draft_overhead"],
            name=text(lang, "draft overhead"),
            mode="lines+markers",
            line=dict(color=_FASTER),
            hovertemplate="t = %{x:.0f} s<br>%{y:.1%}<extra></extra>",
        )
    )
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    return _layout(
        fig, text(lang, "seconds since monitoring started"), text(lang, "share of iteration time drafting"), height=280
    )

"""The rejection-sampling lab's figures: p, q and the residual, the histogram of N, emitted against target."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specviz.base.i18n import text

# ----------------------------------------------------------------------------- rejection-sampling lab


def distribution_bars(p: np.ndarray, q: np.ndarray, lang: str = "en") -> go.Figure:
    """p, q, min(p, q) and the residual (p − q)⁺ over the vocabulary (chapter §6.4).

    The accepted mass min(p, q) plus the residual (p − q)⁺ stack up to exactly p.
    """
    x = np.arange(len(p))
    fig = go.Figure()
    fig.add_trace(
        go.Bar(x=x, y=np.minimum(p, q), name=text(lang, "min(p, q) — accepted directly"), marker_color="#2ca02c")
    )
    fig.add_trace(
        go.Bar(
            x=x,
            y=np.clip(p - q, 0, None),
            name=text(lang, "(p − q)⁺ — residual, resampled after a rejection"),
            marker_color="#ff7f0e",
        )
    )
    _target_and_draft(fig, x, p, q, lang)
    fig.update_layout(
        barmode="stack",
        xaxis_title=text(lang, "token x"),
        yaxis_title=text(lang, "probability"),
        height=380,
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
            name=text(lang, "p (target)"),
            line=dict(color="black"),
            marker=dict(size=4),
        )
    )
    fig.add_trace(
        go.Scatter(x=x, y=q, mode="lines", name=text(lang, "q (draft)"), line=dict(color="#1f77b4", dash="dot"))
    )


def n_histogram(
    n_counts: np.ndarray, pmf: np.ndarray, rounds: int, observed: str | None = None, lang: str = "en"
) -> go.Figure:
    """Observed frequency of N = 1..K+1 (bars named ``observed``, by default "simulated" in ``lang``)
    against the pmf P(N = i)."""
    i = np.arange(1, len(pmf) + 1)
    name = text(lang, "simulated") if observed is None else observed
    fig = go.Figure(go.Bar(x=i, y=n_counts / rounds, name=name, marker_color="#1f77b4"))
    fig.add_trace(
        go.Scatter(
            x=i,
            y=pmf,
            mode="markers",
            name=text(lang, "P(N = i), formula"),
            marker=dict(size=12, symbol="diamond", color="black"),
        )
    )
    fig.update_layout(
        xaxis_title=text(lang, "N (tokens in a round)"),
        yaxis_title=text(lang, "frequency"),
        height=340,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    fig.update_xaxes(dtick=1)
    return fig


def emitted_vs_target(freq: np.ndarray, p: np.ndarray, q: np.ndarray, lang: str = "en") -> go.Figure:
    """Empirical frequency of the emitted tokens against the target p (and the draft q for reference)."""
    x = np.arange(len(p))
    fig = go.Figure(go.Bar(x=x, y=freq, name=text(lang, "emitted (simulated)"), marker_color="#9467bd"))
    _target_and_draft(fig, x, p, q, lang)
    fig.update_layout(
        xaxis_title=text(lang, "token x"),
        yaxis_title=text(lang, "probability"),
        height=360,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return fig

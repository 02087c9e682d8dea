"""The Drafting strategies figures: token trees, tokens per round by budget, measured against predicted,
draft-length policies (bars, K over rounds, histograms, sweeps) and n-gram drafts."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specviz.app.figures.design import compact
from specviz.app.figures.measured import _layout, plotly_text
from specviz.base import i18n
from specviz.base.i18n import N_, text

SHAPE_NAMES = {
    "chain": N_("chain"),
    "independent chains": N_("independent chains"),
    "top-k tree": N_("top-k tree"),
    "optimal tree": N_("optimal tree"),
}  #: tree shape -> its name


def tree_figure(x, y, parents, path_prob, labels, lang: str = "en") -> go.Figure:
    """A draft tree: node i at (x[i], y[i]) (y = −depth), edges to ``parents``, coloured by path probability."""
    ex, ey = [], []
    for i, parent in enumerate(parents):
        if parent >= 0:
            ex += [x[parent], x[i], None]
            ey += [y[parent], y[i], None]
    fig = go.Figure(
        [
            go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#999", width=1), hoverinfo="skip", showlegend=False),
            go.Scatter(
                x=compact(x),
                y=compact(y),
                mode="markers+text",
                text=labels,
                textposition="middle center",
                textfont=dict(size=9, color="white"),
                marker=dict(
                    size=18,
                    color=compact(path_prob),
                    colorscale="Viridis",
                    cmin=0,
                    cmax=1,
                    colorbar=dict(title=dict(text=text(lang, "P(path)"))),
                ),
                customdata=compact(path_prob),
                hovertemplate=text(lang, "rank {rank}<br>P(reached) = {p}", rank="%{text}", p="%{customdata:.3f}")
                + "<extra></extra>",
                showlegend=False,
            ),
        ]
    )
    fig.update_xaxes(visible=False)
    depths = sorted(set(np.asarray(y).tolist()))  # drawn at y = −depth, the root on top, labelled 0, 1, 2, …
    fig.update_yaxes(title=text(lang, "depth"), tickvals=depths, ticktext=[f"{abs(d):g}" for d in depths])
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=30, b=10))
    return fig


def tokens_by_budget(frame, lang: str = "en") -> go.Figure:
    """Expected tokens per round against the draft budget, one line per tree shape."""
    fig = go.Figure()
    for shape, part in frame.groupby("shape", sort=False):
        shape = i18n.name(lang, SHAPE_NAMES, shape)
        fig.add_trace(
            go.Scatter(
                x=part["budget"],
                y=compact(part["expected_tokens"]),
                mode="lines+markers",
                name=plotly_text(shape),
                hovertemplate=text(
                    lang, "{shape}<br>budget {x}<br>F = {y}", shape=plotly_text(shape), x="%{x}", y="%{y:.3f}"
                )
                + "<extra></extra>",
            )
        )
    fig.update_xaxes(type="log")
    return _layout(fig, text(lang, "draft tokens per round (budget)"), text(lang, "expected tokens per round F"))


def measured_vs_predicted(cells: list[str], measured, predicted, y: str, what: str, lang: str = "en") -> go.Figure:
    """One pair of bars per cell: the measured value and the model's prediction (``what`` names the model;
    ``what`` and the y-axis title ``y`` are the caller's, shown as given)."""
    fig = go.Figure()
    for name, values, color in ((text(lang, "measured"), measured, "#3182bd"), (what, predicted, "#bdbdbd")):
        fig.add_trace(
            go.Bar(
                x=[plotly_text(c) for c in cells],
                y=compact(values),
                name=name,
                marker_color=color,
                hovertemplate="%{x}<br>" + plotly_text(name) + ": %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(barmode="group")
    return _layout(fig, text(lang, "cell"), y)


POLICY_COLORS = {"rule": "#3182bd", "best static K": "#969696", "oracle": "#d62728"}


def policy_bars(frame, lang: str = "en") -> go.Figure:
    """Speedup of each draft-length rule (``policies.compare``), with the best static K and the oracle."""
    fig = go.Figure(
        go.Bar(
            x=[plotly_text(i18n.localized(p, lang)) for p in frame["policy"]],
            y=compact(frame["speedup"]),
            marker_color=[POLICY_COLORS[k] for k in frame["kind"]],
            customdata=np.stack([frame["tokens_per_round"], frame["drafts_per_round"]], axis=-1),
            hovertemplate="%{x}<br>S = %{y:.3f}×<br>"
            + text(
                lang,
                "tokens / round {tokens}, drafts / round {drafts}",
                tokens="%{customdata[0]:.2f}",
                drafts="%{customdata[1]:.2f}",
            )
            + "<extra></extra>",
        )
    )
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    return _layout(fig, text(lang, "draft-length rule"), text(lang, N_("speedup over target-only")))


def k_over_rounds(ks: dict[str, np.ndarray], rounds: int = 200, lang: str = "en") -> go.Figure:
    """Drafts verified in each of the first ``rounds`` rounds, one line per rule."""
    fig = go.Figure()
    for rule, k in ks.items():
        k = np.asarray(k)[:rounds]
        shown = plotly_text(i18n.localized(rule, lang))
        fig.add_trace(go.Scatter(x=np.arange(1, len(k) + 1), y=k, mode="lines", name=shown, line=dict(shape="hv")))
    return _layout(fig, text(lang, "round"), text(lang, "drafts verified"))


def draft_length_histogram(ks: dict[str, np.ndarray], k_max: int, lang: str = "en") -> go.Figure:
    """Share of rounds verifying 0..K_max drafts, one bar series per rule."""
    fig = go.Figure()
    bins = np.arange(k_max + 1)
    for rule, k in ks.items():
        share = np.bincount(np.asarray(k, dtype=np.int64), minlength=k_max + 1)[: k_max + 1] / max(len(k), 1)
        fig.add_trace(go.Bar(x=bins, y=share, name=plotly_text(i18n.localized(rule, lang))))
    fig.update_layout(barmode="group")
    return _layout(fig, text(lang, "drafts verified in a round"), text(lang, "share of rounds"))


def policy_sweep(frame, name: str, best_static: float, oracle: float, lang: str = "en") -> go.Figure:
    """Speedup against one rule's parameter (``policies.sweep``), with the best static K and the oracle as lines."""
    fig = go.Figure(
        go.Scatter(x=compact(frame["value"]), y=compact(frame["speedup"]), mode="lines+markers", name=plotly_text(name))
    )
    fig.add_hline(
        y=best_static,
        line_dash="dot",
        line_color=POLICY_COLORS["best static K"],
        annotation_text=text(lang, "best static K"),
    )
    fig.add_hline(y=oracle, line_dash="dot", line_color=POLICY_COLORS["oracle"], annotation_text=text(lang, "oracle"))
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    return _layout(fig, plotly_text(name), text(lang, N_("speedup over target-only")))


def ngram_by_k(frame, lang: str = "en") -> go.Figure:
    """Prompt lookup's tokens per round and speedup against K, one line per rule (``ngram.lookup_table``)."""
    fig = go.Figure()
    for rule, part in frame.groupby("rule", sort=False):
        fig.add_trace(
            go.Scatter(
                x=part["k"],
                y=compact(part["tokens_per_round"]),
                mode="lines+markers",
                name=text(lang, "{rule}: tokens / round", rule=rule),
            )
        )
        fig.add_trace(
            go.Scatter(
                x=part["k"],
                y=compact(part["speedup"]),
                mode="lines+markers",
                name=text(lang, "{rule}: speedup", rule=rule),
                line=dict(dash="dot"),
            )
        )
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    return _layout(fig, text(lang, "K (most drafted tokens a round)"), text(lang, "tokens per round / speedup"))

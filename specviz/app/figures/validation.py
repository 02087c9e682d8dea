"""The Validation page's figures: predicted against measured, per published row and for your own rows.

Their own words come from the catalogues in the ``lang`` given; stack, source and model names from
the data stay as they are (escaped for plotly, :func:`specviz.app.figures.measured.plotly_text`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from specviz.app.figures.design import compact
from specviz.app.figures.measured import _layout, _series_color, parity_lines, plotly_text
from specviz.base.i18n import text
from specviz.core import regimes
from specviz.core.published import regime_keys

SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon", "pentagon", "triangle-down")
YOURS_COLOR = "#000000"
PUBLISHED, YOURS = "published", "yours"  #: the ``meta`` of a marker trace: whose rows it draws
_LOCATOR_CHARS = 120  #: characters of a source locator shown in a hover (the CSV holds it whole)


def _hover(frame: pd.DataFrame, lang: str) -> list[str]:
    """One hover text per row: row id, target, draft / method, GPU, batch, ratio, the source's locator."""
    out = []
    for r in frame.itertuples(index=False):
        draft = f"{r.draft} ({r.method})" if isinstance(r.draft, str) and r.draft else str(r.method)
        source = str(getattr(r, "source", "") or "")
        if len(source) > _LOCATOR_CHARS:
            source = source[: _LOCATOR_CHARS - 1] + "…"
        lines = [
            f"<b>{plotly_text(r.row_id)}</b>",
            text(lang, "target: {target}", target=plotly_text(r.target)),
            text(lang, "draft / method: {draft}", draft=plotly_text(draft)),
            text(lang, "GPU: {gpu} (TP {tp}), batch {batch}", gpu=plotly_text(r.gpu), tp=r.tp, batch=r.batch),
            text(
                lang,
                "measured {measured}, predicted {predicted}, ratio {ratio}",
                measured=f"{r.measured:.4g}",
                predicted=f"{r.predicted:.4g}",
                ratio=f"{r.ratio:.3f}",
            ),
            text(
                lang,
                "serving stack {stack}; source {source}",
                stack=plotly_text(r.stack),
                source=plotly_text(r.source_id),
            ),
        ]
        if source:
            lines.append(plotly_text(source))
        out.append("<br>".join(lines))
    return out


def parity(published: pd.DataFrame, yours: pd.DataFrame | None, kind: str, band: float, lang: str = "en") -> go.Figure:
    """Predicted against measured on log-log axes for the rows of ``kind`` (``"speedup"`` or ``"step"``):
    the line y = x, a shaded band y = x·(1 ± ``band``), the published rows coloured by regime
    (:mod:`specviz.core.regimes`) with a symbol per source (``meta`` "published"), your rows as black stars
    (``meta`` "yours").

    ``published`` and ``yours`` hold ``measured``, ``predicted``, ``ratio`` and the columns of
    ``data/validation/measurements.csv``.
    """
    parts = [published[published["kind"] == kind]]
    mine = yours[yours["kind"] == kind] if yours is not None and len(yours) else None
    values = np.concatenate(
        [p[["measured", "predicted"]].to_numpy(float).ravel() for p in (*parts, mine) if p is not None]
    )
    fig = go.Figure()
    if len(values):
        lo, hi = float(values.min()) / 1.3, float(values.max()) * 1.3
        x = np.geomspace(lo, hi, 32)
        fig.add_trace(
            go.Scatter(x=x, y=x * (1 - band), mode="lines", line=dict(width=0), showlegend=False, hoverinfo="skip")
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=x * (1 + band),
                mode="lines",
                line=dict(width=0),
                fill="tonexty",
                fillcolor="rgba(120, 120, 120, 0.18)",
                name=text(lang, "within ±{band}", band=f"{band:.0%}"),
                hoverinfo="skip",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[lo, hi],
                y=[lo, hi],
                mode="lines",
                line=dict(color="black", width=1),
                name=text(lang, "predicted = measured"),
                hoverinfo="skip",
            )
        )
    rows = parts[0]
    if "regime" not in rows:  # a frame from before regimes: each row's regime from its own columns
        rows = rows.assign(regime=regime_keys(rows))
    colors = _series_color(sorted(rows["regime"].unique()))
    symbols = {s: SYMBOLS[i % len(SYMBOLS)] for i, s in enumerate(sorted(rows["source_id"].unique()))}
    shown = set()
    for (key, source), part in rows.groupby(["regime", "source_id"], sort=True):
        name = regimes.label(regimes.Regime.from_key(key), lambda s: text(lang, s))
        fig.add_trace(
            go.Scatter(
                x=compact(part["measured"]),
                y=compact(part["predicted"]),
                mode="markers",
                marker=dict(color=colors[key], symbol=symbols[source], size=9, line=dict(width=0.5, color="white")),
                name=plotly_text(name),
                legendgroup=plotly_text(key),
                showlegend=key not in shown,
                meta=PUBLISHED,
                hovertext=[f"{h}<br>{plotly_text(name)}" for h in _hover(part, lang)],
                hoverinfo="text",
            )
        )
        shown.add(key)
    if mine is not None:
        fig.add_trace(
            go.Scatter(
                x=compact(mine["measured"]),
                y=compact(mine["predicted"]),
                mode="markers",
                marker=dict(color=YOURS_COLOR, symbol="star", size=13, line=dict(width=1, color="white")),
                name=text(lang, "your rows"),
                meta=YOURS,
                hovertext=_hover(mine, lang),
                hoverinfo="text",
            )
        )
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    if kind == "step":
        axes = text(lang, "measured step time (ms)"), text(lang, "predicted step time (ms)")
    else:
        axes = text(lang, "measured speedup"), text(lang, "predicted speedup")
    return _layout(fig, *axes, height=520)


def fit_parity(rows: pd.DataFrame, band: float, lang: str = "en") -> go.Figure:
    """Your rows predicted by the fitted profile (``predicted``) and by its base (``base_predicted``)
    against measured, all kinds on one log-log chart (step times in ms and speedups differ by orders of
    magnitude, so each kind keeps its own symbol), with y = x and the ±``band`` lines."""
    fig = go.Figure()
    both = rows[["measured", "predicted", "base_predicted"]].to_numpy()
    lo, hi = float(both.min()) / 1.3, float(both.max()) * 1.3
    fig.add_traces(parity_lines(lo, hi, band, lang))
    for column, name, color in (
        ("base_predicted", text(lang, "base profile"), "#999999"),
        ("predicted", text(lang, "fitted profile"), "#d62728"),
    ):
        for kind, symbol in (("step", "circle"), ("speedup", "diamond")):
            part = rows[rows["kind"] == kind]
            if part.empty:
                continue
            fig.add_trace(
                go.Scatter(
                    x=compact(part["measured"]),
                    y=compact(part[column]),
                    mode="markers",
                    marker=dict(color=color, symbol=symbol, size=9),
                    name=f"{name} · {text(lang, 'step time (ms)') if kind == 'step' else text(lang, 'speedup')}",
                    hovertext=[plotly_text(r) for r in part["row_id"]],
                    hovertemplate="%{hovertext}<br>%{x:.4g} → %{y:.4g}<extra></extra>",
                )
            )
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return _layout(fig, text(lang, "measured"), text(lang, "predicted"), height=460)

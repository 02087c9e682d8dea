"""Plotly figures of the roofline cost model (specviz.core.hardware): data in, figures out.

Their own words come from the catalogues (keys ``hwfig.*``, and the shared ``fig.*`` ones) in the ``lang``
given, English by default; operator and model names from the data stay as they are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from specviz.app.figures.design import _qualitative, axis_title, compact, log_ticks, stepped
from specviz.app.figures.measured import _layout, parity_lines, plotly_text
from specviz.base import i18n
from specviz.base.i18n import N_, text

BOUND_COLORS = {"memory": "#1f77b4", "compute": "#d62728", "network": "#9467bd", "overhead": "#7f7f7f"}
BOUND_NAMES = {
    "memory": N_("memory-bound"),
    "compute": N_("compute-bound"),
    "network": N_("network-bound"),
    "overhead": N_("overhead-bound"),
}  #: bound -> its legend name
OPERATOR_NAMES = {
    "q/k/v/o projections": N_("q/k/v/o projections"),
    "attention": N_("attention"),
    "MLP": N_("MLP"),
    "norms & residual": N_("norms & residual"),
    "LM head": N_("LM head"),
    "all-reduce": N_("all-reduce"),
    "fusion fc": N_("fusion fc"),
    "fixed overhead": N_("fixed overhead"),
}  #: roofline operator -> its name


def bound_name(bound: str, lang: str = "en") -> str:
    """The legend name of operators limited by ``bound`` ("memory-bound", …) in ``lang``."""
    if bound in BOUND_COLORS:
        return text(lang, BOUND_NAMES[bound])
    return text(lang, "{bound}-bound", bound=bound)


def roofline(table: pd.DataFrame, peak_flops: float, bandwidth: float, title: str = "", lang: str = "en") -> go.Figure:
    """Operators at (arithmetic intensity, attained FLOP/s) under the roof min(peak, bandwidth · I).

    ``table`` is :func:`specviz.core.hardware.step_breakdown`; ``peak_flops`` and ``bandwidth`` are the
    attainable figures (datasheet × efficiency), FLOP/s and bytes/s. The ridge point is marked.
    """
    ops = table[(table["flops"] > 0) & (table["bytes"] > 0)]
    ridge = peak_flops / bandwidth
    lo = min(float(ops["intensity"].min()), ridge) / 4 if len(ops) else ridge / 100
    hi = max(float(ops["intensity"].max()), ridge) * 4 if len(ops) else ridge * 100
    x = np.geomspace(lo, hi, 64)
    fig = go.Figure(
        go.Scatter(
            x=x,
            y=np.minimum(peak_flops, bandwidth * x),
            mode="lines",
            name=text(lang, "roof"),
            line=dict(color="black"),
        )
    )
    for bound, part in ops.groupby("bound"):
        fig.add_trace(
            go.Scatter(
                x=part["intensity"],
                y=part["flops"] / part["seconds"],
                mode="markers+text",
                text=[plotly_text(i18n.name(lang, OPERATOR_NAMES, o)) for o in part["operator"]],
                textposition="top center",
                marker=dict(size=11, color=BOUND_COLORS.get(bound, "#555")),
                name=bound_name(bound, lang),
                hovertemplate="%{text}<br>"
                + text(lang, "intensity {x} FLOP/byte", x="%{x:.3g}")
                + "<br>%{y:.3g} FLOP/s<extra></extra>",
            )
        )
    fig.add_vline(x=ridge, line_dash="dot", line_color="gray")
    fig.add_annotation(
        x=np.log10(ridge),
        y=np.log10(peak_flops),
        text=text(lang, "ridge {ridge} FLOP/byte", ridge=f"{ridge:.0f}"),
        yshift=12,
    )
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    fig.update_layout(title=title)
    return _layout(fig, text(lang, "arithmetic intensity (FLOP per byte)"), text(lang, "attained FLOP/s"))


def step_split(table: pd.DataFrame, title: str = "", lang: str = "en") -> go.Figure:
    """Time of one step per operator (ms), coloured by what bounds it (memory, compute, network, overhead)."""
    fig = go.Figure()
    for bound, part in table.groupby("bound", sort=False):
        fig.add_trace(
            go.Bar(
                y=[plotly_text(i18n.name(lang, OPERATOR_NAMES, o)) for o in part["operator"]],
                x=compact(part["seconds"] * 1e3),
                orientation="h",
                name=bound_name(bound, lang),
                marker_color=BOUND_COLORS.get(bound, "#555"),
                hovertemplate="%{y}: %{x:.3f} ms<extra></extra>",
            )
        )
    fig.update_layout(title=title, barmode="stack")
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, text(lang, "milliseconds per step"), "", height=320)


def costs_by_batch(frame: pd.DataFrame, k: int, lang: str = "en") -> go.Figure:
    """c(B) and v(B) at one context (``frame`` from :func:`specviz.core.hardware.speedup_by_batch` plus
    ``v`` at draft length ``k``): c on the left axis, v on the right, B on a log axis."""
    fig = go.Figure(
        [
            go.Scatter(x=frame["batch"], y=frame["c"], mode="lines+markers", name="c = T_target / T_draft"),
            go.Scatter(
                x=frame["batch"],
                y=frame["v"],
                mode="lines+markers",
                name=text(lang, "v at K = {k}", k=k),
                yaxis="y2",
                line_dash="dash",
            ),
        ]
    )
    fig.update_layout(yaxis2=dict(title="v", overlaying="y", side="right", rangemode="tozero"))
    fig.update_xaxes(type="log")
    return _layout(fig, text(lang, "batch size B"), "c")


def speedup_by_batch(frame: pd.DataFrame, k_max: int, lang: str = "en", band: tuple | None = None) -> go.Figure:
    """Speedup vs batch size for each K, K*(B) starred, and where speculation stops paying labelled.

    ``band`` = (batches, low, high) shades the range measured speedups at K* typically fall in (the
    engine profile's 10–90 % error band on held-out published rows)."""
    colours = _qualitative(k_max, has_zero=False)
    fig = go.Figure()
    if band is not None and len(band[0]):
        x, low, high = (np.asarray(a, dtype=float) for a in band)
        fig.add_trace(
            go.Scatter(x=x, y=compact(high), mode="lines", line=dict(width=0), showlegend=False, hoverinfo="skip")
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=compact(low),
                mode="lines",
                line=dict(width=0),
                fill="tonexty",
                fillcolor="rgba(0, 0, 0, 0.12)",
                name=text(lang, "measured at K*, 10–90 %"),
                hovertemplate="B = %{x}<br>%{y:.3f}×<extra></extra>",
            )
        )
    for k in range(1, k_max + 1):
        fig.add_trace(
            go.Scatter(
                x=frame["batch"],
                y=compact(frame[f"s_{k}"]),
                mode="lines",
                name=f"K = {k}",
                line=dict(color=colours[k - 1], width=1.5),
                hovertemplate=f"K = {k}<br>B = %{{x}}<br>S = %{{y:.3f}}×<extra></extra>",
            )
        )
    best = frame[frame["k_star"] > 0]
    fig.add_trace(
        go.Scatter(
            x=best["batch"],
            y=best["speedup_at_k_star"],
            mode="markers+text",
            text=[f"K*={k}" for k in best["k_star"]],
            textposition="top center",
            marker=dict(symbol="star", size=12, color="black"),
            name="K*(B)",
        )
    )
    fig.add_hline(y=1.0, line_dash="dash", line_color="black")
    stop = frame.loc[frame["k_star"] == 0, "batch"]
    if len(stop) and len(best):
        b = int(stop.iloc[0])
        fig.add_vline(x=b, line_dash="dot", line_color="gray")
        fig.add_annotation(
            x=np.log10(b), y=1.0, text=text(lang, "stops paying at B = {b}", b=b), yshift=14, showarrow=False
        )
    fig.update_xaxes(type="log")
    return _layout(fig, text(lang, "batch size B"), axis_title("speedup", lang))


def moe_against_dense(frames: dict[str, pd.DataFrame], k: int, lang: str = "en") -> go.Figure:
    """v(B) at draft length ``k`` (left axis, solid) and K*(B) (right axis, dashed steps) for each
    model of ``frames`` (name -> :func:`specviz.core.hardware.speedup_by_batch` plus ``v``): an MoE
    target beside the dense model of its active size."""
    colours = _qualitative(max(len(frames), 2), has_zero=False)
    fig = go.Figure()
    for colour, (name, frame) in zip(colours, frames.items(), strict=False):
        shown = plotly_text(name)
        fig.add_trace(
            go.Scatter(
                x=frame["batch"],
                y=compact(frame["v"]),
                mode="lines+markers",
                name=text(lang, "v at K = {k}: {model}", k=k, model=shown),
                line=dict(color=colour),
            )
        )
        fig.add_trace(
            go.Scatter(
                x=frame["batch"],
                y=frame["k_star"],
                mode="lines+markers",
                line=dict(color=colour, dash="dash", shape="hv"),
                marker=dict(symbol="star"),
                name=f"K*(B): {shown}",
                yaxis="y2",
            )
        )
    fig.update_layout(yaxis2=dict(title="K*", overlaying="y", side="right", rangemode="tozero", dtick=1))
    fig.update_xaxes(type="log")
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, text(lang, "batch size B"), "v")


def batch_context_map(frame: pd.DataFrame, what: str, lang: str = "en") -> go.Figure:
    """K* or the speedup at K* over (B, L) on log2 axes; the S = 1 frontier drawn on the speedup map.

    ``what``: "k_star" or "speedup_at_k_star". Axes are linear in log2 (one image, no log-axis bricks)
    with ticks labelled in B and L.
    """
    batches, contexts = np.unique(frame["batch"]), np.unique(frame["context"])
    z = frame.pivot(index="context", columns="batch", values=what).to_numpy()  # (nL, nB)
    x, y = compact(np.log2(batches)), compact(np.log2(contexts))
    if what == "k_star":
        levels = np.unique(z)
        lo, hi = int(levels[0]), int(levels[-1])
        trace = go.Heatmap(
            x=x,
            y=y,
            z=compact(z.astype(int)),
            colorscale=stepped(_qualitative(hi - lo + 1, has_zero=lo == 0)),
            zmin=lo - 0.5,
            zmax=hi + 0.5,
            colorbar=dict(
                title=dict(text="K*"),
                tickvals=levels,
                ticktext=[text(lang, "don't speculate") if k == 0 else f"K* = {k}" for k in levels],
            ),
            customdata=np.dstack(np.meshgrid(batches, contexts)),
            hovertemplate="B = %{customdata[0]}<br>L = %{customdata[1]}<br>K* = %{z}<extra></extra>",
        )
        fig = go.Figure(trace)
    else:
        fig = go.Figure(
            go.Heatmap(
                x=x,
                y=y,
                z=compact(z),
                colorscale="RdBu",
                zmid=1.0,
                colorbar=dict(title=dict(text=axis_title("speedup_at_optimal_k", lang))),
                customdata=np.dstack(np.meshgrid(batches, contexts)),
                hovertemplate="B = %{customdata[0]}<br>L = %{customdata[1]}<br>S = %{z:.3f}×<extra></extra>",
            )
        )
        pays = (frame.pivot(index="context", columns="batch", values="k_star").to_numpy() > 0).astype(float)
        if 0 < pays.mean() < 1:
            fig.add_trace(
                go.Contour(
                    x=x,
                    y=y,
                    z=pays,
                    contours=dict(start=0.5, end=0.5, coloring="none"),
                    line=dict(color="black", width=2),
                    showscale=False,
                    hoverinfo="skip",
                    name="S = 1",
                )
            )
    for axis, values in (("xaxis", batches), ("yaxis", contexts)):
        ticks, labels = log_ticks(float(values.min()), float(values.max()))
        fig.update_layout({axis: dict(tickvals=ticks / np.log10(2), ticktext=labels)})
    return _layout(fig, text(lang, "batch size B"), text(lang, "context length L"), height=460)


def calibration_parity(frame: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Predicted against measured forward time (ms, log-log), one colour per model, the line y = x and
    a ±25 % band: how well the roofline fed this machine's microbenchmarks predicts its engine."""
    fig = go.Figure()
    ms = frame[["measured_s", "predicted_s"]].to_numpy() * 1e3
    lo, hi = float(ms.min()) / 1.3, float(ms.max()) * 1.3
    fig.add_traces(parity_lines(lo, hi, 0.25, lang))
    for model, part in frame.groupby("model", sort=False):
        fig.add_trace(
            go.Scatter(
                x=compact(part["measured_s"] * 1e3),
                y=compact(part["predicted_s"] * 1e3),
                mode="markers",
                name=plotly_text(model),
                customdata=np.stack([part["batch"], part["tokens"], part["context"]], axis=-1),
                hovertemplate=plotly_text(model)
                + "<br>B = %{customdata[0]}, n = %{customdata[1]}, L = %{customdata[2]}"
                + "<br>"
                + text(lang, "measured {x} ms, predicted {y} ms", x="%{x:.3f}", y="%{y:.3f}")
                + "<extra></extra>",
            )
        )
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return _layout(fig, text(lang, "measured forward time (ms)"), text(lang, "predicted (ms)"))

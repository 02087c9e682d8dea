"""Plotly figure builders, data in and ``go.Figure`` out, so every chart is testable without a browser.

No streamlit and no computation beyond layout.

Grid arrays go out compact (:func:`compact`): plotly serialises numpy arrays as typed
binary, so float32 and small integers halve to an eighth of the bytes the browser must
receive and decode, and no grid is sent twice (the S = 1 line is a line, not a second
copy of z).

The words a figure writes itself (axis, colour-bar and legend titles, trace names, hover templates,
annotations) come from the catalogues (keys ``fig.*``, :func:`specviz.base.i18n.text`) in the ``lang`` a
builder is given, English by default. Symbols and formulas (α, K, c, E[N], S) and the data's own
labels (series, rules, cells) stay as they are; plotly's ``%{…}`` fields are filled in as values, never
written in a message.

One module per page family: :mod:`.design` (design space, break-even), :mod:`.lab`, :mod:`.measured`,
:mod:`.strategies`, :mod:`.engines`, :mod:`.hardware` (Hardware & batch), :mod:`.budget` (what a
figure may send) and :mod:`.layout` (the layout every chart shares). The package re-exports every builder.
"""

from specviz.app.figures.budget import MAX_POINTS, point_count, trace_points, within_budget
from specviz.app.figures.design import (
    ALPHA_BANDS,
    AXES,
    BREAK_EVEN_COLOR,
    LABEL_LEVELS,
    TITLES,
    axis_title,
    break_even_curves,
    break_even_line,
    break_even_map,
    compact,
    contour_labels,
    drawn,
    grid_figure,
    heatmap_coords,
    log_ticks,
    metrics_vs_alpha,
    optimal_k_map,
    pmf_figure,
    speedup_colorscale,
    speedup_vs_k,
    stepped,
)
from specviz.app.figures.lab import distribution_bars, emitted_vs_target, n_histogram
from specviz.app.figures.layout import readable
from specviz.app.figures.measured import (
    acceptance_by_context,
    acceptance_by_domain,
    cost_breakdown,
    n_distribution_figure,
    overlay_alpha_c,
    overlay_expected_tokens,
    overlay_speedup_vs_k,
    parity,
    per_position_figure,
    plotly_text,
    speedup_by_batch_measured,
)
from specviz.app.figures.monitor import acceptance_by_position, draft_overhead, stack_rates
from specviz.app.figures.strategies import (
    POLICY_COLORS,
    draft_length_histogram,
    k_over_rounds,
    measured_vs_predicted,
    ngram_by_k,
    policy_bars,
    policy_sweep,
    tokens_by_budget,
    tree_figure,
)

__all__ = [
    "ALPHA_BANDS",
    "AXES",
    "BREAK_EVEN_COLOR",
    "LABEL_LEVELS",
    "MAX_POINTS",
    "POLICY_COLORS",
    "TITLES",
    "acceptance_by_context",
    "acceptance_by_domain",
    "acceptance_by_position",
    "axis_title",
    "break_even_curves",
    "break_even_line",
    "break_even_map",
    "compact",
    "contour_labels",
    "cost_breakdown",
    "distribution_bars",
    "draft_length_histogram",
    "draft_overhead",
    "drawn",
    "emitted_vs_target",
    "grid_figure",
    "heatmap_coords",
    "k_over_rounds",
    "log_ticks",
    "measured_vs_predicted",
    "metrics_vs_alpha",
    "n_distribution_figure",
    "n_histogram",
    "ngram_by_k",
    "optimal_k_map",
    "overlay_alpha_c",
    "overlay_expected_tokens",
    "overlay_speedup_vs_k",
    "parity",
    "per_position_figure",
    "plotly_text",
    "pmf_figure",
    "point_count",
    "policy_bars",
    "policy_sweep",
    "readable",
    "speedup_by_batch_measured",
    "speedup_colorscale",
    "speedup_vs_k",
    "stack_rates",
    "stepped",
    "tokens_by_budget",
    "trace_points",
    "tree_figure",
    "within_budget",
]

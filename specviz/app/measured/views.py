"""The measured-data pages' computations, cached and keyed by their scenario: files read, runs filtered,
overlays derived, the published comparison, the speculation-profile export."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pandas as pd

from specviz.app import overlays, ui
from specviz.app.measured.scenarios import Comparison, Published, ReadOptions
from specviz.core import acceptance
from specviz.data import measurements

SEARCHED = (
    "label",
    "target_model",
    "draft_model",
    "hardware",
    "method",
    "source",
    "created_by",
)  #: the filter's columns


@ui.parsed_upload(max_entries=8, ttl=15 * 60)  # an upload's frame (up to 200,000 rows) kept while it is previewed
def parse(data: bytes, name: str, read: ReadOptions):
    """``load_measurements`` of one staged input, cached by content and how it is read."""
    return measurements.load_measurements(
        data, name=name, format=read.format, k=read.k_given or None, mean_tokens_without_bonus=read.no_bonus
    )


heatmap_grid = ui.cached(overlays.heatmap_grid)
reference_table = ui.cached(acceptance.load_reference)


@ui.cached
def domain_priors() -> pd.DataFrame:
    """:func:`acceptance.domain_priors` of the published table."""
    return acceptance.domain_priors(reference_table())


def filter_runs(runs: pd.DataFrame, text: str, facets: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """The library rows whose searched columns contain ``text`` (any case) and, per facet, a chosen value
    (a cell lists its values separated by ", ")."""
    shown = runs
    text = text.strip().lower()
    if text:
        hay = runs[list(SEARCHED)].agg(" ".join, axis=1)
        shown = shown[hay.str.lower().str.contains(text, regex=False)]
    for facet, chosen in facets.items():
        if chosen:
            shown = shown[shown[facet].map(lambda cell, c=chosen: any(v in cell.split(", ") for v in c))]
    return shown


def overlay_points(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs' points (``overlays.with_series``) and their per-position table: the slow steps of a view."""
    points = overlays.with_series(frame)
    return points, overlays.per_position(points)


def overlays_of(engine, runs: pd.DataFrame, scenario: Comparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`overlay_points` of the scenario's runs, computed once per server process for these runs as saved
    (``runs``: the library listing); refused before reading when the runs hold too many rows."""
    overlays.check_rows(int(runs.set_index("id").loc[list(scenario.runs), "n_rows"].sum()))
    return ui.derived_runs(engine, runs, scenario.runs, overlay_points)


def reference_comparison(engine, runs: pd.DataFrame, scenario: Published) -> pd.DataFrame:
    """The scenario's series beside the published acceptance of the same target (``overlays.reference_comparison``)."""
    points, _ = overlays_of(engine, runs, Comparison(scenario.runs))
    return overlays.reference_comparison(points, reference_table(), lang=scenario.lang)


def speculation_profile(engine, runs: pd.DataFrame, ids: Sequence[int]) -> str:
    """The runs ``ids`` as a speculation_profile.json (text); a run without acceptance gives the reason as JSON."""
    try:
        profile = measurements.profile_from_rows(ui.load_runs(engine, runs, ids))
    except ValueError as exc:
        profile = {"error": ui.message(exc)}
    return json.dumps(profile, indent=2, ensure_ascii=False)

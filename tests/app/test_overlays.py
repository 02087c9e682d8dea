"""specviz.app.overlays and the "measured points over the theory" figures of specviz.app.figures.

Frames are built the way the app gets them: load_measurements on CSV text (an upload) and
store.load_runs (the run library, with ``run`` / ``run_id``). Covered: series keys and hover text
escaped for plotly (with_series; labels shown as typed in legends and hovers), per-series α / c / v / o / K* (series_params), the theoretical curves
against specviz.core.theory (curves), per-position tables, the traces of every overlay figure, payload
size, the shipped samples end to end (Leviathan et al. 2023 Table 4 reproduced within 0.1), and a
property test over random valid frames (the starred K* lies on its curve and is its maximum).
"""

from __future__ import annotations

import csv
import io
import re
import warnings

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from _tiers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specviz.app import figures, grids, overlays
from specviz.core import theory
from specviz.data import store
from specviz.data.measurements import SAMPLES_DIR, load_measurements

PARAM_COLUMNS = [
    "series",
    "alpha",
    "c",
    "v",
    "o",
    "has_cost",
    "k_min",
    "k_max",
    "n",
    "k_star_basic",
    "s_star_basic",
    "k_star_cost",
    "s_star_cost",
]
CURVE_COLUMNS = ["series", "k", "expected_tokens", "speedup_basic", "speedup_cost"]
POSITION_COLUMNS = ["series", "k", "position", "a", "alpha_used"]
SAMPLES = (
    "published_leviathan2023.csv",
    "published_spec_bench.csv",
    "published_chen2023.csv",
    "specviz_bench_bundled_cpu.csv",
)
MAX_JSON = 1_000_000  # bytes of figure JSON for 200 rows


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def csv_text(header: list[str], rows: list[list]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows([["" if x is None else x for x in r] for r in rows])
    return buf.getvalue()


def load(text: str, name: str = "upload.csv") -> pd.DataFrame:
    """An upload as the page reads it (bytes), asserting every row loaded."""
    df, report = load_measurements(text.encode("utf-8"), name)
    assert not report.row_errors, report.row_errors
    return df


def pipeline(frame: pd.DataFrame, k_max: int | None = None):
    points = overlays.with_series(frame)
    params = overlays.series_params(points)
    return points, params, overlays.curves(params, k_max)


def small_grid(k: int) -> grids.Grid:
    return grids.speedup_alpha_c_grid(
        grids.lin_axis(0.0, 1.0, 21, "alpha"), grids.log_axis(0.5, 1000.0, 17, "c"), "c", k, 0.0, 0.0
    )


def page_grid(k: int, points: pd.DataFrame) -> grids.Grid:
    """The grid pages/measured-data.py draws the (α, c) map on (overlays.heatmap_grid)."""
    return overlays.heatmap_grid(k, points["c_used"])


def all_figures(points, params, curve, k: int, grid: grids.Grid | None = None) -> dict[str, go.Figure]:
    return {
        "overlay_speedup_vs_k": figures.overlay_speedup_vs_k(points, curve, params),
        "overlay_alpha_c": figures.overlay_alpha_c(grid or small_grid(k), points, k),
        "overlay_expected_tokens": figures.overlay_expected_tokens(points, curve, params),
        "parity": figures.parity(points),
        "per_position_figure": figures.per_position_figure(overlays.per_position(points)),
    }


def named(fig: go.Figure) -> dict[str, go.Scatter]:
    out = {t.name: t for t in fig.data if t.name is not None}
    assert len(out) == sum(t.name is not None for t in fig.data), "trace names must be unique"
    return out


def stars(fig: go.Figure) -> list:
    return [t for t in fig.data if t.type == "scatter" and t.marker.symbol == "star"]


def one(params: pd.DataFrame, series: str) -> pd.Series:
    sel = params[params["series"] == series]
    assert len(sel) == 1, f"series {series!r}: {len(sel)} rows in {list(params['series'])}"
    return sel.iloc[0]


@pytest.fixture
def library(tmp_path):
    eng = store.open_library(f"sqlite:///{tmp_path / 'lib.sqlite'}")
    yield eng
    eng.dispose()


# A small upload: two series with c (one with measured v / o and min / max), one without c.
MIXED = csv_text(
    [
        "label",
        "k",
        "alpha",
        "mean_accepted_tokens",
        "c",
        "v",
        "o",
        "temperature",
        "speedup",
        "speedup_min",
        "speedup_max",
        "per_position_acceptance",
    ],
    [
        ["eagle", 1, 0.5, None, 10, 0.1, None, 0, 1.2, 1.0, 1.5, "0.5"],
        ["eagle", 2, 0.6, None, 40, 0.3, 0.2, 0, 1.6, 1.3, 1.7, "0.6;0.55"],
        ["eagle", 4, 0.95, None, 20, 0.8, None, 0, 2.1, 2.0, 2.4, "nan;0.9;0.95;0.97"],
        ["draft", 3, 0.7, None, 30, None, None, 0, 1.9, None, None, None],
        ["draft", 5, 0.8, None, 50, None, None, 0, 2.2, None, None, None],
        ["ngram", 5, None, 2.5, None, None, None, None, 1.4, None, None, None],
    ],
)
EAGLE, DRAFT, NGRAM = "eagle · T=0", "draft · T=0", "ngram"


# --------------------------------------------------------------------------------------
# with_series and hover_text
# --------------------------------------------------------------------------------------


def test_hover_lists_each_rows_non_empty_fields_in_order_as_written():
    frame = pd.DataFrame(
        {
            "notes": ["n" * 200, ""],
            "k": pd.array([123456, 4], dtype="Int64"),  # an integer column stays integer (no row-wise upcast)
            "label": ["a <b>", None],
            "temperature": [np.nan, 0.5],
        },
        index=[7, 9],
    )
    hover = overlays.hover_text(frame)
    assert hover.index.tolist() == [7, 9]
    assert hover[7] == "label: a &lt;b&gt;<br>K: 123456<br>notes: " + "n" * 159 + "…"
    assert hover[9] == "K: 4<br>T: 0.5"
    assert overlays.hover_text(frame.iloc[:0]).tolist() == []


def test_series_key_is_label_plus_temperature_for_an_upload():
    df = load(
        csv_text(
            ["label", "k", "alpha", "temperature"],
            [["A", 1, 0.7, 0], ["A", 2, 0.7, 0.7], ["A", 3, 0.7, None], ["B", 1, 0.5, 1.25]],
        )
    )
    points = overlays.with_series(df)
    assert list(points["series"]) == ["A · T=0", "A · T=0.7", "A", "B · T=1.25"]
    assert "series" not in df.columns and "hover" not in df.columns, "with_series must not modify its input"
    assert list(points.index) == list(df.index)
    pd.testing.assert_frame_equal(points.drop(columns=["series", "hover"]), df)


def test_series_key_of_library_runs_names_the_run_when_it_differs_from_the_label(library):
    df = load(MIXED)
    ids = [
        store.save_run(library, df, label="eagle", source="t.csv"),
        store.save_run(library, df, label="bench <A> & co", source="t.csv"),
    ]
    frame = store.load_runs(library, ids)
    assert {"run", "run_id"} <= set(frame.columns)
    points = overlays.with_series(frame)
    first, second = points[points["run_id"] == ids[0]], points[points["run_id"] == ids[1]]
    # run "eagle" == label "eagle": the label alone; the other labels of that run are prefixed by the run
    a, b = ids
    assert list(first["series"]) == [f"#{a} eagle · T=0"] * 3 + [f"#{a} eagle · draft · T=0"] * 2 + [
        f"#{a} eagle · ngram"
    ]
    assert list(second["series"]) == (
        [f"#{b} bench <A> & co · eagle · T=0"] * 3
        + [f"#{b} bench <A> & co · draft · T=0"] * 2
        + [f"#{b} bench <A> & co · ngram"]
    )
    # the run's name is in the hover, first and escaped
    assert all(h.startswith("run: bench &lt;A&gt; &amp; co<br>label: ") for h in second["hover"])
    assert all(h.startswith("run: eagle<br>label: ") for h in first["hover"])
    # an empty run name falls back to the label
    blank = overlays.with_series(frame.assign(run=[""] * len(frame)))
    assert list(blank["series"][:6]) == [f"#{a} {EAGLE}"] * 3 + [f"#{a} {DRAFT}"] * 2 + [f"#{a} {NGRAM}"]
    # library frames give the same parameters and curves as the upload they were saved from
    params, upload = overlays.series_params(points), overlays.series_params(overlays.with_series(df))
    assert list(params["n"]) == [3, 2, 1, 3, 2, 1]
    mine = params[params["series"].str.startswith(f"#{b} bench <A> & co · ")].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine.drop(columns="series"), upload.drop(columns="series"))
    curve = overlays.curves(params)
    assert len(curve) == 2 * len(overlays.curves(upload))


def test_hover_holds_the_rows_metadata_escaped_for_plotly():
    df = load(
        csv_text(
            ["label", "k", "alpha", "c", "temperature", "speedup", "target_model", "draft_model", "hardware", "notes"],
            [["A <b>x</b> & y", 2, 0.8, 22, 0.7, 1.6, "t<5>", "", 'H&M "GPU"', "see <script>alert(1)</script>"]],
        )
    )
    points = overlays.with_series(df)
    pred = theory.speedup(0.8, 22.0, 2)
    expected = "<br>".join(
        [
            "label: A &lt;b&gt;x&lt;/b&gt; &amp; y",
            "K: 2",
            "T: 0.7",
            "target: t&lt;5&gt;",
            'hardware: H&amp;M "GPU"',  # plotly decodes &amp; but shows &quot; as typed
            "α used: 0.8",
            "α from: alpha",
            "c used: 22",
            "measured S: 1.6",
            f"predicted S (basic): {pred:.4g}",
            "notes: see &lt;script&gt;alert(1)&lt;/script&gt;",
        ]
    )
    assert points["hover"].iloc[0] == expected
    assert "draft:" not in points["hover"].iloc[0]  # an empty cell is left out
    # the series key itself keeps the label as written (it is data, not markup)
    assert points["series"].iloc[0] == "A <b>x</b> & y · T=0.7"


def test_params_and_curves_of_no_rows_are_empty_tables():
    points = overlays.with_series(load(MIXED)).iloc[:0]
    params = overlays.series_params(points)
    assert params.columns.tolist() == PARAM_COLUMNS and len(params) == 0
    curve = overlays.curves(params)
    assert curve.columns.tolist() == CURVE_COLUMNS and len(curve) == 0
    assert len(overlays.per_position(points)) == 0


# --------------------------------------------------------------------------------------
# series_params
# --------------------------------------------------------------------------------------


def test_k_top_is_two_beyond_the_largest_measured_k_and_at_least_8():
    assert [overlays.k_top(k) for k in (1, 5, 6, 7, 30)] == [8, 8, 8, 9, 32]


def test_series_params_mean_alpha_median_c_v_o_and_k_range():
    points, params, _ = pipeline(load(MIXED))
    assert params.columns.tolist() == PARAM_COLUMNS
    assert list(params["series"]) == [EAGLE, DRAFT, NGRAM]  # order of first appearance
    e, d, n = one(params, EAGLE), one(params, DRAFT), one(params, NGRAM)
    # α is the mean (0.6833…), not the median (0.6); c the median (20), not the mean (23.3)
    assert e.alpha == pytest.approx(np.mean([0.5, 0.6, 0.95]), rel=1e-15) and e.c == 20.0
    assert e.v == 0.3 and e.o == 0.2 and bool(e.has_cost)  # medians of the known values
    assert (e.k_min, e.k_max, e.n) == (1, 4, 3)
    assert d.alpha == pytest.approx(0.75, rel=1e-15) and d.c == 40.0
    assert (d.v, d.o, bool(d.has_cost)) == (0.0, 0.0, False)
    assert (d.k_min, d.k_max, d.n) == (3, 5, 2)
    # ngram: α recovered from the mean accepted tokens, c unknown
    assert n.alpha == pytest.approx(theory.alpha_from_mean_tokens(2.5, 5), rel=1e-12) and np.isnan(n.c)
    assert (n.k_min, n.k_max, n.n, bool(n.has_cost)) == (5, 5, 1, False)
    assert n.alpha == points.loc[points["series"] == NGRAM, "alpha_used"].iloc[0]


def test_has_cost_when_either_v_or_o_is_known_the_other_taken_as_zero():
    df = load(
        csv_text(
            ["label", "k", "alpha", "c", "v", "o"],
            [["v only", 3, 0.8, 30, 0.2, None], ["o only", 3, 0.8, 30, None, 0.5], ["neither", 3, 0.8, 30, None, None]],
        )
    )
    _, params, curve = pipeline(df)
    assert list(params["has_cost"]) == [True, True, False]
    assert list(zip(params["v"], params["o"], strict=True)) == [(0.2, 0.0), (0.0, 0.5), (0.0, 0.0)]
    for series, v, o in (("v only", 0.2, 0.0), ("o only", 0.0, 0.5)):
        best = theory.optimal_k(0.8, 30.0, 8, v, o)
        assert (one(params, series).k_star_cost, one(params, series).s_star_cost) == (best.k, best.speedup)
        np.testing.assert_array_equal(
            curve.loc[curve["series"] == series, "speedup_cost"], theory.speedup(0.8, 30.0, np.arange(1, 9), v, o)
        )
    assert curve.loc[curve["series"] == "neither", "speedup_cost"].isna().all()


def test_series_params_k_star_is_theory_optimal_k_up_to_k_top():
    _, params, _ = pipeline(load(MIXED))
    for p in params.itertuples(index=False):
        if np.isnan(p.c):
            assert np.isnan([p.k_star_basic, p.s_star_basic, p.k_star_cost, p.s_star_cost]).all(), p.series
            continue
        basic = theory.optimal_k(p.alpha, p.c, overlays.k_top(p.k_max))
        assert (p.k_star_basic, p.s_star_basic) == (float(basic.k), float(basic.speedup)), p.series
        if p.has_cost:
            cost = theory.optimal_k(p.alpha, p.c, overlays.k_top(p.k_max), p.v, p.o)
            assert (p.k_star_cost, p.s_star_cost) == (float(cost.k), float(cost.speedup)), p.series
            assert p.k_star_cost < p.k_star_basic  # the verify cost pulls K* down here
        else:
            assert np.isnan(p.k_star_cost) and np.isnan(p.s_star_cost), p.series


def test_series_params_search_stops_at_k_top_not_at_optimal_k_default():
    # α = 0.97, c = 500: the unconstrained optimum is far beyond K = 12
    df = load(csv_text(["label", "k", "alpha", "c"], [["long", 10, 0.97, 500], ["short", 1, 0.97, 500]]))
    _, params, curve = pipeline(df)
    long, short = one(params, "long"), one(params, "short")
    assert theory.optimal_k(0.97, 500.0, 32).k > 12
    assert long.k_star_basic == 12 and short.k_star_basic == 8
    assert curve.groupby("series")["k"].max().to_dict() == {"long": 12, "short": 8}


def test_series_params_and_curves_with_nan_alpha_and_k_star_zero():
    df = load(csv_text(["label", "k", "alpha", "c"], [["gone", 2, 0.5, 10], ["slow", 3, 0.1, 2], ["ok", 2, 0.8, 30]]))
    points = overlays.with_series(df)
    points.loc[points["series"] == "gone", "alpha_used"] = np.nan  # a series whose α is unknown
    params = overlays.series_params(points)
    assert np.isnan(one(params, "gone").alpha) and np.isnan(one(params, "gone").k_star_basic)
    slow = one(params, "slow")  # speculation never pays: K* = 0 with S = 1
    assert (slow.k_star_basic, slow.s_star_basic) == (0.0, 1.0)
    curve = overlays.curves(params)
    assert list(dict.fromkeys(curve["series"])) == ["slow", "ok"], "a series without α must have no curve"
    fig = figures.overlay_speedup_vs_k(points, curve, params)
    assert [(t.x[0], t.y[0]) for t in stars(fig)] == [(one(params, "ok").k_star_basic, one(params, "ok").s_star_basic)]
    assert "gone: measured" not in named(fig)  # no measured speedup in that row
    assert "slow: basic model" in named(fig) and "gone: basic model" not in named(fig)


# --------------------------------------------------------------------------------------
# curves
# --------------------------------------------------------------------------------------


def test_curves_equal_theory_for_each_series():
    _, params, curve = pipeline(load(MIXED))
    assert curve.columns.tolist() == CURVE_COLUMNS
    assert list(dict.fromkeys(curve["series"])) == [EAGLE, DRAFT, NGRAM]
    for p in params.itertuples(index=False):
        cv = curve[curve["series"] == p.series]
        ks = np.arange(1, overlays.k_top(p.k_max) + 1)
        np.testing.assert_array_equal(cv["k"].to_numpy(), ks, err_msg=p.series)
        np.testing.assert_array_equal(cv["expected_tokens"].to_numpy(), theory.expected_tokens(p.alpha, ks))
        if np.isnan(p.c):
            assert cv["speedup_basic"].isna().all() and cv["speedup_cost"].isna().all(), p.series
            continue
        np.testing.assert_array_equal(cv["speedup_basic"].to_numpy(), theory.speedup(p.alpha, p.c, ks))
        if p.has_cost:
            np.testing.assert_array_equal(cv["speedup_cost"].to_numpy(), theory.speedup(p.alpha, p.c, ks, p.v, p.o))
        else:
            assert cv["speedup_cost"].isna().all(), p.series
    assert one(params, EAGLE).has_cost and not np.isnan(curve.loc[curve["series"] == EAGLE, "speedup_cost"]).any()


def test_curves_respect_an_explicit_k_max_and_empty_params():
    _, params, curve = pipeline(load(MIXED), k_max=3)
    ks = curve.groupby("series", sort=False)["k"].apply(list).to_dict()
    assert ks == {s: [1, 2, 3] for s in (EAGLE, DRAFT, NGRAM)}
    e = one(params, EAGLE)
    np.testing.assert_array_equal(
        curve.loc[curve["series"] == EAGLE, "speedup_basic"], theory.speedup(e.alpha, e.c, [1, 2, 3])
    )
    empty = overlays.curves(params.iloc[:0])
    assert empty.columns.tolist() == CURVE_COLUMNS and len(empty) == 0


# --------------------------------------------------------------------------------------
# per_position
# --------------------------------------------------------------------------------------


def test_per_position_parses_cells_one_based_and_drops_nan():
    points = overlays.with_series(load(MIXED))
    table = overlays.per_position(points)
    assert table.columns.tolist() == POSITION_COLUMNS
    eagle = points[points["series"] == EAGLE]
    alpha = dict(zip(eagle["k"], eagle["alpha_used"], strict=True))
    expected = [
        (EAGLE, 1, 1, 0.5),
        (EAGLE, 2, 1, 0.6),
        (EAGLE, 2, 2, 0.55),
        (EAGLE, 4, 2, 0.9),
        (EAGLE, 4, 3, 0.95),
        (EAGLE, 4, 4, 0.97),
    ]  # position 1 of K = 4 is nan
    assert list(table[["series", "k", "position", "a"]].itertuples(index=False, name=None)) == expected
    assert list(table["alpha_used"]) == [alpha[k] for _, k, _, _ in expected]
    # blank or whitespace cells (as a hand-built or library frame may hold) are skipped
    blank = points.assign(per_position_acceptance=["", "  ", None, pd.NA, "0.3;nan;0.1", None])
    assert list(overlays.per_position(blank)[["k", "position", "a"]].itertuples(index=False, name=None)) == [
        (5, 1, 0.3),
        (5, 3, 0.1),
    ]


def test_per_position_without_the_column_is_an_empty_table():
    points = overlays.with_series(load(csv_text(["label", "k", "alpha"], [["a", 2, 0.5]])))
    assert "per_position_acceptance" not in points.columns
    table = overlays.per_position(points)
    assert table.columns.tolist() == POSITION_COLUMNS and len(table) == 0
    fig = figures.per_position_figure(table)
    assert len(fig.data) == 0 and len(fig.to_json()) < 10_000


def test_per_position_of_library_runs(library):
    rid = store.save_run(library, load(MIXED), label="lib", source="t.csv")
    table = overlays.per_position(overlays.with_series(store.load_runs(library, [rid])))
    assert list(table["series"]) == [f"#{rid} lib · eagle · T=0"] * 6
    assert list(table["a"]) == [0.5, 0.6, 0.55, 0.9, 0.95, 0.97]


# --------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------


def test_overlay_speedup_vs_k_curves_stars_and_measured_points():
    points, params, curve = pipeline(load(MIXED))
    fig = figures.overlay_speedup_vs_k(points, curve, params)
    traces = named(fig)
    assert set(traces) == {
        f"{EAGLE}: basic model",
        f"{EAGLE}: measured-cost model (v, o)",
        f"{EAGLE}: measured",
        f"{DRAFT}: basic model",
        f"{DRAFT}: measured",
        f"{NGRAM}: measured",
    }
    # curves: the curves frame, solid for the basic model and dashed for the measured cost
    for series, model, dash in ((EAGLE, "basic", "solid"), (EAGLE, "cost", "dash"), (DRAFT, "basic", "solid")):
        what = "basic model" if model == "basic" else "measured-cost model (v, o)"
        t, cv = traces[f"{series}: {what}"], curve[curve["series"] == series]
        assert t.mode == "lines" and t.line.dash == dash
        np.testing.assert_array_equal(t.x, cv["k"])
        np.testing.assert_array_equal(t.y, cv[f"speedup_{model}"])
    # one star per curve, at series_params' K* and S*
    star_xy = sorted((t.x[0], t.y[0]) for t in stars(fig))
    want = sorted(
        [
            (one(params, EAGLE).k_star_basic, one(params, EAGLE).s_star_basic),
            (one(params, EAGLE).k_star_cost, one(params, EAGLE).s_star_cost),
            (one(params, DRAFT).k_star_basic, one(params, DRAFT).s_star_basic),
        ]
    )
    assert star_xy == want and all(k > 0 for k, _ in want)
    assert len(fig.data) == 6 + 3
    # measured points with asymmetric error bars from speedup_min / speedup_max
    m = traces[f"{EAGLE}: measured"]
    rows = points[points["series"] == EAGLE]
    np.testing.assert_array_equal(m.x, rows["k"])
    np.testing.assert_array_equal(m.y, rows["speedup"])
    assert list(m.text) == list(rows["hover"])
    assert m.error_y.symmetric is False
    np.testing.assert_allclose(m.error_y.array, [0.3, 0.1, 0.3], rtol=1e-12)  # max − speedup
    np.testing.assert_allclose(m.error_y.arrayminus, [0.2, 0.3, 0.1], rtol=1e-12)  # speedup − min
    assert traces[f"{DRAFT}: measured"].error_y.array is None  # no min / max in those rows
    # the S = 1 line
    assert [(s.y0, s.y1) for s in fig.layout.shapes] == [(1.0, 1.0)]


def test_overlay_speedup_vs_k_error_bars_fill_missing_ends_with_zero():
    df = load(
        csv_text(
            ["label", "k", "alpha", "c", "speedup", "speedup_min", "speedup_max"],
            [["a", 1, 0.7, 20, 1.5, 1.25, None], ["a", 2, 0.7, 20, 1.75, None, 2.0]],
        )
    )
    points, params, curve = pipeline(df)
    m = named(figures.overlay_speedup_vs_k(points, curve, params))["a: measured"]
    assert list(m.error_y.array) == [0.0, 0.25] and list(m.error_y.arrayminus) == [0.25, 0.0]


def test_overlay_alpha_c_filled_at_k_open_elsewhere_on_the_heatmap():
    points = overlays.with_series(load(MIXED))
    grid = small_grid(2)
    fig = figures.overlay_alpha_c(grid, points, 2)
    heat, line, *scatter = fig.data
    assert heat.type == "heatmap"
    np.testing.assert_allclose(heat.z, grid.z, rtol=1e-6)  # sent as float32
    assert (line.type, line.name) == ("scatter", "S = 1 (break-even)")
    at_k, other = scatter
    assert (at_k.name, at_k.marker.symbol) == ("measured at K = 2", "circle")
    assert (other.name, other.marker.symbol) == ("other K", "circle-open")
    with_c = points[points["c_used"].notna()]  # the ngram row has no c: not on the map
    same, rest = with_c[with_c["k"] == 2], with_c[with_c["k"] != 2]
    for trace, rows in ((at_k, same), (other, rest)):  # c drawn as log10(c), like the heatmap's rows
        assert list(trace.x) == list(rows["alpha_used"])
        np.testing.assert_allclose(trace.y, np.log10(rows["c_used"]), rtol=1e-6)
    assert list(at_k.text) == list(same["hover"]) and len(rest) == 4
    # no row at this K: only the open markers
    names = [t.name for t in figures.overlay_alpha_c(small_grid(7), points, 7).data[2:]]
    assert names == ["other K"]


def test_overlay_expected_tokens_lines_and_measured_mean_tokens():
    df = load(
        csv_text(
            ["label", "k", "alpha", "mean_accepted_tokens", "c"],
            [["a", 2, 0.6, 2.0, 10], ["a", 4, 0.7, None, 10], ["b", 3, None, 2.5, None]],
        )
    )
    points, params, curve = pipeline(df)
    traces = named(figures.overlay_expected_tokens(points, curve, params))
    assert set(traces) == {"a: E[N] at α", "a: measured", "b: E[N] at α", "b: measured"}
    for s in ("a", "b"):
        cv = curve[curve["series"] == s]
        np.testing.assert_array_equal(traces[f"{s}: E[N] at α"].x, cv["k"])
        np.testing.assert_array_equal(traces[f"{s}: E[N] at α"].y, cv["expected_tokens"])
    assert (list(traces["a: measured"].x), list(traces["a: measured"].y)) == ([2], [2.0])  # K = 4 has no E[N]
    assert (list(traces["b: measured"].x), list(traces["b: measured"].y)) == ([3], [2.5])


def test_parity_basic_and_measured_cost_with_a_y_equals_x_line():
    points = overlays.with_series(load(MIXED))
    traces = named(figures.parity(points))
    assert set(traces) == {"basic model", "measured-cost model", "y = x"}
    basic = points[points["predicted_speedup"].notna()]
    cost = points[points["predicted_speedup_measured_cost"].notna()]
    assert len(basic) == 5 and len(cost) == 3
    assert (list(traces["basic model"].x), list(traces["basic model"].y)) == (
        list(basic["predicted_speedup"]),
        list(basic["speedup"]),
    )
    assert (list(traces["measured-cost model"].x), list(traces["measured-cost model"].y)) == (
        list(cost["predicted_speedup_measured_cost"]),
        list(cost["speedup"]),
    )
    assert traces["basic model"].marker.symbol == "circle" and traces["measured-cost model"].marker.symbol == "diamond"
    line = traces["y = x"]
    assert list(line.x) == list(line.y)
    data = np.concatenate(
        [basic["predicted_speedup"], basic["speedup"], cost["predicted_speedup_measured_cost"], cost["speedup"]]
    )
    pad = 0.05 * (data.max() - data.min())
    np.testing.assert_allclose(line.x, [data.min() - pad, data.max() + pad], rtol=1e-12)
    # no row with a prediction: nothing to plot, no line either
    no_c = overlays.with_series(load(csv_text(["label", "k", "alpha", "speedup"], [["a", 2, 0.5, 1.1]])))
    assert len(figures.parity(no_c).data) == 0


def test_per_position_figure_one_line_per_series_and_k_with_alpha():
    points = overlays.with_series(load(MIXED))
    table = overlays.per_position(points)
    fig = figures.per_position_figure(table)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    dotted = [t for t in fig.data if t.mode == "lines"]
    assert [t.name for t in lines] == [f"{EAGLE}, K = 1", f"{EAGLE}, K = 2", f"{EAGLE}, K = 4"]
    assert len(dotted) == 3 and all(t.line.dash == "dot" and t.showlegend is False for t in dotted)
    for line, alpha_line, k in zip(lines, dotted, (1, 2, 4), strict=True):
        g = table[table["k"] == k]
        assert (list(line.x), list(line.y)) == (list(g["position"]), list(g["a"]))
        a = points.loc[points["k"] == k, "alpha_used"].iloc[0]
        assert list(alpha_line.y) == [a, a]
        assert list(alpha_line.x) == [g["position"].min(), g["position"].max()]
    assert fig.layout.yaxis.range == (0, 1.02)


def synthetic_rows(n: int) -> str:
    """``n`` rows in 20 series with every metadata column filled, as a bench export would have."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(n):
        s, k = divmod(i, n // 20)
        k += 1
        rows.append(
            [
                f"config {s}",
                k,
                rng.uniform(0.3, 0.95),
                rng.uniform(2, 100),
                0.05,
                0.1,
                (s % 3) * 0.5,
                1.5,
                1.2,
                1.8,
                ";".join(f"{x:.4f}" for x in rng.uniform(0, 1, k)),
                "vicuna-13b-v1.3",
                "vicuna-68m",
                "NVIDIA A100 80GB",
                "draft model",
                "greedy decoding, FP16, batch size 1, mean over 3 runs",
            ]
        )
    return csv_text(
        [
            "label",
            "k",
            "alpha",
            "c",
            "v",
            "o",
            "temperature",
            "speedup",
            "speedup_min",
            "speedup_max",
            "per_position_acceptance",
            "target_model",
            "draft_model",
            "hardware",
            "method",
            "notes",
        ],
        rows,
    )


@pytest.mark.slow
def test_every_figure_json_stays_under_1_mb_for_200_rows():
    points, params, curve = pipeline(load(synthetic_rows(200)))
    assert len(points) == 200 and len(params) == 20
    sizes = {name: len(fig.to_json()) for name, fig in all_figures(points, params, curve, 4).items()}
    assert all(size > 10_000 for size in sizes.values()), sizes  # the 200 rows are in every figure
    assert max(sizes.values()) < MAX_JSON, f"bytes of figure JSON for 200 rows: {sizes}"


def test_overlay_alpha_c_at_the_page_grid_stays_under_1_mb_for_200_published_rows():
    """The (α, c) map at the page's resolution with 200 rows of the shipped Leviathan sample.

    Was a defect: grid_figure sends the 201 × 161 z array twice (Heatmap and the S = 1
    Contour), ≈ 0.88 MB before any point, so 200 rows with their (long, published) notes / source in
    the hover push the figure over 1 MB.
    """
    text = (SAMPLES_DIR / "published_leviathan2023.csv").read_text(encoding="utf-8")
    head, *rows = text.strip().splitlines()
    points = overlays.with_series(load("\n".join([head, *(rows[i % len(rows)] for i in range(200))]) + "\n"))
    assert len(points) == 200
    grid = page_grid(7, points)
    empty = len(figures.overlay_alpha_c(grid, points.iloc[:0], 7).to_json())
    size = len(figures.overlay_alpha_c(grid, points, 7).to_json())
    assert size < MAX_JSON, (
        f"overlay_alpha_c at the page's 201 × 161 grid: {size} bytes of JSON for 200 published "
        f"rows (already {empty} bytes with no point: the heatmap and the S = 1 contour each "
        f"carry the full z grid)"
    )


# --------------------------------------------------------------------------------------
# regressions: defects found in review and fixed
# --------------------------------------------------------------------------------------


def test_two_library_runs_with_the_same_name_stay_two_series(library):
    """A series is 'the set of rows of one run with one label and one temperature' (overlays docstring).

    Was a defect: the key uses the run's *name*, not run_id, and the page names a run
    after its file's label by default, so two uploads of the same bench output (e.g. two machines)
    merge into one series: α averaged and c medianed across runs, n doubled, and in the per-position
    figure one line zig-zags through both runs' positions.
    """
    df = load(
        csv_text(
            ["label", "k", "alpha", "c", "per_position_acceptance"],
            [["bench", 1, 0.6, 20, "0.6"], ["bench", 2, 0.7, 20, "0.65;0.75"]],
        )
    )
    fast = df.assign(alpha=[0.9, 0.95], alpha_used=[0.9, 0.95], per_position_acceptance=["0.9", "0.9;0.99"])
    ids = [
        store.save_run(library, df, label="bench", source="a100.csv"),
        store.save_run(library, fast, label="bench", source="h100.csv"),
    ]
    points = overlays.with_series(store.load_runs(library, ids))
    params = overlays.series_params(points)
    assert len(params) == 2 and list(params["n"]) == [2, 2], (
        f"two runs (run_id {ids}) both named 'bench' were merged into series {list(params['series'])} with n = "
        f"{list(params['n'])} and α = {list(params['alpha'])} (mean over both runs): the series key ignores run_id"
    )
    traces = figures.per_position_figure(overlays.per_position(points)).data
    assert all(list(t.x) == sorted(t.x) for t in traces)


def test_with_series_of_a_frame_without_rows():
    """Was a defect: with_series raises TypeError on a frame with no rows.

    With no rows, ``temp.map(...)`` yields a float64 Series, and str + float64 raises under pandas 3
    (``operation 'add' not supported for dtype 'str' with dtype 'float64'``). Both an upload filtered
    down to nothing and store.load_runs(engine, []) (object columns) hit it.
    """
    for empty in (load(MIXED).iloc[:0], pd.DataFrame(columns=["run_id", "run", "label", "k", "temperature"])):
        error = None
        try:
            points = overlays.with_series(empty)
        except TypeError as exc:
            error = exc
        assert error is None, f"with_series on a frame with no rows (columns {list(empty.columns)[:5]}…): {error!r}"
        assert len(points) == 0 and {"series", "hover"} <= set(points.columns)


def test_with_series_of_an_upload_raises_no_deprecation_warning():
    """Was a defect: for a frame without ``run`` (every upload), with_series calls
    ``fillna("")`` on the all-NaN float64 stand-in column, which pandas 3 deprecates with
    Pandas4Warning ("calling fillna with an incompatible value will raise"): under pandas 4 with_series
    would raise on every uploaded file.
    """
    df = load(MIXED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        overlays.with_series(df)
    deprecations = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
        for w in caught
        if issubclass(w.category, (DeprecationWarning, FutureWarning))
    ]
    assert not deprecations, "with_series on an upload (no run column) warns:\n" + "\n".join(deprecations)


def test_series_names_are_escaped_where_figures_render_them_as_markup():
    """Plotly renders trace names and hovertemplates as HTML-like markup (and %{…} as template fields).

    Was a defect: hover_text escapes the label, but the figures put the raw series key
    (label and run name) into trace names and into the curve / K* hovertemplates, so a label
    'A <b>x</b> & y' shows bold in the legend and in the curve hover instead of as written.
    """
    df = load(
        csv_text(
            ["label", "k", "alpha", "c", "v", "speedup", "mean_accepted_tokens", "per_position_acceptance"],
            [["A <b>x</b> & y", 2, 0.8, 20, 0.1, 1.5, 2.4, "0.8;0.8"]],
        )
    )
    points, params, curve = pipeline(df)
    raw = []
    for name, fig in all_figures(points, params, curve, 2).items():
        for t in fig.data:
            for field in ("name", "hovertemplate"):
                value = getattr(t, field, None) or ""
                if "<b>x</b>" in value:
                    raw.append(f"{name}: {field} {value!r}")
    assert not raw, (
        "label 'A <b>x</b> & y' reaches plotly unescaped (expected "
        f"{figures.plotly_text('A <b>x</b> & y')!r}) in:\n" + "\n".join(raw)
    )


#: The named entities plotly.js decodes in names and hover text (svg_text_utils ENTITY_TO_UNICODE, as
#: bundled in Streamlit 1.67's PlotlyChart); numeric ones (&#37;) are decoded too, any other name is shown.
_PLOTLY_ENTITIES = {
    "mu": "μ",
    "amp": "&",
    "lt": "<",
    "gt": ">",
    "nbsp": "\xa0",
    "times": "×",
    "plusmn": "±",
    "deg": "°",
}


def plotly_shows(markup: str) -> tuple[str, list[str]]:
    """(the text plotly.js shows for ``markup``, the tags it reads): its convertToTspans, split on
    ``<…>`` tags, ``<br>`` a line break, other text with entities decoded once."""
    shown, tags = [], []
    for part in re.split(r"(<[^<>]*>)", markup):
        if re.fullmatch(r"<[^<>]*>", part):
            tags.append(part)
            shown.append("\n" if part.lower().startswith("<br") else "")
            continue

        def entity(m: re.Match) -> str:
            name = m.group(1)
            if name.startswith("#"):
                return chr(int(name[2:], 16) if name[1] in "xX" else int(name[1:]))
            return _PLOTLY_ENTITIES.get(name, m.group(0))

        shown.append(re.sub(r"&(#\d+|#x[\da-fA-F]+|[a-z]+);", entity, part))
    return "".join(shown), tags


LABEL = 'say "hi" <b>x</b> & <a href="https://example.com">y</a> &quot; 5% %{x}'


def test_a_label_shows_as_typed_in_legends_hovers_and_the_series_table():
    """Trace names, hovertemplates and hover text show a label with " < > & % exactly as typed, and no tag of it.

    Was a defect: labels were escaped with html.escape, which writes " as &quot;, an entity plotly does not
    decode, so a label 'say "hi"' read 'say &quot;hi&quot;' in every legend and hover.
    """
    df = load(
        csv_text(
            ["label", "k", "alpha", "c", "v", "speedup", "mean_accepted_tokens", "per_position_acceptance"],
            [[LABEL, 2, 0.8, 20, 0.1, 1.5, 2.4, "0.8;0.8"], [LABEL, 3, 0.8, 20, 0.1, 1.7, 2.9, "0.8;0.8;0.8"]],
        )
    )
    points, params, curve = pipeline(df)
    assert list(params["series"]) == [LABEL]  # the table (st.dataframe) shows the key as data
    legends, hovers = [], []
    for name, fig in all_figures(points, params, curve, 2).items():
        for t in fig.data:
            fields = [("name", t.name), ("hovertemplate", t.hovertemplate)]
            fields += [("text", v) for v in (t.text if isinstance(t.text, tuple) else [t.text])]
            for field, value in fields:
                if not isinstance(value, str) or not value:
                    continue
                shown, tags = plotly_shows(value)
                assert set(tags) <= {"<br>", "<extra>", "</extra>"}, (name, field, value)
                if field == "name" and t.legendgroup == LABEL:
                    legends.append(shown)
                elif field == "hovertemplate" and "%{text}" not in value and LABEL in shown:
                    hovers.append(shown)
                elif field == "text":
                    assert f"label: {LABEL}\n" in shown, (name, shown)
                    hovers.append(shown)
    assert legends and all(s.startswith(LABEL) for s in legends), legends
    assert len(hovers) >= 4, hovers  # curve, K* and measured-point hovers
    assert "&quot;" in plotly_shows(figures.plotly_text("&quot;"))[0]  # typed entities stay as typed


# --------------------------------------------------------------------------------------
# one configuration per series
# --------------------------------------------------------------------------------------

T5_DRAFTS = ("T5-small (77M)", "T5-base (250M)", "T5-large (800M)")


def leviathan_drafts_without_label() -> str:
    """Leviathan et al. 2023's three T5 drafts of T5-XXL at K = 7 (EnDe, T = 0), one row per draft, no label column.

    The rows are those of the shipped sample (data/samples/published_leviathan2023.csv, which cites the paper's
    Table 2 and Table 4): each draft has its own α and c.
    """
    rows = list(csv.DictReader(io.StringIO((SAMPLES_DIR / "published_leviathan2023.csv").read_text(encoding="utf-8"))))
    chosen = [r for r in rows if r["label"].endswith("EnDe T=0")]
    assert [r["draft_model"] for r in chosen] == list(T5_DRAFTS) and {r["k"] for r in chosen} == {"7"}
    header = [c for c in rows[0] if c != "label"]
    return csv_text(header, [[r[c] for c in header] for r in chosen])


def test_one_row_per_draft_without_a_label_column_is_one_series_per_draft():
    """A series is one configuration: the three drafts of one file are three series with their own α and c.

    Was a defect: the series key was (run, label, temperature), so a file with one row per draft
    model and no label column (every row labelled with the file's name) was one series, drawn as one
    curve at the mean α (0.79) and the median c (25, i.e. c_L = 0.04) of three different drafts.
    """
    df = load(leviathan_drafts_without_label(), "t5_drafts.csv")
    assert (df["label"] == "t5_drafts.csv").all() and (df["k"] == 7).all() and df["temperature"].eq(0).all()
    points, params, curve = pipeline(df)
    expected = [f"t5_drafts.csv · draft_model={d} · T=0" for d in T5_DRAFTS]
    assert list(params["series"]) == expected, (
        f"three drafts (α {list(df['alpha_used'])}, c {list(df['c_used'])}) drawn as series "
        f"{list(params['series'])} with α = {list(params['alpha'])} and c = {list(params['c'])}"
    )
    assert list(points["series"]) == expected and list(params["n"]) == [1, 1, 1]
    for row in points.itertuples(index=False):
        p = one(params, row.series)
        assert (p.alpha, p.c) == (row.alpha_used, row.c_used)
        best = theory.optimal_k(row.alpha_used, row.c_used, overlays.k_top(7))
        assert (p.k_star_basic, p.s_star_basic) == (float(best.k), float(best.speedup))
        # each curve passes through the paper's expected improvement at K = 7 (Table 4, within 0.1)
        paper = float(re.search(r"expected improvement \(Theorem 3\.8\) = ([0-9.]+)", row.notes).group(1))
        at_7 = curve[(curve["series"] == row.series) & (curve["k"] == 7)]["speedup_basic"]
        assert float(at_7.iloc[0]) == pytest.approx(row.predicted_speedup, rel=1e-12)
        assert abs(float(at_7.iloc[0]) - paper) <= 0.1, (row.series, float(at_7.iloc[0]), paper)
    speed = named(figures.overlay_speedup_vs_k(points, curve, params))
    shown = [figures.plotly_text(s) for s in expected]
    assert [n for n in speed if n.endswith(": basic model")] == [s + ": basic model" for s in shown]
    assert [n for n in speed if n.endswith(": measured")] == [s + ": measured" for s in shown]


def test_the_drafts_file_saved_twice_is_six_series_keyed_by_run_id(library):
    df = load(leviathan_drafts_without_label(), "t5_drafts.csv")
    ids = [store.save_run(library, df, label=name, source="t5_drafts.csv") for name in ("t5_drafts.csv",) * 2]
    points = overlays.with_series(store.load_runs(library, ids))
    params = overlays.series_params(points)
    # the run's name equals the rows' label (the file's name): it is said once
    assert list(params["series"]) == [f"#{i} t5_drafts.csv · draft_model={d} · T=0" for i in ids for d in T5_DRAFTS]
    assert list(params["n"]) == [1] * 6 and list(params["alpha"]) == list(df["alpha_used"]) * 2


def test_a_file_where_only_temperature_varies_is_one_series_per_temperature():
    config = ["vicuna-13b", "vicuna-68m", "A100", "draft model", 1]
    rows = [
        ["bench", k, a, c, t, *config]
        for t, a0 in ((0, 0.8), (1, 0.7))
        for k, a, c in ((1, a0, 20), (2, a0 + 0.02, 21), (4, a0 + 0.05, 22))
    ]
    header = [
        "label",
        "k",
        "alpha",
        "c",
        "temperature",
        "target_model",
        "draft_model",
        "hardware",
        "method",
        "batch_size",
    ]
    points, params, _ = pipeline(load(csv_text(header, rows)))
    # the constant columns are not named, and α / c varying with K does not split a configuration
    assert list(points["series"]) == ["bench · T=0"] * 3 + ["bench · T=1"] * 3
    assert list(params["series"]) == ["bench · T=0", "bench · T=1"]
    assert list(params["n"]) == [3, 3] and list(params["k_max"]) == [4, 4]
    assert one(params, "bench · T=1").alpha == pytest.approx(np.mean([0.7, 0.72, 0.75]), rel=1e-12)
    assert one(params, "bench · T=0").c == 21.0


def test_rows_with_no_configuration_column_are_split_by_distinct_alpha_and_c():
    """Without any configuration column, two (α, c) pairs at one K are two configurations.

    A sweep with one row per K stays one series although the α measured at each K differs.
    """
    text = csv_text(["k", "alpha", "c", "speedup"], [[3, 0.7, 20, 1.9], [5, 0.7, 20, 2.1], [3, 0.8, 40, 2.4]])
    df = load(text, "pairs.csv")
    assert df[["target_model", "draft_model", "hardware", "method", "batch_size", "temperature"]].isna().all().all()
    points, params, curve = pipeline(df)
    assert list(points["series"]) == ["pairs.csv · α=0.7, c=20"] * 2 + ["pairs.csv · α=0.8, c=40"]
    assert list(params["series"]) == ["pairs.csv · α=0.7, c=20", "pairs.csv · α=0.8, c=40"]
    assert list(params["n"]) == [2, 1] and list(params["alpha"]) == [0.7, 0.8] and list(params["c"]) == [20.0, 40.0]
    np.testing.assert_array_equal(
        curve.loc[curve["series"] == "pairs.csv · α=0.8, c=40", "speedup_basic"],
        theory.speedup(0.8, 40.0, np.arange(1, 9)),
    )
    # one (α, c) pair, or one row per K: one series, named as before
    same = overlays.with_series(load(csv_text(["k", "alpha", "c"], [[3, 0.7, 20], [5, 0.7, 20]]), "one.csv"))
    assert list(same["series"]) == ["one.csv"] * 2
    sweep = overlays.with_series(
        load(csv_text(["k", "alpha", "c"], [[1, 0.7, 20], [2, 0.75, 21], [4, 0.8, 19]]), "s.csv")
    )
    assert list(sweep["series"]) == ["s.csv"] * 3
    # an unknown c is a value of its own; labels are split each on their own rows
    mixed = overlays.with_series(
        load(csv_text(["label", "k", "alpha", "c"], [["a", 2, 0.6, None], ["a", 2, 0.6, 10], ["b", 2, 0.5, 9]]))
    )
    assert list(mixed["series"]) == ["a · α=0.6, c=(missing)", "a · α=0.6, c=10", "b"]


def test_a_constant_configuration_column_leaves_the_names_unchanged(library):
    df = load(MIXED)
    constant = df.assign(
        target_model="vicuna-13b", draft_model="vicuna-68m", hardware="A100", method="eagle", batch_size=1
    )
    assert list(overlays.with_series(constant)["series"]) == [EAGLE] * 3 + [DRAFT] * 2 + [NGRAM]
    rid = store.save_run(library, constant, label="lib", source="t.csv")
    points = overlays.with_series(store.load_runs(library, [rid]))
    assert list(points["series"]) == [f"#{rid} lib · {s}" for s in [EAGLE] * 3 + [DRAFT] * 2 + [NGRAM]]
    # a column constant in one label and varying in another splits only the other
    varied = constant.assign(draft_model=["vicuna-68m"] * 3 + ["d1", "d2", "vicuna-68m"])
    assert list(overlays.with_series(varied)["series"]) == [EAGLE] * 3 + [
        "draft · draft_model=d1 · T=0",
        "draft · draft_model=d2 · T=0",
        NGRAM,
    ]


def test_a_missing_configuration_cell_is_a_configuration_of_its_own():
    header = ["label", "k", "alpha", "c", "temperature", "draft_model", "batch_size"]
    rows = [
        ["d", 3, 0.7, 20, 0, "d1", 1],
        ["d", 3, 0.8, 30, 0, None, 1],
        ["d", 5, 0.72, 20, 0, "d1", 1],
        ["b", 2, 0.6, 10, None, "d1", 1],
        ["b", 2, 0.6, 10, None, "d1", None],
        ["b", 2, 0.6, 10, None, "d1", 8],
        ["t", 2, 0.6, 10, 0.5, "d1", 1],
        ["t", 2, 0.6, 10, None, "d1", 1],
    ]
    points, params, _ = pipeline(load(csv_text(header, rows)))
    assert list(points["series"]) == [
        "d · draft_model=d1 · T=0",
        "d · draft_model=(missing) · T=0",
        "d · draft_model=d1 · T=0",
        "b · batch_size=1",
        "b · batch_size=(missing)",
        "b · batch_size=8",
        "t · T=0.5",
        "t",
    ]
    assert list(params["n"]) == [2, 1, 1, 1, 1, 1, 1]
    assert one(params, "d · draft_model=d1 · T=0").alpha == pytest.approx(0.71, rel=1e-12)


def test_series_names_stay_unique_when_values_print_alike():
    header = ["label", "k", "alpha", "c", "draft_model"]
    alike = overlays.with_series(load(csv_text(header[:4], [["x", 2, 0.7, 20], ["x", 2, 0.7000001, 20]])))
    assert alike["series"].nunique() == 2, list(alike["series"])
    literal = overlays.with_series(load(csv_text(header, [["y", 2, 0.7, 20, "(missing)"], ["y", 2, 0.7, 20, None]])))
    assert literal["series"].nunique() == 2, list(literal["series"])


def test_configuration_values_in_series_names_are_escaped_in_figures():
    header = [
        "label",
        "k",
        "alpha",
        "c",
        "v",
        "speedup",
        "mean_accepted_tokens",
        "per_position_acceptance",
        "draft_model",
    ]
    rows = [
        ["run", 2, 0.8, 20, 0.1, 1.5, 2.4, "0.8;0.8", "A <b>x</b> & %{y}"],
        ["run", 2, 0.6, 20, 0.1, 1.3, 2.0, "0.6;0.6", "plain"],
    ]
    points, params, curve = pipeline(load(csv_text(header, rows)))
    assert list(params["series"]) == ["run · draft_model=A <b>x</b> & %{y}", "run · draft_model=plain"]
    raw = [
        f"{name}: {field} {getattr(t, field)!r}"
        for name, fig in all_figures(points, params, curve, 2).items()
        for t in fig.data
        for field in ("name", "hovertemplate")
        if "<b>x</b>" in (getattr(t, field, None) or "")
    ]
    assert not raw, "\n".join(raw)
    assert "run · draft_model=A &lt;b&gt;x&lt;/b&gt; &amp; " in " ".join(
        named(figures.overlay_speedup_vs_k(points, curve, params))
    )


# --------------------------------------------------------------------------------------
# shipped samples
# --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sample", SAMPLES)
def test_shipped_sample_goes_through_every_overlay(sample):
    df, report = load_measurements((SAMPLES_DIR / sample).read_bytes(), sample)
    assert not report.row_errors
    points, params, curve = pipeline(df)
    assert (
        len(params)
        == {
            "published_leviathan2023.csv": 12,
            "published_spec_bench.csv": 3,
            "published_chen2023.csv": 3,
            "specviz_bench_bundled_cpu.csv": 2,
        }[sample]
    )
    speedup_only = sample == "published_chen2023.csv"  # Table 1 gives no acceptance figure
    assert (
        params["n"].sum() == len(df) and params["alpha"].isna().all() if speedup_only else params["alpha"].notna().all()
    )
    assert set(curve["series"]) == (set() if speedup_only else set(params["series"]))
    k = int(points["k"].mode().iloc[0])
    figs = all_figures(points, params, curve, k, page_grid(k, points))
    for name, fig in figs.items():
        assert len(fig.to_json()) < MAX_JSON, name
    speed = named(figs["overlay_speedup_vs_k"])
    assert all(f"{s}: measured" in speed for s in params["series"])  # every sample row has a speedup
    with_c = params[params["c"].notna() & params["alpha"].notna()]
    assert sum(n.endswith(": basic model") for n in speed) == len(with_c)
    assert sum(n.endswith(": measured-cost model (v, o)") for n in speed) == int(with_c["has_cost"].sum())
    assert len(stars(figs["overlay_speedup_vs_k"])) == int(
        (with_c["k_star_basic"] > 0).sum() + (with_c["k_star_cost"] > 0).sum()
    )


def test_bundled_bench_sample_has_cost_curves_and_per_position_lines():
    df, _ = load_measurements((SAMPLES_DIR / "specviz_bench_bundled_cpu.csv").read_bytes(), "bench.csv")
    points, params, _ = pipeline(df)
    assert params["has_cost"].all() and (params["k_star_cost"] <= params["k_star_basic"]).all()
    table = overlays.per_position(points)
    cells = df["per_position_acceptance"].dropna()
    assert len(cells) == len(df) == 12
    assert len(table) == sum(x != "nan" for cell in cells for x in cell.split(";")) == sum(df["k"])
    fig = figures.per_position_figure(table)
    assert len(fig.data) == 2 * table.groupby(["series", "k"]).ngroups == 2 * len(df)


def test_leviathan_sample_reproduces_the_papers_expected_improvement():
    df, _ = load_measurements((SAMPLES_DIR / "published_leviathan2023.csv").read_bytes(), "leviathan.csv")
    points, params, curve = pipeline(df)
    assert points["series"].is_unique and len(params) == len(df) == 12
    assert (params["n"] == 1).all()
    for row in points.itertuples(index=False):
        found = re.search(r"expected improvement \(Theorem 3\.8\) = ([0-9.]+)", row.notes)
        assert found, row.notes
        paper = float(found.group(1))
        cv = curve[(curve["series"] == row.series) & (curve["k"] == row.k)]
        assert len(cv) == 1
        ours = float(cv["speedup_basic"].iloc[0])
        assert ours == pytest.approx(row.predicted_speedup, rel=1e-12)
        assert abs(ours - paper) <= 0.1, f"{row.series}: S = {ours:.3f}, paper's Table 4 says {paper}"
        assert one(params, row.series).c == row.c_used and one(params, row.series).alpha == row.alpha_used


# --------------------------------------------------------------------------------------
# property: random valid frames
# --------------------------------------------------------------------------------------

_alpha = st.floats(0.0, 1.0, allow_nan=False)
_cost = st.none() | st.floats(0.0, 5.0, allow_nan=False)


@st.composite
def frames(draw):
    """CSV text of 1-3 series; each: 1-4 rows at distinct K in 1..32, c for every row or none, optional v / o."""
    rows = []
    for s in range(draw(st.integers(1, 3))):
        ks = draw(st.lists(st.integers(1, 32), min_size=1, max_size=4, unique=True))
        has_c = draw(st.booleans())
        temp = draw(st.none() | st.sampled_from([0.0, 0.7, 1.0]))
        for k in ks:
            c = draw(st.floats(0.5, 1000.0)) if has_c else None
            rows.append(
                [
                    f"s{s}",
                    k,
                    repr(draw(_alpha)),
                    None if c is None else repr(c),
                    *(None if x is None else repr(x) for x in (draw(_cost), draw(_cost))),
                    temp,
                ]
            )
    return csv_text(["label", "k", "alpha", "c", "v", "o", "temperature"], rows)


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_random_frames_curves_are_finite_and_the_star_is_the_curves_maximum(text):
    df = load(text)
    points, params, curve = pipeline(df)
    assert params["n"].sum() == len(df)
    for p in params.itertuples(index=False):
        rows = points[points["series"] == p.series]
        assert p.alpha == pytest.approx(rows["alpha"].mean(), rel=1e-12, abs=1e-300)
        assert p.has_cost == bool(rows["v"].notna().any() or rows["o"].notna().any())
        assert (p.v, p.o) == (
            np.nanmedian(rows["v"]) if rows["v"].notna().any() else 0.0,
            np.nanmedian(rows["o"]) if rows["o"].notna().any() else 0.0,
        )
        cv = curve[curve["series"] == p.series]
        np.testing.assert_array_equal(cv["k"], np.arange(1, overlays.k_top(p.k_max) + 1))
        assert np.isfinite(cv["expected_tokens"]).all()
        if np.isnan(p.c):
            assert rows["c_used"].isna().all() and cv["speedup_basic"].isna().all()
            continue
        assert p.c == np.median(rows["c_used"])
        basic = cv["speedup_basic"].to_numpy()
        assert np.isfinite(basic).all() and (basic > 0).all()
        models = [("basic", basic)]
        if p.has_cost:
            cost = cv["speedup_cost"].to_numpy()
            assert np.isfinite(cost).all() and (basic >= cost).all(), (basic, cost)
            models.append(("cost", cost))
        else:
            assert cv["speedup_cost"].isna().all()
        for model, y in models:
            k_star, s_star = getattr(p, f"k_star_{model}"), getattr(p, f"s_star_{model}")
            if k_star == 0:  # never pays: S = 1 and every K is at most break-even
                assert s_star == 1.0 and y.max() <= 1.0 + 1e-12, (model, y.max())
                continue
            on_curve = y[int(k_star) - 1]
            assert on_curve == pytest.approx(s_star, rel=1e-12), (model, k_star, on_curve, s_star)
            assert s_star >= y.max() * (1 - 1e-12) and s_star > 1.0, (model, s_star, y.max())
            assert int(np.argmax(y)) + 1 == k_star or y.max() - on_curve <= 1e-12 * y.max()


def test_absurd_k_is_drawn_only_up_to_the_cap():
    """A row claiming K = 2^31 - 1 (allowed by the schema) must not hang or break the overlays."""
    df = load(csv_text(["label", "k", "alpha", "c", "speedup"], [["big", 2**31 - 1, 0.8, 20, 2.1]]))
    points, params, curve = pipeline(df)
    assert overlays.k_top(2**31 - 1) == overlays.K_DRAWN_MAX
    assert curve["k"].max() == overlays.K_DRAWN_MAX and params["k_star_basic"].iloc[0] <= overlays.K_DRAWN_MAX
    fig = figures.overlay_speedup_vs_k(points, curve, params)
    assert any(list(t.x) == [2**31 - 1] for t in fig.data)  # the measured point itself is still there

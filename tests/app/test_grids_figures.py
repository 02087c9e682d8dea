"""Grids and figure builders: shapes, conventions, labels and payload size."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specviz.app import figures, grids
from specviz.core import theory

ALPHA = np.linspace(0.0, 1.0, 201)
C = np.geomspace(0.5, 100.0, 121)
KS = np.arange(1, 65)
MAX_PAYLOAD = 2_000_000  # bytes of figure JSON sent to the browser


def test_speedup_grid_matches_theory_pointwise_and_tidy_round_trips():
    g = grids.speedup_alpha_c_grid(ALPHA, C, "c", 4, 0.1, 0.2)
    assert g.z.shape == (C.size, ALPHA.size)
    assert g.z[37, 150] == theory.speedup(ALPHA[150], C[37], 4, 0.1, 0.2)
    df = g.tidy()
    assert list(df.columns) == ["alpha", "c", "speedup"] and len(df) == C.size * ALPHA.size
    row = df.iloc[37 * ALPHA.size + 150]
    assert (row["alpha"], row["c"], row["speedup"]) == (ALPHA[150], C[37], g.z[37, 150])


def test_leviathan_convention_axis_is_inverse_ratio():
    c_l = np.array([0.05, 0.1, 0.5])
    g = grids.speedup_alpha_c_grid(ALPHA, c_l, "c_L", 4, 0.0, 0.0)
    assert g.y_name == "c_L"
    np.testing.assert_array_equal(g.z, theory.speedup(ALPHA[None, :], 1.0 / c_l[:, None], 4))
    assert grids.to_c(0.125, "c_L") == 8.0 and grids.from_c(8.0, "c_L") == 0.125
    with pytest.raises(ValueError, match="convention must be one of"):
        grids.to_c(1.0, "T")


def test_axes_reject_empty_ranges_with_named_messages():
    with pytest.raises(ValueError, match="c min must be below c max; got 10 and 2"):
        grids.log_axis(10, 2, 5, "c")
    with pytest.raises(ValueError, match="c min must be a finite number > 0; got 0"):
        grids.log_axis(0, 2, 5, "c")
    with pytest.raises(ValueError, match="α min must be below α max"):
        grids.lin_axis(0.5, 0.5, 5, "α")


def test_downsample_keeps_both_ends_and_caps_points():
    g = grids.speedup_alpha_c_grid(ALPHA, C, "c", 4, 0.0, 0.0).downsampled(81)
    assert len(g.x) <= 81 and len(g.y) <= 81
    assert g.x[0] == 0.0 and g.x[-1] == 1.0 and g.y[0] == C[0] and g.y[-1] == C[-1]
    assert g.z[-1, -1] == theory.speedup(1.0, C[-1], 4)


@pytest.mark.parametrize("mode", ["heatmap", "surface"])
def test_speedup_figure_has_break_even_line_log_c_axis_and_small_payload(mode):
    g = grids.speedup_alpha_c_grid(ALPHA, grids.log_axis(1e-3, 1e4, 121, "c"), "c", 64, 0.0, 0.0)
    fig = figures.grid_figure(g, mode=mode, break_even=True)
    payload = fig.to_json()
    assert len(payload) < MAX_PAYLOAD
    spec = json.loads(payload)
    if mode == "heatmap":
        assert [t["type"] for t in spec["data"]] == ["heatmap", "scatter"]  # z is sent once
        assert spec["data"][0]["z"]["dtype"] == "f4"  # typed float32, not JSON float64
        line = fig.data[1]
        assert line.name == "S = 1 (break-even)" and line.mode == "lines"
        np.testing.assert_allclose(line.x, theory.break_even_alpha(64, g.y), atol=1e-3)  # rtol of float32
        # c is drawn as log10(c) on a linear axis (one image, not bricks), ticks labelled in c
        assert spec["layout"]["yaxis"]["type"] == "linear"
        np.testing.assert_allclose(fig.data[0].y, np.log10(g.y), rtol=1e-6)
        np.testing.assert_allclose(line.y, np.log10(g.y), rtol=1e-6)
        assert list(fig.layout.yaxis.ticktext) == ["0.001", "0.01", "0.1", "1", "10", "100", "1000", "10000"]
        np.testing.assert_allclose(fig.layout.yaxis.tickvals, np.arange(-3, 5))
        assert spec["layout"]["yaxis"]["title"]["text"] == grids.C_CONVENTIONS["c"]
    else:
        surface = spec["data"][0]
        assert surface["contours"]["z"]["start"] == 1.0 and surface["contours"]["z"]["show"]
        assert spec["layout"]["scene"]["yaxis"]["type"] == "log"


def test_level_crossing_is_the_break_even_alpha_of_each_row():
    for v, o in ((0.0, 0.0), (0.1, 0.2)):
        g = grids.speedup_alpha_c_grid(ALPHA, C, "c", 4, v, o)
        cross, exact = grids.level_crossing(g), theory.break_even_alpha(4, C, v, o)
        np.testing.assert_array_equal(np.isnan(cross), np.isnan(exact))  # rows that never pay off: a gap
        assert np.isnan(cross).any() and not np.isnan(cross).all()
        np.testing.assert_allclose(cross, exact, atol=1e-4)  # linear interpolation between α steps of 0.005
    flat = grids.Grid(
        np.arange(4.0), np.arange(2.0), np.array([[1.0, 1.0, 2.0, 3.0], [0.5, 0.6, 0.7, 0.9]]), "x", "y", "z"
    )
    np.testing.assert_array_equal(grids.level_crossing(flat), [1.0, np.nan])  # plateau at the level: its end


def test_compact_arrays_keep_every_shown_digit_in_fewer_bytes():
    assert figures.compact(np.array([0, 5, 64])).dtype == np.int8
    assert figures.compact(np.array([-1, 40_000])).dtype == np.int32
    z = grids.speedup_alpha_c_grid(ALPHA, C, "c", 4, 0.0, 0.0).z
    small = figures.compact(z)
    assert small.dtype == np.float32 and small.nbytes == z.nbytes // 2
    np.testing.assert_allclose(small, z, rtol=1e-6)  # hover shows 4 significant digits
    k_map, _ = grids.optimal_k_grids(ALPHA, C, "c", 32, 0.0, 0.0)
    spec = json.loads(figures.optimal_k_map(k_map).to_json())
    assert spec["data"][0]["z"]["dtype"] == "i1" and spec["data"][0]["customdata"]["dtype"] == "f4"


def test_log_ticks_label_one_two_five_per_decade_or_decades_over_wide_ranges():
    vals, text = figures.log_ticks(0.5, 100.0)
    assert text == ["0.5", "1", "2", "5", "10", "20", "50", "100"]
    np.testing.assert_allclose(10.0**vals, [0.5, 1, 2, 5, 10, 20, 50, 100])
    assert figures.log_ticks(1e-3, 1e4)[1] == ["0.001", "0.01", "0.1", "1", "10", "100", "1000", "10000"]


@pytest.mark.parametrize("builder", ["grid", "optimal_k", "break_even"])
def test_log_c_heatmaps_hover_the_real_c_from_customdata(builder):
    if builder == "break_even":
        g = grids.break_even_grid(KS[:8], C, "c", 0.0, 0.0)
        fig = figures.break_even_map(g)
    elif builder == "optimal_k":
        g, _ = grids.optimal_k_grids(ALPHA, C, "c", 16, 0.0, 0.0)
        fig = figures.optimal_k_map(g)
    else:
        g = grids.speedup_alpha_c_grid(ALPHA, C, "c", 4, 0.0, 0.0)
        fig = figures.grid_figure(g)
    heat = fig.data[0]
    assert "c = %{customdata:.3g}" in heat.hovertemplate and "%{y" not in heat.hovertemplate
    np.testing.assert_allclose(heat.customdata, np.broadcast_to(C[:, None], g.z.shape), rtol=1e-6)
    np.testing.assert_allclose(heat.y, np.log10(C), rtol=1e-6)


def test_optimal_k_map_colours_one_band_per_integer_k():
    g, _ = grids.optimal_k_grids(ALPHA, C, "c", 16, 0.0, 0.0)
    heat = figures.optimal_k_map(g).data[0]
    lo, hi = int(g.z.min()), int(g.z.max())
    assert (heat.zmin, heat.zmax) == (lo - 0.5, hi + 0.5) and len(heat.colorscale) == 2 * (hi - lo + 1)
    assert list(heat.colorbar.tickvals) == [k for k in np.unique(g.z) if k in heat.colorbar.tickvals]
    assert heat.colorbar.ticktext[0] == ("don't speculate" if lo == 0 else f"K* = {lo}")


def test_axis_title_follows_convention():
    g = grids.speedup_alpha_c_grid(ALPHA, np.array([0.01, 0.1]), "c_L", 4, 0.0, 0.0)
    fig = figures.grid_figure(g, break_even=True)
    assert fig.layout.yaxis.title.text == grids.C_CONVENTIONS["c_L"]


def test_optimal_k_map_labels_dont_speculate_region():
    k_map, _ = grids.optimal_k_grids(ALPHA, C, "c", 32, 0.0, 0.0)
    assert (k_map.z == 0).any() and (k_map.z > 0).any()
    fig = figures.optimal_k_map(k_map)
    bar = fig.data[0].colorbar
    levels = np.unique(k_map.z)
    assert bar.ticktext[0] == "don't speculate" and bar.ticktext[-1] == f"K* = {levels[-1]}"
    assert len(bar.ticktext) <= 17  # a readable colour bar even with 33 distinct K*
    assert all(text == f"K* = {levels[i]}" for i, text in zip(bar.tickvals[1:], bar.ticktext[1:], strict=True))
    assert fig.layout.xaxis.range == (0.0, 1.0)
    assert any(a.text == "don't speculate" for a in fig.layout.annotations)
    assert len(fig.to_json()) < MAX_PAYLOAD


def test_break_even_map_and_curves_mark_never_pays_off():
    be = grids.break_even_grid(KS, C, "c", 0.0, 0.0)
    assert np.isnan(be.z[C <= 1.0]).all() and not np.isnan(be.z[C > 1.0]).any()
    fig = figures.break_even_map(be)
    assert any(a.text == "never pays off" for a in fig.layout.annotations)
    curves = figures.break_even_curves(
        KS, {"c = 1": theory.break_even_alpha(KS, 1.0), "c = 8": theory.break_even_alpha(KS, 8.0)}
    )
    assert [t.name for t in curves.data] == ["c = 1 (never pays off)", "c = 8"]


def test_speedup_vs_k_marks_the_optimum():
    s = theory.speedup(0.8, 10.0, KS[:32])
    best = theory.optimal_k(0.8, 10.0, 32)
    fig = figures.speedup_vs_k(KS[:32], s, int(best.k), float(best.speedup))
    star = [t for t in fig.data if t.name == f"K* = {int(best.k)}"]
    assert star and star[0].x[0] == int(best.k) and star[0].y[0] == float(best.speedup)
    assert float(best.speedup) == s.max()


def test_pmf_figure_bars_sum_to_one():
    fig = figures.pmf_figure(theory.accepted_length_pmf(0.8, 4), float(theory.expected_tokens(0.8, 4)))
    assert list(fig.data[0].x) == [1, 2, 3, 4, 5]
    assert sum(fig.data[0].y) == pytest.approx(1.0)


def test_stepped_scale_has_equal_flat_bands():
    scale = figures.stepped(["#000000", "#111111", "#222222", "#333333"])
    assert scale == [
        [0.0, "#000000"],
        [0.25, "#000000"],
        [0.25, "#111111"],
        [0.5, "#111111"],
        [0.5, "#222222"],
        [0.75, "#222222"],
        [0.75, "#333333"],
        [1.0, "#333333"],
    ]
    be_scale = figures.break_even_map(grids.break_even_grid(KS[:8], C, "c", 0.0, 0.0)).data[0].colorscale
    assert len(be_scale) == 2 * figures.ALPHA_BANDS and be_scale[2][0] == pytest.approx(0.05)


def test_speedup_colour_scale_is_white_exactly_at_one():
    assert figures.speedup_colorscale(0.5, 2.5) == [[0.0, "#b2182b"], [0.25, "#f7f7f7"], [1.0, "#2166ac"]]
    assert figures.speedup_colorscale(1.2, 3.0)[0] == [0.0, "#f7f7f7"]  # no red when nothing is slower
    assert figures.speedup_colorscale(0.1, 0.9)[-1] == [1.0, "#f7f7f7"]  # no blue when nothing is faster


def test_break_even_map_labels_sit_on_their_contour_lines():
    be = grids.break_even_grid(KS[:32], C, "c", 0.0, 0.0)
    fig = figures.break_even_map(be)
    assert fig.data[0].type == "heatmap"  # one column per integer K: nothing to interpolate between them
    labels = [a for a in fig.layout.annotations if a.text.startswith("α* = ")]
    assert [a.text for a in labels] == [f"α* = {level:g}" for level in figures.LABEL_LEVELS]
    for a, level in zip(labels, figures.LABEL_LEVELS, strict=True):
        row = int(np.argmin(np.abs(np.log10(be.y) - a.y)))  # c axis is log: annotation y is log10(c)
        assert np.interp(a.x, be.x, be.z[row]) == pytest.approx(level, abs=1e-9)

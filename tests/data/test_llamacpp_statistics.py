"""llama.cpp's speculative ``statistics`` lines (common/speculative.cpp, b11434): cumulative counts per
drafting kind, read as the window since the kind's previous line, in logs without per-request lines.

The fixture (tests/fixtures/formats/llamacpp-spec-stats.log) prints, per request, a slot's
``draft acceptance`` and ``acc per pos`` lines and then the lifetime ``statistics`` line, so the
window a statistics line gives must equal the request's own line.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from specviz.data.measurements import load_measurements

FIXTURE = Path(__file__).parents[1] / "fixtures" / "formats" / "llamacpp-spec-stats.log"
LOG = [x for x in FIXTURE.read_text().splitlines() if not x.startswith("#")]
STATS = "\n".join(x for x in LOG if "statistics" in x)
OLD = "statistics draft: #calls = 87, #gen drafts = 87, #acc drafts = 80, #gen tokens = 259, #acc tokens = 167"


def unconditional(cell: str) -> list[float]:
    """The stored conditional a_i back as p_i = a_1 · … · a_i."""
    return list(np.cumprod([float(x) for x in cell.split(";")]))


def test_each_statistics_window_is_the_request_that_ended():
    df, report = load_measurements(STATS, "server.log", k=3)
    assert report.format == "llamacpp_log" and len(df) == 2 and not report.row_errors
    # request 0: 165 / 270 over 90 steps; request 1: (495 − 165) / (813 − 270) over 271 − 90 steps
    assert df.acceptance_rate.tolist() == pytest.approx([165 / 270, 330 / 543])
    assert df.mean_accepted_tokens.tolist() == pytest.approx([1 + 165 / 90, 1 + 330 / 181])
    # the slot lines of the same requests: acc per pos (0.822, 0.611, 0.400) and (0.829, 0.619, 0.376)
    np.testing.assert_allclose(unconditional(df.per_position_acceptance.iloc[0]), [0.822, 0.611, 0.400], atol=1e-6)
    np.testing.assert_allclose(unconditional(df.per_position_acceptance.iloc[1]), [0.829, 0.619, 0.376], atol=2e-3)
    assert "draft-eagle3, 181 verify steps since its last line" in df.notes.iloc[1]


def test_per_request_lines_win_over_the_statistics_that_repeat_them():
    df, _ = load_measurements("\n".join(LOG), "server.log", k=3)
    assert len(df) == 2 and all("draft acceptance (server slot timings" in n for n in df.notes)
    assert df.mean_accepted_tokens.tolist() == [2.83, 2.82]


def test_old_single_count_form_and_a_restart():
    restarted = OLD.replace("87, #gen drafts = 87", "10, #gen drafts = 10").replace("= 259", "= 30")
    df, report = load_measurements(f"{OLD}\n{restarted.replace('= 167', '= 20')}", "cli.log", k=3)
    assert report.format == "llamacpp_log" and len(df) == 2
    # one count per draft-and-verify call; the second line's counts fell (a new process): read whole
    assert df.acceptance_rate.tolist() == pytest.approx([167 / 259, 20 / 30])
    assert df.mean_accepted_tokens.tolist() == pytest.approx([1 + 167 / 87, 1 + 20 / 10])
    assert "per_position_acceptance" not in df  # the old form prints no rates


def test_positions_not_reached_are_zero_up_to_k():
    line = STATS.splitlines()[0].replace("(0.822, 0.611, 0.400)", "(0.822, 0.611)")
    df, report = load_measurements(line, "server.log", k=4)
    p = unconditional(df.per_position_acceptance.iloc[0].replace("nan", "0"))
    assert len(p) == 4 and p[2:] == [0.0, 0.0] and not report.row_errors


def test_more_positions_than_k_is_a_row_error_naming_k():
    with pytest.raises(
        ValueError,
        match=r"k \('k \(given\)'\): '2' — allowed: the K this line was logged with: its acceptance rate per position lists 3",
    ):
        load_measurements(STATS, "server.log", k=2)


@pytest.mark.parametrize(
    "hostile",
    [
        STATS.splitlines()[0].split(", #acc tokens")[0],  # truncated before the accepted count
        STATS.splitlines()[0].replace("#gen tokens =    270", "#gen tokens = lots"),  # a word for a count
    ],
    ids=["truncated", "wrong-type"],
)
def test_hostile_statistics_lines_are_refused_naming_what_was_looked_for(hostile):
    with pytest.raises(ValueError, match="no llama.cpp 'draft acceptance' or 'statistics' line found"):
        load_measurements(hostile, "server.log", format="llama.cpp", k=3)


def test_a_window_without_steps_is_no_row():
    first = STATS.splitlines()[0]
    df, _ = load_measurements(f"{first}\n{first}", "server.log", k=3)
    assert len(df) == 1 and not math.isnan(df.acceptance_rate.iloc[0])

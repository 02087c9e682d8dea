"""Leave-one-source-out: a source's predictions never see its own measurements, in one process or several."""

from __future__ import annotations

import pandas as pd
import pytest

from specviz.core import published


def _sample() -> pd.DataFrame:
    """A few priceable rows of three sources (two stacks), small enough to fit in a second."""
    frame = published.load_measurements()
    frame = frame[published.priceable(frame)]
    picked = [
        frame[frame["source_id"] == s].head(2) for s in ("gpt-fast-readme", "modelopt-benchmark", "lmsys-blog-mtp")
    ]
    return pd.concat(picked)


@pytest.mark.slow
def test_a_held_out_source_does_not_move_when_its_own_measurements_do():
    rows = _sample()
    base = published.leave_one_source_out(rows)
    moved = rows.copy()
    own = moved["source_id"] == "modelopt-benchmark"
    moved.loc[own, "t_step_ms"] = moved.loc[own, "t_step_ms"] * 3  # the held-out source's measurements only
    again = published.leave_one_source_out(moved)
    assert (again.loc[own, "predicted"] == base.loc[own, "predicted"]).all()
    assert (again.loc[own, "measured"] == 3 * base.loc[own, "measured"]).all()
    # the other sources' fits did see the change, so at least one of their predictions moves
    assert (again.loc[~own, "predicted"] != base.loc[~own, "predicted"]).any()


@pytest.mark.slow  # starts worker processes
def test_processes_give_the_same_predictions():
    rows = _sample()
    one, two = published.leave_one_source_out(rows), published.leave_one_source_out(rows, jobs=2)
    pd.testing.assert_frame_equal(one, two)
    assert set(one["profile_from"]) <= {"stack", "family", published.SHARED}

"""The run cache of specviz.app.ui: a run is read from the library once per server process and saved-at stamp.

Keys are (what, library URL, ((run id, saved-at), ...)); the URL of each test's library is its own
tmp_path, so the process-wide cache carries nothing from one test to another.
"""

from __future__ import annotations

import pandas as pd
import pytest
from _apps import open_app

from specviz.app import overlays, ui
from specviz.data import measurements, store


def _save(engine, label: str, rows: str = "4,0.8,20,2.2") -> int:
    df, _ = measurements.load_measurements(f"label,k,alpha,c,speedup\n{label},{rows}\n", name=label)
    return store.save_run(engine, df, label=label, source="test")


@pytest.fixture
def fetches(monkeypatch) -> list[list[int]]:
    """Every store.load_runs call (its run ids), the page's and specviz.app.ui's alike."""
    calls: list[list[int]] = []
    real = store.load_runs

    def counted(engine, run_ids):
        calls.append([int(i) for i in run_ids])
        return real(engine, run_ids)

    monkeypatch.setattr(store, "load_runs", counted)
    return calls


@pytest.mark.slow
def test_a_second_open_of_a_run_reads_nothing_from_the_library(db_url, fetches, monkeypatch):
    """Two visitors open the same link: the run is read, and its points derived, once.

    Was a defect: every open read the run twice (the export button and the overlay) and derived its
    points again; 200,000 rows took ~24 s per browser session.
    """
    run_id = _save(store.open_library(db_url), "cached run")
    derived = []
    real = overlays.with_series
    monkeypatch.setattr(overlays, "with_series", lambda frame: derived.append(len(frame)) or real(frame))
    first = open_app("pages/measured-data.py", runs=str(run_id))
    assert fetches == [[run_id]] and derived == [1]
    second = open_app("pages/measured-data.py", runs=str(run_id))
    assert fetches == [[run_id]] and derived == [1]  # neither the database nor with_series again
    assert first.dataframe[-1].value.equals(second.dataframe[-1].value)  # the same series table


@pytest.mark.slow
def test_a_selection_over_the_row_cap_is_refused_before_any_run_is_read(db_url, fetches, monkeypatch):
    """The listing's row counts decide: a run too large to draw is not read from the database at all."""
    run_id = _save(store.open_library(db_url), "large run")
    monkeypatch.setattr(overlays, "MAX_ROWS", 0)
    at = open_app("pages/measured-data.py", runs=str(run_id))
    assert fetches == []
    assert any("1 rows" in e.value and "select fewer runs" in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.slow
def test_cached_runs_match_the_library_frame_for_frame(db_url):
    """Runs with different columns, in the order asked, one repeated: exactly store.load_runs' frame."""
    engine = store.open_library(db_url)
    a = _save(engine, "a")
    df, _ = measurements.load_measurements("label,k,alpha,target_model\nb,2,0.6,llama\n", name="b")
    b = store.save_run(engine, df, label="b", source="test")
    runs = ui.library_runs(engine)
    for ids in ([b, a], [a, b, a], [a]):
        ui.load_runs(engine, runs, ids)  # fills the cache
        pd.testing.assert_frame_equal(ui.load_runs(engine, runs, ids), store.load_runs(engine, ids))


def test_a_run_trashed_here_is_not_served_even_from_an_old_listing(db_url, fetches):
    engine = store.open_library(db_url)
    run_id = _save(engine, "doomed")
    runs = ui.library_runs(engine)
    ui.load_runs(engine, runs, [run_id])
    ui.derived_runs(engine, runs, [run_id], overlays.with_series)
    assert ui.delete_runs(engine, [run_id]) == 1
    with pytest.raises(store.StoreError, match="in the trash"):
        ui.load_runs(engine, runs, [run_id])  # the listing still names it: the database is asked
    with pytest.raises(store.StoreError, match="in the trash"):
        ui.derived_runs(engine, runs, [run_id], overlays.with_series)


def test_a_run_trashed_by_another_server_leaves_the_cache_at_the_next_listing(db_url):
    engine = store.open_library(db_url)
    gone, kept = _save(engine, "gone"), _save(engine, "kept")
    runs = ui.library_runs(engine)
    ui.load_runs(engine, runs, [gone, kept])
    store.delete_runs(engine, [gone])  # not through ui: as another server process would
    ui.library_runs(engine)
    with pytest.raises(store.StoreError, match="in the trash"):
        ui.load_runs(engine, runs, [gone])
    assert ui.load_runs(engine, runs, [kept]).run.tolist() == ["kept"]


def test_an_id_saved_again_in_a_new_library_at_the_same_url_is_not_served_stale(tmp_path):
    """Delete the library file, create it again, save another run: it gets the old id, not the old data."""
    path = tmp_path / "library.sqlite"
    url = f"sqlite:///{path}"
    engine = store.open_library(url)
    old = _save(engine, "old run")
    old_listing = store.list_runs(engine)  # not ui.library_runs: the stamp alone must tell them apart
    assert ui.load_runs(engine, old_listing, [old]).run.tolist() == ["old run"]
    assert ui.derived_runs(engine, old_listing, [old], overlays.with_series).run.tolist() == ["old run"]
    engine.dispose()
    for f in tmp_path.glob("library.sqlite*"):
        f.unlink()
    engine = store.open_library(url)
    new = _save(engine, "new run", rows="2,0.5,10,1.4")
    assert new == old and str(engine.url) == url
    runs = store.list_runs(engine)
    assert ui.load_runs(engine, runs, [new]).run.tolist() == ["new run"]
    assert ui.derived_runs(engine, runs, [new], overlays.with_series).k.tolist() == [2]

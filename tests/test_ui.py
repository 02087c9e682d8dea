"""specviz.ui's fenced use of Streamlit internals: the hand-over of a legacy first run to the router."""

import streamlit as st

from specviz import ui


def test_the_legacy_pages_switch_is_where_the_hand_over_expects_it():
    manager = ui._pages_manager()
    assert manager is not None, f"streamlit {st.__version__}: re-check ui.hand_over_to_router against this release"
    assert isinstance(manager.uses_pages_directory, bool | None)


def test_hand_over_reruns_only_in_the_legacy_mode_and_leaves_it(monkeypatch):
    manager = ui._pages_manager()
    reruns = []
    monkeypatch.setattr(ui.st, "rerun", lambda: reruns.append(True))
    monkeypatch.setattr(manager, "uses_pages_directory", False)
    ui.hand_over_to_router()
    assert reruns == [] and manager.uses_pages_directory is False
    monkeypatch.setattr(manager, "uses_pages_directory", True)
    ui.hand_over_to_router()
    assert reruns == [True] and manager.uses_pages_directory is False


def test_an_untested_streamlit_release_switches_the_hand_over_off(monkeypatch):
    monkeypatch.setattr(ui.st, "__version__", "9.0.0")
    assert ui._pages_manager() is None
    reruns = []
    monkeypatch.setattr(ui.st, "rerun", lambda: reruns.append(True))
    ui.hand_over_to_router()
    assert reruns == []


def test_shared_results_evict_the_least_recently_used_past_the_byte_cap():
    import numpy as np

    cache = ui.SharedResults(max_bytes=3 * 800)
    one = lambda i: (np.full(100, i, dtype=np.float64),)  # 800 bytes
    for i in range(3):
        cache.put(i, one(i))
    assert cache.get(0)[0][0] == 0  # 0 is now the most recently used
    cache.put(3, one(3))  # over the cap: 1, the least recently used, goes
    assert cache.get(1) is None and [cache.get(i)[0][0] for i in (0, 2, 3)] == [0, 2, 3]
    cache.put(3, one(30))  # replacing an entry does not count it twice
    assert cache.get(0) is not None and cache.get(3)[0][0] == 30
    cache.put("big", (np.zeros(400),))  # larger than the cap: not kept, nothing evicted
    assert cache.get("big") is None and all(cache.get(i) is not None for i in (0, 2, 3))

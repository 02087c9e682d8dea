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

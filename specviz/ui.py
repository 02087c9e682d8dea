"""Streamlit glue shared by the pages: URL-mirrored controls, share link, errors.

The only module of ``specviz`` that imports streamlit. A page declares its
controls as a tuple of :class:`specviz.share.Param`, calls :func:`restore` before
drawing its widgets (each widget uses ``key=ui.key(PAGE, name)`` and no
``value=``), and :func:`publish` after them.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import streamlit as st

from specviz import share, store

_VIEWS = "_specviz_views"  # session_state: {page: {name: value}} survives page switches


def key(page: str, name: str) -> str:
    """Widget key of control ``name`` on ``page``."""
    return f"{page}.{name}"


def restore(page: str, spec: Sequence[share.Param]) -> None:
    """Seed each control's widget state: widget > URL > last value this session > default.

    Invalid URL values fall back (to the session's last value or the default) and
    each is reported with ``st.warning``; nothing raises.
    """
    from_url, warnings = share.decode(spec, st.query_params.to_dict())
    remembered = st.session_state.setdefault(_VIEWS, {}).get(page, {})
    url_keys = set(st.query_params.keys())
    for p in spec:
        k = key(page, p.key)
        if k in st.session_state:
            continue
        if p.key in url_keys and p.key not in warnings:
            st.session_state[k] = from_url[p.key]
        else:
            st.session_state[k] = remembered.get(p.key, p.default)
    for message in warnings.values():
        st.warning(message, icon=":material/warning:")


def slider(page: str, p: share.Param, label: str, **kwargs) -> Any:
    """``st.slider`` for control ``p``: bounds and state come from the Param (its single source)."""
    lo, hi = _bounds(p)
    return st.slider(label, lo, hi, key=key(page, p.key), **kwargs)


def number_input(page: str, p: share.Param, label: str, **kwargs) -> Any:
    """``st.number_input`` for control ``p``, bounded by the Param's ``lo`` and ``hi``."""
    lo, hi = _bounds(p)
    return st.number_input(label, lo, hi, key=key(page, p.key), **kwargs)


def radio(page: str, p: share.Param, label: str, **kwargs) -> Any:
    """``st.radio`` over the Param's ``choices``."""
    return st.radio(label, p.choices, key=key(page, p.key), **kwargs)


def selectbox(page: str, p: share.Param, label: str, **kwargs) -> Any:
    """``st.selectbox`` over the Param's ``choices``."""
    return st.selectbox(label, p.choices, key=key(page, p.key), **kwargs)


def tabs(page: str, p: share.Param) -> dict[str, Any]:
    """Lazy ``st.tabs`` over the Param's ``choices``: ``{label: tab}``; only the open tab's ``.open`` is True.

    Switching tabs reruns the script, so a page draws (and sends) only the open tab's content;
    the open tab is the Param's value, mirrored in the URL like any other control.
    """
    return dict(zip(p.choices, st.tabs(p.choices, key=key(page, p.key), on_change="rerun"), strict=True))


def _bounds(p: share.Param) -> tuple[Any, Any]:
    """Widget bounds of a numeric Param, typed like its values (int controls take int bounds)."""
    if p.lo is None or p.hi is None:
        raise ValueError(f"control {p.key!r} has no bounds (lo={p.lo}, hi={p.hi}) for a numeric widget")
    if p.kind in ("int", "ints"):
        return int(p.lo), int(p.hi)
    return float(p.lo), float(p.hi)


def values(page: str, spec: Sequence[share.Param]) -> dict[str, Any]:
    """Current value of every control of ``page``."""
    return {p.key: st.session_state[key(page, p.key)] for p in spec}


def publish(page: str, spec: Sequence[share.Param], url_path: str) -> dict[str, str]:
    """Mirror the controls into the URL and show a "Share this view" link.

    Returns the query parameters written (non-default values only). The link (an ``st.code``
    block, with its copy button) is drawn only while the expander is open: a page opening from a
    link does not load the code-block renderer for a collapsed box.
    """
    current = values(page, spec)
    st.session_state.setdefault(_VIEWS, {})[page] = current
    params = share.encode(spec, current)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    box = st.expander("Share this view", icon=":material/link:", key=share_key(page), on_change="rerun")
    with box:
        st.caption("This link reopens the page with exactly these settings.")
        if box.open:
            st.code(share.share_url(st.context.url, url_path, params), language=None)
    return params


def csv_download(label: str, table: Callable[[], Any], file_name: str, key: str) -> None:
    """A download button for the CSV of the DataFrame ``table()``, built when clicked (not on every run)."""
    st.download_button(label, lambda: table().to_csv(index=False), file_name, "text/csv", key=key, on_click="ignore")


def share_key(page: str) -> str:
    """Widget key of the "Share this view" expander of ``page`` (True while it is open)."""
    return key(page, "_share")


_MARKDOWN = re.compile(r"([\\`*_\[\]<>])")  # emphasis, code, links / images / directives, HTML


def plain(text: str) -> str:
    """``text`` with Markdown's special characters escaped, so user-supplied names show as written."""
    return _MARKDOWN.sub(r"\\\1", str(text))


def markdown_table(frame, formats: dict[str, str] | None = None) -> str:
    """``frame`` as a GitHub-flavoured Markdown table, every cell shown as written.

    Text is escaped (:func:`plain`, and ``|``); ``formats`` maps a column to a format spec for its
    numbers (e.g. ``{"E[N] computed": ".4f"}``); booleans read "yes" / "no" and missing values stay empty.
    """
    formats = formats or {}

    def cell(column: str, value: Any) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return ""
        if isinstance(value, (bool, np.bool_)):
            return "yes" if value else "no"
        if column in formats and isinstance(value, (int, float, np.number)):
            return format(value, formats[column])
        return plain(value).replace("|", "\\|")

    head = [plain(c).replace("|", "\\|") for c in frame.columns]
    rows = [[cell(c, v) for c, v in zip(frame.columns, row, strict=True)] for row in frame.itertuples(index=False)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def static_table(frame, formats: dict[str, str] | None = None) -> None:
    """Show a small reference table as Markdown: no data-grid component to load for a few rows of text."""
    st.markdown(markdown_table(frame, formats))


def show_error(exc: Exception) -> None:
    """Show a library ValueError to the person (as plain text: it may quote their input), never a traceback."""
    st.error(plain(str(exc)), icon=":material/error:")


@contextmanager
def reported_errors():
    """``with ui.reported_errors(): ...`` turns a ValueError into ``st.error``."""
    try:
        yield
    except ValueError as exc:
        show_error(exc)


def cached(fn: Callable) -> Callable:
    """``st.cache_data`` with a bounded size, for computed grids and tables."""
    return st.cache_data(max_entries=64, show_spinner=False)(fn)


class SharedResults:
    """Results shared by every visitor of this server process, keyed by their inputs.

    Least recently used entries are evicted once the arrays held exceed ``max_bytes``; a single
    result larger than that is not kept. Thread-safe (each visitor's script runs in its own thread).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[np.ndarray, ...]] = OrderedDict()
        self._bytes = 0  # sum of _nbytes over _items
        self._lock = threading.Lock()

    def get(self, k: Hashable) -> tuple[np.ndarray, ...] | None:
        """The result stored under ``k`` (now the most recently used), or None."""
        with self._lock:
            value = self._items.get(k)
            if value is not None:
                self._items.move_to_end(k)
            return value

    def put(self, k: Hashable, value: tuple[np.ndarray, ...]) -> None:
        """Store ``value`` under ``k`` and evict the least recently used past ``max_bytes``."""
        if _nbytes(value) > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(k, None)
            self._bytes += _nbytes(value) - (_nbytes(old) if old is not None else 0)
            self._items[k] = value
            while self._bytes > self.max_bytes:
                self._bytes -= _nbytes(self._items.popitem(last=False)[1])


def _nbytes(value: tuple[np.ndarray, ...]) -> int:
    return sum(a.nbytes for a in value)


@st.cache_resource(show_spinner=False)
def shared_results(name: str, max_bytes: int) -> SharedResults:
    """The process-wide :class:`SharedResults` called ``name`` (created on first use)."""
    return SharedResults(max_bytes)


@st.cache_resource(show_spinner=False)
def _open_library(url: str):
    return store.open_library(url)


def library():
    """The shared run library (one engine per process and URL), or None after an st.error saying why."""
    try:
        return _open_library(store.default_url())
    except ValueError as exc:
        show_error(exc)
        return None


# ----------------------------------------------------------------------------------------------------
# the first run after a server start (Streamlit's legacy pages/ mode; private API, fenced here)
# ----------------------------------------------------------------------------------------------------

#: Streamlit releases whose legacy-pages switch was checked (tests/test_browser.py opens a deep link first).
_PAGES_MODE_TESTED = ((1, 67),)


def _pages_manager():
    """Streamlit's PagesManager class where its legacy-pages switch is the one tested, else None."""
    version = tuple(int(part) for part in st.__version__.split(".")[:2] if part.isdigit())
    if version not in _PAGES_MODE_TESTED:
        return None
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:
        return None
    return PagesManager if isinstance(getattr(PagesManager, "uses_pages_directory", None), bool | None) else None


def hand_over_to_router() -> None:
    """Call first thing in every page: hands a run that bypassed the router (app.py) back to it.

    Until the router's first ``st.navigation`` call in a server process, Streamlit treats the
    ``pages/`` folder next to app.py as a legacy multipage app. When a shared link is the first
    request after a start, Streamlit then finds ``pages/<url path>.py`` by its file name and runs it
    directly, without the router. Here the page switches Streamlit to the router's navigation (what
    ``st.navigation`` does first) and reruns: a page is identified by its URL path, so the rerun
    goes through app.py to this same page, with the link's query parameters. Page files are named
    by their URL path for this (``pages/design-space.py`` for ``/design-space``); otherwise
    the legacy lookup misses and Streamlit shows a "Page not found" dialog first.
    """
    manager = _pages_manager()
    if manager is not None and manager.uses_pages_directory:
        manager.uses_pages_directory = False
        st.rerun()

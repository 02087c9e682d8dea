"""Caches: ``@cached`` results and parsed uploads per session (bounded), results shared across sessions
(:class:`SharedResults`, byte-capped), the run library's connection and the runs read from it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app.ui.display import show_error
from specviz.base import machine
from specviz.data import store

#: Entries kept per ``@ui.cached`` function by default (least recently used go first). The theory
#: pages' cached functions are pure (a result depends on the arguments only), so no entry goes stale
#: and none needs a ttl; the largest of their results, the K*(α, c) maps at 201 × 121, pickle to ≈ 0.4 MB.
CACHED_ENTRIES = 16


def cached(fn: Callable | None = None, *, max_entries: int = CACHED_ENTRIES, ttl: float | None = None):
    """``st.cache_data`` with a bounded size, for computed grids and tables.

    ``@ui.cached`` keeps :data:`CACHED_ENTRIES` results; ``@ui.cached(max_entries=…, ttl=…)`` sets
    the bound and a lifetime in seconds (for results as large as an uploaded file, kept only while
    the person works on it).
    """
    decorate = st.cache_data(max_entries=max_entries, ttl=ttl, show_spinner=False)
    return decorate if fn is None else decorate(fn)


#: Figures kept by :func:`figure`, over every builder and visitor (least recently used go first). The
#: pages it serves draw model grids: a figure holds at most a few hundred KB.
FIGURE_ENTRIES = 32


def figure(build: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``build(*args, **kwargs)``, built once per arguments and shared by every session: a rerun that leaves
    a chart's data as it was (a widget elsewhere, a tab, a language switch back) does not build it again.

    ``build`` is a builder of :mod:`specviz.app.figures`: its figure depends on its arguments only (the
    language is one). The figure is shared, so nobody may change it (``ui.chart`` only reads it)."""
    return _figure(f"{build.__module__}.{build.__qualname__}", args, kwargs, build)


@st.cache_resource(max_entries=FIGURE_ENTRIES, show_spinner=False)
def _figure(name: str, args: tuple, kwargs: dict, _build: Callable[..., Any]) -> Any:
    return _build(*args, **kwargs)


def parsed_upload(fn: Callable | None = None, *, max_entries: int = 8, ttl: float | None = 15 * 60):
    """:func:`cached` for the parser of an upload (a result as large as the file, kept while the person
    works on it), and the heap's freed pages handed back after each call
    (:func:`specviz.base.machine.release_freed_memory`): a 20 MB file's parse leaves ~100 MB of them."""

    def decorate(parse: Callable) -> Callable:
        inner = cached(parse, max_entries=max_entries, ttl=ttl)

        def call(*args, **kwargs):
            try:
                return inner(*args, **kwargs)
            finally:
                machine.release_freed_memory()

        call.__doc__, call.__name__, call.clear = parse.__doc__, parse.__name__, inner.clear
        return call

    return decorate if fn is None else decorate(fn)


class SharedResults:
    """Results shared by every visitor of this server process, keyed by their inputs.

    Least recently used entries are evicted once the bytes held (``size(value)``, by default the
    ``nbytes`` of a tuple of arrays) exceed ``max_bytes``; a single result larger than that is not
    kept. Thread-safe (each visitor's script runs in its own thread). Values are shared, not copied:
    callers must not modify them.
    """

    def __init__(self, max_bytes: int, size: Callable[[Any], int] | None = None) -> None:
        self.max_bytes = max_bytes
        self._size = size or _nbytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()  # key -> (value, its size)
        self._bytes = 0  # sum of the sizes in _items
        self._lock = threading.Lock()

    def get(self, k: Hashable) -> Any | None:
        """The result stored under ``k`` (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(k)
            if item is None:
                return None
            self._items.move_to_end(k)
            return item[0]

    def put(self, k: Hashable, value: Any) -> None:
        """Store ``value`` under ``k`` and evict the least recently used past ``max_bytes``."""
        nbytes = self._size(value)
        with self._lock:
            old = self._items.pop(k, None)
            self._bytes -= old[1] if old is not None else 0
            if nbytes > self.max_bytes:
                return
            self._items[k] = (value, nbytes)
            self._bytes += nbytes
            while self._bytes > self.max_bytes:
                self._bytes -= self._items.popitem(last=False)[1][1]

    def drop(self, which: Callable[[Hashable], bool]) -> int:
        """Remove every entry whose key satisfies ``which(key)``; return how many were removed."""
        with self._lock:
            gone = [k for k in self._items if which(k)]
            for k in gone:
                self._bytes -= self._items.pop(k)[1]
            return len(gone)

    @property
    def nbytes(self) -> int:
        """Bytes held (the sum of the entries' sizes)."""
        return self._bytes


def _nbytes(value: tuple[np.ndarray, ...]) -> int:
    return sum(a.nbytes for a in value)


#: Every store of results shared by all visitors: name -> byte cap (the sampling lab's simulations, kept
#: so that a link opened twice is not simulated twice). One definition for the pages and benchmarks/soak.py.
SHARED_STORES = {"lab.simulations": 32 * 2**20}


@st.cache_resource(show_spinner=False, max_entries=len(SHARED_STORES))
def shared_results(name: str) -> SharedResults:
    """The process-wide :class:`SharedResults` called ``name``, capped at ``SHARED_STORES[name]`` bytes."""
    return SharedResults(SHARED_STORES[name])


@st.cache_resource(show_spinner=False, max_entries=4)
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
# runs read from the library, kept per process (a link to a large run reads it from the database once)
# ----------------------------------------------------------------------------------------------------

#: Bytes of run frames (and frames derived from them) kept per server process. A run of 5,000 rows
#: (the most one overlay view draws) holds ≈ 2.4 MiB; one of 200,000 rows ≈ 95 MiB, read only for an
#: export (the page refuses a view that large before reading anything).
RUN_CACHE_BYTES = 128 * 2**20


def _pandas_bytes(value) -> int:
    """Bytes held by a DataFrame / Series, or a tuple of them (``memory_usage(deep=True)``)."""
    if isinstance(value, tuple):
        return sum(_pandas_bytes(v) for v in value)
    usage = value.memory_usage(deep=True)
    return int(usage.sum() if isinstance(value, pd.DataFrame) else usage)


#: Every visitor's run frames and what was derived from them, keyed by :func:`_runs_key`. A module
#: global rather than ``st.cache_resource``: a deferred download reads it outside a script run.
_RUNS = SharedResults(RUN_CACHE_BYTES, size=_pandas_bytes)


def _runs_key(what: str, engine, runs, run_ids: Sequence[int]) -> tuple[str, str, tuple[tuple[int, str], ...]]:
    """``(what, library URL, ((run id, saved-at stamp), ...))``: the stamp is the run's ``uploaded_at`` in
    ``runs`` (:func:`library_runs`), so a run saved again under an id that was deleted (a library
    created anew at the same URL) never finds the old run's entry."""
    saved_at = dict(zip(runs["id"], runs["uploaded_at"], strict=True))
    return what, str(engine.url), tuple((int(i), str(saved_at[i])) for i in run_ids)


def library_runs(engine):
    """``store.list_runs(engine)``; cached runs of this library that it no longer lists (deleted, by any
    server) are dropped from the run cache, with everything derived from them."""
    runs = store.list_runs(engine)
    url, listed = str(engine.url), set(_runs_key("", engine, runs, runs["id"])[2])
    _RUNS.drop(lambda k: k[1] == url and not listed.issuperset(k[2]))
    return runs


def load_runs(engine, runs, run_ids: Sequence[int]):
    """``store.load_runs(engine, run_ids)``, each run read from the database once per server process.

    ``runs`` is this render's :func:`library_runs`; it gives each run's saved-at stamp for the cache key.
    A run it does not list is read from the database (which refuses it if it is gone). The frame
    returned is a new one; the cached run frames are shared and never modified.
    """
    ids = [int(i) for i in run_ids]
    if not ids:
        return store.load_runs(engine, ids)
    listed, frames = set(runs["id"]), []
    for i in ids:
        if i not in listed:
            frames.append(store.load_runs(engine, [i]))
            continue
        k = _runs_key("run", engine, runs, [i])
        frame = _RUNS.get(k)
        if frame is None:
            frame = store.load_runs(engine, [i])
            _RUNS.put(k, frame)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def derived_runs(engine, runs, run_ids: Sequence[int], derive: Callable[[pd.DataFrame], Any]) -> Any:
    """``derive(load_runs(engine, runs, run_ids))`` (DataFrames, or a tuple of them), computed once per
    server process for these runs as saved, and dropped with any of them.

    ``derive`` is named by its module and qualified name in the key: it must be a pure function of the
    frame. Its result is shared: callers must not modify it. A ValueError it raises is not kept.
    """
    ids = [int(i) for i in run_ids]
    if not set(ids) <= set(runs["id"]):  # not listed: load_runs reads it (and says it is gone)
        return derive(load_runs(engine, runs, ids))
    k = _runs_key(f"{derive.__module__}.{derive.__qualname__}", engine, runs, ids)
    value = _RUNS.get(k)
    if value is None:
        value = derive(load_runs(engine, runs, ids))
        _RUNS.put(k, value)
    return value


def delete_runs(engine, run_ids: Sequence[int], *, who=None, page: str = "") -> int:
    """``store.delete_runs`` (to the trash, as ``who``); the trashed runs, and what was derived from them,
    leave the cache."""
    deleted = store.delete_runs(engine, run_ids, who=who, page=page)
    url, ids = str(engine.url), {int(i) for i in run_ids}
    _RUNS.drop(lambda k: k[1] == url and any(i in ids for i, _ in k[2]))
    return deleted

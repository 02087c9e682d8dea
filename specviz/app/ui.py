"""Streamlit glue shared by the pages: URL-mirrored controls, share link, errors.

The only module of ``specviz`` that imports streamlit. A page declares its
controls as a tuple of :class:`specviz.app.share.Param`, calls :func:`restore` before
drawing its widgets (each widget uses ``key=ui.key(PAGE, name)`` and no
``value=``), and :func:`publish` after them.
"""

from __future__ import annotations

import contextvars
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app import figures, share
from specviz.base import hosting, i18n, machine
from specviz.data import store

_VIEWS = "_specviz_views"  # session_state: {page: {name: value}} survives page switches
LANG_KEY = "_specviz_lang"  #: session_state: this session's UI language (the sidebar switch's widget key)
LANG_PARAM = "lang"  #: the query parameter that carries it in a shared link


#: The language a :func:`session_language` wrapper runs its function in (None: read the session).
_BOUND_LANGUAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("specviz_language", default=None)


def language() -> str:
    """This session's UI language: chosen in the sidebar, else the link's ``?lang=``, else the browser's locale.

    Per session (``st.session_state``), never per process: people on one server each have their own.
    """
    bound = _BOUND_LANGUAGE.get()
    if bound is not None:
        return bound
    if LANG_KEY not in st.session_state:
        asked = st.query_params.get(LANG_PARAM)
        st.session_state[LANG_KEY] = asked if asked in i18n.LANGUAGES else i18n.from_locale(st.context.locale)
    return st.session_state[LANG_KEY]


def t(key: str, /, **values) -> str:
    """The text of catalogue ``key`` in this session's language (:func:`specviz.base.i18n.text`)."""
    return i18n.text(language(), key, **values)


def session_language(fn: Callable[..., str]) -> Callable[..., str]:
    """``fn`` that runs in this session's language (read now) whenever it is called.

    A widget's ``format_func`` may be called outside the script run (AppTest does, to map a value
    set from a test to its label), where no session can be read; the wrappers below bind theirs.
    """
    lang = language()

    def in_language(*args, **kwargs) -> str:
        token = _BOUND_LANGUAGE.set(lang)
        try:
            return fn(*args, **kwargs)
        finally:
            _BOUND_LANGUAGE.reset(token)

    return in_language


def _bound_labels(kwargs: dict) -> dict:
    if kwargs.get("format_func") is not None:
        kwargs["format_func"] = session_language(kwargs["format_func"])
    return kwargs


def language_switch() -> None:
    """The sidebar's English / 中文 switch; the choice goes into the URL so that a shared link keeps it.

    Other controls keep their values: widgets are identified by their keys, not their labels.
    """
    language()
    st.segmented_control(
        t("app.language"),
        list(i18n.LANGUAGES),
        format_func=i18n.LANGUAGES.get,
        key=LANG_KEY,
        required=True,
        on_change=_mirror_language,
    )
    _mirror_language()


def _mirror_language() -> None:
    """Write the session's language into the URL (kept off for English where the browser is English)."""
    lang = st.session_state.get(LANG_KEY, i18n.DEFAULT)
    wanted = lang != i18n.from_locale(st.context.locale) or LANG_PARAM in st.query_params
    if wanted and st.query_params.get(LANG_PARAM) != lang:
        st.query_params[LANG_PARAM] = lang


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
    for note in warnings.values():
        st.warning(message(note), icon=":material/warning:")


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
    return st.radio(label, p.choices, key=key(page, p.key), **_bound_labels(kwargs))


def selectbox(page: str, p: share.Param, label: str, **kwargs) -> Any:
    """``st.selectbox`` over the Param's ``choices``."""
    return st.selectbox(label, p.choices, key=key(page, p.key), **_bound_labels(kwargs))


def multiselect(page: str, p: share.Param, label: str, options, **kwargs) -> list:
    """``st.multiselect`` for list control ``p``: at most ``p.max_items`` selections, every value checked.

    A change (typed options included) is cleaned by :func:`share.clean_list`, the rule a link obeys,
    before the script reads it; what was dropped is shown with ``st.warning`` below the widget.
    """
    k = key(page, p.key)
    value = st.multiselect(
        label, options, key=k, max_selections=p.max_items, on_change=_clean_list, args=(k, p), **_bound_labels(kwargs)
    )
    note = st.session_state.pop(_note_key(k), None)
    if note:
        st.warning(message(note), icon=":material/warning:")
    return value


def text_box(page: str, p: share.Param, label: str, *, area: bool = False, container=st, **kwargs) -> str:
    """``st.text_input`` (``st.text_area`` when ``area``) for text control ``p``, at most ``p.hi`` characters.

    The widget gets no ``max_chars``: Streamlit's box drops a longer paste whole, without a word. A
    longer text is cut to its first ``p.hi`` characters by :func:`share.clean_text` (the rule a link
    obeys) before the script reads it, and a warning below the box names the limit.
    """
    k = key(page, p.key)
    widget = container.text_area if area else container.text_input
    value = widget(label, key=k, on_change=_clean_text, args=(k, p), **kwargs)
    note = st.session_state.pop(_note_key(k), None)
    if note:
        container.warning(message(note), icon=":material/content_cut:")
    return value


def _clean_text(widget_key: str, p: share.Param) -> None:
    """on_change of :func:`text_box`: the text cut to the Param's limit, and a note when it was."""
    cut, note = share.clean_text(p, st.session_state[widget_key])
    st.session_state[widget_key] = cut
    if note:
        st.session_state[_note_key(widget_key)] = note


def _note_key(widget_key: str) -> str:
    return f"{widget_key}._dropped"


def _clean_list(widget_key: str, p: share.Param) -> None:
    """on_change of :func:`multiselect`: the widget's value by the Param's rule, and a note of what was dropped."""
    cleaned, note = share.clean_list(p, st.session_state[widget_key])
    st.session_state[widget_key] = cleaned
    if note:
        st.session_state[_note_key(widget_key)] = note


def tabs(page: str, p: share.Param, format_func: Callable[[Any], str] | None = None) -> dict[str, Any]:
    """Lazy ``st.tabs`` over the Param's ``choices``: ``{choice: tab}``; only the open tab's ``.open`` is True.

    Switching tabs reruns the script, so a page draws (and sends) only the open tab's content;
    the open tab is the Param's value, mirrored in the URL like any other control.
    ``format_func`` gives each choice's label (e.g. in the session's language): the tabs then run
    on a widget of their own, keyed ``<control>._label``, and the Param keeps the choice itself.
    """
    k = key(page, p.key)
    if format_func is None:
        return dict(zip(p.choices, st.tabs(p.choices, key=k, on_change="rerun"), strict=True))
    labels = [format_func(c) for c in p.choices]
    label_key = f"{k}._label"
    st.session_state[label_key] = labels[p.choices.index(st.session_state[k])]
    made = st.tabs(labels, key=label_key, on_change=_picked_tab, args=(k, label_key, p.choices, labels))
    return dict(zip(p.choices, made, strict=True))


def _picked_tab(k: str, label_key: str, choices: tuple, labels: list[str]) -> None:
    """on_change of a labelled :func:`tabs`: the Param takes the choice of the clicked label."""
    st.session_state[k] = choices[labels.index(st.session_state[label_key])]


def show_open_tab(
    page: str,
    p: share.Param,
    sections: dict[str, Callable[..., None]],
    *args: Any,
    format_func: Callable[[Any], str] | None = None,
) -> None:
    """Draw the lazy tabs of :func:`tabs` and run the open one's ``sections[label](*args)`` inside it;
    a ``ValueError`` it raises is shown with :func:`show_error`."""
    for label, tab in tabs(page, p, format_func).items():
        if tab.open:
            with tab:
                try:
                    sections[label](*args)
                except ValueError as exc:
                    show_error(exc)


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
    if LANG_PARAM in st.query_params or language() != i18n.from_locale(st.context.locale):
        params[LANG_PARAM] = language()  # a shared link opens in the sender's language
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    box = st.expander(t("ui.share"), icon=":material/link:", key=share_key(page), on_change="rerun")
    with box:
        st.caption(t("ui.share_caption"))
        if box.open:
            st.code(share.share_url(st.context.url, url_path, params), language=None)
    return params


def chart(fig, **kwargs) -> None:
    """``st.plotly_chart(fig, **kwargs)`` within the point budget: a figure over
    :data:`specviz.app.figures.MAX_POINTS` values is thinned evenly (:func:`specviz.app.figures.within_budget`)
    and says so under the chart. Every chart of the app goes through here."""
    fig, total, sent = figures.within_budget(fig)
    st.plotly_chart(fig, **kwargs)
    if sent < total:
        st.caption(t("ui.thinned", sent=f"{sent:,}", total=f"{total:,}"))


def csv_download(label: str, table: Callable[[], Any], file_name: str, key: str) -> None:
    """A download button for the CSV of the DataFrame ``table()``, built when clicked (not on every run)."""
    st.download_button(label, lambda: table().to_csv(index=False), file_name, "text/csv", key=key, on_click="ignore")


def share_key(page: str) -> str:
    """Widget key of the "Share this view" expander of ``page`` (True while it is open)."""
    return key(page, "_share")


_MARKDOWN = re.compile(r"([\\`*_\[\]<>&])")  # emphasis, code, links / images / directives, HTML, entities


def plain(text: str) -> str:
    """``text`` with Markdown's special characters escaped, so user-supplied names show as written
    (``&quot;`` typed in a name stays ``&quot;``: ``\\&`` is a literal ampersand)."""
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


def public_message(text: str, hosted: bool | None = None) -> str:
    """``text`` as this deployment may show it: unchanged, or in hosted mode (``hosted``; default
    ``$SPECVIZ_HOSTED``, :func:`specviz.base.hosting.is_hosted`) with the run library's database URL and file,
    every other URL and every absolute path replaced by ``[hidden]`` (:func:`specviz.base.hosting.redact`).
    """
    if not (hosting.is_hosted() if hosted is None else hosted):
        return str(text)
    return hosting.redact(text, store.database_forms(store.default_url()))


def message(item: BaseException | str) -> str:
    """A library error or note in this session's language (:func:`specviz.base.i18n.localized`)."""
    return i18n.localized(item, language())


def show_error(exc: Exception) -> None:
    """Show a library ValueError to the person (as plain text: it may quote their input), never a traceback.

    In this session's language (:func:`message`); in hosted mode without paths or URLs (:func:`public_message`).
    """
    st.error(plain(public_message(message(exc))), icon=":material/error:")


@contextmanager
def reported_errors():
    """``with ui.reported_errors(): ...`` turns a ValueError into ``st.error``."""
    try:
        yield
    except ValueError as exc:
        show_error(exc)


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
SHARED_STORES = {"lab.simulations": 64 * 2**20}


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


def delete_runs(engine, run_ids: Sequence[int]) -> int:
    """``store.delete_runs(engine, run_ids)``; the deleted runs, and what was derived from them, leave the cache."""
    deleted = store.delete_runs(engine, run_ids)
    url, ids = str(engine.url), {int(i) for i in run_ids}
    _RUNS.drop(lambda k: k[1] == url and any(i in ids for i, _ in k[2]))
    return deleted

"""Streamlit glue shared by the pages: URL-mirrored controls, share link, errors.

The only module of ``specviz`` that imports streamlit. A page declares its
controls as a tuple of :class:`specviz.share.Param`, calls :func:`restore` before
drawing its widgets (each widget uses ``key=ui.key(PAGE, name)`` and no
``value=``), and :func:`publish` after them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

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

    Returns the query parameters written (non-default values only).
    """
    current = values(page, spec)
    st.session_state.setdefault(_VIEWS, {})[page] = current
    params = share.encode(spec, current)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    with st.expander("Share this view", icon=":material/link:"):
        st.caption("This link reopens the page with exactly these settings.")
        st.code(share.share_url(st.context.url, url_path, params), language=None)
    return params


_MARKDOWN = re.compile(r"([\\`*_\[\]<>])")  # emphasis, code, links / images / directives, HTML


def plain(text: str) -> str:
    """``text`` with Markdown's special characters escaped, so user-supplied names show as written."""
    return _MARKDOWN.sub(r"\\\1", str(text))


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

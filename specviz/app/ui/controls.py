"""Controls bound to a :class:`~specviz.app.share.Param` and mirrored in the URL: restore, the widgets,
text boxes cut to their limit, lazy tabs, publish (the share link), charts and downloads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from specviz.app import figures, share
from specviz.app.ui.display import message, show_error
from specviz.app.ui.frontend import placeholder
from specviz.app.ui.language import LANG_PARAM, _bound_labels, language, t
from specviz.base import i18n

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
    for note in warnings.values():
        st.warning(message(note), icon=":material/warning:")


def slider(page: str, p: share.Param, label: str | None = None, **kwargs) -> Any:
    """``st.slider`` for control ``p``: bounds and state come from the Param (its single source)."""
    lo, hi = _bounds(p)
    return st.slider(_label(p, label), lo, hi, key=key(page, p.key), **kwargs)


def number_input(page: str, p: share.Param, label: str | None = None, **kwargs) -> Any:
    """``st.number_input`` for control ``p``, bounded by the Param's ``lo`` and ``hi``."""
    lo, hi = _bounds(p)
    return st.number_input(_label(p, label), lo, hi, key=key(page, p.key), **kwargs)


def radio(page: str, p: share.Param, label: str | None = None, **kwargs) -> Any:
    """``st.radio`` over the Param's ``choices``."""
    return st.radio(_label(p, label), p.choices, key=key(page, p.key), **_choice_labels(p, kwargs))


def selectbox(page: str, p: share.Param, label: str | None = None, **kwargs) -> Any:
    """``st.selectbox`` over the Param's ``choices``."""
    return st.selectbox(_label(p, label), p.choices, key=key(page, p.key), **_choice_labels(p, kwargs))


def checkbox(page: str, p: share.Param, label: str | None = None, **kwargs) -> bool:
    """``st.checkbox`` for boolean control ``p``."""
    return st.checkbox(_label(p, label), key=key(page, _boolean(p).key), **kwargs)


def toggle(page: str, p: share.Param, label: str | None = None, **kwargs) -> bool:
    """``st.toggle`` for boolean control ``p``."""
    return st.toggle(_label(p, label), key=key(page, _boolean(p).key), **kwargs)


def _boolean(p: share.Param) -> share.Param:
    if p.kind != "bool":
        raise ValueError(f"control {p.key!r} is of kind {p.kind!r}, not 'bool': it cannot be a checkbox or toggle")
    return p


def multiselect(page: str, p: share.Param, label: str, options, **kwargs) -> list:
    """``st.multiselect`` for list control ``p``: at most ``p.max_items`` selections, every value checked.

    A change (typed options included) is cleaned by :func:`share.clean_list`, the rule a link obeys,
    before the script reads it; what was dropped is shown with ``st.warning`` below the widget.
    """
    k = key(page, p.key)
    kwargs.setdefault("placeholder", placeholder())
    value = st.multiselect(
        label, options, key=k, max_selections=p.max_items, on_change=_clean_list, args=(k, p), **_bound_labels(kwargs)
    )
    note = st.session_state.pop(_note_key(k), None)
    if note:
        st.warning(message(note), icon=":material/warning:")
    return value


def text_box(page: str, p: share.Param, label: str | None = None, *, area: bool = False, container=st, **kwargs) -> str:
    """``st.text_input`` (``st.text_area`` when ``area``) for text control ``p``, at most ``p.hi`` characters.

    The widget gets no ``max_chars``: Streamlit's box drops a longer paste whole, without a word. A
    longer text is cut to its first ``p.hi`` characters by :func:`share.clean_text` (the rule a link
    obeys) before the script reads it, and a warning below the box names the limit.
    """
    k = key(page, p.key)
    widget = container.text_area if area else container.text_input
    value = widget(_label(p, label), key=k, on_change=_clean_text, args=(k, p), **kwargs)
    note = st.session_state.pop(_note_key(k), None)
    if note:
        container.warning(message(note), icon=":material/content_cut:")
    return value


def _label(p: share.Param, label: str | None) -> str:
    """The widget's label: the page's own, else the Param's in the session's language."""
    if label is not None:
        return label
    if not p.label:
        raise ValueError(f"control {p.key!r} has no label: give one to the Param or to the widget")
    return t(p.label)


def _choice_labels(p: share.Param, kwargs: dict) -> dict:
    """Widget arguments with the Param's choice labels as ``format_func`` (unless the page gives one)."""
    if kwargs.get("format_func") is None and p.labels:
        kwargs["format_func"] = lambda choice: t(p.choice_label(choice))
    return _bound_labels(kwargs)


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
    if format_func is None and p.labels:
        format_func = lambda choice: t(p.choice_label(choice))
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
    st.session_state.setdefault(_VIEWS, {}).setdefault(page, {}).update(current)  # pages may share a key prefix
    params = share.encode(spec, current)
    if LANG_PARAM in st.query_params or language() != i18n.from_locale(st.context.locale):
        params[LANG_PARAM] = language()  # a shared link opens in the sender's language
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    box = st.expander(t("Share this view"), icon=":material/link:", key=share_key(page), on_change="rerun")
    with box:
        st.caption(t("This link reopens the page with exactly these settings."))
        if box.open:
            st.code(share.share_url(st.context.url, url_path, params), language=None)
    return params


def chart(fig, **kwargs) -> None:
    """``st.plotly_chart(fig, **kwargs)`` laid out to read at any width (:func:`specviz.app.figures.readable`)
    and within the point budget: a figure over :data:`specviz.app.figures.MAX_POINTS` values is thinned evenly
    (:func:`specviz.app.figures.within_budget`) and says so under the chart. Every chart of the app goes
    through here."""
    fig, total, sent = figures.within_budget(figures.readable(fig))
    st.plotly_chart(fig, **kwargs)
    if sent < total:
        st.caption(
            t(
                "Drawn: {sent} of {total} values, evenly thinned so that the browser stays responsive; the tables and downloads hold them all.",
                sent=f"{sent:,}",
                total=f"{total:,}",
            )
        )


#: Headline numbers (``st.metric``) wrap instead of ending in "…": a label or value wider than its column
#: (a long Chinese label, four metrics in a row, a phone) is read whole, as Streamlit already prints it.
HEADLINE_CSS = """<style>
[data-testid="stMetric"] [data-testid="stMarkdownContainer"], [data-testid="stMetric"] [data-testid="stMarkdownContainer"] p {
    overflow: visible !important; text-overflow: clip !important; white-space: normal !important;
    overflow-wrap: anywhere !important; max-width: 100% !important; min-width: 0 !important;
}
</style>"""


def headline_style() -> None:
    """Let every headline label and value of the page wrap (:data:`HEADLINE_CSS`); a style, no element drawn."""
    st.html(HEADLINE_CSS)


def csv_download(label: str, table: Callable[[], Any], file_name: str, key: str) -> None:
    """A download button for the CSV of the DataFrame ``table()``, built when clicked (not on every run)."""
    st.download_button(label, lambda: table().to_csv(index=False), file_name, "text/csv", key=key, on_click="ignore")


def share_key(page: str) -> str:
    """Widget key of the "Share this view" expander of ``page`` (True while it is open)."""
    return key(page, "_share")

"""The session's language: chosen in the sidebar, else the link's ``?lang=``, else the browser's; the
switch, and :func:`t`, a message in that language."""

from __future__ import annotations

import contextvars
from collections.abc import Callable

import streamlit as st

from specviz.base import i18n

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


def t(msgid: str, /, **values) -> str:
    """``msgid`` (its English text) in this session's language, ``{fields}`` filled (:func:`specviz.base.i18n.text`)."""
    return i18n.text(language(), msgid, **values)


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
        t("Language"),
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

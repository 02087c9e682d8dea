"""What a person reads: text with Markdown escaped, tables, and errors shown in the session's language
with no server path, URL or traceback."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any

import numpy as np
import streamlit as st

from specviz.app.ui.language import language
from specviz.base import hosting, i18n
from specviz.data import store

_MARKDOWN = re.compile(r"([\\`*_\[\]<>&])")  # emphasis, code, links / images / directives, HTML, entities


def plain(text: str) -> str:
    """``text`` with Markdown's special characters escaped, so user-supplied names show as written
    (``&quot;`` typed in a name stays ``&quot;``: ``\\&`` is a literal ampersand)."""
    return _MARKDOWN.sub(r"\\\1", str(text))


def markdown_table(frame, formats: dict[str, str] | None = None, code: tuple[str, ...] = ()) -> str:
    """``frame`` as a GitHub-flavoured Markdown table, every cell shown as written.

    Text is escaped (:func:`plain`, and ``|``); ``formats`` maps a column to a format spec for its
    numbers (e.g. ``{"E[N] computed": ".4f"}``); booleans read "yes" / "no" and missing values stay empty;
    the columns ``code`` are names quoted verbatim, shown as code.
    """
    formats = formats or {}

    def cell(column: str, value: Any) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return ""
        if column in code:
            return "`` " + str(value).replace("|", "\\|") + " ``" if str(value) else ""
        if isinstance(value, (bool, np.bool_)):
            return "yes" if value else "no"
        if column in formats and isinstance(value, (int, float, np.number)):
            return format(value, formats[column])
        return plain(value).replace("|", "\\|")

    head = [plain(c).replace("|", "\\|") for c in frame.columns]
    rows = [[cell(c, v) for c, v in zip(frame.columns, row, strict=True)] for row in frame.itertuples(index=False)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def static_table(frame, formats: dict[str, str] | None = None, code: tuple[str, ...] = ()) -> None:
    """Show a small reference table as Markdown: no data-grid component to load for a few rows of text."""
    st.markdown(markdown_table(frame, formats, code))


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

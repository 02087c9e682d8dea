"""Streamlit's own texts (the multiselect's placeholder, the file uploader's button and limit) in the session's
language.

Streamlit 1.67 takes a multiselect's placeholder as an argument, but its uploader's "Upload" and "20MB per file •
JSON" are written by the frontend, with no option to change them. In Chinese :func:`file_uploader` restyles
them with a small CSS override fenced to that uploader (``.st-key-<key>``) and to the frontend version whose
markup it was written for (:data:`FRONTEND`); tests/browser/test_browser_zh.py checks the drawn page.
"""

from __future__ import annotations

import json
import re

import streamlit as st

from specviz.app.ui.language import language, t

FRONTEND = "1.67."  #: the Streamlit release whose uploader markup the override matches
MARK = "specviz-frontend-zh"  #: names the override in the page (the AppTest check looks for it)

_CSS = """<style>/* {mark}: Streamlit {version} uploader texts in Chinese */
{scope} [data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p {{font-size: 0}}
{scope} [data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p::after {{
  content: {button}; font-size: 0.875rem}}
{scope} [data-testid="stFileUploaderDropzoneInstructions"] span {{font-size: 0}}
{scope} [data-testid="stFileUploaderDropzoneInstructions"] span::after {{content: {limit}; font-size: 0.875rem}}
</style>"""


def placeholder() -> str:
    """A multiselect's placeholder in the session's language (Streamlit's own says "Choose options")."""
    return t("Choose one or more")


def file_uploader(label: str, types: list[str], key: str, container=st, **kwargs):
    """``st.file_uploader`` whose button and size limit read in the session's language."""
    uploaded = container.file_uploader(label, type=types, key=key, **kwargs)
    if language() != "en" and st.__version__.startswith(FRONTEND):
        st.html(uploader_css(key, types))
    return uploaded


def uploader_css(key: str, types: list[str]) -> str:
    """The override of the uploader ``key``'s button label and limit line (as 1.67 writes them)."""
    scope = ".st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())  # the frontend's class of a keyed element
    limit = t(
        "At most {size} MB per file • {types}",
        size=st.get_option("server.maxUploadSize"),
        types=", ".join(x.lstrip(".").upper() for x in types),
    )
    return _CSS.format(
        mark=MARK,
        version=FRONTEND,
        scope=scope,
        button=json.dumps(t("Upload"), ensure_ascii=False),
        limit=json.dumps(limit, ensure_ascii=False),
    )

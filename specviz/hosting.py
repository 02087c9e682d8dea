"""Hosted (public) deployments: whether this server is one, and what its messages may show.

No streamlit and no torch, so both the live page's limits (:mod:`specviz.live.request`) and the
error display of every page (:func:`specviz.ui.public_message`) read the one rule here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

__all__ = ["ENV_HOSTED", "HIDDEN", "TRUE", "database_forms", "is_hosted", "redact"]

ENV_HOSTED = "SPECVIZ_HOSTED"
TRUE = ("1", "true", "yes", "on")  #: values of a yes/no variable that mean yes (any case)
HIDDEN = "[hidden]"  #: what a hosted deployment shows instead of a path or a URL

_CHAR = r"[^\s'\"`<>()]"  # a character of a path or URL as messages quote them
_END = r"[^\s'\"`<>().,:;]"  # ... and its last one: not the punctuation of the sentence around it
_URL = re.compile(rf"\b[A-Za-z][A-Za-z0-9+.-]*://(?:{_CHAR}*{_END})?")
_PATH = re.compile(
    rf"(?<![\w.~/\\-])/(?:{_CHAR}*{_END})"  # /srv/x (not 1/2, A/(A+R), "a / b", ./x)
    rf"|(?<![\w\\])[A-Za-z]:[\\/](?:{_CHAR}*{_END})?"  # C:\x, C:/x
    rf"|\\\\(?:{_CHAR}*{_END})"  # \\server\share
    rf"|(?<![\w/\\])~[\w.-]*[\\/](?:{_CHAR}*{_END})?"  # ~/x, ~user/x
)


def is_hosted(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``$SPECVIZ_HOSTED`` is one of :data:`TRUE` (hosted mode, docs/deploy.md §3)."""
    environ = os.environ if environ is None else environ
    return environ.get(ENV_HOSTED, "").strip().lower() in TRUE


def database_forms(url: str) -> tuple[str, ...]:
    """Every way a message can spell the database at ``url``: as given, as SQLAlchemy prints it
    (``str`` / ``repr``, password masked), and a SQLite file's path; longest first."""
    forms = {url.strip()}
    try:
        import sqlalchemy as sa

        parsed = sa.make_url(url)
    except Exception:  # a malformed URL is quoted as given (store.open_library's message)
        parsed = None
    if parsed is not None:
        forms |= {str(parsed), repr(parsed), parsed.render_as_string(hide_password=False)}
        if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
            forms.add(parsed.database)
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets``, every URL (``scheme://…``) and every absolute path
    (``/…``, ``C:\\…``, ``\\\\server\\…``, ``~/…``) replaced by :data:`HIDDEN`.

    Secrets go first (as given; longest first), so a relative SQLite file name is hidden too.
    """
    text = str(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return _PATH.sub(HIDDEN, _URL.sub(HIDDEN, text))

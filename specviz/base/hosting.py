"""Hosted (public) deployments: whether this server is one, and what its messages may show.

No streamlit and no torch, so both the live page's limits (:mod:`specviz.app.live.request`) and the
error display of every page (:func:`specviz.app.ui.public_message`) read the one rule here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from specviz.base import settings
from specviz.base.i18n import Message

__all__ = ["ENV_HOSTED", "FALSE", "HIDDEN", "TRUE", "hosted_problem", "is_hosted", "redact"]

ENV_HOSTED = "SPECVIZ_HOSTED"
TRUE = ("1", "true", "yes", "on")  #: values of a yes/no variable that mean yes (any case, spaces around ignored)
FALSE = ("0", "false", "no", "off")  #: ... and those that mean no (as does an empty or unset variable)
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


def _hosted_value(environ: Mapping[str, str] | None) -> str:
    return settings.value(ENV_HOSTED, environ)


def is_hosted(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``$SPECVIZ_HOSTED`` is one of :data:`TRUE` (hosted mode, docs/deploy.md §3), and also when
    it is set to anything but :data:`FALSE`: a value meant to switch hosted mode on but misspelt
    (``enabled``, ``ture``) must not leave a public server open. :func:`hosted_problem` says so."""
    value = _hosted_value(environ).strip().lower()
    return bool(value) and value not in FALSE


def hosted_problem(environ: Mapping[str, str] | None = None) -> Message | None:
    """A :class:`~specviz.base.i18n.Message` naming ``$SPECVIZ_HOSTED``, its value and the values allowed when it
    is neither a yes (:data:`TRUE`) nor a no (:data:`FALSE`, empty); else None. Pages show it as a warning."""
    raw = _hosted_value(environ)
    if raw.strip().lower() in ("", *TRUE, *FALSE):
        return None
    return Message(
        "{var} must be one of {yes} (hosted mode) or {no} (not hosted), in any case, or unset; got {value!r}, so this server runs in hosted mode, the stricter. The operator sets {var} to one of those values",
        var=ENV_HOSTED,
        value=raw,
        yes=", ".join(TRUE),
        no=", ".join(FALSE),
    )


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets``, every URL (``scheme://…``) and every absolute path
    (``/…``, ``C:\\…``, ``\\\\server\\…``, ``~/…``) replaced by :data:`HIDDEN`.

    Secrets go first (as given; longest first), so a relative SQLite file name is hidden too.
    """
    text = str(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return _PATH.sub(HIDDEN, _URL.sub(HIDDEN, text))

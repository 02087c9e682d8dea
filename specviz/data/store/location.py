"""Where the run library lives: its URL (``SPECVIZ_DB_URL`` or a SQLite file in the user's data folder)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

import sqlalchemy as sa

from specviz.base import settings

ENV_URL = "SPECVIZ_DB_URL"


def _data_home(environ: Mapping[str, str]) -> Path:
    """%LOCALAPPDATA%, ~/Library/Application Support or $XDG_DATA_HOME (default ~/.local/share)."""
    if sys.platform == "win32" and environ.get("LOCALAPPDATA"):
        return Path(environ["LOCALAPPDATA"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path(environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """``$SPECVIZ_DB_URL``, else ``sqlite:///<user data dir>/specviz/runs.sqlite``."""
    environ = os.environ if environ is None else environ
    url = settings.value(ENV_URL, environ)
    if url:
        return url
    return f"sqlite:///{_data_home(environ) / 'specviz' / 'runs.sqlite'}"


def sqlite_path(url: sa.URL | str | None) -> str | None:
    try:
        parsed = sa.make_url(url) if isinstance(url, str) else url
    except (sa.exc.ArgumentError, ValueError):
        return None
    if parsed is None or parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    return os.path.abspath(os.path.expanduser(parsed.database))


def database_forms(url: str) -> tuple[str, ...]:
    """Every spelling of the database at ``url`` in a message, longest first: as given, ``str`` / ``repr``
    of the parsed URL (password masked), with the password, and a SQLite file's path."""
    forms = {url.strip()}
    try:
        parsed = sa.make_url(url)
    except Exception:  # a malformed URL is quoted as given (open_library's message)
        parsed = None
    if parsed is not None:
        forms |= {str(parsed), repr(parsed), parsed.render_as_string(hide_password=False)}
        if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
            forms.add(parsed.database)
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))

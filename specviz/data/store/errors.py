"""StoreError, and how a database failure becomes one that names its cause."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from specviz.base.i18n import Message, Phrase
from specviz.data import library_file
from specviz.data.store.location import ENV_URL, sqlite_path


class StoreError(Message):
    """A library operation that failed; nothing was changed. ``message``: a Message or Phrase (shown in the
    page's language) or plain text."""

    def __init__(self, message: str | Message):
        if isinstance(message, Message | Phrase):
            super().__init__(message.msgid, **message.fields)
        else:
            self.msgid, self.fields = None, {}
            ValueError.__init__(self, str(message))

    def text(self, lang: str) -> str:
        """This error in ``lang`` (plain text as it is)."""
        return super().text(lang) if self.msgid is not None else str(self)

    def __reduce__(self):
        return StoreError, (str(self) if self.msgid is None else Phrase(self.msgid, **self.fields),)


def cause(exc: BaseException, url: sa.URL | str | None = None):
    """The cause to quote for ``exc``: the driver's error (without SQLAlchemy's statement), or, for a SQLite
    file at ``url`` that is read-only, not a database or damaged, a Phrase naming the file and the fix."""
    orig = getattr(exc, "orig", None) or exc
    path = sqlite_path(url)
    if path is None or not isinstance(orig, sqlite3.Error):
        return orig
    said = str(orig).lower()
    if "readonly" in said or "read-only" in said:
        return Phrase(
            "this server may not write the run library file {path} or its folder {folder} (permissions, or a read-only mount; SQLite said: {error}). Runs already stored are unchanged. Make the file, its -wal and -shm files (where there are any) and the folder writable by the user the server runs as, then reload the page",
            path=path,
            folder=os.path.dirname(path),
            error=str(orig),
        )
    if "file is not a database" in said:
        return Phrase(
            "{path} is not an SQLite database file, so it was left as it is. Set {env} to another file, or move this one away and reload the page to start a new run library there",
            path=path,
            env=ENV_URL,
        )
    if "malformed" in said or "corrupt" in said:
        return Phrase(
            "the SQLite file {path} is damaged ({error}); it was left as it is. Restore it from a backup (or rescue its rows with the sqlite3 tool's .recover), then reload the page",
            path=path,
            error=str(orig),
        )
    return orig


@contextmanager
def reported(what: str, engine: Engine | None = None) -> Iterator[None]:
    """Turn a SQLAlchemy error into ``StoreError(Message(what, cause=…))``; ``what`` is a msgid with ``{cause}``."""
    try:
        yield
    except sa.exc.SQLAlchemyError as exc:
        raise StoreError(Message(what, cause=cause(exc, None if engine is None else engine.url))) from exc


def check_library_file(engine: Engine) -> None:
    """Raise StoreError if ``engine``'s SQLite file is no longer the file at its path
    (:func:`specviz.data.library_file.engine_problem`); no effect on PostgreSQL."""
    problem = library_file.engine_problem(engine)
    if problem:
        raise StoreError(problem)

"""The SQLite file a run library works on, and whether it is still the file at its path (st_dev, st_ino)."""

from __future__ import annotations

import os
import sqlite3
import weakref
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from specviz.base.i18n import Phrase

__all__ = ["FILES", "LibraryFile", "empty_moved_wal", "engine_problem", "file_id", "problem", "writable"]


@dataclass
class LibraryFile:
    """The SQLite file an engine works on: the absolute path it connects to, and (st_dev, st_ino) once opened."""

    path: str
    opened: tuple[int, int] | None = None


#: every engine ``store`` made for a SQLite file -> its file (engines of other backends are not in it)
FILES: weakref.WeakKeyDictionary[Engine, LibraryFile] = weakref.WeakKeyDictionary()


def file_id(path: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the file at ``path`` (symlinks followed, as SQLite does), or None when there is none."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_dev, st.st_ino


def problem(path: str, opened: tuple[int, int]) -> str | None:
    """Why ``path`` no longer names the file opened as ``opened`` = (st_dev, st_ino), None while it does: its
    folder is gone, the file is gone (new ids would reuse deleted runs' links), or another file is there."""
    try:
        now = file_id(path)
    except OSError as exc:
        return Phrase("cannot check the run library file {path}: {cause}", path=path, cause=exc)
    if now == opened:
        return None
    folder = os.path.dirname(path)
    if now is None and not os.path.isdir(folder):
        return Phrase(
            "the folder {folder} of the run library {path} was deleted or unmounted while the server was running, so this server stopped using the library. Restore or remount the folder, then restart the server (with the folder still missing, a restart starts a new, empty library there)",
            folder=folder,
            path=path,
        )
    if now is None:
        return Phrase(
            "the run library file {path} was deleted while the server was running, so this server stopped using it. Move the file back (this server then carries on), or restore it from a backup and restart the server (with no file there, a restart starts a new, empty library)",
            path=path,
        )
    return Phrase(
        "the run library file {path} was replaced by another file while the server was running (e.g. a backup moved over it), so this server stopped using it rather than mix two libraries' runs. Restart the server to open the file now at that path",
        path=path,
    )


def engine_problem(engine) -> str | None:
    """:func:`problem` of ``engine``'s SQLite file against the (st_dev, st_ino) of its first connection;
    on a change the pooled connections are closed first. None for other backends (PostgreSQL)."""
    library = FILES.get(engine)
    if library is None or library.opened is None:
        return None
    found = problem(library.path, library.opened)
    if found:
        engine.dispose()
    return found


def empty_moved_wal(dbapi_conn: sqlite3.Connection) -> None:
    """``wal_checkpoint(TRUNCATE)`` on a connection whose file moved, so no process replays its ``-wal`` onto a
    file moved in; best effort (skipped when busy)."""
    try:
        dbapi_conn.execute("PRAGMA busy_timeout = 0")
        dbapi_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error:
        pass


def writable(path: str) -> bool:
    """Whether this process may write the SQLite file ``path``, its ``-wal`` / ``-shm`` files and their folder
    (SQLite opens them read-only, silently, where it may not)."""
    effective = os.access in os.supports_effective_ids
    files = [path, *(f for f in (path + "-wal", path + "-shm") if os.path.exists(f)), os.path.dirname(path)]
    return all(os.access(f, os.W_OK, effective_ids=effective) for f in files)

"""The SQLite file a run library works on, and whether it is still the file at its path.

An open library keeps (st_dev, st_ino) of its file. When the folder is removed, the file deleted, or another
file moved over it while the server runs, :func:`engine_problem` says which, and ``store`` refuses the
operation (StoreError) instead of writing into a new, empty library or another one. Also: emptying the WAL
of a connection whose file moved (:func:`empty_moved_wal`) and whether this process may write the file
(:func:`writable`).
"""

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
    """Why ``path`` no longer names the file opened as ``opened`` = (st_dev, st_ino); None while it still does.

    Three cases, each refused (the caller raises ``store.StoreError``) rather than followed:

    - the folder is gone (deleted, or a volume unmounted): making it again would put an empty library
      where the operator expects theirs, e.g. on the bare mount point;
    - the file is gone: a new, empty library would hand out run ids 1, 2, ... again, which links to the
      deleted runs name, and would hide a deletion that may be a mistake;
    - another file is there (a backup moved over it, another library): this server's pages hold run ids,
      selections and "Saved as run #N" of the old library, which would then name other runs.

    Moving the same file back makes the library usable again; otherwise a restart of the server opens
    whatever is at ``path`` then (a new, empty library where nothing is).
    """
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
    """Why ``engine``'s SQLite file is no longer the file at its path (:func:`problem`), None while it is.

    Compares (st_dev, st_ino) of the path with those recorded when the engine first connected. On a change
    the pooled connections, which hold the old file open, are closed first. ``store`` asks before a
    connection is made (so none creates an empty file in the old one's place), whenever one is handed out,
    and after each write commits (a commit can land in a file deleted a moment before). None for
    engines of other backends (PostgreSQL).
    """
    library = FILES.get(engine)
    if library is None or library.opened is None:
        return None
    found = problem(library.path, library.opened)
    if found:
        engine.dispose()
    return found


def empty_moved_wal(dbapi_conn: sqlite3.Connection) -> None:
    """Checkpoint and empty the WAL of a connection whose database file was deleted, moved or replaced.

    On closing such a connection SQLite leaves its ``-wal`` file as it is (it deletes WAL files by name,
    and that name may by now be another database's). Left next to a file moved in, e.g. a backup
    restored with ``mv``, that WAL would be replayed onto it by the next process to open the path.
    ``wal_checkpoint(TRUNCATE)`` writes the WAL into the old file and empties the WAL through this
    connection's own handle, so only the file it has open changes. Best effort: busy (another thread
    mid-transaction) or failing, it is skipped; the last connection to close then does it.
    """
    try:
        dbapi_conn.execute("PRAGMA busy_timeout = 0")
        dbapi_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error:
        pass


def writable(path: str) -> bool:
    """Whether this process (its effective user) may write the SQLite file ``path``, the ``-wal`` and ``-shm``
    files next to it (where there are any) and their folder; SQLite opens them read-only, without saying so,
    where it may not (and makes new ``-wal`` and ``-shm`` files as read-only as the database)."""
    effective = os.access in os.supports_effective_ids
    files = [path, *(f for f in (path + "-wal", path + "-shm") if os.path.exists(f)), os.path.dirname(path)]
    return all(os.access(f, os.W_OK, effective_ids=effective) for f in files)

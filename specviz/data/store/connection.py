"""Open the run library: a SQLAlchemy engine on SQLite (WAL, ``BEGIN IMMEDIATE``, busy timeout) or PostgreSQL."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from specviz.base.i18n import Message
from specviz.data import library_file
from specviz.data.store.errors import StoreError, cause, check_library_file
from specviz.data.store.location import ENV_URL, default_url
from specviz.data.store.tables import migrate

BUSY_S = 60.0  #: s, how long a SQLite connection waits for another writer
PG_CONNECT_TIMEOUT_S = 10  #: s, libpq's connect_timeout where the URL sets none


def _retry_locked(statement, timeout_s: float = BUSY_S) -> None:
    """Run ``statement()``, retrying up to ``timeout_s`` while SQLite says locked or busy (``journal_mode =
    WAL`` ignores the busy timeout)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            statement()
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(2 * delay, 0.25)


def _sqlite_engine(url: sa.URL) -> Engine:
    if not url.database or url.database == ":memory:" or "mode=memory" in str(url):
        raise StoreError(
            Message(
                "{env}={url}: an in-memory SQLite database is private to one connection, so sessions would not share it; give a file, e.g. sqlite:////srv/specviz/runs.sqlite",
                env=ENV_URL,
                url=str(url),
            )
        )
    Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args={"timeout": BUSY_S})
    library = library_file.FILES[engine] = library_file.LibraryFile(
        os.path.abspath(url.database)
    )  # the path pysqlite opens

    @sa.event.listens_for(engine, "do_connect")
    def _before_connect(*_):  # a connection to a deleted library would create an empty file in its place
        check_library_file(engine)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # pysqlite: let SQLAlchemy's BEGIN below start transactions
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(BUSY_S * 1000)}")
        _retry_locked(lambda: cur.execute("PRAGMA journal_mode = WAL"))
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()
        if library.opened is None:  # the first connection: the file now exists
            library.opened = library_file.file_id(library.path)
        _record.info["read_only"] = not library_file.writable(library.path)  # then SQLite opened it read-only

    @sa.event.listens_for(engine, "checkout")
    def _on_checkout(_dbapi_conn, record, _proxy):  # every read and write starts here
        check_library_file(engine)
        if record.info.get("read_only") and library_file.writable(library.path):
            # a connection opened read-only refuses writes for life: replace it now that the file is writable
            raise sa.exc.DisconnectionError("the run library became writable")

    @sa.event.listens_for(engine, "close")
    def _on_close(dbapi_conn, _record):
        if library.opened is not None and library_file.problem(library.path, library.opened):
            library_file.empty_moved_wal(dbapi_conn)

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn):  # take the write lock up front: writers queue instead of deadlocking
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def open_library(url: str | None = None) -> Engine:
    """Connect to the run library at ``url`` (default :func:`default_url`), creating or migrating it.

    Raises StoreError: a malformed URL, a missing driver, an in-memory SQLite, a database that cannot be
    opened, or one from a newer specviz.
    """
    url = default_url() if url is None else url
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise StoreError(
            Message(
                "{env} must be a SQLAlchemy database URL such as sqlite:///path/runs.sqlite; got {url!r}",
                env=ENV_URL,
                url=url,
            )
        ) from exc
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = _sqlite_engine(parsed)
        elif parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
            engine = sa.create_engine(parsed, connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S})
        else:
            engine = sa.create_engine(parsed)
        with engine.begin() as conn:
            migrate(conn)
    except (ModuleNotFoundError, sa.exc.NoSuchModuleError) as exc:
        raise StoreError(
            Message(
                "the database driver for {driver!r} ({env}) is not installed: {cause}",
                driver=parsed.drivername,
                env=ENV_URL,
                cause=exc,
            )
        ) from exc
    except (sa.exc.SQLAlchemyError, OSError, ValueError) as exc:
        if isinstance(exc, StoreError):
            raise
        raise StoreError(
            Message("cannot open the run library at {url!r}: {cause}", url=parsed, cause=cause(exc, parsed))
        ) from exc
    return engine

"""The run library: every saved measurement run, in one database the whole team shares.

SQLAlchemy Core over a SQLite file by default (``SPECVIZ_DB_URL`` overrides it, e.g.
``postgresql+psycopg://user:pw@host/specviz``). Two tables:

``runs``          one row per saved upload / live run: label, source, uploaded_at (UTC), note,
                  schema version, row count, the load report, and the column dtypes of the frame
``measurements``  one row per measurement, in the canonical columns of
                  :mod:`specviz.data.measurements`, keyed by ``run_id``
``profiles``      custom engine profiles fitted from runs (the Validation page): a unique name, the
                  terms as :func:`specviz.core.engines.encode_terms` writes them, the base profile,
                  target, GPU, rows fitted and created_at; a library opened before this table existed
                  gains it on open (``create_all``), its runs untouched

Every save is one transaction: it stores the whole run or nothing. On SQLite the library uses
WAL journaling, a 60 s busy timeout and ``BEGIN IMMEDIATE`` transactions, so concurrent writers
(threads of one server, or several processes) queue instead of failing. The schema is created
and migrated when the library is opened (:func:`open_library`).

A SQLite library whose file is deleted or replaced while the server runs is refused from then on,
reads and saves alike, with a :class:`StoreError` naming the file (:func:`_check_library_file`):
the open connections would otherwise go on writing to a file no other process can see.

Other operator faults are a :class:`StoreError` that says what is wrong with the file and leaves it as it
is (:func:`_cause`; tests/base/test_hostile_env.py): a file or folder the server may not write, a file that is
not SQLite, a damaged one. A PostgreSQL server that accepts the connection but never answers fails the
open after :data:`PG_CONNECT_TIMEOUT_S` (libpq's ``connect_timeout``; a URL may set its own). A process
killed mid-save leaves no part of that run: SQLite rolls the unfinished transaction back on the next open.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from specviz.base import access, settings
from specviz.base.access import Identity
from specviz.base.i18n import N_, Message, Phrase
from specviz.core.engines import decode_terms, encode_terms, engine_names
from specviz.data import library_file, migrations
from specviz.data import measurements as m
from specviz.data.measurements import schema

__all__ = [
    "AUDIT_COLUMNS",
    "ENV_URL",
    "SCHEMA_VERSION",
    "StoreError",
    "audit_trail",
    "database_forms",
    "default_url",
    "delete_profile",
    "delete_runs",
    "edit_run",
    "escape_formulas",
    "export_csv",
    "list_profiles",
    "list_runs",
    "list_trash",
    "load_run",
    "load_runs",
    "open_library",
    "purge_expired",
    "purge_runs",
    "restore_runs",
    "save_profile",
    "save_run",
    "trash_runs",
    "trashed",
]

ENV_URL = "SPECVIZ_DB_URL"
SCHEMA_VERSION = 2  #: 2: owners, trash, audit (Alembic revision 0002); an older specviz refuses a newer library

#: Every measurement column the library stores, in a stable order.
STORED_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys([*m.COLUMNS, *m.BENCH_COLUMNS, *m.DERIVED_COLUMNS]))
_MAX_LABEL = 200


class StoreError(Message):
    """A library operation that failed; nothing was changed. The message says why.

    ``message`` is a :class:`~specviz.base.i18n.Message` or :class:`~specviz.base.i18n.Phrase` (its key and fields
    are taken, so a page shows it in its language), or plain text (shown as it is in every language).
    """

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


# --------------------------------------------------------------------------------------
# where the library lives
# --------------------------------------------------------------------------------------


def _data_home(environ: Mapping[str, str]) -> Path:
    """The user's data directory: %LOCALAPPDATA%, ~/Library/Application Support or $XDG_DATA_HOME."""
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


# --------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------


_SQL_TYPES = {"text": sa.Text, "int": sa.BigInteger, "bool": sa.Boolean, "float": lambda: sa.Float(precision=53)}


def _sql_type(column: str) -> sa.types.TypeEngine:
    """The library's type of a measurement column, from its rule (``measurements.schema.storage``)."""
    return _SQL_TYPES[schema.storage(column)]()


_meta = sa.MetaData()
_info = sa.Table(
    "specviz_info",
    _meta,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
_runs = sa.Table(
    "runs",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("label", sa.String(_MAX_LABEL), nullable=False),
    sa.Column("source", sa.Text, nullable=False),  # file name, "pasted text", "live page", "sample: …"
    sa.Column("uploaded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("note", sa.Text, nullable=False, default=""),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("n_rows", sa.Integer, nullable=False),
    sa.Column("dtypes", sa.Text, nullable=False),  # JSON {column: pandas dtype} of the saved frame
    sa.Column("report", sa.Text, nullable=False, default=""),  # LoadReport.summary() at upload
    sa.Column("created_by", sa.Text, nullable=False, default="", server_default=""),  # e-mail; "" local / before 0002
    sa.Column("trashed_at", sa.DateTime(timezone=True), nullable=True, index=True),  # None: in the library
    sa.Column("trashed_by", sa.Text, nullable=True),
    sqlite_autoincrement=True,  # ids of deleted runs are never reused: share links name runs by id
)
_rows = sa.Table(
    "measurements",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("position", sa.Integer, nullable=False),  # order within the run
    sa.Column("file_row", sa.BigInteger),  # the row's number in the uploaded file
    *(sa.Column(name, _sql_type(name)) for name in STORED_COLUMNS),
    sa.CheckConstraint("k >= 1", name="k_at_least_1"),
)

_MAX_PROFILE_NAME = 80
_profiles = sa.Table(  # custom engine profiles (specviz.core.engines.encode_terms); added after version 1
    "profiles",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(_MAX_PROFILE_NAME), nullable=False, unique=True),
    sa.Column("terms", sa.Text, nullable=False),  # encode_terms text: the terms that differ from the default
    sa.Column("base_engine", sa.String(64), nullable=False),  # the profile the fit started from (its prior)
    sa.Column("target", sa.Text, nullable=False, default=""),
    sa.Column("gpu", sa.Text, nullable=False, default=""),
    sa.Column("n_rows", sa.Integer, nullable=False),  # measurement rows the profile was fitted on
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("created_by", sa.Text, nullable=False, default="", server_default=""),
    sqlite_autoincrement=True,
)
_audit = sa.Table(  # every save, edit, trash, restore and purge: who, when, which runs, from which page
    "audit",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
    sa.Column("who", sa.Text, nullable=False),  # e-mail; "" the local user; "system" an expiry purge
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("runs", sa.Text, nullable=False),  # ids, ", "-joined (a profile's name for profile actions)
    sa.Column("page", sa.Text, nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sqlite_autoincrement=True,
)


def _stored_version(conn: Connection) -> int | None:
    row = conn.execute(sa.select(_info.c.value).where(_info.c.key == "schema_version")).first()
    return None if row is None else int(row[0])


def _add_missing_columns(conn: Connection) -> list[str]:
    """ALTER TABLE ADD COLUMN for every measurement column this version knows and the database lacks."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("measurements")}
    added = []
    for column in _rows.columns:
        if column.name not in have:
            type_sql = column.type.compile(dialect=conn.dialect)
            conn.exec_driver_sql(f'ALTER TABLE measurements ADD COLUMN "{column.name}" {type_sql}')
            added.append(column.name)
    return added


def _migrate(conn: Connection) -> None:
    """Create the schema, or bring an older one up to date (in the caller's transaction).

    A new database gets the current tables and is stamped at the newest Alembic revision; an existing
    one runs the revisions it lacks (:mod:`specviz.data.migrations`; a library from before Alembic from
    the base), then gains the measurement columns it lacks. ``specviz_info.schema_version`` is raised to
    :data:`SCHEMA_VERSION`, so an older specviz refuses the library rather than bypass what it cannot see.
    """
    if conn.dialect.name == "postgresql":  # servers opening one database at once migrate it one after another
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext('specviz schema'))")
    tables = set(sa.inspect(conn).get_table_names())
    if "specviz_info" not in tables:
        _meta.create_all(conn)
        conn.execute(_info.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
        migrations.stamp(conn)
        return
    version = _stored_version(conn) or 1
    if version > SCHEMA_VERSION:
        raise StoreError(
            Message(
                "the run library at {url!r} has schema version {version}, newer than this specviz understands ({ours}); upgrade specviz",
                url=conn.engine.url,
                version=version,
                ours=SCHEMA_VERSION,
            )
        )
    if migrations.current(conn) != migrations.head():
        migrations.upgrade(conn)
    _meta.create_all(conn)  # a table lost since (dropped by hand) comes back empty
    _add_missing_columns(conn)
    # written on every open, so a library this server may not write fails here, saying so, not at a save
    conn.execute(_info.update().where(_info.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))


_BUSY_S = 60.0  #: how long a SQLite connection waits for another writer
PG_CONNECT_TIMEOUT_S = 10  #: libpq's connect_timeout where the URL sets none: a server that never answers fails


def _sqlite_path(url: sa.URL | str | None) -> str | None:
    """The absolute file path of a SQLite URL, else None."""
    try:
        parsed = sa.make_url(url) if isinstance(url, str) else url
    except (sa.exc.ArgumentError, ValueError):
        return None
    if parsed is None or parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    return os.path.abspath(os.path.expanduser(parsed.database))


def _cause(exc: BaseException, url: sa.URL | str | None = None):
    """What to quote as the cause of a failed library operation: the driver's own error (without SQLAlchemy's
    statement and parameters), or, for the faults an operator can fix at a SQLite file, a sentence naming it.

    ``url`` is the library's (for the file's path); ``exc`` a SQLAlchemy error or the driver's.
    """
    orig = getattr(exc, "orig", None) or exc
    path = _sqlite_path(url)
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


def _retry_locked(statement, timeout_s: float = _BUSY_S) -> None:
    """Run ``statement()``, retrying while SQLite says the database is locked.

    Switching to WAL needs a moment with no other writer, and SQLite refuses it at once (without
    the busy timeout) while another connection writes — e.g. two servers opening a new library.
    """
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


def _check_library_file(engine: Engine) -> None:
    """Raise :class:`StoreError` if ``engine``'s SQLite file is no longer the file at its path
    (:func:`specviz.data.library_file.engine_problem`); no effect on PostgreSQL."""
    problem = library_file.engine_problem(engine)
    if problem:
        raise StoreError(problem)


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
    engine = sa.create_engine(url, connect_args={"timeout": _BUSY_S})
    library = library_file.FILES[engine] = library_file.LibraryFile(
        os.path.abspath(url.database)
    )  # the path pysqlite opens

    @sa.event.listens_for(engine, "do_connect")
    def _before_connect(*_):  # a connection to a deleted library would create an empty file in its place
        _check_library_file(engine)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # pysqlite: let SQLAlchemy's BEGIN below start transactions
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(_BUSY_S * 1000)}")
        _retry_locked(lambda: cur.execute("PRAGMA journal_mode = WAL"))
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()
        if library.opened is None:  # the first connection: the file now exists
            library.opened = library_file.file_id(library.path)
        _record.info["read_only"] = not library_file.writable(library.path)  # then SQLite opened it read-only

    @sa.event.listens_for(engine, "checkout")
    def _on_checkout(_dbapi_conn, record, _proxy):  # every read and write starts here
        _check_library_file(engine)
        if record.info.get("read_only") and library_file.writable(library.path):
            # A connection opened while the file (or folder) was read-only refuses every write for as long as
            # it lives: now that the operator has fixed the mode, the pool replaces it with a new one.
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

    Raises
    ------
    StoreError
        The URL is malformed, its database driver is not installed, or the database cannot be
        opened or is from a newer specviz.
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
            _migrate(conn)
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
            Message("cannot open the run library at {url!r}: {cause}", url=parsed, cause=_cause(exc, parsed))
        ) from exc
    return engine


# --------------------------------------------------------------------------------------
# save / list / load / delete
# --------------------------------------------------------------------------------------


def _python(value):
    """A cell as a DB-API value: None for missing, Python scalars for numpy ones."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.generic):
        value = value.item()
        return None if isinstance(value, float) and np.isnan(value) else value
    return value


def _check_frame(frame: pd.DataFrame) -> list[str]:
    if not isinstance(frame, pd.DataFrame) or frame.empty:
        raise StoreError(Message("a run needs at least one measurement row; got an empty table"))
    unknown = [c for c in frame.columns if c not in STORED_COLUMNS]
    if unknown:
        raise StoreError(
            Message(
                "columns {columns} are not measurement columns; allowed: the columns of specviz.data.measurements (load the file with load_measurements first)",
                columns=unknown,
            )
        )
    for required in ("label", "k"):
        if required not in frame.columns:
            raise StoreError(Message("column {column!r} is required in a saved run", column=required))
    return list(frame.columns)


def _identity(who: Identity | None, action: str, owner: str | None = None) -> Identity:
    """``who`` (None: :func:`specviz.base.access.default_identity`), checked for ``action`` on ``owner``'s work."""
    who = access.default_identity() if who is None else who
    access.require(who, action, owner)
    return who


def _record(conn: Connection, who: Identity, action: str, run_ids: Iterable, page: str, detail: str = "") -> None:
    """One line of the audit trail, in the transaction of the change it records."""
    conn.execute(
        _audit.insert().values(
            at=datetime.now(UTC),
            who=who.name,
            role=who.role,
            action=action,
            runs=", ".join(str(i) for i in run_ids),
            page=str(page),
            detail=str(detail)[:500],
        )
    )


def save_run(
    engine: Engine,
    frame: pd.DataFrame,
    *,
    label: str,
    source: str,
    note: str = "",
    report: str = "",
    who: Identity | None = None,
    page: str = "",
) -> int:
    """Store ``frame`` (canonical columns, as from ``load_measurements``) as one run of ``who``; return its id.

    ``who`` must be an editor or admin (:func:`specviz.base.access.require`; None: the local user, refused
    where the server is hosted or has sign-in configured); the save is audited with ``page``.
    One transaction: on any failure nothing is stored and :class:`StoreError` says why. An id is
    returned only once the commit is in the file the library's path names, so a fresh process reads
    the run back; a SQLite file deleted or replaced since it was opened fails the save instead
    (:func:`_check_library_file`).
    """
    who = _identity(who, "save")
    label = label.strip() if isinstance(label, str) else ""
    if not label or len(label) > _MAX_LABEL:
        raise StoreError(
            Message("run name must be 1 to {most} characters; got {label!r}", most=_MAX_LABEL, label=label)
        )
    for what, text in (("run name", label), ("source", str(source)), ("note", str(note))):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise StoreError(_surrogate(what, text)) from None
    columns = _check_frame(frame)
    dtypes = {c: str(frame[c].dtype) for c in columns}
    file_rows = frame.index if frame.index.name == "row" else [None] * len(frame)
    records = [
        {"position": i, "file_row": _python(r), **{c: _python(v) for c, v in zip(columns, values, strict=True)}}
        for i, (r, values) in enumerate(zip(file_rows, frame.itertuples(index=False, name=None), strict=True))
    ]
    run = {
        "label": label,
        "source": str(source) or "unknown",
        "uploaded_at": datetime.now(UTC),
        "note": str(note),
        "schema_version": SCHEMA_VERSION,
        "n_rows": len(frame),
        "dtypes": json.dumps(dtypes),
        "report": str(report),
        "created_by": who.name,
    }
    try:
        with engine.begin() as conn:
            run_id = conn.execute(_runs.insert().values(**run)).inserted_primary_key[0]
            conn.execute(_rows.insert(), [{**r, "run_id": run_id} for r in records])
            _record(conn, who, "save", [run_id], page, label)
        _check_library_file(engine)  # the commit went to the file at the path, not to a deleted one
    except (sa.exc.SQLAlchemyError, StoreError) as exc:
        raise StoreError(
            Message(
                "saving run {label!r} failed, nothing was stored: {cause}", label=label, cause=_cause(exc, engine.url)
            )
        ) from exc
    return int(run_id)


def _surrogate(what: str, text: str) -> Message:
    """The error of a run name, source or note (``what``) that holds a lone surrogate."""
    if what == "run name":
        return Message("run name {text!r} is not valid Unicode text (it holds a lone surrogate)", text=text)
    if what == "source":
        return Message("source {text!r} is not valid Unicode text (it holds a lone surrogate)", text=text)
    return Message("note {text!r} is not valid Unicode text (it holds a lone surrogate)", text=text)


@contextmanager
def _reported(what: str, engine: Engine | None = None) -> Iterator[None]:
    """Database failures (file gone, locked past the timeout, server down) as a StoreError saying what failed.

    ``what`` is a msgid: the failed operation in words, with a ``{cause}`` field (:func:`_cause`
    of the failure, for ``engine``'s file).
    """
    try:
        yield
    except sa.exc.SQLAlchemyError as exc:
        raise StoreError(Message(what, cause=_cause(exc, None if engine is None else engine.url))) from exc


def list_runs(engine: Engine, *, trash: bool = False) -> pd.DataFrame:
    """Every stored run not in the trash (``trash=True``: every run in it), newest first, with the distinct
    models, hardware and methods of its rows.

    Columns: id, label, source, uploaded_at, note, n_rows, created_by, target_model, draft_model, hardware,
    method (the last four: distinct values joined by ", "); in the trash also trashed_at and trashed_by.
    """
    cols = ["id", "label", "source", "uploaded_at", "note", "n_rows", "created_by"]
    cols += ["trashed_at", "trashed_by"] if trash else []
    where = _runs.c.trashed_at.is_not(None) if trash else _runs.c.trashed_at.is_(None)
    with _reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        runs = pd.DataFrame(
            conn.execute(sa.select(*(_runs.c[c] for c in cols)).where(where).order_by(_runs.c.id.desc())).all(),
            columns=cols,
        )
        meta = conn.execute(
            sa.select(
                _rows.c.run_id, _rows.c.target_model, _rows.c.draft_model, _rows.c.hardware, _rows.c.method
            ).distinct()
        ).all()
    facets = ["target_model", "draft_model", "hardware", "method"]
    found: dict[int, dict[str, set]] = {}
    for run_id, *values in meta:
        for facet, value in zip(facets, values, strict=True):
            if value:
                found.setdefault(run_id, {}).setdefault(facet, set()).add(value)
    for facet in facets:
        runs[facet] = [", ".join(sorted(found.get(i, {}).get(facet, ()))) for i in runs["id"]]
    runs["id"] = runs["id"].astype("int64")
    runs["uploaded_at"] = pd.to_datetime(runs["uploaded_at"], utc=True)
    if trash:
        runs["trashed_at"] = pd.to_datetime(runs["trashed_at"], utc=True)
    return runs


def _fetch(engine: Engine, run_ids: Iterable[int]) -> list[pd.DataFrame]:
    ids = [int(i) for i in run_ids]
    if not ids:
        return []
    with _reported(N_("reading runs from the library failed: {cause}"), engine), engine.connect() as conn:
        runs = {r.id: r for r in conn.execute(sa.select(_runs).where(_runs.c.id.in_(ids))).all()}
        missing = [i for i in ids if i not in runs]
        if missing:
            raise StoreError(Message("run id(s) {ids} are not in the library (deleted by someone else?)", ids=missing))
        trashed = [i for i in ids if runs[i].trashed_at is not None]
        if trashed:
            raise StoreError(
                Message(
                    "run id(s) {ids} are in the trash: restore them (Trash, on Measured data) to use them", ids=trashed
                )
            )
        rows = (
            conn.execute(sa.select(_rows).where(_rows.c.run_id.in_(ids)).order_by(_rows.c.run_id, _rows.c.position))
            .mappings()
            .all()
        )
    by_run: dict[int, list] = {}
    for r in rows:
        by_run.setdefault(r["run_id"], []).append(r)
    return [_run_frame(runs[i], by_run.get(i, [])) for i in ids]


def _run_frame(run, rows: Sequence[Mapping]) -> pd.DataFrame:
    """Rows of one run -> its frame with the saved columns and dtypes, indexed by file row, plus run_id, run."""
    index = pd.Index(pd.array([r["file_row"] for r in rows], dtype="Int64"), name="row")
    frame = pd.DataFrame(index=index)
    for column, dtype in json.loads(run.dtypes).items():
        values = [r[column] for r in rows]
        if dtype.startswith("float"):
            values = [np.nan if v is None else v for v in values]
        frame[column] = pd.array(values, dtype=dtype)
    frame.insert(0, "run", pd.array([run.label] * len(rows), dtype="str"))
    frame.insert(0, "run_id", np.full(len(rows), run.id, dtype=np.int64))
    return frame


def load_runs(engine: Engine, run_ids: Iterable[int]) -> pd.DataFrame:
    """The measurements of ``run_ids`` in the order given, with ``run_id`` and ``run`` (the run's name).

    Each run's columns and dtypes are those it was saved with; a column another selected run lacks
    is empty there. The index is a fresh RangeIndex.
    """
    frames = _fetch(engine, run_ids)
    if not frames:
        return pd.DataFrame(columns=["run_id", "run", *m.COLUMNS])
    return pd.concat(frames, ignore_index=True)


def load_run(engine: Engine, run_id: int) -> pd.DataFrame:
    """One run's frame exactly as saved: its columns and dtypes, indexed by the file's row numbers."""
    frame = _fetch(engine, [run_id])[0].drop(columns=["run_id", "run"])
    if not frame.index.isna().any():
        frame.index = pd.Index(frame.index.astype("int64"), name="row")
    return frame


def _owners(conn: Connection, ids: list[int], trashed: bool) -> dict[int, str]:
    """run id -> its owner, for the ``ids`` in the library (``trashed=False``) or in the trash (True)."""
    state = _runs.c.trashed_at.is_not(None) if trashed else _runs.c.trashed_at.is_(None)
    rows = conn.execute(sa.select(_runs.c.id, _runs.c.created_by).where(_runs.c.id.in_(ids), state)).all()
    return {int(i): owner or "" for i, owner in rows}


def _change(
    engine: Engine, run_ids: Iterable[int], who: Identity | None, action: str, page: str, apply, detail: str = ""
) -> int:
    """Check ``action`` on every run first (all or nothing), then ``apply(conn, ids)`` and audit it."""
    ids = [int(i) for i in run_ids]
    who = access.default_identity() if who is None else who
    if not ids:
        return 0
    with _reported(N_("changing runs failed: {cause}"), engine), engine.begin() as conn:
        access.require(who, action)  # the role the action needs at all, whatever the runs
        owners = _owners(conn, ids, trashed=action in ("restore", "purge"))
        for owner in sorted(set(owners.values())):
            access.require(who, action, owner)
        changed = apply(conn, list(owners)) if owners else 0
        if changed:
            _record(conn, who, action, sorted(owners), page, detail)
    _check_library_file(engine)  # as in save_run: the change is in the file at the path
    return changed


def delete_runs(engine: Engine, run_ids: Iterable[int], *, who: Identity | None = None, page: str = "") -> int:
    """Move runs to the trash (nothing is deleted); return how many moved. An editor may trash their own
    runs, an admin anyone's (:mod:`specviz.base.access`); a run not allowed refuses the whole call.

    A trashed run leaves the library's listing and links to it say so; :func:`restore_runs` brings it
    back, :func:`purge_runs` (admin) or :func:`purge_expired` (after ``SPECVIZ_TRASH_DAYS``) deletes it.
    The page asks the person to confirm before calling this.
    """

    def move(conn: Connection, ids: list[int]) -> int:
        values = {"trashed_at": datetime.now(UTC), "trashed_by": who_name}
        return conn.execute(_runs.update().where(_runs.c.id.in_(ids)).values(**values)).rowcount

    who_name = (access.default_identity() if who is None else who).name
    changed = _change(engine, run_ids, who, "trash", page, move)
    purge_expired(engine)
    return changed


trash_runs = delete_runs  #: the name the trash's own callers use


def restore_runs(engine: Engine, run_ids: Iterable[int], *, who: Identity | None = None, page: str = "") -> int:
    """Bring trashed runs back to the library (their owner, or an admin); return how many came back."""

    def back(conn: Connection, ids: list[int]) -> int:
        return conn.execute(_runs.update().where(_runs.c.id.in_(ids)).values(trashed_at=None, trashed_by=None)).rowcount

    return _change(engine, run_ids, who, "restore", page, back)


def _delete(conn: Connection, ids: list[int]) -> int:
    conn.execute(_rows.delete().where(_rows.c.run_id.in_(ids)))
    return conn.execute(_runs.delete().where(_runs.c.id.in_(ids))).rowcount


def purge_runs(engine: Engine, run_ids: Iterable[int], *, who: Identity | None = None, page: str = "") -> int:
    """Delete trashed runs and their measurements for good (admin only); return how many were deleted."""
    return _change(engine, run_ids, who, "purge", page, _delete)


def purge_expired(engine: Engine, days: int | None = None, now: datetime | None = None) -> int:
    """Delete the runs trashed more than ``days`` (``SPECVIZ_TRASH_DAYS``, 30) ago; audited as ``system``.

    Called whenever runs are trashed and the trash is listed, so no expired run outlives a visit to it.
    """
    days = settings.number("SPECVIZ_TRASH_DAYS") if days is None else days
    cutoff = (now or datetime.now(UTC)) - pd.Timedelta(days=days).to_pytimedelta()
    expired = sa.select(_runs.c.id).where(_runs.c.trashed_at < cutoff)
    with _reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        if conn.execute(expired.limit(1)).first() is None:  # the usual case: no write lock taken on a page's rerun
            return 0
    with _reported(N_("changing runs failed: {cause}"), engine), engine.begin() as conn:
        ids = [int(i) for (i,) in conn.execute(expired).all()]
        if not ids:  # purged by another server meanwhile
            return 0
        deleted = _delete(conn, ids)
        _record(
            conn, access.Identity("system", "admin", "anonymous"), "purge", ids, "", f"in the trash over {days} days"
        )
    return deleted


def list_trash(engine: Engine) -> pd.DataFrame:
    """The runs in the trash (after purging the expired ones): :func:`list_runs` with trashed_at and trashed_by."""
    purge_expired(engine)
    return list_runs(engine, trash=True)


def trashed(engine: Engine, run_ids: Iterable[int]) -> pd.DataFrame:
    """Which of ``run_ids`` are in the trash: id, label, created_by, trashed_at, trashed_by (a link to one says so)."""
    ids = [int(i) for i in run_ids]
    cols = ["id", "label", "created_by", "trashed_at", "trashed_by"]
    with _reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        rows = conn.execute(
            sa.select(*(_runs.c[c] for c in cols)).where(_runs.c.id.in_(ids), _runs.c.trashed_at.is_not(None))
        ).all()
    return pd.DataFrame(rows, columns=cols)


def edit_run(
    engine: Engine,
    run_id: int,
    *,
    label: str | None = None,
    note: str | None = None,
    who: Identity | None = None,
    page: str = "",
) -> None:
    """Rename a run or change its note (its owner, or an admin); audited with the new values."""
    values = {}
    if label is not None:
        label = label.strip() if isinstance(label, str) else ""
        if not label or len(label) > _MAX_LABEL:
            raise StoreError(
                Message("run name must be 1 to {most} characters; got {label!r}", most=_MAX_LABEL, label=label)
            )
        values["label"] = label
    if note is not None:
        values["note"] = str(note)

    def edit(conn: Connection, ids: list[int]) -> int:
        return conn.execute(_runs.update().where(_runs.c.id.in_(ids)).values(**values)).rowcount

    detail = "; ".join(f"{name} = {value!r}" for name, value in values.items())
    if values and not _change(engine, [run_id], who, "edit", page, edit, detail):
        raise StoreError(Message("run id(s) {ids} are not in the library (deleted by someone else?)", ids=[run_id]))


AUDIT_COLUMNS = ("at", "who", "role", "action", "runs", "page", "detail")


def audit_trail(engine: Engine, *, who: Identity | None = None, limit: int = 10_000) -> pd.DataFrame:
    """The audit trail, newest first (admins only): at, who, role, action, runs, page, detail."""
    _identity(who, "audit")
    with _reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        rows = conn.execute(
            sa.select(*(_audit.c[c] for c in AUDIT_COLUMNS)).order_by(_audit.c.id.desc()).limit(limit)
        ).all()
    frame = pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))
    frame["at"] = pd.to_datetime(frame["at"], utc=True)
    return frame


# --------------------------------------------------------------------------------------
# custom engine profiles
# --------------------------------------------------------------------------------------

PROFILE_COLUMNS = ("id", "name", "terms", "base_engine", "target", "gpu", "n_rows", "created_at")


def _profile_name(name) -> str:
    """``name`` stripped, if it is 1 to :data:`_MAX_PROFILE_NAME` characters (StoreError naming it otherwise)."""
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > _MAX_PROFILE_NAME:
        raise StoreError(
            Message("profile name must be 1 to {most} characters; got {name!r}", most=_MAX_PROFILE_NAME, name=name)
        )
    return name


def _name_taken(name: str) -> StoreError:
    return StoreError(
        Message("a profile named {name!r} is already in the library; delete it or choose another name", name=name)
    )


def save_profile(
    engine: Engine,
    *,
    name: str,
    terms: str,
    base_engine: str,
    target: str = "",
    gpu: str = "",
    n_rows: int = 0,
    who: Identity | None = None,
    page: str = "",
) -> int:
    """Store a custom engine profile under ``name`` as ``who``'s (an editor or admin; audited); return its id.

    ``terms`` is checked by :func:`specviz.core.engines.decode_terms` (the profile any page rebuilds
    from it) and stored as :func:`~specviz.core.engines.encode_terms` writes it back; ``base_engine``
    must be a profile of the engine catalogue (:func:`~specviz.core.engines.engine_names`) and
    ``n_rows`` an integer >= 0. A name already in the library is refused (delete that profile first;
    two servers saving one name at once: the second is refused the same way), as is a name empty or
    over 80 characters. One transaction; on any failure nothing is stored and :class:`StoreError`
    says why, naming the field and the value.
    """
    who = _identity(who, "profile")
    name = _profile_name(name)
    try:
        text = encode_terms(decode_terms(terms))
    except Message as exc:
        raise StoreError(exc) from None
    if base_engine not in engine_names():
        raise StoreError(
            Message(
                "base_engine must be one of {allowed}; got {value!r}",
                allowed=", ".join(engine_names()),
                value=base_engine,
            )
        )
    if isinstance(n_rows, bool) or not isinstance(n_rows, int | np.integer) or n_rows < 0:
        raise StoreError(Message("n_rows must be an integer >= 0; got {value!r}", value=str(n_rows)))
    row = {
        "name": name,
        "terms": text,
        "base_engine": base_engine,
        "target": str(target),
        "gpu": str(gpu),
        "n_rows": int(n_rows),
        "created_at": datetime.now(UTC),
        "created_by": who.name,
    }
    try:
        with engine.begin() as conn:
            if conn.execute(sa.select(_profiles.c.id).where(_profiles.c.name == name)).first() is not None:
                raise _name_taken(name)
            profile_id = conn.execute(_profiles.insert().values(**row)).inserted_primary_key[0]
            _record(conn, who, "save profile", [name], page)
        _check_library_file(engine)
    except StoreError:
        raise
    except sa.exc.IntegrityError as exc:  # another server saved this name between the check and the insert
        raise _name_taken(name) from exc
    except sa.exc.SQLAlchemyError as exc:
        raise StoreError(
            Message(
                "saving profile {name!r} failed, nothing was stored: {cause}", name=name, cause=_cause(exc, engine.url)
            )
        ) from exc
    return int(profile_id)


def list_profiles(engine: Engine) -> pd.DataFrame:
    """Every saved engine profile, newest first: :data:`PROFILE_COLUMNS`."""
    with _reported(N_("listing the saved profiles failed: {cause}"), engine), engine.connect() as conn:
        rows = conn.execute(sa.select(*(_profiles.c[c] for c in PROFILE_COLUMNS)).order_by(_profiles.c.id.desc())).all()
    frame = pd.DataFrame(rows, columns=list(PROFILE_COLUMNS))
    frame["id"] = frame["id"].astype("int64")
    frame["n_rows"] = frame["n_rows"].astype("int64")
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    return frame


def delete_profile(engine: Engine, name: str, *, who: Identity | None = None, page: str = "") -> int:
    """Delete the profile called ``name`` (its creator, or an admin; audited); return how many were deleted
    (0 or 1). The page asks first."""
    who = _identity(who, "profile")
    with _reported(N_("deleting the profile failed: {cause}"), engine), engine.begin() as conn:
        owner = conn.execute(sa.select(_profiles.c.created_by).where(_profiles.c.name == str(name))).scalar()
        if owner is not None:
            access.require(who, "profile_delete", owner)
        deleted = conn.execute(_profiles.delete().where(_profiles.c.name == str(name))).rowcount
        if deleted:
            _record(conn, who, "delete profile", [name], page)
    _check_library_file(engine)
    return deleted


# --------------------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------------------

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix ``'`` to text cells that start with = + - @ (or tab / CR), so spreadsheets show, not run, them.

    Numbers are left alone (a negative number is not text). OWASP "CSV injection".
    """
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            out[column] = out[column].map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
            )
    return out


#: load_runs' run columns as exported: last, and named so that no engine alias maps them to ``label``.
EXPORT_RUN_COLUMNS = {"run_id": "library_run_id", "run": "library_run"}


def export_csv(frame: pd.DataFrame) -> bytes:
    """UTF-8 CSV of ``frame`` (no index) with formula-like text cells escaped; loads back with load_measurements.

    A :func:`load_runs` frame's ``run_id`` / ``run`` go last as ``library_run_id`` / ``library_run``
    (``run`` alone would read back as the label).
    """
    run_cols = [c for c in EXPORT_RUN_COLUMNS if c in frame.columns]
    out = frame[[c for c in frame.columns if c not in run_cols] + run_cols].rename(columns=EXPORT_RUN_COLUMNS)
    return escape_formulas(out).to_csv(index=False).encode("utf-8")


def database_forms(url: str) -> tuple[str, ...]:
    """Every way a message can spell the database at ``url``: as given, as SQLAlchemy prints it
    (``str`` / ``repr``, password masked), and a SQLite file's path; longest first."""
    forms = {url.strip()}
    try:
        parsed = sa.make_url(url)
    except Exception:  # a malformed URL is quoted as given (store.open_library's message)
        parsed = None
    if parsed is not None:
        forms |= {str(parsed), repr(parsed), parsed.render_as_string(hide_password=False)}
        if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
            forms.add(parsed.database)
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))

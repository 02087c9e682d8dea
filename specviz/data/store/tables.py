"""The library's tables (runs, measurements, profiles, audit, specviz_info) and the migration up to them."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from specviz.base.i18n import Message
from specviz.data import measurements as m
from specviz.data import migrations
from specviz.data.measurements import schema
from specviz.data.store.errors import StoreError

SCHEMA_VERSION = 2  #: 2: owners, trash, audit (Alembic revision 0002); an older specviz refuses a newer library

#: Every measurement column the library stores, in a stable order.
STORED_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys([*m.COLUMNS, *m.BENCH_COLUMNS, *m.DERIVED_COLUMNS]))
MAX_LABEL = 200
MAX_PROFILE_NAME = 80

_SQL_TYPES = {"text": sa.Text, "int": sa.BigInteger, "bool": sa.Boolean, "float": lambda: sa.Float(precision=53)}


def _sql_type(column: str) -> sa.types.TypeEngine:
    return _SQL_TYPES[schema.storage(column)]()


meta = sa.MetaData()
info = sa.Table(
    "specviz_info",
    meta,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
runs = sa.Table(
    "runs",
    meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("label", sa.String(MAX_LABEL), nullable=False),
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
rows = sa.Table(
    "measurements",
    meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("position", sa.Integer, nullable=False),  # order within the run
    sa.Column("file_row", sa.BigInteger),  # the row's number in the uploaded file
    *(sa.Column(name, _sql_type(name)) for name in STORED_COLUMNS),
    sa.CheckConstraint("k >= 1", name="k_at_least_1"),
)
profiles = sa.Table(
    "profiles",
    meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(MAX_PROFILE_NAME), nullable=False, unique=True),
    sa.Column("terms", sa.Text, nullable=False),  # encode_terms text: the terms that differ from the default
    sa.Column("base_engine", sa.String(64), nullable=False),  # the profile the fit started from (its prior)
    sa.Column("target", sa.Text, nullable=False, default=""),
    sa.Column("gpu", sa.Text, nullable=False, default=""),
    sa.Column("n_rows", sa.Integer, nullable=False),  # measurement rows the profile was fitted on
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("created_by", sa.Text, nullable=False, default="", server_default=""),
    sqlite_autoincrement=True,
)
audit = sa.Table(
    "audit",
    meta,
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
    row = conn.execute(sa.select(info.c.value).where(info.c.key == "schema_version")).first()
    return None if row is None else int(row[0])


def _add_missing_columns(conn: Connection) -> list[str]:
    """ALTER TABLE ADD COLUMN for every measurement column this version knows and the database lacks."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("measurements")}
    added = []
    for column in rows.columns:
        if column.name not in have:
            type_sql = column.type.compile(dialect=conn.dialect)
            conn.exec_driver_sql(f'ALTER TABLE measurements ADD COLUMN "{column.name}" {type_sql}')
            added.append(column.name)
    return added


def migrate(conn: Connection) -> None:
    """Create the schema, or run the Alembic revisions it lacks and add missing measurement columns, in the
    caller's transaction; ``specviz_info.schema_version`` := :data:`SCHEMA_VERSION`.

    Raises StoreError if the library's schema version is newer than :data:`SCHEMA_VERSION`.
    """
    if conn.dialect.name == "postgresql":  # servers opening one database at once migrate it one after another
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext('specviz schema'))")
    tables = set(sa.inspect(conn).get_table_names())
    if "specviz_info" not in tables:
        meta.create_all(conn)
        conn.execute(info.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
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
    meta.create_all(conn)  # a table lost since (dropped by hand) comes back empty
    _add_missing_columns(conn)
    # written on every open, so a library this server may not write fails here, saying so, not at a save
    conn.execute(info.update().where(info.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))

"""The run library's schema changes, as Alembic migrations (``versions/``), applied when a library opens.

Run in the caller's transaction, in batch mode on SQLite (``render_as_batch``); a library from before
Alembic starts at the base. Measurement columns are no migrations: ``store.tables`` adds those missing.
New revision: ``alembic -c specviz/data/migrations/alembic.ini revision -m "what"``.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

HERE = Path(__file__).resolve().parent


def _config(conn: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.attributes["connection"] = conn
    return config


def head() -> str:
    return ScriptDirectory(str(HERE)).get_current_head()


def current(conn: Connection) -> str | None:
    """The database's revision (None: a library from before Alembic, or an empty database)."""
    return MigrationContext.configure(conn).get_current_revision()


def upgrade(conn: Connection) -> None:
    """Apply every revision the database lacks, in the caller's transaction."""
    command.upgrade(_config(conn), "head")


def stamp(conn: Connection) -> None:
    """Record the newest revision without running anything: a database created from the current models."""
    command.stamp(_config(conn), "head")

"""The run library: saved measurement runs, custom engine profiles, owners, trash and audit, in one shared database.

SQLAlchemy Core over SQLite by default; ``SPECVIZ_DB_URL`` names another database, e.g.
``postgresql+psycopg://user:pw@host/specviz``. Every failure is a :class:`StoreError` and changes nothing.
"""

from specviz.data.store.connection import open_library
from specviz.data.store.errors import StoreError
from specviz.data.store.export import EXPORT_RUN_COLUMNS, escape_formulas, export_csv
from specviz.data.store.location import ENV_URL, database_forms, default_url
from specviz.data.store.owners import AUDIT_COLUMNS, audit_trail, conflict_of
from specviz.data.store.profiles import PROFILE_COLUMNS, delete_profile, list_profiles, save_profile
from specviz.data.store.runs import edit_run, list_runs, load_run, load_runs, save_run
from specviz.data.store.tables import SCHEMA_VERSION, STORED_COLUMNS
from specviz.data.store.trash import (
    delete_runs,
    list_trash,
    purge_expired,
    purge_runs,
    restore_runs,
    trash_runs,
    trashed,
)

__all__ = [
    "AUDIT_COLUMNS",
    "ENV_URL",
    "EXPORT_RUN_COLUMNS",
    "PROFILE_COLUMNS",
    "SCHEMA_VERSION",
    "STORED_COLUMNS",
    "StoreError",
    "audit_trail",
    "conflict_of",
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

"""The trash: trashed runs leave the library's listing, come back on restore, and are purged for good."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from specviz.base import access, settings
from specviz.base.access import Identity
from specviz.base.i18n import N_
from specviz.data.store import tables
from specviz.data.store.errors import reported
from specviz.data.store.owners import change, record
from specviz.data.store.runs import list_runs


def delete_runs(engine: Engine, run_ids: Iterable[int], *, who: Identity | None = None, page: str = "") -> int:
    """Move runs to the trash (their owner, or an admin; one refused run refuses all); return how many moved."""

    def move(conn: Connection, ids: list[int]) -> int:
        values = {"trashed_at": datetime.now(UTC), "trashed_by": who_name}
        return conn.execute(tables.runs.update().where(tables.runs.c.id.in_(ids)).values(**values)).rowcount

    who_name = (access.default_identity() if who is None else who).name
    changed = change(engine, run_ids, who, "trash", page, move)
    purge_expired(engine)
    return changed


trash_runs = delete_runs  #: the name the trash's own callers use


def restore_runs(engine: Engine, run_ids: Iterable[int], *, who: Identity | None = None, page: str = "") -> int:
    """Bring trashed runs back to the library (their owner, or an admin); return how many came back."""

    def back(conn: Connection, ids: list[int]) -> int:
        runs = tables.runs
        return conn.execute(runs.update().where(runs.c.id.in_(ids)).values(trashed_at=None, trashed_by=None)).rowcount

    return change(engine, run_ids, who, "restore", page, back)


def _delete(conn: Connection, ids: list[int]) -> int:
    conn.execute(tables.rows.delete().where(tables.rows.c.run_id.in_(ids)))
    return conn.execute(tables.runs.delete().where(tables.runs.c.id.in_(ids))).rowcount


def purge_runs(engine: Engine, run_ids: Iterable[int], *, who: Identity | None = None, page: str = "") -> int:
    """Delete trashed runs and their measurements for good (admin only); return how many were deleted."""
    return change(engine, run_ids, who, "purge", page, _delete)


def purge_expired(engine: Engine, days: int | None = None, now: datetime | None = None) -> int:
    """Delete the runs trashed over ``days`` (``SPECVIZ_TRASH_DAYS``, 30) ago, audited as ``system``; return how many."""
    days = settings.number("SPECVIZ_TRASH_DAYS") if days is None else days
    cutoff = (now or datetime.now(UTC)) - pd.Timedelta(days=days).to_pytimedelta()
    expired = sa.select(tables.runs.c.id).where(tables.runs.c.trashed_at < cutoff)
    with reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        if conn.execute(expired.limit(1)).first() is None:  # the usual case: no write lock taken on a page's rerun
            return 0
    with reported(N_("changing runs failed: {cause}"), engine), engine.begin() as conn:
        ids = [int(i) for (i,) in conn.execute(expired).all()]
        if not ids:  # purged by another server meanwhile
            return 0
        deleted = _delete(conn, ids)
        record(
            conn, access.Identity("system", "admin", "anonymous"), "purge", ids, "", f"in the trash over {days} days"
        )
    return deleted


def list_trash(engine: Engine) -> pd.DataFrame:
    """The runs in the trash (after purging the expired ones): :func:`list_runs` with trashed_at and trashed_by."""
    purge_expired(engine)
    return list_runs(engine, trash=True)


def trashed(engine: Engine, run_ids: Iterable[int]) -> pd.DataFrame:
    """Which of ``run_ids`` are in the trash: id, label, created_by, trashed_at, trashed_by."""
    runs = tables.runs
    ids = [int(i) for i in run_ids]
    cols = ["id", "label", "created_by", "trashed_at", "trashed_by"]
    with reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        rows = conn.execute(
            sa.select(*(runs.c[c] for c in cols)).where(runs.c.id.in_(ids), runs.c.trashed_at.is_not(None))
        ).all()
    return pd.DataFrame(rows, columns=cols)

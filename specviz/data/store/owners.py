"""Who may change which runs (:mod:`specviz.base.access`), and the audit trail that records each change."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from specviz.base import access
from specviz.base.access import Identity
from specviz.base.i18n import N_
from specviz.data.store import tables
from specviz.data.store.errors import check_library_file, reported

AUDIT_COLUMNS = ("at", "who", "role", "action", "runs", "page", "detail")


def identity(who: Identity | None, action: str, owner: str | None = None) -> Identity:
    """``who`` (None: the default identity), checked for ``action`` on ``owner``'s work (AccessError if not allowed)."""
    who = access.default_identity() if who is None else who
    access.require(who, action, owner)
    return who


def record(conn: Connection, who: Identity, action: str, run_ids: Iterable, page: str, detail: str = "") -> None:
    """One line of the audit trail, in the transaction of the change it records (``detail`` cut at 500 chars)."""
    conn.execute(
        tables.audit.insert().values(
            at=datetime.now(UTC),
            who=who.name,
            role=who.role,
            action=action,
            runs=", ".join(str(i) for i in run_ids),
            page=str(page),
            detail=str(detail)[:500],
        )
    )


def _owners(conn: Connection, ids: list[int], trashed: bool) -> dict[int, str]:
    """run id -> its owner, for the ``ids`` in the library (``trashed=False``) or in the trash (True)."""
    runs = tables.runs
    state = runs.c.trashed_at.is_not(None) if trashed else runs.c.trashed_at.is_(None)
    rows = conn.execute(sa.select(runs.c.id, runs.c.created_by).where(runs.c.id.in_(ids), state)).all()
    return {int(i): owner or "" for i, owner in rows}


def change(
    engine: Engine, run_ids: Iterable[int], who: Identity | None, action: str, page: str, apply, detail: str = ""
) -> int:
    """Check ``action`` on every run first (all or nothing), then ``apply(conn, ids)`` and audit it; return
    what ``apply`` returns (0 when no run is in the right state)."""
    ids = [int(i) for i in run_ids]
    who = access.default_identity() if who is None else who
    if not ids:
        return 0
    with reported(N_("changing runs failed: {cause}"), engine), engine.begin() as conn:
        access.require(who, action)  # the role the action needs at all, whatever the runs
        owners = _owners(conn, ids, trashed=action in ("restore", "purge"))
        for owner in sorted(set(owners.values())):
            access.require(who, action, owner)
        changed = apply(conn, list(owners)) if owners else 0
        if changed:
            record(conn, who, action, sorted(owners), page, detail)
    check_library_file(engine)  # the change is in the file at the path
    return changed


def audit_trail(engine: Engine, *, who: Identity | None = None, limit: int = 10_000) -> pd.DataFrame:
    """The audit trail, newest first (admins only): :data:`AUDIT_COLUMNS`."""
    identity(who, "audit")
    audit = tables.audit
    with reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        rows = conn.execute(
            sa.select(*(audit.c[c] for c in AUDIT_COLUMNS)).order_by(audit.c.id.desc()).limit(limit)
        ).all()
    frame = pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))
    frame["at"] = pd.to_datetime(frame["at"], utc=True)
    return frame

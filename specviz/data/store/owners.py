"""Who may change which runs (:mod:`specviz.base.access`), and the audit trail that records each change."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from specviz.base import access
from specviz.base.access import Identity
from specviz.base.i18n import N_, Message, Phrase
from specviz.data.store import tables
from specviz.data.store.errors import StoreError, check_library_file, reported

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
    """run id -> its owner, for the ``ids`` in the library (``trashed=False``) or in the trash (True); the
    rows stay locked (PostgreSQL) until the change commits, so a concurrent change waits and sees this one."""
    runs = tables.runs
    state = runs.c.trashed_at.is_not(None) if trashed else runs.c.trashed_at.is_(None)
    query = sa.select(runs.c.id, runs.c.created_by).where(runs.c.id.in_(ids), state).with_for_update()
    return {int(i): owner or "" for i, owner in conn.execute(query).all()}


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(f"#{i}" for i in sorted(ids))


def _person(name: str | None):
    return name or Phrase(N_("the local user"))


def last_actor(conn: Connection, action: str, run_id: int):
    """Who last did ``action`` on ``run_id``, from the audit trail (the local user where nobody is named)."""
    audit = tables.audit
    rows = conn.execute(
        sa.select(audit.c.who, audit.c.runs).where(audit.c.action == action).order_by(audit.c.id.desc()).limit(500)
    ).all()
    return _person(next((who for who, runs in rows if str(run_id) in runs.split(", ")), ""))


def conflict(conn: Connection, action: str, ids: list[int]) -> Message:
    """Why ``action`` cannot apply to ``ids`` now: someone else trashed, restored or purged them meanwhile."""
    runs = tables.runs
    found = {int(r.id): r for r in conn.execute(sa.select(runs).where(runs.c.id.in_(ids))).all()}
    gone = [i for i in ids if i not in found]
    if gone and action in ("restore", "purge"):
        return Message("run(s) {ids} were purged from the trash meanwhile; nothing was changed", ids=_ids(gone))
    if gone:
        return Message("run id(s) {ids} are not in the library (deleted by someone else?)", ids=[int(i) for i in gone])
    if action in ("restore", "purge"):
        who = ", ".join(sorted({str(last_actor(conn, "restore", i)) for i in ids}))
        return Message(
            "run(s) {ids} are no longer in the trash: {who} restored them meanwhile; nothing was changed",
            ids=_ids(ids),
            who=who,
        )
    who = ", ".join(sorted({str(_person(found[i].trashed_by)) for i in ids}))
    if action == "edit":
        return Message(
            "run {ids} was moved to the trash by {who} meanwhile; your changes were not saved (restore it to edit it)",
            ids=_ids(ids),
            who=who,
        )
    return Message("run(s) {ids} were moved to the trash by {who} meanwhile; nothing was moved", ids=_ids(ids), who=who)


def conflict_of(engine: Engine, action: str, run_ids: Iterable[int]) -> Message:
    """:func:`conflict` for runs a page offered that are no longer in the state ``action`` needs."""
    with reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        return conflict(conn, action, [int(i) for i in run_ids])


def change(
    engine: Engine, run_ids: Iterable[int], who: Identity | None, action: str, page: str, apply, detail: str = ""
) -> int:
    """Check ``action`` on every run first (all or nothing), then ``apply(conn, ids)`` and audit it once; return
    what ``apply`` returns. A run not in the state the action needs (trashed, restored or purged by someone
    else meanwhile, or never there) refuses all: StoreError naming it, what happened to it and by whom."""
    ids = list(dict.fromkeys(int(i) for i in run_ids))
    who = access.default_identity() if who is None else who
    if not ids:
        return 0
    with reported(N_("changing runs failed: {cause}"), engine), engine.begin() as conn:
        access.require(who, action)  # the role the action needs at all, whatever the runs
        owners = _owners(conn, ids, trashed=action in ("restore", "purge"))
        if missed := [i for i in ids if i not in owners]:
            raise StoreError(conflict(conn, action, missed))
        for owner in sorted(set(owners.values())):
            access.require(who, action, owner)
        changed = apply(conn, list(owners))
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

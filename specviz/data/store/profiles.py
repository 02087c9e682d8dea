"""Custom engine profiles fitted from runs: save, list and delete them by a unique name."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from specviz.base import access
from specviz.base.access import Identity
from specviz.base.i18n import N_, Message
from specviz.core.profiles import decode_terms, encode_terms, profile_names
from specviz.data.store import tables
from specviz.data.store.errors import StoreError, cause, check_library_file, reported
from specviz.data.store.owners import identity, record
from specviz.data.store.tables import MAX_PROFILE_NAME

PROFILE_COLUMNS = ("id", "name", "terms", "base_engine", "target", "gpu", "n_rows", "created_at")


def _profile_name(name) -> str:
    """``name`` stripped, if it is 1 to :data:`MAX_PROFILE_NAME` characters (StoreError naming it otherwise)."""
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > MAX_PROFILE_NAME:
        raise StoreError(
            Message("profile name must be 1 to {most} characters; got {name!r}", most=MAX_PROFILE_NAME, name=name)
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
    """Store a custom engine profile as ``who``'s (an editor or admin; audited); return its id.

    ``terms``: :func:`specviz.core.profiles.decode_terms` text, stored re-encoded; ``base_engine``: one of
    :func:`~specviz.core.profiles.profile_names`; ``n_rows``: an integer >= 0. Raises StoreError (nothing
    stored) naming the field: a name empty, over 80 characters or taken, bad terms, a failed write.
    """
    who = identity(who, "profile")
    name = _profile_name(name)
    try:
        text = encode_terms(decode_terms(terms))
    except Message as exc:
        raise StoreError(exc) from None
    if base_engine not in profile_names():
        raise StoreError(
            Message(
                "base_engine must be one of {allowed}; got {value!r}",
                allowed=", ".join(profile_names()),
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
    profiles = tables.profiles
    try:
        with engine.begin() as conn:
            if conn.execute(sa.select(profiles.c.id).where(profiles.c.name == name)).first() is not None:
                raise _name_taken(name)
            profile_id = conn.execute(profiles.insert().values(**row)).inserted_primary_key[0]
            record(conn, who, "save profile", [name], page)
        check_library_file(engine)
    except StoreError:
        raise
    except sa.exc.IntegrityError as exc:  # another server saved this name between the check and the insert
        raise _name_taken(name) from exc
    except sa.exc.SQLAlchemyError as exc:
        raise StoreError(
            Message(
                "saving profile {name!r} failed, nothing was stored: {cause}", name=name, cause=cause(exc, engine.url)
            )
        ) from exc
    return int(profile_id)


def list_profiles(engine: Engine) -> pd.DataFrame:
    """Every saved engine profile, newest first: :data:`PROFILE_COLUMNS`."""
    profiles = tables.profiles
    with reported(N_("listing the saved profiles failed: {cause}"), engine), engine.connect() as conn:
        rows = conn.execute(sa.select(*(profiles.c[c] for c in PROFILE_COLUMNS)).order_by(profiles.c.id.desc())).all()
    frame = pd.DataFrame(rows, columns=list(PROFILE_COLUMNS))
    frame["id"] = frame["id"].astype("int64")
    frame["n_rows"] = frame["n_rows"].astype("int64")
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    return frame


def delete_profile(engine: Engine, name: str, *, who: Identity | None = None, page: str = "") -> int:
    """Delete the profile called ``name`` (its creator, or an admin; audited); return how many were deleted (0, 1)."""
    who = identity(who, "profile")
    profiles = tables.profiles
    with reported(N_("deleting the profile failed: {cause}"), engine), engine.begin() as conn:
        owner = conn.execute(sa.select(profiles.c.created_by).where(profiles.c.name == str(name))).scalar()
        if owner is not None:
            access.require(who, "profile_delete", owner)
        deleted = conn.execute(profiles.delete().where(profiles.c.name == str(name))).rowcount
        if deleted:
            record(conn, who, "delete profile", [name], page)
    check_library_file(engine)
    return deleted

"""Save, list, load and edit runs: a frame of measurements in, the same frame (columns, dtypes, row numbers) out."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from specviz.base.access import Identity
from specviz.base.i18n import N_, Message
from specviz.data import measurements as m
from specviz.data.store import tables
from specviz.data.store.errors import StoreError, cause, check_library_file, reported
from specviz.data.store.owners import change, identity, last_actor, record
from specviz.data.store.tables import MAX_LABEL, SCHEMA_VERSION, STORED_COLUMNS


def _python(value):
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


def _run_name(label) -> str:
    """``label`` stripped, if it is 1 to :data:`MAX_LABEL` characters (StoreError otherwise)."""
    label = label.strip() if isinstance(label, str) else ""
    if not label or len(label) > MAX_LABEL:
        raise StoreError(Message("run name must be 1 to {most} characters; got {label!r}", most=MAX_LABEL, label=label))
    return label


def _surrogate(what: str, text: str) -> Message:
    """The error of a run name, source or note (``what``) that holds a lone surrogate."""
    if what == "run name":
        return Message("run name {text!r} is not valid Unicode text (it holds a lone surrogate)", text=text)
    if what == "source":
        return Message("source {text!r} is not valid Unicode text (it holds a lone surrogate)", text=text)
    return Message("note {text!r} is not valid Unicode text (it holds a lone surrogate)", text=text)


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

    ``who``: an editor or admin (None: the local user); audited with ``page``. One transaction, committed
    to the file at the library's path. Raises StoreError (nothing stored): an empty frame, unknown or
    missing (``label``, ``k``) columns, a name not 1–200 characters, a lone surrogate, a failed write.
    """
    who = identity(who, "save")
    label = _run_name(label)
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
            run_id = conn.execute(tables.runs.insert().values(**run)).inserted_primary_key[0]
            conn.execute(tables.rows.insert(), [{**r, "run_id": run_id} for r in records])
            record(conn, who, "save", [run_id], page, label)
        check_library_file(engine)  # the commit went to the file at the path, not to a deleted one
    except (sa.exc.SQLAlchemyError, StoreError) as exc:
        raise StoreError(
            Message(
                "saving run {label!r} failed, nothing was stored: {cause}", label=label, cause=cause(exc, engine.url)
            )
        ) from exc
    return int(run_id)


def list_runs(engine: Engine, *, trash: bool = False) -> pd.DataFrame:
    """Every run not in the trash (``trash=True``: in it), newest first: id, label, source, uploaded_at, note,
    n_rows, created_by, and target_model, draft_model, hardware, method (distinct values, ", "-joined);
    in the trash also trashed_at, trashed_by."""
    runs, rows = tables.runs, tables.rows
    cols = ["id", "label", "source", "uploaded_at", "note", "n_rows", "created_by"]
    cols += ["trashed_at", "trashed_by"] if trash else []
    where = runs.c.trashed_at.is_not(None) if trash else runs.c.trashed_at.is_(None)
    with reported(N_("listing the run library failed: {cause}"), engine), engine.connect() as conn:
        listed = pd.DataFrame(
            conn.execute(sa.select(*(runs.c[c] for c in cols)).where(where).order_by(runs.c.id.desc())).all(),
            columns=cols,
        )
        meta = conn.execute(
            sa.select(rows.c.run_id, rows.c.target_model, rows.c.draft_model, rows.c.hardware, rows.c.method).distinct()
        ).all()
    facets = ["target_model", "draft_model", "hardware", "method"]
    found: dict[int, dict[str, set]] = {}
    for run_id, *values in meta:
        for facet, value in zip(facets, values, strict=True):
            if value:
                found.setdefault(run_id, {}).setdefault(facet, set()).add(value)
    for facet in facets:
        listed[facet] = [", ".join(sorted(found.get(i, {}).get(facet, ()))) for i in listed["id"]]
    listed["id"] = listed["id"].astype("int64")
    listed["uploaded_at"] = pd.to_datetime(listed["uploaded_at"], utc=True)
    if trash:
        listed["trashed_at"] = pd.to_datetime(listed["trashed_at"], utc=True)
    return listed


def _fetch(engine: Engine, run_ids: Iterable[int]) -> list[pd.DataFrame]:
    """The frames of ``run_ids`` (:func:`_run_frame`); StoreError naming ids missing or in the trash."""
    runs, rows = tables.runs, tables.rows
    ids = [int(i) for i in run_ids]
    if not ids:
        return []
    with reported(N_("reading runs from the library failed: {cause}"), engine), engine.connect() as conn:
        found = {r.id: r for r in conn.execute(sa.select(runs).where(runs.c.id.in_(ids))).all()}
        missing = [i for i in ids if i not in found]
        if missing:
            raise StoreError(Message("run id(s) {ids} are not in the library (deleted by someone else?)", ids=missing))
        trashed = [i for i in ids if found[i].trashed_at is not None]
        if trashed:
            raise StoreError(
                Message(
                    "run id(s) {ids} are in the trash: restore them (Trash, on Measured data) to use them", ids=trashed
                )
            )
        cells = (
            conn.execute(sa.select(rows).where(rows.c.run_id.in_(ids)).order_by(rows.c.run_id, rows.c.position))
            .mappings()
            .all()
        )
    by_run: dict[int, list] = {}
    for r in cells:
        by_run.setdefault(r["run_id"], []).append(r)
    return [_run_frame(found[i], by_run.get(i, [])) for i in ids]


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
    """The measurements of ``run_ids`` in that order, with ``run_id`` and ``run``; each run's saved columns
    and dtypes (empty where another run lacks a column); RangeIndex."""
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


def edit_run(
    engine: Engine,
    run_id: int,
    *,
    label: str | None = None,
    note: str | None = None,
    seen: Mapping[str, str] | None = None,
    who: Identity | None = None,
    page: str = "",
) -> None:
    """Rename a run or change its note (its owner, or an admin; audited); StoreError for a bad name or a gone run.

    ``seen``: the ``label`` and ``note`` the editor started from; if the run holds others now (changed by
    someone else meanwhile), StoreError saying so and nothing changes (an optimistic check)."""
    values = {}
    if label is not None:
        values["label"] = _run_name(label)
    if note is not None:
        values["note"] = str(note)

    def edit(conn: Connection, ids: list[int]) -> int:
        runs = tables.runs
        now = conn.execute(sa.select(runs.c.label, runs.c.note).where(runs.c.id == run_id)).one()
        if any(getattr(now, name) != str(value) for name, value in (seen or {}).items()):
            raise StoreError(
                Message(
                    "run #{id} was changed by {who} meanwhile (it is now named {label!r}); your changes were not saved: check its name and note, then save again",
                    id=run_id,
                    who=last_actor(conn, "edit", run_id),
                    label=now.label,
                )
            )
        return conn.execute(runs.update().where(runs.c.id.in_(ids)).values(**values)).rowcount

    detail = "; ".join(f"{name} = {value!r}" for name, value in values.items())
    if values:
        change(engine, [run_id], who, "edit", page, edit, detail)

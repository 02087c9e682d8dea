"""Your rows (an upload or a library run) in the published table's columns, checked cell by cell."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.core import hardware, heads, published, theory
from specviz.core.profiles import DEFAULT_EFFICIENCY

#: the drafting methods :func:`specviz.core.published.predict_row` prices (``published.priceable``)
METHODS = published.METHODS
KINDS = ("step", "speedup")
YOURS = "yours"  #: the stack and source of your rows where the file names none
MAX_ROWS = 500  #: most rows of yours priced and fitted at once (a fit prices every row ≈ 100 times)
LIMITS = {"tp": (1, 64), "batch": (1, 4096), "context": (1, 2**21), "k": (1, theory.K_LIMIT)}
#: a plausible step time in ms: 1 µs (below one kernel launch) to 60 s (a stalled run, not a decode step)
STEP_MS = (1e-3, 6e4)
REQUIRED = ("kind", "target", "gpu", "batch")  #: columns every file needs
#: columns a row of each kind needs (besides :data:`REQUIRED`)
NEEDED = {"step": ("t_step_ms",), "speedup": ("method", "k", "tau", "speedup")}
DEFAULTS = {"tp": 1, "dtype": "bf16", "context": published.DEFAULT_CONTEXT, "stack": YOURS, "source_id": YOURS}
#: a column's older name -> its name: a file using the older one is read as if it used the new (a note says so)
RENAMED = {"engine": "stack"}
#: what a cell of each column may hold, in words; the integer ranges and the methods are those of
#: :data:`LIMITS` and :data:`METHODS`, the ones :func:`check_rows` checks
_ALLOWED = {
    "kind": N_("step or speedup"),
    "method": Phrase("one of {choices}", choices=", ".join(METHODS)),
    "tp": Phrase("an integer in [1, {hi}]", hi=LIMITS["tp"][1]),
    "batch": Phrase("an integer in [1, {hi}]", hi=LIMITS["batch"][1]),
    "context": Phrase(
        "an integer in [1, {hi}] (empty: {default})", hi=LIMITS["context"][1], default=DEFAULTS["context"]
    ),
    "k": Phrase("an integer in [1, {hi}]", hi=LIMITS["k"][1]),
    "tau": N_("a number in [1, K + 1] (mean tokens per round, bonus included)"),
    "speedup": N_("a finite number > 0"),
    "t_step_ms": Phrase(
        "a number of ms in [{lo:g}, {hi:g}] (1 µs to 60 s: a decode step outside it is a unit or logging error)",
        lo=STEP_MS[0],
        hi=STEP_MS[1],
    ),
    "draft_tokens": N_("a finite number > 0 (empty: 1)"),
    "verify_tokens": N_("a finite number > 0 (empty: K + 1)"),
    "prompt_tokens": N_("an integer >= 0 (empty: none)"),
    "output_tokens": N_("an integer >= 1 (empty: none)"),
    "kv_tokens": N_("an integer >= 1 (empty: none)"),  # the KV-cache capacity the engine reported, tokens
    "plain_kv_tokens": N_("an integer >= 1 (empty: none)"),
    "includes_prefill": N_("yes or no (empty: no)"),
}


def _bad(row, field: str, value, allowed) -> Message:
    return Message(
        "row {row}: {field} = {value!r} is not allowed; allowed: {allowed}",
        row=row,
        field=field,
        value=str(value),
        allowed=Phrase(allowed) if not isinstance(allowed, Phrase) else allowed,
    )


def _empty(value) -> bool:
    return value is None or (isinstance(value, float) and value != value) or str(value).strip() == ""


def _number(value, integer: bool, lo: float | None, hi: float | None = None) -> float | None:
    """The cell as a number in [lo, hi] (lo exclusive at 0 for non-integers), else None."""
    try:
        x = float(str(value).strip())
    except ValueError:
        return None
    if not np.isfinite(x) or (integer and not x.is_integer()):
        return None
    if lo is not None and (x < lo or (lo == 0 and not integer and x <= 0)):
        return None
    if hi is not None and x > hi:
        return None
    return x


def _catalogue_problem(row, field: str, value, check) -> Message | None:
    """``check(value)``'s refusal as a message naming the row and field, else None."""
    try:
        check(value)
    except Message as exc:
        return Message(
            "row {row}: {field} = {value!r}: {reason}",
            row=row,
            field=field,
            value=str(value),
            reason=Phrase(exc.msgid, **exc.fields),
        )
    return None


def check_draft(draft, target: str | dict | None = None):
    """``draft`` as a draft of ``target`` (None: the name only): n-gram, a head trained for it (a name or a head read
    from its config.json), a catalogue model or a model's spec sharing its tokenizer; Message naming what the draft
    may be, or why it cannot draft."""
    if isinstance(draft, str) and draft == hardware.NGRAM:
        return draft
    if heads.is_head(draft):
        if target is not None:
            heads.check_target(draft, target if isinstance(target, str) else hardware.model_spec(target).get("name"))
        return draft
    models = hardware.load_catalog()[0].index
    if isinstance(draft, dict):
        if target is not None:
            hardware.check_pair(target, draft)
        return draft
    if draft not in models:
        raise Message(
            "{draft!r} is no model, head or {ngram!r}; choose a model ({models}), a head ({heads}) or {ngram!r}",
            draft=draft,
            ngram=hardware.NGRAM,
            models=", ".join(models),
            heads=", ".join(heads.load_heads().index),
        )
    if target is not None:
        hardware.check_pair(target, draft)
    return draft


def read_table(data: bytes) -> pd.DataFrame:
    """An uploaded CSV as text cells (```` where empty); Message quoting the parser when it is no CSV."""
    try:
        return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise Message("the file is not a readable CSV table: {cause}", cause=str(exc).splitlines()[0]) from None


def renamed_columns(frame: pd.DataFrame) -> dict[str, str]:
    """The columns of ``frame`` under an older name (:data:`RENAMED`) whose new name it lacks: old -> new."""
    return {old: new for old, new in RENAMED.items() if old in frame.columns and new not in frame.columns}


def check_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[Message]]:
    """Your rows, cleaned, and a message per bad cell (row from 1, field, value, what is allowed). Columns of
    ``data/validation/measurements.csv``: :data:`REQUIRED`, per kind :data:`NEEDED` (and a draft unless ngram);
    others default (:data:`DEFAULTS`); older column names are read (:data:`RENAMED`); names are looked up in the
    catalogues."""
    frame = frame.rename(columns=renamed_columns(frame))
    if len(frame) > MAX_ROWS:
        raise Message("your table has {n} rows; at most {most} are priced at once", n=len(frame), most=MAX_ROWS)
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise Message(
            "your table lacks the column(s) {missing}; it has {columns}",
            missing=", ".join(missing),
            columns=", ".join(map(str, frame.columns)),
        )
    problems: list[Message] = []
    good = []
    for i, (_, cells) in enumerate(frame.iterrows(), start=1):
        row, bad = _clean_row(i, cells)
        problems += bad
        if not bad:
            good.append(row)
    columns = list(published.load_measurements().columns)
    rows = pd.DataFrame(good, columns=columns) if good else pd.DataFrame(columns=columns)
    return rows, problems


def _clean_row(i: int, cells: pd.Series) -> tuple[dict, list[Message]]:

    def get(column: str):
        return cells[column] if column in cells.index and not _empty(cells[column]) else None

    bad: list[Message] = []
    row = {c: get(c) for c in cells.index}
    kind = str(get("kind") or "").strip()
    if kind not in KINDS:
        return row, [_bad(i, "kind", get("kind") or "", _ALLOWED["kind"])]
    row["kind"] = kind
    for field in ("target", "gpu"):
        if get(field) is None:
            bad.append(_bad(i, field, "", N_("a name of the catalogue (the Hardware & batch page lists them)")))
    known = {}  #: the target and GPU found in the catalogue
    for field, check in (("target", hardware.model_spec), ("gpu", hardware.gpu_spec)):
        if get(field) is not None:
            row[field] = str(get(field)).strip()
            problem = _catalogue_problem(i, field, row[field], check)
            bad += [problem] if problem else []
            known[field] = None if problem else row[field]
    dtype = str(get("dtype") or DEFAULTS["dtype"]).strip()
    if dtype not in hardware.DTYPE_BYTES:
        bad.append(_bad(i, "dtype", dtype, Phrase("one of {choices}", choices=", ".join(hardware.DTYPE_BYTES))))
    row["dtype"] = dtype
    for field in ("tp", "batch", "context"):
        value = get(field)
        if value is None and field in DEFAULTS:
            row[field] = DEFAULTS[field]
            continue
        x = None if value is None else _number(value, True, *LIMITS[field])
        if x is None:
            bad.append(_bad(i, field, value or "", _ALLOWED[field]))
        else:
            row[field] = int(x)
    for field in NEEDED[kind]:
        if get(field) is None:
            bad.append(_bad(i, field, "", _ALLOWED[field]))
    if kind == "step":
        row.update(method="none", k=np.nan, tau=np.nan, speedup=np.nan)
        bad += _numbers(i, row, get, ("t_step_ms",), STEP_MS)
    else:
        row["t_step_ms"] = np.nan
        bad += _speedup_cells(i, row, get, known.get("target"))
    for field in ("prompt_tokens", "output_tokens", "kv_tokens", "plain_kv_tokens"):
        value = get(field)
        x = None if value is None else _number(value, True, 0 if field == "prompt_tokens" else 1)
        if value is not None and x is None:
            bad.append(_bad(i, field, value, _ALLOWED[field]))
        row[field] = np.nan if x is None else x
    prefill = str(get("includes_prefill") or "no").strip().lower()
    if prefill not in ("yes", "no"):
        bad.append(_bad(i, "includes_prefill", prefill, _ALLOWED["includes_prefill"]))
    row["includes_prefill"] = prefill
    for field in ("stack", "source_id"):
        row[field] = str(get(field) or DEFAULTS[field]).strip()
    row["row_id"] = str(get("row_id") or f"{YOURS}-{i}").strip()
    row["source"] = str(get("source") or "")
    row["draft"] = "" if get("draft") is None else str(get("draft")).strip()
    row["context_assumed"] = get("context") is None
    if not bad:
        bad += _unpriceable(i, row)
    return row, bad


def _numbers(i: int, row: dict, get, names, limits: tuple = (0, None)) -> list[Message]:
    bad = []
    for field in names:
        value = get(field)
        if value is None:
            row[field] = np.nan
            continue
        x = _number(value, False, *limits)
        if x is None:
            bad.append(_bad(i, field, value, _ALLOWED[field]))
        row[field] = np.nan if x is None else x
    return bad


def _speedup_cells(i: int, row: dict, get, target: str | None) -> list[Message]:
    """A speedup row's cells cleaned into ``row``; their problems (``target`` None where it is bad)."""
    bad = []
    method = str(get("method") or "").strip()
    row["method"] = method
    if get("method") is not None and method not in METHODS:
        bad.append(_bad(i, "method", method, _ALLOWED["method"]))
    k = get("k")
    kx = None if k is None else _number(k, True, *LIMITS["k"])
    if k is not None and kx is None:
        bad.append(_bad(i, "k", k, _ALLOWED["k"]))
    row["k"] = kx
    bad += _numbers(i, row, get, ("speedup", "draft_tokens", "verify_tokens"))
    tau = get("tau")
    if tau is not None:
        hi = (row.get("verify_tokens") if row.get("verify_tokens") == row.get("verify_tokens") else None) or (
            kx + 1 if kx else None
        )
        x = _number(tau, False, 1, hi)
        if x is None:
            bad.append(_bad(i, "tau", tau, _ALLOWED["tau"]))
        row["tau"] = x
    if _known(row.get("tau")) and _known(row.get("speedup")) and row["speedup"] > row["tau"]:
        # a round yields τ tokens and costs at least one target step, so S ≤ τ
        allowed = Phrase("at most τ = {tau:g}: a round costs at least one target step", tau=row["tau"])
        bad.append(_bad(i, "speedup", get("speedup"), allowed))
    if method and method != "ngram" and method in METHODS:
        draft = get("draft")
        if draft is None:
            bad.append(_bad(i, "draft", "", N_("a draft model or head of the catalogue (empty only for ngram)")))
        else:
            problem = _catalogue_problem(i, "draft", str(draft).strip(), lambda d: check_draft(d, target))
            bad += [problem] if problem else []
    return bad


def _known(x) -> bool:
    return x is not None and x == x


def _unpriceable(i: int, row: dict) -> list[Message]:
    """The row priced once with the default profile; a refusal named."""
    try:
        published.predict_row(pd.Series(row), DEFAULT_EFFICIENCY)
    except (Message, KeyError, ValueError) as exc:
        reason = Phrase(exc.msgid, **exc.fields) if isinstance(exc, Message) and exc.msgid else str(exc)
        return [Message("row {row} cannot be priced: {reason}", row=i, reason=reason)]
    return []


def rows_from_run(
    run: pd.DataFrame,
    *,
    target: str,
    draft: str,
    gpu: str,
    dtype: str,
    tp: int,
    context: int,
    method: str,
    stack: str = YOURS,
) -> pd.DataFrame:
    """A library run (``store.load_runs`` columns) as rows for :func:`check_rows` on the given pair and GPU.

    A step row per ``t_target_ms``; a speedup row per ``speedup`` with τ = ``mean_accepted_tokens``,
    else E[N](``alpha_used``, K). Batch = ``batch_size`` (1 if empty). Message when the run has neither.
    """
    out = []
    for n, (_, r) in enumerate(run.iterrows(), start=1):
        batch = r.get("batch_size")
        common = dict(
            target=target,
            gpu=gpu,
            dtype=dtype,
            tp=tp,
            context=context,
            stack=stack,
            source_id=f"run {r.get('run_id', '')}".strip(),
            source=str(r.get("label", "")),
            batch=1 if batch is None or batch != batch or batch is pd.NA else int(batch),
        )
        t = r.get("t_target_ms")
        if t is not None and t == t and t is not pd.NA:
            out.append(dict(common, kind="step", row_id=f"run-{n}-step", t_step_ms=float(t)))
        s, k = r.get("speedup"), r.get("k")
        tau = r.get("mean_accepted_tokens")
        if (
            (tau is None or tau != tau)
            and r.get("alpha_used") == r.get("alpha_used")
            and r.get("alpha_used") is not None
        ):
            tau = float(theory.expected_tokens(float(r["alpha_used"]), int(k)))
        if s is not None and s == s and s is not pd.NA and tau is not None and tau == tau:
            out.append(
                dict(
                    common,
                    kind="speedup",
                    row_id=f"run-{n}-speedup",
                    method=method,
                    draft="" if method == "ngram" else draft,
                    k=int(k),
                    tau=float(tau),
                    speedup=float(s),
                )
            )
    if not out:
        raise Message(
            "the run has no target step time (t_target_ms) and no speedup with τ or α: nothing to compare or fit"
        )
    return pd.DataFrame(out)


def rows_from_csv(text: str) -> pd.DataFrame:
    """Checked rows read back from their ``to_csv(index=False)`` text (numbers as numbers, draft ```` if empty)."""
    rows = pd.read_csv(io.StringIO(text), keep_default_na=True, dtype={"draft": str, "source": str})
    rows["draft"] = rows["draft"].fillna("")
    return rows

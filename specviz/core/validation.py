"""The Validation page's logic: which profiles predict the published rows, the targets, and your own rows.

The published rows and their predictions come from :mod:`specviz.core.published`. Three predictors:

* ``loso``: held out, leave-one-source-out (each source's rows priced with profiles fitted on the
  other sources; ``published.load_predictions``, which ``benchmarks/validation_bench.py`` writes);
* ``shipped``: the profiles of ``data/catalog/engines.csv``, fitted on all rows (a row's own source
  is in its profile's fit, so this is an in-sample score);
* ``default``: the default roofline profile (:data:`specviz.core.engines.DEFAULT_EFFICIENCY`).

Your own rows are a table in the columns of ``data/validation/measurements.csv`` (an upload, or a run of
the library with the pair and GPU it was measured on); :func:`check_rows` names every bad cell, and
:func:`calibrate` fits a profile to them with :func:`specviz.core.published.fit_profile`.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.core import engines, hardware, heads, published, theory
from specviz.core.engines import DEFAULT_EFFICIENCY, Efficiency

PREDICTORS = ("loso", "shipped", "default")  #: who predicts the published rows (slugs: a link names them)
WITHIN = 0.15  #: the band of :func:`specviz.core.published.errors`' within_15: |predicted / measured − 1| ≤ 15 %
#: the targets as benchmarks/validation_bench.py states them (issue 31): (kind, statistic, at most / at least, bound)
TARGETS = (
    ("speedup", "median_abs_err", "max", 0.10),
    ("speedup", "within_15", "min", 0.75),
    ("step", "median_abs_err", "max", 0.15),
)
#: the drafting methods :func:`specviz.core.published.predict_row` prices (``published.priceable``)
METHODS = ("model", "eagle", "eagle2", "eagle3", "mtp", "medusa", "ngram")
KINDS = ("step", "speedup")
YOURS = "yours"  #: the engine and source of your rows where the file names none
MAX_ROWS = 500  #: most rows of yours priced and fitted at once (a fit prices every row ≈ 100 times)
LIMITS = {"tp": (1, 64), "batch": (1, 4096), "context": (1, 2**21), "k": (1, theory.K_LIMIT)}


def published_rows() -> pd.DataFrame:
    """The priceable published rows (:func:`specviz.core.published.priceable`)."""
    frame = published.load_measurements()
    return frame[published.priceable(frame)]


def _profile_for(which: str):
    """The function row -> Efficiency of predictor ``which`` for rows outside the published fit (yours):
    the default, or the engine's shipped profile (its family's for an engine the catalogue lacks)."""
    if which == "default":
        return lambda row: DEFAULT_EFFICIENCY
    return lambda row: engines.profile_for(row["engine"])


def inputs_stamp() -> str:
    """What the predictions are computed from, as text that changes when any of it does: the paths and
    modification times of the measurements, the engine catalogue and the predictions file (a cache key)."""
    parts = []
    for path in (published.MEASUREMENTS, engines.ENGINES_CSV, Path(published.PREDICTIONS)):
        parts.append(f"{path}@{path.stat().st_mtime_ns if path.exists() else 'absent'}")
    return "|".join(parts)


def predictions(which: str) -> pd.DataFrame:
    """The priceable published rows with ``measured``, ``predicted`` and ``ratio`` by predictor ``which``
    (:data:`PREDICTORS`); ``loso`` adds ``profile_from``.

    Raises
    ------
    Message
        ``which`` is not a predictor, or the held-out predictions have not been written yet.
    """
    if which not in PREDICTORS:
        raise Message("predictor must be one of {allowed}; got {value!r}", allowed=", ".join(PREDICTORS), value=which)
    if which == "loso":
        if not Path(published.PREDICTIONS).exists():
            raise Message(
                "the held-out predictions are not written yet: run python benchmarks/validation_bench.py, or choose another predictor"
            )
        table = published.load_predictions(published.PREDICTIONS)
        rows = published_rows()
        index = pd.Series(rows.index, index=rows["row_id"])  # the published rows' own index, as the others have
        table = table[table["row_id"].isin(index.index)]
        table.index = pd.Index(table["row_id"].map(index).to_numpy(), name=rows.index.name)
        return table.assign(predicted=table["loso_predicted"], ratio=table["loso_predicted"] / table["measured"])
    return published.predict(published_rows(), _profile_for(which))


def predict_yours(rows: pd.DataFrame, which: str) -> pd.DataFrame:
    """Your rows priced as predictor ``which`` would price a new source: the default profile, or the
    catalogue profile of the row's engine (default where the catalogue has none). Your rows are in no
    profile's fit, so ``shipped`` and ``loso`` are both held out for them."""
    return published.predict(rows, _profile_for(which))


def keep(frame: pd.DataFrame, engines_kept: list[str], sources_kept: list[str]) -> pd.DataFrame:
    """The rows of the engines and sources kept (an empty list keeps all)."""
    mask = pd.Series(True, index=frame.index)
    if engines_kept:
        mask &= frame["engine"].isin(engines_kept)
    if sources_kept:
        mask &= frame["source_id"].isin(sources_kept)
    return frame[mask]


def names_in(text: str) -> list[str]:
    """The names of a comma-separated list (a filter control's text), blanks dropped: ``"a, ,b"`` → [a, b]."""
    return [s.strip() for s in str(text).split(",") if s.strip()]


#: the columns of :func:`per_row`: what identifies a published row, then its prices
ROW_COLUMNS = ("row_id", "kind", "engine", "source_id", "target", "draft", "method", "gpu", "tp", "dtype", "batch")


def per_row(chosen: pd.DataFrame, default: pd.DataFrame) -> pd.DataFrame:
    """One row per published row of ``chosen`` (:func:`predictions`): :data:`ROW_COLUMNS`, measured,
    predicted, ratio and source, then ``default``'s prediction of the same row (default_predicted,
    default_ratio; aligned on the index)."""
    table = chosen[[*ROW_COLUMNS, "measured", "predicted", "ratio", "source"]]
    return table.assign(default_predicted=default["predicted"], default_ratio=default["ratio"])


def verdicts(errors: pd.DataFrame) -> pd.DataFrame:
    """Each of :data:`TARGETS` against ``errors`` (:func:`specviz.core.published.errors` per kind): columns
    kind, statistic, value, bound, at_most (True: value ≤ bound passes; False: value ≥ bound), passed
    (None where the rows have no such kind)."""
    out = []
    for kind, stat, side, bound in TARGETS:
        value = float(errors.loc[kind, stat]) if kind in errors.index else np.nan
        passed = None if value != value else bool(value <= bound if side == "max" else value >= bound)
        out.append(dict(kind=kind, statistic=stat, value=value, bound=bound, at_most=side == "max", passed=passed))
    return pd.DataFrame(out)


def side_by_side(chosen: pd.DataFrame, default: pd.DataFrame, by: str) -> pd.DataFrame:
    """``published.errors`` per ``by`` for the chosen predictor and the default profile, one row per
    (kind, ``by``): rows, median_abs_err, within_15, default_median_abs_err, default_within_15."""
    mine = published.errors(chosen, by)
    base = published.errors(default.loc[default.index.intersection(chosen.index)], by)
    base = base[["median_abs_err", "within_15"]].add_prefix("default_")
    return mine.join(base, how="left").reset_index()


# ----------------------------------------------------------------------------------------------------
# your rows: an upload or a library run, checked cell by cell
# ----------------------------------------------------------------------------------------------------

REQUIRED = ("kind", "target", "gpu", "batch")  #: columns every file needs
#: columns a row of each kind needs (besides :data:`REQUIRED`)
NEEDED = {"step": ("t_step_ms",), "speedup": ("method", "k", "tau", "speedup")}
DEFAULTS = {"tp": 1, "dtype": "bf16", "context": published.DEFAULT_CONTEXT, "engine": YOURS, "source_id": YOURS}
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
    "t_step_ms": N_("a finite number > 0 (ms)"),
    "draft_tokens": N_("a finite number > 0 (empty: 1)"),
    "verify_tokens": N_("a finite number > 0 (empty: K + 1)"),
    "prompt_tokens": N_("an integer >= 0 (empty: none)"),
    "output_tokens": N_("an integer >= 1 (empty: none)"),
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
    """The cell as a number within [lo, hi] (lo exclusive where it is 0 and not integer), else None."""
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
    """``check(value)`` (a catalogue look-up); its refusal as a message naming the row and field."""
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


def check_draft(draft: str, target: str | None = None) -> str:
    """``draft`` checked as a draft of the model named ``target``: :data:`~specviz.core.hardware.NGRAM`,
    a head of :mod:`specviz.core.heads` trained for ``target`` (:func:`~specviz.core.heads.check_target`),
    or a model of the catalogue that shares ``target``'s tokenizer
    (:func:`~specviz.core.hardware.check_pair`). ``target`` None checks the name only.

    Raises
    ------
    Message
        Naming the draft and the models, heads and lookup it may be, or why it cannot draft for ``target``.
    """
    if draft == hardware.NGRAM:
        return draft
    if heads.is_head(draft):
        if target is not None:
            heads.check_target(draft, target)
        return draft
    models = hardware.load_catalog()[0].index
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
    """An uploaded CSV as a table of text cells (``""`` where empty), for :func:`check_rows` to check.

    Raises
    ------
    Message
        The bytes are not a CSV table (the parser's first line of complaint quoted).
    """
    try:
        return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise Message("the file is not a readable CSV table: {cause}", cause=str(exc).splitlines()[0]) from None


def check_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[Message]]:
    """Your rows, cleaned, and a message for every bad cell (field, value and what is allowed).

    ``frame`` has the columns of ``data/validation/measurements.csv`` (text cells are fine): every file
    needs :data:`REQUIRED`; a step row ``t_step_ms``, a speedup row ``method``, ``k``, ``tau``,
    ``speedup`` and (unless ``method`` is ngram) ``draft``. ``tp``, ``dtype``, ``context``,
    ``engine``, ``source_id`` and ``row_id`` may be left out (:data:`DEFAULTS`; ``row_id``: "yours-N").
    Targets, drafts and GPUs are looked up in the catalogues (:func:`specviz.core.hardware.model_spec`,
    :func:`~specviz.core.hardware.gpu_spec`, :mod:`specviz.core.heads`). Only rows without a problem
    are returned, with ``measured`` and the published frame's columns; rows are numbered from 1 as in
    a spreadsheet below its header.
    """
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
    """One row of :func:`check_rows`: its cleaned cells and its problems."""

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
        bad += _numbers(i, row, get, ("t_step_ms",))
    else:
        row["t_step_ms"] = np.nan
        bad += _speedup_cells(i, row, get, known.get("target"))
    for field in ("prompt_tokens", "output_tokens"):
        value = get(field)
        x = None if value is None else _number(value, True, 0 if field == "prompt_tokens" else 1)
        if value is not None and x is None:
            bad.append(_bad(i, field, value, _ALLOWED[field]))
        row[field] = np.nan if x is None else x
    prefill = str(get("includes_prefill") or "no").strip().lower()
    if prefill not in ("yes", "no"):
        bad.append(_bad(i, "includes_prefill", prefill, _ALLOWED["includes_prefill"]))
    row["includes_prefill"] = prefill
    for field in ("engine", "source_id"):
        row[field] = str(get(field) or DEFAULTS[field]).strip()
    row["row_id"] = str(get("row_id") or f"{YOURS}-{i}").strip()
    row["source"] = str(get("source") or "")
    row["draft"] = "" if get("draft") is None else str(get("draft")).strip()
    row["context_assumed"] = get("context") is None
    if not bad:
        bad += _unpriceable(i, row)
    return row, bad


def _numbers(i: int, row: dict, get, names) -> list[Message]:
    bad = []
    for field in names:
        value = get(field)
        if value is None:
            row[field] = np.nan
            continue
        x = _number(value, False, 0)
        if x is None:
            bad.append(_bad(i, field, value, _ALLOWED[field]))
        row[field] = np.nan if x is None else x
    return bad


def _speedup_cells(i: int, row: dict, get, target: str | None) -> list[Message]:
    """The cells of a speedup row (method, k, speedup, the token counts, τ, the draft of ``target``:
    :func:`check_draft`; ``target`` None where it is itself bad), cleaned into ``row``; their problems."""
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
    if method and method != "ngram" and method in METHODS:
        draft = get("draft")
        if draft is None:
            bad.append(_bad(i, "draft", "", N_("a draft model or head of the catalogue (empty only for ngram)")))
        else:
            problem = _catalogue_problem(i, "draft", str(draft).strip(), lambda d: check_draft(d, target))
            bad += [problem] if problem else []
    return bad


def _unpriceable(i: int, row: dict) -> list[Message]:
    """The row priced once with the default profile; a refusal (a pair the roofline cannot price) named."""
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
    engine: str = YOURS,
) -> pd.DataFrame:
    """A library run (``store.load_runs`` columns) as rows for :func:`check_rows`, on the pair, GPU,
    dtype, TP, context and method it was measured with.

    Each run row gives a step row where it has ``t_target_ms`` (the target's decode step) and a
    speedup row where it has ``speedup`` and τ: ``mean_accepted_tokens``, else E[N](α, K) from
    ``alpha_used`` (:func:`specviz.core.theory.expected_tokens`). The batch is ``batch_size`` (1 where
    empty). Raises Message when the run has neither.
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
            engine=engine,
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


def calibrate(rows: pd.DataFrame, base: Efficiency) -> tuple[Efficiency, pd.DataFrame]:
    """The profile fitted to your ``rows`` from ``base`` (:func:`specviz.core.published.fit_profile`,
    pulled toward ``base`` where the rows do not constrain a term), its terms rounded to 4 significant
    digits (:func:`specviz.core.engines.encode_terms`: the profile saved and linked is exactly the one
    shown), and the rows with ``predicted`` / ``ratio`` by the fit and ``base_predicted`` / ``base_ratio``
    by ``base``."""
    if rows.empty:
        raise Message("there are no valid rows of yours to fit a profile to")
    fitted = engines.decode_terms(engines.encode_terms(published.fit_profile(rows, prior=base), digits=4))
    mine = published.predict(rows, dict.fromkeys(rows["engine"].unique(), fitted))
    base_pred = published.predict(rows, dict.fromkeys(rows["engine"].unique(), base))
    return fitted, mine.assign(base_predicted=base_pred["predicted"], base_ratio=base_pred["ratio"])


def rows_from_csv(text: str) -> pd.DataFrame:
    """Checked rows (:func:`check_rows`) read back from their ``to_csv(index=False)`` text (the hashable
    form a cached fit takes): numbers as numbers, ``draft`` and ``source`` as text, an empty draft ``""``."""
    rows = pd.read_csv(io.StringIO(text), keep_default_na=True, dtype={"draft": str, "source": str})
    rows["draft"] = rows["draft"].fillna("")
    return rows


def fit_errors(table: pd.DataFrame) -> dict[str, float]:
    """Median |predicted / measured − 1| over every row of :func:`calibrate`'s table, by the base
    profile (``base``, from base_ratio) and by the fitted one (``fitted``, from ratio)."""
    return {
        "base": float((table["base_ratio"] - 1).abs().median()),
        "fitted": float((table["ratio"] - 1).abs().median()),
    }


def fit_summary(rows: pd.DataFrame) -> dict:
    """What a profile fitted to ``rows`` was fitted on, as the run library stores it
    (``store.save_profile``): the targets and the GPUs (each sorted, ", "-joined) and the row count."""
    return {
        "target": ", ".join(sorted(rows["target"].unique())),
        "gpu": ", ".join(sorted(rows["gpu"].unique())),
        "n_rows": len(rows),
    }


def terms_table(fitted: Efficiency, base: Efficiency) -> pd.DataFrame:
    """Every term of the fitted profile beside the base profile's: term, fitted, base, changed."""
    names = engines.TERMS
    return pd.DataFrame(
        {
            "term": names,
            "fitted": [getattr(fitted, n) for n in names],
            "base": [getattr(base, n) for n in names],
            "changed": [getattr(fitted, n) != getattr(base, n) for n in names],
        }
    )

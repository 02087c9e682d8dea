"""The Validation page's scenario (a predictor, filters, where your rows come from) and the tables it scores."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from specviz.app import ui
from specviz.core import profiles, published, regimes, validation

BY = ("stack", "source_id", "method")  #: the error tables' groupings


@dataclass(frozen=True)
class Published:
    """The published rows shown: the predictor and the stack and source filters (empty: all)."""

    pred: str  #: one of validation.PREDICTORS
    stacks: tuple[str, ...]  #: the link's ``engines``
    sources: tuple[str, ...]


@dataclass(frozen=True)
class YourRows:
    """Where your rows come from and, for a library run, the pair, GPU and set-up it was measured on."""

    mine: str  #: "none", "upload" or "library"
    run: int
    target: str
    draft: str
    gpu: str
    dtype: str
    tp: int
    context: int
    method: str


@dataclass(frozen=True)
class Scenario:
    """The page's inputs: the published rows, your rows and the base profile of a calibration."""

    published: Published
    yours: YourRows
    base: str  #: the profile a calibration starts from


def scenario(view: dict) -> Scenario:
    """The page's scenario from its controls' ``view``."""
    names = validation.names_in
    rows = Published(view["pred"], tuple(names(view["engines"])), tuple(names(view["sources"])))
    yours = YourRows(
        view["mine"],
        view["run"],
        view["r_target"],
        view["r_draft"],
        view["r_gpu"],
        view["r_dtype"],
        view["r_tp"],
        view["r_ctx"],
        view["r_method"],
    )
    return Scenario(rows, yours, view["base"])


@ui.cached
def _predictions(which: str, stamp: str) -> pd.DataFrame:
    return validation.predictions(which)


def predictions(which: str) -> pd.DataFrame:
    """The published rows predicted by ``which``, computed again when a file they come from changes."""
    return _predictions(which, validation.inputs_stamp())


@ui.cached
def all_rows() -> pd.DataFrame:
    return validation.published_rows()


def filtered(frame: pd.DataFrame, p: Published) -> pd.DataFrame:
    """``frame``'s rows of the stacks and sources the filters keep."""
    return validation.keep(frame, list(p.stacks), list(p.sources))


def chosen(p: Published) -> pd.DataFrame:
    """The published rows predicted by the chosen predictor, within the stack and source filters."""
    return filtered(predictions(p.pred), p)


@ui.cached
def _errors(p: Published, stamp: str) -> dict:
    frame, default = chosen(p), filtered(predictions("default"), p)
    return dict(
        verdicts=validation.verdicts(published.errors(frame)),
        overall=validation.side_by_side(frame, default, None),
        by={by: validation.side_by_side(frame, default, by) for by in BY},
        per_row=validation.per_row(frame, default),
    )


def errors(p: Published) -> dict:
    """The Errors view's tables of the chosen rows beside the default profile's: ``verdicts`` against the
    targets, the ``overall`` errors, the errors ``by`` stack, source and method, and the ``per_row`` table."""
    return _errors(p, validation.inputs_stamp())


parsed_csv = ui.parsed_upload(validation.read_table)


def your_table(y: YourRows, upload) -> pd.DataFrame | None:
    """Your rows before checking: the ``upload``ed CSV, or the chosen library run on the chosen pair and GPU
    (None when there are none)."""
    if y.mine == "upload":
        return None if upload is None else parsed_csv(upload.getvalue())
    if y.mine == "library":
        engine = ui.library()
        if engine is None:
            return None
        run = ui.load_runs(engine, ui.library_runs(engine), [y.run])
        return validation.rows_from_run(
            run,
            target=y.target,
            draft=y.draft,
            gpu=y.gpu,
            dtype=y.dtype,
            tp=y.tp,
            context=y.context,
            method=y.method,
        )
    return None


@ui.cached(max_entries=8)
def fitted(rows_csv: str, base: str):
    """validation.calibrate of your rows (as CSV text: a cache key) from the profile ``base``."""
    return validation.calibrate(validation.rows_from_csv(rows_csv), profiles.profile(base))


#: what a row's measured and predicted values are in, by its kind: one unit per table column
KIND_UNITS = {"speedup": "×", "step": "ms"}


def by_unit(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """``frame`` with each of ``columns`` (speedups and step times of its rows, by ``kind``) split into one
    column per kind, "<column> <kind>", each in one unit; the other kind's rows empty there."""
    out = {}
    for name in frame.columns:
        if name not in columns:
            out[name] = frame[name]
            continue
        for kind in KIND_UNITS:
            out[f"{name} {kind}"] = frame[name].where(frame["kind"] == kind)
    return pd.DataFrame(out, index=frame.index)


@ui.cached
def _regime_tables(p: Published, stamp: str) -> dict[str, pd.DataFrame]:
    return validation.regime_errors(chosen(p))


def regime_tables(p: Published) -> dict[str, pd.DataFrame]:
    """Per kind, the chosen predictions' error in each regime (:func:`specviz.core.validation.regime_errors`)."""
    return _regime_tables(p, validation.inputs_stamp())


def regime_grid(table: pd.DataFrame) -> pd.DataFrame:
    """One line per engine · draft kind, one column per target · load, each cell "rows · median |err|" (an
    unvalidated cell says so); a regime without rows has an empty cell. In this session's language."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    columns = [(t, load) for t in regimes.TARGETS for load in regimes.LOADS]  # every target · load, fixed order
    for r, row in zip(table["regime"], table.itertuples(), strict=True):
        line = " · ".join((ui.t(regimes.ENGINE_LABELS[r.engine]), ui.t(regimes.DRAFT_LABELS[r.draft])))
        text = ui.t("{n} rows · {err}", n=int(row.rows), err=f"{row.median_abs_err:.1%}")
        cells.setdefault(line, {})[_column(r.target, r.load)] = (
            text if row.validated else text + " · " + ui.t("unvalidated")
        )
    heads = [_column(t, load) for t, load in columns]
    frame = pd.DataFrame.from_dict(cells, orient="index").reindex(columns=heads)
    return frame.sort_index().rename_axis(ui.t("engine · draft")).reset_index()


def _column(target: str, load: str) -> str:
    return f"{ui.t(regimes.TARGET_LABELS[target])} · {ui.t(regimes.LOAD_LABELS[load])}"


def rows_in(p: Published, key: str) -> pd.DataFrame:
    """The chosen published rows of regime ``key``: what a cell of :func:`regime_grid` rests on."""
    frame = chosen(p)
    return frame[frame["regime"] == key]


def not_fitted(rows: pd.DataFrame) -> list[str]:
    """The sources of ``rows``' speedup rows that are scored but fitted into no profile (published.NOT_FITTED)."""
    kept = published.fitted_rows(rows)
    return sorted(set(rows.drop(kept.index)["source_id"]))

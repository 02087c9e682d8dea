"""The Validation page's scenario (a predictor, filters, where your rows come from) and the tables it scores."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from specviz.app import ui
from specviz.core import profiles, published, validation

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

"""What a person reads: text with Markdown escaped, tables, and errors shown in the session's language
with no server path, URL or traceback."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app.ui.language import language, t
from specviz.base import hosting, i18n
from specviz.data import store

_MARKDOWN = re.compile(r"([\\`*_\[\]<>&])")  # emphasis, code, links / images / directives, HTML, entities


def plain(text: str) -> str:
    """``text`` with Markdown's special characters escaped, so user-supplied names show as written
    (``&quot;`` typed in a name stays ``&quot;``: ``\\&`` is a literal ampersand)."""
    return _MARKDOWN.sub(r"\\\1", str(text))


MISSING = "—"  #: what an empty cell shows (its column's tooltip says why)
_NUMERIC = ("int", "number", "percent")


def number(x, digits: int = 3) -> str:
    """A number as a person reads it: a whole number in full with thousands separators (54,900, never
    5.49e+04), else ``digits`` significant digits without an exponent; "—" for NaN, None or infinity."""
    if x is None or not np.isfinite(x):
        return MISSING
    x = float(x)
    if x == round(x) and abs(x) < 1e15:
        return f"{round(x):,}"
    decimals = max(0, digits - 1 - int(np.floor(np.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


@dataclass(frozen=True)
class Col:
    """How a table shows one column: heading (a msgid or symbol; "" keeps the column's name), unit, format.

    ``kind``: "int" (thousands separators, no decimals), "number" (``digits`` decimals), "percent" (a
    fraction shown × 100 with "%"), "bool" (yes / no), "text", or "auto" (from the column's type). ``scale`` multiplies a number for display
    only (seconds shown as ms: 1000); ``missing`` says why a cell may be empty (the column's tooltip).
    """

    heading: str = ""
    unit: str = ""
    kind: str = "auto"
    digits: int = 3
    scale: float = 1.0
    missing: str = ""
    help: str = ""


def headings(names: Mapping[Any, str], **cols: Col) -> dict[Any, Col]:
    """:class:`Col` specs from column -> heading (a msgid or symbol), with ``cols`` in place of some."""
    return {c: Col(h) for c, h in names.items()} | cols


def is_missing(value: Any) -> bool:
    """None, NaN, NaT, pandas' NA or blank text: a cell with no value."""
    if isinstance(value, str):
        return not value.strip()
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or array in a cell
        return False


def any_missing(series: pd.Series) -> bool:
    """Whether any cell of ``series`` is empty (an empty datetime column maps to datetimes, not booleans)."""
    return any(is_missing(v) for v in series)


def cell_text(value: Any, col: Col, yes_no: tuple[str, str] = ("yes", "no")) -> str:
    """``value`` as its cell shows it under ``col`` (:data:`MISSING` when it has none)."""
    if is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return yes_no[0] if value else yes_no[1]
    if isinstance(value, (pd.Timestamp, datetime)):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, (int, float, np.number)) and not np.isfinite(float(value)):
        return "∞" if value > 0 else "−∞"
    if col.kind in _NUMERIC and isinstance(value, (int, float, np.number)):
        x = float(value) * col.scale
        if col.kind == "int":
            return f"{round(x):,}"
        if col.kind == "percent":
            return f"{x * 100:,.{col.digits}f} %"
        return f"{x:,.{col.digits}f}"
    return str(value)


def guessed(series: pd.Series) -> Col:
    """The :class:`Col` a column gets from its values where the caller names no kind."""
    values = [v for v in series if not is_missing(v)]
    if pd.api.types.is_bool_dtype(series) or (values and all(isinstance(v, (bool, np.bool_)) for v in values)):
        return Col(kind="bool")
    if not values or not all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
        return Col(kind="text")
    whole = all(np.isfinite(v) and float(v).is_integer() and abs(v) < 2**53 for v in values)
    return Col(kind="int" if whole else "number")


def _resolved(col: Col | None, series: pd.Series) -> Col:
    if col is None:
        return guessed(series)
    return col if col.kind != "auto" else replace(col, kind=guessed(series).kind)


def heading(name: Any, col: Col, t: Callable[[str], str] = str) -> str:
    """The column's heading with its unit once: ``TPOT (ms)``; a percent column names "%" in its cells."""
    text = t(col.heading) if col.heading else str(name)
    if col.unit and col.kind != "percent" and not {f"({col.unit})", f"（{col.unit}）"} & {text[-len(col.unit) - 2 :]}:
        text = f"{text} ({col.unit})"
    return text


def _specs(frame: pd.DataFrame, columns: Mapping[Any, Col] | None) -> dict[Any, Col]:
    columns = columns or {}
    return {c: _resolved(columns.get(c), frame[c]) for c in frame.columns}


def shown_cells(frame: pd.DataFrame, columns: Mapping[Any, Col] | None = None, yes_no=("yes", "no")) -> pd.DataFrame:
    """Every cell of ``frame`` as its table shows it (text), same index and columns."""
    specs = _specs(frame, columns)
    return pd.DataFrame(
        {c: [cell_text(v, specs[c], yes_no) for v in frame[c]] for c in frame.columns}, index=frame.index
    ).reindex(columns=frame.columns)


def markdown_table(frame, formats: Mapping[Any, Col | str] | None = None, code: tuple[str, ...] = ()) -> str:
    """``frame`` as a GitHub-flavoured Markdown table, numbers right-aligned, an empty cell as "—".

    Text is escaped (:func:`plain`, and ``|``); ``formats`` maps a column to a :class:`Col` or a format spec
    for its numbers (e.g. ``{"E[N] computed": ".4f"}``); booleans read "yes" / "no" in the session's language;
    the columns ``code`` are names quoted verbatim, shown as code.
    """
    specs = {c: f for c, f in (formats or {}).items() if isinstance(f, Col)}
    specs = _specs(frame, specs)
    spec_formats = {c: f for c, f in (formats or {}).items() if isinstance(f, str)}
    yes_no = (t("yes"), t("no"))

    def cell(column: Any, value: Any) -> str:
        if column in code and not is_missing(value):
            return "`` " + str(value).replace("|", "\\|") + " ``"
        number = isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))
        if column in spec_formats and number and not is_missing(value):
            return format(value, spec_formats[column])
        return plain(cell_text(value, specs[column], yes_no)).replace("|", "\\|")

    rows = [[cell(c, v) for c, v in zip(frame.columns, row, strict=True)] for row in frame.itertuples(index=False)]
    right = [
        specs[c].kind in _NUMERIC or all(_looks_numeric(r[i]) for r in rows if r[i] != MISSING)
        for i, c in enumerate(frame.columns)
    ]
    head = [plain(heading(c, specs[c], t)).replace("|", "\\|") for c in frame.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "".join("---:|" if r else "---|" for r in right)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _looks_numeric(text: str) -> bool:
    return bool(_NUMBER_CELL.fullmatch(text.replace("\\", "")))


_NUMBER_CELL = re.compile(r"[-−+]?[\d,]*\.?\d+(?:[eE][-+]?\d+)?(?: ?(?:%|×|ms|s))?")


def static_table(frame, formats: Mapping[Any, Col | str] | None = None, code: tuple[str, ...] = ()) -> None:
    """Show a small reference table as Markdown: no data-grid component to load for a few rows of text.

    Markdown has no tooltips: a column with empty cells ("—") and a ``missing`` reason says why below it.
    """
    st.markdown(markdown_table(frame, formats, code))
    for column, col in (formats or {}).items():
        if isinstance(col, Col) and col.missing and any_missing(frame[column]):
            st.caption(f"{MISSING} {heading(column, col, t)}: {t(col.missing)}")


def table(
    frame: pd.DataFrame,
    columns: Mapping[Any, Col] | None = None,
    *,
    key: str | None = None,
    width: str = "stretch",
    height: int | str = "auto",
    keep_names: bool = False,
) -> None:
    """Show ``frame`` as an interactive table, each column in one unit and format (:class:`Col`).

    The data sent keep their values (sorting and the recorded numbers read them); only the shown text
    changes: numbers formatted and right-aligned, units in the headings, an empty cell as "—" with the
    reason in its column's tooltip (st.dataframe shows no per-cell tooltip). The index is not shown; the
    columns are sent under their headings, or under their own names with ``keep_names``.
    """
    specs = _specs(frame, columns)
    heads = {c: heading(c, specs[c], t) for c in frame.columns}
    frame = frame.reset_index(drop=True)
    if not keep_names:
        frame = frame.rename(columns=heads)
        specs, heads = {heads[c]: col for c, col in specs.items()}, {h: h for h in heads.values()}
    yes_no = (t("yes"), t("no"))
    styler = frame.style.format({c: (lambda v, col=specs[c]: cell_text(v, col, yes_no)) for c in frame.columns})
    config = {}
    for c in frame.columns:
        col = specs[c]
        tip = [t(col.help)] if col.help else []
        if any_missing(frame[c]):
            tip.append(f"{MISSING}: " + (t(col.missing) if col.missing else t("no value for this row")))
        config[c] = st.column_config.Column(
            heads[c],
            help="  \n".join(tip) or None,
            alignment="right" if col.kind in _NUMERIC else None,
        )
    st.dataframe(styler, hide_index=True, column_config=config, key=key, width=width, height=height)


def public_message(text: str, hosted: bool | None = None) -> str:
    """``text`` as this deployment may show it: unchanged, or in hosted mode (``hosted``; default
    ``$SPECVIZ_HOSTED``, :func:`specviz.base.hosting.is_hosted`) with the run library's database URL and file,
    every other URL and every absolute path replaced by ``[hidden]`` (:func:`specviz.base.hosting.redact`).
    """
    if not (hosting.is_hosted() if hosted is None else hosted):
        return str(text)
    return hosting.redact(text, store.database_forms(store.default_url()))


def message(item: BaseException | str) -> str:
    """A library error or note in this session's language (:func:`specviz.base.i18n.localized`)."""
    return i18n.localized(item, language())


def show_error(exc: Exception) -> None:
    """Show a library ValueError to the person (as plain text: it may quote their input), never a traceback.

    In this session's language (:func:`message`); in hosted mode without paths or URLs (:func:`public_message`).
    """
    st.error(plain(public_message(message(exc))), icon=":material/error:")


@contextmanager
def reported_errors():
    """``with ui.reported_errors(): ...`` turns a ValueError into ``st.error``."""
    try:
        yield
    except ValueError as exc:
        show_error(exc)

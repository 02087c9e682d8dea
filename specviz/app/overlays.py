"""Measured rows next to the theory: series, their theoretical curves, per-position tables.

Input is a frame in the canonical measurement schema (:mod:`specviz.data.measurements`, as loaded or as
read back from the run library, optionally with ``run`` / ``run_id``). A *series* is the set of rows
of one run with one label and one configuration (:data:`CONFIG_COLUMNS`) — typically one engine
configuration swept over K. Each series gets one theoretical curve, drawn at the series' α (mean of
``alpha_used``) and c (median of ``c_used``), and where ``v`` / ``o`` are known, the measured-cost curve
as well.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.app import grids, share
from specviz.app.figures import plotly_text
from specviz.base import i18n
from specviz.base.i18n import N_, Phrase
from specviz.core import theory

__all__ = [
    "CONFIG_COLUMNS",
    "HEATMAP_SIZE",
    "HOVER_FIELDS",
    "MAX_ROWS",
    "MAX_SERIES",
    "MISSING",
    "check_rows",
    "curves",
    "heatmap_grid",
    "hover_text",
    "k_top",
    "per_position",
    "series_params",
    "with_series",
]

#: Metadata shown on hover, in order: column -> label (in English; ``note.overlays.hover.<column>`` in the catalogues).
HOVER_FIELDS: dict[str, str] = {
    "run": "run",
    "label": "label",
    "k": "K",
    "temperature": "T",
    "target_model": "target",
    "draft_model": "draft",
    "hardware": "hardware",
    "method": "method",
    "batch_size": "batch",
    "alpha_used": "α used",
    "alpha_source": "α from",
    "c_used": "c used",
    "speedup": "measured S",
    "predicted_speedup": "predicted S (basic)",
    "predicted_speedup_measured_cost": "predicted S (measured cost)",
    "mean_accepted_tokens": "E[N] measured",
    "source": "source",
    "notes": "notes",
}


def _col(frame: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` or an all-missing column of the frame's length."""
    return frame[name] if name in frame.columns else pd.Series([np.nan] * len(frame), index=frame.index)


def _text(frame: pd.DataFrame, name: str) -> pd.Series:
    """Text column ``name`` with missing cells (or a missing column) as ""."""
    if name not in frame.columns:
        return pd.Series([""] * len(frame), index=frame.index, dtype=object)
    return pd.Series(["" if pd.isna(v) else str(v) for v in frame[name]], index=frame.index, dtype=object)


_HOVER_MAX = 160  #: characters of a text field shown on hover (published notes can be long)


def _fmt(value) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    text = str(value)
    return text if len(text) <= _HOVER_MAX else text[: _HOVER_MAX - 1] + "…"


HOVER_LABELS = {
    "alpha_source": N_("α from"),
    "alpha_used": N_("α used"),
    "batch_size": N_("batch"),
    "c_used": N_("c used"),
    "draft_model": N_("draft"),
    "hardware": N_("hardware"),
    "k": N_("K"),
    "label": N_("label"),
    "mean_accepted_tokens": N_("E[N] measured"),
    "method": N_("method"),
    "notes": N_("notes"),
    "predicted_speedup": N_("predicted S (basic)"),
    "predicted_speedup_measured_cost": N_("predicted S (measured cost)"),
    "run": N_("run"),
    "source": N_("source"),
    "speedup": N_("measured S"),
    "target_model": N_("target"),
    "temperature": N_("T"),
}  #: column -> its hover label


def hover_label(column: str, lang: str = "en") -> str:
    """The hover label of ``column`` (a key of :data:`HOVER_FIELDS`) in ``lang``."""
    return i18n.text(lang, HOVER_LABELS[column])


def hover_text(frame: pd.DataFrame, lang: str = "en") -> pd.Series:
    """One plotly hover string per row: every non-empty field of :data:`HOVER_FIELDS` (long text cut), each
    shown as written (:func:`specviz.app.figures.plotly_text`), one per line (``<br>``); labels in ``lang``.

    Built a column at a time (a row-wise ``apply`` took 0.6 s for the 5,000 rows a view may hold).
    """
    lines = [[] for _ in range(len(frame))]  # per row: its "label: value" parts in HOVER_FIELDS order
    for c in HOVER_FIELDS:
        if c not in frame.columns:
            continue
        label = hover_label(c, lang)
        for parts, value in zip(lines, frame[c].tolist(), strict=True):
            if not pd.isna(value) and str(value) != "":
                parts.append(f"{label}: {plotly_text(_fmt(value))}")
    return pd.Series(["<br>".join(parts) for parts in lines], index=frame.index, dtype=object)


#: Columns that tell one engine configuration from another, in the order a series name lists them.
CONFIG_COLUMNS: tuple[str, ...] = (
    "target_model",
    "draft_model",
    "hardware",
    "method",
    "batch_size",
    "compiled",
    "temperature",  # last: _config_parts names it apart
)
_NUMERIC_CONFIG = ("batch_size", "temperature")
MISSING = "(missing)"  #: how a series name shows an empty cell of a column that tells its rows apart


def _cells(frame: pd.DataFrame, name: str) -> list:
    """Cells of column ``name`` as hashable values: floats for numeric columns, None where missing (or blank)."""
    if name in _NUMERIC_CONFIG or name in ("k", "alpha_used", "c_used"):
        return [None if pd.isna(v) else float(v) for v in pd.to_numeric(_col(frame, name), errors="coerce")]
    return [None if pd.isna(v) or (isinstance(v, str) and not v.strip()) else v for v in _col(frame, name)]


def _value_names(values: list, digits: tuple[int, ...]) -> dict:
    """A distinct printed name per distinct value: numbers to the fewest of ``digits`` significant digits that
    keep them apart, text as written, None as :data:`MISSING` (quoted text / 17 digits where names would clash).
    """
    distinct = list(dict.fromkeys(values))
    for d in (*digits, None):
        names = {
            v: MISSING if v is None else (f"{v:.{d or 17}g}" if isinstance(v, float) else (str(v) if d else repr(v)))
            for v in distinct
        }
        if len(set(names.values())) == len(distinct):
            return names
    return names  # unreachable: 17 digits and repr() tell any two distinct values apart


def _config_parts(group: pd.DataFrame) -> list[list[str]]:
    """Per row of ``group`` (the rows of one run and label): the name parts of its configuration.

    ``<column>=<value>`` for each of :data:`CONFIG_COLUMNS` but temperature whose value differs between the
    rows, then ``T=<t>`` wherever the temperature is known. Where no configuration column has a value in any
    row, ``α=<a>, c=<c>`` when the rows cannot be one sweep over K: some K holds two distinct (α, c) pairs
    (one configuration has one α and c per K; the α measured at each K of a sweep differs, so a sweep with
    one row per K stays one series). A missing cell is a value of its own.
    """
    parts: list[list[str]] = [[] for _ in range(len(group))]
    cells = {name: _cells(group, name) for name in CONFIG_COLUMNS}
    for name in CONFIG_COLUMNS[:-1]:
        if len(set(cells[name])) > 1:
            names = _value_names(cells[name], (6,))
            for row, v in zip(parts, cells[name], strict=True):
                row.append(f"{name}={names[v]}")
    if all(v is None for column in cells.values() for v in column):
        alpha, c, k = _cells(group, "alpha_used"), _cells(group, "c_used"), _cells(group, "k")
        if len(set(zip(k, alpha, c, strict=True))) > len(set(k)):  # some K holds two (α, c) pairs
            a_names, c_names = _value_names(alpha, (4, 6)), _value_names(c, (4, 6))
            for row, a, cv in zip(parts, alpha, c, strict=True):
                row.append(f"α={a_names[a]}, c={c_names[cv]}")
    t_names = _value_names(cells["temperature"], (6,))
    for row, t in zip(parts, cells["temperature"], strict=True):
        if t is not None:
            row.append(f"T={t_names[t]}")
    return parts


#: Most rows (runs × K values × configurations) and series one overlay view reads and draws: every
#: series is a few traces in each chart (~50 ms apiece), every row a point with its hover text. At the
#: caps a view takes a few seconds on a 2-core CPU; a larger selection is refused, naming the counts.
MAX_ROWS = 5_000
MAX_SERIES = 64


def _check_overlay(counts: dict, cap: int) -> None:
    """ValueError (a :class:`~specviz.base.i18n.Message`) when the ``counts`` to overlay exceed ``cap``."""
    share.check_work(Phrase("measurements to overlay"), counts, cap, Phrase("select fewer runs"))


def check_rows(n_rows: int) -> None:
    """ValueError naming the count when ``n_rows`` rows are more than one view overlays (:data:`MAX_ROWS`):
    a page calls it with the selected runs' row count before reading them; :func:`with_series` applies it too."""
    _check_overlay({Phrase("rows"): n_rows}, MAX_ROWS)


def with_series(frame: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """Copy of ``frame`` with ``series`` and ``hover`` columns (hover labels in ``lang``).

    A series is one configuration of one run and label. Its key is readable and unique:
    ``#<run_id> <run> · <label> · <column>=<value> · T=<t>``, where the run part appears for library frames
    (``run_id`` / ``run`` columns), the run's name only when it differs from the label, a
    ``<column>=<value>`` part for each configuration column whose value differs within the run and label
    (:data:`CONFIG_COLUMNS`; ``α=<a>, c=<c>`` instead when none of them has a value there and some K holds
    two distinct (α, c) pairs), and ``T=`` wherever the temperature is known. The key is data, not
    markup: the figures escape it.

    Raises ValueError naming the counts when ``frame`` has more than :data:`MAX_ROWS` rows or
    more than :data:`MAX_SERIES` series.
    """
    check_rows(len(frame))
    out = frame.copy()
    run, label = _text(out, "run"), _text(out, "label")
    run_id = [None if pd.isna(v) else int(v) for v in _col(out, "run_id")]
    keys, groups = [], {}
    for i, (rid, r, lab) in enumerate(zip(run_id, run, label, strict=True)):
        parts = [r] if r and r != lab else []
        parts.append(lab)
        if rid is not None:
            parts[0] = f"#{rid} {parts[0]}"
        keys.append(" · ".join(parts))
        groups.setdefault((rid, r, lab), []).append(i)
    for rows in groups.values():
        for i, parts in zip(rows, _config_parts(out.iloc[rows]), strict=True):
            keys[i] = " · ".join([keys[i], *parts])
    _check_overlay({Phrase(N_("series")): len(set(keys))}, MAX_SERIES)
    out["series"] = pd.Series(keys, index=out.index, dtype=object)
    out["hover"] = hover_text(out, lang)
    return out


K_DRAWN_MAX = 512  #: curves and optima stop here, whatever K a row claims (the row's point is still drawn)


def k_top(k_max_measured: int) -> int:
    """Largest K drawn for a series measured up to ``k_max_measured``: two beyond it, at least 8, at most 512."""
    return int(min(K_DRAWN_MAX, max(8, int(k_max_measured) + 2)))


def series_params(frame: pd.DataFrame) -> pd.DataFrame:
    """Per series: α (mean of alpha_used), c (median c_used), v and o (medians, 0 when unknown), K range, K*.

    ``frame`` must have a ``series`` column (:func:`with_series`). Columns of the result:
    series, alpha, c, v, o, has_cost (v or o known), k_min, k_max, n, and the optimum over
    K = 1..:func:`k_top` of the basic and the measured-cost model (theory.optimal_k):
    k_star_basic, s_star_basic, k_star_cost, s_star_cost (NaN where c, or v / o, are unknown).
    """
    rows = []
    for name, g in frame.groupby("series", sort=False):
        v, o = _col(g, "v").astype(float), _col(g, "o").astype(float)
        rows.append(
            {
                "series": name,
                "alpha": float(np.nanmean(g["alpha_used"])) if g["alpha_used"].notna().any() else np.nan,
                "c": float(np.nanmedian(g["c_used"])) if g["c_used"].notna().any() else np.nan,
                "v": float(np.nanmedian(v)) if v.notna().any() else 0.0,
                "o": float(np.nanmedian(o)) if o.notna().any() else 0.0,
                "has_cost": bool(v.notna().any() or o.notna().any()),
                "k_min": int(g["k"].min()),
                "k_max": int(g["k"].max()),
                "n": len(g),
            }
        )
    out = pd.DataFrame(rows, columns=["series", "alpha", "c", "v", "o", "has_cost", "k_min", "k_max", "n"])
    for model in ("basic", "cost"):
        ks, ss = [], []
        for p in out.itertuples(index=False):
            usable = np.isfinite(p.alpha) and np.isfinite(p.c) and (model == "basic" or p.has_cost)
            best = (
                theory.optimal_k(p.alpha, p.c, k_top(p.k_max), *((p.v, p.o) if model == "cost" else ()))
                if usable
                else None
            )
            ks.append(float(best.k) if best else np.nan)
            ss.append(float(best.speedup) if best else np.nan)
        out[f"k_star_{model}"], out[f"s_star_{model}"] = ks, ss
    return out


def curves(params: pd.DataFrame, k_max: int | None = None) -> pd.DataFrame:
    """Theoretical curves over K = 1..k_max for each series of :func:`series_params`.

    Long form: series, k, expected_tokens (E[N] at the series α), speedup_basic (S(α, c, K)),
    speedup_cost (S(α, c, K, v, o); NaN where the series has no v / o). Speedups are NaN where c
    is unknown. ``k_max`` defaults to each series' largest K + 2 (at least 8).
    """
    out = []
    for p in params.itertuples(index=False):
        if np.isnan(p.alpha):
            continue
        ks = np.arange(1, (k_max or k_top(p.k_max)) + 1)  # (n_k,)
        basic = theory.speedup(p.alpha, p.c, ks) if np.isfinite(p.c) else np.full(ks.shape, np.nan)
        cost = (
            theory.speedup(p.alpha, p.c, ks, p.v, p.o) if np.isfinite(p.c) and p.has_cost else np.full(ks.shape, np.nan)
        )
        out.append(
            pd.DataFrame(
                {
                    "series": p.series,
                    "k": ks,
                    "expected_tokens": theory.expected_tokens(p.alpha, ks),
                    "speedup_basic": basic,
                    "speedup_cost": cost,
                }
            )
        )
    cols = ["series", "k", "expected_tokens", "speedup_basic", "speedup_cost"]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)


def per_position(frame: pd.DataFrame) -> pd.DataFrame:
    """Long form of ``per_position_acceptance`` ("a_1;a_2;…"): series, k, position (1-based), a, alpha_used.

    Rows without the column or with an empty cell are left out; "nan" entries are dropped.
    """
    if "per_position_acceptance" not in frame.columns:
        return pd.DataFrame(columns=["series", "k", "position", "a", "alpha_used"])
    out = []
    for _, row in frame.iterrows():
        cell = row["per_position_acceptance"]
        if pd.isna(cell) or not str(cell).strip():
            continue
        values = [float(x) for x in str(cell).split(";")]
        out.extend(
            {"series": row["series"], "k": int(row["k"]), "position": i + 1, "a": a, "alpha_used": row["alpha_used"]}
            for i, a in enumerate(values)
            if not np.isnan(a)
        )
    return pd.DataFrame(out, columns=["series", "k", "position", "a", "alpha_used"])


def n_distribution(table: pd.DataFrame) -> pd.DataFrame:
    """P(N = n) per (series, K): measured, from the per-position rates (a :func:`per_position` table), and
    the chapter's pmf at the series' α.

    The measured rates give P(N > i) = Π_{j ≤ i} a_j (a round yields more than i tokens when its first
    i drafts are accepted), so P(N = n) = P(N > n − 1) − P(N > n), n = 1 … K + 1 (the position means
    over the cell's rows). A (series, K) with a position never measured is left out. Columns: series,
    k, n, measured, chapter.
    """
    rows = []
    for (name, k), g in table.groupby(["series", "k"], sort=False):
        a = g.groupby("position")["a"].mean().reindex(range(1, int(k) + 1))
        if a.isna().any():
            continue
        survive = np.concatenate([[1.0], np.cumprod(np.clip(a.to_numpy(), 0.0, 1.0))])  # P(N > i), i = 0..K
        measured = survive - np.append(survive[1:], 0.0)  # (K + 1,)
        chapter = theory.accepted_length_pmf(float(g["alpha_used"].mean()), int(k))
        rows += [
            {"series": name, "k": int(k), "n": n + 1, "measured": measured[n], "chapter": float(chapter[n])}
            for n in range(int(k) + 1)
        ]
    return pd.DataFrame(rows, columns=["series", "k", "n", "measured", "chapter"])


HEATMAP_SIZE = (121, 97)  #: (α points, c points) of the (α, c) map: smooth, and the figure stays well under 1 MB


def heatmap_grid(k: int, c_used: pd.Series) -> grids.Grid:
    """S(α, c) at draft length ``k`` over α ∈ [0, 1] and a log c axis covering the rows' c (at least 1..100)."""
    c = pd.to_numeric(c_used, errors="coerce").dropna()
    c_lo, c_hi = (min(1.0, c.min() / 2), max(100.0, c.max() * 2)) if len(c) else (1.0, 100.0)
    return grids.speedup_alpha_c_grid(
        grids.lin_axis(0.0, 1.0, HEATMAP_SIZE[0], "alpha"),
        grids.log_axis(c_lo, c_hi, HEATMAP_SIZE[1], "c"),
        "c",
        k,
        0.0,
        0.0,
    )


def _vocab(name) -> int | None:
    """A catalogue model's vocabulary size (None: not in the catalogue)."""
    from specviz.core import hardware

    try:
        return int(hardware.model_spec(str(name))["vocab_size"]) if isinstance(name, str) and name else None
    except (ValueError, KeyError, TypeError):
        return None


def _only(values: pd.Series):
    """The one value a column holds over a series' rows (None where it holds none or several)."""
    found = values.dropna().astype(str).str.strip()
    found = found[found != ""].unique()
    return found[0] if len(found) == 1 else None


def series_conditions(frame: pd.DataFrame) -> pd.DataFrame:
    """Per series (``with_series`` rows): target, draft, method, K, temperature, domain, context, α and E[N].

    α is the mean of alpha_used; K, temperature, models, method and domain are given where the series
    has one value; context is the median of :func:`specviz.core.acceptance.row_context`.
    """
    from specviz.core import acceptance

    context = acceptance.row_context(frame)
    out = []
    for name, g in frame.groupby("series", sort=False):
        k = pd.to_numeric(g["k"], errors="coerce").dropna().unique()
        temps = pd.to_numeric(g.get("temperature", pd.Series(dtype=float)), errors="coerce").dropna().unique()
        mean = pd.to_numeric(g.get("mean_accepted_tokens", pd.Series(dtype=float)), errors="coerce")
        out.append(
            {
                "series": name,
                "target": _only(g.get("target_model", pd.Series(dtype=object))),
                "draft": _only(g.get("draft_model", pd.Series(dtype=object))),
                "method": _only(g.get("method", pd.Series(dtype=object))),
                "k": int(k[0]) if len(k) == 1 else None,
                "temperature": float(temps[0]) if len(temps) == 1 else None,
                "domain": _only(g.get("domain", pd.Series(dtype=object))),
                "context_length": float(context[g.index].median()) if context[g.index].notna().any() else None,
                "alpha": float(pd.to_numeric(g["alpha_used"], errors="coerce").mean()),
                "mean_accepted_tokens": float(mean.mean()) if mean.notna().any() else None,
            }
        )
    return pd.DataFrame(out)


def reference_comparison(frame: pd.DataFrame, reference: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """Each series with a target beside the published rows of that target (closest first, at most 8 each):
    both α and E[N], the ratio of α, and the differences that usually explain a gap (in ``lang``)."""
    from specviz.core import acceptance

    rows = []
    for _, run in series_conditions(frame).iterrows():
        if not run["target"]:
            continue
        for _, ref in (
            acceptance.matching_reference(reference, run["target"], run["draft"] or "", run["method"] or "")
            .head(8)
            .iterrows()
        ):
            reasons = acceptance.gap_reasons(run.to_dict(), ref.to_dict(), _vocab)
            rows.append(
                {
                    "series": run["series"],
                    "alpha": run["alpha"],
                    "published_alpha": ref["alpha"],
                    "alpha_ratio": run["alpha"] / ref["alpha"] if ref["alpha"] > 0 else np.nan,
                    "mean_accepted_tokens": run["mean_accepted_tokens"],
                    "published_tokens": ref["mean_accepted_tokens"],
                    "published_k": int(ref["k"]),
                    "published_draft": ref["draft"] or ref["method"],
                    "dataset": ref["dataset"],
                    "published_temperature": ref["temperature"],
                    "differences": "; ".join(r.text(lang) for r in reasons),
                    "source": ref["source"],
                }
            )
    return pd.DataFrame(rows)

"""Measured data: add benchmark files to the shared run library and see them over the theory."""

import hashlib
from pathlib import Path

import numpy as np
import streamlit as st

from specviz.app import figures, overlays, router, ui
from specviz.app.share import Param, by_key
from specviz.base import hosting
from specviz.data import measurements, store

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "measured", "measured-data"
FORMATS = {"auto": "detect"} | {name: measurements.READERS[name].title for name in sorted(measurements.READERS)}
PASTED = "pasted text"  # the pasted input's name as stored (a run's source); shown as md.pasted_text
SPEC = (  # shared in the URL
    Param("runs", [], "ints", 1, 2**63 - 1),
    Param("filter", "", "text", hi=200),
    Param("hk", 0, "int", 0, 64),
)
OPTIONS = (  # how staged files are read: not in the URL (a link does not carry the files either)
    Param("format", "auto", "choice", choices=tuple(FORMATS)),
    Param("k_given", 0, "int", 0, 4096),
    Param("no_bonus", False, "bool"),
)
P = by_key(SPEC + OPTIONS)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def format_label(fmt: str) -> str:
    """A reader's title (or "detect") in the session's language; the choice itself stays the reader's name."""
    return ui.t("md.format.auto") if fmt == "auto" else ui.message(measurements.READERS[fmt].title)


def sample_label(name: str) -> str:
    """A sample file's name and what it is, in the session's language."""
    return f"{name} — {ui.message(measurements.SAMPLES[name])}"


def shown_name(name: str) -> str:
    """An input's name as shown: the pasted text's in the session's language, a file's as it is."""
    return ui.t("md.pasted_text") if name == PASTED else name


@ui.parsed_upload(max_entries=8, ttl=15 * 60)  # an upload's frame (up to 200,000 rows) kept while it is previewed
def parse(data: bytes, name: str, fmt: str, k: int, no_bonus: bool):
    """load_measurements, cached by content and options (k = 0: not given)."""
    return measurements.load_measurements(data, name=name, format=fmt, k=k or None, mean_tokens_without_bonus=no_bonus)


heatmap_grid = ui.cached(overlays.heatmap_grid)


def staged_inputs() -> list[tuple[str, bytes]]:
    """(name, content) of every uploaded file, the pasted text and the loaded sample; identical contents once."""
    items = [(f.name, f.getvalue()) for f in st.session_state.get(key("files")) or []]
    if st.session_state.get(key("paste"), "").strip():
        items.append((PASTED, st.session_state[key("paste")].encode("utf-8")))
    sample = st.session_state.get(key("sample_loaded"))
    if sample:
        items.append((sample, (measurements.SAMPLES_DIR / sample).read_bytes()))
    unique: dict[bytes, tuple[str, bytes]] = {}
    for name, data in items:
        if data in unique:
            st.caption(
                ui.t("md.same_content", name=ui.plain(shown_name(name)), other=ui.plain(shown_name(unique[data][0])))
            )
        else:
            unique[data] = (name, data)
    return list(unique.values())


ERROR_COLUMNS = ("row", "column", "file header", "value", "allowed")  #: the row-error table's columns


def show_report(report: measurements.LoadReport) -> None:
    """How the file was read: mapping, conversions, warnings, and the rows that were skipped."""
    st.caption(ui.plain(ui.message(report.headline)))
    if report.mapped:
        st.info(
            ui.t("md.mapped", pairs=", ".join(f"`{a}` → `{b}`" for a, b in report.mapped.items())),
            icon=":material/swap_horiz:",
        )
    for line in (
        ui.message(report.conversions_text),
        ui.message(report.ignored_text),
        *(ui.t("md.warning_line", warning=ui.message(w)) for w in report.warnings),
    ):
        if line:
            st.caption(ui.plain(line))
    if report.row_errors:
        st.warning(
            ui.t("md.bad_cells", cells=len(report.row_errors), rows=report.rows_skipped),
            icon=":material/rule:",
        )
        st.dataframe(
            [
                {
                    "row": e.row,
                    "column": e.column,
                    "file header": e.header or e.column,
                    "value": e.value,
                    "allowed": ui.message(e.allowed),
                }
                for e in report.row_errors[:500]
            ],
            hide_index=True,
            width="stretch",
            column_config={c: ui.t(f"md.err.{c.replace(' ', '_')}") for c in ERROR_COLUMNS},
        )


def select_next(run_ids: list[int]) -> None:
    """Select ``run_ids`` from the next run on (a widget's state cannot change once it is drawn)."""
    st.session_state[key("runs_next")] = run_ids
    st.rerun()


def add_section(engine, runs) -> None:
    """Upload / paste / sample → preview with the mapping and row errors → save as a run (``runs``: the library)."""
    st.subheader(ui.t("md.add"))
    left, right = st.columns([3, 2])
    left.file_uploader(
        ui.t("md.files"),
        accept_multiple_files=True,
        type=["csv", "tsv", "txt", "jsonl", "json", "log"],
        key=key("files"),
    )
    left.text_area(ui.t("md.paste"), key=key("paste"), height=100)
    with right:
        ui.selectbox(PAGE, P["format"], ui.t("md.format"), format_func=format_label)
        ui.number_input(
            PAGE,
            P["k_given"],
            ui.t("md.k_given"),
            help=ui.t("md.k_given_help"),
        )
        st.checkbox(
            ui.t("md.no_bonus"),
            key=key("no_bonus"),
            help=ui.t("md.no_bonus_help"),
        )
    samples = measurements.available_samples()
    if samples:
        sample = right.selectbox(
            ui.t("md.samples"), tuple(samples), format_func=ui.session_language(sample_label), key=key("sample")
        )
        if right.button(ui.t("md.load_sample"), icon=":material/dataset:"):
            st.session_state[key("sample_loaded")] = sample
    right.download_button(
        ui.t("md.template"),
        measurements.template_csv(),
        "specviz_template.csv",
        "text/csv",
        icon=":material/download:",
    )

    options = (st.session_state[key("format")], st.session_state[key("k_given")], st.session_state[key("no_bonus")])
    existing = set(runs["id"]) if runs is not None else set()
    for name, data in staged_inputs():
        digest = hashlib.sha256(data + repr(options).encode()).hexdigest()[:16]  # content and how it is read
        with st.container(border=True):
            st.markdown(f"**{ui.plain(shown_name(name))}**")
            try:
                frame, report = parse(
                    data,
                    shown_name(name),
                    st.session_state[key("format")],
                    st.session_state[key("k_given")],
                    st.session_state[key("no_bonus")],
                )
            except ValueError as exc:
                ui.show_error(exc)
                continue
            show_report(report)
            st.dataframe(frame.head(200), width="stretch")
            saved = st.session_state.setdefault(key("saved"), {})
            if digest in saved and saved[digest] not in existing:
                del saved[digest]  # deleted since: it may be saved again
            if digest in saved:
                st.success(ui.t("md.saved", run=saved[digest]), icon=":material/check_circle:")
                continue
            if engine is None:
                continue
            labels = frame["label"].dropna().unique()
            c1, c2, c3 = st.columns([2, 3, 1], vertical_alignment="bottom")
            run_name = c1.text_input(
                ui.t("md.run_name"),
                value=labels[0] if len(labels) == 1 else Path(shown_name(name)).stem,
                key=key(f"name.{digest}"),  # no max_chars: the store names its limit (a longer paste is not dropped)
            )
            note = c2.text_input(ui.t("md.note"), key=key(f"note.{digest}"))
            if c3.button(ui.t("md.save"), key=key(f"save.{digest}"), type="primary", icon=":material/save:"):
                try:
                    run_id = store.save_run(
                        engine, frame, label=run_name, source=name, note=note, report=report.summary()
                    )
                except ValueError as exc:
                    ui.show_error(exc)
                else:
                    saved[digest] = run_id
                    select_next(sorted({*st.session_state[key("runs")], run_id}))


#: The library table's columns (store.list_runs) with a header in the catalogue (md.col.*).
LIBRARY_COLUMNS = ("id", "label", "source", "note", "n_rows", "target_model", "draft_model", "hardware", "method")


def library_section(engine, runs) -> None:
    """The stored runs (``runs``, from store.list_runs) with filters, the selection to plot, export and delete."""
    st.subheader(ui.t("md.library"))
    gone = [i for i in st.session_state[key("runs")] if i not in set(runs["id"])]
    if gone:
        st.warning(
            ui.t("md.gone", ids=", ".join(f"#{i}" for i in gone)),
            icon=":material/warning:",
        )
        st.session_state[key("runs")] = [i for i in st.session_state[key("runs")] if i not in gone]
    if runs.empty:
        st.info(ui.t("md.empty"), icon=":material/inventory_2:")
        return
    c1, c2, c3, c4 = st.columns(4)
    ui.text_box(PAGE, P["filter"], ui.t("md.filter"), container=c1)
    facets = {}
    for col, facet in zip((c2, c3, c4), ("target_model", "hardware", "method"), strict=True):
        values = sorted({v for cell in runs[facet] for v in cell.split(", ") if v})
        facets[facet] = col.multiselect(ui.t(f"md.facet.{facet}"), values, key=key(f"facet.{facet}"))
    shown = runs
    text = st.session_state[key("filter")].strip().lower()
    if text:
        hay = runs[["label", "target_model", "draft_model", "hardware", "method", "source"]].agg(" ".join, axis=1)
        shown = shown[hay.str.lower().str.contains(text, regex=False)]
    for facet, chosen in facets.items():
        if chosen:
            shown = shown[shown[facet].map(lambda cell, c=chosen: any(v in cell.split(", ") for v in c))]
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={c: ui.t(f"md.col.{c}") for c in LIBRARY_COLUMNS}
        | {"uploaded_at": st.column_config.DatetimeColumn(ui.t("md.col.uploaded_at"))},
    )
    label_of = dict(zip(runs["id"], runs["label"], strict=True))
    options = list(dict.fromkeys([*st.session_state[key("runs")], *shown["id"]]))
    ui.multiselect(
        PAGE,
        P["runs"],
        ui.t("md.runs"),
        options,
        format_func=lambda i: f"#{i} {label_of[i]}",
        placeholder=ui.t("md.runs_placeholder"),
    )
    selected = st.session_state[key("runs")]
    if selected:
        c1, c2, _ = st.columns([1, 1, 2])
        c1.download_button(  # the CSV is built when clicked, not on every run (a large run takes seconds)
            ui.t("md.export"),
            lambda ids=tuple(selected): store.export_csv(ui.load_runs(engine, runs, ids)),
            "specviz_runs.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
        )
        if c2.button(ui.t("md.delete"), icon=":material/delete:"):
            st.session_state[key("confirm_delete")] = list(selected)
    pending = st.session_state.get(key("confirm_delete"))
    if pending:
        names = ", ".join(f"#{i} {ui.plain(label_of.get(i, '?'))}" for i in pending)
        st.warning(
            ui.t("md.confirm_delete", n=len(pending), names=names),
            icon=":material/warning:",
        )
        yes, no, _ = st.columns([1, 1, 4])
        if yes.button(ui.t("md.delete_yes"), type="primary", key=key("delete_yes")):
            deleted = ui.delete_runs(engine, pending)
            st.session_state[key("confirm_delete")] = None
            st.toast(ui.t("md.deleted", n=deleted))
            select_next([i for i in selected if i not in pending])
        if no.button(ui.t("md.cancel"), key=key("delete_no")):
            st.session_state[key("confirm_delete")] = None
            st.rerun()


def overlay_points(frame):
    """The runs' points (``overlays.with_series``) and their per-position table: the slow steps of a view."""
    points = overlays.with_series(frame)
    return points, overlays.per_position(points)


#: Columns of the series table (overlays.series_params) with a header in the catalogue (md.scol.*); c, v, o are symbols.
SERIES_COLUMNS = ("series", "alpha", "has_cost", "k_min", "k_max", "n")


def overlay_section(engine, runs) -> None:
    """The selected runs over the theory (``runs``: the library listing, which gives each run's row count)."""
    selected = st.session_state[key("runs")]
    st.subheader(ui.t("md.overlay"))
    if not selected:
        st.info(ui.t("md.select_runs"), icon=":material/touch_app:")
        return
    n_rows = int(runs.set_index("id").loc[selected, "n_rows"].sum())  # refuse before reading them
    overlays.check_rows(n_rows)
    points, per_position = ui.derived_runs(engine, runs, selected, overlay_points)
    points = points.assign(
        hover=overlays.hover_text(points, lang=ui.language())
    )  # the cached points' hovers are English
    params = overlays.series_params(points)
    curves = overlays.curves(params)
    st.caption(ui.t("md.series_caption"))
    st.dataframe(
        params,
        hide_index=True,
        width="stretch",
        column_config={c: ui.t(f"md.scol.{c}") for c in SERIES_COLUMNS if c in params.columns},
    )
    tab_s, tab_map, tab_n, tab_parity, tab_pos = st.tabs(
        [ui.t(f"md.tab.{t}") for t in ("speedup", "map", "tokens", "parity", "position")]
    )
    with tab_s:
        if points["speedup"].notna().any():
            ui.chart(figures.overlay_speedup_vs_k(points, curves, params, lang=ui.language()), width="stretch")
        else:
            st.info(ui.t("md.no_speedup"))
        if params["c"].isna().any():
            st.caption(ui.t("md.no_c_curve"))
    with tab_map:
        ks = points["k"].astype(int)
        hk = st.session_state[key("hk")] or int(ks.mode().iloc[0])
        ui.number_input(PAGE, P["hk"], ui.t("md.hk"))
        ui.chart(
            figures.overlay_alpha_c(heatmap_grid(hk, points["c_used"]), points, hk, lang=ui.language()), width="stretch"
        )
        if points["c_used"].isna().all():
            st.caption(ui.t("md.no_c_map"))
    with tab_n:
        ui.chart(figures.overlay_expected_tokens(points, curves, params, lang=ui.language()), width="stretch")
    with tab_parity:
        if points["speedup"].notna().any() and points["predicted_speedup"].notna().any():
            ui.chart(figures.parity(points, lang=ui.language()), width="stretch")
            ratio = points["speedup_ratio"].dropna()
            st.caption(ui.t("md.parity_caption", median=f"{np.median(ratio):.2f}", n=len(ratio)))
        else:
            st.info(ui.t("md.no_parity"))
    with tab_pos:
        if len(per_position):
            ui.chart(figures.per_position_figure(per_position, lang=ui.language()), width="stretch")
        else:
            st.info(ui.t("md.no_positions"))


st.title(ui.t("md.title"))
st.caption(ui.t("md.intro"))
ui.restore(PAGE, SPEC)
for option in OPTIONS:
    st.session_state.setdefault(key(option.key), option.default)
if key("runs_next") in st.session_state:
    st.session_state[key("runs")] = st.session_state.pop(key("runs_next"))
if (misspelt := hosting.hosted_problem()) is not None:  # read as hosted mode: the library's location is hidden
    st.warning(ui.plain(ui.message(misspelt)), icon=":material/warning:")
library, runs = ui.library(), None
if library is not None:
    try:
        runs = ui.library_runs(library)
    except ValueError as exc:  # the library went away: files can still be checked, not saved
        ui.show_error(exc)
        library = None
add_section(library, runs)
if library is not None:
    with ui.reported_errors():  # e.g. a run deleted by someone else meanwhile
        library_section(library, runs)
        overlay_section(library, runs)
ui.publish(PAGE, SPEC, URL)

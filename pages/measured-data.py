"""Measured data: add benchmark files to the shared run library and see them over the theory."""

import hashlib
from pathlib import Path

import numpy as np
import streamlit as st

from specviz import figures, measurements, overlays, share, store, ui
from specviz.share import Param, by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

PAGE, URL = "measured", "measured-data"
FORMATS = {"auto": "detect"} | {name: measurements.READERS[name].title for name in sorted(measurements.READERS)}
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


@ui.cached(max_entries=8, ttl=15 * 60)  # an upload's frame (up to 200,000 rows) kept while it is previewed
def parse(data: bytes, name: str, fmt: str, k: int, no_bonus: bool):
    """load_measurements, cached by content and options (k = 0: not given)."""
    return measurements.load_measurements(data, name=name, format=fmt, k=k or None, mean_tokens_without_bonus=no_bonus)


heatmap_grid = ui.cached(overlays.heatmap_grid)


def staged_inputs() -> list[tuple[str, bytes]]:
    """(name, content) of every uploaded file, the pasted text and the loaded sample; identical contents once."""
    items = [(f.name, f.getvalue()) for f in st.session_state.get(key("files")) or []]
    if st.session_state.get(key("paste"), "").strip():
        items.append(("pasted text", st.session_state[key("paste")].encode("utf-8")))
    sample = st.session_state.get(key("sample_loaded"))
    if sample:
        items.append((sample, (measurements.SAMPLES_DIR / sample).read_bytes()))
    unique: dict[bytes, tuple[str, bytes]] = {}
    for name, data in items:
        if data in unique:
            st.caption(f"{ui.plain(name)} has the same content as {ui.plain(unique[data][0])}; shown once.")
        else:
            unique[data] = (name, data)
    return list(unique.values())


def show_report(report: measurements.LoadReport) -> None:
    """How the file was read: mapping, conversions, warnings, and the rows that were skipped."""
    st.caption(ui.plain(report.headline))
    if report.mapped:
        st.info(
            "Mapped columns: " + ", ".join(f"`{a}` → `{b}`" for a, b in report.mapped.items()),
            icon=":material/swap_horiz:",
        )
    for line in (report.conversions_text, report.ignored_text, *(f"Warning: {w}" for w in report.warnings)):
        if line:
            st.caption(ui.plain(line))
    if report.row_errors:
        st.warning(
            f"{len(report.row_errors)} bad cell(s) in {report.rows_skipped} row(s); those rows are skipped, "
            "the others load.",
            icon=":material/rule:",
        )
        st.dataframe(
            [
                {
                    "row": e.row,
                    "column": e.column,
                    "file header": e.header or e.column,
                    "value": e.value,
                    "allowed": e.allowed,
                }
                for e in report.row_errors[:500]
            ],
            hide_index=True,
            width="stretch",
        )


def select_next(run_ids: list[int]) -> None:
    """Select ``run_ids`` from the next run on (a widget's state cannot change once it is drawn)."""
    st.session_state[key("runs_next")] = run_ids
    st.rerun()


def add_section(engine, runs) -> None:
    """Upload / paste / sample → preview with the mapping and row errors → save as a run (``runs``: the library)."""
    st.subheader("Add measurements")
    left, right = st.columns([3, 2])
    left.file_uploader(
        "Benchmark files (CSV, Spec-Bench .jsonl, vLLM logs)",
        accept_multiple_files=True,
        type=["csv", "tsv", "txt", "jsonl", "json", "log"],
        key=key("files"),
    )
    left.text_area(
        "…or paste text (a CSV, JSON lines, or vLLM 'SpecDecoding metrics' log lines)", key=key("paste"), height=100
    )
    with right:
        ui.selectbox(PAGE, P["format"], "Format", format_func=FORMATS.get)
        ui.number_input(
            PAGE,
            P["k_given"],
            "K for files that do not state it (0 = not given)",
            help="vLLM log lines and Spec-Bench output do not record the draft length.",
        )
        st.checkbox(
            "Mean acceptance length excludes the bonus token",
            key=key("no_bonus"),
            help="Some engines report accepted draft tokens per round (E[N] − 1); 1 is then added.",
        )
    samples = measurements.available_samples()
    if samples:
        sample = right.selectbox(
            "Sample files", tuple(samples), format_func=lambda s: f"{s} — {samples[s]}", key=key("sample")
        )
        if right.button("Load this sample", icon=":material/dataset:"):
            st.session_state[key("sample_loaded")] = sample
    right.download_button(
        "Download the CSV template",
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
            st.markdown(f"**{ui.plain(name)}**")
            try:
                frame, report = parse(
                    data,
                    name,
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
                st.success(f"Saved as run #{saved[digest]}.", icon=":material/check_circle:")
                continue
            if engine is None:
                continue
            labels = frame["label"].dropna().unique()
            c1, c2, c3 = st.columns([2, 3, 1], vertical_alignment="bottom")
            run_name = c1.text_input(
                "Run name",
                value=labels[0] if len(labels) == 1 else Path(name).stem,
                key=key(f"name.{digest}"),
                max_chars=200,
            )
            note = c2.text_input("Note (optional)", key=key(f"note.{digest}"))
            if c3.button("Save to library", key=key(f"save.{digest}"), type="primary", icon=":material/save:"):
                try:
                    run_id = store.save_run(
                        engine, frame, label=run_name, source=name, note=note, report=report.summary()
                    )
                except ValueError as exc:
                    ui.show_error(exc)
                else:
                    saved[digest] = run_id
                    select_next(sorted({*st.session_state[key("runs")], run_id}))


def library_section(engine, runs) -> None:
    """The stored runs (``runs``, from store.list_runs) with filters, the selection to plot, export and delete."""
    st.subheader("Run library")
    gone = [i for i in st.session_state[key("runs")] if i not in set(runs["id"])]
    if gone:
        st.warning(
            f"Run(s) {', '.join(f'#{i}' for i in gone)} are not in the library (deleted, or a link from "
            "another library); they are left out.",
            icon=":material/warning:",
        )
        st.session_state[key("runs")] = [i for i in st.session_state[key("runs")] if i not in gone]
    if runs.empty:
        st.info("The library is empty: add a file above, or load a sample.", icon=":material/inventory_2:")
        return
    c1, c2, c3, c4 = st.columns(4)
    c1.text_input("Filter by label, model, hardware or method", key=key("filter"), max_chars=int(P["filter"].hi))
    facets = {}
    for col, facet in zip((c2, c3, c4), ("target_model", "hardware", "method"), strict=True):
        values = sorted({v for cell in runs[facet] for v in cell.split(", ") if v})
        facets[facet] = col.multiselect(facet.replace("_", " "), values, key=key(f"facet.{facet}"))
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
        column_config={"uploaded_at": st.column_config.DatetimeColumn("uploaded (UTC)")},
    )
    label_of = dict(zip(runs["id"], runs["label"], strict=True))
    options = list(dict.fromkeys([*st.session_state[key("runs")], *shown["id"]]))
    ui.multiselect(
        PAGE,
        P["runs"],
        "Runs to plot",
        options,
        format_func=lambda i: f"#{i} {label_of[i]}",
        placeholder="Choose runs to overlay on the theory",
    )
    selected = st.session_state[key("runs")]
    if selected:
        c1, c2, _ = st.columns([1, 1, 2])
        c1.download_button(  # the CSV is built when clicked, not on every run (a large run takes seconds)
            "Export the selected runs (CSV)",
            lambda ids=tuple(selected): store.export_csv(ui.load_runs(engine, runs, ids)),
            "specviz_runs.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
        )
        if c2.button("Delete the selected runs…", icon=":material/delete:"):
            st.session_state[key("confirm_delete")] = list(selected)
    pending = st.session_state.get(key("confirm_delete"))
    if pending:
        names = ", ".join(f"#{i} {ui.plain(label_of.get(i, '?'))}" for i in pending)
        st.warning(
            f"Delete {len(pending)} run(s) ({names}) for everyone using this library? This cannot be undone.",
            icon=":material/warning:",
        )
        yes, no, _ = st.columns([1, 1, 4])
        if yes.button("Yes, delete", type="primary", key=key("delete_yes")):
            deleted = ui.delete_runs(engine, pending)
            st.session_state[key("confirm_delete")] = None
            st.toast(f"Deleted {deleted} run(s).")
            select_next([i for i in selected if i not in pending])
        if no.button("Cancel", key=key("delete_no")):
            st.session_state[key("confirm_delete")] = None
            st.rerun()


def overlay_points(frame):
    """The runs' points (``overlays.with_series``) and their per-position table: the slow steps of a view."""
    points = overlays.with_series(frame)
    return points, overlays.per_position(points)


def overlay_section(engine, runs) -> None:
    """The selected runs over the theory (``runs``: the library listing, which gives each run's row count)."""
    selected = st.session_state[key("runs")]
    st.subheader("Measurements over the theory")
    if not selected:
        st.info("Select runs in the library to see them on the curves.", icon=":material/touch_app:")
        return
    n_rows = int(runs.set_index("id").loc[selected, "n_rows"].sum())  # refuse before reading them
    share.check_work("measurements to overlay", {"rows": n_rows}, overlays.MAX_ROWS, "select fewer runs")
    points, per_position = ui.derived_runs(engine, runs, selected, overlay_points)
    params = overlays.series_params(points)
    curves = overlays.curves(params)
    st.caption(
        "One series per configuration: run, label, and every model, hardware, method, batch size or "
        "temperature that differs within them. Its curves use the series' α (mean of the α used per "
        "row) and c (median); the dashed curve adds the measured verify cost v and overhead o."
    )
    st.dataframe(params, hide_index=True, width="stretch")
    tab_s, tab_map, tab_n, tab_parity, tab_pos = st.tabs(
        ["Speedup vs K", "(α, c) map", "E[N] vs K", "Measured vs predicted", "Per position"]
    )
    with tab_s:
        if points["speedup"].notna().any():
            st.plotly_chart(figures.overlay_speedup_vs_k(points, curves, params), width="stretch")
        else:
            st.info("None of the selected rows has a measured speedup.")
        if params["c"].isna().any():
            st.caption("Series without c (no c, c_L or draft/target times) have no theoretical speedup curve.")
    with tab_map:
        ks = points["k"].astype(int)
        hk = st.session_state[key("hk")] or int(ks.mode().iloc[0])
        ui.number_input(PAGE, P["hk"], "K of the heatmap (0 = the most common K of the selection)")
        st.plotly_chart(figures.overlay_alpha_c(heatmap_grid(hk, points["c_used"]), points, hk), width="stretch")
        if points["c_used"].isna().all():
            st.caption("No selected row has a c, so no point can be placed on this map.")
    with tab_n:
        st.plotly_chart(figures.overlay_expected_tokens(points, curves, params), width="stretch")
    with tab_parity:
        if points["speedup"].notna().any() and points["predicted_speedup"].notna().any():
            st.plotly_chart(figures.parity(points), width="stretch")
            ratio = points["speedup_ratio"].dropna()
            st.caption(
                f"Measured ÷ basic-model prediction: median {np.median(ratio):.2f} over {len(ratio)} row(s). "
                "Below 1 usually means verifying K + 1 tokens costs more than one step (v), acceptance "
                "falls with position, or a fixed per-round overhead (o)."
            )
        else:
            st.info("A parity plot needs rows with both a measured speedup and a c (for the prediction).")
    with tab_pos:
        if len(per_position):
            st.plotly_chart(figures.per_position_figure(per_position), width="stretch")
        else:
            st.info("None of the selected rows has per-position acceptance.")


st.title("Measured data")
st.caption(
    "Upload benchmark results from any engine, keep them in the team's run library, and see where they "
    "fall on the theory. Files are validated row by row; column names of vLLM, SGLang, llama.cpp, "
    "TensorRT-LLM, HF transformers and Spec-Bench are understood."
)
ui.restore(PAGE, SPEC)
for option in OPTIONS:
    st.session_state.setdefault(key(option.key), option.default)
if key("runs_next") in st.session_state:
    st.session_state[key("runs")] = st.session_state.pop(key("runs_next"))
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

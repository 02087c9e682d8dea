"""Run library: add benchmark files to the team's shared run library, browse, export and trash runs."""

import hashlib
from pathlib import Path

import streamlit as st

from specviz.app import measured, router, ui
from specviz.app.measured.selection import keep_listed, key, left_the_trash, pick_runs, select_next, start
from specviz.base import settings
from specviz.base.i18n import N_, plural
from specviz.data import measurements, store

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

URL = measured.LIBRARY
SAVED_BY = ui.Col(N_("saved by"), missing=N_("saved with no one signed in"))
PASTED = "pasted text"  # the pasted input's name as stored (a run's source); shown as md.pasted_text


def format_label(fmt: str) -> str:
    """A reader's title (or "detect") in the session's language; the choice itself stays the reader's name."""
    return ui.t("detect") if fmt == "auto" else ui.message(measurements.READERS[fmt].title)


def sample_label(name: str) -> str:
    """A sample file's name and what it is, in the session's language."""
    return f"{name} — {ui.message(measurements.SAMPLES[name])}"


def shown_name(name: str) -> str:
    """An input's name as shown: the pasted text's in the session's language, a file's as it is."""
    return ui.t("pasted text") if name == PASTED else name


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
                ui.t(
                    "{name} has the same content as {other}; shown once.",
                    name=ui.plain(shown_name(name)),
                    other=ui.plain(shown_name(unique[data][0])),
                )
            )
        else:
            unique[data] = (name, data)
    return list(unique.values())


def add_section(engine, runs, view: measured.LibraryView) -> None:
    """Upload / paste / sample → preview with the mapping and row errors → save as a run (``runs``: the library)."""
    st.subheader(ui.t("Add measurements"))
    left, right = st.columns([3, 2])
    ui.file_uploader(
        ui.t("Benchmark files (CSV, Spec-Bench .jsonl, vLLM logs)"),
        ["csv", "tsv", "txt", "jsonl", "json", "log"],
        key=key("files"),
        container=left,
        accept_multiple_files=True,
    )
    left.text_area(
        ui.t("…or paste text (a CSV, JSON lines, or vLLM 'SpecDecoding metrics' log lines)"),
        key=key("paste"),
        height=100,
    )
    with right:
        ui.selectbox(measured.PAGE, measured.P["format"], format_func=format_label)
        ui.number_input(
            measured.PAGE,
            measured.P["k_given"],
            help=ui.t("vLLM log lines and Spec-Bench output do not record the draft length."),
        )
        ui.checkbox(
            measured.PAGE,
            measured.P["no_bonus"],
            help=ui.t("Some serving stacks report accepted draft tokens per round (E[N] − 1); 1 is then added."),
        )
    if "sample" in measured.P:
        with right:
            sample = ui.selectbox(measured.PAGE, measured.P["sample"], format_func=sample_label)
        if right.button(ui.t("Load this sample"), icon=":material/dataset:"):
            st.session_state[key("sample_loaded")] = sample
    right.download_button(
        ui.t("Download the CSV template"),
        measurements.template_csv(),
        "specviz_template.csv",
        "text/csv",
        icon=":material/download:",
    )

    options = (view.read.format, view.read.k_given, view.read.no_bonus)
    existing = set(runs["id"]) if runs is not None else set()
    for name, data in staged_inputs():
        digest = hashlib.sha256(data + repr(options).encode()).hexdigest()[:16]  # content and how it is read
        with st.container(border=True):
            st.markdown(f"**{ui.plain(shown_name(name))}**")
            try:
                frame, report = measured.parse(data, shown_name(name), view.read)
            except ValueError as exc:
                measured.show_refusal(exc)
                continue
            measured.show_report(report)
            ui.table(
                frame.head(200), {c: ui.Col(missing=N_("not in the file")) for c in frame.columns}, keep_names=True
            )
            saved = st.session_state.setdefault(key("saved"), {})
            if digest in saved and saved[digest] not in existing:
                del saved[digest]  # deleted since: it may be saved again
            if digest in saved:
                st.success(ui.t("Saved as run #{run}.", run=saved[digest]), icon=":material/check_circle:")
                continue
            if engine is None:
                continue
            if (why := ui.refusal(WHO, "save")) is not None:
                st.caption(why)
                continue
            labels = frame["label"].dropna().unique()
            c1, c2, c3 = st.columns([2, 3, 1], vertical_alignment="bottom")
            run_name = c1.text_input(
                ui.t("Run name"),
                value=labels[0] if len(labels) == 1 else Path(shown_name(name)).stem,
                key=key(f"name.{digest}"),  # no max_chars: the store names its limit (a longer paste is not dropped)
            )
            note = c2.text_input(ui.t("Note (optional)"), key=key(f"note.{digest}"))
            if c3.button(ui.t("Save to library"), key=key(f"save.{digest}"), type="primary", icon=":material/save:"):
                try:
                    run_id = store.save_run(
                        engine,
                        frame,
                        label=run_name,
                        source=name,
                        note=note,
                        report=report.summary(),
                        who=WHO,
                        page=URL,
                    )
                except ValueError as exc:
                    ui.show_error(exc)
                else:
                    saved[digest] = run_id
                    select_next(sorted({*st.session_state[key("runs")], run_id}))


def edit_run(engine, run, run_id: int) -> None:
    """Rename the one selected run or change its note: its owner, or an admin (the library checks it)."""
    if ui.refusal(WHO, "edit", run["created_by"]) is not None:
        return
    # what the form started from: saved over by someone else meanwhile, the save is refused, saying so
    seen = st.session_state.setdefault(key(f"edit_seen.{run_id}"), {"label": run["label"], "note": run["note"]})
    with st.expander(ui.t("Rename run #{id} or change its note", id=run_id), icon=":material/edit:"):
        name = st.text_input(ui.t("Run name"), value=run["label"], key=key(f"edit_name.{run_id}"))
        note = st.text_input(ui.t("Note (optional)"), value=run["note"], key=key(f"edit_note.{run_id}"))
        if st.button(ui.t("Save the changes"), key=key(f"edit_save.{run_id}"), icon=":material/save:"):
            try:
                store.edit_run(engine, run_id, label=name, note=note, seen=seen, who=WHO, page=URL)
            except ValueError as exc:
                del st.session_state[key(f"edit_seen.{run_id}")]  # the next save starts from what is there now
                ui.show_error(exc)
                return
            del st.session_state[key(f"edit_seen.{run_id}")]
            st.toast(ui.t("Run #{id} changed.", id=run_id))
            select_next([run_id])


def trash_section(engine) -> None:
    """The trash: runs moved there, restorable by their owner or an admin, purged by an admin."""
    trash = store.list_trash(engine)
    left_the_trash(engine, trash["id"])
    with st.expander(ui.t("Trash ({n})", n=len(trash)), icon=":material/delete:"):
        if trash.empty:
            st.caption(ui.t("The trash is empty."))
            return
        st.caption(
            ui.t(
                "Runs in the trash leave the library and its links for everyone. Their owner or an admin can restore them; an admin can purge them; after {days} days they are purged.",
                days=settings.number("SPECVIZ_TRASH_DAYS"),
            )
        )
        ui.table(
            trash[["id", "label", "n_rows", "created_by", "trashed_by", "trashed_at"]],
            ui.headings(measured.TRASH_COLUMNS, created_by=SAVED_BY, trashed_at=ui.Col(N_("trashed (UTC)"))),
            keep_names=True,
        )
        label_of = dict(zip(trash["id"], trash["label"], strict=True))
        chosen = ui.multiselect(
            measured.PAGE,
            measured.P["trash_pick"],
            ui.t("Runs in the trash"),
            list(trash["id"]),
            format_func=lambda i: f"#{i} {label_of[i]}",
        )
        left, right, _ = st.columns([1, 1, 2])
        if chosen and ui.refusal(WHO, "restore") is None and left.button(ui.t("Restore"), key=key("trash_restore")):
            try:  # restored or purged by someone else meanwhile: said so, nothing restored
                back = store.restore_runs(engine, chosen, who=WHO, page=URL)
            except ValueError as exc:
                ui.show_error(exc)
            else:
                st.session_state[key("trash_done")] = list(chosen)
                st.toast(ui.t(plural("Restored {n} run.", "Restored {n} runs.", back), n=back))
                st.rerun()
        if (
            chosen
            and ui.refusal(WHO, "purge") is None
            and right.button(ui.t("Purge for good…"), key=key("trash_purge"), type="primary")
        ):
            st.session_state[key("confirm_purge")] = list(chosen)
        pending = st.session_state.get(key("confirm_purge"))
        if pending:
            st.warning(
                ui.t(
                    plural(
                        "Purge {n} run for good? This cannot be undone.",
                        "Purge {n} runs for good? This cannot be undone.",
                        len(pending),
                    ),
                    n=len(pending),
                ),
                icon=":material/warning:",
            )
            if st.button(ui.t("Yes, purge"), key=key("purge_yes"), type="primary"):
                st.session_state[key("confirm_purge")] = None
                gone = store.purge_runs(engine, pending, who=WHO, page=URL)
                st.session_state[key("trash_done")] = list(pending)
                st.toast(ui.t(plural("Purged {n} run.", "Purged {n} runs.", gone), n=gone))
                st.rerun()


def audit_section(engine) -> None:
    """The audit trail, for admins: every save, edit, trash, restore and purge, with a CSV export."""
    if ui.refusal(WHO, "audit") is not None or WHO.how == "local":
        return
    with st.expander(ui.t("Audit trail"), icon=":material/history:"):
        trail = store.audit_trail(engine, who=WHO)
        ui.table(trail, ui.headings(measured.AUDIT_COLUMNS, at=ui.Col(N_("when (UTC)"))), keep_names=True)
        st.download_button(
            ui.t("Download the audit trail (CSV)"),
            lambda: store.export_csv(trail),
            "specviz_audit.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
            key=key("audit_csv"),
        )


def library_section(engine, runs) -> None:
    """The stored runs (``runs``, from store.list_runs) with filters, the selection to plot, export and delete."""
    st.subheader(ui.t("Run library"))
    keep_listed(engine, runs, WHO, URL)
    if runs.empty:
        st.info(ui.t("The library is empty: add a file above, or load a sample."), icon=":material/inventory_2:")
        return
    c1, c2, c3, c4, c5 = st.columns(5)
    ui.text_box(measured.PAGE, measured.P["filter"], container=c1)
    facets = {}
    for col, facet in zip((c2, c3, c4, c5), tuple(measured.FACETS), strict=True):
        values = sorted({v for cell in runs[facet] for v in cell.split(", ") if v})
        facets[facet] = col.multiselect(
            ui.t(measured.FACETS[facet]), values, key=key(f"facet.{facet}"), placeholder=ui.placeholder()
        )
    shown = measured.filter_runs(runs, st.session_state[key("filter")], facets)
    ui.table(
        shown,
        ui.headings(
            measured.LIBRARY_COLUMNS,
            note=ui.Col(N_("note"), missing=N_("no note given")),
            created_by=SAVED_BY,
            uploaded_at=ui.Col(N_("uploaded (UTC)")),
        ),
        key=key("tbl_runs"),
        keep_names=True,
    )
    label_of = dict(zip(runs["id"], runs["label"], strict=True))
    selected = pick_runs(runs, shown["id"])
    if selected:
        c1, c2, c3, _ = st.columns([1, 1, 1, 1])
        c1.download_button(  # the CSV is built when clicked, not on every run (a large run takes seconds)
            ui.t("Export the selected runs (CSV)"),
            lambda ids=tuple(selected): store.export_csv(ui.load_runs(engine, runs, ids)),
            "specviz_runs.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
        )
        c3.download_button(  # Model-Optimizer's format: vLLM's synthetic sampler and NVIDIA's tools read it
            ui.t("Export as speculation_profile.json"),
            lambda ids=tuple(selected): measured.speculation_profile(engine, runs, ids),
            "speculation_profile.json",
            "application/json",
            icon=":material/download:",
            on_click="ignore",
            help=ui.t(
                "The selected row with the largest K: its per-position acceptance (else α at every position), in NVIDIA Model-Optimizer's schema 1.0."
            ),
        )
        if ui.refusal(WHO, "trash") is None and c2.button(
            ui.t("Move the selected runs to the trash…"), icon=":material/delete:"
        ):
            st.session_state[key("confirm_delete")] = list(selected)
    if len(selected) == 1:
        edit_run(engine, runs.set_index("id").loc[selected[0]], selected[0])
    pending = st.session_state.get(key("confirm_delete"))
    if pending:
        names = ", ".join(f"#{i} {ui.plain(label_of.get(i, '?'))}" for i in pending)
        st.warning(
            ui.t(
                plural(
                    "Move {n} run ({names}) to the trash for everyone using this library? Its owner or an admin can restore it for {days} days.",
                    "Move {n} runs ({names}) to the trash for everyone using this library? Their owners or an admin can restore them for {days} days.",
                    len(pending),
                ),
                n=len(pending),
                names=names,
                days=settings.number("SPECVIZ_TRASH_DAYS"),
            ),
            icon=":material/warning:",
        )
        yes, no, _ = st.columns([1, 1, 4])
        if yes.button(ui.t("Yes, move to the trash"), type="primary", key=key("delete_yes")):
            st.session_state[key("confirm_delete")] = None
            try:  # not allowed, or trashed by someone else meanwhile: said so, nothing moved
                deleted = ui.delete_runs(engine, pending, who=WHO, page=URL)
            except ValueError as exc:
                ui.show_error(exc)
            else:
                st.toast(
                    ui.t(plural("Moved {n} run to the trash.", "Moved {n} runs to the trash.", deleted), n=deleted)
                )
                select_next([i for i in selected if i not in pending])
        if no.button(ui.t("Cancel"), key=key("delete_no")):
            st.session_state[key("confirm_delete")] = None
            st.rerun()


st.title(ui.t("Run library"))
st.caption(
    ui.t(
        "Upload benchmark results from any serving stack, keep them in the team's run library, and see where they fall on the theory. Files are validated row by row; column names of vLLM, SGLang, llama.cpp, TensorRT-LLM, HF transformers and Spec-Bench are understood."
    )
)
WHO, library, runs = start(measured.LIBRARY_SPEC)
if WHO.how == "anonymous" and (why := ui.refusal(WHO, "save")) is not None:
    st.info(why, icon=":material/lock:")
add_section(library, runs, measured.LibraryView.of(ui.values(measured.PAGE, measured.LIBRARY_SPEC + measured.OPTIONS)))
if library is not None:
    with ui.reported_errors():  # e.g. a run deleted by someone else meanwhile
        library_section(library, runs)
        trash_section(library)
        audit_section(library)
ui.publish(measured.PAGE, measured.LIBRARY_SPEC, URL)

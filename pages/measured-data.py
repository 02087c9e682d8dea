"""Measured data: add benchmark files to the shared run library and see them over the theory."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app import figures, overlays, router, share, ui
from specviz.app.share import Param, by_key
from specviz.base import access, hosting, settings
from specviz.base.i18n import C_, N_, plural
from specviz.core import acceptance
from specviz.data import measurements, store

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "measured", "measured-data"
FORMATS = {"auto": "detect"} | {name: measurements.READERS[name].title for name in sorted(measurements.READERS)}
PASTED = "pasted text"  # the pasted input's name as stored (a run's source); shown as md.pasted_text
SPEC = (  # shared in the URL
    Param("runs", [], "ints", 1, 2**63 - 1),
    Param("filter", "", "text", hi=200, label=N_("Filter by label, model, hardware or method")),
    Param("hk", 0, "int", 0, 64, label=N_("K of the heatmap (0 = the most common K of the selection)")),
)
OPTIONS = (  # how staged files are read: not in the URL (a link does not carry the files either)
    Param("format", "auto", "choice", choices=tuple(FORMATS), label=N_("Format")),
    Param("k_given", 0, "int", 0, 4096, label=N_("K for files that do not state it (0 = not given)")),
    Param("no_bonus", False, "bool"),
)
P = by_key(SPEC + OPTIONS)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def format_label(fmt: str) -> str:
    """A reader's title (or "detect") in the session's language; the choice itself stays the reader's name."""
    return ui.t("detect") if fmt == "auto" else ui.message(measurements.READERS[fmt].title)


def sample_label(name: str) -> str:
    """A sample file's name and what it is, in the session's language."""
    return f"{name} — {ui.message(measurements.SAMPLES[name])}"


def shown_name(name: str) -> str:
    """An input's name as shown: the pasted text's in the session's language, a file's as it is."""
    return ui.t("pasted text") if name == PASTED else name


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
                ui.t(
                    "{name} has the same content as {other}; shown once.",
                    name=ui.plain(shown_name(name)),
                    other=ui.plain(shown_name(unique[data][0])),
                )
            )
        else:
            unique[data] = (name, data)
    return list(unique.values())


ERROR_COLUMNS = {
    "row": N_("row"),
    "column": N_("column"),
    "file header": N_("file header"),
    "value": C_("md.err.value", "value"),
    "allowed": N_("allowed"),
}  #: the row-error table's columns -> headings


def show_report(report: measurements.LoadReport) -> None:
    """How the file was read: mapping, conversions, warnings, and the rows that were skipped."""
    st.caption(ui.plain(ui.message(report.headline)))
    if report.mapped:
        st.info(
            ui.t("Mapped columns: {pairs}", pairs=", ".join(f"`{a}` → `{b}`" for a, b in report.mapped.items())),
            icon=":material/swap_horiz:",
        )
    for line in (
        ui.message(report.conversions_text),
        ui.message(report.ignored_text),
        *(ui.t("Warning: {warning}", warning=ui.message(w)) for w in report.warnings),
    ):
        if line:
            st.caption(ui.plain(line))
    if report.row_errors:
        st.warning(
            ui.t(
                "{cells} bad cell(s) in {rows} row(s); those rows are skipped, the others load.",
                cells=len(report.row_errors),
                rows=report.rows_skipped,
            ),
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
            column_config={c: ui.t(h) for c, h in ERROR_COLUMNS.items()},
        )


def select_next(run_ids: list[int]) -> None:
    """Select ``run_ids`` from the next run on (a widget's state cannot change once it is drawn)."""
    st.session_state[key("runs_next")] = run_ids
    st.rerun()


def add_section(engine, runs) -> None:
    """Upload / paste / sample → preview with the mapping and row errors → save as a run (``runs``: the library)."""
    st.subheader(ui.t("Add measurements"))
    left, right = st.columns([3, 2])
    left.file_uploader(
        ui.t("Benchmark files (CSV, Spec-Bench .jsonl, vLLM logs)"),
        accept_multiple_files=True,
        type=["csv", "tsv", "txt", "jsonl", "json", "log"],
        key=key("files"),
    )
    left.text_area(
        ui.t("…or paste text (a CSV, JSON lines, or vLLM 'SpecDecoding metrics' log lines)"),
        key=key("paste"),
        height=100,
    )
    with right:
        ui.selectbox(PAGE, P["format"], format_func=format_label)
        ui.number_input(
            PAGE,
            P["k_given"],
            help=ui.t("vLLM log lines and Spec-Bench output do not record the draft length."),
        )
        st.checkbox(
            ui.t("Mean acceptance length excludes the bonus token"),
            key=key("no_bonus"),
            help=ui.t("Some engines report accepted draft tokens per round (E[N] − 1); 1 is then added."),
        )
    samples = measurements.available_samples()
    if samples:
        sample = right.selectbox(
            ui.t("Sample files"), tuple(samples), format_func=ui.session_language(sample_label), key=key("sample")
        )
        if right.button(ui.t("Load this sample"), icon=":material/dataset:"):
            st.session_state[key("sample_loaded")] = sample
    right.download_button(
        ui.t("Download the CSV template"),
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


#: The library table's columns (store.list_runs) with a header in the catalogue (md.col.*).
LIBRARY_COLUMNS = {
    "id": N_("id"),
    "label": N_("label"),
    "source": N_("source"),
    "note": N_("note"),
    "n_rows": N_("n_rows"),
    "target_model": N_("target_model"),
    "draft_model": N_("draft_model"),
    "hardware": N_("hardware"),
    "method": N_("method"),
    "created_by": N_("saved by"),
}  #: column -> heading
FACETS = {
    "target_model": N_("target model"),
    "hardware": N_("hardware"),
    "method": N_("method"),
    "created_by": N_("saved by"),
}  #: filter -> its label


def speculation_profile(engine, runs, ids) -> str:
    """The selected runs as a speculation_profile.json (text); a run without acceptance gives the reason as JSON."""
    try:
        profile = measurements.profile_from_rows(ui.load_runs(engine, runs, ids))
    except ValueError as exc:
        profile = {"error": ui.message(exc)}
    return json.dumps(profile, indent=2, ensure_ascii=False)


def edit_run(engine, run, run_id: int) -> None:
    """Rename the one selected run or change its note: its owner, or an admin (the library checks it)."""
    if ui.refusal(WHO, "edit", run["created_by"]) is not None:
        return
    with st.expander(ui.t("Rename run #{id} or change its note", id=run_id), icon=":material/edit:"):
        name = st.text_input(ui.t("Run name"), value=run["label"], key=key(f"edit_name.{run_id}"))
        note = st.text_input(ui.t("Note (optional)"), value=run["note"], key=key(f"edit_note.{run_id}"))
        if st.button(ui.t("Save the changes"), key=key(f"edit_save.{run_id}"), icon=":material/save:"):
            store.edit_run(engine, run_id, label=name, note=note, who=WHO, page=URL)
            st.toast(ui.t("Run #{id} changed.", id=run_id))
            select_next([run_id])


def trashed_notice(engine, in_trash) -> None:
    """A link names runs that are in the trash: say so, who moved them when, and offer the restore to those allowed."""
    for row in in_trash.itertuples():
        st.warning(
            ui.t(
                "Run #{id} {label} is in the trash (moved by {who} on {when}).",
                id=row.id,
                label=ui.plain(row.label),
                who=row.trashed_by or ui.t("the local user"),
                when=f"{pd.Timestamp(row.trashed_at):%Y-%m-%d %H:%M} UTC",
            ),
            icon=":material/delete:",
        )
        if ui.refusal(WHO, "restore", row.created_by) is None and st.button(
            ui.t("Restore run #{id}", id=row.id),
            key=key(f"restore_link.{row.id}"),
            icon=":material/restore_from_trash:",
        ):
            store.restore_runs(engine, [row.id], who=WHO, page=URL)
            select_next(sorted({*st.session_state[key("runs")], row.id}))


def trash_section(engine) -> None:
    """The trash: runs moved there, restorable by their owner or an admin, purged by an admin."""
    trash = store.list_trash(engine)
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
        st.dataframe(
            trash[["id", "label", "n_rows", "created_by", "trashed_by", "trashed_at"]],
            hide_index=True,
            width="stretch",
            column_config={c: ui.t(h) for c, h in TRASH_COLUMNS.items()}
            | {"trashed_at": st.column_config.DatetimeColumn(ui.t("trashed (UTC)"))},
        )
        label_of = dict(zip(trash["id"], trash["label"], strict=True))
        chosen = st.multiselect(
            ui.t("Runs in the trash"),
            list(trash["id"]),
            format_func=lambda i: f"#{i} {label_of[i]}",
            key=key("trash_pick"),
        )
        left, right, _ = st.columns([1, 1, 2])
        if chosen and ui.refusal(WHO, "restore") is None and left.button(ui.t("Restore"), key=key("trash_restore")):
            back = store.restore_runs(engine, chosen, who=WHO, page=URL)
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
                st.toast(ui.t(plural("Purged {n} run.", "Purged {n} runs.", gone), n=gone))
                st.rerun()


def audit_section(engine) -> None:
    """The audit trail, for admins: every save, edit, trash, restore and purge, with a CSV export."""
    if ui.refusal(WHO, "audit") is not None or WHO.how == "local":
        return
    with st.expander(ui.t("Audit trail"), icon=":material/history:"):
        trail = store.audit_trail(engine, who=WHO)
        st.dataframe(
            trail,
            hide_index=True,
            width="stretch",
            column_config={c: ui.t(h) for c, h in AUDIT_COLUMNS.items()}
            | {"at": st.column_config.DatetimeColumn(ui.t("when (UTC)"))},
        )
        st.download_button(
            ui.t("Download the audit trail (CSV)"),
            lambda: store.export_csv(trail),
            "specviz_audit.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
            key=key("audit_csv"),
        )


TRASH_COLUMNS = {
    "id": N_("id"),
    "label": N_("label"),
    "n_rows": N_("n_rows"),
    "created_by": N_("saved by"),
    "trashed_by": N_("trashed by"),
}  #: trash table -> headings
AUDIT_COLUMNS = {
    "who": N_("who"),
    "role": N_("role"),
    "action": N_("action"),
    "runs": N_("runs"),
    "page": N_("page"),
    "detail": N_("detail"),
}  #: audit table -> headings


def library_section(engine, runs) -> None:
    """The stored runs (``runs``, from store.list_runs) with filters, the selection to plot, export and delete."""
    st.subheader(ui.t("Run library"))
    gone = [i for i in st.session_state[key("runs")] if i not in set(runs["id"])]
    # runs a link names that are in the trash: said so (with the restore) for as long as this session lasts
    linked = sorted({*st.session_state.get(key("trashed_links"), []), *gone})
    in_trash = store.trashed(engine, linked) if linked else pd.DataFrame(columns=["id"])
    st.session_state[key("trashed_links")] = in_trash["id"].tolist()
    if len(in_trash):
        trashed_notice(engine, in_trash)
        st.session_state[key("runs")] = [i for i in st.session_state[key("runs")] if i not in set(in_trash["id"])]
        gone = [i for i in gone if i not in set(in_trash["id"])]
    if gone:
        st.warning(
            ui.t(
                "Run(s) {ids} are not in the library (deleted, or a link from another library); they are left out.",
                ids=", ".join(f"#{i}" for i in gone),
            ),
            icon=":material/warning:",
        )
        st.session_state[key("runs")] = [i for i in st.session_state[key("runs")] if i not in gone]
    if runs.empty:
        st.info(ui.t("The library is empty: add a file above, or load a sample."), icon=":material/inventory_2:")
        return
    c1, c2, c3, c4, c5 = st.columns(5)
    ui.text_box(PAGE, P["filter"], container=c1)
    facets = {}
    for col, facet in zip((c2, c3, c4, c5), tuple(FACETS), strict=True):
        values = sorted({v for cell in runs[facet] for v in cell.split(", ") if v})
        facets[facet] = col.multiselect(ui.t(FACETS[facet]), values, key=key(f"facet.{facet}"))
    shown = runs
    text = st.session_state[key("filter")].strip().lower()
    if text:
        hay = runs[["label", "target_model", "draft_model", "hardware", "method", "source", "created_by"]].agg(
            " ".join, axis=1
        )
        shown = shown[hay.str.lower().str.contains(text, regex=False)]
    for facet, chosen in facets.items():
        if chosen:
            shown = shown[shown[facet].map(lambda cell, c=chosen: any(v in cell.split(", ") for v in c))]
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={c: ui.t(h) for c, h in LIBRARY_COLUMNS.items()}
        | {"uploaded_at": st.column_config.DatetimeColumn(ui.t("uploaded (UTC)"))},
    )
    label_of = dict(zip(runs["id"], runs["label"], strict=True))
    options = list(dict.fromkeys([*st.session_state[key("runs")], *shown["id"]]))
    ui.multiselect(
        PAGE,
        P["runs"],
        ui.t("Runs to plot"),
        options,
        format_func=lambda i: f"#{i} {label_of[i]}",
        placeholder=ui.t("Choose runs to overlay on the theory"),
    )
    selected = st.session_state[key("runs")]
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
            lambda ids=tuple(selected): speculation_profile(engine, runs, ids),
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
            deleted = ui.delete_runs(engine, pending, who=WHO, page=URL)  # an AccessError is shown, nothing moved
            st.toast(ui.t(plural("Moved {n} run to the trash.", "Moved {n} runs to the trash.", deleted), n=deleted))
            select_next([i for i in selected if i not in pending])
        if no.button(ui.t("Cancel"), key=key("delete_no")):
            st.session_state[key("confirm_delete")] = None
            st.rerun()


def overlay_points(frame):
    """The runs' points (``overlays.with_series``) and their per-position table: the slow steps of a view."""
    points = overlays.with_series(frame)
    return points, overlays.per_position(points)


#: Columns of the series table (overlays.series_params) with a header in the catalogue (md.scol.*); c, v, o are symbols.
SERIES_COLUMNS = {
    "series": C_("md.scol.series", "series"),
    "alpha": C_("md.scol.alpha", "alpha"),
    "has_cost": N_("has_cost"),
    "k_min": N_("k_min"),
    "k_max": N_("k_max"),
    "n": N_("n"),
}  #: column -> heading
TAB_TITLES = {
    "speedup": N_("Speedup vs K"),
    "map": N_("(α, c) map"),
    "tokens": N_("E[N] vs K"),
    "parity": N_("Measured vs predicted"),
    "position": N_("Per position"),
    "context": N_("By context and domain"),
    "published": N_("Against published"),
}  #: chart tab -> its title
GROUP_COLUMNS = {
    "bucket": N_("context (tokens)"),
    "domain": N_("domain"),
    "k": "K",
    "rows": N_("rows"),
    "rounds": N_("rounds"),
    "mean_tokens": "E[N]",
    "mean_lo": N_("E[N] low"),
    "mean_hi": N_("E[N] high"),
    "alpha": "α",
    "alpha_lo": N_("α low"),
    "alpha_hi": N_("α high"),
}  #: acceptance-by-group table -> headings
REFERENCE_COLUMNS = {
    "series": C_("md.scol.series", "series"),
    "alpha": "α",
    "published_alpha": N_("published α"),
    "alpha_ratio": N_("α ÷ published"),
    "mean_accepted_tokens": "E[N]",
    "published_tokens": N_("published E[N]"),
    "published_k": N_("published K"),
    "published_draft": N_("published draft"),
    "dataset": N_("dataset"),
    "published_temperature": N_("published temperature"),
    "differences": N_("differences that usually explain a gap"),
    "source": N_("source"),
}  #: reference comparison -> headings
reference_table = ui.cached(acceptance.load_reference)


def group_table(table) -> None:
    """A pooled (group, K) table with its intervals."""
    shown = table.drop(columns=["order", "context"])
    st.dataframe(
        shown.round(dict.fromkeys(("mean_tokens", "mean_lo", "mean_hi", "alpha", "alpha_lo", "alpha_hi"), 3)),
        hide_index=True,
        width="stretch",
        column_config={
            c: ui.t(h) if c not in ("k",) and not h.startswith(("E[", "α")) else h
            for c, h in GROUP_COLUMNS.items()
            if c in shown
        },
    )


def context_view(points) -> None:
    """α and E[N] by context bucket and by domain with 95 % intervals; the fitted α(L), sent on to Hardware and Serving."""
    rows = acceptance.row_acceptance(points)
    buckets, domains = acceptance.by_group(rows, "bucket"), acceptance.by_group(rows, "domain")
    if buckets.empty and domains.empty:
        st.info(
            ui.t(
                "None of the selected rows has a context length or a domain. Files give them as context_length (or prompt_tokens and output_tokens) and domain (dataset, task or category)."
            )
        )
        return
    st.caption(
        ui.t(
            "Intervals are 95 % from the counted rounds (Wilson's interval for α over the accepted and rejected draft tokens); rows without a round count show none."
        )
    )
    if len(buckets):
        fit = None
        try:
            fit = acceptance.fit_decay(rows)
        except ValueError as exc:
            st.caption(ui.message(exc))
        ui.chart(figures.acceptance_by_context(buckets, fit, lang=ui.language()), width="stretch")
        group_table(buckets)
        if fit is not None:
            decay_links(fit)
    if len(domains):
        ui.chart(figures.acceptance_by_domain(domains, lang=ui.language()), width="stretch")
        group_table(domains)


def decay_links(fit) -> None:
    """The fitted model stated, and links that open Hardware & batch and Serving with it."""
    st.markdown(
        ui.t(
            "Fitted decay: logit α(L) = {a} − {b}·ln(L / 1024), {how}, on {n} row(s) at {m} context length(s): α = {a1} at 1k tokens, {a32} at 32k.",
            a=f"{fit.a:.3f}",
            b=f"{fit.b:.3f}",
            how=ui.t("weighted by the counted rounds") if fit.weighted else ui.t("rows weighted equally"),
            n=fit.points,
            m=fit.contexts,
            a1=f"{float(fit.alpha(1024)):.3f}",
            a32=f"{float(fit.alpha(32768)):.3f}",
        )
    )
    params = {"alpha_l": fit.to_param()}
    left, right = st.columns(2)
    left.link_button(  # a link, not a page switch: it carries the fit and can be shared
        ui.t("Price long contexts with this α(L) on Hardware & batch"),
        share.share_url(share.app_root(st.context.url, URL), "hardware", {"a_src": "fit", **params}),
        icon=":material/memory:",
    )
    right.link_button(
        ui.t("Serve with this α(L)"),
        share.share_url(share.app_root(st.context.url, URL), "serving", params),
        icon=":material/dns:",
    )


def published_view(points) -> None:
    """The selected series beside the published acceptance of the same target, and what differs."""
    table = overlays.reference_comparison(points, reference_table(), lang=ui.language())
    if table.empty:
        st.info(
            ui.t(
                "No published acceptance for the selected runs' target models (or the rows name none: target_model). The table holds {n} published rows.",
                n=len(reference_table()),
            )
        )
        return
    st.caption(
        ui.t(
            "α compares runs across K (E[N] grows with K); the published rows are listed closest first: the same draft, then the same method. Sources are in data/validation/acceptance.csv and measurements.csv."
        )
    )
    st.dataframe(
        table.round(3),
        hide_index=True,
        width="stretch",
        column_config={
            c: ui.t(h) if c not in ("alpha", "mean_accepted_tokens") else h for c, h in REFERENCE_COLUMNS.items()
        },
    )


def overlay_section(engine, runs) -> None:
    """The selected runs over the theory (``runs``: the library listing, which gives each run's row count)."""
    selected = st.session_state[key("runs")]
    st.subheader(ui.t("Measurements over the theory"))
    if not selected:
        st.info(ui.t("Select runs in the library to see them on the curves."), icon=":material/touch_app:")
        return
    n_rows = int(runs.set_index("id").loc[selected, "n_rows"].sum())  # refuse before reading them
    overlays.check_rows(n_rows)
    points, per_position = ui.derived_runs(engine, runs, selected, overlay_points)
    points = points.assign(
        hover=overlays.hover_text(points, lang=ui.language())
    )  # the cached points' hovers are English
    params = overlays.series_params(points)
    curves = overlays.curves(params)
    st.caption(
        ui.t(
            "One series per configuration: run, label, and every model, hardware, method, batch size or temperature that differs within them. Its curves use the series' α (mean of the α used per row) and c (median); the dashed curve adds the measured verify cost v and overhead o."
        )
    )
    st.dataframe(
        params,
        hide_index=True,
        width="stretch",
        column_config={c: ui.t(h) for c, h in SERIES_COLUMNS.items() if c in params.columns},
    )
    tab_s, tab_map, tab_n, tab_parity, tab_pos, tab_ctx, tab_pub = st.tabs(
        [ui.t(title) for title in TAB_TITLES.values()]
    )
    with tab_s:
        if points["speedup"].notna().any():
            ui.chart(figures.overlay_speedup_vs_k(points, curves, params, lang=ui.language()), width="stretch")
        else:
            st.info(ui.t("None of the selected rows has a measured speedup."))
        if params["c"].isna().any():
            st.caption(ui.t("Series without c (no c, c_L or draft/target times) have no theoretical speedup curve."))
    with tab_map:
        ks = points["k"].astype(int)
        hk = st.session_state[key("hk")] or int(ks.mode().iloc[0])
        ui.number_input(PAGE, P["hk"])
        ui.chart(
            figures.overlay_alpha_c(heatmap_grid(hk, points["c_used"]), points, hk, lang=ui.language()), width="stretch"
        )
        if points["c_used"].isna().all():
            st.caption(ui.t("No selected row has a c, so no point can be placed on this map."))
    with tab_n:
        ui.chart(figures.overlay_expected_tokens(points, curves, params, lang=ui.language()), width="stretch")
    with tab_parity:
        if points["speedup"].notna().any() and points["predicted_speedup"].notna().any():
            ui.chart(figures.parity(points, lang=ui.language()), width="stretch")
            ratio = points["speedup_ratio"].dropna()
            st.caption(
                ui.t(
                    "Measured ÷ basic-model prediction: median {median} over {n} row(s). Below 1 usually means verifying K + 1 tokens costs more than one step (v), acceptance falls with position, or a fixed per-round overhead (o).",
                    median=f"{np.median(ratio):.2f}",
                    n=len(ratio),
                )
            )
        else:
            st.info(ui.t("A parity plot needs rows with both a measured speedup and a c (for the prediction)."))
    with tab_pos:
        if len(per_position):
            ui.chart(figures.per_position_figure(per_position, lang=ui.language()), width="stretch")
            distribution = overlays.n_distribution(per_position)
            if len(distribution):
                st.caption(
                    ui.t(
                        "The tokens per round N: measured (bars, from the per-position rates) against the chapter's pmf at the series' α (diamonds). Where they part, acceptance is not one α at every position."
                    )
                )
                ui.chart(figures.n_distribution_figure(distribution, lang=ui.language()), width="stretch")
        else:
            st.info(ui.t("None of the selected rows has per-position acceptance."))
    with tab_ctx:
        context_view(points)
    with tab_pub:
        published_view(points)


st.title(ui.t("Measured data"))
st.caption(
    ui.t(
        "Upload benchmark results from any engine, keep them in the team's run library, and see where they fall on the theory. Files are validated row by row; column names of vLLM, SGLang, llama.cpp, TensorRT-LLM, HF transformers and Spec-Bench are understood."
    )
)
ui.restore(PAGE, SPEC)
for option in OPTIONS:
    st.session_state.setdefault(key(option.key), option.default)
if key("runs_next") in st.session_state:
    st.session_state[key("runs")] = st.session_state.pop(key("runs_next"))
if (misspelt := hosting.hosted_problem()) is not None:  # read as hosted mode: the library's location is hidden
    st.warning(ui.plain(ui.message(misspelt)), icon=":material/warning:")
try:
    WHO = ui.identity()  # the person this session acts for; the library checks every change against it
except ValueError as exc:  # a sign-in that gave no e-mail address
    ui.show_error(exc)
    WHO = access.anonymous()
if WHO.how == "anonymous" and (why := ui.refusal(WHO, "save")) is not None:
    st.info(why, icon=":material/lock:")
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
        trash_section(library)
        audit_section(library)
        overlay_section(library, runs)
ui.publish(PAGE, SPEC, URL)

"""What the three measured-data pages share on screen: the person and the library, the runs a link names
that are gone or in the trash, and the selection of runs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from specviz.app import ui
from specviz.app.measured.scenarios import OPTIONS, PAGE, P
from specviz.base import access, hosting
from specviz.data import store


def key(name: str) -> str:
    return ui.key(PAGE, name)


def start(spec) -> tuple[access.Identity, object | None, pd.DataFrame | None]:
    """Restore the page's controls, then ``(who, library, runs)``: the person this session acts for, the
    run library (None where it cannot be opened, after saying why) and its listing."""
    if key("runs") in st.session_state:  # set anew: the selection widget of the page before is not this page's
        st.session_state[key("runs")] = list(st.session_state[key("runs")])
    ui.restore(PAGE, spec)
    for option in OPTIONS:
        st.session_state.setdefault(key(option.key), option.default)
    if key("runs_next") in st.session_state:
        st.session_state[key("runs")] = st.session_state.pop(key("runs_next"))
    if (misspelt := hosting.hosted_problem()) is not None:  # read as hosted mode: the library's location is hidden
        st.warning(ui.plain(ui.message(misspelt)), icon=":material/warning:")
    try:
        who = ui.identity()  # the person this session acts for; the library checks every change against it
    except ValueError as exc:  # a sign-in that gave no e-mail address
        ui.show_error(exc)
        who = access.anonymous()
    library, runs = ui.library(), None
    if library is not None:
        try:
            runs = ui.library_runs(library)
        except ValueError as exc:  # the library went away: files can still be checked, not saved
            ui.show_error(exc)
            library = None
    return who, library, runs


def select_next(run_ids: list[int]) -> None:
    """Select ``run_ids`` from the next run on (a widget's state cannot change once it is drawn)."""
    st.session_state[key("runs_next")] = run_ids
    st.rerun()


def trashed_notice(engine, in_trash: pd.DataFrame, who, url: str) -> None:
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
        if ui.refusal(who, "restore", row.created_by) is None and st.button(
            ui.t("Restore run #{id}", id=row.id),
            key=key(f"restore_link.{row.id}"),
            icon=":material/restore_from_trash:",
        ):
            store.restore_runs(engine, [row.id], who=who, page=url)
            select_next(sorted({*st.session_state[key("runs")], row.id}))


def keep_listed(engine, runs: pd.DataFrame, who, url: str) -> None:
    """Leave out of the selection the runs a link names that the library no longer lists, saying why."""
    gone = [i for i in st.session_state[key("runs")] if i not in set(runs["id"])]
    # runs a link names that are in the trash: said so (with the restore) for as long as this session lasts
    linked = sorted({*st.session_state.get(key("trashed_links"), []), *gone})
    in_trash = store.trashed(engine, linked) if linked else pd.DataFrame(columns=["id"])
    st.session_state[key("trashed_links")] = in_trash["id"].tolist()
    if len(in_trash):
        trashed_notice(engine, in_trash, who, url)
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


def pick_runs(runs: pd.DataFrame, offered) -> list[int]:
    """The runs-to-plot multiselect over ``offered`` ids (and those already selected)."""
    label_of = dict(zip(runs["id"], runs["label"], strict=True))
    options = list(dict.fromkeys([*st.session_state[key("runs")], *offered]))
    return ui.multiselect(
        PAGE,
        P["runs"],
        ui.t("Runs to plot"),
        options,
        format_func=lambda i: f"#{i} {label_of[i]}",
        placeholder=ui.t("Choose runs to overlay on the theory"),
    )


def left_the_trash(engine, in_trash) -> None:
    """Runs picked in the trash that left it since (restored or purged by someone else): say so, and by whom."""
    picked, listed = st.session_state.get(key("trash_pick")) or [], set(in_trash)
    mine = set(st.session_state.pop(key("trash_done"), []))  # this session's own restore or purge
    if gone := [i for i in picked if i not in listed and i not in mine]:
        st.warning(ui.plain(ui.message(store.conflict_of(engine, "restore", gone))), icon=":material/group:")
    if len(listed.intersection(picked)) < len(picked):
        st.session_state[key("trash_pick")] = [i for i in picked if i in listed]

"""Against published acceptance: the selected runs of the run library beside the published acceptance of their targets."""

import streamlit as st

from specviz.app import measured, router, ui
from specviz.app.measured.selection import keep_listed, pick_runs, start
from specviz.base.i18n import N_

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

URL = measured.PUBLISHED
PUBLISHED = ("published_alpha", "alpha_ratio", "published_tokens", "published_k", "published_temperature")


def published_view(engine, runs, scenario: measured.Published) -> None:
    """The scenario's series beside the published acceptance of the same target, and what differs."""
    if not scenario.runs:
        st.info(
            ui.t("Select runs in the library to compare them with the published acceptance of their targets."),
            icon=":material/touch_app:",
        )
        return
    table = measured.reference_comparison(engine, runs, scenario)
    if table.empty:
        st.info(
            ui.t(
                "No published acceptance for the selected runs' target models (or the rows name none: target_model). The table holds {n} published rows.",
                n=len(measured.reference_table()),
            )
        )
        return
    st.caption(
        ui.t(
            "α compares runs across K (E[N] grows with K); the published rows are listed closest first: the same draft, then the same method. Sources are in data/validation/acceptance.csv and measurements.csv."
        )
    )
    unpublished = N_("the source publishes no such figure")
    ui.table(
        table.round(3),
        ui.headings(measured.REFERENCE_COLUMNS)
        | {c: ui.Col(measured.REFERENCE_COLUMNS[c], missing=unpublished) for c in PUBLISHED},
        keep_names=True,
    )


st.title(ui.t("Against published acceptance"))
WHO, library, runs = start(measured.PUBLISHED_SPEC)
if library is not None:
    with ui.reported_errors():  # e.g. a run deleted by someone else meanwhile
        keep_listed(library, runs, WHO, URL)
        if not runs.empty:
            pick_runs(runs, runs["id"])
        published_view(
            library, runs, measured.Published.of(ui.values(measured.PAGE, measured.PUBLISHED_SPEC), ui.language())
        )
ui.publish(measured.PAGE, measured.PUBLISHED_SPEC, URL)

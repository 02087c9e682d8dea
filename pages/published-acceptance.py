"""Against published acceptance: the selected runs of the run library beside the published acceptance of their targets."""

import streamlit as st

from specviz.app import measured, router, ui
from specviz.app.measured.selection import keep_listed, pick_runs, start
from specviz.base.i18n import N_

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

URL = measured.PUBLISHED
PUBLISHED = ("published_alpha", "alpha_ratio", "published_tokens", "published_k", "published_temperature")


def priors_section() -> None:
    """Published acceptance per method and task domain, and links that open Hardware and Serving at its α."""
    st.subheader(ui.t("Before you measure: published acceptance by task domain"))
    priors = measured.domain_priors()

    def shown(method: str, domain: str) -> tuple[str, str]:
        return (
            ui.t(measured.PRIOR_METHODS.get(method, method)),
            ui.t(measured.PRIOR_DOMAINS.get(domain, domain)),
        )

    named = [shown(m, d) for m, d in zip(priors["method"], priors["domain"], strict=True)]
    ui.table(
        priors.assign(method=[m for m, _ in named], domain=[d for _, d in named]),
        {
            "method": ui.Col(N_("method"), kind="text"),
            "domain": ui.Col(N_("domain"), kind="text"),
            "rows": ui.Col(N_("rows"), kind="int"),
            "sources": ui.Col(N_("sources"), kind="int"),
            "alpha": ui.Col(N_("median α"), kind="number", digits=3),
            "alpha_lo": ui.Col(N_("lowest α"), kind="number", digits=3),
            "alpha_hi": ui.Col(N_("highest α"), kind="number", digits=3),
            "tau": ui.Col(N_("median τ"), kind="number", digits=2),
            "k": ui.Col("K", kind="number", digits=1),
            "source_ids": ui.Col(N_("source ids"), kind="text"),
        },
    )
    st.caption(
        ui.t(
            "α is recovered from each row's τ and K (chains only); code and math accept more than chat. One source is one publication; a cell of one source is one team's setup, not a consensus."
        )
    )
    ui.selectbox(measured.PAGE, measured.P["prior"], format_func=lambda key: " · ".join(shown(*key.split("/", 1))))
    method, domain = ui.values(measured.PAGE, measured.PUBLISHED_SPEC)["prior"].split("/", 1)
    row = priors[(priors["method"] == method) & (priors["domain"] == domain)].iloc[0]
    alpha = f"{row['alpha']:.3f}"
    left, right = st.columns(2)
    at = {"alpha": alpha}
    left.page_link(router.page("hardware"), label=ui.t("Hardware & batch at α = {a}", a=alpha), query_params=at)
    right.page_link(router.page("serving"), label=ui.t("Serving at α = {a}", a=alpha), query_params=at)


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
priors_section()
if library is not None:
    with ui.reported_errors():  # e.g. a run deleted by someone else meanwhile
        keep_listed(library, runs, WHO, URL)
        if not runs.empty:
            pick_runs(runs, runs["id"])
        published_view(
            library, runs, measured.Published.of(ui.values(measured.PAGE, measured.PUBLISHED_SPEC), ui.language())
        )
ui.publish(measured.PAGE, measured.PUBLISHED_SPEC, URL)

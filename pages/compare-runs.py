"""Compare runs: the selected runs of the run library over the theory, by K, position, context and domain."""

import numpy as np
import streamlit as st

from specviz.app import figures, measured, overlays, router, share, ui
from specviz.app.measured.selection import keep_listed, pick_runs, start
from specviz.base.i18n import N_
from specviz.core import acceptance

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

URL = measured.COMPARE
NO_COST = N_("the rows give no step cost c")
COST_COLUMNS = {name: ui.Col(name, missing=NO_COST) for name in ("c", "v", "o", "k_star_cost", "s_star_cost")}


def group_table(table) -> None:
    """A pooled (group, K) table with its intervals."""
    shown = table.drop(columns=["order", "context"])
    rounded = shown.round(dict.fromkeys(("mean_tokens", "mean_lo", "mean_hi", "alpha", "alpha_lo", "alpha_hi"), 3))
    ui.table(rounded, ui.headings(measured.GROUP_COLUMNS), keep_names=True)


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


def overlay_section(engine, runs, scenario: measured.Comparison) -> None:
    """The scenario's runs over the theory (``runs``: the library listing, which gives each run's row count)."""
    st.subheader(ui.t("Measurements over the theory"))
    if not scenario.runs:
        st.info(ui.t("Select runs in the library to see them on the curves."), icon=":material/touch_app:")
        return
    points, per_position = measured.overlays_of(engine, runs, scenario)
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
    ui.table(params, ui.headings(measured.SERIES_COLUMNS, **COST_COLUMNS), keep_names=True)
    tab_s, tab_map, tab_n, tab_parity, tab_pos, tab_ctx = st.tabs(
        [ui.t(title) for title in measured.TAB_TITLES.values()]
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
        hk = scenario.hk or int(ks.mode().iloc[0])
        ui.number_input(measured.PAGE, measured.P["hk"])
        ui.chart(
            figures.overlay_alpha_c(measured.heatmap_grid(hk, points["c_used"]), points, hk, lang=ui.language()),
            width="stretch",
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


st.title(ui.t("Compare runs"))
WHO, library, runs = start(measured.COMPARE_SPEC)
if library is not None:
    with ui.reported_errors():  # e.g. a run deleted by someone else meanwhile
        keep_listed(library, runs, WHO, URL)
        if not runs.empty:
            pick_runs(runs, runs["id"])
        overlay_section(library, runs, measured.Comparison.of(ui.values(measured.PAGE, measured.COMPARE_SPEC)))
ui.publish(measured.PAGE, measured.COMPARE_SPEC, URL)

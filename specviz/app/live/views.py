"""The live page's results drawn: exactness verdicts, the chart tabs of chain and tree runs, the cost per
round and the coloured text of a cell (the one module of the package that imports streamlit)."""

from __future__ import annotations

import streamlit as st

from specviz.app import figures, overlays, ui
from specviz.app.live import cells
from specviz.app.live.run import LiveRun
from specviz.app.live.tables import TAB_TITLES, TREE_TABLE, columns
from specviz.base.i18n import N_

PAGE = "live"


def key(name: str) -> str:
    return ui.key(PAGE, name)


def show_exactness(run: LiveRun) -> None:
    for d in run.details:
        verdict = cells.exactness_message(d, ui.language())
        if verdict is None:
            continue
        ok, text = verdict
        if ok:
            st.success(text, icon=":material/verified:")
        else:
            st.error(text, icon=":material/report:")


def show_charts(run: LiveRun, points, curves, params) -> None:
    names = ("speedup_k", "en_k", "n_round", "per_position", "cost", "text")
    tabs = st.tabs([ui.t(TAB_TITLES[name]) for name in names])
    with tabs[0]:
        ui.chart(figures.overlay_speedup_vs_k(points, curves, params, lang=ui.language()), width="stretch")
        st.caption(
            ui.t(
                "Solid: the basic model S(α, c, K) at the measured α and c; dashed: with the measured verify cost v and overhead o; stars: each curve's optimal K; bars: min–max over runs."
            )
        )
    with tabs[1]:
        ui.chart(figures.overlay_expected_tokens(points, curves, params, lang=ui.language()), width="stretch")
    details = run.details
    labels = [cells.cell_label(d, ui.language()) for d in details]
    with tabs[2]:
        i = st.selectbox(ui.t("Cell"), range(len(labels)), format_func=labels.__getitem__, key=key("hist_cell"))
        d = details[i]
        pmf = cells.predicted_n_pmf(float(run.rows[i]["alpha"]), d["k"])
        observed = ui.t("measured")
        ui.chart(
            figures.n_histogram(d["n_counts"], pmf, int(d["n_counts"].sum()), observed=observed, lang=ui.language()),
            width="stretch",
        )
    with tabs[3]:
        ui.chart(figures.per_position_figure(overlays.per_position(points), lang=ui.language()), width="stretch")
        st.caption(
            ui.t(
                "a_i: acceptance at draft position i given the earlier ones were accepted. The i.i.d. model assumes a flat line at α."
            )
        )
    with tabs[4]:
        show_costs(details, labels)
    with tabs[5]:
        show_text(details, labels, "text_cell")


def show_tree_results(run: LiveRun, frame) -> None:
    for t, p in run.pilots.items():
        st.caption(
            ui.t(
                "T = {t}: trees built from p = {p}, measured by a pilot run.",
                t=f"{t:g}",
                p=", ".join(f"{x:.3f}" for x in p),
            )
        )
    ui.table(frame[list(TREE_TABLE)], columns(TREE_TABLE), key="tbl_trees")
    show_exactness(run)
    labels = [cells.cell_label(d, ui.language()) for d in run.details]
    tabs = st.tabs([ui.t(TAB_TITLES[name]) for name in ("tokens_round", "speedup", "n_round", "cost", "text")])
    with tabs[0]:
        ui.chart(
            figures.measured_vs_predicted(
                labels,
                frame["mean_accepted_tokens"],
                frame["predicted_tokens_per_round"],
                ui.t("tokens per round"),
                ui.t("F(T) at the measured p"),
                lang=ui.language(),
            ),
            width="stretch",
        )
        st.caption(
            ui.t(
                "F(T) is what the positional model predicts from the p̂ measured in the same runs: where the bars differ, acceptance depends on depth, which the model ignores."
            )
        )
    with tabs[1]:
        ui.chart(
            figures.measured_vs_predicted(
                labels,
                frame["speedup"],
                frame["predicted_speedup_measured_cost"],
                ui.t(N_("speedup over target-only")),
                "F / (1 + v·N + o + D/c)",
                lang=ui.language(),
            ),
            width="stretch",
        )
    with tabs[2]:
        i = st.selectbox(ui.t("Cell"), range(len(labels)), format_func=labels.__getitem__, key=key("tree_hist_cell"))
        d = run.details[i]
        ui.chart(
            figures.n_histogram(
                d["n_counts"], d["n_pmf"], int(d["n_counts"].sum()), observed=ui.t("measured"), lang=ui.language()
            ),
            width="stretch",
        )
    with tabs[3]:
        show_costs(run.details, labels)
    with tabs[4]:
        show_text(run.details, labels, "tree_text_cell")


def show_costs(details: list[dict], labels: list[str]) -> None:
    ui.chart(
        figures.cost_breakdown(
            labels,
            [d["draft_ms"] for d in details],
            [d["verify_ms"] for d in details],
            [d["other_ms"] for d in details],
            [d["basic_model_ms"] for d in details],
            lang=ui.language(),
        ),
        width="stretch",
    )
    st.caption(
        ui.t(
            "The basic model prices a round at one target step plus one draft step per level (K for a chain, the depth for a tree). Verifying more tokens costs more than one step (v) and the rule and bookkeeping add a little (o)."
        )
    )


def show_text(details: list[dict], labels: list[str], name: str) -> None:
    j = st.selectbox(ui.t("Cell"), range(len(labels)), format_func=labels.__getitem__, key=key(name))
    lang = ui.language()
    st.markdown(cells.legend_html(lang), unsafe_allow_html=True)
    st.markdown(cells.segments_html(details[j]["prompt"][-400:], details[j]["segments"], lang), unsafe_allow_html=True)
    st.caption(ui.t("The first run of the cell: the prompt's last 400 characters in grey, then the generated text."))

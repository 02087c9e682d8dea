"""The Tune page's sections below the answer: what the tokens cost, how many requests the GPUs' memory holds
with and without the draft, and the tune saved as a run of the run library."""

from __future__ import annotations

import streamlit as st

from specviz.app import ui
from specviz.app.figures import tune as tune_figures
from specviz.app.measured import views as measured_views
from specviz.app.measured.columns import PRIOR_DOMAINS, PRIOR_METHODS
from specviz.app.scenarios import tune as scenarios
from specviz.app.scenarios.tune import PAGE, SPEC
from specviz.app.scenarios.verdicts import memory_table
from specviz.app.share import by_key
from specviz.app.ui.display import Col
from specviz.base.i18n import N_, Message
from specviz.core import tuning
from specviz.data import store
from specviz.data.measurements import load_records as measurement_records

P = by_key(SPEC)


def cost(s: scenarios.Scenario, a: tuning.Answer) -> None:
    """Per load, the best K within the TPOT limit and what a million output tokens cost with and without it;
    the cheapest setup; the Pareto with iso-cost lines."""
    st.subheader(ui.t("Cost"))
    c1, c2, c3, c4 = st.columns([3, 1, 2, 2])
    with c1:
        ui.selectbox(PAGE, P["gpu"])
    with c2:
        ui.number_input(PAGE, P["gpus"])
    with c3:
        ui.number_input(PAGE, P["price"])
    with c4:
        ui.number_input(PAGE, P["tpot"])
    s = scenarios.scenario(ui.values(PAGE, SPEC))
    found = scenarios.price(s)
    if found is None:
        st.info(
            ui.t(
                "No published rental price for {gpu} in the catalogue: type one (GPU price) to see the cost per million tokens.",
                gpu=s.gpu,
            )
        )
        return
    usd, date, source = found
    try:
        frame, by_load, (best, plain) = scenarios.costs(s, a, usd)
    except ValueError as exc:
        ui.show_error(exc)
        return
    st.caption(
        ui.t("at your price, USD {price:.2f} per GPU-hour", price=usd)
        if s.price > 0
        else ui.t(
            "at USD {price:.2f} per GPU-hour, the catalogue's price for {gpu} ({date}, {source})",
            price=usd,
            gpu=s.gpu,
            date=date,
            source=source,
        )
    )
    if best is None:
        st.warning(ui.t("No K meets TPOT ≤ {ms} ms at any load measured.", ms=f"{s.tpot:g}"))
    else:
        line = ui.t(
            "**Cheapest within the limit:** K = {k} at {n} in flight, USD {usd} per million output tokens.",
            k=int(best["k"]),
            n=int(best["concurrency"]),
            usd=f"{best['usd_per_m']:.3g}",
        )
        if plain is not None:
            line += " " + ui.t(
                "Without speculation: USD {usd} at {n} in flight; speculation saves {saving}.",
                usd=f"{plain['usd_per_m']:.3g}",
                n=int(plain["concurrency"]),
                saving=f"{1 - best['usd_per_m'] / plain['usd_per_m']:.0%}",
            )
        else:
            line += " " + ui.t("Without speculation no load measured meets the limit.")
        st.markdown(line)
    missing, plain_missing = N_("no K meets the TPOT limit"), N_("K = 0 misses the TPOT limit")
    ui.table(
        by_load,
        {
            "concurrency": Col(N_("Requests in flight"), kind="int"),
            "k": Col(N_("best K within the limit"), kind="int", missing=missing),
            "tokens_per_s": Col(N_("tokens/s"), kind="number", digits=0, missing=missing),
            "per_user": Col(N_("tokens/s per user"), kind="number", digits=1, missing=missing),
            "usd_per_m": Col(N_("USD per M tokens"), kind="number", digits=3, missing=missing),
            "plain_usd_per_m": Col(N_("USD per M tokens, K = 0"), kind="number", digits=3, missing=plain_missing),
            "saving": Col(N_("saving"), kind="percent", digits=0, missing=plain_missing),
        },
    )
    ui.chart(ui.figure(tune_figures.pareto, frame, usd, s.tpot / 1e3 or None, ui.language()))
    st.caption(
        ui.t(
            "Each line is one K over the loads measured; dotted lines: equal cost per million output tokens (it depends on tokens/s per GPU alone)."
        )
    )


def capacity(s: scenarios.Scenario, a: tuning.Answer, points: list[dict]) -> None:
    """The largest concurrency the GPUs' memory holds at the tune's context, with the schedule's deepest K and
    without speculation; the loads measured beyond it said."""
    st.subheader(ui.t("Capacity"))
    c1, c2 = st.columns(2)
    with c1:
        ui.selectbox(PAGE, P["target"], format_func=lambda m: m or ui.t("not given"))
    with c2:
        ui.selectbox(PAGE, P["draft"], format_func=lambda m: m or ui.t("none"))
    s = scenarios.scenario(ui.values(PAGE, SPEC))
    if not s.target:
        st.caption(
            ui.t("Name the models the server runs (catalogue) to see how many requests fit in the GPUs' memory.")
        )
        return
    context = scenarios.capacity_context(points)
    k = max([c.k for c in a.choices] + [0]) or max(int(p["k"]) for p in points)
    top = max(c.concurrency for c in a.choices)
    try:
        plan = scenarios.capacity(s, context, k, top)
    except ValueError as exc:
        ui.show_error(exc)
        return
    most = lambda b: ui.t("{b} sequences", b=f"{b:,}") if b else ui.t("the weights alone do not fit")
    left, right = st.columns(2)
    left.metric(
        ui.t("Largest batch at L = {ctx} with speculation (K = {k})", ctx=f"{context:,}", k=k), most(plan.max_batch)
    )
    right.metric(ui.t("… without speculation"), most(plan.max_batch_plain))
    ui.static_table(memory_table(plan), {"GB": ",.2f"})
    if s.draft and plan.max_batch == 0 and plan.max_batch_plain > 0:
        st.warning(
            ui.t(
                "The draft's weights do not fit beside the target's on {gpus} × {gpu}: speculation cannot run here.",
                gpus=s.gpus,
                gpu=s.gpu,
            )
        )
    elif s.draft and top > plan.max_batch > 0:
        st.warning(
            ui.t(
                "At {n} in flight the draft's weights and KV cache do not fit beside the target's: beyond {most} sequences requests wait for memory, not compute.",
                n=top,
                most=plan.max_batch,
            )
        )
    st.caption(
        ui.t(
            "L: the prompt tokens the server counted plus the output tokens, per sequence; TP over the GPUs above; {share} of HBM counted, the rest holds activations and the runtime.",
            share=f"{scenarios.hardware.USABLE_MEMORY:.0%}",
        )
    )


def acceptance(s: scenarios.Scenario, points: list[dict]) -> None:
    """The α this tune measured at its largest K beside a published prior's (``acceptance.domain_priors``)."""
    measured = tuning.acceptance_by_context(points)
    if measured.empty:
        return
    row = measured.iloc[0]
    ui.selectbox(PAGE, P["published"], format_func=lambda key: " · ".join(measured_names(key)))
    s = scenarios.scenario(ui.values(PAGE, SPEC))
    priors = measured_views.domain_priors().set_index(["method", "domain"])
    prior = priors.loc[tuple(s.published.split("/", 1))]
    st.markdown(
        ui.t(
            "**Measured α = {alpha}** (E[N] = {mean} at K = {k}); published for {prior}: median α = {median} (range {lo}–{hi}, {rows} rows from {sources} sources).",
            alpha=f"{row['alpha']:.3f}",
            mean=f"{row['mean_tokens']:.2f}",
            k=int(row["k"]),
            prior=" · ".join(measured_names(s.published)),
            median=f"{prior['alpha']:.3f}",
            lo=f"{prior['alpha_lo']:.3f}",
            hi=f"{prior['alpha_hi']:.3f}",
            rows=int(prior["rows"]),
            sources=int(prior["sources"]),
        )
    )


def measured_names(key: str) -> tuple[str, str]:
    """A prior's method and domain as shown, in the session's language."""
    method, domain = key.split("/", 1)
    return ui.t(PRIOR_METHODS.get(method, method)), ui.t(PRIOR_DOMAINS.get(domain, domain))


def library(s: scenarios.Scenario, points: list[dict], who) -> None:
    """Save the tune as one run of the run library (a row per point with K ≥ 1: ``tuning.library_records``),
    for Compare runs and for the engine profile Validation's Calibrate tab fits and saves by name."""
    st.subheader(ui.t("Run library"))
    st.caption(
        ui.t(
            "Saves the tune as one run: a row per point with K ≥ 1, with its speedup over K = 0 at the same load and prompt length, E[N], the acceptance by position, and the TPOT of K = 0 as the target step. Validation's Calibrate tab fits an engine profile to the run and saves it under a name."
        )
    )
    engine = ui.library()
    if engine is None:
        return
    if (why := ui.refusal(who, "save")) is not None:  # not offered to someone who may not save
        st.info(why, icon=":material/lock:")
        return
    label = scenarios.run_label(s)
    if not st.button(
        ui.t("Save the tune to the run library as “{label}”", label=label),
        icon=":material/save:",
        key=ui.key(PAGE, "save_run"),
    ):
        return
    target, draft, method = scenarios.pair_of(s)
    try:
        records = tuning.library_records(points, label=label, target=target, draft=draft, method=method)
        if not records:
            raise Message(
                "the tune has no point with K ≥ 1 that has an acceptance count or a K = 0 point at its load: a run needs one"
            )
        frame, _ = measurement_records(records, name=label)
        run_id = store.save_run(engine, frame, label=label, source="specviz tune", who=who, page=scenarios.URL)
    except ValueError as exc:
        ui.show_error(exc)
        return
    st.success(
        ui.t(
            "Saved as run #{run}: [compare it]({compare}) or [calibrate an engine profile from it]({calibrate}).",
            run=run_id,
            compare=f"compare-runs?runs={run_id}",
            calibrate=scenarios.validation_link(s, run_id),
        ),
        icon=":material/check_circle:",
    )

"""Tune: measure a server over K × load, fit it, hand back the K per load and each stack's schedule."""

import threading

import pandas as pd
import streamlit as st

from specviz.app import monitor_load, queues, router, tune_aiperf, tune_sections, ui
from specviz.app.figures import tune as tune_figures
from specviz.app.scenarios import tune as scenarios
from specviz.app.scenarios.tune import PAGE, SPEC, URL
from specviz.app.share import by_key
from specviz.app.ui.display import Col
from specviz.base import access, hosting
from specviz.base.i18n import N_, Phrase
from specviz.core import tuning
from specviz.servers import tune

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

LENGTHS = [0, 64, 128, 256, 320, 512, 1024, 2048, 4096, 8192, 16384, 32768]  #: prompt lengths offered
P = by_key(SPEC)
STOP = ui.key(PAGE, "_stop")


def setup() -> scenarios.Scenario:
    """The measurements' source and, for a new tune, its plan."""
    ui.radio(PAGE, P["source"], horizontal=True)
    s = scenarios.scenario(ui.values(PAGE, SPEC))
    if s.source in scenarios.EXAMPLES:
        return s
    if s.source == "aiperf":
        ui.number_input(PAGE, P["k_files"])
        return scenarios.scenario(ui.values(PAGE, SPEC))
    c1, c2, c3 = st.columns([2, 3, 1])
    with c1:
        ui.text_box(PAGE, P["name"], help=ui.t("Run the same tune again to resume it: measured points are kept"))
    if s.source == "remote":
        with c2:
            ui.text_box(PAGE, P["url"], placeholder="http://localhost:8000")
        with c3:
            ui.number_input(PAGE, P["k"])
    else:
        with c2:
            ui.multiselect(PAGE, P["ks"], ui.t("Draft lengths K (0: none)"), range(0, 17))
    d0, d1, d2, d3, d4 = st.columns(5)
    with d0:
        ui.multiselect(PAGE, P["contexts"], ui.t("Prompt lengths in tokens (0: the prompts as they are)"), LENGTHS)
    with d1:
        ui.multiselect(PAGE, P["conc"], ui.t("Requests in flight"), [1, 2, 4, 8, 16, 32, 64])
    with d2:
        ui.number_input(PAGE, P["requests"])
    with d3:
        ui.number_input(PAGE, P["tokens"])
    with d4:
        ui.number_input(PAGE, P["minutes"])
    return scenarios.scenario(ui.values(PAGE, SPEC))


def run_section(s: scenarios.Scenario) -> None:
    """Run (or resume) the sweep with a progress bar; Stop ends it between requests, keeping every point."""
    if s.source == "local" and hosting.is_hosted():
        st.error(ui.t("Starting servers is off in hosted mode: tune a running server an admin allowed."))
        return
    refused = ui.refusal(WHO, "loadgen")
    if refused is not None:
        st.caption(refused)
    go, stop_col = st.columns([1, 5])
    if stop_col.button(ui.t(N_("Stop")), icon=":material/stop:", key=ui.key(PAGE, "stop")):
        st.session_state.get(STOP, threading.Event()).set()
    if not go.button(
        ui.t("Run tune"), icon=":material/tune:", type="primary", key=ui.key(PAGE, "go"), disabled=refused is not None
    ):
        return
    stop = st.session_state[STOP] = threading.Event()
    bar = st.progress(0.0, text=ui.t("starting"))

    def show(p: tune.Progress) -> None:
        bar.progress(
            min(p.saved / max(p.total, 1), 1.0),
            text=ui.t(
                "{saved} of {total} points; measuring K = {k} at {c} in flight",
                saved=p.saved,
                total=p.total,
                k=p.k,
                c=p.concurrency,
            ),
        )

    try:
        access.require(WHO, "loadgen")
        queues.LOADGEN_QUOTA.take(WHO.name, hosted=hosting.is_hosted())
        with queues.LOADGEN_QUEUE.hold(Phrase("a tune"), on_wait=lambda m: st.toast(ui.message(m)), user=WHO.name):
            points, why = scenarios.run(s, monitor_load.load_policy(), stop=stop, progress=show)
    except ValueError as exc:
        ui.show_error(exc)
        return
    finally:
        bar.empty()
    if why != "done":
        st.warning(
            ui.t(
                "The tune stopped ({why}) with {n} points saved; run it again to resume.",
                why=ui.t(scenarios.ENDED[why]),
                n=len(points),
            )
        )


def aiperf_points(s: scenarios.Scenario) -> list[dict]:
    """The uploaded AIPerf exports as points, one file per (K, load); the file at fault named."""
    files = ui.file_uploader(
        ui.t("AIPerf profile exports (profile_export_aiperf.json), one per K and load"),
        ["json"],
        key=ui.key(PAGE, "aiperf_files"),
        accept_multiple_files=True,
    )
    if not files:
        st.info(
            ui.t(
                "Upload one AIPerf export per K and load: aiperf profile --concurrency C against the server at each K."
            )
        )
        return []
    try:
        return tune_aiperf.aiperf_points([(f.name, f.getvalue()) for f in files], s.k_files)
    except ValueError as exc:
        ui.show_error(exc)
        return []


def confirm_section(prior: tuple, points: list[dict]) -> None:
    """An earlier tune's predictions against this tune's measurements at the same K and load."""
    shown = tuning.confirm(scenarios.answer(prior), points)
    if shown.empty:
        st.info(ui.t("The two tunes share no (K, load) point to compare."))
        return
    st.caption(ui.t("Median |predicted / measured − 1| of tokens/s: {e}", e=f"{shown['error'].abs().median():.1%}"))
    ui.table(
        shown,
        {
            "k": Col("K", kind="int"),
            "concurrency": Col(N_("Requests in flight"), kind="int"),
            "tpot_s": Col(N_("TPOT, predicted"), "ms", "number", 2, 1e3),
            "measured_tpot_s": Col(N_("TPOT, measured"), "ms", "number", 2, 1e3),
            "tokens_per_s": Col(N_("tokens/s, predicted"), kind="number", digits=0),
            "measured_tokens_per_s": Col(N_("tokens/s, measured"), kind="number", digits=0),
            "error": Col(N_("prediction error"), kind="percent", digits=1),
        },
    )


def context_section(s: scenarios.Scenario, all_points: list[dict]) -> tuple[int, list[dict]]:
    """K*(C, L) and the acceptance by prompt length where the tune measured several; the points of the context
    the rest of the page reads."""
    n, measured = scenarios.context_shown(s, all_points)
    if len(measured) > 1:
        st.subheader(ui.t("By prompt length"))
        try:
            answers = tuning.analyse_by_context(all_points)
        except ValueError as exc:
            ui.show_error(exc)
        else:
            frame = tuning.k_by_context(all_points, answers)
            ui.chart(ui.figure(tune_figures.k_map, frame, ui.language()))
            st.caption(ui.t("The best K by requests in flight and prompt length, each context fitted on its own."))
            ui.table(
                tuning.acceptance_by_context(all_points),
                {
                    "context": Col(N_("Prompt length asked"), kind="int"),
                    "prompt_tokens": Col(
                        N_("prompt tokens counted"), kind="number", digits=0, missing=N_("the server reported none")
                    ),
                    "k": Col("K", kind="int"),
                    "mean_tokens": Col("E[N]", kind="number", digits=2),
                    "alpha": Col("α", kind="number", digits=3),
                },
            )
        ui.number_input(PAGE, P["ctx"], help=ui.t("measured: {lengths}", lengths=", ".join(map(str, measured))))
        if s.ctx != n:
            st.info(
                ui.t("The tune has no prompt length {asked}: the answer below is for {shown}.", asked=s.ctx, shown=n)
            )
    return n, tuning.at_context(all_points, n)


def answer_section(s: scenarios.Scenario, all_points: list[dict]) -> None:
    """The best K per load, the chart, predicted against measured, the schedule's gain and the exports."""
    n, points = context_section(s, all_points)
    ui.text_box(PAGE, P["prior"], placeholder='"example"')
    try:
        prior = scenarios.frozen(scenarios.prior_points(s, n)) if s.prior else None
        a = scenarios.answer(scenarios.frozen(points), prior)
    except ValueError as exc:
        ui.show_error(exc)
        if s.source == "remote" and not s.prior:
            st.info(ui.t("A server measured at one K is priced with the o and r of an earlier tune: name one above."))
        return
    best = {c.concurrency: c.k for c in a.choices}
    cols = st.columns(len(a.choices))
    for col, c in zip(cols, a.choices, strict=True):
        gain = c.tokens_per_s / c.without_s - 1 if c.without_s > 0 else 0.0
        col.metric(ui.t("best K at {n} in flight", n=c.concurrency), c.k, f"{gain:+.0%}" if c.k else None)
    ui.chart(tune_figures.tokens_by_k(a.table, best, lang=ui.language()))
    st.caption(ui.t("Lines: predicted from each load's fitted round cost; dots: measured; rings: the best K."))
    tune_sections.acceptance(s, points)
    fits = [vars(f) | {"measured_ks": ", ".join(map(str, f.measured_ks)), "how": ui.t(f.how)} for f in a.fits]
    ui.table(
        pd.DataFrame(fits),
        {
            "concurrency": Col(N_("Requests in flight"), kind="int"),
            "t0_s": Col("T0", "ms", "number", 2, 1e3, help=N_("the target-only step")),
            "overhead": Col("o", kind="number", digits=3, help=N_("a round's fixed extra work, in target steps")),
            "per_token": Col("r", kind="number", digits=3, help=N_("one more drafted token, in target steps")),
            "measured_ks": Col(N_("K measured"), kind="text"),
            "how": Col(N_("How the line is set"), kind="text"),
        },
    )
    static = None
    try:
        mix = scenarios.parse_mix(s.mix, [c.concurrency for c in a.choices])
        table = {(int(r.k), int(r.concurrency)): float(r.tokens_per_s) for r in a.table.itertuples()}
        static, static_tps, _, sched_tps, gain = tuning.static_vs_schedule(
            table, [c.concurrency for c in a.choices], sorted({int(k) for k, _ in table}), mix
        )
    except ValueError as exc:
        ui.show_error(exc)
    else:
        st.markdown(
            ui.t(
                "**Schedule** {tiers}: {sched} tokens/s over the traffic mix, {gain} against the best single K = {k} ({static} tokens/s).",
                tiers=", ".join(ui.t("from {n} in flight K = {k}", n=n, k=k) for n, k in a.tiers),
                sched=f"{sched_tps:,.0f}",
                gain=f"{gain:+.1%}",
                k=static,
                static=f"{static_tps:,.0f}",
            )
        )
    with st.expander(ui.t("Predicted and measured, every point"), icon=":material/table:"):
        ui.table(
            a.table,
            {
                "k": Col("K", kind="int"),
                "concurrency": Col(N_("Requests in flight"), kind="int"),
                "tpot_s": Col(N_("TPOT, predicted"), "ms", "number", 2, 1e3),
                "measured_tpot_s": Col(N_("TPOT, measured"), "ms", "number", 2, 1e3, missing=N_("not measured")),
                "tokens_per_s": Col(N_("tokens/s, predicted"), kind="number", digits=0),
                "measured_tokens_per_s": Col(
                    N_("tokens/s, measured"), kind="number", digits=0, missing=N_("not measured")
                ),
            },
        )
    if s.source == "remote":
        for load, k, gain in tuning.next_to_measure(a, s.k):
            st.info(
                ui.t(
                    "Worth measuring next: K = {k} at {n} in flight, predicted {gain} over the server's K = {now}. Restart the server at K = {k}, tune it under a new name, and name this tune in that tune's comparison box.",
                    k=k,
                    n=load,
                    gain=f"{gain:+.0%}",
                    now=s.k,
                ),
                icon=":material/arrow_forward:",
            )
    if prior:
        confirm_section(prior, points)
    ui.text_box(PAGE, P["mix"], placeholder="1: 0.5, 8: 0.5")
    ui.selectbox(PAGE, P["algorithm"])
    texts, notes = scenarios.exports(a, s.algorithm, static), scenarios.switching_notes(a)
    for tab, (stack, text) in zip(st.tabs(list(texts)), texts.items(), strict=True):
        tab.code(text, language="bash" if not text.lstrip().startswith("{") else "json", wrap_lines=True)
        if stack in notes:
            tab.caption(notes[stack])
    tune_sections.cost(s, a)
    tune_sections.capacity(s, a, points)
    tune_sections.library(s, all_points, WHO)


st.title(ui.t("Tune"))
st.caption(
    ui.t(
        "Measures a server at each draft length and load, fits each load's round cost, and gives the best K per load, the schedule each serving stack takes, and its gain over one fixed K."
    )
)
try:
    WHO = ui.identity()
except ValueError as exc:
    ui.show_error(exc)
    WHO = access.anonymous()
ui.restore(PAGE, SPEC)
s = setup()
where, points = None, []
if s.source == "aiperf":
    points = aiperf_points(s)
else:
    try:
        where = scenarios.folder(s)
    except ValueError as exc:
        ui.show_error(exc)
    if where is not None and s.source not in scenarios.EXAMPLES:
        run_section(s)
    points = tune.read_points(where) if where is not None else []
if s.source == "example":
    st.info(
        ui.t(
            "The example: the bundled pair on llama.cpp's llama-server, measured by benchmarks/tune_bench.py (docs/tune.md)."
        )
    )
elif s.source == "lengths":
    st.info(
        ui.t(
            "The example over prompt lengths: the bundled pair on llama.cpp's llama-server at 64, 192 and 320 prompt tokens, measured with specviz tune (data/tune/README.md)."
        )
    )
if points:
    answer_section(s, points)
elif where is not None:
    st.info(ui.t("No points measured yet: run the tune."))
ui.publish(PAGE, SPEC, URL)

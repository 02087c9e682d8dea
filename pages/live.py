"""Live benchmark: run a draft/target pair here and see where the measurements fall on the theory."""

import streamlit as st

from specviz.app import figures, live, overlays, router, ui
from specviz.app.live import tables, views
from specviz.app.share import by_key
from specviz.base import access, hosting
from specviz.base.i18n import N_, plural
from specviz.core import policies
from specviz.data import store

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "live", "live"


def key(name: str) -> str:
    return ui.key(PAGE, name)


def device_note(device: str) -> None:
    gpu = live.gpu_summary(device)
    if gpu is not None:
        st.caption(ui.t("Device: **{gpu}**.", gpu=gpu))
    else:
        st.info(
            ui.t(
                "Running on the CPU: the measured speedups reflect CPU costs, not a GPU's. The column c is the measured target step ÷ draft step; the bundled target's linear layers run through oneDNN with prepacked weights."
            ),
            icon=":material/memory:",
        )


def controls(limits: live.Limits, p: dict) -> None:
    c1, c2, c3 = st.columns([3, 1, 1])
    try:
        st.session_state[key("pair")] = live.check_pair(st.session_state[key("pair")], limits)  # normalised
    except ValueError as exc:  # e.g. a link naming a pair this deployment refuses
        ui.show_error(exc)
        st.session_state[key("pair")] = p["pair"].default
    if limits.hosted:
        c1.selectbox(
            ui.t("Draft/target pair"),
            live.pair_choices(limits),
            key=key("pair"),
            help=ui.t("This hosted deployment allows the bundled pair and its allow-list."),
        )
    else:
        ui.text_box(
            PAGE,
            p["pair"],
            container=c1,
            help=ui.t(
                "'bundled' (ships with specviz, works offline), 'TARGET,DRAFT': Hugging Face ids or local folders sharing a tokenizer (needs transformers), or 'TARGET+ngram' (or '+ngram-vllm'): the target drafting by prompt lookup, no draft model (e.g. 'bundled-target+ngram')."
            ),
        )
    with c2:
        ui.selectbox(PAGE, p["device"], format_func=tables.choice_labels(p["device"].choices, ui.t).get)
    with c3:
        ui.selectbox(
            PAGE,
            p["dtype"],
            format_func=tables.choice_labels(p["dtype"].choices, ui.t).get,
            help=ui.t("auto: fp32 on CPU, bf16/fp16 on CUDA"),
        )
    c1, c2 = st.columns([1, 3])
    with c1:
        ui.radio(PAGE, p["prompts"])
    with c2:
        if st.session_state[key("prompts")] == "bundled":
            ui.number_input(PAGE, p["n_prompts"])
        else:
            ui.text_box(PAGE, p["text"], area=True, height=100)
    ui.radio(
        PAGE,
        p["shape"],
        horizontal=True,
    )
    if st.session_state[key("shape")] == "tree":
        c1, c2 = st.columns([3, 2])
        ui.text_box(
            PAGE,
            p["trees"],
            container=c1,
            help=ui.t(
                "chain:K · chains:N,D (N independent chains of depth D) · topk:D,k,N (EAGLE-2 / SGLang: depth, top-k, N drafts) · optimal:N,D (Sequoia's tree of N drafts, depth ≤ D)"
            ),
        )
        ui.text_box(
            PAGE,
            p["tree_p"],
            container=c2,
            placeholder=ui.t("blank: measured by a pilot run"),
            help=ui.t(
                "Positional acceptance p_1, p_2, … (comma-separated, sum ≤ 1). Blank: a pilot run of 8 chains × 4 measures it at each temperature; the Drafting strategies page explains the model."
            ),
        )
    c1, c2, c3, c4, c5 = st.columns([2, 2, 1, 1, 1])
    ks, temps = p["ks"], p["temps"]
    with c1:
        if st.session_state[key("shape")] == "chain":
            ui.multiselect(PAGE, ks, ui.t("K values"), range(int(ks.lo), int(ks.hi) + 1))
    offered = sorted({*(t for t in tables.T_CHOICES if temps.lo <= t <= temps.hi), *st.session_state[key("temps")]})
    with c2:
        ui.multiselect(PAGE, temps, ui.t("Temperatures (0 = greedy)"), offered)  # a linked temperature stays offered
    with c3:
        ui.number_input(PAGE, p["new_tokens"])
    with c4:
        ui.number_input(PAGE, p["repeats"])
    with c5:
        ui.number_input(PAGE, p["seed"])
    if st.session_state[key("shape")] == "chain":
        ui.checkbox(
            PAGE,
            p["trace"],
            help=ui.t(
                "The draft's chain of the largest K from every position of the greedy output: replaying any draft-length rule on it gives the rounds the engine would run with that rule. Costs about new tokens × K draft steps per prompt after the run."
            ),
        )
    ui.radio(
        PAGE,
        p["engine"],
        horizontal=True,
        help=ui.t(
            "How specviz's own GPT runs its decode steps. Compiled: each step is compiled once per shape (torch.compile; CUDA graphs on CUDA) and a speculative round reads one number back from the device; compiling takes seconds to minutes the first time and is reported apart from the timings. Both: the same cells with each engine, to see how fixed per-step costs move the speedup at the same α."
        ),
    )
    batches = p["batches"]
    offered_b = sorted({*(b for b in (1, 2, 4, 8, 16, 32, 64) if b <= batches.hi), *st.session_state[key("batches")]})
    ui.multiselect(
        PAGE,
        batches,
        ui.t("Batch sizes (sequences decoded at once; anything but 1 measures the speedup of a whole batch)"),
        offered_b,
    )


def run_benchmark(run: live.LiveRun) -> None:
    """Wait for the queue, then measure on the live worker, drawing progress; a Stop interrupts it in ``tick``."""
    slot = st.empty()

    def tick() -> None:  # the Stop button interrupts the script in here (at slot.progress), also while loading
        fraction, text = live.progress_bar(run, ui.language())
        slot.progress(fraction, text=text)

    live.execute(
        run, tick, on_wait=lambda m: slot.warning(ui.message(m), icon=":material/hourglass_top:"), user=WHO.name
    )
    slot.empty()


def show_keep(run: live.LiveRun, frame) -> None:
    if run.trace is not None:
        st.caption(
            ui.t(
                "Greedy trace recorded: {rounds} positions × K_max = {k_max}. The Drafting strategies page replays draft-length rules on it (Draft-length policies, trace: the live page's last run).",
                rounds=f"{run.trace.rounds:,}",
                k_max=run.trace.k_max,
            )
        )
        st.download_button(
            ui.t("Download the trace (JSON lines)"),
            policies.trace_text(run.trace),
            "specviz_trace.jsonl",
            "application/jsonl",
            icon=":material/download:",
        )
    c1, c2, _ = st.columns([1, 1, 2])
    c1.download_button(
        ui.t("Download as measurement CSV"),
        store.export_csv(run.table()),
        "specviz_live.csv",
        "text/csv",
        icon=":material/download:",
    )
    engine = ui.library()
    if engine is not None and not run.saved and (why := ui.refusal(WHO, "save")) is not None:
        st.caption(why)
    elif (
        engine is not None
        and not run.saved
        and c2.button(ui.t("Save to the run library"), icon=":material/save:", type="primary")
    ):
        try:
            run.saved = store.save_run(engine, frame, label=run.library_label(), source="live page", who=WHO, page=URL)
        except ValueError as exc:
            ui.show_error(exc)
    if run.saved:
        st.success(
            ui.t("Saved as run #{run}: [open it on the Compare runs page](compare-runs?runs={run}).", run=run.saved),
            icon=":material/check_circle:",
        )


def stopped_reason(run: live.LiveRun) -> str:
    """Why the run stopped, as shown (in the session's language): it may quote an error (plain text; paths
    hidden in hosted mode)."""
    return ui.plain(ui.public_message(run.stopped_text(ui.language())))


def show_results(run: live.LiveRun) -> None:
    if not run.rows:
        st.info(
            ui.t("No cell finished. The run stopped: {reason}.", reason=stopped_reason(run))
            if run.stopped
            else ui.t("No cell finished.")
        )
        return
    if run.stopped:
        st.warning(
            ui.t(
                "The run stopped ({reason}); showing the {n} of {cells} cell(s) that finished.",
                reason=stopped_reason(run),
                n=len(run.rows),
                cells=run.cells,
            ),
            icon=":material/stop_circle:",
        )
    elif run.seconds:
        st.success(
            ui.t(
                plural("{n} cell measured in {s} s.", "{n} cells measured in {s} s.", len(run.rows)),
                n=len(run.rows),
                s=f"{run.seconds:.1f}",
            ),
            icon=":material/check:",
        )
    frame = run.frame()
    if run.request.batched:
        ui.table(frame[list(tables.BATCH_TABLE)], tables.columns(tables.BATCH_TABLE), key="tbl_batch")
        views.show_exactness(run)
        ui.chart(figures.speedup_by_batch_measured(frame, lang=ui.language()), key="fig_batches")
        st.caption(
            ui.t(
                "Each point decodes B sequences at once, target-only and speculatively; the speedup is the ratio of the whole batch's tokens/s. The Hardware & batch page predicts the same curve for real GPUs."
            )
        )
        show_keep(run, frame)
        return
    if run.request.trees:
        views.show_tree_results(run, frame)
        show_keep(run, frame)
        return
    points = overlays.with_series(frame, lang=ui.language())
    params = overlays.series_params(points)
    ui.table(frame[list(tables.TABLE)], tables.columns(tables.TABLE), key="tbl_cells")
    views.show_exactness(run)
    views.show_charts(run, points, overlays.curves(params), params)
    show_keep(run, frame)


st.title(ui.t("Live benchmark"))
st.caption(
    ui.t(
        "Run a draft/target pair on this server, then compare the measured speedups with the theory at the measured α and c. The same code path as `python -m specviz bench`."
    )
)
try:
    LIMITS = live.limits_from_env()
except ValueError as exc:
    ui.show_error(exc)
    st.stop()
SPEC = live.controls(LIMITS)
ui.restore(PAGE, SPEC)
controls(LIMITS, by_key(SPEC))
view = ui.values(PAGE, SPEC)
device_note(view["device"])
try:
    WHO = ui.identity()  # who starts and saves runs: the library and the queue act for this person
except ValueError as exc:  # a sign-in that gave no e-mail address
    ui.show_error(exc)
    WHO = access.anonymous()
refused = ui.refusal(WHO, "live")
if refused is not None:
    st.info(refused, icon=":material/lock:")
busy = live.RUN_QUEUE.busy()
if busy:
    st.caption(ui.t("Another run is in progress ({busy}); a new run will queue behind it.", busy=ui.message(busy)))
c_run, c_stop, _ = st.columns([1, 1, 4])
run_clicked = c_run.button(ui.t("Run"), type="primary", icon=":material/play_arrow:", disabled=refused is not None)
stop_clicked = c_stop.button(
    ui.t(N_("Stop")),
    icon=":material/stop:",
    help=ui.t("Stops after the current run; finished cells stay."),
)
result = live.last_run(st.session_state)
if result is not None and not result.done and not run_clicked:  # the last run was interrupted
    result.interrupted(by_stop_button=stop_clicked)
if run_clicked:
    try:
        request = live.make_request(view, LIMITS)
        access.require(WHO, "live")  # the button is off for those refused; a stale page is refused here
        live.LIVE_QUOTA.take(WHO.name, hosted=hosting.is_hosted())
        live.keep_run(st.session_state, live.LiveRun(request))
        run_benchmark(live.last_run(st.session_state))
    except (ValueError, RuntimeError, OSError) as exc:  # bad request, unknown model, out of memory …
        ui.show_error(exc)
        live.keep_run(st.session_state, live.kept_after_error(live.last_run(st.session_state), result, exc))
    result = live.last_run(st.session_state)
if result is not None:
    with ui.reported_errors():
        show_results(result)
ui.publish(PAGE, SPEC, URL)

"""Live benchmark: run a draft/target pair here and see where the measurements fall on the theory."""

import streamlit as st

from specviz import figures, live, overlays, policies, store, ui
from specviz.share import by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

PAGE, URL = "live", "live"
T_CHOICES = (0.0, 0.5, 0.7, 1.0)  # offered temperatures (a linked one outside them is kept)
TABLE = {  # shown column → its heading
    "k": "k",
    "temperature": "temperature",
    "alpha": "α̂ = A/(A+R)",
    "alpha_overlap": "α̂ = mean Σmin(p,q)",
    "c": "c",
    "v": "v",
    "o": "o",
    "mean_accepted_tokens": "E[N] measured",
    "speedup": "speedup",
    "predicted_speedup": "predicted (basic)",
    "predicted_speedup_measured_cost": "predicted (measured cost)",
    "greedy_exact": "greedy_exact",
}
TREE_TABLE = {  # the tree cells' columns
    "tree": "tree",
    "temperature": "temperature",
    "mean_accepted_tokens": "tokens/round measured",
    "predicted_tokens_per_round": "F(T) at measured p",
    "tree_p": "p̂ by rank",
    "c": "c",
    "v": "v",
    "speedup": "speedup",
    "predicted_speedup_measured_cost": "predicted (measured cost)",
    "greedy_exact": "greedy_exact",
}
BATCH_TABLE = {  # the batched cells' columns
    "batch_size": "B",
    "k": "k",
    "temperature": "temperature",
    "alpha": "α̂ = A/(A+R)",
    "mean_accepted_tokens": "E[N] measured",
    "speedup": "speedup (whole batch)",
    "tokens_per_s": "tokens/s (speculative)",
    "baseline_tokens_per_s": "tokens/s (target only)",
    "greedy_exact": "greedy_exact",
}
CPU_NOTE = (
    "Running on the CPU: the measured speedups reflect CPU costs, not a GPU's. The column c is the "
    "measured target step ÷ draft step; the bundled target's linear layers run through oneDNN with "
    "prepacked weights."
)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def device_note(device: str) -> None:
    gpu = live.gpu_summary(device)
    if gpu is not None:
        st.caption(f"Device: **{gpu}**.")
    else:
        st.info(CPU_NOTE, icon=":material/memory:")


def controls(limits: live.Limits, p: dict) -> None:
    c1, c2, c3 = st.columns([3, 1, 1])
    try:
        st.session_state[key("pair")] = live.check_pair(st.session_state[key("pair")], limits)  # normalised
    except ValueError as exc:  # e.g. a link naming a pair this deployment refuses
        ui.show_error(exc)
        st.session_state[key("pair")] = p["pair"].default
    if limits.hosted:
        c1.selectbox(
            "Draft/target pair",
            live.pair_choices(limits),
            key=key("pair"),
            help="This hosted deployment allows the bundled pair and its allow-list.",
        )
    else:
        c1.text_input(
            "Draft/target pair",
            key=key("pair"),
            max_chars=int(p["pair"].hi),
            help="'bundled' (ships with specviz, works offline), 'TARGET,DRAFT': Hugging Face ids or "
            "local folders sharing a tokenizer (needs transformers), or 'TARGET+ngram' (or '+ngram-vllm'): "
            "the target drafting by prompt lookup, no draft model (e.g. 'bundled-target+ngram').",
        )
    with c2:
        ui.selectbox(PAGE, p["device"], "Device")
    with c3:
        ui.selectbox(PAGE, p["dtype"], "dtype", help="auto: fp32 on CPU, bf16/fp16 on CUDA")
    c1, c2 = st.columns([1, 3])
    with c1:
        ui.radio(
            PAGE,
            p["prompts"],
            "Prompts",
            format_func={"bundled": "bundled validation prompts", "custom": "my own text"}.get,
        )
    with c2:
        if st.session_state[key("prompts")] == "bundled":
            ui.number_input(PAGE, p["n_prompts"], "How many bundled prompts (held-out standard-library files)")
        else:
            st.text_area("Prompt", key=key("text"), height=100, max_chars=int(p["text"].hi))
    ui.radio(
        PAGE,
        p["shape"],
        "Draft shape",
        format_func={"chain": "chains of K drafts", "tree": "draft trees"}.get,
        horizontal=True,
    )
    if st.session_state[key("shape")] == "tree":
        c1, c2 = st.columns([3, 2])
        c1.text_input(
            "Draft trees (space-separated)",
            key=key("trees"),
            max_chars=int(p["trees"].hi),
            help="chain:K · chains:N,D (N independent chains of depth D) · topk:D,k,N (EAGLE-2 / SGLang: depth, "
            "top-k, N drafts) · optimal:N,D (Sequoia's tree of N drafts, depth ≤ D)",
        )
        c2.text_input(
            "p for top-k / optimal trees",
            key=key("tree_p"),
            max_chars=int(p["tree_p"].hi),
            placeholder="blank: measured by a pilot run",
            help="Positional acceptance p_1, p_2, … (comma-separated, sum ≤ 1). Blank: a pilot run of 8 chains × 4 "
            "measures it at each temperature; the Drafting strategies page explains the model.",
        )
    c1, c2, c3, c4, c5 = st.columns([2, 2, 1, 1, 1])
    ks, temps = p["ks"], p["temps"]
    with c1:
        if st.session_state[key("shape")] == "chain":
            ui.multiselect(PAGE, ks, "K values", range(int(ks.lo), int(ks.hi) + 1))
    offered = sorted({*(t for t in T_CHOICES if temps.lo <= t <= temps.hi), *st.session_state[key("temps")]})
    with c2:
        ui.multiselect(PAGE, temps, "Temperatures (0 = greedy)", offered)  # a linked temperature stays offered
    with c3:
        ui.number_input(PAGE, p["new_tokens"], "New tokens")
    with c4:
        ui.number_input(PAGE, p["repeats"], "Repeats")
    with c5:
        ui.number_input(PAGE, p["seed"], "Seed")
    if st.session_state[key("shape")] == "chain":
        st.checkbox(
            "Record the greedy trace for replaying draft-length policies (Drafting strategies page)",
            key=key("trace"),
            help="The draft's chain of the largest K from every position of the greedy output: replaying any "
            "draft-length rule on it gives the rounds the engine would run with that rule. Costs about new tokens "
            "× K draft steps per prompt after the run.",
        )
    batches = p["batches"]
    offered_b = sorted({*(b for b in (1, 2, 4, 8, 16, 32, 64) if b <= batches.hi), *st.session_state[key("batches")]})
    ui.multiselect(
        PAGE,
        batches,
        "Batch sizes (sequences decoded at once; anything but 1 measures the speedup of a whole batch)",
        offered_b,
    )


def run_benchmark(run: live.LiveRun) -> None:
    """Wait for the queue, then measure on the live worker, drawing progress; a Stop interrupts it in ``tick``."""
    slot = st.empty()

    def tick() -> None:  # the Stop button interrupts the script in here (at slot.progress), also while loading
        fraction, text = live.progress_bar(run)
        slot.progress(fraction, text=text)

    live.execute(run, tick, on_wait=lambda m: slot.warning(m, icon=":material/hourglass_top:"))
    slot.empty()


def show_exactness(run: live.LiveRun) -> None:
    for d in run.details:
        verdict = live.exactness_message(d)
        if verdict is None:
            continue
        ok, text = verdict
        if ok:
            st.success(text, icon=":material/verified:")
        else:
            st.error(text, icon=":material/report:")


def show_charts(run: live.LiveRun, points, curves, params) -> None:
    tabs = st.tabs(["Speedup vs K", "E[N] vs K", "N per round", "Per position", "Cost per round", "Text"])
    with tabs[0]:
        st.plotly_chart(figures.overlay_speedup_vs_k(points, curves, params), width="stretch")
        st.caption(
            "Solid: the basic model S(α, c, K) at the measured α and c; dashed: with the measured verify cost "
            "v and overhead o; stars: each curve's optimal K; bars: min–max over runs."
        )
    with tabs[1]:
        st.plotly_chart(figures.overlay_expected_tokens(points, curves, params), width="stretch")
    details = run.details
    labels = [live.cell_label(d) for d in details]
    with tabs[2]:
        i = st.selectbox("Cell", range(len(labels)), format_func=labels.__getitem__, key=key("hist_cell"))
        d = details[i]
        pmf = live.predicted_n_pmf(float(run.rows[i]["alpha"]), d["k"])
        st.plotly_chart(
            figures.n_histogram(d["n_counts"], pmf, int(d["n_counts"].sum()), observed="measured"), width="stretch"
        )
    with tabs[3]:
        st.plotly_chart(figures.per_position_figure(overlays.per_position(points)), width="stretch")
        st.caption(
            "a_i: acceptance at draft position i given the earlier ones were accepted. The i.i.d. model "
            "assumes a flat line at α."
        )
    with tabs[4]:
        show_costs(details, labels)
    with tabs[5]:
        show_text(details, labels, "text_cell")


def show_tree_results(run: live.LiveRun, frame) -> None:
    for t, p in run.pilots.items():
        st.caption(f"T = {t:g}: trees built from p = {', '.join(f'{x:.3f}' for x in p)}, measured by a pilot run.")
    st.dataframe(frame[list(TREE_TABLE)].rename(columns=TREE_TABLE), hide_index=True, width="stretch")
    show_exactness(run)
    labels = [live.cell_label(d) for d in run.details]
    tabs = st.tabs(["Tokens per round", "Speedup", "N per round", "Cost per round", "Text"])
    with tabs[0]:
        st.plotly_chart(
            figures.measured_vs_predicted(
                labels,
                frame["mean_accepted_tokens"],
                frame["predicted_tokens_per_round"],
                "tokens per round",
                "F(T) at the measured p",
            ),
            width="stretch",
        )
        st.caption(
            "F(T) is what the positional model predicts from the p̂ measured in the same runs: where the bars "
            "differ, acceptance depends on depth, which the model ignores."
        )
    with tabs[1]:
        st.plotly_chart(
            figures.measured_vs_predicted(
                labels,
                frame["speedup"],
                frame["predicted_speedup_measured_cost"],
                "speedup over target-only",
                "F / (1 + v·N + o + D/c)",
            ),
            width="stretch",
        )
    with tabs[2]:
        i = st.selectbox("Cell", range(len(labels)), format_func=labels.__getitem__, key=key("tree_hist_cell"))
        d = run.details[i]
        st.plotly_chart(
            figures.n_histogram(d["n_counts"], d["n_pmf"], int(d["n_counts"].sum()), observed="measured"),
            width="stretch",
        )
    with tabs[3]:
        show_costs(run.details, labels)
    with tabs[4]:
        show_text(run.details, labels, "tree_text_cell")


def show_costs(details: list[dict], labels: list[str]) -> None:
    st.plotly_chart(
        figures.cost_breakdown(
            labels,
            [d["draft_ms"] for d in details],
            [d["verify_ms"] for d in details],
            [d["other_ms"] for d in details],
            [d["basic_model_ms"] for d in details],
        ),
        width="stretch",
    )
    st.caption(
        "The basic model prices a round at one target step plus one draft step per level (K for a chain, the "
        "depth for a tree). Verifying more tokens costs more than one step (v) and the rule and bookkeeping add "
        "a little (o)."
    )


def show_text(details: list[dict], labels: list[str], name: str) -> None:
    j = st.selectbox("Cell", range(len(labels)), format_func=labels.__getitem__, key=key(name))
    st.markdown(live.legend_html(), unsafe_allow_html=True)
    st.markdown(live.segments_html(details[j]["prompt"][-400:], details[j]["segments"]), unsafe_allow_html=True)
    st.caption("The first run of the cell: the prompt's last 400 characters in grey, then the generated text.")


def show_keep(run: live.LiveRun, frame) -> None:
    if run.trace is not None:
        st.caption(
            f"Greedy trace recorded: {run.trace.rounds:,} positions × K_max = {run.trace.k_max}. The Drafting "
            "strategies page replays draft-length rules on it (Draft-length policies, trace: the live page's last run)."
        )
        st.download_button(
            "Download the trace (JSON lines)",
            policies.trace_text(run.trace),
            "specviz_trace.jsonl",
            "application/jsonl",
            icon=":material/download:",
        )
    c1, c2, _ = st.columns([1, 1, 2])
    c1.download_button(
        "Download as measurement CSV",
        store.export_csv(run.table()),
        "specviz_live.csv",
        "text/csv",
        icon=":material/download:",
    )
    engine = ui.library()
    if (
        engine is not None
        and not run.saved
        and c2.button("Save to the run library", icon=":material/save:", type="primary")
    ):
        try:
            run.saved = store.save_run(engine, frame, label=run.library_label(), source="live page")
        except ValueError as exc:
            ui.show_error(exc)
    if run.saved:
        st.success(
            f"Saved as run #{run.saved}: [open it on the Measured data page](measured-data?runs={run.saved}).",
            icon=":material/check_circle:",
        )


def stopped_reason(run: live.LiveRun) -> str:
    """Why the run stopped, as shown: it may quote an error (plain text; paths hidden in hosted mode)."""
    return ui.plain(ui.public_message(run.stopped))


def show_results(run: live.LiveRun) -> None:
    if not run.rows:
        st.info("No cell finished." + (f" The run stopped: {stopped_reason(run)}." if run.stopped else ""))
        return
    if run.stopped:
        st.warning(
            f"The run stopped ({stopped_reason(run)}); showing the {len(run.rows)} of {run.cells} cell(s) that finished.",
            icon=":material/stop_circle:",
        )
    elif run.seconds:
        st.success(f"{len(run.rows)} cell(s) measured in {run.seconds:.1f} s.", icon=":material/check:")
    frame = run.frame()
    if run.request.batched:
        st.dataframe(frame[list(BATCH_TABLE)].rename(columns=BATCH_TABLE), hide_index=True, width="stretch")
        show_exactness(run)
        st.plotly_chart(figures.speedup_by_batch_measured(frame), key="fig_batches")
        st.caption(
            "Each point decodes B sequences at once, target-only and speculatively; the speedup is the ratio of "
            "the whole batch's tokens/s. The Hardware & batch page predicts the same curve for real GPUs."
        )
        show_keep(run, frame)
        return
    if run.request.trees:
        show_tree_results(run, frame)
        show_keep(run, frame)
        return
    points = overlays.with_series(frame)
    params = overlays.series_params(points)
    st.dataframe(frame[list(TABLE)].rename(columns=TABLE), hide_index=True, width="stretch")
    show_exactness(run)
    show_charts(run, points, overlays.curves(params), params)
    show_keep(run, frame)


st.title("Live benchmark")
st.caption(
    "Run a draft/target pair on this server, then compare the measured speedups with the theory at the "
    "measured α and c. The same code path as `python -m specviz bench`."
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
busy = live.RUN_QUEUE.busy()
if busy:
    st.caption(f"Another run is in progress ({busy}); a new run will queue behind it.")
c_run, c_stop, _ = st.columns([1, 1, 4])
run_clicked = c_run.button("Run", type="primary", icon=":material/play_arrow:")
stop_clicked = c_stop.button("Stop", icon=":material/stop:", help="Stops after the current run; finished cells stay.")
result = st.session_state.get(key("result"))
if result is not None and not result.done and not run_clicked:  # the last run was interrupted
    result.interrupted(by_stop_button=stop_clicked)
if run_clicked:
    try:
        st.session_state[key("result")] = live.LiveRun(live.make_request(view, LIMITS))
        run_benchmark(st.session_state[key("result")])
    except (ValueError, RuntimeError, OSError) as exc:  # bad request, unknown model, out of memory …
        ui.show_error(exc)
        st.session_state[key("result")] = live.kept_after_error(st.session_state.get(key("result")), result, exc)
    result = st.session_state.get(key("result"))
if result is not None:
    with ui.reported_errors():
        show_results(result)
ui.publish(PAGE, SPEC, URL)

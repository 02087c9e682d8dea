"""Live benchmark: run a draft/target pair here and see where the measurements fall on the theory."""

import streamlit as st

from specviz.app import figures, live, overlays, router, ui
from specviz.app.share import by_key
from specviz.core import policies
from specviz.data import store

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "live", "live"
T_CHOICES = (0.0, 0.5, 0.7, 1.0)  # offered temperatures (a linked one outside them is kept)
TABLE = {  # shown column → its heading: a catalogue key ("live.…") or a symbol shown as it is
    "k": "k",
    "temperature": "live.col.temperature",
    "alpha": "α̂ = A/(A+R)",
    "alpha_overlap": "live.col.alpha_overlap",
    "c": "c",
    "v": "v",
    "o": "o",
    "mean_accepted_tokens": "live.col.en_measured",
    "speedup": "live.col.speedup",
    "predicted_speedup": "live.col.predicted_basic",
    "predicted_speedup_measured_cost": "live.col.predicted_cost",
    "greedy_exact": "live.col.greedy_exact",
}
TREE_TABLE = {  # the tree cells' columns
    "tree": "live.col.tree",
    "temperature": "live.col.temperature",
    "mean_accepted_tokens": "live.col.tokens_round",
    "predicted_tokens_per_round": "live.col.f_measured_p",
    "tree_p": "live.col.tree_p",
    "c": "c",
    "v": "v",
    "speedup": "live.col.speedup",
    "predicted_speedup_measured_cost": "live.col.predicted_cost",
    "greedy_exact": "live.col.greedy_exact",
}
BATCH_TABLE = {  # the batched cells' columns
    "batch_size": "B",
    "k": "k",
    "temperature": "live.col.temperature",
    "alpha": "α̂ = A/(A+R)",
    "mean_accepted_tokens": "live.col.en_measured",
    "speedup": "live.col.speedup_batch",
    "tokens_per_s": "live.col.tps_spec",
    "baseline_tokens_per_s": "live.col.tps_target",
    "greedy_exact": "live.col.greedy_exact",
}


def key(name: str) -> str:
    return ui.key(PAGE, name)


def shown_table(frame, table: dict[str, str]):
    """The columns of ``table`` under their headings in the session's language (display only: the
    downloaded CSV keeps the canonical names)."""
    headings = {c: ui.t(h) if h.startswith("live.") else h for c, h in table.items()}
    return frame[list(table)].rename(columns=headings)


def choice_labels(choices, name: str | None = None) -> dict:
    """Each choice's label in the session's language (``live.NAME.CHOICE``; without ``name``, "auto"
    translated and the rest as they are), computed now: a widget's format_func looks them up."""
    if name is None:
        return {c: ui.t("live.auto") if c == "auto" else c for c in choices}
    return {c: ui.t(f"live.{name}.{c}") for c in choices}


def device_note(device: str) -> None:
    gpu = live.gpu_summary(device)
    if gpu is not None:
        st.caption(ui.t("live.device", gpu=gpu))
    else:
        st.info(ui.t("live.cpu_note"), icon=":material/memory:")


def controls(limits: live.Limits, p: dict) -> None:
    c1, c2, c3 = st.columns([3, 1, 1])
    try:
        st.session_state[key("pair")] = live.check_pair(st.session_state[key("pair")], limits)  # normalised
    except ValueError as exc:  # e.g. a link naming a pair this deployment refuses
        ui.show_error(exc)
        st.session_state[key("pair")] = p["pair"].default
    if limits.hosted:
        c1.selectbox(
            ui.t("live.pair"),
            live.pair_choices(limits),
            key=key("pair"),
            help=ui.t("live.pair_help_hosted"),
        )
    else:
        ui.text_box(PAGE, p["pair"], ui.t("live.pair"), container=c1, help=ui.t("live.pair_help"))
    with c2:
        ui.selectbox(PAGE, p["device"], ui.t("live.device_label"), format_func=choice_labels(p["device"].choices).get)
    with c3:
        ui.selectbox(
            PAGE,
            p["dtype"],
            ui.t("live.dtype"),
            format_func=choice_labels(p["dtype"].choices).get,
            help=ui.t("live.dtype_help"),
        )
    c1, c2 = st.columns([1, 3])
    with c1:
        ui.radio(
            PAGE, p["prompts"], ui.t("live.prompts"), format_func=choice_labels(p["prompts"].choices, "prompts").get
        )
    with c2:
        if st.session_state[key("prompts")] == "bundled":
            ui.number_input(PAGE, p["n_prompts"], ui.t("live.n_prompts"))
        else:
            ui.text_box(PAGE, p["text"], ui.t("live.prompt"), area=True, height=100)
    ui.radio(
        PAGE,
        p["shape"],
        ui.t("live.shape"),
        format_func=choice_labels(p["shape"].choices, "shape").get,
        horizontal=True,
    )
    if st.session_state[key("shape")] == "tree":
        c1, c2 = st.columns([3, 2])
        ui.text_box(PAGE, p["trees"], ui.t("live.trees"), container=c1, help=ui.t("live.trees_help"))
        ui.text_box(
            PAGE,
            p["tree_p"],
            ui.t("live.tree_p"),
            container=c2,
            placeholder=ui.t("live.tree_p_placeholder"),
            help=ui.t("live.tree_p_help"),
        )
    c1, c2, c3, c4, c5 = st.columns([2, 2, 1, 1, 1])
    ks, temps = p["ks"], p["temps"]
    with c1:
        if st.session_state[key("shape")] == "chain":
            ui.multiselect(PAGE, ks, ui.t("live.ks"), range(int(ks.lo), int(ks.hi) + 1))
    offered = sorted({*(t for t in T_CHOICES if temps.lo <= t <= temps.hi), *st.session_state[key("temps")]})
    with c2:
        ui.multiselect(PAGE, temps, ui.t("live.temps"), offered)  # a linked temperature stays offered
    with c3:
        ui.number_input(PAGE, p["new_tokens"], ui.t("live.new_tokens"))
    with c4:
        ui.number_input(PAGE, p["repeats"], ui.t("live.repeats"))
    with c5:
        ui.number_input(PAGE, p["seed"], ui.t("live.seed"))
    if st.session_state[key("shape")] == "chain":
        st.checkbox(ui.t("live.trace"), key=key("trace"), help=ui.t("live.trace_help"))
    batches = p["batches"]
    offered_b = sorted({*(b for b in (1, 2, 4, 8, 16, 32, 64) if b <= batches.hi), *st.session_state[key("batches")]})
    ui.multiselect(PAGE, batches, ui.t("live.batches"), offered_b)


def run_benchmark(run: live.LiveRun) -> None:
    """Wait for the queue, then measure on the live worker, drawing progress; a Stop interrupts it in ``tick``."""
    slot = st.empty()

    def tick() -> None:  # the Stop button interrupts the script in here (at slot.progress), also while loading
        fraction, text = live.progress_bar(run, ui.language())
        slot.progress(fraction, text=text)

    live.execute(run, tick, on_wait=lambda m: slot.warning(ui.message(m), icon=":material/hourglass_top:"))
    slot.empty()


def show_exactness(run: live.LiveRun) -> None:
    for d in run.details:
        verdict = live.exactness_message(d, ui.language())
        if verdict is None:
            continue
        ok, text = verdict
        if ok:
            st.success(text, icon=":material/verified:")
        else:
            st.error(text, icon=":material/report:")


def show_charts(run: live.LiveRun, points, curves, params) -> None:
    names = ("speedup_k", "en_k", "n_round", "per_position", "cost", "text")
    tabs = st.tabs([ui.t(f"live.tab.{name}") for name in names])
    with tabs[0]:
        ui.chart(figures.overlay_speedup_vs_k(points, curves, params, lang=ui.language()), width="stretch")
        st.caption(ui.t("live.speedup_caption"))
    with tabs[1]:
        ui.chart(figures.overlay_expected_tokens(points, curves, params, lang=ui.language()), width="stretch")
    details = run.details
    labels = [live.cell_label(d, ui.language()) for d in details]
    with tabs[2]:
        i = st.selectbox(ui.t("live.cell"), range(len(labels)), format_func=labels.__getitem__, key=key("hist_cell"))
        d = details[i]
        pmf = live.predicted_n_pmf(float(run.rows[i]["alpha"]), d["k"])
        observed = ui.t("live.measured")
        ui.chart(
            figures.n_histogram(d["n_counts"], pmf, int(d["n_counts"].sum()), observed=observed, lang=ui.language()),
            width="stretch",
        )
    with tabs[3]:
        ui.chart(figures.per_position_figure(overlays.per_position(points), lang=ui.language()), width="stretch")
        st.caption(ui.t("live.per_position_caption"))
    with tabs[4]:
        show_costs(details, labels)
    with tabs[5]:
        show_text(details, labels, "text_cell")


def show_tree_results(run: live.LiveRun, frame) -> None:
    for t, p in run.pilots.items():
        st.caption(ui.t("live.pilot", t=f"{t:g}", p=", ".join(f"{x:.3f}" for x in p)))
    st.dataframe(shown_table(frame, TREE_TABLE), hide_index=True, width="stretch")
    show_exactness(run)
    labels = [live.cell_label(d, ui.language()) for d in run.details]
    tabs = st.tabs([ui.t(f"live.tab.{name}") for name in ("tokens_round", "speedup", "n_round", "cost", "text")])
    with tabs[0]:
        ui.chart(
            figures.measured_vs_predicted(
                labels,
                frame["mean_accepted_tokens"],
                frame["predicted_tokens_per_round"],
                ui.t("live.tokens_per_round"),
                ui.t("live.f_at_measured_p"),
                lang=ui.language(),
            ),
            width="stretch",
        )
        st.caption(ui.t("live.f_caption"))
    with tabs[1]:
        ui.chart(
            figures.measured_vs_predicted(
                labels,
                frame["speedup"],
                frame["predicted_speedup_measured_cost"],
                ui.t("live.speedup_over_target"),
                "F / (1 + v·N + o + D/c)",
                lang=ui.language(),
            ),
            width="stretch",
        )
    with tabs[2]:
        i = st.selectbox(
            ui.t("live.cell"), range(len(labels)), format_func=labels.__getitem__, key=key("tree_hist_cell")
        )
        d = run.details[i]
        ui.chart(
            figures.n_histogram(
                d["n_counts"], d["n_pmf"], int(d["n_counts"].sum()), observed=ui.t("live.measured"), lang=ui.language()
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
    st.caption(ui.t("live.cost_caption"))


def show_text(details: list[dict], labels: list[str], name: str) -> None:
    j = st.selectbox(ui.t("live.cell"), range(len(labels)), format_func=labels.__getitem__, key=key(name))
    lang = ui.language()
    st.markdown(live.legend_html(lang), unsafe_allow_html=True)
    st.markdown(live.segments_html(details[j]["prompt"][-400:], details[j]["segments"], lang), unsafe_allow_html=True)
    st.caption(ui.t("live.text_caption"))


def show_keep(run: live.LiveRun, frame) -> None:
    if run.trace is not None:
        st.caption(ui.t("live.trace_recorded", rounds=f"{run.trace.rounds:,}", k_max=run.trace.k_max))
        st.download_button(
            ui.t("live.dl_trace"),
            policies.trace_text(run.trace),
            "specviz_trace.jsonl",
            "application/jsonl",
            icon=":material/download:",
        )
    c1, c2, _ = st.columns([1, 1, 2])
    c1.download_button(
        ui.t("live.dl_csv"),
        store.export_csv(run.table()),
        "specviz_live.csv",
        "text/csv",
        icon=":material/download:",
    )
    engine = ui.library()
    if engine is not None and not run.saved and c2.button(ui.t("live.save"), icon=":material/save:", type="primary"):
        try:
            run.saved = store.save_run(engine, frame, label=run.library_label(), source="live page")
        except ValueError as exc:
            ui.show_error(exc)
    if run.saved:
        st.success(ui.t("live.saved", run=run.saved), icon=":material/check_circle:")


def stopped_reason(run: live.LiveRun) -> str:
    """Why the run stopped, as shown (in the session's language): it may quote an error (plain text; paths
    hidden in hosted mode)."""
    return ui.plain(ui.public_message(run.stopped_text(ui.language())))


def show_results(run: live.LiveRun) -> None:
    if not run.rows:
        st.info(ui.t("live.no_cell_stopped", reason=stopped_reason(run)) if run.stopped else ui.t("live.no_cell"))
        return
    if run.stopped:
        st.warning(
            ui.t("live.stopped", reason=stopped_reason(run), n=len(run.rows), cells=run.cells),
            icon=":material/stop_circle:",
        )
    elif run.seconds:
        st.success(ui.t("live.measured_in", n=len(run.rows), s=f"{run.seconds:.1f}"), icon=":material/check:")
    frame = run.frame()
    if run.request.batched:
        st.dataframe(shown_table(frame, BATCH_TABLE), hide_index=True, width="stretch")
        show_exactness(run)
        ui.chart(figures.speedup_by_batch_measured(frame, lang=ui.language()), key="fig_batches")
        st.caption(ui.t("live.batch_caption"))
        show_keep(run, frame)
        return
    if run.request.trees:
        show_tree_results(run, frame)
        show_keep(run, frame)
        return
    points = overlays.with_series(frame, lang=ui.language())
    params = overlays.series_params(points)
    st.dataframe(shown_table(frame, TABLE), hide_index=True, width="stretch")
    show_exactness(run)
    show_charts(run, points, overlays.curves(params), params)
    show_keep(run, frame)


st.title(ui.t("live.title"))
st.caption(ui.t("live.intro"))
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
    st.caption(ui.t("live.busy", busy=ui.message(busy)))
c_run, c_stop, _ = st.columns([1, 1, 4])
run_clicked = c_run.button(ui.t("live.run"), type="primary", icon=":material/play_arrow:")
stop_clicked = c_stop.button(ui.t("live.stop"), icon=":material/stop:", help=ui.t("live.stop_help"))
result = live.last_run(st.session_state)
if result is not None and not result.done and not run_clicked:  # the last run was interrupted
    result.interrupted(by_stop_button=stop_clicked)
if run_clicked:
    try:
        live.keep_run(st.session_state, live.LiveRun(live.make_request(view, LIMITS)))
        run_benchmark(live.last_run(st.session_state))
    except (ValueError, RuntimeError, OSError) as exc:  # bad request, unknown model, out of memory …
        ui.show_error(exc)
        live.keep_run(st.session_state, live.kept_after_error(live.last_run(st.session_state), result, exc))
    result = live.last_run(st.session_state)
if result is not None:
    with ui.reported_errors():
        show_results(result)
ui.publish(PAGE, SPEC, URL)

"""Live benchmark: run a draft/target pair here and see where the measurements fall on the theory."""

import concurrent.futures
import threading
import time

import pandas as pd
import streamlit as st
import torch

from specviz import bench, decoding, figures, live, measurements, overlays, store, theory, ui
from specviz.models import resolve_device

PAGE, URL = "live", "live"
DTYPES = {"auto": None, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
K_CHOICES = tuple(range(1, 17))
T_CHOICES = (0.0, 0.5, 0.7, 1.0)
SEGMENT_LABELS = {"accepted": "accepted draft tokens", "correction": "target corrections", "bonus": "bonus tokens"}


def spec(limits: live.Limits) -> tuple:
    from specviz.share import Param

    return (
        Param("pair", "bundled", "text", hi=400),
        Param("device", "auto", "choice", choices=("auto", "cpu", "cuda")),
        Param("dtype", "auto", "choice", choices=tuple(DTYPES)),
        Param("prompts", "bundled", "choice", choices=("bundled", "custom")),
        Param("n_prompts", min(4, limits.max_prompts), "int", 1, min(12, limits.max_prompts)),
        Param("text", "", "text", hi=4000),
        Param("ks", [1, 2, 4, 6], "ints", 1, 16),
        Param("temps", [0.0, 1.0], "floats", 0.0, 1.0),
        Param("new_tokens", min(96, limits.max_new_tokens), "int", 1, limits.max_new_tokens),
        Param("repeats", 1, "int", 1, limits.max_repeats),
        Param("seed", 0, "int", 0, 2**31 - 1),
    )


def key(name: str) -> str:
    return ui.key(PAGE, name)


@st.cache_resource(show_spinner=False)
def worker() -> live.Worker:
    """The process's live worker: it loads each pair once and runs every measurement on one thread.
    Shared by every session; runs are serialised by live.RUN_QUEUE (the models' KV caches are per model)."""
    return live.Worker()


def device_note(device: str) -> None:
    if torch.cuda.is_available() and device != "cpu":
        props = torch.cuda.get_device_properties(0)
        st.caption(f"Device: **{props.name}**, {props.total_memory / 2**30:.0f} GiB.")
    else:
        st.info(
            "Running on the CPU: the measured speedups reflect CPU costs, not a GPU's. The column c is the "
            "measured target step ÷ draft step; the bundled target's linear layers run through oneDNN with "
            "prepacked weights.",
            icon=":material/memory:",
        )


def controls(limits: live.Limits) -> None:
    c1, c2, c3 = st.columns([3, 1, 1])
    try:
        st.session_state[key("pair")] = live.check_pair(st.session_state[key("pair")], limits)  # normalised
    except ValueError as exc:  # e.g. a link naming a pair this deployment refuses
        ui.show_error(exc)
        st.session_state[key("pair")] = "bundled"
    if limits.hosted:
        c1.selectbox(
            "Draft/target pair",
            ("bundled", *limits.hf_allowlist),
            key=key("pair"),
            help="This hosted deployment allows the bundled pair and its allow-list.",
        )
    else:
        c1.text_input(
            "Draft/target pair",
            key=key("pair"),
            max_chars=400,
            help="'bundled' (ships with specviz, works offline) or 'TARGET,DRAFT': Hugging Face ids or "
            "local folders sharing a tokenizer (needs transformers).",
        )
    c2.selectbox("Device", ("auto", "cpu", "cuda"), key=key("device"))
    c3.selectbox("dtype", tuple(DTYPES), key=key("dtype"), help="auto: fp32 on CPU, bf16/fp16 on CUDA")
    c1, c2 = st.columns([1, 3])
    c1.radio(
        "Prompts",
        ("bundled", "custom"),
        key=key("prompts"),
        format_func={"bundled": "bundled validation prompts", "custom": "my own text"}.get,
    )
    if st.session_state[key("prompts")] == "bundled":
        c2.number_input(
            "How many bundled prompts (held-out standard-library files)",
            1,
            min(12, limits.max_prompts),
            key=key("n_prompts"),
        )
    else:
        c2.text_area("Prompt", key=key("text"), height=100, max_chars=4000)
    c1, c2, c3, c4, c5 = st.columns([2, 2, 1, 1, 1])
    c1.multiselect("K values", K_CHOICES, key=key("ks"))
    c2.multiselect(
        "Temperatures (0 = greedy)", sorted({*T_CHOICES, *st.session_state[key("temps")]}), key=key("temps")
    )  # a linked temperature outside the usual choices stays
    c3.number_input("New tokens", 1, limits.max_new_tokens, key=key("new_tokens"))
    c4.number_input("Repeats", 1, limits.max_repeats, key=key("repeats"))
    c5.number_input("Seed", 0, 2**31 - 1, key=key("seed"))


def prompts_of(view: dict) -> list[str]:
    if view["prompts"] == "custom":
        return [view["text"]]
    return bench.load_prompts()[: view["n_prompts"]]


def cell_details(row: dict, runs: list, target, tokenizer, prompts: list[str]) -> dict:
    """What the page shows about one finished cell (computed outside the timed regions)."""
    k, t = int(row["k"]), float(row["temperature"])
    first = runs[0]
    detail = {
        "k": k,
        "temperature": t,
        "n_counts": live.n_counts(runs, k),
        **live.cost_breakdown(runs, k),
        "prompt": prompts[first.prompt_index],
        "segments": live.text_segments(tokenizer, first.speculative.rounds),
        "exact": None,
        "divergence": None,
    }
    if t == 0:
        wrong = [r for r in runs if not r.exact]
        detail["exact"] = not wrong
        if wrong:
            prompt = torch.tensor(tokenizer.encode(prompts[wrong[0].prompt_index]), dtype=torch.long)
            detail["divergence"] = decoding.first_divergence(
                target, prompt, wrong[0].baseline_tokens, wrong[0].speculative_tokens
            )
    return detail


def run_benchmark(view: dict, limits: live.Limits) -> None:
    """Check the request, wait for the queue, then load and measure on the live worker thread.

    Finished cells land in session state as they finish, so a Stop (which interrupts this script
    while it polls) keeps them; the worker is told to stop before its next run.
    """
    pair = live.check_pair(view["pair"], limits)
    prompts = prompts_of(view)
    live.check_request(view["ks"], view["temps"], view["new_tokens"], view["repeats"], prompts, limits)
    device = str(resolve_device(view["device"]))
    ks, temps = list(view["ks"]), sorted(view["temps"])
    cells, per_cell = len(ks) * len(temps), len(prompts) * view["repeats"]
    state = {"rows": [], "details": [], "pair": pair, "done": False, "stopped": None, "cells": cells}
    st.session_state[key("result")] = state
    names = ("bundled/target", "bundled/draft") if pair == "bundled" else tuple(pair.split(",")[:2])
    meta = {"label": f"live: {pair}", "source": "specviz live page", "target_model": names[0], "draft_model": names[-1]}
    progress, stop = {"runs": 0, "started": None}, threading.Event()

    def job() -> None:  # runs on the worker thread: every torch call of the page happens here
        if stop.is_set():  # stopped while queued behind another session's job
            return
        target, draft, tokenizer = worker().pair(pair, device, DTYPES[view["dtype"]])
        progress["started"] = time.monotonic()

        def on_row(row: dict, runs: list) -> None:
            state["rows"].append(row)
            state["details"].append(cell_details(row, runs, target, tokenizer, prompts))

        def should_stop() -> bool:
            return stop.is_set() or time.monotonic() - progress["started"] > limits.max_wall_s

        try:
            bench.sweep(
                target,
                draft,
                tokenizer,
                prompts,
                ks,
                temps,
                view["new_tokens"],
                view["repeats"],
                view["seed"],
                meta=meta,
                on_run=lambda: progress.update(runs=progress["runs"] + 1),
                on_row=on_row,
                should_stop=should_stop,
            )
        except bench.Stopped:
            state["stopped"] = (
                "stopped" if stop.is_set() else f"the wall-time cap of {limits.max_wall_s:g} s was reached"
            )

    status = st.empty()
    with live.RUN_QUEUE.hold(
        f"a run of {cells} cell(s)", on_wait=lambda m: status.warning(m, icon=":material/hourglass_top:")
    ):
        status.empty()
        bar = st.progress(0.0, text="Loading the pair and warming up…")
        submitted = time.monotonic()
        future = worker().submit(job)

        def tick() -> None:  # the Stop button interrupts the script in here (at bar.progress), also while loading
            if progress["started"] is None:
                bar.progress(0.0, text=f"Loading the pair and warming up… {time.monotonic() - submitted:.0f} s")
                return
            done = progress["runs"]  # runs finished; the one running now is number done + 1
            if done >= cells * per_cell:
                bar.progress(1.0, text="Finishing the last cell…")
                return
            cell, run = done // per_cell, done % per_cell + 1  # sweep's order: for T: for K
            bar.progress(
                done / (cells * per_cell),
                text=f"Cell {cell + 1}/{cells} (K = {ks[cell % len(ks)]}, T = {temps[cell // len(ks)]:g}): "
                f"run {run}/{per_cell} · {time.monotonic() - progress['started']:.0f} s elapsed",
            )

        try:
            live.wait(future, tick)  # a load or run error surfaces here
        finally:  # also when a Stop interrupts this script: let the worker finish its current run
            stop.set()
            concurrent.futures.wait([future], timeout=60)
        state["done"] = True
        state["seconds"] = time.monotonic() - progress["started"] if progress["started"] else 0.0
        bar.empty()


def canonical(rows: list[dict]) -> pd.DataFrame:
    """The run's rows in the canonical schema with derived columns — exactly what the library stores.

    Raises ValueError if a row does not pass the schema (a bug: the engine's rows always should).
    """
    frame, report = measurements.load_measurements(pd.DataFrame(rows).to_csv(index=False), name="live run")
    if report.row_errors:
        raise ValueError("the run's rows do not all pass the measurement schema: " + report.summary())
    return frame


def show_results(state: dict, limits: live.Limits) -> None:
    if not state["rows"]:
        st.info("No cell finished." + (f" The run stopped: {state['stopped']}." if state["stopped"] else ""))
        return
    if state["stopped"]:
        st.warning(
            f"The run stopped ({state['stopped']}); showing the {len(state['rows'])} of {state['cells']} "
            "cell(s) that finished.",
            icon=":material/stop_circle:",
        )
    elif state.get("seconds"):
        st.success(f"{len(state['rows'])} cell(s) measured in {state['seconds']:.1f} s.", icon=":material/check:")
    frame = canonical(state["rows"])
    points = overlays.with_series(frame)
    params = overlays.series_params(points)
    curves = overlays.curves(params)
    table = frame[
        [
            "k",
            "temperature",
            "alpha",
            "alpha_overlap",
            "c",
            "v",
            "o",
            "mean_accepted_tokens",
            "speedup",
            "predicted_speedup",
            "predicted_speedup_measured_cost",
            "greedy_exact",
        ]
    ]
    st.dataframe(
        table.rename(
            columns={
                "alpha": "α̂ = A/(A+R)",
                "alpha_overlap": "α̂ = mean Σmin(p,q)",
                "mean_accepted_tokens": "E[N] measured",
                "predicted_speedup": "predicted (basic)",
                "predicted_speedup_measured_cost": "predicted (measured cost)",
            }
        ),
        hide_index=True,
        width="stretch",
    )

    exact = [d for d in state["details"] if d["exact"] is not None]
    for d in exact:
        where = f"K = {d['k']}, greedy"
        if d["exact"]:
            st.success(
                f"Exactness ({where}): speculative output equals target-only output in every run.",
                icon=":material/verified:",
            )
        else:
            div = d["divergence"]
            verdict = (
                "a numerical near-tie (the top-2 logits are within 1e-3), not a bug in the rule"
                if div.near_tie
                else "the target's choice was clear there: a bug"
            )
            st.error(
                f"Exactness ({where}): outputs differ first at new token {div.position} (target-only "
                f"{div.expected}, speculative {div.got}); the target's top-2 logit margin there is "
                f"{div.margin:.2e} — {verdict}.",
                icon=":material/report:",
            )

    tabs = st.tabs(["Speedup vs K", "E[N] vs K", "N per round", "Per position", "Cost per round", "Text"])
    with tabs[0]:
        st.plotly_chart(figures.overlay_speedup_vs_k(points, curves, params), width="stretch")
        st.caption(
            "Solid: the basic model S(α, c, K) at the measured α and c; dashed: with the measured verify cost "
            "v and overhead o; stars: each curve's optimal K; bars: min–max over runs."
        )
    with tabs[1]:
        st.plotly_chart(figures.overlay_expected_tokens(points, curves, params), width="stretch")
    labels = [f"K = {d['k']}, T = {d['temperature']:g}" for d in state["details"]]
    with tabs[2]:
        i = st.selectbox("Cell", range(len(labels)), format_func=labels.__getitem__, key=key("hist_cell"))
        d, row = state["details"][i], state["rows"][i]  # appended together, cell by cell
        pmf = theory.accepted_length_pmf(float(row["alpha"]), d["k"])
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
        details = state["details"]
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
            "The basic model prices a round at one target step plus K draft steps. Verifying K + 1 tokens "
            "costs more than one step (v) and the rule and bookkeeping add a little (o)."
        )
    with tabs[5]:
        j = st.selectbox("Cell", range(len(labels)), format_func=labels.__getitem__, key=key("text_cell"))
        d = state["details"][j]
        st.markdown(
            " ".join(
                f'<span style="background:{live.SEGMENT_COLORS[k]};padding:0 4px">{v}</span>'
                for k, v in SEGMENT_LABELS.items()
            ),
            unsafe_allow_html=True,
        )
        st.markdown(live.segments_html(d["prompt"][-400:], d["segments"]), unsafe_allow_html=True)
        st.caption("The first run of the cell: the prompt's last 400 characters in grey, then the generated text.")

    c1, c2, _ = st.columns([1, 1, 2])
    c1.download_button(
        "Download as measurement CSV",
        store.export_csv(pd.DataFrame(state["rows"])),
        "specviz_live.csv",
        "text/csv",
        icon=":material/download:",
    )
    engine = ui.library()
    if (
        engine is not None
        and not state.get("saved")
        and c2.button("Save to the run library", icon=":material/save:", type="primary")
    ):
        try:
            label = f"live: {state['pair']}"
            label = (label if len(label) <= 120 else label[:119] + "…") + f" ({frame['hardware'].iloc[0]})"
            state["saved"] = store.save_run(engine, frame, label=label[:200], source="live page")
        except ValueError as exc:
            ui.show_error(exc)
    if state.get("saved"):
        st.success(
            f"Saved as run #{state['saved']}: [open it on the Measured data page]"
            f"(measured-data?runs={state['saved']}).",
            icon=":material/check_circle:",
        )


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
SPEC = spec(LIMITS)
ui.restore(PAGE, SPEC)
controls(LIMITS)
view = ui.values(PAGE, SPEC)
device_note(view["device"])
busy = live.RUN_QUEUE.busy()
if busy:
    st.caption(f"Another run is in progress ({busy}); a new run will queue behind it.")
c_run, c_stop, _ = st.columns([1, 1, 4])
run_clicked = c_run.button("Run", type="primary", icon=":material/play_arrow:")
stop_clicked = c_stop.button("Stop", icon=":material/stop:", help="Stops after the current run; finished cells stay.")
result = st.session_state.get(key("result"))
if result is not None and not result["done"] and not run_clicked:  # the last run was interrupted
    result["done"] = True
    result["stopped"] = "stopped by you" if stop_clicked else "interrupted: a control changed while it ran"
if run_clicked:
    try:
        run_benchmark(view, LIMITS)
    except (ValueError, RuntimeError, OSError) as exc:  # bad request, unknown model, out of memory …
        ui.show_error(exc)
        failed = st.session_state.get(key("result"))
        if failed is not None and failed is not result:  # this run's state: keep what finished, if anything
            if failed["rows"]:
                failed["done"], failed["stopped"] = True, f"an error in a later cell: {exc}"
            else:
                st.session_state[key("result")] = result  # nothing measured: the previous results stay
    result = st.session_state.get(key("result"))
if result is not None:
    with ui.reported_errors():
        show_results(result, LIMITS)
ui.publish(PAGE, SPEC, URL)

"""Serving: from traffic and service levels to TTFT, TPOT, throughput per GPU and the best K, by load."""

import json

import numpy as np
import pandas as pd
import streamlit as st

from specviz.app import bands, profiles, router, ui
from specviz.app.figures import serving as figures
from specviz.app.scenarios import serving as scenarios
from specviz.app.scenarios.hardware import gpu_label
from specviz.app.share import Param, by_key
from specviz.base.i18n import N_
from specviz.core import configs, hardware, serving
from specviz.core import profiles as stack_profiles

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "serving", "serving"
MODELS, GPUS = hardware.load_catalog()
MACHINE = hardware.calibrated_machine()
GPU_CHOICES = (*GPUS.index, *([MACHINE["name"]] if MACHINE else []))
PAIRS, CUSTOM = scenarios.PAIRS, scenarios.CUSTOM
DISTS = ("fixed", "uniform")
RATE_CHOICES = [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 14.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0, 256.0]
USER_CHOICES = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0]
VIEWS = ("pareto", "tpot", "table", "schedule")
VIEW_LABELS = (N_("Pareto"), N_("TPOT by load"), N_("Table"), N_("Serving-stack schedules"))
SPEC = (
    Param("gpu", "H100-SXM5-80GB", "choice", choices=GPU_CHOICES, label=N_("GPU")),
    Param("dtype", "bf16", "choice", choices=tuple(hardware.DTYPE_BYTES), label=N_("dtype")),
    profiles.profile_param(default=stack_profiles.SERVER_PROFILE),  # the same profile as Hardware & batch
    profiles.terms_param(),
    Param("tp", 1, "int", 1, 64, label=N_("GPUs per replica (tensor parallel)")),
    Param("max_seqs", 256, "int", 1, 4096, label=N_("Most sequences in a batch (the serving stack's max_num_seqs)")),
    Param(
        "kv",
        "unified",
        "choice",
        choices=serving.KV_LAYOUTS,
        label=N_("llama-server KV cache"),
        labels=(N_("one for every slot (--kv-unified)"), N_("one per slot (-np N without --kv-unified)")),
    ),
    Param("pair", "Llama-3.1 8B + 3.2 1B", "choice", choices=(CUSTOM, *PAIRS.index), label=N_("Preset pair")),
    Param("target", "meta-llama/Llama-3.1-8B-Instruct", "choice", choices=tuple(MODELS.index), label=N_("Target")),
    Param("draft", "meta-llama/Llama-3.2-1B-Instruct", "choice", choices=tuple(MODELS.index), label=N_("Draft")),
    Param("alpha", 0.8, "float", 0.0, 1.0, label=N_("Acceptance α")),
    Param(
        "alpha_l",
        "",
        "text",
        hi=80,
        label=N_("α(L) fit 'a;b': logit α(L) = a − b·ln(L / 1024) (empty: the α above at every context)"),
    ),
    Param("k_max", 6, "int", 1, 12, label=N_("K max")),
    Param("tree", 0, "int", 0, 64, label=N_("Token tree: draft tokens (0: chains only)")),
    Param("t_depth", 4, "int", 1, 12, label=N_("Token tree: most depth")),
    Param(
        "mode",
        "open",
        "choice",
        choices=serving.MODES,
        label=N_("Traffic"),
        labels=(N_("requests per second (Poisson arrivals)"), N_("concurrent users (closed loop)")),
    ),
    # the default pair serves ≈ 18 requests/s within the SLA: loads up to 16 all fit (no load opens overloaded),
    # speculation lowers TPOT at each but the highest, where the batch is large enough that it stops paying
    Param("rates", [0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 14.0], "floats", 1e-3, 1e5, max_items=40),
    Param("users", [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0], "floats", 1, serving.MAX_USERS, max_items=40),
    Param("think", 0.0, "float", 0.0, 3600.0, label=N_("Think time between a user's requests (s)")),
    Param("p_dist", "fixed", "choice", choices=DISTS, label=N_("Prompt length"), labels=(N_("fixed"), N_("uniform"))),
    Param("p_len", 1024, "int", 1, serving.MAX_LENGTH, label=N_("Prompt tokens (or the lowest)")),
    Param("p_hi", 2048, "int", 1, serving.MAX_LENGTH, label=N_("Prompt tokens, highest")),
    Param("g_dist", "fixed", "choice", choices=DISTS, label=N_("Output length"), labels=(N_("fixed"), N_("uniform"))),
    Param("g_len", 256, "int", serving.MIN_OUTPUT, serving.MAX_LENGTH, label=N_("Output tokens (or the lowest)")),
    Param("g_hi", 512, "int", serving.MIN_OUTPUT, serving.MAX_LENGTH, label=N_("Output tokens, highest")),
    Param("chunk", 2048, "int", 16, 65536, label=N_("Prefill chunk (tokens per step)")),
    Param("ttft", 2.0, "float", 0.001, 600.0, label=N_("TTFT limit (s)")),
    Param("tpot", 50.0, "float", 0.1, 10000.0, label=N_("TPOT limit (ms)")),
    Param("goal", 100.0, "float", 0.001, 1e6, label=N_("Target rate for the GPU count (requests/s)")),
    Param("price", 0.0, "float", 0.0, 1000.0, label=N_("GPU price, USD per GPU-hour (0: the catalogue's dated price)")),
    Param("view", "pareto", "choice", choices=VIEWS, labels=VIEW_LABELS, aliases=(("Engine schedules", "schedule"),)),
)
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def headline(s: scenarios.Scenario, grid, best: pd.DataFrame, rates: pd.DataFrame) -> None:
    """The answers in four numbers: the largest rate per GPU with and without speculation, the GPUs for the
    target rate, and the load from which speculation stops paying."""
    h = scenarios.headline(s, grid, best, rates)
    plain, spec, option = h["plain"], h["spec"], h["option"]
    cols = st.columns(4)
    cols[0].metric(ui.t("Largest rate per GPU meeting the SLA, no speculation"), ui.number(plain["max_rps_per_gpu"]))
    cols[1].metric(
        ui.t("… with speculation ({option})", option=option)
        if option
        else ui.t("… with speculation (no K meets the SLA)"),
        ui.number(spec["max_rps_per_gpu"]),
        delta=f"{spec['max_rps'] / plain['max_rps'] - 1:+.0%}" if option and np.isfinite(plain["max_rps"]) else None,
    )
    cols[2].metric(
        ui.t("GPUs for {rate} requests/s (no speculation / {option})", rate=ui.number(s.goal), option=option)
        if option
        else ui.t("GPUs for {rate} requests/s (no speculation / with speculation)", rate=ui.number(s.goal)),
        " / ".join(ui.number(n) for n in h["need"]),
    )
    stops, over = h["stops"], h["over"]
    cols[3].metric(
        ui.t("Speculation stops paying at"),
        ui.t("never, up to the largest rate meeting the SLA")
        if stops is None
        else ui.t("{rate} requests/s per GPU", rate=ui.number(stops)),
    )
    band_note(s, spec["max_rps"] / plain["max_rps"] if option else float("nan"))
    cost_note(h["cost"], s.replica.gpu, option)
    if over:
        st.warning(
            ui.t(
                "Overloaded at {n} of the loads shown: no steady state fits in {cap} sequences on this replica; those loads are left out of the figures.",
                n=int(over),
                cap=int(grid.cap),
            ),
            icon=":material/warning:",
        )
    st.caption(
        ui.t(
            "Decode context {ctx} tokens; at most {cap} sequences fit in a batch with the draft (its weights, its KV cache and the verify slots), {plain} without, each holding the cache of its prompt and whole output; beyond them requests wait for memory. One prompt's prefill costs {p} ms. Means of a steady state: a real server's p90 and p99 lie above them.",
            ctx=f"{grid.context:,.0f}",
            cap=int(grid.option_caps()[-1]),
            plain=int(grid.option_caps()[0]),
            p=f"{grid.prefill_s[0] * 1e3:.1f}",
        )
    )


def cost_note(cost: dict | None, gpu: str, option: str | None) -> None:
    """What a million output tokens cost at the largest rate meeting the SLA, each way, and whose price that is."""
    if cost is None:
        st.caption(
            ui.t(
                "No published rental price for {gpu} in the catalogue: type one (GPU price) to see the cost per million tokens.",
                gpu=gpu,
            )
        )
        return
    # "USD", never "$": Streamlit reads a pair of dollar signs as a formula
    plain = f"USD {cost['plain']:,.3f}" if np.isfinite(cost["plain"]) else "—"
    spec = f"USD {cost['spec']:,.3f}" if option and np.isfinite(cost["spec"]) else "—"
    st.metric(
        ui.t("Cost per million output tokens at the largest rate meeting the SLA (no speculation / with speculation)"),
        f"{plain} / {spec}",
    )
    whose = (
        ui.t("at your price, USD {price:.2f} per GPU-hour", price=cost["price"])
        if cost["typed"]
        else ui.t(
            "at USD {price:.2f} per GPU-hour, the catalogue's on-demand price of {date} ({source})",
            price=cost["price"],
            date=cost["date"],
            source=cost["source"],
        )
    )
    st.caption(whose)


def band_note(s: scenarios.Scenario, gain: float) -> None:
    """The band of speculation's gain in its regime (a request rate's load, or the largest user count)."""
    if not np.isfinite(gain):
        return
    r = s.replica
    load = dict(rate=s.goal, batch=None) if s.mode == "open" else dict(batch=int(max(s.loads)))
    method = hardware.drafting_method(r.draft)
    said = bands.note(r.profile.name, "speedup", gain, "{:.2f}×", method, hardware.is_moe(r.target), **load)
    if said:
        st.caption(ui.t("Largest rate with speculation over without: {gain}×.", gain=f"{gain:.2f}") + " " + said)


def show_table(frame: pd.DataFrame, best: pd.DataFrame, mode: str, price: float | None) -> None:
    """Per load the best K and its TPOT against no speculation, and at a known price what a million output tokens
    cost: one column in an open loop (both serve the offered rate), one per way with a fixed number of users."""
    overloaded = N_("overloaded: no K keeps up with this load")
    columns = {
        "load": ui.Col(N_("requests/s"), digits=1) if mode == "open" else ui.Col(N_("users"), kind="int"),
        "k_best": ui.Col(N_("best K"), kind="int", missing=overloaded),
        "tpot_s": ui.Col(N_("TPOT at best K"), "ms", digits=1, scale=1e3, missing=overloaded),
        "tpot_plain_s": ui.Col(N_("TPOT without speculation"), "ms", digits=1, scale=1e3, missing=overloaded),
        "speedup": ui.Col(N_("speedup"), "×", digits=2, missing=overloaded),
        "meets_sla": ui.Col(N_("meets the SLA"), kind="bool"),
        "overloaded": ui.Col(N_("overloaded"), kind="bool"),
    }
    shown = scenarios.with_cost(best, price).drop(columns=["option", "per_gpu", "per_gpu_plain"])
    if price and mode == "open":  # both serve the offered rate: one cost per load, whichever option
        columns["usd"] = ui.Col(N_("USD per M tokens"), digits=3, missing=overloaded)
    elif price:
        columns["usd"] = ui.Col(N_("USD per M tokens at best K"), digits=3, missing=overloaded)
        columns["usd_plain"] = ui.Col(N_("USD per M tokens without speculation"), digits=3, missing=overloaded)
    shown = shown[[c for c in columns if c in shown]]
    ui.table(shown, columns, key=key("tbl_best"))
    ui.csv_download(ui.t("Download every load × K (CSV)"), lambda: frame, "specviz-serving.csv", key("dl_csv"))


def show_schedules(grid, output, frame: pd.DataFrame, draft, kv: str) -> None:
    """The K schedule by running batch, as vLLM, TensorRT-LLM, SGLang and llama.cpp take it."""
    schedule = serving.k_by_batch(grid, output)
    st.caption(
        ui.t(
            "The best K at each running batch (lowest TPOT there). vLLM and TensorRT-LLM switch K by batch; SGLang and llama.cpp take one K: the one at the running batch of the first load shown."
        )
    )
    model = draft if isinstance(draft, str) else None
    vllm = configs.vllm.speculative_config(schedule, model=model)
    try:
        trt = configs.trtllm.extra_options_yaml(configs.trtllm.speculative_config(schedule, model=model))
    except ValueError as exc:  # a schedule TensorRT-LLM cannot take: said in its box, not approximated
        trt = f"# {ui.message(exc)}\n"
    first = frame[(frame["load"] == frame["load"].min()) & (frame["k"] == 0)]  # the sweep's first load
    b0 = int(np.clip(round(np.nan_to_num(first["batch"].iloc[0], nan=1.0)), 1, grid.cap))
    k0 = int(schedule.loc[schedule["batch"] == b0, "k"].iloc[0])
    texts = {
        "vLLM --speculative-config": json.dumps(vllm),
        "TensorRT-LLM extra_llm_api_options.yaml": trt,
        "SGLang": configs.sglang.chain_flags(k0, draft=model),
        "llama.cpp llama-server": configs.llamacpp.draft_flags(k0, slots=int(grid.cap), kv=kv),
    }
    off = configs.switching.switches_off(schedule["k"].tolist())
    for i, (name, body) in enumerate(texts.items()):
        st.markdown(f"**{name}**")
        st.code(body, language="yaml" if "yaml" in name else "bash")
        sw = configs.switching.SWITCHING.get(name.split()[0]) if off else None
        if sw is not None and name.split()[0] in ("vLLM", "TensorRT-LLM"):  # the two that switch K by batch here
            st.caption(f"{ui.t(sw.while_off)} {ui.t(sw.back_on)} (`{sw.source}`)")
        st.download_button(
            ui.t("Download"), body, f"specviz-{i}.txt", "text/plain", key=key(f"dl_sched_{i}"), on_click="ignore"
        )


def sidebar_controls() -> None:
    with st.sidebar:
        st.header(ui.t("Hardware"))
        ui.selectbox(PAGE, P["gpu"], format_func=gpu_label)
        ui.selectbox(PAGE, P["dtype"])
        profiles.profile_controls(PAGE, P["engine"], P["eng_terms"])
        ui.number_input(PAGE, P["tp"])
        ui.number_input(PAGE, P["max_seqs"])
        if st.session_state[key("engine")] in serving.SLOT_STACKS:
            ui.radio(PAGE, P["kv"])
        st.header(ui.t("Pair"))
        ui.selectbox(
            PAGE, P["pair"], format_func=lambda p: ui.t("custom (choose target and draft)") if p == CUSTOM else p
        )
        if st.session_state[key("pair")] == CUSTOM:
            ui.selectbox(PAGE, P["target"])
            ui.selectbox(PAGE, P["draft"])
        ui.slider(PAGE, P["alpha"], step=0.01)
        ui.text_box(
            PAGE,
            P["alpha_l"],
            help=ui.t("Measured data fits it (By context and domain) and links here with it."),
        )
        ui.slider(PAGE, P["k_max"])
        ui.number_input(PAGE, P["tree"])
        if st.session_state[key("tree")]:
            ui.number_input(PAGE, P["t_depth"])
        st.header(ui.t("Traffic"))
        ui.radio(PAGE, P["mode"])
        if st.session_state[key("mode")] == "open":
            ui.multiselect(PAGE, P["rates"], ui.t("Request rates (requests/s)"), RATE_CHOICES, accept_new_options=True)
        else:
            ui.multiselect(PAGE, P["users"], ui.t("Concurrent users"), USER_CHOICES, accept_new_options=True)
            ui.number_input(PAGE, P["think"])
        for which in ("p", "g"):
            ui.radio(PAGE, P[f"{which}_dist"], horizontal=True)
            ui.number_input(PAGE, P[f"{which}_len"])
            if st.session_state[key(f"{which}_dist")] == "uniform":
                ui.number_input(PAGE, P[f"{which}_hi"])
        ui.number_input(PAGE, P["chunk"])
        st.header(ui.t("Service levels"))
        ui.number_input(PAGE, P["ttft"])
        ui.number_input(PAGE, P["tpot"])
        ui.number_input(PAGE, P["goal"])
        ui.number_input(PAGE, P["price"])


st.title(ui.t("Serving"))
st.caption(
    ui.t(
        "Nobody running a server knows its batch: they know their traffic and their service levels. A steady-state model of continuous batching turns requests per second (or users) into the running batch, TTFT, TPOT and throughput, with and without speculation, priced by the same cost model and engine profile as Hardware & batch."
    )
)
ui.restore(PAGE, SPEC)
view = ui.values(PAGE, SPEC)
try:
    s = scenarios.scenario(view, ui.language())
    with st.spinner(ui.t("Pricing every batch and K …"), show_time=True):
        grid, output, frame, best, rates = scenarios.sweep(s)
except ValueError as exc:
    ui.show_error(exc)
else:
    st.caption(s.replica.profile.caption())
    if s.replica.kv == "slots":
        st.caption(
            ui.t(
                "One KV cache per slot: llama-server forwards each run of consecutive busy slots apart, and requests take the least recently used slot, so n busy slots of {slots} cost the expected sum over their runs.",
                slots=int(grid.cap),
            )
        )
    headline(s, grid, best, rates)
    tpot = s.tpot / 1e3
    price = (scenarios.price_per_gpu_hour(s) or (None,))[0]
    sections = {
        "pareto": lambda: ui.chart(
            ui.figure(figures.pareto, frame, s.mode, tpot, ui.language(), price), key=key("fig_pareto")
        ),
        "tpot": lambda: ui.chart(
            ui.figure(figures.tpot_by_load, frame, s.mode, tpot, ui.language()), key=key("fig_tpot")
        ),
        "table": lambda: show_table(frame, best, s.mode, price),
        "schedule": lambda: show_schedules(grid, output, frame, s.replica.draft, s.replica.kv),
    }
    ui.show_open_tab(PAGE, P["view"], sections)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

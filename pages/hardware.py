"""Hardware & batch: c, v, the speedup and the best K of a real pair on a real GPU, by batch size and context."""

import json

import numpy as np
import streamlit as st

from specviz.app import router, ui
from specviz.app.figures import hardware as hardware_figures
from specviz.app.share import Param, by_key
from specviz.base import i18n
from specviz.base.i18n import C_, N_
from specviz.core import engines, hardware

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "hardware", "hardware"
MODELS, GPUS = hardware.load_catalog()
MACHINE = hardware.calibrated_machine()  # this machine, where `python -m specviz calibrate` measured it
CUSTOM_GPU = "custom"  #: the GPU choice "custom figures" (a link before the slugs wrote that)
GPU_CHOICES = (*GPUS.index, *([MACHINE["name"]] if MACHINE else []), CUSTOM_GPU)
PAIRS = hardware.preset_pairs().set_index("name")
ENGINES = engines.load_engines()
CUSTOM = "custom"  #: the pair choice "custom (choose target and draft)"
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
ALPHA_SOURCES = ("typed", "library", "live")  #: where α comes from (slugs: a link names them)
VIEWS = ("step", "costs", "speedup", "map", "memory", "engine")  #: the tabs (slugs: a link names them)
VIEW_LABELS = (
    N_("Step time"),
    C_("hw.view.costs", "c and v"),
    N_("Speedup by batch"),
    N_("Batch × context"),
    N_("Memory"),
    N_("Engine configs"),
)
ROLES = {"target": N_("target"), "draft": N_("draft")}  #: model role -> its name
SOURCE_LABELS = (N_("typed"), N_("a run in the library"), C_("hw.a_src.live", "the live page's last run"))
SPEC = (
    Param(
        "gpu",
        "H100-SXM5-80GB",
        "choice",
        choices=GPU_CHOICES,
        label=N_("GPU"),
        aliases=(("custom figures", CUSTOM_GPU),),
    ),
    Param(
        "pair",
        "Llama-3.1 70B + 3.2 1B",
        "choice",
        choices=(CUSTOM, *PAIRS.index),
        label=N_("Preset pair"),
        aliases=(("custom (choose target and draft)", CUSTOM),),
    ),
    Param("target", "meta-llama/Llama-3.1-70B-Instruct", "choice", choices=tuple(MODELS.index), label=N_("Target")),
    Param("draft", "meta-llama/Llama-3.2-1B-Instruct", "choice", choices=tuple(MODELS.index), label=N_("Draft")),
    Param("dtype", "bf16", "choice", choices=tuple(hardware.DTYPE_BYTES), label=N_("dtype")),
    Param("engine", engines.DEFAULT_ENGINE, "choice", choices=tuple(ENGINES.index), label=N_("Engine profile")),
    Param("g_mem", 80.0, "float", 1.0, 4096.0, label=N_("Memory (GB)")),
    Param("g_bw", 3.35, "float", 0.01, 100.0, label=N_("Bandwidth (TB/s)")),
    Param("g_tflops", 989.0, "float", 0.1, 100000.0, label=N_("Dense bf16/fp16 (TFLOP/s); fp8 taken as twice")),
    Param("g_link", 450.0, "float", 1.0, 10000.0, label=N_("Interconnect per direction (GB/s)")),
    Param("tp_t", 4, "int", 1, 8, label=N_("Target TP")),
    Param("tp_d", 1, "int", 1, 8, label=N_("Draft TP")),
    Param("ctx", 2048, "int", 1, 131072, log=True, label=N_("Context length L (tokens)")),
    Param("batch", 1, "int", 1, 512, label=N_("Batch size B (step-time view)")),
    Param("alpha", 0.8, "float", 0.0, 1.0, label=N_("Acceptance α")),
    Param("a_src", "typed", "choice", choices=ALPHA_SOURCES, label=N_("α from"), labels=SOURCE_LABELS),
    Param("run", 1, "int", 1, 2**31 - 1, label=N_("Run id (Measured data lists them)")),
    Param("a_pos", False, "bool"),
    Param("k_max", 8, "int", 1, 16, label=N_("K max")),
    Param("view", "speedup", "choice", choices=VIEWS, labels=VIEW_LABELS),
)
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def uploaded(which: str) -> dict | None:
    """The model from an uploaded config.json for ``which`` (target / draft), or None."""
    file = st.session_state.get(key(f"upload_{which}"))
    if file is None:
        return None
    return hardware.from_hf_config(file.getvalue(), name=f"uploaded {which} ({file.name})")


def chosen_pair(view: dict) -> tuple:
    """(target, draft): an uploaded config.json, else the preset pair, else the two catalogue choices."""
    if view["pair"] != CUSTOM:
        target, draft = PAIRS.loc[view["pair"], "target"], PAIRS.loc[view["pair"], "draft"]
    else:
        target, draft = view["target"], view["draft"]
    target, draft = uploaded("target") or target, uploaded("draft") or draft
    hardware.check_pair(target, draft)
    return target, draft


def chosen_gpu(view: dict):
    """The catalogue (or calibrated) accelerator's name, or a dict of the typed custom figures."""
    if view["gpu"] != CUSTOM_GPU:
        return view["gpu"]
    tflops = view["g_tflops"]
    return {
        "name": "custom",
        "memory_gb": view["g_mem"],
        "bandwidth_tbs": view["g_bw"],
        "bf16_tflops": tflops,
        "fp16_tflops": tflops,
        "fp8_tflops": 2 * tflops,
        "interconnect_gbs": view["g_link"],
    }


def chosen_alpha(view: dict):
    """α for the model: typed, or from a library run / the live page's last run (its mean α, or its
    per-position acceptance). A source that cannot give one raises ValueError saying why."""
    if view["a_src"] == "typed":
        return view["alpha"]
    if view["a_src"] == "library":
        engine = ui.library()
        if engine is None:
            raise ValueError(ui.t("the run library cannot be opened, so α cannot come from a run"))
        frame = ui.load_runs(engine, ui.library_runs(engine), [view["run"]])
        what = i18n.Phrase("run {run}", run=view["run"])  # quoted in the library's message, in its language
    else:
        from specviz.app import live  # torch: only when the live run is the source

        result = live.last_run(st.session_state)
        if result is None:
            raise ValueError(ui.t("the live page has no run in this session yet: run one there, or type α"))
        frame, what = result.frame(), i18n.Phrase(C_("hw.what_live", "the live page's last run"))
    return hardware.alpha_from_measurements(frame, view["a_pos"], what)


def _hashable(model) -> str:
    return model if isinstance(model, str) else json.dumps(model, sort_keys=True)


def _model(text: str):
    return text if text in MODELS.index else json.loads(text)


def _gpu(text: str):
    return json.loads(text) if text.startswith("{") else text


@ui.cached
def by_batch(
    target: str, draft: str, gpu: str, alpha, ctx: int, k_max: int, dtype: str, tp_t: int, tp_d: int, engine: str
):
    t, d, gpu = _model(target), _model(draft), _gpu(gpu)
    kw = dict(dtype=dtype, tp_target=tp_t, tp_draft=tp_d, efficiency=_efficiency(engine))
    frame = hardware.speedup_by_batch(t, d, gpu, alpha, BATCHES, [ctx], k_max, **kw)
    costs = hardware.pair_costs(t, d, gpu, np.array(BATCHES), ctx, k_max, **kw)
    return frame.assign(v=costs["v"])


@ui.cached
def by_batch_and_context(
    target: str, draft: str, gpu: str, alpha, k_max: int, dtype: str, tp_t: int, tp_d: int, engine: str
):
    t, d, gpu = _model(target), _model(draft), _gpu(gpu)
    kw = dict(dtype=dtype, tp_target=tp_t, tp_draft=tp_d, efficiency=_efficiency(engine))
    return hardware.speedup_by_batch(t, d, gpu, alpha, BATCHES, CONTEXTS, k_max, **kw)


def _efficiency(engine: str):
    """The engine's profile; None for the default, so that a calibrated machine keeps its own figures."""
    return None if engine == engines.DEFAULT_ENGINE else engines.profile(engine)


def priced_with(view: dict) -> None:
    """The caption every figure of the pair carries: which engine profile priced it."""
    row = ENGINES.loc[view["engine"]]
    fitted = ui.t("fitted on {sources}", sources=row["fitted_on"]) if row["fitted_on"] else ui.t("not fitted")
    st.caption(ui.t("Priced with the engine profile {engine} ({fitted}).", engine=row["label"], fitted=fitted))


def step_section(view: dict, target, draft) -> None:
    """The target's step at the chosen B: time per operator and the roofline of its operators."""
    eff = _efficiency(view["engine"]) or hardware.efficiency_for(view["gpu"])
    args = dict(dtype=view["dtype"], tp=view["tp_t"], efficiency=eff)
    table = hardware.step_breakdown(target, view["gpu"], view["batch"], view["ctx"], 1, **args)
    total = table["seconds"].sum()
    st.metric(
        ui.t("Target decode step at B = {batch}, L = {ctx}", batch=view["batch"], ctx=f"{view['ctx']:,}"),
        f"{total * 1e3:.3f} ms",
    )
    flops, bandwidth = hardware.attainable(view["gpu"], view["dtype"], eff)
    left, right = st.columns(2)
    with left:
        ui.chart(
            hardware_figures.step_split(table, ui.t("Where the step's time goes"), lang=ui.language()), key="fig_split"
        )
    with right:
        ui.chart(
            hardware_figures.roofline(table, flops, bandwidth, ui.t("Roofline"), lang=ui.language()),
            key="fig_roofline",
        )
    assumed = dict(compute=f"{eff.compute:.0%}", memory=f"{eff.memory:.0%}", overhead=f"{eff.overhead_s * 1e3:.3g}")
    if eff.layer_overhead_s:
        st.caption(
            ui.t(
                "Memory-bound operators stream bytes (the weights for the linear layers, the KV cache for attention); compute-bound ones are limited by FLOP/s. Efficiencies assumed: {compute} of peak FLOP/s, {memory} of HBM bandwidth, {overhead} ms fixed per step and {layer} µs per layer.",
                layer=f"{eff.layer_overhead_s * 1e6:.3g}",
                **assumed,
            )
        )
    else:
        st.caption(
            ui.t(
                "Memory-bound operators stream bytes (the weights for the linear layers, the KV cache for attention); compute-bound ones are limited by FLOP/s. Efficiencies assumed: {compute} of peak FLOP/s, {memory} of HBM bandwidth, {overhead} ms fixed per step.",
                **assumed,
            )
        )
    priced_with(view)
    if MACHINE is not None and view["gpu"] == MACHINE["name"]:
        calibration_check()


def calibration_check() -> None:
    """This machine's calibration: the roofline's predicted forward times against the engine's measured ones."""
    steps = hardware.calibration_steps()
    if steps is None:
        return
    st.subheader(ui.t("Checked against this machine"))
    ui.chart(hardware_figures.calibration_parity(steps, lang=ui.language()), key="fig_calibration")
    err = hardware.calibration_errors(steps)
    per_model = ", ".join(f"{m} {e:.0%}" for m, e in err.items() if m != "all")
    st.caption(
        ui.t(
            "`python -m specviz calibrate` timed the bundled pair's forward over {cells} (B, tokens, context) cells and predicted each from the microbenchmark figures alone: median |predicted / measured − 1| {error} ({per_model}).",
            cells=len(steps),
            error=f"{err['all']:.0%}",
            per_model=per_model,
        )
    )


def costs_section(view: dict, target, draft) -> None:
    frame = by_batch(*_pair_args(view, target, draft), view["ctx"], *_engine_args(view))
    ui.chart(hardware_figures.costs_by_batch(frame, view["k_max"], lang=ui.language()), key="fig_costs")
    priced_with(view)
    st.caption(
        ui.t(
            "c = T_target / T_draft and v = (T_verify / T_target − 1) / K from the roofline, at the chosen context. As B grows the target's step turns compute-bound and verifying K + 1 tokens stops being free (v rises)."
        )
    )


def speedup_section(view: dict, target, draft) -> None:
    frame = by_batch(*_pair_args(view, target, draft), view["ctx"], *_engine_args(view))
    ui.chart(hardware_figures.speedup_by_batch(frame, view["k_max"], lang=ui.language()), key="fig_speedup_b")
    priced_with(view)
    best = frame.iloc[0]
    if best.k_star:
        at_b1, k_star, s = ui.t("At B = 1"), f"K* = {int(best.k_star)}", f"S = {best.speedup_at_k_star:.2f}×"
        st.metric(at_b1, k_star, delta=s, delta_color="off")
    else:
        st.metric(ui.t("At B = 1"), ui.t("don't speculate"), delta=ui.t("no K pays"), delta_color="off")
    ui.csv_download(ui.t("Download speedup by batch (CSV)"), lambda: frame, "speedup_by_batch.csv", key="dl_batch")


def map_section(view: dict, target, draft) -> None:
    frame = by_batch_and_context(*_pair_args(view, target, draft), *_engine_args(view))
    left, right = st.columns(2)
    with left:
        ui.chart(hardware_figures.batch_context_map(frame, "k_star", lang=ui.language()), key="fig_map_k")
    with right:
        ui.chart(hardware_figures.batch_context_map(frame, "speedup_at_k_star", lang=ui.language()), key="fig_map_s")
    priced_with(view)
    ui.csv_download(ui.t("Download K*(B, L) (CSV)"), lambda: frame, "k_star_by_batch_context.csv", key="dl_map")


def memory_section(view: dict, target, draft) -> None:
    for name, model, tp in (("target", target, view["tp_t"]), ("draft", draft, view["tp_d"])):
        b = int(hardware.max_batch(model, view["gpu"], view["ctx"], view["dtype"], tp))
        weights = hardware.weight_bytes(model, view["dtype"]) / tp / 1e9
        kv = hardware.kv_bytes_per_token(model, view["dtype"], tp) / 2**10
        text = ui.t("{b} sequences", b=f"{b:,}") if b else ui.t("the weights alone do not fit")
        st.metric(
            ui.t(
                "Largest batch of the {name} at L = {ctx} (TP {tp})",
                name=ui.t(ROLES[name]),
                ctx=f"{view['ctx']:,}",
                tp=tp,
            ),
            text,
        )
        st.caption(
            ui.t(
                "weights {weights} GB per GPU; KV cache {kv} KiB per token per GPU",
                weights=f"{weights:.2f}",
                kv=f"{kv:.1f}",
            )
        )
    st.caption(
        ui.t(
            "Counted against {share} of HBM; the rest holds activations and the runtime.",
            share=f"{hardware.USABLE_MEMORY:.0%}",
        )
    )


def engine_section(view: dict, target, draft) -> None:
    kw = dict(
        dtype=view["dtype"], tp_target=view["tp_t"], tp_draft=view["tp_d"], efficiency=_efficiency(view["engine"])
    )
    config = hardware.vllm_speculative_config(
        target, draft, view["gpu"], view["alpha"], view["ctx"], BATCHES, view["k_max"], **kw
    )
    st.markdown(ui.t("**vLLM** `--speculative-config` (K by batch size, from K*(B) at this context)"))
    st.code(json.dumps(config), language="json")
    st.markdown(ui.t("**llama.cpp** `llama-server` draft flags (one sequence)"))
    flags = hardware.llama_cpp_flags(target, draft, view["gpu"], view["alpha"], view["ctx"], 16, **kw)
    st.code(ui.message(flags), language="bash")


def _pair_args(view: dict, target, draft) -> tuple:
    """The cached functions' first arguments: the pair (as hashable text), the GPU and α."""
    alpha = view["alpha"] if isinstance(view["alpha"], float) else tuple(view["alpha"])
    return _hashable(target), _hashable(draft), _hashable(view["gpu"]), alpha


def _engine_args(view: dict) -> tuple:
    return view["k_max"], view["dtype"], view["tp_t"], view["tp_d"], view["engine"]


SECTIONS = dict(
    zip(VIEWS, (step_section, costs_section, speedup_section, map_section, memory_section, engine_section), strict=True)
)


def sidebar_controls() -> None:
    with st.sidebar:
        st.header(ui.t("Hardware"))
        ui.selectbox(PAGE, P["gpu"], format_func=lambda g: ui.t("custom figures") if g == CUSTOM_GPU else g)
        if st.session_state[key("gpu")] == CUSTOM_GPU:
            ui.number_input(PAGE, P["g_mem"])
            ui.number_input(PAGE, P["g_bw"], format="%.3f")
            ui.number_input(PAGE, P["g_tflops"])
            ui.number_input(PAGE, P["g_link"])
        ui.selectbox(PAGE, P["dtype"])
        ui.selectbox(PAGE, P["engine"], format_func=lambda e: ENGINES.loc[e, "label"])
        st.header(ui.t("Pair"))
        ui.selectbox(
            PAGE, P["pair"], format_func=lambda p: ui.t("custom (choose target and draft)") if p == CUSTOM else p
        )
        if st.session_state[key("pair")] == CUSTOM:
            ui.selectbox(PAGE, P["target"])
            ui.selectbox(PAGE, P["draft"])
        with st.expander(ui.t("Upload config.json")):
            st.caption(ui.t("A Hugging Face config.json replaces the target or draft (uploads are not kept in links)."))
            st.file_uploader(ui.t("Target config.json"), type=["json"], key=key("upload_target"))
            st.file_uploader(ui.t("Draft config.json"), type=["json"], key=key("upload_draft"))
        left, right = st.columns(2)
        with left:
            ui.number_input(PAGE, P["tp_t"])
        with right:
            ui.number_input(PAGE, P["tp_d"])
        st.header(ui.t("Workload"))
        ui.number_input(PAGE, P["ctx"], step=1024)
        ui.number_input(PAGE, P["batch"])
        ui.radio(PAGE, P["a_src"])
        source = st.session_state[key("a_src")]
        if source == "typed":
            ui.slider(PAGE, P["alpha"], step=0.01)
        else:
            if source == "library":
                ui.number_input(PAGE, P["run"])
            st.checkbox(ui.t("Per-position acceptance (else the mean α)"), key=key("a_pos"))
        ui.slider(PAGE, P["k_max"])


st.title(ui.t("Hardware & batch"))
st.caption(
    ui.t(
        "c and v are not constants of a pair: they come from the GPU, the batch size, the context and the dtype. A roofline over the operators of one forward predicts them, and with them the speedup and K*."
    )
)
ui.restore(PAGE, SPEC)
view = ui.values(PAGE, SPEC)
view["gpu"] = chosen_gpu(view)
try:
    target, draft = chosen_pair(view)
except ValueError as exc:
    ui.show_error(exc)
    target, draft = PAIRS.loc[P["pair"].default, "target"], PAIRS.loc[P["pair"].default, "draft"]
try:
    view["alpha"] = chosen_alpha(view)
except ValueError as exc:
    ui.show_error(exc)
if not isinstance(view["alpha"], float):
    st.caption(ui.t("α per position: {values}", values=", ".join(f"{a:.3f}" for a in view["alpha"])))
for name, model, tp in (("target", target, view["tp_t"]), ("draft", draft, view["tp_d"])):
    window = hardware.model_spec(model).get("max_context")
    if window and window == window and view["ctx"] + view["k_max"] + 1 > window:
        st.warning(
            ui.t(
                "A context {ctx} + K + 1 is beyond the {name}'s window of {window} tokens: the figures extrapolate.",
                ctx=f"{view['ctx']:,}",
                name=ui.t(ROLES[name]),
                window=f"{int(window):,}",
            ),
            icon=":material/warning:",
        )
    if not hardware.fits(model, view["gpu"], 1, view["ctx"], view["dtype"], tp):
        gpu_name = hardware.gpu_spec(view["gpu"]).get("name", "custom")
        fields = dict(name=ui.t(ROLES[name]), ctx=f"{view['ctx']:,}", tp=tp, gpu=gpu_name, dtype=view["dtype"])
        st.warning(
            ui.t(
                "The {name}'s weights and one sequence's KV cache at L = {ctx} do not fit on {tp} × {gpu} ({dtype}): raise its TP. The figures below assume they fit.",
                **fields,
            ),
            icon=":material/warning:",
        )
ui.show_open_tab(PAGE, P["view"], SECTIONS, view, target, draft)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

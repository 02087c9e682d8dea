"""Hardware & batch: c, v, the speedup and the best K of a real pair on a real GPU, by batch size and context."""

import json

import numpy as np
import streamlit as st

from specviz import hardware, hardware_figures, ui
from specviz.share import Param, by_key

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

PAGE, URL = "hardware", "hardware"
MODELS, GPUS = hardware.load_catalog()
MACHINE = hardware.calibrated_machine()  # this machine, where `python -m specviz calibrate` measured it
CUSTOM_GPU = "custom figures"
GPU_CHOICES = (*GPUS.index, *([MACHINE["name"]] if MACHINE else []), CUSTOM_GPU)
PAIRS = hardware.preset_pairs().set_index("name")
CUSTOM = "custom (choose target and draft)"
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
ALPHA_SOURCES = ("typed", "a run in the library", "the live page's last run")
VIEWS = ("Step time", "c and v", "Speedup by batch", "Batch × context", "Memory", "Engine configs")
SPEC = (
    Param("gpu", "H100-SXM5-80GB", "choice", choices=GPU_CHOICES),
    Param("pair", "Llama-3.1 70B + 3.2 1B", "choice", choices=(CUSTOM, *PAIRS.index)),
    Param("target", "meta-llama/Llama-3.1-70B-Instruct", "choice", choices=tuple(MODELS.index)),
    Param("draft", "meta-llama/Llama-3.2-1B-Instruct", "choice", choices=tuple(MODELS.index)),
    Param("dtype", "bf16", "choice", choices=tuple(hardware.DTYPE_BYTES)),
    Param("g_mem", 80.0, "float", 1.0, 4096.0),
    Param("g_bw", 3.35, "float", 0.01, 100.0),
    Param("g_tflops", 989.0, "float", 0.1, 100000.0),
    Param("g_link", 450.0, "float", 1.0, 10000.0),
    Param("tp_t", 4, "int", 1, 8),
    Param("tp_d", 1, "int", 1, 8),
    Param("ctx", 2048, "int", 1, 131072, log=True),
    Param("batch", 1, "int", 1, 512),
    Param("alpha", 0.8, "float", 0.0, 1.0),
    Param("a_src", "typed", "choice", choices=ALPHA_SOURCES),
    Param("run", 1, "int", 1, 2**31 - 1),
    Param("a_pos", False, "bool"),
    Param("k_max", 8, "int", 1, 16),
    Param("view", "Speedup by batch", "choice", choices=VIEWS),
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
    if view["a_src"] == "a run in the library":
        engine = ui.library()
        if engine is None:
            raise ValueError("the run library cannot be opened, so α cannot come from a run")
        frame = ui.load_runs(engine, ui.library_runs(engine), [view["run"]])
        what = f"run {view['run']}"
    else:
        result = st.session_state.get("live.result")
        if result is None:
            raise ValueError("the live page has no run in this session yet: run one there, or type α")
        frame, what = result.frame(), "the live page's last run"
    return hardware.alpha_from_measurements(frame, view["a_pos"], what)


def _hashable(model) -> str:
    return model if isinstance(model, str) else json.dumps(model, sort_keys=True)


def _model(text: str):
    return text if text in MODELS.index else json.loads(text)


def _gpu(text: str):
    return json.loads(text) if text.startswith("{") else text


@ui.cached
def by_batch(target: str, draft: str, gpu: str, alpha, ctx: int, k_max: int, dtype: str, tp_t: int, tp_d: int):
    t, d, gpu = _model(target), _model(draft), _gpu(gpu)
    frame = hardware.speedup_by_batch(
        t, d, gpu, alpha, BATCHES, [ctx], k_max, dtype=dtype, tp_target=tp_t, tp_draft=tp_d
    )
    costs = hardware.pair_costs(t, d, gpu, np.array(BATCHES), ctx, k_max, dtype=dtype, tp_target=tp_t, tp_draft=tp_d)
    return frame.assign(v=costs["v"])


@ui.cached
def by_batch_and_context(target: str, draft: str, gpu: str, alpha, k_max: int, dtype: str, tp_t: int, tp_d: int):
    t, d, gpu = _model(target), _model(draft), _gpu(gpu)
    return hardware.speedup_by_batch(
        t, d, gpu, alpha, BATCHES, CONTEXTS, k_max, dtype=dtype, tp_target=tp_t, tp_draft=tp_d
    )


def step_section(view: dict, target, draft) -> None:
    """The target's step at the chosen B: time per operator and the roofline of its operators."""
    args = dict(dtype=view["dtype"], tp=view["tp_t"])
    table = hardware.step_breakdown(target, view["gpu"], view["batch"], view["ctx"], 1, **args)
    total = table["seconds"].sum()
    st.metric(f"Target decode step at B = {view['batch']}, L = {view['ctx']:,}", f"{total * 1e3:.3f} ms")
    eff = hardware.efficiency_for(view["gpu"])
    flops, bandwidth = hardware.attainable(view["gpu"], view["dtype"])
    left, right = st.columns(2)
    with left:
        st.plotly_chart(hardware_figures.step_split(table, "Where the step's time goes"), key="fig_split")
    with right:
        st.plotly_chart(hardware_figures.roofline(table, flops, bandwidth, "Roofline"), key="fig_roofline")
    st.caption(
        "Memory-bound operators stream bytes (the weights for the linear layers, the KV cache for "
        f"attention); compute-bound ones are limited by FLOP/s. Efficiencies assumed: {eff.compute:.0%} of "
        f"peak FLOP/s, {eff.memory:.0%} of HBM bandwidth, {eff.overhead_s * 1e3:.3g} ms fixed per step"
        + (f" and {eff.layer_overhead_s * 1e6:.3g} µs per layer." if eff.layer_overhead_s else ".")
    )
    if MACHINE is not None and view["gpu"] == MACHINE["name"]:
        calibration_check()


def calibration_check() -> None:
    """This machine's calibration: the roofline's predicted forward times against the engine's measured ones."""
    steps = hardware.calibration_steps()
    if steps is None:
        return
    st.subheader("Checked against this machine")
    st.plotly_chart(hardware_figures.calibration_parity(steps), key="fig_calibration")
    err = hardware.calibration_errors(steps)
    per_model = ", ".join(f"{m} {e:.0%}" for m, e in err.items() if m != "all")
    st.caption(
        f"`python -m specviz calibrate` timed the bundled pair's forward over {len(steps)} (B, tokens, context) "
        f"cells and predicted each from the microbenchmark figures alone: median |predicted / measured − 1| "
        f"{err['all']:.0%} ({per_model})."
    )


def costs_section(view: dict, target, draft) -> None:
    frame = by_batch(*_pair_args(view, target, draft), view["ctx"], *_engine_args(view))
    st.plotly_chart(hardware_figures.costs_by_batch(frame, view["k_max"]), key="fig_costs")
    st.caption(
        "c = T_target / T_draft and v = (T_verify / T_target − 1) / K from the roofline, at the chosen context. "
        "As B grows the target's step turns compute-bound and verifying K + 1 tokens stops being free (v rises)."
    )


def speedup_section(view: dict, target, draft) -> None:
    frame = by_batch(*_pair_args(view, target, draft), view["ctx"], *_engine_args(view))
    st.plotly_chart(hardware_figures.speedup_by_batch(frame, view["k_max"]), key="fig_speedup_b")
    best = frame.iloc[0]
    if best.k_star:
        st.metric("At B = 1", f"K* = {int(best.k_star)}", delta=f"S = {best.speedup_at_k_star:.2f}×", delta_color="off")
    else:
        st.metric("At B = 1", "don't speculate", delta="no K pays", delta_color="off")
    ui.csv_download("Download speedup by batch (CSV)", lambda: frame, "speedup_by_batch.csv", key="dl_batch")


def map_section(view: dict, target, draft) -> None:
    frame = by_batch_and_context(*_pair_args(view, target, draft), *_engine_args(view))
    left, right = st.columns(2)
    with left:
        st.plotly_chart(hardware_figures.batch_context_map(frame, "k_star"), key="fig_map_k")
    with right:
        st.plotly_chart(hardware_figures.batch_context_map(frame, "speedup_at_k_star"), key="fig_map_s")
    ui.csv_download("Download K*(B, L) (CSV)", lambda: frame, "k_star_by_batch_context.csv", key="dl_map")


def memory_section(view: dict, target, draft) -> None:
    for name, model, tp in (("target", target, view["tp_t"]), ("draft", draft, view["tp_d"])):
        b = int(hardware.max_batch(model, view["gpu"], view["ctx"], view["dtype"], tp))
        weights = hardware.weight_bytes(model, view["dtype"]) / tp / 1e9
        kv = hardware.kv_bytes_per_token(model, view["dtype"], tp) / 2**10
        text = f"{b:,} sequences" if b else "the weights alone do not fit"
        st.metric(f"Largest batch of the {name} at L = {view['ctx']:,} (TP {tp})", text)
        st.caption(f"weights {weights:.2f} GB per GPU; KV cache {kv:.1f} KiB per token per GPU")
    st.caption(f"Counted against {hardware.USABLE_MEMORY:.0%} of HBM; the rest holds activations and the runtime.")


def engine_section(view: dict, target, draft) -> None:
    kw = dict(dtype=view["dtype"], tp_target=view["tp_t"], tp_draft=view["tp_d"])
    config = hardware.vllm_speculative_config(
        target, draft, view["gpu"], view["alpha"], view["ctx"], BATCHES, view["k_max"], **kw
    )
    st.markdown("**vLLM** `--speculative-config` (K by batch size, from K*(B) at this context)")
    st.code(json.dumps(config), language="json")
    st.markdown("**llama.cpp** `llama-server` draft flags (one sequence)")
    st.code(hardware.llama_cpp_flags(target, draft, view["gpu"], view["alpha"], view["ctx"], 16, **kw), language="bash")


def _pair_args(view: dict, target, draft) -> tuple:
    """The cached functions' first arguments: the pair (as hashable text), the GPU and α."""
    alpha = view["alpha"] if isinstance(view["alpha"], float) else tuple(view["alpha"])
    return _hashable(target), _hashable(draft), _hashable(view["gpu"]), alpha


def _engine_args(view: dict) -> tuple:
    return view["k_max"], view["dtype"], view["tp_t"], view["tp_d"]


SECTIONS = dict(
    zip(VIEWS, (step_section, costs_section, speedup_section, map_section, memory_section, engine_section), strict=True)
)


def sidebar_controls() -> None:
    with st.sidebar:
        st.header("Hardware")
        ui.selectbox(PAGE, P["gpu"], "GPU")
        if st.session_state[key("gpu")] == CUSTOM_GPU:
            ui.number_input(PAGE, P["g_mem"], "Memory (GB)")
            ui.number_input(PAGE, P["g_bw"], "Bandwidth (TB/s)", format="%.3f")
            ui.number_input(PAGE, P["g_tflops"], "Dense bf16/fp16 (TFLOP/s); fp8 taken as twice")
            ui.number_input(PAGE, P["g_link"], "Interconnect per direction (GB/s)")
        ui.selectbox(PAGE, P["dtype"], "dtype")
        st.header("Pair")
        ui.selectbox(PAGE, P["pair"], "Preset pair")
        if st.session_state[key("pair")] == CUSTOM:
            ui.selectbox(PAGE, P["target"], "Target")
            ui.selectbox(PAGE, P["draft"], "Draft")
        with st.expander("Upload config.json"):
            st.caption("A Hugging Face config.json replaces the target or draft (uploads are not kept in links).")
            st.file_uploader("Target config.json", type=["json"], key=key("upload_target"))
            st.file_uploader("Draft config.json", type=["json"], key=key("upload_draft"))
        left, right = st.columns(2)
        with left:
            ui.number_input(PAGE, P["tp_t"], "Target TP")
        with right:
            ui.number_input(PAGE, P["tp_d"], "Draft TP")
        st.header("Workload")
        ui.number_input(PAGE, P["ctx"], "Context length L (tokens)", step=1024)
        ui.number_input(PAGE, P["batch"], "Batch size B (step-time view)")
        ui.radio(PAGE, P["a_src"], "α from")
        source = st.session_state[key("a_src")]
        if source == "typed":
            ui.slider(PAGE, P["alpha"], "Acceptance α", step=0.01)
        else:
            if source == "a run in the library":
                ui.number_input(PAGE, P["run"], "Run id (Measured data lists them)")
            st.checkbox("Per-position acceptance (else the mean α)", key=key("a_pos"))
        ui.slider(PAGE, P["k_max"], "K max")


st.title("Hardware & batch")
st.caption(
    "c and v are not constants of a pair: they come from the GPU, the batch size, the context and the "
    "dtype. A roofline over the operators of one forward predicts them, and with them the speedup and K*."
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
    st.caption("α per position: " + ", ".join(f"{a:.3f}" for a in view["alpha"]))
for name, model, tp in (("target", target, view["tp_t"]), ("draft", draft, view["tp_d"])):
    window = hardware.model_spec(model).get("max_context")
    if window and window == window and view["ctx"] + view["k_max"] + 1 > window:
        st.warning(
            f"A context {view['ctx']:,} + K + 1 is beyond the {name}'s window of {int(window):,} tokens: "
            "the figures extrapolate.",
            icon=":material/warning:",
        )
    if not hardware.fits(model, view["gpu"], 1, view["ctx"], view["dtype"], tp):
        st.warning(
            f"The {name}'s weights and one sequence's KV cache at L = {view['ctx']:,} do not fit on "
            f"{tp} × {hardware.gpu_spec(view['gpu']).get('name', 'custom')} ({view['dtype']}): raise its TP. "
            "The figures below assume they fit.",
            icon=":material/warning:",
        )
ui.show_open_tab(PAGE, P["view"], SECTIONS, view, target, draft)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

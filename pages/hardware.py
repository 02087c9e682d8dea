"""Hardware & batch: c, v, the speedup and the best K of a real pair on a real GPU, by batch size and context."""

import json
from dataclasses import replace

import numpy as np
import streamlit as st

from specviz.app import profiles, router, ui
from specviz.app.figures import hardware as hardware_figures
from specviz.app.share import Param, by_key
from specviz.base import i18n
from specviz.base.i18n import N_
from specviz.core import acceptance, engines, hardware, heads, moe, trees

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "hardware", "hardware"
MODELS, GPUS = hardware.load_catalog()
MACHINE = hardware.calibrated_machine()  # this machine, where `python -m specviz calibrate` measured it
CUSTOM_GPU = "custom"  #: the GPU choice "custom figures" (a link before the slugs wrote that)
GPU_CHOICES = (*GPUS.index, *([MACHINE["name"]] if MACHINE else []), CUSTOM_GPU)
#: the preset pairs: a draft model (pairs.csv) or a published head (head_pairs.csv, same columns)
PAIRS = hardware.preset_pairs(heads=True).set_index("name")
ENGINES = engines.load_engines()
HEADS = heads.load_heads()
NGRAM = hardware.NGRAM  #: the draft choice "n-gram lookup" (prompt lookup: no draft forward)
DRAFTS = (*MODELS.index, *HEADS.index, NGRAM)  #: a catalogue model, a published head, or n-gram lookup
HEAD_KINDS = {"eagle": "EAGLE", "eagle3": "EAGLE-3", "mtp": "MTP", "medusa": "Medusa"}  #: kind -> its name
VLLM_METHODS = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "deepseek_mtp", "medusa": "medusa", NGRAM: "ngram"}
MOE_PRESET = "DeepSeek-V3 + MTP"  #: the preset the MoE view offers for a dense target
CUSTOM = "custom"  #: the pair choice "custom (choose target and draft)"
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
ALPHA_SOURCES = ("typed", "library", "live", "fit")  #: where α comes from (slugs: a link names them)
VIEWS = ("step", "costs", "speedup", "map", "moe", "memory", "engine")  #: the tabs (slugs: a link names them)
VIEW_LABELS = (
    N_("Step time"),
    N_("c and v"),
    N_("Speedup by batch"),
    N_("Batch × context"),
    N_("MoE against dense"),
    N_("Memory"),
    N_("Engine configs"),
)
ROLES = {"target": N_("target"), "draft": N_("draft")}  #: model role -> its name
SOURCE_LABELS = (
    N_("typed"),
    N_("a run in the library"),
    N_("the live page's last run"),
    N_("a fitted decay α(L)"),
)
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
    Param("draft", "meta-llama/Llama-3.2-1B-Instruct", "choice", choices=DRAFTS, label=N_("Draft")),
    Param("d_tokens", 1, "int", 1, 64, label=N_("Tokens per draft forward (the tree's top-k; 1 for a chain)")),
    Param("v_tokens", 0, "int", 0, 1024, label=N_("Tokens verified T (the tree's nodes with the root; 0: K + 1)")),
    Param("d_ctx", 0, "int", 0, 131072, label=N_("Draft KV budget (tokens; 0: the full context)")),
    Param("ep", False, "bool", label=N_("Expert parallel (EP = TP)")),
    Param("skew", 0.0, "float", 0.0, 2.0, label=N_("Routing skew (Zipf exponent; 0: uniform)")),
    Param("dtype", "bf16", "choice", choices=tuple(hardware.DTYPE_BYTES), label=N_("dtype")),
    profiles.engine_param(),  # a catalogue profile, or custom with its terms in eng_terms
    profiles.terms_param(),
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
    Param("alpha_l", "1.5;0.2", "text", hi=80, label=N_("α(L) fit 'a;b': logit α(L) = a − b·ln(L / 1024)")),
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
    if heads.is_head(draft):
        heads.check_target(draft, hardware.model_spec(target).get("name"))
    elif draft != NGRAM:
        hardware.check_pair(target, draft)
    return target, draft


def draft_label(draft: str) -> str:
    """A draft choice as the selectbox shows it: a head with its kind and source, n-gram lookup by name."""
    if draft == NGRAM:
        return ui.t("n-gram lookup (prompt lookup, no draft model)")
    if draft in HEADS.index:
        row = HEADS.loc[draft]
        return ui.t("{head} ({kind} head; {source})", head=draft, kind=HEAD_KINDS[row["kind"]], source=row["source"])
    return draft


def draft_choices(target, draft: str) -> tuple:
    """The drafts offered for ``target``: the catalogue models, the heads trained for it, n-gram
    lookup (and the current choice, so that a link's choice stays visible while it is reported)."""
    offered = (*MODELS.index, *heads.heads_for(hardware.model_spec(target).get("name")), NGRAM)
    return offered if draft in offered else (*offered, draft)


def is_moe(model) -> bool:
    return bool(hardware.model_spec(model)["n_experts"])


def round_shape(view: dict, target, draft) -> dict:
    """The library's keywords for the round: draft_tokens and verify_tokens for a head (a tree's
    top-k and node count T; a chain: 1 and K + 1), the draft's KV budget (0: the full context) and
    expert parallelism for an MoE target. A T below K max + 1 raises ValueError naming it."""
    shape: dict = {}
    kind = HEADS.loc[draft, "kind"] if heads.is_head(draft) else None
    if kind is not None:
        if kind not in heads.PARALLEL:
            shape["draft_tokens"] = view["d_tokens"]
        if view["v_tokens"]:
            need = view["k_max"] + 1
            if view["v_tokens"] < need:
                raise ValueError(
                    ui.t(
                        "Tokens verified T = {t} is too few: a tree of depth K holds at least K + 1 nodes, so T must be at least K max + 1 = {need}, or 0 for a chain",
                        t=view["v_tokens"],
                        need=need,
                    )
                )
            shape["verify_tokens"] = view["v_tokens"]
    if view["d_ctx"] and draft != NGRAM and kind not in heads.PARALLEL:
        shape["budget"] = view["d_ctx"]
    if view["ep"] and is_moe(target):
        shape["expert_parallel"] = True
    return shape


def _library_kw(draft_tokens=1, verify_tokens=None, expert_parallel=False) -> dict:
    """The round's keywords of pair_costs / speedup_by_batch."""
    return dict(draft_tokens=draft_tokens, verify_tokens=verify_tokens, expert_parallel=expert_parallel)


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
    if view["a_src"] == "fit":  # α at the chosen context; the batch × context map takes α(L) itself
        return float(acceptance.DecayFit.from_param(view["alpha_l"]).alpha(view["ctx"]))
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
        frame, what = result.frame(), i18n.Phrase(N_("the live page's last run"))
    return hardware.alpha_from_measurements(frame, view["a_pos"], what)


def _hashable(model) -> str:
    return model if isinstance(model, str) else json.dumps(model, sort_keys=True)


def _model(text: str):
    return text if text in MODELS.index or text in HEADS.index or text == NGRAM else json.loads(text)


def _gpu(text: str):
    return json.loads(text) if text.startswith("{") else text


@ui.cached
def by_batch(
    target: str,
    draft: str,
    gpu: str,
    alpha,
    ctx: int,
    k_max: int,
    dtype: str,
    tp_t: int,
    tp_d: int,
    engine: str,
    *,
    draft_tokens: int = 1,
    verify_tokens: int | None = None,
    budget: int | None = None,
    expert_parallel: bool = False,
):
    t, d, gpu = _model(target), _model(draft), _gpu(gpu)
    kw = _cached_kw(dtype, tp_t, tp_d, engine, draft_tokens, verify_tokens, expert_parallel)
    kw["draft_context"] = None if budget is None else min(budget, ctx)  # a budget beyond L is the full context
    frame = hardware.speedup_by_batch(t, d, gpu, alpha, BATCHES, [ctx], k_max, **kw)
    costs = hardware.pair_costs(t, d, gpu, np.array(BATCHES), ctx, k_max, **kw)
    return frame.assign(v=costs["v"])


@ui.cached
def by_batch_and_context(
    target: str,
    draft: str,
    gpu: str,
    alpha,
    k_max: int,
    dtype: str,
    tp_t: int,
    tp_d: int,
    engine: str,
    *,
    draft_tokens: int = 1,
    verify_tokens: int | None = None,
    budget: int | None = None,
    expert_parallel: bool = False,
    decay: str | None = None,
):
    """Speedup and K* on the batch × context grid; ``decay`` (a fit's link text) prices each context at α(L)."""
    t, d, gpu = _model(target), _model(draft), _gpu(gpu)
    kw = _cached_kw(dtype, tp_t, tp_d, engine, draft_tokens, verify_tokens, expert_parallel)
    kw["draft_context"] = None if budget is None else np.minimum(budget, CONTEXTS)
    alpha = acceptance.DecayFit.from_param(decay) if decay else alpha
    return hardware.speedup_by_batch(t, d, gpu, alpha, BATCHES, CONTEXTS, k_max, **kw)


def _cached_kw(dtype, tp_t, tp_d, engine, draft_tokens, verify_tokens, expert_parallel) -> dict:
    """pair_costs / speedup_by_batch keywords from the cached functions' arguments."""
    kw = dict(dtype=dtype, tp_target=tp_t, tp_draft=tp_d, efficiency=_efficiency(engine))
    return kw | _library_kw(draft_tokens, verify_tokens, expert_parallel)


def _efficiency(engine: str):
    """The engine's profile; None for the default, so that a calibrated machine keeps its own figures.
    ``engine`` is a choice (custom: this view's eng_terms) or a cached function's ``profiles.engine_key``."""
    if engine == profiles.CUSTOM:
        return profiles.efficiency(engine, st.session_state[key("eng_terms")])
    return profiles.efficiency_of_key(engine)


def priced_with(view: dict) -> None:
    """The caption every figure of the pair carries: which engine profile priced it."""
    st.caption(profiles.caption(view["engine"], view["eng_terms"]))


def step_section(view: dict, target, draft) -> None:
    """The target's step at the chosen B: time per operator and the roofline of its operators."""
    eff = _efficiency(view["engine"]) or hardware.efficiency_for(view["gpu"])
    args = dict(dtype=view["dtype"], tp=view["tp_t"], efficiency=eff)
    args["expert_parallel"] = view["shape"].get("expert_parallel", False)
    table = hardware.step_breakdown(target, view["gpu"], view["batch"], view["ctx"], 1, **args)
    total = table["seconds"].sum()
    st.metric(
        ui.t("Target decode step at B = {batch}, L = {ctx}", batch=view["batch"], ctx=f"{view['ctx']:,}"),
        f"{total * 1e3:.3f} ms",
    )
    band_caption(error_band(view, "step"), total * 1e3, "{:.3f} ms")
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
    frame = by_batch(*_pair_args(view, target, draft), view["ctx"], *_engine_args(view), **view["shape"])
    ui.chart(hardware_figures.costs_by_batch(frame, view["k_max"], lang=ui.language()), key="fig_costs")
    priced_with(view)
    left, right = st.columns(2)
    left.metric(ui.t("c at B = 1"), f"{frame['c'].iloc[0]:.2f}")
    right.metric(ui.t("v at B = 1, K = {k}", k=view["k_max"]), f"{frame['v'].iloc[0]:.3f}")
    budget_caption(view)
    st.caption(
        ui.t(
            "c = T_target / T_draft and v = (T_verify / T_target − 1) / K from the roofline, at the chosen context. As B grows the target's step turns compute-bound and verifying K + 1 tokens stops being free (v rises)."
        )
    )


def speedup_section(view: dict, target, draft) -> None:
    frame = by_batch(*_pair_args(view, target, draft), view["ctx"], *_engine_args(view), **view["shape"])
    band = error_band(view, "speedup")
    paying = frame[frame["k_star"] > 0]
    shade = None
    if band is not None:
        shade = (paying["batch"], paying["speedup_at_k_star"] / band["hi"], paying["speedup_at_k_star"] / band["lo"])
    figure = hardware_figures.speedup_by_batch(frame, view["k_max"], lang=ui.language(), band=shade)
    ui.chart(figure, key="fig_speedup_b")
    priced_with(view)
    best = frame.iloc[0]
    if best.k_star:
        at_b1, k_star, s = ui.t("At B = 1"), f"K* = {int(best.k_star)}", f"S = {best.speedup_at_k_star:.2f}×"
        st.metric(at_b1, k_star, delta=s, delta_color="off")
        band_caption(band, best.speedup_at_k_star, "{:.2f}×")
    else:
        st.metric(ui.t("At B = 1"), ui.t("don't speculate"), delta=ui.t("no K pays"), delta_color="off")
    round_caption(view, draft)
    ui.csv_download(ui.t("Download speedup by batch (CSV)"), lambda: frame, "speedup_by_batch.csv", key="dl_batch")


def map_section(view: dict, target, draft) -> None:
    decay = view.get("decay")
    frame = by_batch_and_context(*_pair_args(view, target, draft), *_engine_args(view), **view["shape"], decay=decay)
    if decay:
        st.caption(ui.t("Each context is priced at its own α(L) from the fitted decay."))
    left, right = st.columns(2)
    with left:
        ui.chart(hardware_figures.batch_context_map(frame, "k_star", lang=ui.language()), key="fig_map_k")
    with right:
        ui.chart(hardware_figures.batch_context_map(frame, "speedup_at_k_star", lang=ui.language()), key="fig_map_s")
    priced_with(view)
    ui.csv_download(ui.t("Download K*(B, L) (CSV)"), lambda: frame, "k_star_by_batch_context.csv", key="dl_map")


def memory_section(view: dict, target, draft) -> None:
    models = (("target", target, view["tp_t"]), ("draft", draft, view["tp_d"]))
    for name, model, tp in models if is_model(draft) else models[:1]:
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
    if not is_model(draft):
        st.caption(ui.t("The draft is a head on the target's GPUs or n-gram lookup: only the target is counted."))


def engine_section(view: dict, target, draft) -> None:
    kw = dict(
        dtype=view["dtype"], tp_target=view["tp_t"], tp_draft=view["tp_d"], efficiency=_efficiency(view["engine"])
    )
    kw |= library_shape(view)
    config = hardware.vllm_speculative_config(
        target, draft, view["gpu"], view["alpha"], view["ctx"], BATCHES, view["k_max"], **kw
    )
    st.markdown(ui.t("**vLLM** `--speculative-config` (K by batch size, from K*(B) at this context)"))
    st.code(json.dumps(vllm_method(config, target, draft)), language="json")
    if not is_model(draft):
        if heads.is_head(draft) and HEADS.loc[draft, "kind"] not in heads.PARALLEL:
            st.markdown(ui.t("**SGLang** EAGLE flags (depth K*(B = 1), top-k and draft tokens T)"))
            k = max(
                1,
                hardware.speedup_by_batch(
                    target, draft, view["gpu"], view["alpha"], [1], [view["ctx"]], view["k_max"], **kw
                )["k_star"].iloc[0],
            )
            budget = (view["shape"].get("verify_tokens") or int(k) + 1) - 1
            algorithm = "EAGLE3" if HEADS.loc[draft, "kind"] == "eagle3" else "EAGLE"
            flags = trees.sglang_flags(int(k), view["shape"].get("draft_tokens", 1), budget)
            st.code(f"--speculative-algorithm {algorithm} {flags}", language="bash")
        st.caption(
            ui.t("llama.cpp's llama-server drafts with a draft model (--model-draft): it has no flags for this draft.")
        )
        return
    st.markdown(ui.t("**llama.cpp** `llama-server` draft flags (one sequence)"))
    flags = hardware.llama_cpp_flags(target, draft, view["gpu"], view["alpha"], view["ctx"], 16, **kw)
    st.code(ui.message(flags), language="bash")


def vllm_method(config: dict, target, draft) -> dict:
    """vLLM's config for a head or n-gram lookup: its method (vllm/config/speculative.py's
    SpeculativeMethod); MTP's module ships inside the target's checkpoint, n-gram lookup has no model."""
    if is_model(draft):
        return config
    kind = HEADS.loc[draft, "kind"] if heads.is_head(draft) else NGRAM
    out = {"method": VLLM_METHODS[kind]} | {k: v for k, v in config.items() if k != "method"}
    if kind == "mtp":
        out["model"] = hardware.model_spec(target).get("name")
    if kind == NGRAM:
        out.pop("model")
    return out


def is_model(draft) -> bool:
    """Whether the draft is a model of its own (not a head, not n-gram lookup)."""
    return not (draft == NGRAM or heads.is_head(draft))


def library_shape(view: dict) -> dict:
    """:func:`round_shape` as pair_costs / speedup_by_batch keywords (the budget as draft_context)."""
    shape = dict(view["shape"])
    budget = shape.pop("budget", None)
    return _library_kw(**shape) | ({"draft_context": min(budget, view["ctx"])} if budget else {})


def error_band(view: dict, kind: str) -> dict | None:
    """The engine profile's error band (:func:`specviz.core.engines.error_band`: the 10th and 90th
    percentile of predicted / measured on held-out published rows), or None where it has none."""
    if view["engine"] not in ENGINES.index:  # a custom profile was scored on no held-out row
        return None
    return engines.error_band(view["engine"], kind)


def band_caption(band: dict | None, predicted: float, fmt: str) -> None:
    """What a measurement typically is beside the prediction: predicted / hi … predicted / lo."""
    if band is None:
        return
    fields = dict(low=fmt.format(predicted / band["hi"]), high=fmt.format(predicted / band["lo"]), n=band["rows"])
    if band.get("basis") == "all":  # too few rows of this profile: every profile's held-out rows stand in
        st.caption(
            ui.t(
                "Measured is typically between {low} and {high}: the 10–90 % range of held-out published rows of every profile (this one has too few), {n} rows.",
                **fields,
            )
        )
    else:
        st.caption(
            ui.t(
                "Measured is typically between {low} and {high}: the 10–90 % range of held-out published rows for this profile, {n} rows.",
                **fields,
            )
        )


def budget_caption(view: dict) -> None:
    """What the draft's KV budget means (MagicDec), where one is set."""
    budget = view["shape"].get("budget")
    if budget:
        st.caption(
            ui.t(
                "The draft attends over a fixed budget of {budget} tokens (MagicDec's StreamingLLM draft: the first tokens and a recent window) instead of the whole context of {ctx}: its step stops growing with L, so c grows with the context while the target's KV reads grow.",
                budget=f"{min(budget, view['ctx']):,}",
                ctx=f"{view['ctx']:,}",
            )
        )


def round_caption(view: dict, draft) -> None:
    """How the round of a head draft is priced."""
    if not heads.is_head(draft):
        return
    shape = view["shape"]
    st.caption(
        ui.t(
            "A head draft runs on the target's GPUs. Each of the K draft forwards takes {d} tokens per sequence and the target verifies {t}; E[N] is the chain's from α (a tree accepts more: the Drafting strategies page prices trees).",
            d=shape.get("draft_tokens", 1),
            t=shape.get("verify_tokens") or "K + 1",
        )
    )


def moe_section(view: dict, target, draft) -> None:
    """An MoE target beside the dense model of its active size: v(B) and K*(B) for both."""
    if not is_moe(target):
        st.info(
            ui.t(
                "This view compares a mixture-of-experts target with a dense model of its active size; the chosen target is dense. Choose an MoE target (DeepSeek-V3, Qwen3, Mixtral, gpt-oss, Llama-4) or the preset {preset}.",
                preset=MOE_PRESET,
            )
        )
        st.button(
            ui.t("Open the preset {preset}", preset=MOE_PRESET), key=key("moe_preset"), on_click=choose_moe_preset
        )
        return
    dense = hardware.dense_comparator(target)
    args = _pair_args(view, target, draft)
    m = hardware.model_spec(target)
    names = (m.get("name", ui.t("MoE target")), dense["name"])
    frames = {
        names[0]: by_batch(*args, view["ctx"], *_engine_args(view), **view["shape"]),
        names[1]: by_batch(_hashable(dense), *args[1:], view["ctx"], *_engine_args(view), **view["shape"]),
    }
    ui.chart(hardware_figures.moe_against_dense(frames, view["k_max"], lang=ui.language()), key="fig_moe")
    priced_with(view)
    columns = st.columns(2)
    for column, label, frame in zip(
        columns, (ui.t("MoE target at B = 1"), ui.t("Dense comparator at B = 1")), frames.values(), strict=True
    ):
        best = frame.iloc[0]
        if best.k_star:
            column.metric(
                label, f"K* = {int(best.k_star)}", delta=f"S = {best.speedup_at_k_star:.2f}×", delta_color="off"
            )
        else:
            column.metric(label, ui.t("don't speculate"), delta=ui.t("no K pays"), delta_color="off")
    e, k, n = m["n_experts"], m["experts_per_token"], view["k_max"] + 1
    st.caption(
        ui.t(
            "Why verification is not free for an MoE target at small batch: a decode step of one sequence reads the weights of the k = {k} experts its token picks, but verifying K + 1 = {n} tokens reads every distinct expert they pick, {touched} of {e} on average (E·(1 − (1 − k/E)^(B·(K + 1))) under uniform routing; at most (K + 1)·k = {most}). So the verify step streams several times a decode step's expert weights and v is far above the dense model's, where every token uses the same weights. As B grows a decode step already touches most experts, the extra tokens add few, and the gap closes.",
            k=k,
            n=n,
            touched=f"{float(moe.experts_touched(e, k, n)):.1f}",
            e=e,
            most=min(n * k, e),
        )
    )
    st.caption(
        ui.t(
            "The dense comparator keeps the target's layers, width, attention and vocabulary and gives every layer one MLP as wide as the experts a token passes through: {active} parameters, the target's active count.",
            active=f"{hardware.parameter_count(dense) / 1e9:.3g}B",
        )
    )


def choose_moe_preset() -> None:
    """on_click: open the MoE preset pair (before the sidebar's widgets are drawn)."""
    st.session_state[key("pair")] = MOE_PRESET


def _pair_args(view: dict, target, draft) -> tuple:
    """The cached functions' first arguments: the pair (as hashable text), the GPU and α."""
    alpha = view["alpha"] if isinstance(view["alpha"], float) else tuple(view["alpha"])
    return _hashable(target), _hashable(draft), _hashable(view["gpu"]), alpha


def _engine_args(view: dict) -> tuple:
    engine = profiles.engine_key(view["engine"], view["eng_terms"])  # custom: its terms key the cache
    return view["k_max"], view["dtype"], view["tp_t"], view["tp_d"], engine


SECTIONS = dict(
    zip(
        VIEWS,
        (step_section, costs_section, speedup_section, map_section, moe_section, memory_section, engine_section),
        strict=True,
    )
)


def round_controls(target, draft) -> None:
    """A head's tree (top-k, T), the draft's KV budget, expert parallelism: each where it applies."""
    kind = HEADS.loc[draft, "kind"] if heads.is_head(draft) else None
    if kind is not None:
        st.caption(draft_label(draft))
        if kind not in heads.PARALLEL:
            ui.number_input(PAGE, P["d_tokens"])
        ui.number_input(PAGE, P["v_tokens"])
    if draft != NGRAM and kind not in heads.PARALLEL:
        ui.number_input(PAGE, P["d_ctx"], step=256)
    if is_moe(target):
        st.checkbox(
            ui.t(P["ep"].label),
            key=key("ep"),
            help=ui.t(
                "vLLM's --enable-expert-parallel: each GPU of the tensor-parallel group holds whole experts instead of a slice of every expert."
            ),
        )
        ui.number_input(
            PAGE,
            P["skew"],
            step=0.1,
            help=ui.t(
                "Real routers favour some experts: with a skew s the e-th busiest expert gets a share ∝ 1/e^s of the tokens, so a step touches fewer distinct experts than under uniform routing (0)."
            ),
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
        profiles.engine_controls(PAGE, P["engine"], P["eng_terms"])  # custom: a saved profile or typed terms
        st.header(ui.t("Pair"))
        ui.selectbox(
            PAGE, P["pair"], format_func=lambda p: ui.t("custom (choose target and draft)") if p == CUSTOM else p
        )
        if st.session_state[key("pair")] == CUSTOM:
            ui.selectbox(PAGE, P["target"])
            offered = replace(P["draft"], choices=draft_choices(target, st.session_state[key("draft")]))
            ui.selectbox(PAGE, offered, format_func=draft_label)
        round_controls(target, draft)
        with st.expander(ui.t("Upload config.json")):
            st.caption(ui.t("A Hugging Face config.json replaces the target or draft (uploads are not kept in links)."))
            st.file_uploader(ui.t("Target config.json"), type=["json"], key=key("upload_target"))
            st.file_uploader(ui.t("Draft config.json"), type=["json"], key=key("upload_draft"))
        left, right = st.columns(2)
        with left:
            ui.number_input(PAGE, P["tp_t"])
        if is_model(draft):  # a head runs on the target's GPUs
            with right:
                ui.number_input(PAGE, P["tp_d"])
        st.header(ui.t("Workload"))
        ui.number_input(PAGE, P["ctx"], step=1024)
        ui.number_input(PAGE, P["batch"])
        ui.radio(PAGE, P["a_src"])
        source = st.session_state[key("a_src")]
        if source == "typed":
            ui.slider(PAGE, P["alpha"], step=0.01)
        elif source == "fit":
            ui.text_box(PAGE, P["alpha_l"])
            st.caption(ui.t("Measured data fits it (By context and domain) and links here with it."))
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
target = hardware.with_routing_skew(target, view["skew"])
if not is_model(draft):
    view["tp_d"] = view["tp_t"]  # a head runs on the target's GPUs (n-gram lookup on their host)
try:
    view["shape"] = round_shape(view, target, draft)
except ValueError as exc:
    ui.show_error(exc)
    view["shape"] = round_shape(view | {"v_tokens": 0}, target, draft)  # a chain, until T is mended
view["decay"] = None
try:
    view["alpha"] = chosen_alpha(view)
    view["decay"] = view["alpha_l"] if view["a_src"] == "fit" else None  # checked by chosen_alpha
except ValueError as exc:
    ui.show_error(exc)
if not isinstance(view["alpha"], float):
    st.caption(ui.t("α per position: {values}", values=", ".join(f"{a:.3f}" for a in view["alpha"])))
for name, model, tp in (("target", target, view["tp_t"]), ("draft", draft, view["tp_d"]))[: 1 + is_model(draft)]:
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

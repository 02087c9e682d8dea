"""Hardware & batch: c, v, the speedup and the best K of a real pair on a real GPU, by batch size and context."""

import json
from dataclasses import replace

import streamlit as st

from specviz.app import bands, profiles, router, ui
from specviz.app.figures import hardware as hardware_figures
from specviz.app.scenarios import hardware as scenarios
from specviz.app.scenarios import verdicts
from specviz.app.scenarios.hardware import BATCHES, NGRAM, Scenario, is_model
from specviz.app.share import by_key
from specviz.core import configs, hardware, heads

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "hardware", "hardware"
MACHINE = hardware.calibrated_machine()  # this machine, where `python -m specviz calibrate` measured it
SPEC = scenarios.controls(MACHINE)
P = by_key(SPEC)
MOE_PRESET = "DeepSeek-V3 + MTP"  #: the preset the MoE view offers for a dense target


def key(name: str) -> str:
    return ui.key(PAGE, name)


def draft_label(draft) -> str:
    """A draft as the page names it: a head with its kind and source, n-gram lookup by name, an uploaded model by
    its name."""
    if isinstance(draft, str) and draft == NGRAM:
        return ui.t("n-gram lookup (prompt lookup, no draft model)")
    if heads.is_head(draft):
        row = heads.head_spec(draft)
        kind = heads.KIND_NAMES.get(row["kind"], row["kind"])
        return ui.t("{head} ({kind} head; {source})", head=row["name"], kind=kind, source=row["source"])
    return draft if isinstance(draft, str) else str(draft.get("name", "?"))


def priced_with(s: Scenario) -> None:
    """The caption every figure of the pair carries: which engine profile priced it."""
    st.caption(s.profile.caption())


def step_section(s: Scenario) -> None:
    """The target's step at the chosen B: time per operator and the roofline of its operators."""
    table, eff = scenarios.step(s)
    total = table["seconds"].sum()
    st.metric(
        ui.t("Target decode step at B = {batch}, L = {ctx}", batch=s.batch, ctx=f"{s.ctx:,}"),
        f"{total * 1e3:.3f} ms",
    )
    if note := bands.note(kind="step", point=total * 1e3, fmt="{:.3f} ms", batch=s.batch, **scenarios.band_args(s)):
        st.caption(note)
    flops, bandwidth = hardware.attainable(s.gpu_spec, s.dtype, eff)
    left, right = st.columns(2)
    with left:
        ui.chart(
            ui.figure(hardware_figures.step_split, table, ui.t("Where the step's time goes"), lang=ui.language()),
            key="fig_split",
        )
    with right:
        ui.chart(
            ui.figure(hardware_figures.roofline, table, flops, bandwidth, ui.t("Roofline"), lang=ui.language()),
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
    priced_with(s)
    if MACHINE is not None and s.gpu == MACHINE["name"]:
        calibration_check()


def calibration_check() -> None:
    """This machine's calibration: the roofline's predicted forward times against the engine's measured ones."""
    steps = hardware.calibration_steps()
    if steps is None:
        return
    st.subheader(ui.t("Checked against this machine"))
    ui.chart(ui.figure(hardware_figures.calibration_parity, steps, lang=ui.language()), key="fig_calibration")
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


def costs_section(s: Scenario) -> None:
    frame = scenarios.by_batch(s)
    ui.chart(ui.figure(hardware_figures.costs_by_batch, frame, s.k_max, lang=ui.language()), key="fig_costs")
    priced_with(s)
    left, right = st.columns(2)
    left.metric(ui.t("c at B = 1"), f"{frame['c'].iloc[0]:.2f}")
    right.metric(ui.t("v at B = 1, K = {k}", k=s.k_max), f"{frame['v'].iloc[0]:.3f}")
    if s.budget:  # MagicDec's StreamingLLM draft
        st.caption(
            ui.t(
                "The draft attends over a fixed budget of {budget} tokens (MagicDec's StreamingLLM draft: the first tokens and a recent window) instead of the whole context of {ctx}: its step stops growing with L, so c grows with the context while the target's KV reads grow.",
                budget=f"{min(s.budget, s.ctx):,}",
                ctx=f"{s.ctx:,}",
            )
        )
    st.caption(
        ui.t(
            "c = T_target / T_draft and v = (T_verify / T_target − 1) / K from the roofline, at the chosen context. As B grows the target's step turns compute-bound and verifying K + 1 tokens stops being free (v rises)."
        )
    )


def speedup_section(s: Scenario) -> None:
    frame = scenarios.by_batch(s)
    paying = frame[frame["k_star"] > 0]
    band = bands.shade(
        kind="speedup", points=paying["speedup_at_k_star"], batches=paying["batch"], **scenarios.band_args(s)
    )
    shade = None if band is None else (paying["batch"], *band)
    figure = ui.figure(hardware_figures.speedup_by_batch, frame, s.k_max, lang=ui.language(), band=shade)
    ui.chart(figure, key="fig_speedup_b")
    priced_with(s)
    best = frame.iloc[0]
    if best.k_star:
        at_b1, k_star, speedup = ui.t("At B = 1"), f"K* = {int(best.k_star)}", f"S = {best.speedup_at_k_star:.2f}×"
        st.metric(at_b1, k_star, delta=speedup, delta_color="off")
        if note := bands.note(
            kind="speedup", point=best.speedup_at_k_star, fmt="{:.2f}×", batch=1, **scenarios.band_args(s)
        ):
            st.caption(note)
    else:
        st.metric(ui.t("At B = 1"), ui.t("don't speculate"), delta=ui.t("no K pays"), delta_color="off")
    losing = frame.loc[frame["k_star"] == 0, "batch"]
    if len(losing):
        st.caption(verdicts.loss_reason(s, int(losing.iloc[0])))
    if heads.is_head(s.draft_spec):  # how the round of a head draft is priced
        st.caption(
            ui.t(
                "A head draft runs on the target's GPUs. Each of the K draft forwards takes {d} tokens per sequence and the target verifies {t}; E[N] is the chain's from α (a tree accepts more: the Drafting strategies page prices trees).",
                d=s.draft_tokens,
                t=s.verify_tokens or "K + 1",
            )
        )
    ui.csv_download(ui.t("Download speedup by batch (CSV)"), lambda: frame, "speedup_by_batch.csv", key="dl_batch")


def map_section(s: Scenario) -> None:
    frame = scenarios.by_batch_and_context(s)
    if s.decay:
        st.caption(ui.t("Each context is priced at its own α(L) from the fitted decay."))
    left, right = st.columns(2)
    with left:
        ui.chart(ui.figure(hardware_figures.batch_context_map, frame, "k_star", lang=ui.language()), key="fig_map_k")
    with right:
        ui.chart(
            ui.figure(hardware_figures.batch_context_map, frame, "speedup_at_k_star", lang=ui.language()),
            key="fig_map_s",
        )
    st.caption(scenarios.fixed_k_note(frame, s.k_max))
    priced_with(s)
    ui.csv_download(ui.t("Download K*(B, L) (CSV)"), lambda: frame, "k_star_by_batch_context.csv", key="dl_map")


def memory_section(s: Scenario) -> None:
    plan = verdicts.memory(s)
    most = lambda b: ui.t("{b} sequences", b=f"{b:,}") if b else ui.t("the weights alone do not fit")
    left, right = st.columns(2)
    label = ui.t("Largest batch at L = {ctx} with speculation (K = {k})", ctx=f"{s.ctx:,}", k=s.k_max)
    left.metric(label, most(plan.max_batch))
    right.metric(ui.t("… without speculation"), most(plan.max_batch_plain))
    ui.static_table(verdicts.memory_table(plan), {"GB": ",.2f"})
    st.caption(verdicts.memory_note(s, plan))
    st.caption(
        ui.t(
            "Counted against {share} of HBM; the rest holds activations and the runtime. The draft sits on the target's GPUs, its weights over its own TP.",
            share=f"{hardware.USABLE_MEMORY:.0%}",
        )
    )


def engine_section(s: Scenario) -> None:
    view, target, draft = s.as_view(), s.target_spec, s.draft_spec  # the flag writers read these names
    kw = s.pricing_kw()
    config = hardware.vllm_speculative_config(
        target, draft, view["gpu"], view["alpha"], view["ctx"], BATCHES, view["k_max"], **kw
    )
    priced_with(s)
    st.markdown(ui.t("**vLLM** `--speculative-config` (K by batch size, from K*(B) at this context)"))
    try:
        st.code(json.dumps(vllm_method(config, target, draft)), language="json")
    except ValueError as exc:  # a head vLLM has no method for: said, not approximated
        st.info(ui.message(exc), icon=":material/info:")
    if not is_model(draft):
        kind = heads.head_spec(draft)["kind"] if heads.is_head(draft) else None
        if kind is not None and configs.sglang.algorithm(kind) is None:
            st.caption(
                ui.t(
                    "SGLang {version} has no algorithm for {kind} drafts: not expressible in SGLang.",
                    version=configs.sglang.VERSION,
                    kind=kind,
                )
            )
        elif kind is not None and kind not in heads.PARALLEL:
            st.markdown(ui.t("**SGLang** EAGLE flags (depth K*(B = 1), top-k and draft tokens T)"))
            k = max(
                1,
                hardware.speedup_by_batch(
                    target, draft, view["gpu"], view["alpha"], [1], [view["ctx"]], view["k_max"], **kw
                )["k_star"].iloc[0],
            )
            budget = (view["shape"].get("verify_tokens") or int(k) + 1) - 1
            algorithm = configs.sglang.algorithm(kind)
            flags = configs.sglang.tree_flags(int(k), view["shape"].get("draft_tokens", 1), budget, algorithm=algorithm)
            st.code(flags, language="bash")
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
    kind = heads.head_spec(draft)["kind"] if heads.is_head(draft) else NGRAM
    return configs.vllm.with_head(config, kind, hardware.model_spec(target).get("name"))


def moe_section(s: Scenario) -> None:
    """An MoE target beside the dense model of its active size: v(B) and K*(B) for both."""
    if not hardware.is_moe(s.target_spec):
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
    dense, frames = scenarios.against_dense(s)
    ui.chart(ui.figure(hardware_figures.moe_against_dense, frames, s.k_max, lang=ui.language()), key="fig_moe")
    priced_with(s)
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
    touched = scenarios.experts_touched(s)
    st.caption(
        ui.t(
            "Why verification is not free for an MoE target at small batch: a decode step of one sequence reads the weights of the k = {k} experts its token picks, but verifying K + 1 = {n} tokens reads every distinct expert they pick, {touched} of {e} on average (E·(1 − (1 − k/E)^(B·(K + 1))) under uniform routing; at most (K + 1)·k = {most}). So the verify step streams several times a decode step's expert weights and v is far above the dense model's, where every token uses the same weights. As B grows a decode step already touches most experts, the extra tokens add few, and the gap closes.",
            **(touched | {"touched": f"{touched['touched']:.1f}"}),
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


SECTIONS = dict(
    zip(
        scenarios.VIEWS,
        (step_section, costs_section, speedup_section, map_section, moe_section, memory_section, engine_section),
        strict=True,
    )
)


def round_controls(target, draft) -> None:
    """A head's tree (top-k, T), the draft's KV budget, expert parallelism: each where it applies."""
    kind = scenarios.head_kind(draft)
    if kind is not None:
        st.caption(draft_label(draft))
        if kind not in heads.PARALLEL:
            ui.number_input(PAGE, P["d_tokens"])
        ui.number_input(PAGE, P["v_tokens"])
    if draft != NGRAM and kind not in heads.PARALLEL:
        ui.number_input(PAGE, P["d_ctx"], step=256)
    if hardware.is_moe(target):
        ui.checkbox(
            PAGE,
            P["ep"],
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


def sidebar_controls(target, draft) -> None:
    with st.sidebar:
        st.header(ui.t("Hardware"))
        ui.selectbox(PAGE, P["gpu"], format_func=scenarios.gpu_label)
        if st.session_state[key("gpu")] == scenarios.CUSTOM_GPU:
            ui.number_input(PAGE, P["g_mem"])
            ui.number_input(PAGE, P["g_bw"], format="%.3f")
            ui.number_input(PAGE, P["g_tflops"])
            ui.number_input(PAGE, P["g_link"])
        ui.selectbox(PAGE, P["dtype"])
        profiles.profile_controls(PAGE, P["engine"], P["eng_terms"])  # custom: a saved profile or typed terms
        st.header(ui.t("Pair"))
        ui.selectbox(
            PAGE,
            P["pair"],
            format_func=lambda p: ui.t("custom (choose target and draft)") if p == scenarios.CUSTOM else p,
        )
        if st.session_state[key("pair")] == scenarios.CUSTOM:
            ui.selectbox(PAGE, P["target"])
            offered = replace(P["draft"], choices=scenarios.draft_choices(target, st.session_state[key("draft")]))
            ui.selectbox(PAGE, offered, format_func=draft_label)
        round_controls(target, draft)
        with st.expander(ui.t("Upload config.json")):
            st.caption(ui.t("A Hugging Face config.json replaces the target or draft (uploads are not kept in links)."))
            ui.file_uploader(ui.t("Target config.json"), ["json"], key=key("upload_target"))
            ui.file_uploader(ui.t("Draft config.json"), ["json"], key=key("upload_draft"))
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
            ui.checkbox(PAGE, P["a_pos"])
        ui.slider(PAGE, P["k_max"])


st.title(ui.t("Hardware & batch"))
st.caption(
    ui.t(
        "c and v are not constants of a pair: they come from the GPU, the batch size, the context and the dtype. A roofline over the operators of one forward predicts them, and with them the speedup and K*."
    )
)
ui.restore(PAGE, SPEC)
s, target, draft = scenarios.build(ui.values(PAGE, SPEC), st.session_state, ui.show_error)
if not isinstance(s.alpha, float):
    st.caption(ui.t("α per position: {values}", values=", ".join(f"{a:.3f}" for a in s.alpha)))
for warning in verdicts.context_warnings(s):
    st.warning(warning, icon=":material/warning:")
ui.show_open_tab(PAGE, P["view"], SECTIONS, s)
sidebar_controls(target, draft)
ui.publish(PAGE, SPEC, URL)

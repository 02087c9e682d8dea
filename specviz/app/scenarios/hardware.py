"""The Hardware & batch page's scenario (a pair, a GPU, α, the round and the engine profile) and what it prices."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from specviz.app import profiles, ui
from specviz.app.share import Param
from specviz.base import i18n
from specviz.base.i18n import N_
from specviz.core import acceptance, hardware, heads, moe, tuning
from specviz.core import profiles as stack_profiles

PAGE = "hardware"  #: the page's widget keys start with it
MODELS, GPUS = hardware.load_catalog()
CUSTOM_GPU = "custom"  #: the GPU choice "custom figures" (a link before the slugs wrote that)
#: the preset pairs: a draft model (pairs.csv) or a published head (head_pairs.csv, same columns)
PAIRS = hardware.preset_pairs(heads=True).set_index("name")
PROFILES = stack_profiles.load_profiles()
HEADS = heads.load_heads()
NGRAM = hardware.NGRAM  #: the draft choice "n-gram lookup" (prompt lookup: no draft forward)
CUSTOM = "custom"  #: the pair choice "custom (choose target and draft)"
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]

DRAFTS = (*MODELS.index, *HEADS.index, NGRAM)  #: a catalogue model, a published head, or n-gram lookup
ALPHA_SOURCES = ("typed", "library", "live", "fit")  #: where α comes from (slugs: a link names them)
VIEWS = ("step", "costs", "speedup", "map", "moe", "memory", "engine")  #: the tabs (slugs: a link names them)
VIEW_LABELS = (
    N_("Step time"),
    N_("c and v"),
    N_("Speedup by batch"),
    N_("Batch × context"),
    N_("MoE against dense"),
    N_("Memory"),
    N_("Serving-stack configs"),
)
ROLES = {"target": N_("target"), "draft": N_("draft")}  #: model role -> its name
SOURCE_LABELS = (
    N_("typed"),
    N_("a run in the library"),
    N_("the live page's last run"),
    N_("a fitted decay α(L)"),
)
DEFAULT_PAIR = "Llama-3.1 70B + 3.2 1B"

#: The calibrated machine's name as specviz.engine.calibrate writes it (data/calibration/machine.json).
_MACHINE = re.compile(r"this machine \((?P<cpu>.+), (?P<cores>\d+) cores, (?P<threads>\d+) threads\)")


def gpu_label(name: str) -> str:
    """A GPU choice's label in the session's language: a catalogue GPU's name, the calibrated machine's, or
    "custom figures"."""
    if name == CUSTOM_GPU:
        return ui.t("custom figures")
    found = _MACHINE.fullmatch(name)
    return ui.t("this machine ({cpu}, {cores} cores, {threads} threads)", **found.groupdict()) if found else name


def controls(machine: dict | None) -> tuple[Param, ...]:
    """The page's controls; ``machine`` (:func:`specviz.core.hardware.calibrated_machine`) joins the GPUs."""
    gpu_choices = (*GPUS.index, *([machine["name"]] if machine else []), CUSTOM_GPU)
    return (
        Param(
            "gpu",
            "H100-SXM5-80GB",
            "choice",
            choices=gpu_choices,
            label=N_("GPU"),
            aliases=(("custom figures", CUSTOM_GPU),),
        ),
        Param(
            "pair",
            DEFAULT_PAIR,
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
        profiles.profile_param(default=stack_profiles.SERVER_PROFILE),  # or custom, its terms in eng_terms
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
        Param("a_pos", False, "bool", label=N_("Per-position acceptance (else the mean α)")),
        Param("k_max", 8, "int", 1, 16, label=N_("K max")),
        Param("view", "speedup", "choice", choices=VIEWS, labels=VIEW_LABELS, aliases=(("Engine configs", "engine"),)),
    )


def frozen(spec):
    """A model or GPU as a hashable value: a catalogue name as it is, a dict as its sorted (field, value) pairs."""
    if isinstance(spec, str):
        return spec
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in spec.items()))


def thawed(value):
    """:func:`frozen` undone: a name, or the dict of the fields."""
    return value if isinstance(value, str) else dict(value)


@dataclass(frozen=True)
class Scenario:
    """What the page prices: every field a page control (or what was resolved from one) holds."""

    target: str | tuple  #: a catalogue name, or a model's fields (:func:`frozen`)
    draft: str | tuple  #: a catalogue model, a head, :data:`NGRAM`, or a model's fields
    gpu: str | tuple  #: a catalogue (or calibrated) GPU, or the typed custom figures
    alpha: float | tuple[float, ...]  #: one α, or the acceptance per position
    ctx: int  #: context length L, tokens
    batch: int  #: batch size B of the step-time view
    k_max: int
    dtype: str
    tp_t: int  #: the target's tensor parallelism
    tp_d: int  #: the draft's (a head or n-gram lookup: the target's)
    profile: profiles.Profile = field(default_factory=profiles.Profile)
    draft_tokens: int = 1  #: tokens per draft forward (a tree's top-k)
    verify_tokens: int | None = None  #: tokens verified T (None: K + 1)
    budget: int | None = None  #: the draft's KV budget in tokens (None: the full context)
    expert_parallel: bool = False
    decay: str | None = None  #: a fitted α(L)'s link text "a;b" (the batch × context map prices α(L))

    @property
    def target_spec(self):
        return thawed(self.target)

    @property
    def draft_spec(self):
        return thawed(self.draft)

    @property
    def gpu_spec(self):
        return thawed(self.gpu)

    def round_kw(self) -> dict:
        """pair_costs / speedup_by_batch keywords of the round's shape."""
        return dict(
            draft_tokens=self.draft_tokens, verify_tokens=self.verify_tokens, expert_parallel=self.expert_parallel
        )

    def base_kw(self) -> dict:
        """pair_costs / speedup_by_batch keywords but the draft's context."""
        kw = dict(dtype=self.dtype, tp_target=self.tp_t, tp_draft=self.tp_d, efficiency=self.profile.efficiency())
        return kw | self.round_kw()

    def pricing_kw(self) -> dict:
        """pair_costs / speedup_by_batch keywords at the scenario's one context (the draft's budget, if set)."""
        return self.base_kw() | ({"draft_context": min(self.budget, self.ctx)} if self.budget else {})

    def shape(self) -> dict:
        """The round's keywords that were set (the engine section's view of them)."""
        shape = dict(draft_tokens=self.draft_tokens, verify_tokens=self.verify_tokens, budget=self.budget)
        return {k: v for k, v in shape.items() if v is not None} | (
            {"expert_parallel": True} if self.expert_parallel else {}
        )

    def as_view(self) -> dict:
        """The engine section's reading of the scenario, by the names of the page's controls."""
        return dict(gpu=self.gpu_spec, alpha=self.alpha, ctx=self.ctx, k_max=self.k_max, shape=self.shape())


def scenario(view: dict, target, draft, gpu, alpha, shape: dict, decay: str | None) -> Scenario:
    """The page's scenario from its controls' ``view`` and what was resolved from them."""
    return Scenario(
        target=frozen(target),
        draft=frozen(draft),
        gpu=frozen(gpu),
        alpha=alpha if isinstance(alpha, float) else tuple(float(a) for a in alpha),
        ctx=view["ctx"],
        batch=view["batch"],
        k_max=view["k_max"],
        dtype=view["dtype"],
        tp_t=view["tp_t"],
        tp_d=view["tp_t"] if not is_model(draft) else view["tp_d"],  # a head runs on the target's GPUs
        profile=profiles.Profile.of(view["engine"], view["eng_terms"]),
        draft_tokens=shape.get("draft_tokens", 1),
        verify_tokens=shape.get("verify_tokens"),
        budget=shape.get("budget"),
        expert_parallel=shape.get("expert_parallel", False),
        decay=decay,
    )


def build(view: dict, session, show_error) -> tuple[Scenario, object, object]:
    """(scenario, target, draft) of the controls' ``view``: each input that cannot be resolved is told with
    ``show_error`` and replaced (a refused upload by the controls' pair, a bad pair by the default, a chain,
    the typed α)."""
    try:
        target, draft = chosen_pair(view)
    except ValueError as exc:
        show_error(exc)
        target, draft = PAIRS.loc[DEFAULT_PAIR, "target"], PAIRS.loc[DEFAULT_PAIR, "draft"]
    files = {which: session.get(f"{PAGE}.upload_{which}") for which in ("target", "draft")}
    for which, file in files.items():
        try:  # an uploaded target is checked against an uploaded draft, not the one it replaces
            target, draft = with_upload(target, draft, which, file, check=which == "draft" or files["draft"] is None)
        except ValueError as exc:  # the figures keep the pair chosen without it, and say so
            show_error(ValueError(refused(view, which, file, exc)))
    target = hardware.with_routing_skew(target, view["skew"])
    try:
        shape = round_shape(view, target, draft)
    except ValueError as exc:
        show_error(exc)
        shape = round_shape(view | {"v_tokens": 0}, target, draft)  # a chain, until T is mended
    alpha, decay = view["alpha"], None
    try:
        alpha = chosen_alpha(view, session)
        decay = view["alpha_l"] if view["a_src"] == "fit" else None  # checked by chosen_alpha
    except ValueError as exc:
        show_error(exc)
    return scenario(view, target, draft, chosen_gpu(view), alpha, shape, decay), target, draft


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


def uploaded(file, which: str, target=None) -> dict | None:
    """The model of an uploaded config.json for ``which`` (target / draft), or None; a draft's config.json that
    describes a head (EAGLE-3, P-EAGLE, DFlash, MTP, …) gives that head, trained for ``target``."""
    if file is None:
        return None
    text, name = file.getvalue(), f"uploaded {which} ({file.name})"
    if which == "draft" and target is not None and hardware.is_head_config(text):
        return hardware.head_from_config(text, target, name=name)
    return hardware.from_hf_config(text, name=name)


def checked_pair(target, draft) -> tuple:
    """(target, draft) where they pair (a head trained for the target, one vocabulary); else ValueError."""
    if heads.is_head(draft):
        heads.check_target(draft, hardware.model_spec(target).get("name"))
    elif draft != NGRAM:
        hardware.check_pair(target, draft)
    return target, draft


def chosen_pair(view: dict) -> tuple:
    """(target, draft) of the controls: the preset pair, else the two catalogue choices."""
    if view["pair"] != CUSTOM:
        return checked_pair(PAIRS.loc[view["pair"], "target"], PAIRS.loc[view["pair"], "draft"])
    return checked_pair(view["target"], view["draft"])


def with_upload(target, draft, which: str, file, check: bool = True) -> tuple:
    """(target, draft) with the uploaded config.json ``file`` (or None) as ``which``, the pair checked unless not
    ``check``; ValueError if refused."""
    model = uploaded(file, which, target)
    if model is None:
        return target, draft
    pair = (model, draft) if which == "target" else (target, model)
    return checked_pair(*pair) if check else pair


def refused(view: dict, which: str, file, exc: Exception) -> str:
    """Why the uploaded ``file`` was refused, and which pair the figures keep, in this session's language."""
    pair = view["pair"] if view["pair"] != CUSTOM else f"{view['target']} + {view['draft']}"
    return ui.t(
        "The uploaded {role} config.json “{file}” was refused: {why}. The figures keep the pair chosen in the controls, {pair}.",
        role=ui.t(ROLES[which]),
        file=file.name,
        why=ui.message(exc).rstrip("."),
        pair=pair,
    )


def draft_choices(target, draft: str) -> tuple:
    """The drafts offered for ``target``: the catalogue models, the heads trained for it, n-gram
    lookup (and the current choice, so that a link's choice stays visible while it is reported)."""
    offered = (*MODELS.index, *heads.heads_for(hardware.model_spec(target).get("name")), NGRAM)
    return offered if draft in offered else (*offered, draft)


def is_model(draft) -> bool:
    """Whether the draft is a model of its own (not a head, not n-gram lookup)."""
    return not (draft == NGRAM or heads.is_head(draft))


def head_kind(draft) -> str | None:
    """A head's kind (eagle, eagle3, mtp, medusa, peagle, dflash), or None for a model or n-gram lookup."""
    return heads.head_spec(draft)["kind"] if heads.is_head(draft) else None


def round_shape(view: dict, target, draft) -> dict:
    """The library's keywords for the round: draft_tokens and verify_tokens for a head (a tree's
    top-k and node count T; a chain: 1 and K + 1), the draft's KV budget (0: the full context) and
    expert parallelism for an MoE target. A T below K max + 1 raises ValueError naming it."""
    shape: dict = {}
    kind = head_kind(draft)
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
    if view["ep"] and hardware.is_moe(target):
        shape["expert_parallel"] = True
    return shape


def chosen_alpha(view: dict, session):
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

        result = live.last_run(session)
        if result is None:
            raise ValueError(ui.t("the live page has no run in this session yet: run one there, or type α"))
        frame, what = result.frame(), i18n.Phrase(N_("the live page's last run"))
    return hardware.alpha_from_measurements(frame, view["a_pos"], what)


@ui.cached
def by_batch(s: Scenario) -> pd.DataFrame:
    """Speedup, K*, c and v by batch size at the scenario's context."""
    kw = s.base_kw()
    kw["draft_context"] = None if s.budget is None else min(s.budget, s.ctx)  # a budget beyond L is the full context
    t, d, gpu = s.target_spec, s.draft_spec, s.gpu_spec
    frame = hardware.speedup_by_batch(t, d, gpu, s.alpha, BATCHES, [s.ctx], s.k_max, **kw)
    costs = hardware.pair_costs(t, d, gpu, np.array(BATCHES), s.ctx, s.k_max, **kw)
    return frame.assign(v=costs["v"])


@ui.cached
def by_batch_and_context(s: Scenario) -> pd.DataFrame:
    """Speedup and K* on the batch × context grid; a fitted decay prices each context at α(L)."""
    kw = s.base_kw()
    kw["draft_context"] = None if s.budget is None else np.minimum(s.budget, CONTEXTS)
    alpha = acceptance.DecayFit.from_param(s.decay) if s.decay else s.alpha
    return hardware.speedup_by_batch(s.target_spec, s.draft_spec, s.gpu_spec, alpha, BATCHES, CONTEXTS, s.k_max, **kw)


def fixed_k_note(frame: pd.DataFrame, k_max: int) -> str:
    """What one fixed K loses against K*(B, L) over the map's cells (the best single K for the whole grid)."""
    k, loss = tuning.fixed_k_loss(frame[[f"s_{i}" for i in range(1, k_max + 1)]].to_numpy())
    return ui.t(
        "One fixed K = {k} for every batch and context loses {mean} on average against K*(B, L), {worst} at worst.",
        k=k,
        mean=f"{loss.mean():.1%}",
        worst=f"{loss.max():.1%}",
    )


def step(s: Scenario) -> tuple[pd.DataFrame, stack_profiles.Efficiency]:
    """The target's decode step at (B, L) by operator, and the efficiency that priced it (the profile's,
    else the GPU's own: a calibrated machine keeps its figures)."""
    eff = s.profile.efficiency() or hardware.efficiency_for(s.gpu_spec)
    args = dict(dtype=s.dtype, tp=s.tp_t, efficiency=eff, expert_parallel=s.expert_parallel)
    return hardware.step_breakdown(s.target_spec, s.gpu_spec, s.batch, s.ctx, 1, **args), eff


def against_dense(s: Scenario) -> tuple[dict, dict[str, pd.DataFrame]]:
    """(the dense comparator, {name: by_batch frame}) of an MoE target and the dense model of its active size."""
    dense = hardware.dense_comparator(s.target_spec)
    names = (hardware.model_spec(s.target_spec).get("name", ui.t("MoE target")), dense["name"])
    frames = {names[0]: by_batch(s), names[1]: by_batch(replace(s, target=frozen(dense)))}
    return dense, frames


def experts_touched(s: Scenario) -> dict:
    """E, k, K + 1 and the mean distinct experts K + 1 tokens touch under uniform routing."""
    m = hardware.model_spec(s.target_spec)
    e, k, n = m["n_experts"], m["experts_per_token"], s.k_max + 1
    return dict(k=k, n=n, touched=float(moe.experts_touched(e, k, n)), e=e, most=min(n * k, e))


def band_args(s: Scenario) -> dict:
    """What places this setup's predictions in a regime besides the batch: the profile, method and target kind."""
    return dict(
        profile=s.profile.name, method=hardware.drafting_method(s.draft_spec), moe=hardware.is_moe(s.target_spec)
    )

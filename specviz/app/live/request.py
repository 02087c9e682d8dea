"""What one live run may ask for: the deployment's limits, the page's controls, and the checked request.

No torch and no streamlit here: the page builds its widgets from :func:`controls` and turns their
values into a :class:`Request` with :func:`make_request`, which raises ValueError naming the field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from specviz.app.share import Param
from specviz.base import settings
from specviz.base.hosting import hosted_problem, is_hosted
from specviz.base.i18n import N_, Message

__all__ = [
    "DTYPES",
    "HOSTED_DEFAULTS",
    "Limits",
    "Request",
    "check_pair",
    "check_request",
    "controls",
    "limits_from_env",
    "make_request",
    "pair_choices",
]

#: Model dtypes a run may ask for; "auto" is fp32 on the CPU, bf16 (else fp16) on CUDA.
DTYPES: tuple[str, ...] = ("auto", "float32", "float16", "bfloat16")


#: Each :class:`Limits` cap and the ``SPECVIZ_*`` setting that sets it (:mod:`specviz.base.settings`).
CAPS: dict[str, str] = {
    "max_new_tokens": "SPECVIZ_MAX_NEW_TOKENS",
    "max_repeats": "SPECVIZ_MAX_REPEATS",
    "max_prompts": "SPECVIZ_MAX_PROMPTS",
    "max_cells": "SPECVIZ_MAX_CELLS",
    "max_wall_s": "SPECVIZ_MAX_WALL_S",
    "max_batch": "SPECVIZ_MAX_BATCH",
}


def _default(field: str, hosted: bool = False):
    s = settings.setting(CAPS[field])
    return s.hosted if hosted else s.default


@dataclass(frozen=True)
class Limits:
    """What one live run may ask for, from the deployment's configuration (defaults: :mod:`specviz.base.settings`)."""

    hosted: bool = False  #: hosted mode: bundled pair + allow-listed HF ids only
    hf_allowlist: tuple[str, ...] = ()  #: "TARGET,DRAFT" pairs allowed in hosted mode
    max_new_tokens: int = _default("max_new_tokens")
    max_repeats: int = _default("max_repeats")
    max_prompts: int = _default("max_prompts")
    max_cells: int = _default("max_cells")  #: (batch size, K, temperature) cells per run
    max_wall_s: float = _default("max_wall_s")  #: the run stops (keeping finished cells) after this long
    max_batch: int = _default("max_batch")  #: sequences decoded at once


HOSTED_DEFAULTS = Limits(hosted=True, **{field: _default(field, hosted=True) for field in CAPS})


def limits_from_env(environ: Mapping[str, str] | None = None) -> Limits:
    """:class:`Limits` from ``SPECVIZ_*`` variables (package docstring); ValueError naming a bad one."""
    environ = os.environ if environ is None else environ
    problem = hosted_problem(environ)
    if problem is not None:  # misspelt: hosted mode (is_hosted), but a live run waits until the operator says
        raise problem
    hosted = is_hosted(environ)
    raw_allow = settings.value("SPECVIZ_HF_ALLOWLIST", environ)
    allow = tuple(p.strip().replace(" ", "") for p in raw_allow.split(";") if p.strip())
    for pair in allow:
        if pair.count(",") != 1 or not all(pair.split(",")):
            raise Message(
                "SPECVIZ_HF_ALLOWLIST entries must be 'TARGET,DRAFT' separated by ';'; got {pair!r}", pair=pair
            )
    caps = {field: settings.number(name, environ, hosted=hosted) for field, name in CAPS.items()}
    return Limits(hosted=hosted, hf_allowlist=allow, **caps)


def controls(limits: Limits) -> tuple[Param, ...]:
    """The live page's controls: each one's default and bounds, within this deployment's caps.

    The page builds every widget from these (``ui.number_input`` and friends), so a cap set by
    ``SPECVIZ_MAX_*`` is the widget's bound and the default never exceeds it.
    """
    return (
        Param("pair", "bundled", "text", hi=400, label=N_("Draft/target pair")),
        Param("device", "auto", "choice", choices=("auto", "cpu", "cuda"), label=N_("Device")),
        Param("dtype", "auto", "choice", choices=DTYPES, label=N_("dtype")),
        Param(
            "prompts",
            "bundled",
            "choice",
            choices=("bundled", "custom"),
            label=N_("Prompts"),
            labels=(N_("bundled validation prompts"), N_("my own text")),
        ),
        Param(
            "n_prompts",
            min(4, limits.max_prompts),
            "int",
            1,
            min(12, limits.max_prompts),
            label=N_("How many bundled prompts (held-out standard-library files)"),
        ),
        Param("text", "", "text", hi=4000, label=N_("Prompt")),
        Param(
            "shape",
            "chain",
            "choice",
            choices=("chain", "tree"),
            label=N_("Draft shape"),
            labels=(N_("chains of K drafts"), N_("draft trees")),
        ),
        Param("ks", [1, 2, 4, 6], "ints", 1, 16, max_items=16),
        Param("trees", "chain:4 topk:4,4,16 optimal:16,6", "text", hi=300, label=N_("Draft trees (space-separated)")),
        Param("tree_p", "", "text", hi=200, label=N_("p for top-k / optimal trees")),
        Param("temps", [0.0, 1.0], "floats", 0.0, 1.0, max_items=16),
        Param("new_tokens", min(96, limits.max_new_tokens), "int", 1, limits.max_new_tokens, label=N_("New tokens")),
        Param("repeats", 1, "int", 1, limits.max_repeats, label=N_("Repeats")),
        Param("seed", 0, "int", 0, 2**31 - 1, label=N_("Seed")),
        Param("batches", [1], "ints", 1, limits.max_batch, max_items=8),
        Param(
            "trace",
            False,
            "bool",
            label=N_("Record the greedy trace for replaying draft-length policies (Drafting strategies page)"),
        ),
        Param(
            "engine",
            "eager",
            "choice",
            choices=("eager", "compiled", "both"),
            label=N_("Engine"),
            labels=(
                N_("eager (one operator at a time)"),
                N_("compiled (torch.compile; CUDA graphs on CUDA)"),
                N_("both, one after the other"),
            ),
        ),
    )


NGRAM_PAIR = "bundled-target+ngram"  #: the bundled target with the n-gram drafter (no download, any deployment)


def pair_choices(limits: Limits) -> tuple[str, ...]:
    """The pairs a hosted deployment offers: the bundled one, the bundled target with n-gram drafts,
    then its allow-list."""
    return ("bundled", NGRAM_PAIR, *limits.hf_allowlist)


def _looks_local(name: str) -> bool:
    return name.startswith((".", "/", "~", "\\")) or ":" in name or Path(name).expanduser().exists()


def check_pair(spec: str, limits: Limits) -> str:
    """The normalised pair spec, or ValueError saying why this deployment refuses it.

    "bundled" is always allowed. "TARGET,DRAFT" (Hugging Face ids or local folders) only when not
    hosted, or, hosted, when the pair is on the allow-list and neither part is a local path (an
    allow-listed id that is also a folder in the working directory would load that folder).
    Hosted, every other value gets one and the same message, naming it and the allowed pairs:
    whether it exists on the server's disk is never looked up, so the message cannot tell.
    """
    spec = (spec or "").strip().replace(" ", "")
    if not spec:
        raise Message("pair must be 'bundled' or 'TARGET,DRAFT' (Hugging Face ids); got an empty value")
    if spec in ("bundled", NGRAM_PAIR, NGRAM_PAIR + "-vllm"):
        return spec
    if not limits.hosted:
        if "," in spec and not all(spec.split(",")):
            raise Message("pair must be 'bundled' or 'TARGET,DRAFT'; got {spec!r}", spec=spec)
        return spec
    if spec in limits.hf_allowlist and not any(_looks_local(part) for part in spec.split(",")):
        return spec
    allowed = ", ".join(repr(p) for p in pair_choices(limits))
    raise Message(
        "pair {spec!r} is not allowed on this hosted deployment; allowed: {allowed}", spec=spec, allowed=allowed
    )


def check_request(
    ks: Sequence[int],
    temperatures: Sequence[float],
    new_tokens: int,
    repeats: int,
    prompts: Sequence[str],
    limits: Limits,
    batches: Sequence[int] = (1,),
    shapes: Sequence[str] = (),
) -> None:
    """ValueError naming the field, the value and the allowed range, for anything over the caps.

    With ``shapes`` (draft trees, :func:`specviz.core.trees.parse_shape`) the cells are trees, not ``ks``."""
    if shapes:
        from specviz.core import trees

        for shape in shapes:
            trees.parse_shape(shape, [0.5])  # syntax and depth; the p comes later
        ks = [0] * len(shapes)
    if not ks:
        raise Message("K values: choose at least one draft length")
    for k in ks if not shapes else ():
        if not 1 <= int(k) <= 64:
            raise Message("K values: {k} is outside [1, 64]", k=k)
    if not temperatures:
        raise Message("temperatures: choose at least one (0 = greedy)")
    for t in temperatures:
        if not 0 <= float(t) <= 2:
            raise Message("temperatures: {t} is outside [0, 2]", t=t)
    if not batches:
        raise Message("batch sizes: choose at least one (1 = one sequence at a time)")
    for b in batches:
        if not 1 <= int(b) <= limits.max_batch:
            raise Message("batch sizes: {b} is outside [1, {max}]", b=b, max=limits.max_batch)
    cells = len(ks) * len(temperatures) * len(batches)
    if cells > limits.max_cells:
        if shapes:
            raise Message(
                "trees × temperatures: {cells} cells; this deployment allows at most {max}",
                cells=cells,
                max=limits.max_cells,
            )
        raise Message(
            "K values × temperatures × batch sizes: {cells} cells; this deployment allows at most {max}",
            cells=cells,
            max=limits.max_cells,
        )
    if not 1 <= new_tokens <= limits.max_new_tokens:
        raise Message("new tokens: {n}; allowed 1 to {max}", n=new_tokens, max=limits.max_new_tokens)
    if not 1 <= repeats <= limits.max_repeats:
        raise Message("repeats: {n}; allowed 1 to {max}", n=repeats, max=limits.max_repeats)
    if not prompts or not any(p.strip() for p in prompts):
        raise Message("prompts: the prompt is empty; type some text or use the bundled prompts")
    if len(prompts) > limits.max_prompts:
        raise Message("prompts: {n}; this deployment allows at most {max}", n=len(prompts), max=limits.max_prompts)


@dataclass(frozen=True)
class Request:
    """One checked live run: what to load, what to measure, and how long it may take."""

    pair: str  #: "bundled", "TARGET,DRAFT" or a folder (normalised by check_pair)
    device: str  #: the resolved torch device, "cpu" or "cuda[:N]"
    dtype: str  #: one of DTYPES
    prompts: tuple[str, ...]
    ks: tuple[int, ...]
    temperatures: tuple[float, ...]  #: ascending
    new_tokens: int
    repeats: int
    seed: int
    max_wall_s: float  #: the wall-time cap, counted from the end of loading
    batches: tuple[int, ...] = (1,)  #: batch sizes; anything but (1,) decodes B sequences at a time
    trees: tuple[str, ...] = ()  #: draft-tree shapes ("optimal:16,6"); when given, the cells are these, not ks
    tree_p: tuple[float, ...] | None = None  #: p for building top-k / optimal trees; None: a pilot run measures it
    trace: bool = False  #: also record the greedy trace (K_max = the largest K) for replaying draft-length policies
    engines: tuple[str, ...] = ("eager",)  #: specviz.engine.bench.ENGINES to measure, in this order

    @property
    def batched(self) -> bool:
        """Cells decoded B sequences at a time (:func:`specviz.engine.bench.batch_cell`), not one by one."""
        return self.batches != (1,)

    @property
    def cells(self) -> int:
        """Cells: len(ks) (or of trees) × len(temperatures) (× len(batches) when batched) × engines."""
        return len(self.trees or self.ks) * len(self.temperatures) * len(self.batches) * len(self.engines)

    def meta(self) -> dict[str, str]:
        """The constant columns of the run's rows: label, source, target and draft model names."""
        names = ("bundled/target", "bundled/draft") if self.pair == "bundled" else tuple(self.pair.split(",")[:2])
        extra = {}
        if "+ngram" in self.pair:  # TARGET+ngram[-vllm]: no draft model
            base, _, kind = self.pair.rpartition("+")
            names = ("bundled/target" if base in ("bundled", "bundled-target") else base, kind)
            extra = {"method": "ngram"}
        return {
            "label": f"live: {self.pair}",
            "source": "specviz live page",
            "target_model": names[0],
            "draft_model": names[-1],
            **extra,
        }


def _engines(choice: str, pair: str, batches: tuple[int, ...]) -> tuple[str, ...]:
    """The engines an ``engine`` control value asks for; ValueError naming the field where they cannot run."""
    engines = {"eager": ("eager",), "compiled": ("compiled",), "both": ("eager", "compiled")}.get(choice)
    if engines is None:
        raise Message("engine: {value!r}; allowed: eager, compiled, both", value=choice)
    if "compiled" in engines and ("," in pair or "+ngram" in pair):
        raise Message("engine: compiled steps are built for specviz's own GPT pair; use 'bundled' or the eager engine")
    if "compiled" in engines and batches != (1,):
        raise Message("engine: the compiled engine decodes one sequence at a time; choose batch size 1 only")
    return engines


def make_request(values: Mapping, limits: Limits) -> Request:
    """The :class:`Request` for the page's control values (keys as in :func:`controls`).

    Raises ValueError naming the field for a pair the deployment refuses, a request over the
    caps, an empty prompt, or a device that is not there.
    """
    from specviz.engine import bench
    from specviz.engine.models import resolve_device

    pair = check_pair(values["pair"], limits)
    if values["prompts"] == "custom":
        prompts = [values["text"]]
    else:
        prompts = bench.load_prompts()[: values["n_prompts"]]
    batches = tuple(sorted(int(b) for b in values.get("batches", [1])))
    shapes, tree_p = _tree_request(values)
    check_request(
        values["ks"], values["temps"], values["new_tokens"], values["repeats"], prompts, limits, batches, shapes
    )
    if batches != (1,) and "," in pair:
        raise Message(
            "batch sizes: decoding several sequences at once needs specviz's own GPT pair, not Hugging Face's"
        )
    if shapes and batches != (1,):
        raise Message("batch sizes: draft trees decode one sequence at a time; choose batch size 1 only")
    if shapes and ("," in pair or "+ngram" in pair):
        raise Message("draft shape: trees need tree attention, which specviz's own GPT pair has; use 'bundled'")
    if batches != (1,) and "+ngram" in pair:
        raise Message("batch sizes: the n-gram drafter decodes one sequence at a time; choose batch size 1 only")
    engines = _engines(values.get("engine", "eager"), pair, batches)
    cells = len(shapes or values["ks"]) * len(values["temps"]) * len(batches) * len(engines)
    if len(engines) > 1 and cells > limits.max_cells:
        raise Message(
            "engine: measuring both engines makes {cells} cells; this deployment allows at most {max}",
            cells=cells,
            max=limits.max_cells,
        )
    if values["dtype"] not in DTYPES:
        raise Message("dtype: {dtype!r}; allowed: {allowed}", dtype=values["dtype"], allowed=", ".join(DTYPES))
    return Request(
        pair=pair,
        device=str(resolve_device(values["device"])),
        dtype=values["dtype"],
        prompts=tuple(prompts),
        ks=tuple(int(k) for k in values["ks"]),
        temperatures=tuple(sorted(float(t) for t in values["temps"])),
        new_tokens=int(values["new_tokens"]),
        repeats=int(values["repeats"]),
        seed=int(values["seed"]),
        max_wall_s=limits.max_wall_s,
        batches=batches,
        trees=shapes,
        tree_p=tree_p,
        engines=engines,
        trace=_trace_request(values, shapes, batches, pair),
    )


def _trace_request(values: Mapping, shapes: tuple, batches: tuple, pair: str) -> bool:
    """Whether to record a greedy trace; ValueError where the run cannot give one."""
    if not values.get("trace", False):
        return False
    if shapes or batches != (1,) or 0.0 not in [float(t) for t in values["temps"]]:
        raise Message(
            "record a trace: traces are of greedy chains — include temperature 0, draft chains (not trees), batch size 1"
        )
    if "," in pair:
        raise Message("record a trace: specviz's own GPT pair is needed (the Hugging Face adapter is not traced)")
    return True


def _tree_request(values: Mapping) -> tuple[tuple[str, ...], tuple[float, ...] | None]:
    """(shapes, p) of a tree run from the controls; ((), None) for chains. ValueError naming the field."""
    if values.get("shape", "chain") != "tree":
        return (), None
    from specviz.core import trees

    shapes = tuple(str(values.get("trees", "")).split())
    if not shapes:
        raise Message("trees: type at least one draft shape, e.g. chain:4 optimal:16,6")
    text = str(values.get("tree_p", "")).strip()
    return shapes, (tuple(float(x) for x in trees.parse_p(text)) if text else None)

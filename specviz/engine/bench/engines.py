"""What a sweep runs on: the hardware, the eager or compiled engine, warm-up, and the rows' constant columns."""

from __future__ import annotations

import torch

from specviz.base import machine
from specviz.base.i18n import Message
from specviz.core import trees
from specviz.engine import decoding
from specviz.engine.models import compiled


def hardware_name(device: torch.device) -> str:
    """GPU name on CUDA, else the CPU model and core count."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"{props.name} ({props.total_memory / 2**30:.0f} GiB)"
    return f"{machine.cpu_name()} (CPU)"


def warm_up(target, draft, prompt: torch.Tensor, k: int | trees.Tree = 2, temperature: float = 0.0) -> None:
    """One short target-only and speculative run at ``temperature`` (greedy and sampled compile apart), untimed."""
    generator = torch.Generator(prompt.device).manual_seed(0) if temperature > 0 else None
    decoding.generate_target_only(target, prompt, 8, temperature, generator)
    if isinstance(k, trees.Tree):
        decoding.tree_generate(target, draft, prompt, k, temperature, 8, generator)
    else:
        decoding.speculative_generate(target, draft, prompt, k, temperature, 8, generator)


ENGINES = ("eager", "compiled")  #: how the bundled GPT's steps run (docs/engine.md)


def with_engine(target, draft, engine: str):
    """The pair as ``engine`` (:data:`ENGINES`) runs it: eager, or with compiled steps."""
    if engine not in ENGINES:
        raise Message("engine must be one of {allowed}; got {engine!r}", allowed=list(ENGINES), engine=engine)
    if engine == "eager":
        return compiled.eager(target), compiled.eager(draft)
    return compiled.compile_steps(target), compiled.compile_steps(draft)


def compile_seconds(*models) -> float:
    """Seconds the models' compiled steps have spent compiling so far (0 for eager models)."""
    return sum(sum(m.compile_s.values()) for m in models if isinstance(m, compiled.CompiledGPT))


def engine_columns(target, draft, compile_s: float) -> dict:
    """A row's ``compiled`` (every step of both models compiled) and ``compile_s``; a fallback goes in ``notes``."""
    wrapped = [m for m in (target, draft) if isinstance(m, compiled.CompiledGPT)]
    fallback = next((m.fallback for m in wrapped if m.fallback), None)
    out = {"compiled": len(wrapped) == 2 and fallback is None, "compile_s": compile_s}
    if wrapped and (fallback or len(wrapped) < 2):
        out["notes"] = f"compiled engine ran eagerly: {fallback or 'a model without a shape-static step'}"
    return out


def run_columns(target, source: str, meta: dict | None = None) -> dict:
    """A run's constant columns: device, dtype, torch version, hardware, method, source, then ``meta``."""
    return {
        "device": str(target.device),
        "dtype": str(target.dtype).removeprefix("torch."),
        "torch_version": torch.__version__,
        "hardware": hardware_name(target.device),
        "method": "draft model",
        "source": source,
        **(meta or {}),
    }

"""Resumable checkpoints: weights and AdamW moments (safetensors), progress (JSON); no pickle."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from specviz.engine.models.gpt import GPT


def save_checkpoint(
    directory: Path,
    model: GPT,
    opt: torch.optim.Optimizer,
    step: int,
    rng_state: dict,
    curve: list,
    seconds: float,
    window: list,
) -> None:
    """Weights and AdamW moments (safetensors); step, data-RNG state, curve, pending losses, seconds (JSON)."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    model.save(directory)
    moments = {}
    for i, p in enumerate(model.parameters()):
        state = opt.state.get(p, {})
        for name in ("exp_avg", "exp_avg_sq"):
            if name in state:
                moments[f"{i}.{name}"] = state[name].contiguous()
    save_file(moments, str(directory / "optimizer.safetensors"))
    tmp = directory / "progress.json.tmp"
    progress = {"step": step, "rng": rng_state, "curve": curve, "seconds": round(seconds, 1), "window": window}
    tmp.write_text(json.dumps(progress))
    tmp.replace(directory / "progress.json")  # the step is committed last


def load_checkpoint(
    directory: Path, model: GPT, opt: torch.optim.Optimizer
) -> tuple[int, dict, list, float, list[float]] | None:
    from safetensors.torch import load_file

    if not (directory / "progress.json").exists():
        return None
    progress = json.loads((directory / "progress.json").read_text())
    loaded = GPT.load(directory)
    model.load_state_dict(loaded.state_dict())
    moments = load_file(str(directory / "optimizer.safetensors"))
    for i, p in enumerate(model.parameters()):
        if f"{i}.exp_avg" in moments:
            opt.state[p] = {
                "step": torch.tensor(float(progress["step"])),
                "exp_avg": moments[f"{i}.exp_avg"],
                "exp_avg_sq": moments[f"{i}.exp_avg_sq"],
            }
    return (
        progress["step"],
        progress["rng"],
        progress.get("curve", []),
        progress.get("seconds", 0.0),
        progress.get("window", []),
    )

"""The fenced private torch APIs of the compiled steps: tested releases, Inductor settings, the dynamic span."""

from __future__ import annotations

import contextlib

import torch

from specviz.engine.models import packed

# (major, minor) releases whose Inductor switches and dynamic span were checked
TESTED_TORCH = ((2, 13),)


def tested_torch() -> bool:
    return packed._torch_release(torch.__version__) in TESTED_TORCH


def compile_options(device: torch.device, t: int = 1, packs: bool = False) -> dict:
    """``torch.compile`` arguments for a ``t``-token step on ``device``."""
    dynamic = device.type == "cpu" and packs and t > 1
    common = dict(fullgraph=True, dynamic=dynamic, isolate_recompiles=True)
    if device.type == "cuda":
        return dict(mode="reduce-overhead", **common)
    return common


@contextlib.contextmanager
def inductor_config(device: torch.device, t: int, packs: bool):
    """The ``torch._inductor.config`` patch a CPU ``t``-token step compiles under (only on :data:`TESTED_TORCH`).

    - T = 1: ``post_grad_fusion_options={"decompose_mm_pass": {}}``
      (torch/_inductor/fx_passes/decompose_mem_bound_mm.py): a one-row matmul becomes a fused
      multiply-and-sum instead of MKL's GEMV, about 2× faster; freezing off (it would pack first).
    - T ≥ 2 with ``packs``: ``freezing=True`` (``torch.compile(options=...)`` does not reach it).
    - Every T: ``size_asserts=False``: inputs come from :meth:`GPT.chain_inputs` / :meth:`GPT.tree_inputs`.
    """
    if device.type != "cpu" or not tested_torch():
        yield
        return
    import torch._inductor.config as inductor_config

    step = {"size_asserts": False}
    if t == 1:
        step["post_grad_fusion_options"] = {"decompose_mm_pass": {}}
    elif packs:
        step["freezing"] = True
    with inductor_config.patch(**step):
        yield


def span_dynamic(mask: torch.Tensor) -> None:
    """Mark the mask's width (the span) dynamic: ``torch._dynamo.mark_dynamic``."""
    torch._dynamo.mark_dynamic(mask, 1)

"""The one-token greedy step compiled ahead of time by AOTInductor, kept on disk between processes."""

from __future__ import annotations

import copy
import hashlib
import os
import tempfile
from pathlib import Path

import torch

from specviz.engine.models.gpt import GPT
from specviz.engine.models.inductor import tested_torch
from specviz.engine.models.steps import Chain


def aoti_cache_dir() -> Path:
    """Where packaged steps are kept: ``$XDG_CACHE_HOME/specviz/aoti`` (default ``~/.cache/specviz/aoti``)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "specviz" / "aoti"


class Packaged:
    """The one-token greedy step (:class:`Chain` of one) built by AOTInductor and run by its C++ runner.

    ``torch.export`` (span dynamic) → ``torch._inductor.aoti_compile_and_package`` →
    ``aoti_load_package`` (pytorch.org/docs, "AOTInductor"): one library call a token, no Python wrappers.
    The package holds no weights: the model's weights and KV caches are given with
    ``load_constants(user_managed=True)``, rebound when :meth:`GPT.setup_cache` replaces the caches. It is
    kept in :func:`aoti_cache_dir` under a hash of the program, settings and torch release. The export
    traces a copy whose caches were made outside inference mode (a trace writes them).
    """

    def __init__(self, model: GPT, token: torch.Tensor, pos: torch.Tensor, window: torch.Tensor):
        from torch._inductor import aoti_compile_and_package, aoti_load_package

        self.model = model
        caches = [blk.attn.cache for blk in model.blocks]
        with torch.inference_mode(False):
            try:  # the copy without the caches (inference tensors), then fresh ones of the same shape
                for blk in model.blocks:
                    blk.attn.cache = None
                twin = copy.deepcopy(model)
            finally:
                for blk, cache in zip(model.blocks, caches, strict=True):
                    blk.attn.cache = cache
            for blk, cache in zip(twin.blocks, caches, strict=True):
                blk.attn.cache = type(cache)(*cache.k.shape, cache.k.dtype, cache.k.device)
            # S < L: a window of all L columns is the whole (contiguous) tensor, another layout
            span = torch.export.Dim("span", min=2, max=model._cache_len - 1)
            # the window as every call passes it: the first S columns of the (L, L) causal rows, a view with
            # row stride L (the package reads its inputs with the strides it was exported with)
            rows = model._causal.clone()[:, : window.shape[1]]  # (L, S)
            example = (token.clone(), pos.clone(), rows)
            program = torch.export.export(
                Chain(twin, steps=1), example, dynamic_shapes=(None, None, {1: span}), strict=False
            )
        configs = {"aot_inductor.package_constants_in_so": False}  # the weights are the model's (bind)
        if tested_torch():  # as the T = 1 step compiles (:func:`inductor_config`)
            configs["post_grad_fusion_options"] = {"decompose_mm_pass": {}}
        text = f"{torch.__version__}\n{sorted(configs.items())}\n{program}".encode()
        path = aoti_cache_dir() / f"one-token-{hashlib.sha256(text).hexdigest()[:24]}.pt2"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
                built = aoti_compile_and_package(
                    program, package_path=os.path.join(tmp, path.name), inductor_configs=configs
                )
                os.replace(built, path)  # whole or not at all: another process may be loading it
        self.runner = aoti_load_package(str(path))
        # private: the runner's call re-flattens its arguments each time; on TESTED_TORCH call what it ends in,
        # the loader's boxed_run (torch/export/pt2_archive/_package.py, AOTICompiledModel.__call__), self-tested below
        loader = getattr(self.runner, "loader", None)
        self.run = loader.boxed_run if tested_torch() and hasattr(loader, "boxed_run") else None
        self.names = self.runner.get_constant_fqns()
        self.bound: torch.Tensor | None = None
        self.bind()
        if self.run is not None:  # self-test: the flat call answers as the public one (both write slot pos + 1 alike)
            with torch.inference_mode():
                ok = torch.equal(self.runner(token, pos, window), self.run([token, pos, window])[0])
            self.run = self.run if ok else None

    def bind(self) -> None:
        """Give the runner the model's weights and current KV caches (by their names under :class:`Chain`)."""
        own = Chain(self.model, steps=1)
        tensors = dict(own.named_parameters(remove_duplicate=False)) | dict(own.named_buffers(remove_duplicate=False))
        self.runner.load_constants({n: tensors[n] for n in self.names}, check_full_update=True, user_managed=True)
        self.bound = self.model.blocks[0].attn.cache.k

    def __call__(self, token: torch.Tensor, pos: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
        if self.model.blocks[0].attn.cache.k is not self.bound:  # setup_cache made new caches
            self.bind()
        if self.run is not None:
            return self.run([token, pos, window])[0]  # (1,)
        return self.runner(token, pos, window)

"""Compiled decode steps for the bundled GPT, applied from outside the model (as gpt-fast compiles its own).

:func:`compile_steps` wraps a :class:`~specviz.engine.models.gpt.GPT` in a :class:`CompiledGPT`: the
same :class:`~specviz.engine.models.Decodable` (and the tree methods), whose cached forwards all go
through the model's shape-static :meth:`~specviz.engine.models.gpt.GPT.forward_at`, compiled once
per token count T with ``torch.compile`` (TorchInductor):

- on the CPU with Inductor's freezing (the weights are folded into the compiled graph as constants
  and their GEMMs prepacked; the KV caches, written in place, stay inputs);
- on CUDA with ``mode="reduce-overhead"`` as well: the step is captured as a CUDA graph and
  replayed, so a step costs one launch instead of one per operator.

A chain decode uses T = 1 (a decode step), T = 2 (the draft's first forward of a round) and T = K + 1
(the verify); a tree decode one T per level. Compiled steps are kept per (model, T) for the life of
the model object, so later runs of the same pair, dtype, device and K compile nothing; Inductor's own
on-disk cache makes a new process's compile of the same graph a load.

The weights are frozen into the compiled step: a model whose weights change must be wrapped again.
Where compiling is unavailable or fails (no C++ compiler, a torch without Inductor, an error on the
first call), the step runs eagerly, :attr:`CompiledGPT.fallback` says why, and a warning says it once
per process.
"""

from __future__ import annotations

import contextlib
import time
import warnings
import weakref
from collections.abc import Callable

import torch

from specviz.engine.models import packed
from specviz.engine.models.gpt import GPT

__all__ = ["CompiledGPT", "compile_options", "compile_steps", "eager"]

_warned: set[str] = set()
TESTED_TORCH = ((2, 13),)  # (major, minor) releases whose Inductor freezing switch was checked (torch 2.13.x)


def compile_options(device: torch.device, t: int = 1, packs: bool = False) -> dict:
    """``torch.compile`` arguments for a decode step over ``t`` tokens on ``device`` (module docstring).

    Every step is its own ``torch.compile`` call of the same function: ``isolate_recompiles`` gives
    each its own cache, so the steps of two models and of every T do not count against one recompile
    limit. On CUDA every T is a static shape of its own (a CUDA graph is one shape). On the CPU, for
    a model whose linear weights are large enough to pack (``packs``: the threshold of
    :mod:`specviz.engine.models.packed`), the steps over T ≥ 2 tokens share one graph with T dynamic:
    Inductor then multiplies by oneDNN-packed weights, which beat MKL's packed GEMM at a few rows
    (as in eager), and one compile serves every K.
    """
    dynamic = device.type == "cpu" and packs and t > 1
    common = dict(fullgraph=True, dynamic=dynamic, isolate_recompiles=True)
    if device.type == "cuda":
        return dict(mode="reduce-overhead", **common)
    return common


@contextlib.contextmanager
def _freezing(device: torch.device, packs: bool):
    """Inductor's weight freezing around a CPU step's compile, for a model whose weights are worth
    packing (``packs``; a small model's GEMMs are faster unpacked, as in eager), on the torch releases
    in :data:`TESTED_TORCH`.

    The only private API here: ``torch._inductor.config.patch(freezing=True)``, the switch PyTorch's CPU
    inference guides set. ``torch.compile(options={"freezing": True})`` is accepted but does not reach
    the stage that folds the weights (torch 2.13: no linear is packed), so the config is patched
    while the first call compiles. Elsewhere the step compiles without it (plain GEMMs).
    """
    if not packs or device.type != "cpu" or tuple(int(x) for x in torch.__version__.split(".")[:2]) not in TESTED_TORCH:
        yield
        return
    import torch._inductor.config as inductor_config

    with inductor_config.patch(freezing=True):
        yield


class CompiledGPT:
    """A :class:`GPT` whose cached forwards run compiled; everything else is the model's own.

    Attributes
    ----------
    model : GPT
        The wrapped model (its weights, caches and config).
    fallback : str or None
        Why the steps run eagerly, or None while they run compiled.
    compile_s : dict[int, float]
        Seconds the first call at each T took (compile plus one step), by T.
    """

    def __init__(self, model: GPT):
        self.model = model
        self.fallback: str | None = None
        self.compile_s: dict[int, float] = {}
        self._steps: dict[int, Callable] = {}
        self._graphs = model.device.type == "cuda"
        self._packs = packed.worth_packing(model)
        self._shared_t = compile_options(model.device, 2, self._packs)["dynamic"]  # T >= 2 share one graph

    # --- Decodable ------------------------------------------------------------------------------

    @property
    def context_length(self) -> int:
        return self.model.context_length

    @property
    def device(self) -> torch.device:
        return self.model.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.dtype

    @property
    def cfg(self):
        return self.model.cfg

    def setup_cache(self, batch: int = 1, length: int | None = None) -> None:
        self.model.setup_cache(batch, length)

    def __call__(self, idx: torch.Tensor, start: int | torch.Tensor | None = None) -> torch.Tensor:
        """As :meth:`GPT.forward`; a batch-1 cached forward at an int ``start`` runs compiled."""
        if not isinstance(start, int) or start == 0 or idx.shape[0] != 1:
            # training, full recompute, per-row batches and prefills (from 0, one length per prompt) stay eager
            return self.model(idx, start)
        t = idx.shape[1]
        if start + t > self.model._cache_len:
            return self.model(idx, start)  # the model's own message for a forward past the cache
        pos = torch.tensor([start], device=idx.device)  # (1,)
        return self.forward_at(idx, *self.model.chain_inputs(pos, t))

    def forward_at(self, idx, slots, positions, mask) -> torch.Tensor:
        """:meth:`GPT.forward_at`, compiled for this T (1, T, V)."""
        step = self.step(idx.shape[1])
        try:
            out = step(idx, slots, positions, mask)
        except RuntimeError as exc:
            # a loop that skips guards (decoding.resident) met inputs its step was not compiled for (say,
            # compiled outside inference mode): compile that variant too, with the guards back on
            if "skip_guard_eval_unsafe" not in str(exc):
                raise
            with torch.compiler.set_stance("default"):
                out = step(idx, slots, positions, mask)
        return out.clone() if self._graphs else out  # a graph's output is overwritten by its next replay

    def chain_inputs(self, pos, t):
        return self.model.chain_inputs(pos, t)

    def forward_tree(self, idx, start, nodes, parents) -> torch.Tensor:
        """As :meth:`GPT.forward_tree`, through the compiled step for M = len(nodes)."""
        return self.forward_at(idx, *self.model.tree_inputs(start, nodes, parents))

    def keep_path(self, start: int, path: torch.Tensor) -> None:
        self.model.keep_path(start, path)

    # --- the compiled steps -----------------------------------------------------------------

    def step(self, t: int) -> Callable:
        """The step for T = ``t`` tokens: compiled on first use (timed into :attr:`compile_s`), else eager."""
        key = self._key(t)
        if key in self._steps:
            return self._steps[key]
        eager = self.model.forward_at
        if self.fallback is not None:
            return eager
        try:
            fn = torch.compile(_bind(self.model), **compile_options(self.device, t, self._packs))
            self._steps[key] = fn
            return _FirstCall(self, t, fn, eager)
        except Exception as exc:  # any failure to build a step means: run eagerly, say why
            self._give_up(exc)
            return eager

    def _key(self, t: int) -> int:
        """The compiled step that serves T = ``t``: its own, or (0) the one dynamic in T ≥ 2."""
        return 0 if self._shared_t and t > 1 else t

    def _give_up(self, exc: BaseException) -> None:
        self.fallback = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        self._steps.clear()
        if self.fallback not in _warned:
            _warned.add(self.fallback)
            warnings.warn(f"compiled decode steps unavailable, running eagerly: {self.fallback}", stacklevel=3)


class _FirstCall:
    """The first call of a freshly compiled step: it compiles (timed); a failure there falls back to eager."""

    def __init__(self, owner: CompiledGPT, t: int, fn: Callable, eager: Callable):
        self.owner, self.t, self.fn, self.eager = owner, t, fn, eager

    def __call__(self, *args):
        start = time.perf_counter()
        try:
            # compiling is never a guard-skipping loop's business (resident._steady): lift it here
            with torch.compiler.set_stance("default"), _freezing(self.owner.device, self.owner._packs):
                out = self.fn(*args)
            if self.owner._graphs:  # reduce-overhead records the graph on a later call: make it now
                out = self.fn(*args)
                torch.cuda.synchronize()
        except Exception as exc:  # e.g. no C++ compiler: the eager step is always there
            self.owner._give_up(exc)
            return self.eager(*args)
        self.owner.compile_s[self.t] = time.perf_counter() - start
        return out


class _Step(torch.nn.Module):
    """``model.forward_at`` as the forward of a module holding the model, what ``torch.compile`` traces:
    compiled as a module, its weights are known as parameters, which freezing needs to fold them."""

    def __init__(self, model: GPT):
        super().__init__()
        self.model = model

    def forward(self, idx, slots, positions, mask):
        return self.model.forward_at(idx, slots, positions, mask)


def _bind(model: GPT) -> Callable:
    return _Step(model)


_wrapped: weakref.WeakKeyDictionary[GPT, CompiledGPT] = weakref.WeakKeyDictionary()


def compile_steps(model):
    """``model`` with compiled decode steps (:class:`CompiledGPT`), or ``model`` itself where it has no
    shape-static step (a Hugging Face model, an n-gram drafter): those always run eagerly.

    One wrapper per model object, so every run of the same loaded pair (same dtype, device) reuses
    the steps compiled for it; a model already wrapped is returned as it is.
    """
    if isinstance(model, CompiledGPT) or not isinstance(model, GPT):
        return model
    if model not in _wrapped:
        _wrapped[model] = CompiledGPT(model)
    return _wrapped[model]


def eager(model):
    """The model under a :class:`CompiledGPT` (or ``model`` itself)."""
    return model.model if isinstance(model, CompiledGPT) else model

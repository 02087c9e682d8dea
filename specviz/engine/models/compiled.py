"""Compiled decode steps for the bundled GPT, applied from outside the model (as gpt-fast compiles its own).

:func:`compile_steps` wraps a :class:`~specviz.engine.models.gpt.GPT` in a :class:`CompiledGPT` whose
cached forwards go through :meth:`~specviz.engine.models.gpt.GPT.forward_at`, compiled once per token
count T by TorchInductor (on CUDA with ``mode="reduce-overhead"``: a CUDA graph); on the CPU the
target-only greedy step runs ahead of time (:class:`Packaged`). A chain uses T = 1, 2 and K + 1, a
tree one T per level. Weights are frozen in: a model whose weights change must be wrapped again.
Where compiling fails the step runs eagerly, :attr:`CompiledGPT.fallback` says why, warned once.
"""

from __future__ import annotations

import contextlib
import functools
import time
import warnings
import weakref
from collections.abc import Callable

import torch

from specviz.engine.models import packed
from specviz.engine.models.aot import Packaged, aoti_cache_dir
from specviz.engine.models.gpt import GPT
from specviz.engine.models.inductor import TESTED_TORCH, compile_options, inductor_config, span_dynamic, tested_torch
from specviz.engine.models.steps import Chain, Step, Verify

__all__ = [
    "AHEAD_OF_TIME",
    "SPAN_STEP",
    "TESTED_TORCH",
    "CompiledGPT",
    "Packaged",
    "aoti_cache_dir",
    "compile_options",
    "compile_steps",
    "eager",
    "tested_torch",
]

_warned: set[str] = set()
SPAN_STEP = 16  # a CPU step's attended span is a whole number of 16-float vectors
#: whether a CPU target-only greedy step is compiled ahead of time (:class:`Packaged`); the tests turn it off
AHEAD_OF_TIME = True


def _reason(exc: BaseException) -> str:
    """An exception as one line: its type and its message's first line."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _warn_once(text: str, reason: str) -> None:
    """``text: reason`` as a warning, once per process."""
    if f"{text}: {reason}" not in _warned:
        _warned.add(f"{text}: {reason}")
        warnings.warn(f"{text}: {reason}", stacklevel=4)


class CompiledGPT:
    """A :class:`GPT` whose cached forwards run compiled; ``fallback``: why not; ``compile_s``: by T."""

    def __init__(self, model: GPT):
        self.model = model
        self.fallback: str | None = None
        self.compile_s: dict[int, float] = {}
        self._steps: dict[tuple[int, bool, int], Callable] = {}  # by (T's key, inference mode, cache length)
        self._graphs = model.device.type == "cuda"
        self._spans = model.device.type == "cpu" and tested_torch()  # CPU steps read only the span in use
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
        return self.forward_at(idx, *self.model.chain_inputs(pos, t, self.span(start + t)))

    def forward_at(self, idx, slots, positions, mask) -> torch.Tensor:
        """:meth:`GPT.forward_at`, compiled for this T (1, T, V)."""
        out = self._call(self.step(idx.shape[1], idx.is_inference()), idx.shape[1], idx, slots, positions, mask)
        return out.clone() if self._graphs else out  # a graph's output is overwritten by its next replay

    def chain_inputs(self, pos, t, span=None):
        return self.model.chain_inputs(pos, t, span)

    def span(self, end: int) -> int | None:
        """Cache slots a step attends over: ``end`` rounded up to :data:`SPAN_STEP`, or None (all)."""
        if not self._spans:
            return None
        return min(self.model._cache_len, -(-end // SPAN_STEP) * SPAN_STEP)

    def greedy_chain(self, tokens: torch.Tensor, pos: torch.Tensor, steps: int, end: int) -> torch.Tensor:
        """The ``steps`` greedy tokens (steps,) after ``tokens`` (n,) fed at slots ``pos`` + 1 … ``pos`` + n, in one
        call.

        n + steps − 1 one-token forwards and their argmax, one graph per (n, steps); ``end`` bounds the
        slots written. On CUDA, after a fallback or a failed compile: the same calls one by one.
        """
        if steps == 0:
            return tokens[:0]
        if steps == 1 and tokens.numel() == 1 and self._ahead():
            return self._one_token(tokens, pos, end)
        build = functools.partial(Chain, steps=steps)
        return self._fused(("chain", tokens.numel(), steps), 1, build, "greedy chain", end, tokens, pos)

    def greedy_verify(
        self, pending: torch.Tensor, drafts: torch.Tensor, pos: torch.Tensor, end: int
    ) -> tuple[torch.Tensor, ...]:
        """A greedy round's verify forward over ``pending`` (1,) and ``drafts`` (K,) at ``pos`` (1,), and the T = 0
        rule, in one call.

        On argmax tokens b (K + 1,): tests_i = [x_i = b_i], a = Σ_j Π_{i ≤ j} tests_i, next = b_a. Returns
        a (1,), next (1,), tests (K,), the next feed (2,) and next's slot pos + a + 1 (1,).
        """
        t = drafts.numel() + 1
        return self._fused(("verify", self._key(t)), t, Verify, "greedy verification", end, pending, drafts, pos)

    def forward_tree(self, idx, start, nodes, parents) -> torch.Tensor:
        """As :meth:`GPT.forward_tree`, through the compiled step for M = len(nodes)."""
        return self.forward_at(idx, *self.model.tree_inputs(start, nodes, parents))

    def keep_path(self, start: int, path: torch.Tensor) -> None:
        self.model.keep_path(start, path)

    # --- the compiled steps -----------------------------------------------------------------

    def step(self, t: int, inference: bool = True) -> Callable:
        """The step for T = ``t``, compiled on first use, kept per inference mode and cache length."""
        key = (self._key(t), inference, self.model._cache_len)
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

    @contextlib.contextmanager
    def compiling(self, t: int, mask: torch.Tensor):
        """What every compile of a ``t``-token step runs under: guards on, the span dynamic, :func:`inductor_config`."""
        if self._spans:
            span_dynamic(mask)
        with torch.compiler.set_stance("default"), inductor_config(self.device, t, self._packs):
            yield

    def _ahead(self) -> bool:
        """Whether the one-token greedy step runs as :class:`Packaged`."""
        return AHEAD_OF_TIME and self._spans and self.fallback is None

    def _one_token(self, token: torch.Tensor, pos: torch.Tensor, end: int) -> torch.Tensor:
        """The greedy token after ``token`` (1,) at slot ``pos`` + 1 through :class:`Packaged`."""
        window = self.model._causal[:, : self.span(end)]  # (L, S)
        if window.shape[1] == self.model._cache_len:  # the last slots of the context: outside the package's spans
            return self._chain_of_one(token, pos, window)
        key = ("packaged", token.is_inference(), self.model._cache_len)
        fn = self._steps.get(key)
        if fn is None:
            start = time.perf_counter()
            try:
                fn = Packaged(self.model, token, pos, window)
            except Exception as exc:  # the chain of one compiled step is always there
                self._steps[key] = fn = self._chain_of_one
                _warn_once("the one-token step unavailable ahead of time, running it compiled", _reason(exc))
            else:
                self._steps[key] = fn
                self.compile_s[1] = self.compile_s.get(1, 0.0) + time.perf_counter() - start
        return fn(token, pos, window)

    def _chain_of_one(self, token: torch.Tensor, pos: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
        """The compiled chain of one step (:meth:`greedy_chain`'s graph for n = 1), given the window."""
        build = functools.partial(Chain, steps=1)
        key = (("chain", 1, 1), token.is_inference(), self.model._cache_len)
        fn = self._steps.get(key)
        if fn is None:
            fn = self._module(key, 1, build, "greedy chain")
        return self._call(fn, 1, token, pos, window)

    def _key(self, t: int) -> int:
        """The compiled step that serves T = ``t``: its own, or (0) the one dynamic in T ≥ 2."""
        return 0 if self._shared_t and t > 1 else t

    def _fused(self, name, t: int, build: Callable[..., torch.nn.Module], what: str, end: int, *args):
        """``args`` and the causal rows up to ``end`` (L, S) through the module ``build`` makes, kept under ``name``."""
        window = self.model._causal[:, : self.span(end)]  # (L, S)
        key = (name, args[0].is_inference(), self.model._cache_len)
        fn = self._steps.get(key)
        if fn is None:
            fn = self._module(key, t, build, what)
        return self._call(fn, t, *args, window)

    def _module(self, key, t: int, build: Callable[..., torch.nn.Module], what: str) -> Callable:
        """``build(model)`` compiled as the ``t``-token step, else ``build(self)`` step by step."""
        stepwise = build(self)
        if self.fallback is not None or self._graphs:
            self._steps[key] = stepwise
            return stepwise
        failed = self._module_failed(key, stepwise, what)
        try:
            self._steps[key] = torch.compile(build(self.model), **compile_options(self.device, t, self._packs))
        except Exception as exc:  # this module only: its steps are still the compiled single steps
            failed(exc)
            return stepwise
        return _FirstCall(self, t, self._steps[key], stepwise, give_up=failed)

    def _call(self, fn: Callable, t: int, *args):
        """``fn(*args)``, a compiled callable over ``t`` tokens whose last argument is the mask."""
        try:
            return fn(*args)
        except RuntimeError as exc:
            # a loop that skips guards (decoding.resident) met inputs fn was not compiled for: compile that
            # variant too, with the guards back on and as every step compiles
            if "skip_guard_eval_unsafe" not in str(exc):
                raise
            with self.compiling(t, args[-1]):
                return fn(*args)

    def _module_failed(self, key, stepwise: Callable, what: str) -> Callable[[BaseException], None]:
        """On failure: ``stepwise`` under ``key`` from then on, and a warning once per process."""

        def failed(exc: BaseException) -> None:
            self._steps[key] = stepwise
            _warn_once(f"{what} unavailable as one call, running step by step", _reason(exc))

        return failed

    def _give_up(self, exc: BaseException) -> None:
        self.fallback = _reason(exc)
        self._steps.clear()
        _warn_once("compiled decode steps unavailable, running eagerly", self.fallback)


class _FirstCall:
    """The first call of a compiled step: it compiles (timed); on failure, eager. Last argument: the mask."""

    def __init__(
        self,
        owner: CompiledGPT,
        t: int,
        fn: Callable,
        eager: Callable,
        give_up: Callable[[BaseException], None] | None = None,
    ):
        self.owner, self.t, self.fn, self.eager = owner, t, fn, eager
        self.give_up = give_up or owner._give_up

    def __call__(self, *args):
        start = time.perf_counter()
        try:
            with self.owner.compiling(self.t, args[-1]):
                out = self.fn(*args)
            if self.owner._graphs:  # reduce-overhead records the graph on a later call: make it now
                out = self.fn(*args)
                torch.cuda.synchronize()
        except Exception as exc:  # e.g. no C++ compiler: the eager step is always there
            self.give_up(exc)
            return self.eager(*args)
        self.owner.compile_s[self.t] = self.owner.compile_s.get(self.t, 0.0) + time.perf_counter() - start
        return out


def _bind(model: GPT) -> Callable:
    return Step(model)


_wrapped: weakref.WeakKeyDictionary[GPT, CompiledGPT] = weakref.WeakKeyDictionary()


def compile_steps(model):
    """``model`` with compiled decode steps (one :class:`CompiledGPT` per model), or ``model``."""
    if isinstance(model, CompiledGPT) or not isinstance(model, GPT):
        return model
    if model not in _wrapped:
        _wrapped[model] = CompiledGPT(model)
    return _wrapped[model]


def eager(model):
    """The model under a :class:`CompiledGPT` (or ``model`` itself)."""
    return model.model if isinstance(model, CompiledGPT) else model

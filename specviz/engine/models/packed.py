"""oneDNN-prepacked linear layers for cached fp32 decoding on the CPU, applied from outside the model.

MKL's small-batch sgemm is about 2× slower than oneDNN with prepacked weights when weights stream
from memory (``benchmarks/engine_bench.py``). :func:`apply` swaps every ``nn.Linear`` for a
:class:`PackedLinear` (same Parameters; Linear → GELU fused), :func:`remove` undoes it. Nothing
changes off CPU fp32 or under :data:`PACK_MIN_BYTES`. A pack is keyed on the weight's storage and
version counter; writes that bypass it need :func:`invalidate`. The private ops are fenced in
:func:`_pack_weight`, :func:`_packed_linear` and :func:`_weight_version`, used only on
:data:`TESTED_TORCH`; elsewhere, or when the self-test fails, packing switches off with one warning.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "PACK_MIN_BYTES",
    "TESTED_TORCH",
    "PackedLinear",
    "apply",
    "available",
    "holds_packs",
    "invalidate",
    "linear_fp32_bytes",
    "remove",
]

PACK_MIN_BYTES = 4 << 20  # models with fewer bytes of fp32 linear weights keep F.linear
TESTED_TORCH = ((2, 13),)  # (major, minor) releases whose private oneDNN ops were checked (torch 2.13.x)


# --- the private ops: the only place that calls them -------------------------------------


def _pack_weight(w: torch.Tensor) -> torch.Tensor:
    """``torch.ops.mkldnn._reorder_linear_weight``: (out, in) fp32 → oneDNN's blocked layout."""
    return torch.ops.mkldnn._reorder_linear_weight(w.detach(), None)


def _packed_linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, gelu: bool) -> torch.Tensor:
    """``x @ W.T + b`` (then exact GELU if ``gelu``), x (..., in), ``w`` from :func:`_pack_weight`.

    ``torch.ops.mkldnn._linear_pointwise(input, weight, bias, attr, scalars, algorithm)``: attr
    ``"none"`` or ``"gelu"``; algorithm ``"none"`` is the erf GELU, ``""`` without a post-op.
    """
    attr, algorithm = ("gelu", "none") if gelu else ("none", "")
    return torch.ops.mkldnn._linear_pointwise(x, w, bias, attr, [], algorithm)


def _weight_version(w: torch.Tensor) -> int:
    """``w._version``: autograd's in-place write counter (no public API reads it); the self-test checks it moves."""
    return w._version


def _torch_release(version: str) -> tuple[int, int]:
    """``"2.13.0+cpu"`` → (2, 13); (0, 0) if unreadable."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _why_unsupported() -> str | None:
    """Why this torch build may not use the private ops, or None."""
    release = _torch_release(torch.__version__)
    if release not in TESTED_TORCH:
        tested = ", ".join(f"{a}.{b}.x" for a, b in TESTED_TORCH)
        return f"torch {torch.__version__} is outside the releases its private oneDNN ops were tested on ({tested})"
    if not torch.backends.mkldnn.is_available():
        return "this PyTorch build has no oneDNN"
    if not all(hasattr(torch.ops.mkldnn, op) for op in ("_reorder_linear_weight", "_linear_pointwise")):
        return "this PyTorch build lacks torch.ops.mkldnn._reorder_linear_weight or _linear_pointwise"
    return None


# --- process state: switched off (and why), self-tested ----------------------------------


@dataclass
class _State:
    off: str | None = None  # why packing was switched off in this process
    tested: bool = False  # the self-test passed


_state = _State()


def _switch_off(reason: str) -> None:
    """Run F.linear for the rest of the process, and say why once."""
    if _state.off is None:
        _state.off = reason
        warnings.warn(f"specviz: oneDNN packed linears switched off, decoding uses F.linear: {reason}", stacklevel=3)


def available() -> bool:
    """Whether packs may be used now: tested torch, both ops, oneDNN on, no failure so far."""
    return _state.off is None and bool(torch.backends.mkldnn.enabled) and _why_unsupported() is None


def _self_test() -> None:
    """RuntimeError unless the plain and the fused-GELU call, with and without bias, match F.linear."""
    g = torch.Generator().manual_seed(0)
    w, b, x = torch.randn(24, 40, generator=g), torch.randn(24, generator=g), torch.randn(1, 3, 40, generator=g)
    pw = _pack_weight(w)
    for bias in (None, b):
        for gelu in (False, True):
            expected = F.linear(x, w, bias)  # (1, 3, 24)
            expected = F.gelu(expected) if gelu else expected
            got = _packed_linear(x, pw, bias, gelu)
            if got.shape != expected.shape or not torch.allclose(got, expected, rtol=1e-4, atol=1e-4):
                call = "fused-GELU" if gelu else "plain"
                err = float((got - expected).abs().max()) if got.shape == expected.shape else float("nan")
                raise RuntimeError(f"the {call} product (bias={bias is not None}) differs from F.linear by {err:.3g}")
    with torch.inference_mode(False):  # decoding may run in inference mode, where tensors keep no counter
        v = torch.zeros(1)
        before = _weight_version(v)
        v.add_(1.0)
        moved = _weight_version(v) != before
    if not moved:
        raise RuntimeError("an in-place write does not move the tensor's version counter: packs would go stale")


def _make_pack(w: torch.Tensor) -> torch.Tensor | None:
    """The packed weight, or None after switching packing off (a failing pack or self-test)."""
    try:
        if not _state.tested:
            _self_test()
            _state.tested = True
        return _pack_weight(w)
    except Exception as exc:  # any failure of a private op must leave decoding working
        _switch_off(f"{type(exc).__name__}: {exc}")
        return None


# --- the layer ----------------------------------------------------------------------------


class PackedLinear(nn.Linear):
    """An ``nn.Linear`` sharing another's Parameters whose no-grad CPU fp32 forward runs oneDNN.

    ``gelu=True``: computes gelu(x @ W.T + b), the GELU that followed it (now ``nn.Identity``).
    """

    def __init__(self, layer: nn.Linear, gelu: bool = False):
        super().__init__(layer.in_features, layer.out_features, bias=layer.bias is not None, device="meta")
        self.weight, self.bias = layer.weight, layer.bias
        self.gelu = gelu
        self._pack: torch.Tensor | None = None
        self._key: tuple[int, int] | None = None  # (data pointer, version) of the weight packed
        self.train(layer.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # traced by torch.compile (specviz.engine.models.compiled): plain ops, which Inductor packs itself
        pack = None if torch.compiler.is_compiling() else self._current_pack(x)
        if pack is None:
            y = F.linear(x, self.weight, self.bias)
            return F.gelu(y) if self.gelu else y
        return _packed_linear(x, pack, self.bias, self.gelu)

    def _current_pack(self, x: torch.Tensor) -> torch.Tensor | None:
        """The pack for this call, remade if the weight changed; None where F.linear must run."""
        if torch.is_grad_enabled():
            self._pack = None  # training may change the weights in ways the version counter misses
            return None
        w = self.weight
        if (
            x.dtype != torch.float32
            or w.dtype != torch.float32
            or not w.is_cpu
            or w.is_inference()  # no version counter to key a pack on
            or _state.off is not None
            or not torch.backends.mkldnn.enabled
        ):
            return None
        key = (w.data_ptr(), _weight_version(w))
        if self._pack is None or key != self._key:
            self._pack, self._key = _make_pack(w), key
        return self._pack

    def unpacked(self) -> nn.Linear:
        """A plain ``nn.Linear`` with the same Parameters (the GELU, if fused, is not included)."""
        layer = nn.Linear(self.in_features, self.out_features, bias=self.bias is not None, device="meta")
        layer.weight, layer.bias = self.weight, self.bias
        return layer.train(self.training)

    def train(self, mode: bool = True) -> PackedLinear:
        self._pack = None
        return super().train(mode)

    def __getstate__(self) -> dict:
        """Copies and pickles leave the pack behind (an opaque tensor; the copy repacks)."""
        return {**self.__dict__, "_pack": None, "_key": None}

    def extra_repr(self) -> str:
        return super().extra_repr() + (", gelu=True" if self.gelu else "")


# --- applying it to a model ----------------------------------------------------------------


def linear_fp32_bytes(model: nn.Module) -> int:
    """Bytes of the model's ``nn.Linear`` weights in fp32 (a tied weight counts once per layer)."""
    return 4 * sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))


def worth_packing(model: nn.Module) -> bool:
    weights = [m.weight for m in model.modules() if isinstance(m, nn.Linear)]
    on_cpu_fp32 = all(w.device.type == "cpu" and w.dtype == torch.float32 for w in weights)
    return bool(weights) and on_cpu_fp32 and linear_fp32_bytes(model) >= PACK_MIN_BYTES


def _children(model: nn.Module):
    """(parent, [child names]) for every module of ``model`` (a snapshot: safe to swap children)."""
    return [(parent, [name for name, _ in parent.named_children()]) for parent in model.modules()]


def apply(model: nn.Module) -> nn.Module:
    """Swap every plain ``nn.Linear`` of ``model`` for a :class:`PackedLinear` in place, fusing a following exact GELU.

    No-op off CPU fp32, under :data:`PACK_MIN_BYTES`, or on an unsupported torch (one warning).
    """
    if not worth_packing(model):
        return model
    reason = _why_unsupported()
    if reason is not None:
        _switch_off(reason)
        return model
    for parent, names in _children(model):
        for i, name in enumerate(names):
            child = parent.get_submodule(name)
            if type(child) is not nn.Linear:
                continue
            following = isinstance(parent, nn.Sequential) and i + 1 < len(names)
            after = parent.get_submodule(names[i + 1]) if following else None
            fuse = isinstance(after, nn.GELU) and after.approximate == "none"
            parent.register_module(name, PackedLinear(child, gelu=fuse))
            if fuse:
                parent.register_module(names[i + 1], nn.Identity())
    return model


def remove(model: nn.Module) -> nn.Module:
    """Undo :func:`apply`: plain ``nn.Linear`` layers (same Parameters) and the fused GELUs back; return ``model``."""
    for parent, names in _children(model):
        for i, name in enumerate(names):
            child = parent.get_submodule(name)
            if isinstance(child, PackedLinear):
                parent.register_module(name, child.unpacked())
                if child.gelu:
                    parent.register_module(names[i + 1], nn.GELU())
    return model


def invalidate(model: nn.Module) -> None:
    """Drop every pack of ``model`` (after weight writes that bypass the version counter, e.g. ``w.data``)."""
    for m in model.modules():
        if isinstance(m, PackedLinear):
            m._pack = None


def holds_packs(model: nn.Module) -> bool:
    """True when some layer of ``model`` holds a oneDNN pack (it ran a packed forward since the last drop)."""
    return any(isinstance(m, PackedLinear) and m._pack is not None for m in model.modules())

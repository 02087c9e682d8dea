"""A byte-level GPT with a static KV cache (nanoGPT's model, gpt-fast's cache).

The cache is preallocated for ``block_size`` positions and written by absolute
position, so a speculative round that is partly rejected needs no rollback: the
next forward simply writes over the stale entries from the new position on.

Cached decoding on the CPU in fp32 runs the large linear layers through oneDNN
with weights prepacked once (:class:`PackedLinears`). PyTorch's default fp32 path
calls MKL, whose small-batch sgemm is about 2× slower on the AMD CPU we measured
when the weights stream from memory (``benchmarks/engine_bench.py`` prints the
ratio); decoding multiplies 1 to K + 1 rows by every weight matrix, which is
exactly that case. A model whose linear weights total under
:data:`PACK_MIN_BYTES` keeps ``F.linear``: its weights stay in cache, and there
oneDNN's fixed cost of about 16 µs a call outweighs its faster kernel (the
bundled draft is such a model). Training and the full-recompute forward keep
``nn.Linear`` (autograd, and an independent oracle).
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 256  # bytes; no special tokens are needed
PACK_MIN_BYTES = 4 << 20  # models with fewer bytes of linear weights decode with F.linear


_ONEDNN_OFF: str | None = None  # why packing was switched off in this process (a failed pack or self-test)


def onednn_available() -> bool:
    """True when cached CPU decoding may use oneDNN's packed linears: the build has both private ops
    (``torch.ops.mkldnn._reorder_linear_weight``, ``_linear_pointwise``), oneDNN is enabled
    (``torch.backends.mkldnn.flags``) and no pack has failed in this process."""
    return (
        _ONEDNN_OFF is None
        and torch.backends.mkldnn.is_available()
        and bool(torch.backends.mkldnn.enabled)
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


def _pack_weight(w: torch.Tensor) -> torch.Tensor:
    """(out, in) fp32 weight → oneDNN's blocked layout; no batch-size hint (fast for 1..~32 rows)."""
    return torch.ops.mkldnn._reorder_linear_weight(w.detach(), None)


def _switch_off_onednn(reason: str) -> None:
    """Decode with F.linear for the rest of the process, and say why once."""
    global _ONEDNN_OFF
    if _ONEDNN_OFF is None:
        _ONEDNN_OFF = reason
        warnings.warn(f"specviz: oneDNN packed linears switched off, decoding uses F.linear: {reason}", stacklevel=3)


class PackedLinears:
    """oneDNN-prepacked copies of a model's linear weights, valid while the weights are unchanged.

    A pack is keyed on each weight's storage pointer and version counter: ``load_state_dict``,
    ``.to()``, in-place updates through the tensor (``w.mul_(...)``, the default AdamW) make it
    stale and :meth:`GPT._packed_linears` repacks (about 15 ms for the bundled target). Writes
    that bypass the version counter (``w.data.copy_(...)``, fused optimizers) are not seen: call
    :meth:`GPT.invalidate_packs` after them. A grad-enabled forward or ``train()`` drops the pack.
    A layer without a pack (replaced after packing) runs its own ``forward``.

    Raises RuntimeError if oneDNN fails to pack or its product disagrees with ``F.linear`` on a
    random input (checked on the first layer).
    """

    def __init__(self, layers: list[nn.Linear]):
        self.layers = layers
        self.keys = [self._key(m.weight) for m in layers]
        self.by_layer = {id(m): (_pack_weight(m.weight), m.bias) for m in layers}  # id → (packed weight, bias)
        self._self_test(layers[0])

    def _self_test(self, layer: nn.Linear) -> None:
        x = torch.randn(3, layer.in_features, generator=torch.Generator().manual_seed(0))  # (3, in)
        got, expected = self(layer, x), F.linear(x, layer.weight, layer.bias)  # (3, out)
        if not torch.allclose(got, expected, rtol=1e-4, atol=1e-4 * float(expected.abs().max()) + 1e-6):
            raise RuntimeError(f"packed product differs from F.linear by {float((got - expected).abs().max()):.3g}")

    @staticmethod
    def _key(w: torch.Tensor) -> tuple[int, int]:
        return w.data_ptr(), w._version

    def valid(self) -> bool:
        return all(self._key(m.weight) == key for m, key in zip(self.layers, self.keys, strict=True))

    def __call__(self, layer: nn.Linear, x: torch.Tensor, gelu: bool = False) -> torch.Tensor:
        """``layer(x)`` (``gelu(layer(x))`` if asked; exact erf GELU) with the packed weight. x: (..., in)."""
        entry = self.by_layer.get(id(layer))
        if entry is None:
            return F.gelu(layer(x)) if gelu else layer(x)
        w, bias = entry
        return torch.ops.mkldnn._linear_pointwise(x, w, bias, "gelu" if gelu else "none", [], "none" if gelu else "")


def _linear(layer: nn.Linear, x: torch.Tensor, packed: PackedLinears | None, gelu: bool = False) -> torch.Tensor:
    """``layer(x)``, through the packed oneDNN weight when ``packed`` is given; optionally followed by GELU."""
    if packed is not None:
        return packed(layer, x, gelu)
    y = layer(x)
    return F.gelu(y) if gelu else y


@dataclass(frozen=True)
class GPTConfig:
    """Shape of a model. Every field is stored in ``config.json`` beside the weights."""

    n_layer: int = 6  # transformer blocks
    n_head: int = 6  # attention heads per block
    n_embd: int = 384  # residual stream width (divisible by n_head)
    block_size: int = 512  # longest sequence (prompt + generated), also the KV-cache length
    vocab_size: int = VOCAB_SIZE  # byte-level
    dropout: float = 0.0  # training only

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd must be divisible by n_head; got {self.n_embd} and {self.n_head}")

    @classmethod
    def from_dict(cls, d: dict) -> GPTConfig:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


class KVCache(nn.Module):
    """Static per-layer cache of keys and values, written at absolute positions."""

    def __init__(self, batch: int, n_head: int, length: int, head_dim: int, dtype, device):
        super().__init__()
        shape = (batch, n_head, length, head_dim)
        self.register_buffer("k", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def update(self, start: int, k: torch.Tensor, v: torch.Tensor):
        """Write k, v (B, nh, T, hs) at positions start..start+T-1; return the cache up to there."""
        end = start + k.shape[2]
        self.k[:, :, start:end] = k
        self.v[:, :, start:end] = v
        return self.k[:, :, :end], self.v[:, :, :end]


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.n_embd // cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)
        self.dropout = cfg.dropout
        self.cache: KVCache | None = None

    def forward(
        self, x: torch.Tensor, start: int | None, mask: torch.Tensor | None, packed: PackedLinears | None = None
    ) -> torch.Tensor:
        b, t, c = x.shape  # (B, T, C)
        q, k, v = _linear(self.qkv, x, packed).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, self.head_dim).transpose(1, 2) for z in (q, k, v))  # (B, nh, T, hs)
        if start is None:  # training / full recompute: plain causal attention
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
            )
        else:  # cached decoding: attend to every cached position ≤ the query's own
            k, v = self.cache.update(start, k, v)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return _linear(self.proj, y.transpose(1, 2).reshape(b, t, c), packed)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.n_embd), nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False),
            nn.GELU(),
            nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False),
        )

    def forward(self, x, start, mask, packed: PackedLinears | None = None):
        x = x + self.attn(self.ln1(x), start, mask, packed)
        if packed is None:
            return x + self.mlp(self.ln2(x))
        up, _, down = self.mlp  # Linear, GELU, Linear: GELU fused into the first packed linear
        return x + _linear(down, _linear(up, self.ln2(x), packed, gelu=True), packed)


class GPT(nn.Module):
    """Decoder-only transformer over bytes.

    ``forward(idx)`` computes logits for every position without a cache (training
    and the reference oracle); ``forward(idx, start)`` treats ``idx`` as the tokens
    at absolute positions start, start+1, ... and reads and writes the static KV
    cache set up by :meth:`setup_cache`. Writing at ``start`` overwrites whatever
    the cache held there, which is how a rejected draft is discarded.
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.head.weight = self.wte.weight  # weight tying
        self.apply(self._init)
        self._linear_fp32_bytes = 4 * sum(m.weight.numel() for m in self.modules() if isinstance(m, nn.Linear))
        self._packed: PackedLinears | None = None

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def setup_cache(self, batch: int = 1, length: int | None = None) -> None:
        """(Re)allocate the static KV cache for ``batch`` sequences of up to ``length`` tokens."""
        length = length or self.cfg.block_size
        p = self.wte.weight
        for blk in self.blocks:
            blk.attn.cache = KVCache(
                batch, self.cfg.n_head, length, self.cfg.n_embd // self.cfg.n_head, p.dtype, p.device
            )
        self._cache_len = length
        self._causal = torch.ones(length, length, dtype=torch.bool, device=p.device).tril()

    def _packed_linears(self) -> PackedLinears | None:
        """The oneDNN packs for cached decoding: CPU, fp32, no autograd; repacked when weights changed."""
        w = self.wte.weight
        if (
            self._linear_fp32_bytes < PACK_MIN_BYTES
            or torch.is_grad_enabled()
            or w.device.type != "cpu"
            or w.dtype != torch.float32
            or w.is_inference()
            or not onednn_available()
        ):
            self._packed = None  # (inference-mode weights have no version counter to key a pack on)
            return None
        if self._packed is None or not self._packed.valid():
            self._packed = None
            try:
                self._packed = PackedLinears([m for m in self.modules() if isinstance(m, nn.Linear)])
            except RuntimeError as exc:
                _switch_off_onednn(str(exc))
        return self._packed

    def invalidate_packs(self) -> None:
        """Drop the oneDNN packs (after weight writes that bypass the version counter, e.g. ``w.data``)."""
        self._packed = None

    def train(self, mode: bool = True) -> GPT:
        self._packed = None
        return super().train(mode)

    def __getstate__(self) -> dict:
        """Copies and pickles leave the oneDNN packs behind (opaque tensors; the copy repacks)."""
        state = self.__dict__.copy()
        state["_packed"] = None
        return state

    def forward(self, idx: torch.Tensor, start: int | None = None) -> torch.Tensor:
        """Logits (B, T, vocab) for tokens ``idx`` (B, T) at positions start.. (or 0.. without a cache)."""
        _b, t = idx.shape
        if start is None:
            if t > self.cfg.block_size:
                raise ValueError(f"sequence length must be <= block_size {self.cfg.block_size}; got {t}")
            x = self.wte(idx) + self.wpe.weight[:t]  # (B, T, C): positions 0..T-1
            mask = None
        else:
            end = start + t
            if end > self._cache_len:
                raise ValueError(f"sequence would reach position {end - 1}; the cache holds {self._cache_len}")
            x = self.wte(idx) + self.wpe.weight[start:end]  # (B, T, C): positions start..end-1
            # (T, end): the query at position start+i attends to keys 0..start+i; one query sees everything
            mask = None if t == 1 else self._causal[start:end, :end]
        if torch.is_grad_enabled():
            self._packed = None  # training may be changing the weights in ways a version counter misses
        packed = None if start is None else self._packed_linears()
        for blk in self.blocks:
            x = blk(x, start, mask, packed)
        return _linear(self.head, self.ln_f(x), packed)

    # --- persistence: config.json + model.safetensors (never pickle) -------------------

    def save(self, directory: str | Path, dtype: torch.dtype | None = None) -> None:
        """Write config.json and model.safetensors (weights cast to ``dtype`` if given, e.g. fp16 to ship)."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps(asdict(self.cfg), indent=2) + "\n")
        state = {
            k: v.detach().to("cpu", dtype=dtype or v.dtype).contiguous()
            for k, v in self.state_dict().items()
            if k != "head.weight"
        }
        save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device = "cpu", dtype=torch.float32) -> GPT:
        from safetensors.torch import load_file

        directory = Path(directory)
        try:
            cfg = GPTConfig.from_dict(json.loads((directory / "config.json").read_text()))
        except (OSError, ValueError, TypeError) as exc:
            raise ValueError(f"{directory}/config.json is missing or not a valid model config: {exc}") from None
        model = cls(cfg)
        try:
            state = load_file(str(directory / "model.safetensors"))
        except Exception as exc:  # safetensors raises its own error types for truncated or garbled files
            raise ValueError(f"{directory}/model.safetensors is missing or corrupt: {exc}") from None
        try:
            missing, unexpected = model.load_state_dict(state, strict=False)
        except RuntimeError as exc:  # shape mismatch between config.json and the weights
            raise ValueError(f"{directory}: weights do not match config.json: {exc}") from None
        if unexpected or set(missing) - {"head.weight"}:
            raise ValueError(f"{directory}: weights do not match config (missing {missing}, unexpected {unexpected})")
        return model.to(device=device, dtype=dtype).eval()


def bits_per_byte(loss_nats: float) -> float:
    """Cross-entropy in nats per byte → bits per byte."""
    return loss_nats / math.log(2)

"""A byte-level GPT with a static KV cache (nanoGPT's model, gpt-fast's cache), a
:class:`specviz.engine.models.Decodable`.

The cache is written by absolute position, so a rejected draft needs no rollback: the next forward
writes over it. Plain PyTorch; speed-ups are swapped in after loading (:mod:`specviz.engine.models.packed`).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from specviz.base.i18n import Message

VOCAB_SIZE = 256  # bytes; no special tokens are needed
# Slots the KV cache holds beyond the positions it serves, never written: the span a shape-static step
# attends over (:meth:`GPT.forward_at`) is then a proper prefix of the cache however long it is, so
# PyTorch's contiguity checks treat every span alike and one compiled step with the span dynamic
# serves them all (:mod:`specviz.engine.models.compiled`)
SPAN_PAD = 16


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
            raise Message(
                "n_embd must be divisible by n_head; got {n_embd} and {n_head}", n_embd=self.n_embd, n_head=self.n_head
            )

    @classmethod
    def from_dict(cls, d: dict) -> GPTConfig:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


class Slots(NamedTuple):
    """Cache slots (T,) of T tokens that are not consecutive positions: a draft tree's nodes."""

    index: torch.Tensor


class Fixed(NamedTuple):
    """Cache slots (T,) for a shape-static step (:meth:`GPT.forward_at`): no host read, one shape per T."""

    slots: torch.Tensor


class KVCache(nn.Module):
    """Static per-layer cache of keys and values, written at absolute positions."""

    def __init__(self, batch: int, n_head: int, length: int, head_dim: int, dtype, device):
        super().__init__()
        shape = (batch, n_head, length, head_dim)
        self.register_buffer("k", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def update(self, start: int | torch.Tensor | Slots, k: torch.Tensor, v: torch.Tensor):
        """Write k, v (B, nh, T, hs) at ``start`` (int, (B,) or :class:`Slots`); return the written cache."""
        t = k.shape[2]
        if isinstance(start, Slots):
            self.k[:, :, start.index] = k
            self.v[:, :, start.index] = v
            end = int(start.index.max()) + 1
            return self.k[:, :, :end], self.v[:, :, :end]
        if isinstance(start, int):
            end = start + t
            self.k[:, :, start:end] = k
            self.v[:, :, start:end] = v
            return self.k[:, :, :end], self.v[:, :, :end]
        rows = torch.arange(k.shape[0], device=k.device)[:, None]  # (B, 1)
        pos = start[:, None] + torch.arange(t, device=k.device)  # (B, T)
        self.k[rows, :, pos] = k.transpose(1, 2)  # advanced indices first: (B, T, nh, hs)
        self.v[rows, :, pos] = v.transpose(1, 2)
        end = int(pos.max()) + 1
        return self.k[:, :, :end], self.v[:, :, :end]

    def write_at(self, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Write k, v (B, nh, T, hs) into ``slots`` (T,) without a host read; return the whole cache (B, nh, L', hs)."""
        self.k.index_copy_(2, slots, k)
        self.v.index_copy_(2, slots, v)
        return self.k, self.v

    def move(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Copy the entries at slots ``src`` (n,) to slots ``dst`` (n,) (all read before any is written)."""
        self.k[:, :, dst] = self.k[:, :, src]
        self.v[:, :, dst] = self.v[:, :, src]


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.n_embd // cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)
        self.dropout = cfg.dropout
        self.cache: KVCache | None = None

    def forward(self, x: torch.Tensor, start: int | None, mask: torch.Tensor | None) -> torch.Tensor:
        b, t, c = x.shape  # (B, T, C)
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, self.head_dim).transpose(1, 2) for z in (q, k, v))  # (B, nh, T, hs)
        if isinstance(start, Fixed):  # shape-static step: write the given slots, attend over the whole cache
            k, v = self.cache.write_at(start.slots, k, v)
            y = _attend(q, k, v, mask)
        elif start is None:  # training / full recompute: plain causal attention
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
            )
        else:  # cached decoding: attend to every cached position ≤ the query's own
            k, v = self.cache.update(start, k, v)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """softmax(q kᵀ / √d, masked) v for q (B, nh, T, hs) over the first S slots of k, v (B, nh, L', hs); mask (…, T, S).

    Written out rather than ``F.scaled_dot_product_attention``, whose CPU kernel is slow for a few
    queries; divides once per output, (e v) / Σ e with e = exp(s − max s).
    """
    span = mask.shape[-1]
    k, v = k[:, :, :span], v[:, :, :span]  # (B, nh, S, hs)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, nh, T, S)
    att = att.masked_fill(~mask, float("-inf"))
    e = (att - att.amax(-1, keepdim=True)).exp()
    return (e @ v) / e.sum(-1, keepdim=True)  # (B, nh, T, hs)


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

    def forward(self, x: torch.Tensor, start: int | None, mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), start, mask)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Decoder-only transformer over bytes.

    ``forward(idx)``: logits for every position, no cache (training, the reference oracle).
    ``forward(idx, start)``: ``idx`` at absolute positions start.., reading and overwriting the
    static KV cache of :meth:`setup_cache`.
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
        for blk in self.blocks:  # GPT-2: the residual stream sums 2 · n_layer projections; keep its variance flat
            for w in (blk.attn.proj.weight, blk.mlp[2].weight):
                nn.init.normal_(w, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        """Every matrix and embedding ~ N(0, 0.02²) (GPT-2); LayerNorms start at weight 1, bias 0."""
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # --- specviz.engine.models.Decodable ---------------------------------------------------------

    @property
    def context_length(self) -> int:
        """Longest sequence the model and its cache hold (``cfg.block_size``)."""
        return self.cfg.block_size

    @property
    def device(self) -> torch.device:
        """Where the weights (and so the token ids fed to :meth:`forward`) live."""
        return self.wte.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.wte.weight.dtype

    def setup_cache(self, batch: int = 1, length: int | None = None) -> None:
        """(Re)allocate the KV cache for ``batch`` × ``length`` tokens (+ :data:`SPAN_PAD` slots)."""
        length = length or self.cfg.block_size
        p = self.wte.weight
        shape = (batch, self.cfg.n_head, length + SPAN_PAD, self.cfg.n_embd // self.cfg.n_head)
        old = self.blocks[0].attn.cache
        same = old is not None and (old.k.shape, old.k.dtype, old.k.device) == (shape, p.dtype, p.device)
        # a cache made under inference_mode cannot be written outside it
        if same and (torch.is_inference_mode_enabled() or not old.k.is_inference()):
            # the same buffers again: a compiled step guards on them, and every slot a step reads is
            # written first in each generation (prefill, then each forward's own tokens)
            return
        for blk in self.blocks:
            blk.attn.cache = KVCache(*shape, p.dtype, p.device)
        self._cache_len = length
        self._causal = torch.ones(length, length, dtype=torch.bool, device=p.device).tril()

    def forward(self, idx: torch.Tensor, start: int | torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, vocab) for ``idx`` (B, T) at positions start.. (0.. without a cache)."""
        _b, t = idx.shape
        if isinstance(start, torch.Tensor):
            pos = start.view(-1, 1).to(idx.device) + torch.arange(t, device=idx.device)  # (B, T)
            end = int(pos.max()) + 1
            if end > self._cache_len or int(pos.min()) < 0:
                raise ValueError(f"positions {int(pos.min())}..{end - 1} are outside the cache of {self._cache_len}")
            x = self.wte(idx) + self.wpe(pos)  # (B, T, C)
            keys = torch.arange(end, device=idx.device)
            mask = (keys[None, None, :] <= pos[:, :, None])[:, None]  # (B, 1, T, end): own past only
            for blk in self.blocks:
                x = blk(x, pos[:, 0], mask)
            return self.head(self.ln_f(x))
        if start is None:
            if t > self.cfg.block_size:
                raise Message(
                    "sequence length must be <= block_size {block_size}; got {t}", block_size=self.cfg.block_size, t=t
                )
            x = self.wte(idx) + self.wpe.weight[:t]  # (B, T, C): positions 0..T-1
            mask = None
        else:
            end = start + t
            if end > self._cache_len:
                raise Message(
                    "sequence would reach position {last}; the cache holds {cache}", last=end - 1, cache=self._cache_len
                )
            x = self.wte(idx) + self.wpe.weight[start:end]  # (B, T, C): positions start..end-1
            # (T, end): the query at position start+i attends to keys 0..start+i; one query sees everything
            mask = None if t == 1 else self._causal[start:end, :end]
        for blk in self.blocks:
            x = blk(x, start, mask)
        return self.head(self.ln_f(x))

    def forward_at(
        self, idx: torch.Tensor, slots: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Logits (B, T, vocab) of ``idx`` (B, T) at ``positions`` (T,), written to cache ``slots`` (T,).

        ``mask`` (T, S): where a token may attend among the first S ≤ L cache slots. Chains:
        :meth:`chain_inputs`; trees: :meth:`tree_inputs`. Shapes depend on T and S only and nothing is
        read back to the host, so one compiled step serves each T.
        """
        x = self.wte(idx) + self.wpe(positions)[None]  # (B, T, C)
        at, m = Fixed(slots), mask[None, None]  # (1, 1, T, S)
        for blk in self.blocks:
            x = blk(x, at, m)
        return self.head(self.ln_f(x))

    def chain_inputs(
        self, pos: torch.Tensor, t: int, span: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(slots, positions, mask) of :meth:`forward_at` for ``t`` tokens from ``pos`` (1,) over ``span``."""
        at = pos + torch.arange(t, device=pos.device)  # (T,)
        return at, at, self._causal[at, :span]

    def tree_inputs(
        self, start: int, nodes: torch.Tensor, parents: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(slots, positions, mask) of :meth:`forward_at` for tree nodes ``nodes`` (M,)."""
        nodes, anc, depth, end = self._tree_layout(start, nodes, parents)
        mask = torch.zeros(len(nodes), self._cache_len, dtype=torch.bool, device=self.device)  # (M, L)
        mask[:, :start] = True
        mask[:, start:end] = anc[nodes, : end - start]
        return start + nodes, start + depth[nodes], mask

    # --- draft trees ---------------------------------------------------------------------

    def forward_tree(self, idx: torch.Tensor, start: int, nodes: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
        """Logits (1, M, vocab) for tokens ``idx`` (1, M) of tree nodes ``nodes`` (M,); ``parents`` (N,) the whole tree.

        Node n sits in slot ``start + n`` at position ``start + depth(n)`` and attends to the cache before
        ``start``, its ancestors and itself; :meth:`keep_path` then moves the accepted path into place.
        """
        nodes, anc, depth, end = self._tree_layout(start, nodes, parents)
        x = self.wte(idx) + self.wpe(start + depth[nodes])[None]  # (1, M, C)
        past = torch.ones(len(nodes), start, dtype=torch.bool, device=idx.device)
        mask = torch.cat([past, anc[nodes, : end - start]], 1)[None, None]  # (1, 1, M, end)
        slots = Slots(start + nodes)
        for blk in self.blocks:
            x = blk(x, slots, mask)
        return self.head(self.ln_f(x))

    def _tree_layout(
        self, start: int, nodes: torch.Tensor, parents: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """(nodes (M,), ancestry (N, N), depth (N,), end slot) from ``start``; ValueError past the cache."""
        nodes = nodes.to(self.device)
        anc = tree_ancestry(parents).to(self.device)  # (N, N)
        end = start + int(nodes.max()) + 1
        if end > self._cache_len or start < 0:
            raise ValueError(f"tree slots {start}..{end - 1} are outside the cache of {self._cache_len}")
        return nodes, anc, anc.sum(-1) - 1, end

    def keep_path(self, start: int, path: torch.Tensor) -> None:
        """Move the accepted nodes ``path`` (m,) from slots ``start + node`` to ``start + 1 .. start + m``."""
        src = start + path.to(self.device)
        dst = start + 1 + torch.arange(len(path), device=self.device)
        for blk in self.blocks:
            blk.attn.cache.move(src, dst)

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
            raise Message(
                "{directory}/config.json is missing or not a valid model config: {error}",
                directory=directory,
                error=_cause(exc),
            ) from None
        model = cls(cfg)
        try:
            state = load_file(str(directory / "model.safetensors"))
        except Exception as exc:  # safetensors raises its own error types for truncated or garbled files
            raise Message(
                "{directory}/model.safetensors is missing or corrupt: {error}", directory=directory, error=_cause(exc)
            ) from None
        try:
            missing, unexpected = model.load_state_dict(state, strict=False)
        except RuntimeError as exc:  # shape mismatch between config.json and the weights
            raise Message(
                "{directory}: weights do not match config.json: {error}", directory=directory, error=_cause(exc)
            ) from None
        if unexpected or set(missing) - {"head.weight"}:
            raise Message(
                "{directory}: weights do not match config (missing {missing}, unexpected {unexpected})",
                directory=directory,
                missing=missing,
                unexpected=unexpected,
            )
        return model.to(device=device, dtype=dtype).eval()


def _cause(exc: Exception) -> Message | str:
    """A wrapped cause as a message field: a :class:`Message` as it is (shown in the page's language), else its str."""
    return exc if isinstance(exc, Message) else str(exc)


def tree_ancestry(parents: torch.Tensor) -> torch.Tensor:
    """(N, N) bool: [i, j] when node j is node i or an ancestor; ``parents`` (N,), −1 at the root, parents first."""
    return _ancestry(tuple(int(p) for p in parents))


@functools.lru_cache(maxsize=64)
def _ancestry(parents: tuple[int, ...]) -> torch.Tensor:
    anc = torch.eye(len(parents), dtype=torch.bool)
    for i in range(1, len(parents)):
        anc[i] |= anc[parents[i]]
    return anc


def bits_per_byte(loss_nats: float) -> float:
    """Cross-entropy in nats per byte → bits per byte."""
    return loss_nats / math.log(2)

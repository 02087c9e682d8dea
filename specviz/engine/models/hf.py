"""Hugging Face adapter: transformers causal LMs as :class:`specviz.engine.models.Decodable` models, loaded in pairs.

``forward(idx, start)`` crops the ``DynamicCache`` to ``start`` positions (``crop`` with a negative
count: transformers 5 refuses a positive one), then feeds ``idx`` with ``position_ids``
start..start+T−1 — the same as overwriting our static cache. Checked against transformers 5.24.0
(the cache is ``cache=``; ``dtype=`` replaces ``torch_dtype=``).
"""

from __future__ import annotations

import inspect
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import nn

from specviz.base.i18n import N_, Message, Phrase
from specviz.engine.models.hf_export import (
    byte_tokenizer,
    bytes_to_unicode,
    export_gpt2,
    export_pair,
    gpt2_state_dict,
    to_gpt2,
)

__all__ = [
    "TRANSFORMERS_PIN",
    "HFCausalLM",
    "HFTokenizer",
    "byte_tokenizer",
    "bytes_to_unicode",
    "export_gpt2",
    "export_pair",
    "gpt2_state_dict",
    "load_hf_pair",
    "load_hf_target",
    "require_transformers",
    "to_gpt2",
]

TRANSFORMERS_PIN = "5.24.0"  # keep in step with requirements-dev.txt


def require_transformers():
    """Import and return ``transformers``, or raise a ValueError that says how to install it."""
    try:
        import transformers
    except ImportError as exc:  # includes sys.modules["transformers"] = None
        raise Message(
            "loading a Hugging Face model pair: the Hugging Face adapter needs the optional package transformers: pip install transformers=={pin}",
            pin=TRANSFORMERS_PIN,
        ) from exc
    return transformers


# --- running transformers models in our engine -----------------------------------------


@dataclass(frozen=True)
class HFConfig:
    """The part of :class:`~specviz.engine.models.gpt.GPTConfig` the engine reads."""

    block_size: int  # longest sequence (config.max_position_embeddings / n_positions)
    vocab_size: int  # logits are sliced to this many entries (the shared tokenizer's length)


_CONTEXT_ATTRS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")


def _context_length(config) -> int:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for name in _CONTEXT_ATTRS:
        value = getattr(text, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise Message(
        "{config}: cannot find the context length (none of {attrs})",
        config=type(config).__name__,
        attrs=", ".join(_CONTEXT_ATTRS),
    )


def _model_vocab(model) -> int:
    head = model.get_output_embeddings()
    return int(head.weight.shape[0]) if head is not None else int(model.config.get_text_config().vocab_size)


class HFCausalLM(nn.Module):
    """A transformers causal LM as a :class:`specviz.engine.models.Decodable`: float32 logits sliced to ``vocab_size``.

    ``forward(idx)`` recomputes without a cache; ``forward(idx, start)`` takes ``idx`` (B, T) as
    positions start..start+T−1, discarding the cache from ``start`` on (``start`` ≤ cached positions).
    """

    def __init__(self, model, vocab_size: int | None = None, block_size: int | None = None):
        super().__init__()
        self.model = model.eval()
        model_vocab = _model_vocab(model)
        vocab_size = vocab_size or model_vocab
        if vocab_size > model_vocab:
            raise Message(
                "{name}: vocab_size {vocab} exceeds the model's {logits} logits",
                name=self.name,
                vocab=vocab_size,
                logits=model_vocab,
            )
        self.cfg = HFConfig(block_size=block_size or _context_length(model.config), vocab_size=vocab_size)
        params = inspect.signature(model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5
        self._cache = None
        self._cache_len = 0

    @property
    def name(self) -> str:
        return str(getattr(self.model.config, "_name_or_path", "") or type(self.model).__name__)

    # --- specviz.engine.models.Decodable ---------------------------------------------------------

    @property
    def context_length(self) -> int:
        """Longest sequence (``cfg.block_size``: the config's context length unless given)."""
        return self.cfg.block_size

    @property
    def device(self) -> torch.device:
        """The input embedding's device: where token ids must be."""
        return self.model.get_input_embeddings().weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.get_input_embeddings().weight.dtype

    def num_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def setup_cache(self, batch: int = 1, length: int | None = None) -> None:
        """Start a fresh, empty ``DynamicCache`` for up to ``length`` positions (default: the context)."""
        from transformers import DynamicCache

        self._cache = DynamicCache(config=self.model.config)
        if hasattr(self._cache, "activate_past_recording"):  # sliding-window layers: keep what crop may need
            self._cache.activate_past_recording()
        self._cache_len = length or self.cfg.block_size  # a DynamicCache grows; the batch comes with idx

    def forward(self, idx: torch.Tensor, start: int | None = None) -> torch.Tensor:
        """Logits (B, T, vocab_size) for ``idx`` (B, T) at positions start.. (or 0.. without a cache)."""
        b, t = idx.shape
        if isinstance(start, torch.Tensor):
            raise ValueError("per-row positions (batched decoding) need specviz's own GPT; this pair is Hugging Face's")
        if start is None:
            if t > self.cfg.block_size:
                raise Message(
                    "sequence length must be <= block_size {block_size}; got {t}", block_size=self.cfg.block_size, t=t
                )
            out = self.model(input_ids=idx, use_cache=False)
        else:
            if self._cache is None:
                raise ValueError("forward(idx, start) needs a cache: call setup_cache() first")
            start, end = int(start), int(start) + t
            if end > self._cache_len:
                raise Message(
                    "sequence would reach position {last}; the cache holds {cache}", last=end - 1, cache=self._cache_len
                )
            have = self._cache.get_seq_length()
            if start > have:
                raise ValueError(f"cannot write at position {start}: only positions 0..{have - 1} are cached")
            if start < have:
                self._cache.crop(start - have)  # negative: drop the last have - start positions
            positions = torch.arange(start, end, device=idx.device).unsqueeze(0).expand(b, -1)
            out = self.model(input_ids=idx, position_ids=positions, use_cache=True, **{self._cache_kwarg: self._cache})
            new_cache = getattr(out, "cache", None)
            if new_cache is None:
                new_cache = getattr(out, "past_key_values", None)
            if new_cache is not None:
                self._cache = new_cache
        return out.logits[..., : self.cfg.vocab_size].float()


class HFTokenizer:
    """A transformers tokenizer behind our tokenizer interface (no special tokens added)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(
            [int(i) for i in ids], skip_special_tokens=False, clean_up_tokenization_spaces=False
        )


# --- loading --------------------------------------------------------------------------


def _is_path_like(spec: str) -> bool:
    """A local folder, or something that can only be meant as one (hub ids are 'name' or 'org/name')."""
    return Path(spec).expanduser().exists() or spec.startswith(("/", ".", "~")) or "\\" in spec or spec.count("/") > 1


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Quick TCP check of the hub endpoint, so an offline machine fails fast instead of retrying for a minute."""
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout).close()
    except OSError:
        return False
    return True


def _hub_offline() -> bool:
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except ImportError:
        return bool(os.environ.get("HF_HUB_OFFLINE"))


def _cause(exc: Exception) -> Message | str:
    """A wrapped cause as a message field: a :class:`Message` as it is (shown in the page's language), else its str."""
    return exc if isinstance(exc, Message) else str(exc)


def _from_pretrained(loader, spec: str, what: str, allow_local: bool, **kwargs):
    """``loader.from_pretrained(spec)`` with safe options; any failure a ValueError naming ``spec`` and ``what``."""
    kwargs.update(trust_remote_code=False)
    if _is_path_like(spec):
        folder = Path(spec).expanduser()
        if not allow_local:
            raise Message(
                "{what} {spec!r}: local folders are not allowed here; give a Hugging Face hub id", what=what, spec=spec
            )
        if not folder.is_dir():
            raise Message("{what} {spec!r}: no such folder", what=what, spec=spec)
        try:
            return loader.from_pretrained(str(folder), local_files_only=True, **kwargs)
        except Exception as exc:  # OSError, ValueError, KeyError from an odd config, ...
            raise Message(
                "{what} {spec!r}: cannot load from the local folder: {error}", what=what, spec=spec, error=_cause(exc)
            ) from exc
    try:  # the local hub cache first: no network at all when the files are there
        return loader.from_pretrained(spec, local_files_only=True, **kwargs)
    except Exception as exc:
        cached_error = exc
    no_folder = Path(spec).name != spec  # "org/name" could also have been meant as a relative folder
    if _hub_offline():
        key = (
            N_(
                "{what} {spec!r}: not in the local Hugging Face cache (and there is no local folder of that name) and HF_HUB_OFFLINE is set ({error})"
            )
            if no_folder
            else N_("{what} {spec!r}: not in the local Hugging Face cache and HF_HUB_OFFLINE is set ({error})")
        )
        raise Message(key, what=what, spec=spec, error=_cause(cached_error)) from cached_error
    if not _hub_reachable():
        key = (
            N_(
                "{what} {spec!r}: not in the local Hugging Face cache (and there is no local folder of that name) and the Hugging Face Hub cannot be reached (no network?)"
            )
            if no_folder
            else N_(
                "{what} {spec!r}: not in the local Hugging Face cache and the Hugging Face Hub cannot be reached (no network?)"
            )
        )
        raise Message(key, what=what, spec=spec) from cached_error
    try:
        return loader.from_pretrained(spec, **kwargs)
    except Exception as exc:  # RepositoryNotFoundError, gated repo, no safetensors, HTTP errors, ...
        raise Message(
            "{what} {spec!r}: cannot load from the Hugging Face Hub: {error}", what=what, spec=spec, error=_cause(exc)
        ) from exc


def _load_tokenizer(spec: str, allow_local: bool):
    transformers = require_transformers()
    return _from_pretrained(transformers.AutoTokenizer, spec, Phrase("tokenizer"), allow_local)


def _load_model(spec: str, device, dtype, allow_local: bool):
    transformers = require_transformers()
    kwargs = {"dtype": dtype} if dtype is not None else {}
    what = Phrase("model")  # "model"
    model = _from_pretrained(transformers.AutoModelForCausalLM, spec, what, allow_local, use_safetensors=True, **kwargs)
    if getattr(model, "_is_stateful", False):
        raise Message(
            "model {spec!r}: {cls} is stateful (recurrent); its cache cannot be rewound to an earlier position, which speculative decoding needs",
            spec=spec,
            cls=type(model).__name__,
        )
    return model.to(device=device).eval()


def load_hf_pair(
    target_id: str, draft_id: str, device="cpu", dtype: torch.dtype | None = None, allow_local: bool = True
) -> tuple[HFCausalLM, HFCausalLM, HFTokenizer]:
    """``(target, draft, tokenizer)`` from hub ids or local folders; ValueError naming the id on any failure.

    ``trust_remote_code=False``, ``use_safetensors=True``; local folders ``local_files_only=True``. The
    tokenizers must share a vocabulary; embeddings padded beyond it are sliced off the logits.
    """
    from specviz.engine.models import resolve_device

    require_transformers()
    device = resolve_device(device) if isinstance(device, str) else torch.device(device)
    target_id, draft_id = target_id.strip(), draft_id.strip()
    if not target_id or not draft_id:
        raise Message(
            "a Hugging Face pair is 'TARGET,DRAFT'; got {target!r}, {draft!r}", target=target_id, draft=draft_id
        )
    tok = _load_tokenizer(target_id, allow_local)
    draft_tok = _load_tokenizer(draft_id, allow_local)
    if tok.get_vocab() != draft_tok.get_vocab():
        a, b = tok.get_vocab(), draft_tok.get_vocab()
        diff = sorted(set(a.items()) ^ set(b.items()), key=str)[:3]
        raise Message(
            "target {target!r} and draft {draft!r} use different tokenizers ({a} vs {b} tokens; e.g. {diff}); speculative decoding needs a shared vocabulary",
            target=target_id,
            draft=draft_id,
            a=len(a),
            b=len(b),
            diff=diff,
        )
    target = _load_model(target_id, device, dtype, allow_local)
    draft = _load_model(draft_id, device, dtype, allow_local)
    vocab = len(tok)
    for spec, model in ((target_id, target), (draft_id, draft)):
        if _model_vocab(model) < vocab:
            raise Message(
                "model {spec!r} has {logits} output logits but its tokenizer has {vocab} tokens",
                spec=spec,
                logits=_model_vocab(model),
                vocab=vocab,
            )
    return HFCausalLM(target, vocab), HFCausalLM(draft, vocab), HFTokenizer(tok)


def load_hf_target(
    target_id: str, device="cpu", dtype: torch.dtype | None = None, allow_local: bool = True
) -> tuple[HFCausalLM, HFTokenizer]:
    """One Hugging Face model and its tokenizer, as :func:`load_hf_pair` loads each."""
    from specviz.engine.models import resolve_device

    require_transformers()
    device = resolve_device(device) if isinstance(device, str) else torch.device(device)
    target_id = target_id.strip()
    if not target_id:
        raise Message("a Hugging Face target id is empty")
    tok = _load_tokenizer(target_id, allow_local)
    model = _load_model(target_id, device, dtype, allow_local)
    if _model_vocab(model) < len(tok):
        raise Message(
            "model {spec!r} has {logits} output logits but its tokenizer has {vocab}",
            spec=target_id,
            logits=_model_vocab(model),
            vocab=len(tok),
        )
    return HFCausalLM(model, len(tok)), HFTokenizer(tok)

"""Hugging Face adapter: run transformers causal LMs in our engine, and export our GPT to transformers.

Two directions, both optional (the app works without ``transformers``):

* :class:`HFCausalLM` wraps an ``AutoModelForCausalLM`` so that
  :mod:`specviz.engine.decoding` can drive it exactly like our :class:`~specviz.engine.models.gpt.GPT`: it
  satisfies :class:`specviz.engine.models.Decodable` (``context_length``, ``device``, ``dtype``,
  ``setup_cache``, ``forward(idx, start)`` writing at absolute positions).
  :func:`load_hf_pair` loads a target/draft pair from hub ids or local folders.
* :func:`export_gpt2` / :func:`export_pair` write our byte-level GPT as a ``GPT2LMHeadModel``
  checkpoint with a byte-level tokenizer, so the same weights can be run through
  transformers' own assisted generation for a side-by-side comparison.

Cache semantics. Our static cache is written by absolute position; a transformers
``DynamicCache`` grows by concatenation. ``forward(idx, start)`` therefore first drops
every cached position ≥ ``start`` (``DynamicCache.crop`` with a negative count: in
transformers 5 a positive "keep this many" argument is refused) and then feeds ``idx``
with explicit ``position_ids`` start..start+T-1, which is the same thing as overwriting.

Checked against transformers 5.24.0: models take the cache as ``cache=`` (``past_key_values=``
is a deprecated alias until 5.40); ``torch_dtype=`` is now ``dtype=``; ``save_pretrained``
always writes safetensors (``safe_serialization`` is gone); ``PreTrainedTokenizerFast`` is an
alias of ``TokenizersBackend``.
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

__all__ = [
    "TRANSFORMERS_PIN",
    "HFCausalLM",
    "HFTokenizer",
    "byte_tokenizer",
    "bytes_to_unicode",
    "export_gpt2",
    "export_pair",
    "load_hf_pair",
    "require_transformers",
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
    """A transformers causal LM as a :class:`specviz.engine.models.Decodable`, the interface of our GPT.

    ``forward(idx)`` recomputes from scratch (no cache); ``forward(idx, start)`` treats
    ``idx`` (B, T) as the tokens at absolute positions start..start+T-1: the cache is cut
    back to ``start`` positions first, so whatever it held from ``start`` on is discarded
    (the equivalent of our static cache being overwritten). ``start`` may not lie beyond the
    positions already cached. Logits are float32 and sliced to ``vocab_size`` entries.
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
    """``loader.from_pretrained(spec)`` with safe options, every failure turned into a ValueError naming ``spec``.

    ``what`` names the thing loaded in messages ("tokenizer", "model"): a str or a :class:`Phrase`.
    """
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
    """Load ``(target, draft, tokenizer)`` from Hugging Face hub ids or local folders.

    Models load with ``trust_remote_code=False`` and ``use_safetensors=True``; local
    folders with ``local_files_only=True``. The two tokenizers must have the same vocabulary;
    when the models' embedding matrices differ only by padding rows, both wrappers slice their
    logits to the tokenizer's length. Every failure is a ValueError naming the id.
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
    """One Hugging Face model and its tokenizer, as :func:`load_hf_pair` loads each (for a draft that
    needs no model, such as the n-gram drafter)."""
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


# --- exporting our GPT to transformers ----------------------------------------------


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character table (the alphabet of the ByteLevel pre-tokenizer)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def byte_tokenizer(model_max_length: int | None = None):
    """A ``PreTrainedTokenizerFast`` whose ids are the UTF-8 bytes: ``encode(s) == list(s.encode())``.

    A BPE model with no merges over GPT-2's byte alphabet, mapped so that byte b has id b,
    behind a ByteLevel pre-tokenizer without regex splitting or prefix space and a ByteLevel
    decoder (invalid UTF-8 decodes with U+FFFD, as in our ByteTokenizer).
    """
    require_transformers()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: b for b, ch in bytes_to_unicode().items()}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    kwargs = {"model_max_length": model_max_length} if model_max_length else {}
    return PreTrainedTokenizerFast(tokenizer_object=tok, clean_up_tokenization_spaces=False, **kwargs)


def gpt2_state_dict(model) -> dict[str, torch.Tensor]:
    """Our GPT's weights under GPT2LMHeadModel's names (Conv1D weights are (in, out): transposed)."""
    sd = {k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()}
    out = {
        "transformer.wte.weight": sd["wte.weight"],
        "transformer.wpe.weight": sd["wpe.weight"],
        "transformer.ln_f.weight": sd["ln_f.weight"],
        "transformer.ln_f.bias": sd["ln_f.bias"],
        "lm_head.weight": sd["wte.weight"],
    }
    for i in range(model.cfg.n_layer):
        src, dst = f"blocks.{i}.", f"transformer.h.{i}."
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[f"{dst}{theirs}.weight"] = sd[f"{src}{ours}.weight"]
            out[f"{dst}{theirs}.bias"] = sd[f"{src}{ours}.bias"]
        for ours, theirs in (
            ("attn.qkv", "attn.c_attn"),
            ("attn.proj", "attn.c_proj"),
            ("mlp.0", "mlp.c_fc"),
            ("mlp.2", "mlp.c_proj"),
        ):
            w = sd[f"{src}{ours}.weight"]  # nn.Linear: (out, in)
            out[f"{dst}{theirs}.weight"] = w.t().contiguous()
            out[f"{dst}{theirs}.bias"] = torch.zeros(w.shape[0])
    return out


def to_gpt2(model):
    """Our GPT as an equivalent ``transformers.GPT2LMHeadModel`` (float32, CPU, eval mode)."""
    require_transformers()
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = model.cfg
    config = GPT2Config(
        vocab_size=cfg.vocab_size,
        n_positions=cfg.block_size,
        n_embd=cfg.n_embd,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_inner=4 * cfg.n_embd,
        activation_function="gelu",  # ACT2FN["gelu"] is nn.functional.gelu: exact erf, like nn.GELU()
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        scale_attn_weights=True,
        scale_attn_by_inverse_layer_idx=False,
        reorder_and_upcast_attn=False,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    hf = GPT2LMHeadModel(config)
    missing, unexpected = hf.load_state_dict(gpt2_state_dict(model), strict=False)
    if missing or unexpected:
        raise RuntimeError(f"GPT2LMHeadModel weights do not match: missing {missing}, unexpected {unexpected}")
    if hf.lm_head.weight.data_ptr() != hf.transformer.wte.weight.data_ptr():
        raise RuntimeError("GPT2LMHeadModel: lm_head is not tied to wte")
    return hf.eval()


def export_gpt2(model, directory: str | Path) -> Path:
    """Write our GPT as a Hugging Face GPT2LMHeadModel checkpoint plus a byte-level tokenizer.

    ``directory`` gets config.json, generation_config.json, model.safetensors and the tokenizer
    files, so ``AutoModelForCausalLM.from_pretrained(directory)`` and
    ``AutoTokenizer.from_pretrained(directory)`` reproduce the model and ``ByteTokenizer``.
    """
    directory = Path(directory)
    hf = to_gpt2(model)
    hf.save_pretrained(directory)  # transformers 5 always writes safetensors
    if not (directory / "model.safetensors").is_file():
        raise RuntimeError(f"{directory}: save_pretrained wrote no model.safetensors")
    byte_tokenizer(model.cfg.block_size).save_pretrained(directory)
    return directory


def export_pair(pair_dir_or_models, out_dir: str | Path) -> Path:
    """Export a pair of ours to ``out_dir/target`` and ``out_dir/draft`` (see :func:`export_gpt2`).

    ``pair_dir_or_models`` is ``"bundled"``, a folder with ``target/`` and ``draft/`` in our
    format, or a ``(target, draft[, tokenizer])`` tuple of GPT models.
    """
    from specviz.engine.models import BUNDLED_DIR
    from specviz.engine.models.gpt import GPT

    if isinstance(pair_dir_or_models, (str, Path)):
        root = BUNDLED_DIR if str(pair_dir_or_models) == "bundled" else Path(pair_dir_or_models)
        for part in ("target", "draft"):
            if not (root / part / "model.safetensors").is_file():
                raise Message(
                    "pair {spec!r}: no {part}/model.safetensors under {root}",
                    spec=str(pair_dir_or_models),
                    part=part,
                    root=root,
                )
        target, draft = GPT.load(root / "target"), GPT.load(root / "draft")
    else:
        target, draft = tuple(pair_dir_or_models)[:2]
    out_dir = Path(out_dir)
    export_gpt2(target, out_dir / "target")
    export_gpt2(draft, out_dir / "draft")
    return out_dir

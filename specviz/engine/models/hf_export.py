"""Export our byte-level GPT as a transformers ``GPT2LMHeadModel`` checkpoint with a byte-level tokenizer."""

from __future__ import annotations

from pathlib import Path

import torch

from specviz.base.i18n import Message


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

    A merge-free BPE over GPT-2's byte alphabet (byte b → id b), ByteLevel pre-tokenizer (no regex,
    no prefix space) and decoder (invalid UTF-8 → U+FFFD).
    """
    from specviz.engine.models.hf import require_transformers

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
    from specviz.engine.models.hf import require_transformers

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
    """Write our GPT to ``directory`` as a GPT2LMHeadModel (safetensors) with :func:`byte_tokenizer`."""
    directory = Path(directory)
    hf = to_gpt2(model)
    hf.save_pretrained(directory)  # transformers 5 always writes safetensors
    if not (directory / "model.safetensors").is_file():
        raise RuntimeError(f"{directory}: save_pretrained wrote no model.safetensors")
    byte_tokenizer(model.cfg.block_size).save_pretrained(directory)
    return directory


def export_pair(pair_dir_or_models, out_dir: str | Path) -> Path:
    """Export ``"bundled"``, a pair folder or ``(target, draft)`` to ``out_dir/{target,draft}``."""
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

"""Export our byte-level GPT to GGUF, so that llama.cpp runs the same weights as its ``gpt2`` architecture.

Differences: zero biases are written (ours have none); llama.cpp's GELU is the tanh approximation
(ours erf), so logits differ slightly; the vocabulary is the 256 bytes in GPT-2's byte alphabet
(byte b at id b) with one never-firing merge (llama.cpp refuses none). EOG is byte 0; no BOS; float32.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from specviz.engine.models.hf import bytes_to_unicode

ARCH = "gpt2"
NORM_EPS = 1e-5  # nn.LayerNorm's default
EOS_ID = 0  # NUL: never in the bundled corpus
_LAYER_NAMES = {  # ours → llama.cpp's (blk.N.…); nn.Linear weights are (out, in) = GGUF's row-major
    "ln1.weight": "attn_norm.weight",
    "ln1.bias": "attn_norm.bias",
    "ln2.weight": "ffn_norm.weight",
    "ln2.bias": "ffn_norm.bias",
    "attn.qkv.weight": "attn_qkv.weight",
    "attn.proj.weight": "attn_output.weight",
    "mlp.0.weight": "ffn_up.weight",
    "mlp.2.weight": "ffn_down.weight",
}
_ZERO_BIASES = {  # llama.cpp's bias name ← the weight whose row count it takes
    "attn_qkv.bias": "attn_qkv.weight",
    "attn_output.bias": "attn_output.weight",
    "ffn_up.bias": "ffn_up.weight",
    "ffn_down.bias": "ffn_down.weight",
}


def gguf_tensors(model) -> dict[str, np.ndarray]:
    """Our GPT's weights under llama.cpp's ``gpt2`` names (token_embd, position_embd, blk.N.*), float32, zero biases.

    No ``output.weight``: llama.cpp ties the head to the embedding.
    """
    sd = {k: v.detach().to("cpu", torch.float32).numpy() for k, v in model.state_dict().items()}
    if not np.array_equal(sd["head.weight"], sd["wte.weight"]):
        raise ValueError("GGUF export: the output head is not tied to the token embedding")
    out = {
        "token_embd.weight": sd["wte.weight"],
        "position_embd.weight": sd["wpe.weight"],
        "output_norm.weight": sd["ln_f.weight"],
        "output_norm.bias": sd["ln_f.bias"],
    }
    for i in range(model.cfg.n_layer):
        block = {theirs: sd[f"blocks.{i}.{ours}"] for ours, theirs in _LAYER_NAMES.items()}
        for bias, weight in _ZERO_BIASES.items():
            block[bias] = np.zeros(block[weight].shape[0], dtype=np.float32)
        out.update({f"blk.{i}.{name}": np.ascontiguousarray(t) for name, t in block.items()})
    return out


def as_llama_cpp_computes(model):
    """A copy of ``model`` with tanh-approximate GELUs: the function llama.cpp computes from the export."""
    import copy

    twin = copy.deepcopy(model)
    for m in twin.modules():
        if isinstance(m, torch.nn.GELU):
            m.approximate = "tanh"
    return twin


def byte_vocabulary() -> list[str]:
    """The 256 byte tokens in GPT-2's byte alphabet, byte b at index b."""
    table = bytes_to_unicode()
    return [table[b] for b in range(256)]


def export_gguf(model, path: str | Path, name: str) -> Path:
    """Write ``model`` (a byte-level GPT, vocab_size 256) to ``path`` as a GGUF file llama.cpp loads as ``gpt2``."""
    import gguf

    cfg = model.cfg
    if cfg.vocab_size != 256:
        raise ValueError(f"GGUF export: vocab_size is {cfg.vocab_size}; only the byte vocabulary (256) is supported")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), ARCH)
    w.add_name(name)
    w.add_context_length(cfg.block_size)
    w.add_embedding_length(cfg.n_embd)
    w.add_feed_forward_length(4 * cfg.n_embd)
    w.add_block_count(cfg.n_layer)
    w.add_head_count(cfg.n_head)
    w.add_layer_norm_eps(NORM_EPS)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens = byte_vocabulary()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.NORMAL] * len(tokens))
    w.add_token_merges([f"{tokens[0]} {tokens[0]}"])
    w.add_eos_token_id(EOS_ID)
    w.add_add_bos_token(False)
    w.add_add_eos_token(False)
    for tensor_name, tensor in gguf_tensors(model).items():
        w.add_tensor(tensor_name, tensor)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def export_pair_gguf(pair: str | Path, out_dir: str | Path) -> tuple[Path, Path]:
    """Export a pair of ours (``"bundled"`` or a folder with target/ and draft/) to ``target.gguf``, ``draft.gguf``."""
    from specviz.engine.models import BUNDLED_DIR
    from specviz.engine.models.gpt import GPT

    root = BUNDLED_DIR if str(pair) == "bundled" else Path(pair)
    out_dir = Path(out_dir)
    paths = []
    for part in ("target", "draft"):
        if not (root / part / "model.safetensors").is_file():
            raise ValueError(f"pair {str(pair)!r}: no {part}/model.safetensors under {root}")
        paths.append(export_gguf(GPT.load(root / part), out_dir / f"{part}.gguf", f"specviz-{part}"))
    return paths[0], paths[1]

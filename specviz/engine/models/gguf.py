"""Export our byte-level GPT to GGUF, so that llama.cpp runs the same weights.

llama.cpp's ``gpt2`` architecture has our block (pre-LayerNorm attention and MLP, learned
positions, tied output head), with three differences handled here:

- it wants a bias on every linear layer: ours have none, so zeros are written;
- its GELU is the tanh approximation, ours the exact erf: not changeable from the file,
  so logits differ by a little (see :func:`compare_greedy` in the engine tests);
- its tokenizer is GPT-2's byte-level BPE: the vocabulary is the 256 bytes, spelled in
  GPT-2's byte alphabet with byte b at id b, under the ``gpt-2`` pre-tokenizer. llama.cpp
  refuses a BPE vocabulary without merges, so one merge of two NUL bytes is written; its
  result is not in the vocabulary, so it never fires.

The end-of-generation token is byte 0 (NUL), which code never contains; no BOS is added.
Tensors are written in float32 (the shipped fp16 weights widen exactly).
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
    """Our GPT's weights under llama.cpp's ``gpt2`` tensor names, float32, zero biases added.

    Returns
    -------
    dict
        ``token_embd.weight`` (V, C), ``position_embd.weight`` (block_size, C),
        ``output_norm.{weight,bias}`` (C,), and per block ``blk.N.attn_norm.*`` (C,),
        ``attn_qkv.weight`` (3C, C), ``attn_output.weight`` (C, C), ``ffn_up.weight`` (4C, C),
        ``ffn_down.weight`` (C, 4C), ``ffn_norm.*`` (C,), each linear with a zero bias of its
        row count. No ``output.weight``: the head is tied to the embedding, which llama.cpp
        duplicates when the tensor is absent.
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
    """A copy of ``model`` whose GELUs are the tanh approximation: the function llama.cpp computes from the export.

    Its greedy continuations equal llama.cpp's token for token except at near-ties smaller than
    ggml's fp16 GELU table moves the logits (tests/servers/test_llamacpp.py); the original's may also differ
    where the top two logits are closer than the approximation moves them.
    """
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
    """Write ``model`` as a GGUF file llama.cpp loads as ``gpt2``.

    Parameters
    ----------
    model : specviz.engine.models.gpt.GPT
        A byte-level model (vocab_size 256).
    path : path
        The file to write (its folder is created).
    name : str
        ``general.name`` in the file.
    """
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

"""The Serving view's K schedules, read back by the engines' own parsers where they can run here.

- vLLM: ``build_dynamic_sd_schedule_lookup`` of vllm/v1/spec_decode/dynamic/utils.py from the vLLM
  0.34.0 release (its sdist on PyPI, checked against its sha256 and cached outside the work tree; the
  module imports nothing, so it loads alone without vLLM's CUDA stack). Without the network the test
  skips, saying so; CI fetches it.
- TensorRT-LLM: its wheels need CUDA, so the rules of ``DecodingBaseConfig``'s validators
  (tensorrt_llm/llmapi/llm_args.py at NVIDIA/TensorRT-LLM fcd3f316) are checked as they are written there.
- llama.cpp: llama-server started with the exported flags (tests/test_llamacpp.py's binary).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tarfile
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml

from specviz.core import serving

VLLM_SDIST = (
    "https://files.pythonhosted.org/packages/92/21/6e0b077dc4a0b28f5a8ce8bb352a38d7196650d681fd4faa87f8dc622eff/"
    "vllm-0.34.0.tar.gz"
)
VLLM_SHA256 = "fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113"
VLLM_MODULE = "vllm-0.34.0/vllm/v1/spec_decode/dynamic/utils.py"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "specviz" / "vllm-0.34.0"
P, G = serving.Lengths.fixed(1024), serving.Lengths.fixed(256)


def _schedules():
    """Best K by batch for a few pairs and engines whose K falls with the batch (and one where it stays)."""
    cases = [
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 1, 0.8),
        ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 4, 0.9),
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "A100-SXM4-80GB", 1, 0.6),
    ]
    out = []
    for target, draft, gpu, tp, alpha in cases:
        grid = serving.cost_grid(target, draft, gpu, serving.chain_options(alpha, 6), P, G, tp=tp, engine="vllm")
        out.append(serving.k_by_batch(grid, G))
    return out


@pytest.fixture(scope="module")
def schedules():
    return _schedules()


def _vllm_utils():
    """vLLM 0.34.0's dynamic-schedule module, from the cache or PyPI; None without either."""
    path = CACHE / "dynamic_utils.py"
    if not path.is_file():
        try:
            body = httpx.get(VLLM_SDIST, timeout=60.0, follow_redirects=True).raise_for_status().content
        except httpx.HTTPError:
            return None
        if hashlib.sha256(body).hexdigest() != VLLM_SHA256:
            raise AssertionError("vllm-0.34.0.tar.gz does not match its sha256")
        CACHE.mkdir(parents=True, exist_ok=True)
        sdist = CACHE / "vllm-0.34.0.tar.gz"
        sdist.write_bytes(body)
        with tarfile.open(sdist) as tar:
            path.write_bytes(tar.extractfile(VLLM_MODULE).read())
        sdist.unlink()
    spec = importlib.util.spec_from_file_location("vllm_dynamic_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_vllm_parses_the_schedule_into_the_same_k_by_batch(schedules):
    utils = _vllm_utils()
    if utils is None:
        pytest.skip("vLLM 0.34.0's sdist could not be fetched from PyPI (no network)")
    for schedule in schedules:
        config = serving.vllm_speculative_config(schedule, model="draft")
        k_max = config["num_speculative_tokens"]
        dense = utils.build_dynamic_sd_schedule_lookup(
            config["num_speculative_tokens_per_batch_size"], int(schedule["batch"].max()), k_max
        )
        assert dense[1:] == list(np.minimum(schedule["k"], k_max))


def test_trtllm_config_obeys_decoding_base_config(schedules):
    for schedule in schedules:
        config = serving.trtllm_speculative_config(schedule)
        parsed = yaml.safe_load(serving.trtllm_yaml(config))["speculative_config"]
        assert parsed == config
        lengths = parsed["draft_len_schedule"]
        assert 1 in lengths and lengths[1] == parsed["max_draft_len"] >= 1
        assert all(b >= 1 and 0 <= k <= parsed["max_draft_len"] for b, k in lengths.items())
        assert "max_concurrency" not in parsed  # mutually exclusive with a schedule
        # a batch at or above a threshold takes its K: the schedule reproduces k_by_batch
        keys = sorted(lengths)
        for b, k in zip(schedule["batch"], schedule["k"], strict=True):
            assert lengths[max(t for t in keys if t <= b)] == min(k, parsed["max_draft_len"])
    flat = schedules[0].assign(k=0)
    assert serving.trtllm_speculative_config(flat) is None
    assert serving.trtllm_yaml(None).startswith("#")


def test_sglang_and_llama_cpp_flags():
    assert serving.sglang_flags(3, draft="d") == (
        "--speculative-algorithm STANDALONE --speculative-draft-model-path d --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
    )
    assert serving.sglang_flags(0).startswith("#") and serving.llama_cpp_flags(0).startswith("#")
    assert serving.llama_cpp_flags(4) == "--spec-draft-n-max 4 --spec-draft-n-min 4 --spec-draft-p-min 0"


@pytest.mark.slow
@pytest.mark.llamacpp
def test_llama_server_takes_the_flags(tmp_path, llama_binary, gguf_pair):
    from specviz.servers import llamacpp

    target, draft = gguf_pair
    flags = ["-md", str(draft), "--spec-type", "draft-simple", *serving.llama_cpp_flags(3).split()]
    with llamacpp.serve(llama_binary, target, None, 3, log_dir=tmp_path, extra=flags) as server:
        reply = llamacpp.complete(server.url, [65, 66, 67], 16)
        assert reply["timings"].get("draft_n", 0) > 0  # it drafted with the flags given

"""The gpu tier: the engine on a CUDA device (docs/testing.md).

Run with ``python -m pytest -m gpu``; without a CUDA device every test here is skipped, saying
so (the hook in conftest.py). Checks: the cached forward equals the full recompute in fp32,
fp16 and bf16; greedy speculative output equals target-only output for K = 1..8; sampling is
lossless (the CPU test's χ² check, on CUDA); and timed regions hold the GPU work they
enqueue (a region that skipped ``torch.cuda.synchronize`` would measure only the launches).

Imports only torch, numpy and specviz's engine: no UI or database packages, which a GPU
machine may lack.
"""

from __future__ import annotations

import pytest
import torch
from _models import ProtocolOnly, build_gpt, check_lossless, noisy_copy

from specviz.engine import decoding
from specviz.engine.decoding import generate_target_only, speculative_generate
from specviz.engine.models import GPTConfig, load_pair

pytestmark = pytest.mark.gpu

CFG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=256)
PROMPT = torch.tensor(list(b"def f(x):\n    return"))

#: max |cached − full| as a fraction of max |logit|: fp32 is exact up to kernel order; half
#: precisions carry their rounding through two layers (a wrong position gives about 0.7).
REL_TOL = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}


def _sharp(seed: int, dtype: torch.dtype = torch.float32):
    return build_gpt(CFG, seed, std=0.1).to("cuda", dtype)


@pytest.mark.parametrize("dtype", list(REL_TOL), ids=lambda d: str(d).removeprefix("torch."))
def test_cached_forward_equals_full_recompute(dtype):
    model = _sharp(0, dtype)
    seq = torch.randint(0, 256, (1, 36), generator=torch.Generator().manual_seed(0)).cuda()
    with torch.inference_mode():
        full = model(seq).float()  # (1, T, V)
        model.setup_cache(1, 64)
        chunks, pos = [], 0
        for size in [1, 1, 4, 1, 7, 2, 1, 1, 10, 3, 5]:  # single tokens and blocks, 36 in all
            chunks.append(model(seq[:, pos : pos + size], pos).float())
            pos += size
        shifted = model(seq[:, 30:], 29).float()  # the last 6 tokens one position early: wrong on purpose
    scale = float(full.abs().max())
    err = float((torch.cat(chunks, 1) - full).abs().max()) / scale
    assert err <= REL_TOL[dtype], f"{dtype}: cached vs full {err:.2e} of the logit scale"
    assert float((shifted - full[:, 30:]).abs().max()) / scale > 4 * REL_TOL[dtype]  # the check has power


@pytest.mark.parametrize("k", range(1, 9))
def test_greedy_speculative_equals_target_only(k):
    """fp32 on CUDA: batched verification picks the same argmax as one-token steps."""
    target = _sharp(2)
    draft = noisy_copy(target, 0.015, 3)
    expected, _ = generate_target_only(target, PROMPT, 60)
    got, stats = speculative_generate(target, draft, PROMPT, k, 0.0, 60)
    assert got.tolist() == expected.tolist()
    assert 0 < stats.accepted_total < sum(len(r.drafted) for r in stats.rounds)  # both outcomes happened


@pytest.fixture(scope="module")
def bundled_fp32():
    return load_pair("bundled", "cuda", torch.float32)


@pytest.mark.parametrize("k", range(1, 9))
def test_bundled_pair_greedy_exactness(bundled_fp32, k):
    target, draft, tok = bundled_fp32
    prompt = torch.tensor(tok.encode("import os\nimport sys\n\n\ndef main(argv):\n    "))
    base, _ = generate_target_only(target, prompt, 48)
    spec, stats = speculative_generate(target, draft, prompt, k, 0.0, 48)
    assert spec.tolist() == base.tolist()
    assert 0 < stats.alpha_hat <= 1 and stats.t_verify_ms > 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_bundled_pair_decodes_in_half_precision(dtype):
    target, draft, tok = load_pair("bundled", "cuda", dtype)
    assert target.dtype == dtype and target.device.type == "cuda"
    prompt = torch.tensor(tok.encode("def add(a, b):\n    "))
    out, stats = speculative_generate(target, draft, prompt, 4, 1.0, 40, torch.Generator("cuda").manual_seed(0))
    assert out.shape == (40,) and int(out.min()) >= 0 and int(out.max()) < 256
    assert stats.accepted_total > 0 and all(0 <= x <= 1 + 1e-6 for r in stats.rounds for x in r.overlap)


def test_loading_a_pair_on_cuda_turns_cudnn_attention_off():
    """cuDNN's attention plans per shape (tens of ms at each new key length on an H200): a pair loaded
    on CUDA must leave it, or every decoding step pays a plan (benchmarks/round_costs.py)."""
    torch.backends.cuda.enable_cudnn_sdp(True)
    load_pair("bundled", "cuda", torch.float16)
    assert not torch.backends.cuda.cudnn_sdp_enabled()


@pytest.mark.slow
def test_speculative_sampling_is_lossless_on_cuda():
    check_lossless("cuda")


# --- timing ---------------------------------------------------------------------------------


def _burst(a: torch.Tensor, n: int) -> tuple[torch.cuda.Event, torch.cuda.Event]:
    """Enqueue n products a @ a between two timing events (returns at once: the GPU runs them later)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        a @ a
    end.record()
    return start, end


def test_clock_holds_the_gpu_work_it_brackets():
    a = torch.randn(4096, 4096, device="cuda")
    _burst(a, 2)  # warm-up (cuBLAS handles, clocks)
    torch.cuda.synchronize()
    clock = decoding._Clock(torch.device("cuda"))
    t0 = clock.now()
    start, end = _burst(a, 20)
    t1 = clock.now()
    torch.cuda.synchronize()
    gpu_ms = start.elapsed_time(end)
    assert gpu_ms > 10  # the burst dominates anything else in the region
    assert 1e3 * (t1 - t0) >= 0.95 * gpu_ms, (1e3 * (t1 - t0), gpu_ms)


def test_round_timings_hold_the_target_forward_gpu_work():
    """Each target forward is followed by a known burst of GPU work; verify_ms must include it."""
    a = torch.randn(4096, 4096, device="cuda")
    bursts: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
    base = _sharp(4)
    target = ProtocolOnly(base, after_call=lambda: bursts.append(_burst(a, 8)))
    draft = ProtocolOnly(noisy_copy(base, 0.015, 5))
    _burst(a, 2)
    _, stats = speculative_generate(target, draft, PROMPT, 4, 0.0, 24, calibration_steps=0)
    torch.cuda.synchronize()
    gpu_ms = [s.elapsed_time(e) for s, e in bursts[1:]]  # bursts[0] follows the prefill
    assert len(gpu_ms) == len(stats.rounds) and min(gpu_ms) > 5
    for r, ms in zip(stats.rounds, gpu_ms, strict=True):
        assert r.verify_ms >= 0.95 * ms, (r.verify_ms, ms)
    assert stats.decode_s * 1e3 >= 0.95 * sum(gpu_ms)


# --- the compiled engine on CUDA: CUDA graphs, one synchronisation per round ------------------


@pytest.mark.parametrize("k", [1, 4, 8])
def test_compiled_graphs_decode_the_targets_greedy_output(bundled_fp32, k):
    """CUDA-graph steps (reduce-overhead) through the resident loop give the eager target's tokens."""
    from specviz.engine.models import compiled

    target, draft, tok = bundled_fp32
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    prompt = torch.tensor(tok.encode("import os\nimport sys\n\n\ndef main(argv):\n    "))
    base, _ = generate_target_only(target, prompt, 48)
    got, stats = speculative_generate(ct, cd, prompt, k, 0.0, 48)
    assert ct.fallback is None and cd.fallback is None
    assert got.tolist() == base.tolist()
    assert all(r.draft_ms > 0 and r.verify_ms > 0 for r in stats.rounds)


def test_the_resident_round_synchronises_only_to_read_its_verdict(bundled_fp32, monkeypatch):
    """With CUDA's sync debug mode set to error, any synchronising call in the loop raises, except the
    round's one read (resident.to_host), which lifts the mode for its own call and is counted."""
    from specviz.engine.decoding import resident
    from specviz.engine.models import compiled

    target, draft, tok = bundled_fp32
    ct, cd = compiled.compile_steps(target), compiled.compile_steps(draft)
    prompt = torch.tensor(tok.encode("def f(x):\n    return"))
    speculative_generate(ct, cd, prompt, 4, 1.0, 32, torch.Generator("cuda").manual_seed(0), calibration_steps=0)
    reads = []
    original = resident.to_host

    def allowed(x):
        torch.cuda.set_sync_debug_mode(0)
        try:
            reads.append(1)
            return original(x)
        finally:
            torch.cuda.set_sync_debug_mode("error")

    monkeypatch.setattr(resident, "to_host", allowed)
    rounds = []
    real_records = resident._records

    def records(*args):  # the copy after the loop is allowed to synchronise
        torch.cuda.set_sync_debug_mode(0)
        out = real_records(*args)
        rounds.append(len(out))
        return out

    monkeypatch.setattr(resident, "_records", records)
    g = torch.Generator("cuda").manual_seed(1)
    torch.cuda.set_sync_debug_mode("error")
    try:
        speculative_generate(ct, cd, prompt, 4, 1.0, 32, g, calibration_steps=0)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert rounds and len(reads) == rounds[0]

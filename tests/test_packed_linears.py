"""The oneDNN-packed linear path of cached CPU decoding (specviz.models.gpt.PackedLinears).

The small test models sit below ``PACK_MIN_BYTES``, so these tests lower the threshold to
force packing and check the packed path against the plain ``nn.Linear`` full-recompute
forward (the oracle), against greedy target-only decoding, and that a pack never outlives
the weights it was made from.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import pytest
import torch
import torch.nn as nn
from _models import build_gpt

from specviz import decoding
from specviz.models import gpt
from specviz.models.gpt import GPT, GPTConfig

pytestmark = [
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.skipif(not gpt.onednn_available(), reason="this PyTorch build has no oneDNN linear op"),
]

CFG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=128)


def _sharp(seed: int) -> GPT:
    """Weights drawn with std 0.1, so outputs vary with context (a cache bug cannot hide)."""
    return build_gpt(CFG, seed, std=0.1)


@pytest.fixture
def force_packing(monkeypatch):
    monkeypatch.setattr(gpt, "PACK_MIN_BYTES", 0)


@pytest.fixture
def count_packed_calls(monkeypatch):
    """Count calls of the oneDNN op, so a test can tell the packed path actually ran."""
    calls = {"n": 0}
    original = gpt.PackedLinears.__call__

    def counting(self, layer, x, gelu=False):
        calls["n"] += 1
        return original(self, layer, x, gelu)

    monkeypatch.setattr(gpt.PackedLinears, "__call__", counting)
    return calls


@pytest.mark.parametrize("chunks", [[1] * 12, [5, 1, 3, 3], [12]])
def test_packed_cached_forward_matches_full_recompute(force_packing, count_packed_calls, chunks):
    model = _sharp(0)
    idx = torch.randint(0, 256, (1, sum(chunks)), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        full = model(idx)  # (1, T, V): nn.Linear, no cache
        model.setup_cache(1, CFG.block_size)
        parts, start = [], 0
        for n in chunks:
            parts.append(model(idx[:, start : start + n], start))
            start += n
    # qkv, proj, up, down per block and the head, per forward; plus the pack's one self-test product
    assert count_packed_calls["n"] == len(chunks) * (4 * CFG.n_layer + 1) + 1
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("k", range(1, 9))
def test_packed_greedy_speculative_equals_target_only(force_packing, k):
    target = _sharp(2)
    draft = copy.deepcopy(target)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.015)  # agrees often, not always
    prompt = torch.randint(0, 256, (9,), generator=torch.Generator().manual_seed(k))
    expected, _ = decoding.generate_target_only(target, prompt, 40)
    got, stats = decoding.speculative_generate(target, draft, prompt, k, 0.0, 40)
    assert torch.equal(got, expected)
    assert 0 < stats.accepted_total < sum(len(r.drafted) for r in stats.rounds)  # both outcomes happened


def test_pack_is_remade_when_weights_change(force_packing):
    model = _sharp(4)
    idx = torch.randint(0, 256, (1, 6), generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        model.setup_cache(1, CFG.block_size)
        before = model(idx, 0)
        first_pack = model._packed
    with torch.no_grad():
        model.blocks[0].mlp[0].weight.mul_(1.5)  # in place: same storage, new version
    with torch.inference_mode():
        model.setup_cache(1, CFG.block_size)
        after = model(idx, 0)
        oracle = model(idx)
    assert model._packed is not first_pack
    assert not torch.allclose(after, before, atol=1e-3)
    torch.testing.assert_close(after, oracle, atol=1e-4, rtol=1e-4)


def test_pack_follows_load_state_dict(force_packing):
    a, b = _sharp(6), _sharp(7)
    idx = torch.randint(0, 256, (1, 5), generator=torch.Generator().manual_seed(8))
    with torch.inference_mode():
        a.setup_cache(1, CFG.block_size)
        a(idx, 0)  # packs a's weights
    a.load_state_dict(b.state_dict())
    with torch.inference_mode():
        a.setup_cache(1, CFG.block_size)
        got = a(idx, 0)
        expected = b(idx)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_no_packing_with_autograd_or_other_dtypes(force_packing, count_packed_calls):
    model = _sharp(9)
    idx = torch.randint(0, 256, (1, 4), generator=torch.Generator().manual_seed(10))
    model.setup_cache(1, CFG.block_size)
    out = model(idx, 0)  # grad enabled: training-style call keeps nn.Linear (autograd works)
    out.sum().backward()
    assert model.blocks[0].attn.qkv.weight.grad is not None
    model64 = _sharp(9).to(torch.float64)
    model64.setup_cache(1, CFG.block_size)
    with torch.inference_mode():
        model64(idx, 0)
    assert count_packed_calls["n"] == 0
    assert model._packed is None and model64._packed is None


def test_threshold_keeps_small_models_on_f_linear(count_packed_calls):
    model = _sharp(11)  # 2 × 64 wide: far below PACK_MIN_BYTES
    assert model._linear_fp32_bytes < gpt.PACK_MIN_BYTES
    with torch.inference_mode():
        model.setup_cache(1, CFG.block_size)
        model(torch.zeros(1, 3, dtype=torch.long), 0)
    assert count_packed_calls["n"] == 0


def test_bundled_target_is_packed_and_draft_is_not():
    from specviz.models import load_pair

    target, draft, _ = load_pair("bundled", "cpu")
    assert target._linear_fp32_bytes >= gpt.PACK_MIN_BYTES > draft._linear_fp32_bytes
    with torch.inference_mode():
        assert isinstance(target._packed_linears(), gpt.PackedLinears)
        assert draft._packed_linears() is None


def _decode_and_oracle(model: GPT, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cached forward of ``idx`` from position 0, full-recompute forward): both (1, T, V)."""
    with torch.inference_mode():
        model.setup_cache(1, CFG.block_size)
        return model(idx, 0), model(idx)


IDX = torch.randint(0, 256, (1, 6), generator=torch.Generator().manual_seed(12))


def test_copies_and_pickles_leave_the_pack_behind(force_packing):
    model = _sharp(13)
    cached, oracle = _decode_and_oracle(model, IDX)
    assert model._packed is not None
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert clone._packed is None
        got, _ = _decode_and_oracle(clone, IDX)
        assert clone._packed is not None and clone._packed is not model._packed
        torch.testing.assert_close(got, cached)
    torch.testing.assert_close(cached, oracle, atol=1e-4, rtol=1e-4)


def test_writes_past_the_version_counter_need_invalidate_packs(force_packing):
    model = _sharp(14)
    _decode_and_oracle(model, IDX)
    model.blocks[0].mlp[0].weight.data.mul_(3.0)  # .data: the version counter does not move
    stale, oracle = _decode_and_oracle(model, IDX)
    assert not torch.allclose(stale, oracle, atol=1e-3)  # the documented limitation, shown
    model.invalidate_packs()
    fresh, oracle = _decode_and_oracle(model, IDX)
    torch.testing.assert_close(fresh, oracle, atol=1e-4, rtol=1e-4)


def test_train_mode_and_grad_forwards_drop_the_pack(force_packing):
    model = _sharp(15)
    _decode_and_oracle(model, IDX)
    model.train()
    assert model._packed is None
    model.eval()
    _decode_and_oracle(model, IDX)
    model(IDX)  # a grad-enabled (training-style) forward
    assert model._packed is None


def test_replaced_layer_runs_its_own_forward(force_packing):
    model = _sharp(16)
    _decode_and_oracle(model, IDX)
    new = nn.Linear(CFG.n_embd, CFG.n_embd, bias=True)  # unpacked, and with a bias
    model.blocks[1].attn.proj = new
    got, oracle = _decode_and_oracle(model, IDX)
    assert id(new) not in model._packed.by_layer  # the old pack is still valid for every other layer
    torch.testing.assert_close(got, oracle, atol=1e-4, rtol=1e-4)
    model.invalidate_packs()
    got, oracle = _decode_and_oracle(model, IDX)
    assert id(new) in model._packed.by_layer  # packed now, bias included
    torch.testing.assert_close(got, oracle, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("failure", ["raises", "wrong product"])
def test_a_failing_pack_switches_onednn_off_with_one_warning(force_packing, monkeypatch, failure):
    monkeypatch.setattr(gpt, "_ONEDNN_OFF", None)  # restored after the test
    real = gpt._pack_weight

    def broken(w):
        if failure == "raises":
            raise RuntimeError("oneDNN: unsupported")
        return real(w * 2)

    monkeypatch.setattr(gpt, "_pack_weight", broken)
    model = _sharp(17)
    with pytest.warns(UserWarning, match="switched off"):
        got, oracle = _decode_and_oracle(model, IDX)
    torch.testing.assert_close(got, oracle, atol=1e-4, rtol=1e-4)
    assert model._packed is None and not gpt.onednn_available()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        _decode_and_oracle(_sharp(18), IDX)


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")  # torch's own note on leaving flags()
def test_onednn_flag_off_means_f_linear(force_packing, count_packed_calls):
    model = _sharp(19)
    with torch.backends.mkldnn.flags(enabled=False):
        got, oracle = _decode_and_oracle(model, IDX)
    assert count_packed_calls["n"] == 0
    torch.testing.assert_close(got, oracle, atol=1e-4, rtol=1e-4)


def test_bundled_target_packed_forward_matches_full_recompute():
    from specviz.models import load_pair

    target, _, _ = load_pair("bundled", "cpu")
    idx = torch.randint(0, 256, (1, 40), generator=torch.Generator().manual_seed(20))
    with torch.inference_mode():
        target.setup_cache(1, target.cfg.block_size)
        prefix = target(idx[:, :31], 0)  # (1, 31, V)
        block = target(idx[:, 31:], 31)  # a K + 1 = 9 token verify block
        step = target(idx[:, :1], 40)  # and a single step (position 40 attends to 0..40)
        assert target._packed is not None
        full = target(idx)
    torch.testing.assert_close(torch.cat([prefix, block], 1), full, atol=2e-4, rtol=1e-4)
    assert step.shape == (1, 1, 256)

"""The oneDNN-packed linears of cached CPU decoding (specviz.engine.models.packed), applied from outside the model.

The small test models sit below ``PACK_MIN_BYTES``, so most tests lower the threshold to
force packing. The oracle is an unpacked copy of the same model (``packed.remove`` on a
deep copy: plain ``nn.Linear`` and ``nn.GELU``, full recompute). The tests check the packed
path against it and against greedy target-only decoding, that a pack never outlives the
weights it was made from, that failures and untested torch releases switch packing off
with one warning, and that the private ops are fenced in packed.py alone.
"""

from __future__ import annotations

import copy
import pickle
import re
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from _models import build_gpt, noisy_copy
from _tiers import quick_where

from specviz.engine import decoding
from specviz.engine.models import packed
from specviz.engine.models.gpt import GPT, GPTConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

needs_onednn = pytest.mark.skipif(
    packed._why_unsupported() is not None, reason=f"packing is off here: {packed._why_unsupported()}"
)

CFG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=128)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch):
    """Each test starts with packing on and the self-test not yet run (restored afterwards)."""
    monkeypatch.setattr(packed, "_state", packed._State())


@pytest.fixture
def force_packing(monkeypatch):
    monkeypatch.setattr(packed, "PACK_MIN_BYTES", 0)


@pytest.fixture
def packed_calls(monkeypatch):
    """Count the oneDNN product calls of the layers (the self-test is marked as done, so it adds none)."""
    calls = {"plain": 0, "gelu": 0}
    original = packed._packed_linear

    def counting(x, w, bias, gelu):
        calls["gelu" if gelu else "plain"] += 1
        return original(x, w, bias, gelu)

    monkeypatch.setattr(packed, "_packed_linear", counting)
    packed._state.tested = True
    return calls


def _sharp(seed: int) -> GPT:
    """Weights drawn with std 0.1 (outputs vary with context: a cache bug cannot hide), then packed."""
    return packed.apply(build_gpt(CFG, seed, std=0.1))


def _layers(model: nn.Module) -> list[packed.PackedLinear]:
    return [m for m in model.modules() if isinstance(m, packed.PackedLinear)]


def _oracle(model: nn.Module, idx: torch.Tensor) -> torch.Tensor:
    """Full recompute by an unpacked copy of ``model``: plain nn.Linear and nn.GELU."""
    plain = packed.remove(copy.deepcopy(model))
    assert not _layers(plain)
    with torch.inference_mode():
        return plain(idx)


def _cached(model: GPT, idx: torch.Tensor) -> torch.Tensor:
    """Cached forward of ``idx`` (1, T) from position 0: (1, T, V)."""
    with torch.inference_mode():
        model.setup_cache(1, CFG.block_size)
        return model(idx, 0)


IDX = torch.randint(0, 256, (1, 6), generator=torch.Generator().manual_seed(12))


# --- applying ---------------------------------------------------------------------------------


@needs_onednn
def test_apply_swaps_modules_and_keeps_names_parameters_and_tying(force_packing, tmp_path):
    model = build_gpt(CFG, 0, std=0.1)
    params = dict(model.named_parameters())
    keys = list(model.state_dict())
    assert packed.apply(model) is model
    layers = _layers(model)
    assert len(layers) == 4 * CFG.n_layer + 1  # qkv, proj, up, down per block, and the head
    assert [m.gelu for m in layers].count(True) == CFG.n_layer  # each MLP's Linear → GELU is fused
    assert all(isinstance(blk.mlp[1], nn.Identity) for blk in model.blocks)
    assert dict(model.named_parameters()) == params and list(model.state_dict()) == keys
    assert model.head.weight is model.wte.weight
    packed.apply(model)
    assert len(_layers(model)) == len(layers)  # idempotent
    model.save(tmp_path)  # persistence is unchanged
    assert list(GPT.load(tmp_path).state_dict()) == keys
    packed.remove(model)
    assert not _layers(model) and all(isinstance(blk.mlp[1], nn.GELU) for blk in model.blocks)
    assert dict(model.named_parameters()) == params and model.head.weight is model.wte.weight


def test_threshold_keeps_small_models_on_f_linear():
    model = build_gpt(CFG, 11, std=0.1)  # 2 × 64 wide: far below PACK_MIN_BYTES
    assert packed.linear_fp32_bytes(model) < packed.PACK_MIN_BYTES
    packed.apply(model)
    assert not _layers(model)


def test_models_not_on_cpu_fp32_are_left_alone(force_packing):
    model = build_gpt(CFG, 11, std=0.1).to(torch.float64)
    packed.apply(model)
    assert not _layers(model)


def test_bundled_target_is_packed_and_draft_is_not():
    from specviz.engine.models import load_pair

    target, draft, _ = load_pair("bundled", "cpu")
    assert packed.linear_fp32_bytes(target) >= packed.PACK_MIN_BYTES > packed.linear_fp32_bytes(draft)
    assert not _layers(draft)
    if packed._why_unsupported() is None:
        assert _layers(target)
        _cached(target, IDX)
        assert packed.holds_packs(target)
    else:  # an untested torch: loading still works, with F.linear everywhere
        assert not _layers(target)


def test_gpt_module_knows_nothing_of_onednn():
    """The private ops are fenced in packed.py: no other library file names them."""
    gpt_source = (ROOT / "specviz" / "engine" / "models" / "gpt.py").read_text()
    assert not re.search(r"mkldnn|onednn|_linear_pointwise|PackedLinear", gpt_source, re.IGNORECASE)
    users = [p.name for p in (ROOT / "specviz").rglob("*.py") if "torch.ops.mkldnn" in p.read_text()]
    assert users == ["packed.py"]
    fenced = (ROOT / "specviz" / "engine" / "models" / "packed.py").read_text()
    calls = re.findall(r"^\s+return (torch\.ops\.mkldnn\.\w+)\(", fenced, re.MULTILINE)
    assert calls == ["torch.ops.mkldnn._reorder_linear_weight", "torch.ops.mkldnn._linear_pointwise"]  # once each
    # the tensor's private version counter is read in one place, _weight_version
    assert [line.strip() for line in fenced.splitlines() if "._version" in line and "``" not in line] == [
        "return w._version"
    ]


# --- the packed path agrees with the oracle ----------------------------------------------------


@pytest.mark.slow
@needs_onednn
@pytest.mark.parametrize("chunks", [[1] * 12, [5, 1, 3, 3], [12]])
def test_packed_cached_forward_matches_full_recompute(force_packing, packed_calls, chunks):
    model = _sharp(0)
    idx = torch.randint(0, 256, (1, sum(chunks)), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        model.setup_cache(1, CFG.block_size)
        parts, start = [], 0
        for n in chunks:
            parts.append(model(idx[:, start : start + n], start))
            start += n
    # per forward: qkv, proj, down per block and the head plain; up with the fused GELU
    assert packed_calls == {"plain": len(chunks) * (3 * CFG.n_layer + 1), "gelu": len(chunks) * CFG.n_layer}
    torch.testing.assert_close(torch.cat(parts, dim=1), _oracle(model, idx), atol=1e-4, rtol=1e-4)


@pytest.mark.slow
@needs_onednn
@pytest.mark.parametrize("k", quick_where(list(range(1, 9)), lambda k: k in (1, 4, 8)))
def test_packed_greedy_speculative_equals_target_only(force_packing, k):
    target = _sharp(2)
    draft = packed.apply(noisy_copy(target, 0.015, 3))  # agrees often, not always
    assert _layers(draft)
    prompt = torch.randint(0, 256, (9,), generator=torch.Generator().manual_seed(k))
    expected, _ = decoding.generate_target_only(packed.remove(copy.deepcopy(target)), prompt, 40)
    got, stats = decoding.speculative_generate(target, draft, prompt, k, 0.0, 40)
    assert packed.holds_packs(target) and packed.holds_packs(draft)
    assert torch.equal(got, expected)
    assert 0 < stats.accepted_total < sum(len(r.drafted) for r in stats.rounds)  # both outcomes happened


@pytest.mark.slow
@needs_onednn
def test_bundled_target_packed_forward_matches_full_recompute():
    from specviz.engine.models import load_pair

    target, _, _ = load_pair("bundled", "cpu")
    idx = torch.randint(0, 256, (1, 40), generator=torch.Generator().manual_seed(20))
    with torch.inference_mode():
        target.setup_cache(1, target.cfg.block_size)
        prefix = target(idx[:, :31], 0)  # (1, 31, V)
        block = target(idx[:, 31:], 31)  # a K + 1 = 9 token verify block
        step = target(idx[:, :1], 40)  # and a single step (position 40 attends to 0..40)
    assert packed.holds_packs(target)
    torch.testing.assert_close(torch.cat([prefix, block], 1), _oracle(target, idx), atol=2e-4, rtol=1e-4)
    assert step.shape == (1, 1, 256)


# --- a pack never outlives its weights ---------------------------------------------------------


@pytest.mark.slow
@needs_onednn
def test_pack_is_remade_when_weights_change(force_packing):
    model = _sharp(4)
    before = _cached(model, IDX)
    up = model.blocks[0].mlp[0]
    first_pack, other_pack = up._pack, model.blocks[1].mlp[0]._pack
    with torch.no_grad():
        up.weight.mul_(1.5)  # in place: same storage, new version
    after = _cached(model, IDX)
    assert up._pack is not first_pack and model.blocks[1].mlp[0]._pack is other_pack  # only that layer repacked
    assert not torch.allclose(after, before, atol=1e-3)
    torch.testing.assert_close(after, _oracle(model, IDX), atol=1e-4, rtol=1e-4)


@needs_onednn
def test_pack_follows_load_state_dict(force_packing):
    a, b = _sharp(6), _sharp(7)
    _cached(a, IDX)  # packs a's weights
    a.load_state_dict(b.state_dict())
    torch.testing.assert_close(_cached(a, IDX), _oracle(b, IDX), atol=1e-4, rtol=1e-4)


@needs_onednn
def test_no_packing_with_autograd_or_other_dtypes(force_packing, packed_calls):
    model = _sharp(9)
    model.setup_cache(1, CFG.block_size)
    out = model(IDX, 0)  # grad enabled: training-style call keeps F.linear (autograd works)
    out.sum().backward()
    assert model.blocks[0].attn.qkv.weight.grad is not None
    model64 = _sharp(9).to(torch.float64)  # packed while fp32, then cast
    model64.setup_cache(1, CFG.block_size)
    with torch.inference_mode():
        model64(IDX, 0)
    assert packed_calls == {"plain": 0, "gelu": 0}
    assert not packed.holds_packs(model) and not packed.holds_packs(model64)


@needs_onednn
def test_copies_and_pickles_leave_the_pack_behind(force_packing):
    model = _sharp(13)
    cached = _cached(model, IDX)
    assert packed.holds_packs(model)
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert _layers(clone) and not packed.holds_packs(clone)
        got = _cached(clone, IDX)
        assert packed.holds_packs(clone)
        assert clone.head._pack is not model.head._pack
        torch.testing.assert_close(got, cached)
    torch.testing.assert_close(cached, _oracle(model, IDX), atol=1e-4, rtol=1e-4)


@needs_onednn
def test_writes_past_the_version_counter_need_invalidate(force_packing):
    model = _sharp(14)
    _cached(model, IDX)
    model.blocks[0].mlp[0].weight.data.mul_(3.0)  # .data: the version counter does not move
    stale = _cached(model, IDX)
    assert not torch.allclose(stale, _oracle(model, IDX), atol=1e-3)  # the documented limitation, shown
    packed.invalidate(model)
    assert not packed.holds_packs(model)
    torch.testing.assert_close(_cached(model, IDX), _oracle(model, IDX), atol=1e-4, rtol=1e-4)


@needs_onednn
def test_train_mode_and_grad_forwards_drop_the_pack(force_packing):
    model = _sharp(15)
    _cached(model, IDX)
    model.train()
    assert not packed.holds_packs(model)
    model.eval()
    _cached(model, IDX)
    assert packed.holds_packs(model)
    model(IDX)  # a grad-enabled (training-style) forward
    assert not packed.holds_packs(model)


@needs_onednn
def test_replaced_layer_runs_its_own_forward_until_applied_again(force_packing):
    model = _sharp(16)
    _cached(model, IDX)
    new = nn.Linear(CFG.n_embd, CFG.n_embd, bias=True)  # unpacked, and with a bias
    model.blocks[1].attn.proj = new
    torch.testing.assert_close(_cached(model, IDX), _oracle(model, IDX), atol=1e-4, rtol=1e-4)
    assert model.blocks[1].attn.proj is new  # every other layer kept its pack
    packed.apply(model)
    proj = model.blocks[1].attn.proj
    assert isinstance(proj, packed.PackedLinear) and proj.bias is new.bias
    torch.testing.assert_close(_cached(model, IDX), _oracle(model, IDX), atol=1e-4, rtol=1e-4)
    assert proj._pack is not None  # packed now, bias included


# --- switching off: failures, flags, untested releases ------------------------------------------


@needs_onednn
@pytest.mark.parametrize("failure", ["pack raises", "wrong plain product", "wrong fused-GELU product"])
def test_a_failing_pack_or_self_test_switches_onednn_off_with_one_warning(force_packing, monkeypatch, failure):
    real_pack, real_linear = packed._pack_weight, packed._packed_linear

    def broken_pack(w):
        if failure == "pack raises":
            raise RuntimeError("oneDNN: unsupported")
        return real_pack(w * 2 if failure == "wrong plain product" else w)

    def tanh_gelu(x, w, bias, gelu):  # the approximate GELU instead of the exact one
        y = real_linear(x, w, bias, False)
        return torch.nn.functional.gelu(y, approximate="tanh") if gelu else y

    monkeypatch.setattr(packed, "_pack_weight", broken_pack)
    if failure == "wrong fused-GELU product":
        monkeypatch.setattr(packed, "_packed_linear", tanh_gelu)
    model = _sharp(17)
    match = {"pack raises": "unsupported", "wrong plain product": "plain product", "wrong fused-GELU product": "GELU"}
    with pytest.warns(UserWarning, match=f"switched off.*{match[failure]}"):
        got = _cached(model, IDX)
    torch.testing.assert_close(got, _oracle(model, IDX), atol=1e-4, rtol=1e-4)
    assert not packed.holds_packs(model) and not packed.available()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        _cached(_sharp(18), IDX)


def test_self_test_passes_on_this_build_and_covers_both_calls(monkeypatch):
    if packed._why_unsupported() is not None:
        pytest.skip(f"packing is off here: {packed._why_unsupported()}")
    seen = []
    real = packed._packed_linear
    monkeypatch.setattr(packed, "_packed_linear", lambda x, w, b, gelu: seen.append(gelu) or real(x, w, b, gelu))
    packed._self_test()
    assert sorted(seen) == [False, False, True, True]  # plain and fused GELU, each with and without bias


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")  # torch's own note on leaving flags()
@needs_onednn
def test_onednn_flag_off_means_f_linear(force_packing, packed_calls):
    model = _sharp(19)
    with torch.backends.mkldnn.flags(enabled=False):
        got = _cached(model, IDX)
    assert packed_calls == {"plain": 0, "gelu": 0}
    torch.testing.assert_close(got, _oracle(model, IDX), atol=1e-4, rtol=1e-4)


def test_untested_torch_release_switches_packing_off_with_one_warning(force_packing, monkeypatch):
    """Outside TESTED_TORCH the private ops are never called: apply warns once and changes nothing."""
    monkeypatch.setattr(packed, "TESTED_TORCH", ((1, 0),))

    def never(*args):
        raise AssertionError("a private op was called on an untested torch release")

    monkeypatch.setattr(packed, "_pack_weight", never)
    monkeypatch.setattr(packed, "_packed_linear", never)
    model = build_gpt(CFG, 21, std=0.1)
    with pytest.warns(UserWarning, match=rf"switched off.*torch {re.escape(torch.__version__)} is outside.*1\.0\.x"):
        packed.apply(model)
    assert not _layers(model) and not packed.available()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        packed.apply(build_gpt(CFG, 22, std=0.1))
    out, _ = decoding.generate_target_only(model, IDX[0], 5)  # decoding works on F.linear
    assert out.shape == (5,)


@pytest.mark.parametrize(("version", "release"), [("2.13.0+cpu", (2, 13)), ("2.11.0+cu130", (2, 11)), ("x", (0, 0))])
def test_torch_release_parsing(version, release):
    assert packed._torch_release(version) == release

"""Tests of the byte-level GPT's static KV cache and of specviz.engine.decoding (docs/design.md §1).

The oracle is nanoGPT's full-recompute decoding: ``model(seq[None])[0, -1]`` at every
step, no cache. Against it we check the cached target-only loop, the cache's
overwrite-by-position semantics (what makes a rejection free), greedy exactness of
speculative decoding for several K, the structure of the per-round records, the
losslessness of sampling at temperature 1 (χ² goodness of fit), the derived
statistics, determinism, argument errors and model persistence; that the engine uses
nothing of a model beyond :class:`specviz.engine.models.Decodable`; and that every timed
region reads the CUDA-synchronising clock.

All models are tiny, randomly initialised from fixed seeds and run on one CPU
thread (the default two threads contend with any other CPU job and run ~10× slower
for models this small).
"""

from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import asdict
from types import SimpleNamespace

import pytest
import torch
from _models import ProtocolOnly, check_lossless, noisy_copy
from _models import build_gpt as _build
from _tiers import quick_where

from specviz.core import theory
from specviz.engine import decoding, sampling
from specviz.engine.decoding import (
    GenerationStats,
    RoundRecord,
    first_divergence,
    generate_target_only,
    speculative_generate,
)
from specviz.engine.models import GPT, ByteTokenizer, Decodable, GPTConfig, load_pair, resolve_device

PROMPTS = {
    "code": torch.tensor(list(b"def f(x):\n    return")),
    "range": torch.arange(10),
    "one": torch.tensor([200]),  # a single token: nothing to prefill, the prompt is all pending
}
KS = [1, 2, 3, 4, 8]
LENGTHS = [1, 7, 50]  # 7 and 50 are not multiples of K + 1 for most K


# ------------------------------------------------------------------------------------------
# fixtures
# ------------------------------------------------------------------------------------------


pytestmark = pytest.mark.usefixtures("one_torch_thread")


TARGET_CFG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=256)
DRAFT_CFG = GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=256)


@pytest.fixture(scope="module")
def models() -> dict[str, GPT]:
    target = _build(TARGET_CFG, 0)
    sharp = _build(TARGET_CFG, 2, std=0.1)
    return {
        "target": target,  # default init
        "draft": _build(DRAFT_CFG, 4),  # a weak, unrelated draft (seed 4: it still agrees at every depth sometimes)
        "sharp": sharp,  # varied outputs
        "sharp_draft": noisy_copy(sharp, 0.015, 3),  # accepts some, rejects some
    }


#: (target, draft) pairs: an unrelated random draft, a noisy copy, an equal-weights copy and
#: the very same module (draft and target then share one KV cache).
PAIRS = {
    "random": ("target", "draft"),
    "noisy": ("sharp", "sharp_draft"),
    "same_weights": ("sharp", None),
    "same_object": ("sharp", "sharp"),
}


def _pair(models, name):
    t, d = PAIRS[name]
    target = models[t]
    draft = copy.deepcopy(target) if d is None else models[d]
    return target, draft


@pytest.fixture(scope="module")
def reference(models):
    """Greedy target-only output per (model, prompt, length), computed once."""
    cache: dict = {}

    def get(model_name: str, prompt_name: str, n: int) -> torch.Tensor:
        key = (model_name, prompt_name, n)
        if key not in cache:
            cache[key], _ = generate_target_only(models[model_name], PROMPTS[prompt_name], n)
        return cache[key]

    return get


def _oracle_greedy(model: GPT, prompt: torch.Tensor, n: int) -> torch.Tensor:
    """nanoGPT's generate at temperature 0: full recompute, no cache."""
    seq = prompt.clone()
    with torch.no_grad():
        for _ in range(n):
            nxt = model(seq[None])[0, -1].argmax()
            seq = torch.cat([seq, nxt.view(1)])
    return seq[prompt.numel() :]


def _check_rounds(out: torch.Tensor, stats: GenerationStats, n: int, k: int, greedy: bool) -> None:
    """Structure every speculative result must have (exact length, round records)."""
    assert out.dtype == torch.long and out.ndim == 1 and out.numel() == n
    assert stats.k == k and stats.new_tokens == n and stats.rounds
    emitted = [t for r in stats.rounds for t in r.emitted]
    assert emitted[:n] == out.tolist()
    assert len(emitted) - len(stats.rounds[-1].emitted) < n, "a round ran after max_new_tokens was reached"
    for r in stats.rounds:
        a = r.accepted
        assert len(r.drafted) == k and 0 <= a <= k
        assert all(0 <= t < 256 for t in r.drafted + r.emitted)
        assert len(r.emitted) == a + 1 and r.emitted[:a] == r.drafted[:a]
        verified = min(a + 1, k)
        assert len(r.accept_mask) == len(r.overlap) == verified
        assert r.accept_mask == [True] * a + ([False] if a < k else [])
        assert r.bonus == (a == k)
        assert all(-1e-6 <= x <= 1 + 1e-6 for x in r.overlap)
        if greedy:  # one-hot p and q: the overlap is 1 exactly when the draft is the argmax
            assert [x == 1.0 for x in r.overlap] == r.accept_mask
        assert min(r.draft_ms, r.verify_ms, r.other_ms) >= 0


# ------------------------------------------------------------------------------------------
# 1. cached decoding == full recompute
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("model_name", ["target", "sharp"])
@pytest.mark.parametrize("prompt_name", list(PROMPTS))
def test_greedy_target_only_equals_full_recompute_oracle(models, model_name, prompt_name):
    model, prompt = models[model_name], PROMPTS[prompt_name]
    expected = _oracle_greedy(model, prompt, 40)
    for n in (1, 13, 40):
        out, stats = generate_target_only(model, prompt, n)
        assert out.dtype == torch.long and out.shape == (n,)
        assert out.tolist() == expected[:n].tolist()
        assert stats.k == 0 and stats.new_tokens == n and stats.rounds == []


@pytest.mark.parametrize("cache_len", [None, 40])
def test_cached_chunked_forward_matches_full_forward(models, cache_len):
    model = models["sharp"]
    seq = torch.randint(0, 256, (36,), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model(seq[None])[0]  # (T, V)
        model.setup_cache(1, cache_len)
        chunks, pos = [], 0
        for size in [1, 1, 4, 1, 7, 2, 1, 1, 10, 3, 5]:  # single tokens and blocks, 36 in all
            chunks.append(model(seq[None, pos : pos + size], pos)[0])
            pos += size
    assert pos == seq.numel()
    torch.testing.assert_close(torch.cat(chunks), full, atol=1e-5, rtol=0)


def test_cache_bound_is_enforced(models):
    model = models["target"]
    model.setup_cache(1, 8)
    with torch.no_grad():
        model(torch.zeros(1, 8, dtype=torch.long), 0)  # positions 0..7 fit
        with pytest.raises(ValueError, match="position 8"):
            model(torch.zeros(1, 1, dtype=torch.long), 8)
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 257, dtype=torch.long))


# ------------------------------------------------------------------------------------------
# 2. overwrite by absolute position (a rejection needs no rollback)
# ------------------------------------------------------------------------------------------


def test_rewriting_at_an_earlier_start_equals_fresh_forward(models):
    model = models["sharp"]
    g = torch.Generator().manual_seed(1)
    old = torch.randint(0, 256, (30,), generator=g)
    new_tail = torch.randint(0, 256, (8,), generator=g)
    more = torch.randint(0, 256, (5,), generator=g)
    with torch.no_grad():
        model.setup_cache(1, 64)
        model(old[None, :20], 0)
        model(old[None, 20:], 20)  # the cache now holds old[0..29]
        # rewrite positions 12..19; the stale entries 20..29 must be ignored
        got = model(new_tail[None], 12)[0]
        seq = torch.cat([old[:12], new_tail])
        torch.testing.assert_close(got, model(seq[None])[0, 12:], atol=1e-5, rtol=0)
        # continue after the rewrite one token at a time, then with a block
        seq2 = torch.cat([seq, more])
        steps = [model(more[None, i : i + 1], 20 + i)[0] for i in range(2)]
        steps.append(model(more[None, 2:], 22)[0])
        torch.testing.assert_close(torch.cat(steps), model(seq2[None])[0, 20:], atol=1e-5, rtol=0)
        # a single token written far back sees only the positions before it
        one = model(torch.tensor([[7]]), 5)[0, -1]
        torch.testing.assert_close(one, model(torch.cat([old[:5], torch.tensor([7])])[None])[0, -1], atol=1e-5, rtol=0)


def test_rejected_draft_block_is_overwritten(models):
    """A speculative round by hand: verify a block, keep a prefix, write the next block over the rest."""
    model = models["sharp"]
    g = torch.Generator().manual_seed(2)
    prefix = torch.randint(0, 256, (10,), generator=g)
    drafts = torch.randint(0, 256, (5,), generator=g)
    correction = torch.tensor([3])
    nxt = torch.randint(0, 256, (5,), generator=g)
    with torch.no_grad():
        model.setup_cache(1, 32)
        model(prefix[None, :-1], 0)
        model(torch.cat([prefix[-1:], drafts])[None], 9)  # positions 9..14
        accepted = 2  # keep drafts[:2]; correction at position 12 replaces drafts[2]
        got = model(torch.cat([correction, nxt])[None], 10 + accepted)[0]
        seq = torch.cat([prefix, drafts[:accepted], correction, nxt])
        torch.testing.assert_close(got, model(seq[None])[0, 10 + accepted :], atol=1e-5, rtol=0)


# ------------------------------------------------------------------------------------------
# 3 + 4. greedy exactness and round structure
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pair", "k"),
    # the quick tier: every K on the pair that rejects at every depth, K = 4 on the others
    quick_where(
        [(p, k) for k in KS for p in PAIRS], lambda case: case[1] == 4 or (case[0] == "noisy" and case[1] in (1, 8))
    ),
)
def test_greedy_speculative_equals_target_greedy(models, reference, pair, k):
    target, draft = _pair(models, pair)
    model_name = PAIRS[pair][0]
    for prompt_name, prompt in PROMPTS.items():
        for n in LENGTHS:
            out, stats = speculative_generate(target, draft, prompt, k, 0.0, n)
            assert out.tolist() == reference(model_name, prompt_name, n).tolist(), (prompt_name, n)
            _check_rounds(out, stats, n, k, greedy=True)
            if pair in ("same_weights", "same_object"):  # every draft is the target's own argmax
                assert all(r.accepted == k for r in stats.rounds)
                assert all(len(r.emitted) == k + 1 for r in stats.rounds[:-1])
                assert len(stats.rounds) == math.ceil(n / (k + 1))
                assert stats.alpha_hat == 1.0 and stats.rejected_rounds == 0
                assert stats.per_position_acceptance == [1.0] * k
                if n % (k + 1) == 0:
                    assert stats.mean_tokens == k + 1


def test_weak_draft_exercises_rejections(models):
    """The exactness grid above is only meaningful if rejections at every depth happen."""
    for pair in ("random", "noisy"):
        target, draft = _pair(models, pair)
        _, stats = speculative_generate(target, draft, PROMPTS["code"], 4, 0.0, 60)
        accepted = {r.accepted for r in stats.rounds}
        assert 0 in accepted and 4 in accepted and accepted & {1, 2, 3}, (pair, accepted)


@pytest.mark.slow
@pytest.mark.parametrize("pair", ["random", "noisy"])
@pytest.mark.parametrize("k", [1, 3, 4])
def test_draft_cache_follows_the_sequence(models, pair, k):
    """Greedy drafts are the draft model's own full-recompute argmax continuation of the text so far.

    Greedy exactness holds whatever the draft proposes, so it cannot see a draft cache that
    is out of step after a rejection or after an all-accepted round; this can.
    """
    target, draft = _pair(models, pair)
    prompt = PROMPTS["code"]
    _, stats = speculative_generate(target, draft, prompt, k, 0.0, 40)
    seq = prompt.clone()
    with torch.no_grad():
        for r in stats.rounds:
            ctx = seq
            for x in r.drafted:
                assert x == int(draft(ctx[None])[0, -1].argmax())
                ctx = torch.cat([ctx, torch.tensor([x])])
            seq = torch.cat([seq, torch.tensor(r.emitted)])


def test_overlaps_match_full_recompute_at_temperature_one(models):
    """Each verified position's Σ min(p, q) equals the one from both models' full forwards."""
    target, draft = _pair(models, "noisy")
    prompt, k = PROMPTS["code"], 3
    g = torch.Generator().manual_seed(3)
    _, stats = speculative_generate(target, draft, prompt, k, 1.0, 40, generator=g)
    assert {r.accepted for r in stats.rounds} >= {0, k}
    seq = prompt.clone()
    with torch.no_grad():
        for r in stats.rounds:
            ctx = torch.cat([seq, torch.tensor(r.drafted)])
            n = seq.numel()
            p = torch.softmax(target(ctx[None])[0, n - 1 : n - 1 + k], -1)  # (K, V)
            q = torch.softmax(draft(ctx[None])[0, n - 1 : n - 1 + k], -1)
            want = sampling.overlap(p, q)[: len(r.overlap)]
            torch.testing.assert_close(torch.tensor(r.overlap), want, atol=1e-5, rtol=0)
            seq = torch.cat([seq, torch.tensor(r.emitted)])


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 3, 5])
def test_round_structure_at_temperature_one(models, k):
    target, draft = _pair(models, "noisy")
    for seed, n in enumerate([1, 2, 13, 40]):
        g = torch.Generator().manual_seed(seed)
        out, stats = speculative_generate(target, draft, PROMPTS["code"], k, 1.0, n, generator=g)
        _check_rounds(out, stats, n, k, greedy=False)


def test_target_only_at_temperature_one_returns_exact_length(models):
    g = torch.Generator().manual_seed(0)
    out, _ = generate_target_only(models["sharp"], PROMPTS["range"], 23, 1.0, g)
    assert out.dtype == torch.long and out.shape == (23,)
    assert int(out.min()) >= 0 and int(out.max()) < 256


# ------------------------------------------------------------------------------------------
# 5. lossless at temperature 1
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_speculative_sampling_is_lossless():
    """χ² goodness of fit of the first token and pair against the target (tests/_models.py)."""
    check_lossless("cpu")


# ------------------------------------------------------------------------------------------
# 6. statistics
# ------------------------------------------------------------------------------------------


def _same(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_stats_agree_with_rounds_and_theory(models, temperature):
    target, draft = _pair(models, "noisy")
    k = 4
    g = torch.Generator().manual_seed(5)
    _, s = speculative_generate(target, draft, PROMPTS["code"], k, temperature, 60, generator=g)
    rounds = s.rounds
    a_tot = sum(r.accepted for r in rounds)
    r_tot = sum(r.accepted < k for r in rounds)
    assert s.accepted_total == a_tot and s.rejected_rounds == r_tot
    assert _same(s.alpha_hat, a_tot / (a_tot + r_tot))
    for i, a_i in enumerate(s.per_position_acceptance, start=1):
        reached = sum(r.accepted >= i - 1 for r in rounds)
        passed = sum(r.accepted >= i for r in rounds)
        assert _same(a_i, passed / reached if reached else float("nan")), i
    assert len(s.per_position_acceptance) == k
    assert _same(s.mean_tokens, sum(len(r.emitted) for r in rounds) / len(rounds))
    overlaps = [x for r in rounds for x in r.overlap]
    assert _same(s.alpha_overlap, sum(overlaps) / len(overlaps))

    assert s.t_target_ms > 0 and s.t_draft_ms > 0 and s.t_verify_ms > 0
    assert _same(s.c, s.t_target_ms / s.t_draft_ms) and 0 < s.c < math.inf
    assert s.v >= 0 and _same(s.v, max(0.0, (s.t_verify_ms / s.t_target_ms - 1) / k))
    assert s.o >= 0
    assert _same(s.predicted_speedup(), float(theory.speedup(s.alpha_hat, s.c, k)))
    assert _same(s.predicted_speedup(True), float(theory.speedup(s.alpha_hat, s.c, k, s.v, s.o)))
    assert s.decode_s > 0 and s.prefill_ms >= 0
    assert _same(s.tokens_per_s, s.new_tokens / s.decode_s) and s.new_tokens == 60


def test_stats_from_hand_made_rounds():
    def rnd(a: int, k: int = 3) -> RoundRecord:
        return RoundRecord(
            drafted=[1] * k,
            accepted=a,
            emitted=[1] * (a + 1),
            accept_mask=[True] * a + ([False] if a < k else []),
            overlap=[0.5] * min(a + 1, k),
            draft_ms=2.0,
            verify_ms=3.0,
            other_ms=0.5,
        )

    s = GenerationStats(
        k=3,
        temperature=1.0,
        new_tokens=14,
        decode_s=0.5,
        prefill_ms=1.0,
        t_target_ms=2.0,
        t_draft_ms=0.5,
        t_verify_ms=3.0,
        rounds=[rnd(a) for a in (3, 0, 1, 3, 2)],
    )
    assert s.accepted_total == 9 and s.rejected_rounds == 3
    assert s.alpha_hat == pytest.approx(0.75)
    assert s.per_position_acceptance == pytest.approx([4 / 5, 3 / 4, 2 / 3])
    assert s.mean_tokens == pytest.approx(2.8)
    assert s.alpha_overlap == pytest.approx(0.5)
    assert s.c == pytest.approx(4.0)
    assert s.v == pytest.approx((3.0 / 2.0 - 1) / 3)
    assert s.o == pytest.approx((2.0 + 3.0 + 0.5 - 3.0 - 3 * 0.5) / 2.0)  # (T_round − T_verify − K·T_q) / T_p
    assert s.tokens_per_s == pytest.approx(28.0)
    assert s.predicted_speedup() == pytest.approx(float(theory.speedup(0.75, 4.0, 3)))

    never = GenerationStats(
        k=3,
        temperature=1.0,
        new_tokens=2,
        decode_s=1.0,
        prefill_ms=0.0,
        t_target_ms=1.0,
        t_draft_ms=1.0,
        t_verify_ms=1.0,
        rounds=[rnd(0), rnd(0)],
    )
    assert never.alpha_hat == 0.0 and never.mean_tokens == 1.0
    ppa = never.per_position_acceptance
    assert ppa[0] == 0.0 and math.isnan(ppa[1]) and math.isnan(ppa[2])

    empty = GenerationStats(k=0, temperature=0.0, new_tokens=1, decode_s=1.0, prefill_ms=0.0, t_target_ms=1.0)
    assert math.isnan(empty.alpha_hat) and math.isnan(empty.mean_tokens) and math.isnan(empty.alpha_overlap)
    assert empty.v == 0.0 and empty.o == 0.0


def test_target_only_stats(models):
    _, s = generate_target_only(models["target"], PROMPTS["code"], 20)
    assert s.k == 0 and s.rounds == [] and s.new_tokens == 20 and s.temperature == 0.0
    assert s.t_target_ms > 0 and s.decode_s > 0 and math.isnan(s.t_draft_ms)
    assert s.tokens_per_s == pytest.approx(20 / s.decode_s)


# ------------------------------------------------------------------------------------------
# 7. determinism
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_same_generator_seed_gives_same_output(models):
    target, draft = _pair(models, "noisy")

    def run(seed):
        out, s = speculative_generate(
            target, draft, PROMPTS["code"], 3, 1.0, 30, generator=torch.Generator().manual_seed(seed)
        )
        return out.tolist(), [(r.drafted, r.accepted, r.emitted) for r in s.rounds]

    assert run(7) == run(7)
    assert len({str(run(seed)) for seed in range(4)}) > 1  # the seed matters

    def base(seed):
        return generate_target_only(target, PROMPTS["code"], 30, 1.0, torch.Generator().manual_seed(seed))[0].tolist()

    assert base(7) == base(7)
    assert len({str(base(seed)) for seed in range(4)}) > 1


# ------------------------------------------------------------------------------------------
# 8. errors
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"prompt": torch.tensor([], dtype=torch.long)}, r"prompt must be a non-empty 1-D"),
        ({"prompt": torch.tensor([[1, 2, 3]])}, r"prompt must be a non-empty 1-D.*\(1, 3\)"),
        ({"max_new_tokens": 0}, r"max_new_tokens must be >= 1; got 0"),
        ({"max_new_tokens": -3}, r"max_new_tokens must be >= 1; got -3"),
        ({"temperature": -0.5}, r"temperature must be .*>= 0; got -0.5"),
        ({"temperature": float("nan")}, r"temperature .* got nan"),
        ({"temperature": float("inf")}, r"temperature .* got inf"),
        ({"k": 0}, r"k must be an integer >= 1; got 0"),
        ({"k": -2}, r"k must be an integer >= 1; got -2"),
        ({"k": 1.5}, r"k must be an integer >= 1; got 1.5"),
    ],
)
def test_invalid_arguments_raise_value_error(models, kwargs, pattern):
    args = {"prompt": PROMPTS["code"], "k": 2, "temperature": 0.0, "max_new_tokens": 5} | kwargs
    with pytest.raises(ValueError, match=pattern):
        speculative_generate(models["target"], models["draft"], **args)
    if "k" not in kwargs:
        with pytest.raises(ValueError, match=pattern):
            generate_target_only(models["target"], args["prompt"], args["max_new_tokens"], args["temperature"])


def test_context_length_check_names_the_numbers():
    target = _build(GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=16), 0)
    draft = _build(GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=16), 1)
    prompt = torch.arange(6)
    # 6 + 6 + 3 + 1 = 16 fits exactly; one more token does not
    out, _ = speculative_generate(target, draft, prompt, 3, 0.0, 6)
    assert out.numel() == 6
    with pytest.raises(ValueError, match=r"prompt \(6 tokens\) \+ max_new_tokens \(7\) \+ K \+ 1 = 17.*16"):
        speculative_generate(target, draft, prompt, 3, 0.0, 7)
    with pytest.raises(ValueError, match=r"= 17 .*16"):
        speculative_generate(target, draft, prompt, 4, 0.0, 6)
    # target-only has no drafts: 6 + 9 + 0 + 1 = 16 fits
    assert generate_target_only(target, prompt, 9)[0].numel() == 9
    with pytest.raises(ValueError, match=r"max_new_tokens \(10\).* = 17 .*16"):
        generate_target_only(target, prompt, 10)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present")
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_resolve_device_cuda_without_gpu(device):
    with pytest.raises(ValueError, match=rf"{device}.*no CUDA GPU"):
        resolve_device(device)
    assert resolve_device("auto") == torch.device("cpu")


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match=r"device must be .*'tpu'"):
        resolve_device("tpu")


def test_load_pair_without_weights(tmp_path, models):
    with pytest.raises(ValueError, match=r"no target/model.safetensors"):
        load_pair(str(tmp_path))
    models["target"].save(tmp_path / "target")
    with pytest.raises(ValueError, match=r"no draft/model.safetensors"):
        load_pair(str(tmp_path))
    models["draft"].save(tmp_path / "draft")
    target, draft, tok = load_pair(str(tmp_path))
    assert target.cfg == TARGET_CFG and draft.cfg == DRAFT_CFG and isinstance(tok, ByteTokenizer)


# ------------------------------------------------------------------------------------------
# 9. persistence and tokenizer
# ------------------------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path, models):
    from safetensors import safe_open

    model = models["sharp"]
    model.save(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["config.json", "model.safetensors"]
    assert json.loads((tmp_path / "config.json").read_text()) == asdict(model.cfg)
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:  # a safetensors file, not a pickle
        assert "head.weight" not in set(f.keys()) and "wte.weight" in set(f.keys())

    loaded = GPT.load(tmp_path)
    assert loaded.cfg == model.cfg and not loaded.training
    assert loaded.head.weight is loaded.wte.weight  # tying restored
    ref, got = model.state_dict(), loaded.state_dict()
    assert ref.keys() == got.keys()
    assert all(torch.equal(ref[name], got[name]) for name in ref)
    x = PROMPTS["code"][None]
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    a, _ = generate_target_only(loaded, PROMPTS["code"], 10)
    b, _ = generate_target_only(model, PROMPTS["code"], 10)
    assert torch.equal(a, b)


def test_load_with_mismatched_layer_count_is_value_error(tmp_path, models):
    models["draft"].save(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg | {"n_layer": 2}))
    with pytest.raises(ValueError, match="do not match config"):
        GPT.load(tmp_path)


def test_load_with_mismatched_width_is_value_error(tmp_path, models):
    models["draft"].save(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg | {"n_embd": 64}))
    with pytest.raises(ValueError):
        GPT.load(tmp_path)


@pytest.mark.parametrize("text", ["", "print('hello, world')\n", "héllo wörld ∑ 中文 🙂", "\x00\x7f\t"])
def test_byte_tokenizer_round_trip(text):
    tok = ByteTokenizer()
    ids = tok.encode(text)
    assert ids == list(text.encode("utf-8")) and all(0 <= i < 256 for i in ids)
    assert tok.decode(ids) == text
    assert tok.decode(torch.tensor(ids, dtype=torch.long)) == text


def test_byte_tokenizer_invalid_utf8():
    tok = ByteTokenizer()
    assert tok.decode([0xFF, 0x41]) == "\ufffdA"
    assert tok.decode(tok.encode("é")[:1]) == "\ufffd"  # a truncated multi-byte sequence
    assert tok.decode([0x80, 0x80]) == "\ufffd\ufffd"


# ------------------------------------------------------------------------------------------
# 10. the bundled pair
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled():
    """The shipped pair (committed in data/models/bundled): its absence is a failure, not a skip."""
    return load_pair("bundled")


@pytest.mark.parametrize("k", [k if k == 4 else pytest.param(k, marks=pytest.mark.slow) for k in range(1, 9)])
def test_bundled_pair_greedy_exactness(bundled, k):
    target, draft, tok = bundled
    from specviz.engine.bench import load_prompts

    for text in load_prompts()[:2]:
        prompt = torch.tensor(tok.encode(text))
        base, _ = generate_target_only(target, prompt, 48)
        spec, stats = speculative_generate(target, draft, prompt, k, 0.0, 48)
        assert spec.tolist() == base.tolist()
        _check_rounds(spec, stats, 48, k, greedy=True)
        assert 0 < stats.alpha_hat < 1  # a real pair: some drafts accepted, some rejected


# ------------------------------------------------------------------------------------------
# 11. the model interface and the timed regions
# ------------------------------------------------------------------------------------------


def test_gpt_satisfies_decodable(models):
    model = models["target"]
    assert isinstance(model, Decodable)
    assert model.context_length == TARGET_CFG.block_size
    assert model.device == torch.device("cpu") and model.dtype == torch.float32
    assert model.to(torch.float64).dtype == torch.float64  # read from the weights, not assumed
    model.to(torch.float32)
    assert not isinstance(object(), Decodable)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_engine_uses_nothing_outside_the_protocol(models, temperature):
    """The engine runs on models that expose only Decodable's members, with the same results."""
    target, draft = _pair(models, "noisy")
    prompt, k = PROMPTS["code"], 3

    def run(t, d):
        spec = speculative_generate(t, d, prompt, k, temperature, 25, torch.Generator().manual_seed(1))
        base = generate_target_only(t, prompt, 25, temperature, torch.Generator().manual_seed(2))
        return spec, base

    (spec, s_stats), (base, _) = run(target, draft)
    wrapped_t, wrapped_d = ProtocolOnly(target), ProtocolOnly(draft)
    assert isinstance(wrapped_t, Decodable)
    (spec_w, w_stats), (base_w, _) = run(wrapped_t, wrapped_d)
    assert torch.equal(spec_w, spec) and torch.equal(base_w, base)
    assert [r.accepted for r in w_stats.rounds] == [r.accepted for r in s_stats.rounds]
    assert wrapped_t.calls > 0 and wrapped_d.calls > 0
    with pytest.raises(AttributeError):
        wrapped_t.cfg  # the wrapper really hides the rest of the model
    if temperature == 0:
        assert first_divergence(wrapped_t, prompt, base, spec) is None
        wrong = spec.clone()
        wrong[5] = (wrong[5] + 1) % 256
        assert first_divergence(wrapped_t, prompt, base, wrong).position == 5


def test_clock_synchronises_cuda_before_reading_the_time(monkeypatch):
    """On CUDA every clock reading waits for the GPU first, else GPU work leaks out of the timed region."""
    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **kw: events.append("sync"))
    monkeypatch.setattr(decoding.records, "time", SimpleNamespace(perf_counter=lambda: events.append("read") or 1.0))
    decoding._Clock(torch.device("cuda")).now()
    assert events == ["sync", "read"]
    events.clear()
    decoding._Clock(torch.device("cpu")).now()
    assert events == ["read"]


@pytest.mark.parametrize("k", [1, 3])
def test_timed_regions_bracket_the_forwards(models, monkeypatch, k):
    """Every time the engine reports comes from the (synchronising) clock and brackets the right forwards.

    A fake clock reads "1 ms per target forward + 1 s per draft forward so far" and the time
    module is taken away from decoding, so a region timed any other way, or a forward outside
    its region, changes the reported numbers.
    """
    target, draft = (ProtocolOnly(m) for m in _pair(models, "noisy"))

    class ForwardClock:
        def __init__(self, device):
            assert device == target.device

        def now(self) -> float:
            return 1e-3 * target.calls + 1.0 * draft.calls

    monkeypatch.setattr(decoding.records, "_Clock", ForwardClock)
    monkeypatch.setattr(decoding.records, "time", SimpleNamespace())  # any direct time reading raises
    _, s = speculative_generate(target, draft, PROMPTS["code"], k, 0.0, 30, calibration_steps=3)
    assert s.prefill_ms == pytest.approx(1001.0)  # one target and one draft forward over the prompt
    assert s.t_target_ms == pytest.approx(1.0) and s.t_draft_ms == pytest.approx(1000.0)
    for r in s.rounds:
        assert (r.draft_ms, r.verify_ms, r.other_ms) == pytest.approx((1000.0 * k, 1.0, 0.0))
    assert s.decode_s == pytest.approx(len(s.rounds) * (k + 1e-3))
    _, base = generate_target_only(target, PROMPTS["code"], 7)
    assert base.t_target_ms == pytest.approx(1.0) and base.decode_s == pytest.approx(7e-3)

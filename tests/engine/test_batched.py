"""Batched decoding (decoding.*_batch, GPT per-row positions): every row is its own decode, only faster."""

from __future__ import annotations

import pytest
import torch
from _models import P_OK, build_gpt, noisy_copy
from _tiers import first_quick

from specviz.engine import decoding, sampling
from specviz.engine.models import GPTConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CFG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=256)


@pytest.fixture(scope="module")
def pair():
    target = build_gpt(CFG, 2, std=0.1)
    return target, noisy_copy(target, 0.015, 3)  # accepts some drafts, rejects some


@pytest.fixture(scope="module")
def prompts():
    g = torch.Generator().manual_seed(0)
    return [torch.randint(0, 256, (n,), generator=g) for n in (5, 12, 2, 30)]  # ragged, one of 2 tokens


@pytest.mark.slow
def test_per_row_positions_in_the_cache_equal_full_recompute(pair):
    """Rows advance by different amounts (or not at all, rewriting their own positions)."""
    model, _ = pair
    seqs = torch.randint(0, 256, (3, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = [model(seqs[b : b + 1])[0] for b in range(3)]
        model.setup_cache(3, 64)
        model(seqs[:, :10], 0)
        pos = torch.tensor([10, 10, 10])
        for t, advance in ((3, [1, 1, 1]), (5, [1, 0, 1]), (2, [1, 1, 1]), (4, [0, 1, 1])):
            out = model(torch.stack([seqs[b, pos[b] : pos[b] + t] for b in range(3)]), pos)
            for b in range(3):
                torch.testing.assert_close(out[b], full[b][pos[b] : pos[b] + t], atol=1e-4, rtol=0)
            pos = pos + torch.tensor(advance) * t
        with pytest.raises(ValueError, match="outside the cache of 64"):
            model(seqs[:, :2], torch.tensor([0, 63, 5]))


@pytest.mark.parametrize("k", first_quick([4, 1, 2, 3, 5, 6, 7, 8]))
@pytest.mark.slow
def test_greedy_rows_equal_their_own_target_only_output(pair, prompts, k):
    target, draft = pair
    out, stats = decoding.speculative_generate_batch(target, draft, prompts, k, 0.0, 40)
    assert out.shape == (4, 40)
    for i, prompt in enumerate(prompts):
        expected, _ = decoding.generate_target_only(target, prompt, 40)
        assert out[i].tolist() == expected.tolist(), (k, i)
        emitted = [t for r in stats[i].rounds for t in r.emitted]
        assert emitted[:40] == out[i].tolist() and len(emitted) - len(stats[i].rounds[-1].emitted) < 40
        assert all(r.accept_mask == [True] * r.accepted + ([False] if r.accepted < k else []) for r in stats[i].rounds)


@pytest.mark.parametrize("k", [2, 6])
def test_rows_that_finish_early_stay_inside_the_context(pair, k):
    """The longest prompt fills the context exactly (prompt + max_new + K + 1); the short one finishes
    many rounds earlier, overshooting its last token by up to K, and must not run past the cache."""
    target, draft = pair
    g = torch.Generator().manual_seed(4)
    new = 24
    prompts = [torch.randint(0, 256, (n,), generator=g) for n in (CFG.block_size - new - k - 1, 3)]
    out, _ = decoding.speculative_generate_batch(target, draft, prompts, k, 0.0, new)
    for i, prompt in enumerate(prompts):
        assert out[i].tolist() == decoding.generate_target_only(target, prompt, new)[0].tolist(), i


def test_some_rows_reject_while_others_accept(pair, prompts):
    target, draft = pair
    _, stats = decoding.speculative_generate_batch(target, draft, prompts, 4, 0.0, 40)
    per_round = [r.accepted for s in stats for r in s.rounds]
    assert {0, 4} <= set(per_round)  # the rows do not move in lock-step
    assert len({len(s.rounds) for s in stats}) > 1


def test_a_batch_of_one_is_the_single_sequence_engine(pair, prompts):
    target, draft = pair
    out, stats = decoding.speculative_generate_batch(target, draft, prompts[1:2], 3, 0.0, 30)
    single, single_stats = decoding.speculative_generate(target, draft, prompts[1], 3, 0.0, 30, calibration_steps=0)
    assert out[0].tolist() == single.tolist()
    assert [r.accepted for r in stats[0].rounds] == [r.accepted for r in single_stats.rounds]


def test_target_only_batch_equals_each_row_alone(pair, prompts):
    target, _ = pair
    out, seconds = decoding.generate_target_only_batch(target, prompts, 25)
    assert seconds > 0
    for i, prompt in enumerate(prompts):
        assert out[i].tolist() == decoding.generate_target_only(target, prompt, 25)[0].tolist()


@pytest.mark.slow
def test_each_row_samples_the_targets_distribution():
    """χ² per row: the first token of every row at T = 1 follows that row's target p, not q."""
    target = build_gpt(GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=32), 10, std=0.3)
    draft = build_gpt(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32), 11, std=0.3)
    texts = [torch.tensor(list(b"x = 1")), torch.tensor(list(b"def"))]
    rows = 64  # 32 copies of each prompt per call
    firsts = {0: [], 1: []}
    for seed in range(40):
        g = torch.Generator().manual_seed(seed)
        out, _ = decoding.speculative_generate_batch(target, draft, texts * (rows // 2), 2, 1.0, 1, generator=g)
        for i in range(rows):
            firsts[i % 2].append(int(out[i, 0]))
    for j, text in enumerate(texts):
        with torch.no_grad():
            p = torch.softmax(target(text[None])[0, -1].double(), -1)
            q = torch.softmax(draft(text[None])[0, -1].double(), -1)
        tokens = torch.tensor(firsts[j])  # 1,280 draws
        assert sampling.chi_square_gof(tokens, p / p.sum()).p_value > P_OK
        assert sampling.chi_square_gof(tokens, q / q.sum()).p_value < 1e-6  # the test has power


def test_bad_batches_name_the_prompt(pair):
    target, draft = pair
    with pytest.raises(ValueError, match="prompts must hold at least one prompt"):
        decoding.speculative_generate_batch(target, draft, [], 2)
    with pytest.raises(ValueError, match="prompt 1: batched decoding needs prompts of at least 2 tokens"):
        decoding.speculative_generate_batch(target, draft, [torch.tensor([1, 2]), torch.tensor([3])], 2)
    with pytest.raises(ValueError, match=r"prompt 0: prompt \(250 tokens\) \+ max_new_tokens"):
        decoding.generate_target_only_batch(target, [torch.zeros(250, dtype=torch.long)], 10)


@pytest.mark.slow
def test_bench_writes_one_row_per_batch_size_in_the_measurement_schema(tmp_path):
    from specviz import cli
    from specviz.data.measurements import load_measurements

    torch.manual_seed(0)
    target = build_gpt(CFG, 2, std=0.1)
    target.save(tmp_path / "pair" / "target")
    noisy_copy(target, 0.015, 3).save(tmp_path / "pair" / "draft")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def f(x):\n    return x\n---\nclass A:\n    pass\n")
    out = tmp_path / "batched.csv"
    argv = ["bench", "--pair", str(tmp_path / "pair"), "--k", "2,4", "--temperature", "0", "--new-tokens", "12"]
    argv += ["--repeats", "1", "--batch-size", "2,4", "--prompts", str(prompts), "--device", "cpu", "--out", str(out)]
    assert cli.main(argv) == 0
    frame, report = load_measurements(out.read_bytes(), name="batched.csv")
    assert not report.row_errors
    assert sorted(zip(frame.batch_size, frame.k, strict=True)) == [(2, 2), (2, 4), (4, 2), (4, 4)]
    assert frame.greedy_exact.astype(bool).all() and (frame.speedup > 0).all()
    assert ((frame.alpha >= 0) & (frame.alpha <= 1)).all()

"""Draft-length policies (specviz.core.policies): each engine's rule on hand-made rows, replay on traces,
and the self-checks against the theory (E[N], the speedup, the oracle bound, HF's settling K)."""

from __future__ import annotations

import numpy as np
import pytest
from _tiers import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from specviz.core import policies as P
from specviz.core import theory

SETTINGS = settings(max_examples=examples(30), deadline=None)

# one round, K_max = 5: q(x) per position; accepted = 3 (positions 1-3 pass, 4 fails)
Q = np.array([[0.9, 0.6, 0.3, 0.8, 0.2]])
TOP = np.array([[0.9, 0.7, 0.5, 0.8, 0.6]])
A = np.array([3])


@pytest.mark.parametrize(
    ("policy", "drafts", "forwards"),
    [
        (P.constant(4), 4, 4),
        (P.hf_confidence(0.4, k=20), 3, 3),  # 0.3 < 0.4 at position 3: stop after it (kept)
        (P.hf_confidence(0.1, k=2), 2, 2),  # the budget binds first
        (P.llamacpp_pmin(0.55), 3, 3),  # top-1 0.5 < 0.55 at position 3: kept (2025 builds)
        (P.llamacpp_pmin(0.55, keep_crossing=False), 2, 3),  # later builds: discarded, its forward spent
        (P.llamacpp_pmin(0.55, n_min=3, keep_crossing=False), 0, 3),  # 2 < --draft-min 3: not verified
        (P.specdecpp(0.5), 3, 3),  # P(some rejection): 0.1, 0.46, then 0.838 > 0.5 at position 3
        (P.oracle(), 3, 3),
        (P.oracle(include_rejected=True), 4, 4),
        (P.vllm_by_batch([[1, 4, 5], [5, 64, 2]], 8), 2, 2),
    ],
)
def test_each_rule_on_one_round(policy, drafts, forwards):
    trace = P.Trace(Q, TOP, A)
    r = P.replay(policy, trace, c=10.0)
    assert (int(r.k[0]), int(r.draft_steps[0])) == (drafts, forwards)
    assert int(r.accepted[0]) == min(drafts, 3) and int(r.tokens[0]) == min(drafts, 3) + 1
    cost = (1 + 0.0 if drafts else 1.0) + forwards / 10.0
    assert r.cost[0] == pytest.approx(cost)


def test_specdecpp_stops_once_a_rejection_so_far_is_likelier_than_the_threshold():
    # P(some rejection) after each token: 0.1, 0.46, 0.838, … → threshold 0.4 stops after token 2, 0.8 after 3
    trace = P.Trace(Q, TOP, A)
    assert [int(P.replay(P.specdecpp(h), trace, c=5).k[0]) for h in (0.05, 0.4, 0.8)] == [1, 2, 3]


@SETTINGS
@given(alpha=st.floats(0.05, 0.95), k=st.integers(1, 8), c=st.floats(2, 50), v=st.floats(0, 0.1))
def test_constant_k_reproduces_the_chapters_e_n_and_speedup(alpha, k, c, v):
    rounds = 20_000
    trace = P.synthetic_trace(alpha, k, rounds, np.random.default_rng(1), confidence="flat")
    r = P.replay(P.constant(k), trace, c=c, v=v)
    se = r.tokens.std() / np.sqrt(rounds)  # the mean of N over i.i.d. rounds
    assert abs(r.tokens_per_round - theory.expected_tokens(alpha, k)) <= 5 * se + 1e-12
    cost = 1 + v * k + k / c  # every round costs the same, so S = mean N / cost
    assert abs(r.speedup - theory.speedup(alpha, c, k, v)) <= 5 * se / cost + 1e-12


@pytest.mark.parametrize("alpha", [0.5, 0.8, 0.9])
@pytest.mark.slow
def test_the_oracle_reaches_its_bound_with_a_long_enough_k_max(alpha):
    rounds, c = 50_000, 10.0
    trace = P.synthetic_trace(alpha, 128, rounds, np.random.default_rng(2), confidence="flat")
    for include in (False, True):
        r = P.replay(P.oracle(include), trace, c=c)
        # S = Σ N / Σ cost: the delta method's standard error of a ratio of means
        ratio_se = np.std(r.tokens - r.speedup * r.cost) / np.sqrt(rounds) / r.cost.mean()
        assert abs(r.speedup - P.oracle_speedup(alpha, c, include)) <= 5 * ratio_se


@SETTINGS
@given(alpha=st.floats(0.1, 0.9), c=st.floats(3, 100), v=st.floats(0, 0.05), o=st.floats(0, 0.1))
def test_no_policy_beats_the_oracle_on_the_same_trace(alpha, c, v, o):
    """Per round, drafting exactly the accepted tokens maximises tokens − S*·cost whenever one accepted
    draft pays at the oracle's rate, S*·(1/c + v + o) ≤ 1, so no policy's Σ N / Σ cost exceeds S*."""
    trace = P.synthetic_trace(alpha, 16, 3000, np.random.default_rng(3))
    best = P.replay(P.oracle(), trace, c=c, v=v, o=o).speedup
    assume(best * (1 / c + v + o) <= 1)
    for policy in (
        P.constant(1),
        P.constant(4),
        P.constant(16),
        P.hf_heuristic(),
        P.hf_confidence(),
        P.llamacpp_pmin(),
        P.llamacpp_pmin(0.3, keep_crossing=False),
        P.specdecpp(0.6),
        P.oracle(include_rejected=True),
    ):
        assert P.replay(policy, trace, c=c, v=v, o=o).speedup <= best + 1e-12, policy.label


@pytest.mark.slow
def test_hf_heuristic_settles_near_ln3_over_minus_ln_alpha():
    """Under i.i.d. α the schedule's K hovers where an all-accepted round (prob α^K) is as likely
    to add 2 as a failed one is to take 1: α^K = 1/3, K = ln 3 / (−ln α)."""
    for alpha in (0.6, 0.8, 0.9):
        trace = P.synthetic_trace(alpha, 64, 100_000, np.random.default_rng(4), confidence="flat")
        k = P.replay(P.hf_heuristic(start=20), trace, c=10).k[1000:]
        k_eq = np.log(3) / -np.log(alpha)
        print(f"α = {alpha}: mean K {k.mean():.2f} ± {k.std():.2f} (sd), ln 3 / (−ln α) = {k_eq:.2f}")
        assert abs(k.mean() - k_eq) < 1.0 and k.std() < k_eq


def test_a_positional_trace_is_walked_by_what_each_round_emits():
    """Rows are output positions: a round from row j that accepts a of its k drafts emits a + 1 tokens,
    so the next round starts at row j + a + 1; each segment (prompt) starts over at its first row."""
    accepted = np.array([2, 0, 0, 1, 3, 0, 4, 0])
    q = np.full((8, 4), 0.9)
    trace = P.Trace(q, q, accepted, segment=np.array([0, 0, 0, 0, 0, 1, 1, 1]), positional=True)
    r = P.replay(P.constant(2), trace, c=10)
    # segment 0: row 0 (a 2 → 3 tokens) → row 3 (a 1 → 2) → row 5 is segment 1: restart there;
    # segment 1: row 5 (a 0 → 1) → row 6 (k 2 of a 4 → 3 tokens) → past the end
    assert r.accepted.tolist() == [2, 1, 0, 2] and r.tokens.tolist() == [3, 2, 1, 3]
    # +2 after an all-accepted round, −1 after one that was not; the transient schedule restarts at 2
    assert P.replay(P.hf_heuristic(start=2), trace, c=10).k.tolist() == [2, 4, 3, 2]
    assert P.replay(P.hf_heuristic(start=2, transient=True), trace, c=10).k.tolist() == [2, 4, 2, 1]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: P.Trace(np.ones((2, 3)), np.ones((2, 2)), np.array([0, 1])), "q_token and q_top must both be"),
        (lambda: P.Trace(np.ones((2, 3)), np.ones((2, 3)), np.array([0, 4])), "accepted must be at most K_max = 3"),
        (lambda: P.Trace(np.full((1, 2), 1.5), np.ones((1, 2)), np.array([0])), "q_token must hold probabilities"),
        (lambda: P.llamacpp_pmin(n_min=20), r"n_min must be an integer in \[0, n_max = 16\]"),
        (lambda: P.vllm_by_batch([[1, 4, 3]], 8), "batch_size 8 is in no range"),
        (lambda: P.synthetic_trace(0.5, 4, 10, np.random.default_rng(0), "sharp"), "confidence must be"),
        (lambda: P.hf_confidence(1.5), r"threshold must be in \[0, 1\]"),
        (lambda: P.replay(P.constant(2), P.Trace(Q, TOP, A), c=0), "c must be"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------- engine traces


@pytest.fixture(scope="module")
def tiny_pair():
    import torch
    from _models import build_gpt, noisy_copy

    from specviz.engine.models import GPTConfig

    # std 0.6: peaked enough that confidence rules draft 1..6 tokens (at 0.1 every q(x) is below 0.05)
    target = build_gpt(GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=256), 2, std=0.6)
    return target, noisy_copy(target, 0.04, 3), torch.randint(0, 256, (10,), generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def tiny_trace(tiny_pair):
    from specviz.engine import decoding

    target, draft, prompt = tiny_pair
    return decoding.greedy_trace(target, draft, prompt, 6, 60)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.slow
def test_replaying_constant_k_on_a_greedy_trace_is_the_engine_round_for_round(tiny_pair, tiny_trace, k):
    """The positional trace makes replay exact: the walk visits the rounds the engine ran, with the
    same accepted counts, for every K up to the trace's K_max."""
    from specviz.engine import decoding

    target, draft, prompt = tiny_pair
    trace = tiny_trace
    _, stats = decoding.speculative_generate(target, draft, prompt, k, 0.0, 60)
    replayed = P.replay(P.constant(k), trace, c=10)
    assert replayed.accepted.tolist() == [r.accepted for r in stats.rounds]
    assert trace.positional and trace.k_max == 6 and trace.rounds == 60
    assert np.isnan(trace.p_token[trace.accepted == 0, 1]).all()  # p is unknown past the first mismatch


def test_a_trace_survives_a_file_round_trip_and_concat_makes_segments(tmp_path):
    g = np.random.default_rng(5)
    a, b = P.synthetic_trace(0.7, 4, 5, g), P.synthetic_trace(0.7, 4, 3, g)
    both = P.concat([a, b])
    assert both.segments().tolist() == [0] * 5 + [1] * 3 and both.rounds == 8
    P.save_trace(both, tmp_path / "t.jsonl")
    back = P.load_trace(tmp_path / "t.jsonl")
    np.testing.assert_allclose(back.q_token, both.q_token, atol=1e-6)
    assert back.accepted.tolist() == both.accepted.tolist() and back.segments().tolist() == both.segments().tolist()
    assert np.isnan(back.p_token).all() and not back.positional
    (tmp_path / "bad.jsonl").write_text('{"format": "specviz trace 1", "k_max": 4, "positional": false}\n{"x": 1}\n')
    with pytest.raises(ValueError, match="line 2 is not a trace row of K_max = 4"):
        P.load_trace(tmp_path / "bad.jsonl")
    (tmp_path / "csv.jsonl").write_text("label,k\n")
    with pytest.raises(ValueError, match="line 1 must be a 'specviz trace 1' header"):
        P.load_trace(tmp_path / "csv.jsonl")
    with pytest.raises(ValueError, match="concat needs at least one trace"):
        P.concat([a, P.synthetic_trace(0.7, 5, 2, g)])


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_replay_is_exact_on_the_bundled_pair():
    import torch

    from specviz.engine import bench, decoding
    from specviz.engine.models import load_pair

    target, draft, tok = load_pair("bundled")
    prompt = torch.tensor(tok.encode(bench.load_prompts()[1]), dtype=torch.long)
    trace = decoding.greedy_trace(target, draft, prompt, 8, 64)
    for k in (2, 5, 8):
        _, stats = decoding.speculative_generate(target, draft, prompt, k, 0.0, 64)
        assert P.replay(P.constant(k), trace, c=10).accepted.tolist() == [r.accepted for r in stats.rounds]


LIVE = [
    P.constant(3),
    P.hf_heuristic(start=2),
    P.hf_confidence(0.5, k=6),
    P.llamacpp_pmin(0.6, n_max=6),
    P.llamacpp_pmin(0.8, n_max=6, n_min=2, keep_crossing=False),
    P.specdecpp(0.5, k=6),
    P.vllm_by_batch([[1, 8, 4], [9, 64, 0]], 1),
]


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("policy", LIVE, ids=lambda p: p.label)
def test_a_live_policy_is_greedy_exact_and_its_replay_is_the_engine(tiny_pair, tiny_trace, policy):
    """The engine runs the rule token by token; replaying the same rule on the greedy trace gives the
    same rounds: drafts verified, forwards spent and accepted counts, round for round."""
    from specviz.engine import decoding

    target, draft, prompt = tiny_pair
    want, _ = decoding.generate_target_only(target, prompt, 60)
    out, stats = decoding.speculative_generate(target, draft, prompt, 6, 0.0, 60, policy=policy)
    assert out.tolist() == want.tolist()
    replayed = P.replay(policy, tiny_trace, c=10)
    n = len(stats.rounds)
    assert [len(r.drafted) for r in stats.rounds] == replayed.k.tolist()[:n]
    assert [r.draft_steps for r in stats.rounds] == replayed.draft_steps.tolist()[:n]
    assert [r.accepted for r in stats.rounds] == replayed.accepted.tolist()[:n]
    assert all(r.stop in ("budget", "rule", "dropped", "below n_min") for r in stats.rounds)
    if policy.kind not in ("constant", "vllm_by_batch"):
        assert len(set(replayed.k.tolist())) > 1  # the rule really varied the length here


@pytest.mark.usefixtures("one_torch_thread")
def test_the_default_is_the_constant_policy_and_the_oracle_cannot_run_live(tiny_pair):
    import torch

    from specviz.engine import decoding

    target, draft, prompt = tiny_pair
    runs = [
        decoding.speculative_generate(target, draft, prompt, 4, 1.0, 40, torch.Generator().manual_seed(7), policy=p)
        for p in (None, P.constant(4))
    ]
    assert runs[0][0].tolist() == runs[1][0].tolist()  # same draws, same tokens
    assert [r.accepted for r in runs[0][1].rounds] == [r.accepted for r in runs[1][1].rounds]
    with pytest.raises(ValueError, match="the oracle policy knows the target's answers"):
        decoding.speculative_generate(target, draft, prompt, 4, 0.0, 8, policy=P.oracle())


@pytest.mark.usefixtures("one_torch_thread")
def test_a_policy_runs_stats_count_only_the_positions_it_offered(tiny_pair):
    from specviz.engine import decoding

    target, draft, prompt = tiny_pair
    _, stats = decoding.speculative_generate(target, draft, prompt, 6, 0.0, 60, policy=P.hf_confidence(0.5, k=6))
    lengths = [len(r.drafted) for r in stats.rounds]
    assert stats.policy_run and stats.mean_drafts == pytest.approx(np.mean(lengths))
    a = stats.per_position_acceptance
    reached = [sum(n >= i and r.accepted >= i - 1 for n, r in zip(lengths, stats.rounds, strict=True)) for i in (1, 2)]
    assert a[0] == pytest.approx(sum(r.accepted >= 1 for r in stats.rounds) / reached[0])
    assert a[1] == pytest.approx(sum(r.accepted >= 2 for r in stats.rounds) / reached[1])
    assert stats.predicted_speedup() > 0 and np.isfinite(stats.v)


@pytest.mark.usefixtures("one_torch_thread")
def test_a_sampled_trace_is_the_k_max_run_it_records(tiny_pair):
    """Rows are that run's rounds: the same draws give the same accepted counts, and q_top ≥ q(x)."""
    import torch

    from specviz.engine import decoding

    target, draft, prompt = tiny_pair
    trace = decoding.sampled_trace(target, draft, prompt, 4, 1.0, 40, torch.Generator().manual_seed(3))
    _, stats = decoding.speculative_generate(target, draft, prompt, 4, 1.0, 40, torch.Generator().manual_seed(3))
    assert trace.accepted.tolist() == [r.accepted for r in stats.rounds] and not trace.positional
    assert (trace.q_top >= trace.q_token - 1e-7).all() and ((trace.p_token >= 0) & (trace.p_token <= 1)).all()
    assert P.replay(P.constant(4), trace, c=10).tokens.sum() >= 40
    with pytest.raises(ValueError, match="a sampled trace needs temperature > 0"):
        decoding.sampled_trace(target, draft, prompt, 4, 0.0, 8)

"""The n-gram (prompt-lookup) drafter: the engines' matching rule, its proposals as a Decodable, greedy
exactness and losslessness in the engine, and `TARGET+ngram` in the CLI and on the live page."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _models import P_OK, build_gpt

from specviz.app import live
from specviz.engine import decoding, sampling
from specviz.engine.models import GPTConfig, load_pair
from specviz.engine.models.ngram import NgramDraft, find_match, lookup_table, replay_on_text

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize(
    ("seq", "lo", "hi", "want"),
    [
        ([1, 2, 3, 9, 1, 2, 3], 1, 2, 3),  # the bigram (2, 3) first occurs at 1..2: propose from index 3
        ([1, 2, 3, 9, 2, 3, 7, 2, 3], 1, 2, 3),  # several matches: the earliest
        ([5, 1, 7, 1], 1, 2, 2),  # no earlier (7, 1); the unigram 1 at index 1
        ([5, 6, 7, 8], 1, 2, None),  # nothing repeats
        ([1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5], 5, 5, 5),  # vLLM's 5-gram
        ([1, 2, 3, 4, 0, 2, 3, 4], 5, 5, None),  # only a 3-gram repeats: below vLLM's minimum
        ([4, 4], 1, 2, 1),  # the suffix itself is not a match; the earlier 4 is
    ],
)
def test_the_match_is_the_longest_n_then_the_earliest_occurrence(seq, lo, hi, want):
    assert find_match(seq, "hf", lo, hi) == want


def test_a_proposal_continues_while_its_tokens_are_fed_back():
    d = NgramDraft("hf", vocab_size=16, num_tokens=3)
    d.setup_cache()
    logits = d(torch.tensor([[1, 2, 3, 4, 1, 2]]), 0)  # last bigram (1, 2) seen at 0: propose 3, 4, 1
    assert logits.shape == (1, 6, 16) and int(logits[0, -1].argmax()) == 3
    assert int(d(torch.tensor([[3]]), 6)[0, -1].argmax()) == 4  # the proposal fed back: continue
    assert int(d(torch.tensor([[4]]), 7)[0, -1].argmax()) == 1
    assert not d(torch.tensor([[1]]), 8)[0, -1].any()  # num_tokens = 3 proposed: none left (uniform)
    assert int(d(torch.tensor([[9]]), 3)[0, -1].argmax()) == 0  # a new token at 3 rewrites the text: anew
    assert d.text == [1, 2, 3, 9]
    with pytest.raises(ValueError, match="n-gram rule must be one of"):
        NgramDraft("suffix-tree")


@pytest.fixture(scope="module")
def target():
    return build_gpt(GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=256), 2, std=0.6)


def test_greedy_output_is_the_targets_and_rounds_without_a_proposal_are_plain_steps(target):
    prompt = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6] * 3)
    want, _ = decoding.generate_target_only(target, prompt, 48)
    for rule in ("hf", "vllm"):
        draft = NgramDraft(rule, context_length=256)
        out, stats = decoding.speculative_generate(target, draft, prompt, 6, 0.0, 48)
        assert out.tolist() == want.tolist()
        assert all(r.stop in ("budget", "dropped") for r in stats.rounds)
        plain = [r for r in stats.rounds if not r.drafted]
        assert all(len(r.emitted) == 1 and r.accepted == 0 for r in plain)


@pytest.mark.slow
def test_sampling_with_one_hot_proposals_is_lossless():
    """A one-hot q is accepted with probability p(x); the residual (p − q)⁺ keeps the first token ~ p (χ²),
    and the proposal is accepted about p(proposal) of the time."""
    tiny = build_gpt(GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=32), 10, std=0.3)
    prompt = torch.tensor([7, 8, 7, 8, 7])  # the unigram 7 occurred at 0: the drafter proposes 8
    firsts, accepted = [], 0
    runs = 3000
    for seed in range(runs):
        g = torch.Generator().manual_seed(seed)
        draft = NgramDraft("hf", context_length=32)
        out, stats = decoding.speculative_generate(tiny, draft, prompt, 2, 1.0, 1, g, calibration_steps=0)
        firsts.append(int(out[0]))
        accepted += stats.rounds[0].accepted >= 1
    with torch.no_grad():
        p = torch.softmax(tiny(prompt[None])[0, -1].double(), -1)  # (V,)
    fit = sampling.chi_square_gof(torch.tensor(firsts), p / p.sum())
    assert fit.p_value > P_OK, fit
    se = np.sqrt(p[8].item() * (1 - p[8].item()) / runs)
    assert abs(accepted / runs - p[8].item()) < 5 * se  # one-hot q: accepted with probability p(8)


@pytest.mark.slow
def test_bundled_target_with_ngram_drafts_in_the_cli(tmp_path, capsys):
    import pandas as pd

    from specviz import cli

    out = tmp_path / "ngram.csv"
    code = cli.main(
        [
            "bench",
            "--pair",
            "bundled-target+ngram",
            "--k",
            "4",
            "--temperature",
            "0",
            "--new-tokens",
            "32",
            "--repeats",
            "1",
            "--device",
            "cpu",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    row = pd.read_csv(out).iloc[0]
    assert row.method == "ngram" and row.target_model == "bundled/target" and row.draft_model.startswith("ngram")
    assert bool(row.greedy_exact) and row.t_draft_ms > 0 and row.speedup > 0  # the lookup's cost is measured
    assert cli.main(["bench", "--pair", "bundled-target+ngram", "--batch-size", "2", "--out", str(out)]) == 2
    assert "the n-gram drafter runs chains at batch size 1" in capsys.readouterr().err


def test_the_live_page_offers_and_checks_the_ngram_pair():
    hosted = live.Limits(hosted=True)
    assert "bundled-target+ngram" in live.pair_choices(hosted)
    assert live.check_pair("bundled-target+ngram", hosted) == "bundled-target+ngram"
    values = {p.key: p.default for p in live.controls(live.Limits())} | {"pair": "bundled-target+ngram"}
    req = live.make_request(values, live.Limits())
    assert req.meta()["method"] == "ngram" and req.meta()["target_model"] == "bundled/target"
    with pytest.raises(ValueError, match="the n-gram drafter decodes one sequence at a time"):
        live.make_request(values | {"batches": [1, 4]}, live.Limits())
    with pytest.raises(ValueError, match="trees need tree attention"):
        live.make_request(values | {"shape": "tree"}, live.Limits())


def test_load_pair_builds_target_plus_ngram():
    target, draft, tok = load_pair("bundled-target+ngram-vllm")
    assert isinstance(draft, NgramDraft) and draft.rule == "vllm" and (draft.min_ngram, draft.max_ngram) == (5, 5)
    assert draft.context_length == target.context_length and tok.encode("ab") == [97, 98]
    assert np.isclose(draft.draft_policy(4).params["p_min"], 0.5)


def test_lookup_on_a_text_accepts_what_repeats():
    text = [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 9]
    # pos 1: "1" not seen before → nothing; 2, 3, 4 likewise; at pos 4 the text so far is 1 2 3 4:
    # the unigram 4 has no earlier occurrence; at 5 (after "1") lookup proposes 2 3 4 1 2 …
    rounds = replay_on_text(text, 4, "hf")
    assert rounds[:4] == [(0, 0)] * 4
    assert sum(d + 0 for d, _ in rounds) > 0 and all(a <= d for d, a in rounds)
    assert sum(a + 1 for _, a in rounds) == len(text) - 1  # every token after the first is emitted once
    table = lookup_table([text], [1, 4], c=100.0)
    assert table.columns.tolist() == ["rule", "k", "rounds", "proposal_share", "alpha", "tokens_per_round", "speedup"]
    row = table[(table.rule == "hf") & (table.k == 4)].iloc[0]
    assert row.tokens_per_round == pytest.approx((len(text) - 1) / row.rounds)
    with pytest.raises(ValueError, match="K must be an integer >= 1"):
        replay_on_text(text, 0)

"""Tree verification in the engine (decoding.tree_generate, GPT.forward_tree): lossless, exact, measured."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _models import build_gpt, check_lossless, noisy_copy
from _tiers import first_quick

from specviz.core import trees
from specviz.engine import decoding
from specviz.engine.models import GPTConfig, load_pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CFG = GPTConfig(n_layer=2, n_head=2, n_embd=64, block_size=256)
P = [0.6, 0.2, 0.1]
SHAPES = {
    "chain 4": trees.chain(4),
    "independent 3×3": trees.independent_chains(3, 3),
    "top-k 3,3,10": trees.from_topk(3, 3, 10, P),
    **{f"optimal {b}": trees.optimal_tree(P, b, 6) for b in (4, 8, 16, 32)},
}


@pytest.fixture(scope="module")
def pair():
    target = build_gpt(CFG, 2, std=0.1)
    return target, noisy_copy(target, 0.03, 3)


@pytest.fixture(scope="module")
def prompt():
    return torch.randint(0, 256, (12,), generator=torch.Generator().manual_seed(0))


def test_tree_forward_equals_a_full_recompute_of_every_path(pair):
    model, _ = pair
    tree = trees.from_topk(3, 2, 6, P)
    prefix = torch.randint(0, 256, (10,), generator=torch.Generator().manual_seed(1))
    tokens = torch.randint(0, 256, (len(tree),), generator=torch.Generator().manual_seed(2))
    tokens[0] = prefix[-1]
    with torch.no_grad():
        model.setup_cache(1, 64)
        model(prefix[None, :-1], 0)
        out = model.forward_tree(tokens[None], 9, torch.arange(len(tree)), torch.tensor(tree.parents))[0]
        for path in tree.paths():
            for d, node in enumerate(path):
                full = model(torch.cat([prefix[:-1], tokens[path[: d + 1]]])[None])[0, -1]
                torch.testing.assert_close(out[node], full, atol=1e-4, rtol=0)
        with pytest.raises(ValueError, match="tree slots 60..66 are outside the cache of 64"):
            model.forward_tree(tokens[None], 60, torch.arange(len(tree)), torch.tensor(tree.parents))


def test_keep_path_leaves_the_cache_as_a_chain_would(pair):
    model, _ = pair
    tree = trees.independent_chains(2, 3)  # nodes 1-2-3 and 4-5-6; keep the second chain
    seq = torch.randint(0, 256, (20,), generator=torch.Generator().manual_seed(3))
    tokens = torch.cat([seq[9:10], seq[10:13], seq[10:11], seq[14:16]])  # chain 2 = seq[10], seq[14], seq[15]
    with torch.no_grad():
        model.setup_cache(1, 64)
        model(seq[None, :9], 0)
        model.forward_tree(tokens[None], 9, torch.arange(len(tree)), torch.tensor(tree.parents))
        model.keep_path(9, torch.tensor([4, 5, 6]))
        after = model(seq[None, 16:17], 13)[0, -1]  # the next token, at position 13, after the kept path
        want = model(torch.cat([seq[:11], seq[14:17]])[None])[0, -1]
    torch.testing.assert_close(after, want, atol=1e-4, rtol=0)


@pytest.mark.parametrize("shape", first_quick(list(SHAPES)))
def test_greedy_tree_output_is_the_targets_greedy_output(pair, prompt, shape):
    target, draft = pair
    want, _ = decoding.generate_target_only(target, prompt, 60)
    out, stats = decoding.tree_generate(target, draft, prompt, SHAPES[shape], 0.0, 60)
    assert out.tolist() == want.tolist()
    assert sum(len(r.emitted) for r in stats.rounds[:-1]) < 60 <= sum(len(r.emitted) for r in stats.rounds)
    tree = SHAPES[shape]
    for r in stats.rounds:
        assert len(r.path) == r.accepted == len(r.ranks) and r.ranks == [tree.ranks[n] for n in r.path]
        assert all(tree.parents[b] == a for a, b in zip([0, *r.path], r.path, strict=False))
        assert r.leaf == (not tree.children(r.path[-1] if r.path else 0))
    assert any(r.accepted >= 2 for r in stats.rounds) and any(r.accepted == 0 for r in stats.rounds)


def test_greedy_children_are_the_drafts_likeliest_tokens_by_rank(pair, prompt):
    """At T = 0 the rank-r child is the draft's r-th likeliest token (q is one-hot there, so ranking
    must come from the logits), at the root and one level down."""
    draft = pair[1]
    tree = trees.Tree((-1, 0, 0, 0, 1, 1), (0, 1, 2, 3, 1, 2))
    with torch.inference_mode():
        draft.setup_cache(1, draft.context_length)
        root_logits = draft(prompt[None], 0)[0, -1]  # (V,)
        tokens = torch.zeros(len(tree), dtype=torch.long)
        tokens[0] = prompt[-1]
        decoding.draft_tree(draft, tree, tokens, prompt.numel() - 1, root_logits, decoding.Sampler(0.0))
        draft.setup_cache(1, draft.context_length)
        below = draft(torch.cat([prompt, tokens[1:2]])[None], 0)[0, -1]  # after the rank-1 child, recomputed
    assert tokens[[1, 2, 3]].tolist() == root_logits.topk(3).indices.tolist()
    assert tokens[[4, 5]].tolist() == below.topk(2).indices.tolist()


@pytest.mark.slow
def test_a_wider_tree_accepts_at_least_as_much_as_its_chain(pair, prompt):
    target = pair[0]
    draft = noisy_copy(target, 0.06, 3)  # further off: the target's choice is sometimes the draft's second
    chain = decoding.tree_generate(target, draft, prompt, trees.chain(4), 0.0, 80)[1]
    wide = decoding.tree_generate(target, draft, prompt, trees.optimal_tree(P, 16, 4), 0.0, 80)[1]
    assert wide.mean_tokens >= chain.mean_tokens
    assert any(rank > 1 for r in wide.rounds for rank in r.ranks)  # a second choice won somewhere


@pytest.mark.slow
def test_tree_sampling_is_lossless():
    """Multi-step speculative sampling over a depth-2 tree with two candidates per node: first
    token and pair follow the target (χ², the chain engine's check in tests/_models.py)."""
    tree = trees.Tree((-1, 0, 0, 1, 1), (0, 1, 2, 1, 2))

    def generate(target, draft, prompt, g):
        return decoding.tree_generate(target, draft, prompt, tree, 1.0, 2, generator=g)

    check_lossless("cpu", generate=generate)


def test_models_without_tree_attention_are_refused(pair, prompt):
    class Plain:
        context_length, device = 256, torch.device("cpu")

    with pytest.raises(ValueError, match="the draft \\(Plain\\) has no tree attention"):
        decoding.tree_generate(pair[0], Plain(), prompt, trees.chain(2))


@pytest.mark.slow
def test_bundled_pair_tree_greedy_exactness():
    target, draft, _ = load_pair("bundled")
    prompt = torch.tensor(list(b"def main(argv):\n    parser = argparse.ArgumentParser("))
    want, _ = decoding.generate_target_only(target, prompt, 48)
    for tree in (trees.optimal_tree(P, 8, 4), trees.from_topk(3, 2, 6, P)):
        assert decoding.tree_generate(target, draft, prompt, tree, 0.0, 48)[0].tolist() == want.tolist()


def test_positional_acceptance_counts_each_rank_against_the_nodes_that_offered_it():
    tree = trees.Tree((-1, 0, 0, 1), (0, 1, 2, 1))  # root: ranks 1, 2; node 1: rank 1
    rounds = [
        decoding.RoundRecord([], 2, [], [True, True], [], 0, 0, 0, path=[1, 3]),  # rank 1, then rank 1
        decoding.RoundRecord([], 1, [], [True], [], 0, 0, 0, path=[2]),  # rank 2 (a leaf)
        decoding.RoundRecord([], 1, [], [True, False], [], 0, 0, 0, path=[1]),  # rank 1, then none
        decoding.RoundRecord([], 0, [], [False], [], 0, 0, 0, path=[]),
    ]
    p = trees.positional_acceptance(tree, rounds)
    assert p.tolist() == [3 / 6, 1 / 4]  # rank 1 offered at 6 tests (4 roots, 2 node-1s); rank 2 at 4


@pytest.mark.slow
def test_positional_acceptance_from_a_run_predicts_its_tokens_per_round(pair, prompt):
    target, draft = pair
    tree = trees.optimal_tree(P, 8, 4)
    _, stats = decoding.tree_generate(target, draft, prompt, tree, 0.0, 200)
    p = trees.positional_acceptance(tree, stats.rounds)
    assert 0 < p[0] <= 1 and np.nansum(p) <= 1
    assert len(p) == max(len(tree.children(n)) for n in range(len(tree)))

"""Draft trees: the draft expands a tree by rank, the target verifies every node in one forward
(:func:`tree_generate`)."""

from __future__ import annotations

import functools

import torch

from specviz.engine import sampling
from specviz.engine.decoding import records
from specviz.engine.decoding.chain import _finish
from specviz.engine.decoding.records import (
    GenerationStats,
    RoundRecord,
    Sampler,
    _decode_step_ms,
    _prefill,
    check_inputs,
)
from specviz.engine.models import Decodable


@functools.lru_cache(maxsize=32)
def _tree_parts(tree) -> tuple[torch.Tensor, list[list[int]], list[list[int]]]:
    """(parents (N,), children by rank, internal nodes by depth), cached per tree shape (do not mutate)."""
    kids = [tree.children(n) for n in range(len(tree))]
    levels = [[n for n in range(len(tree)) if tree.depths[n] == d and kids[n]] for d in range(tree.depth)]
    return torch.tensor(tree.parents), kids, levels


def draft_tree(
    draft, tree, tokens: torch.Tensor, start: int, root_logits: torch.Tensor, sampler: Sampler
) -> dict[int, torch.Tensor]:
    """Fill ``tokens`` (N,) level by level: children of n are the draft's top tokens (T = 0) or i.i.d. draws from q.

    One draft forward per level (:meth:`GPT.forward_tree`); ``root_logits`` (V,). Returns q (V,) per internal node.
    """
    parents, kids, levels = _tree_parts(tree)
    logits = {0: root_logits}
    for depth, level in enumerate(levels):
        if depth > 0:  # the root's logits came from the catch-up forward
            nodes = torch.tensor(level, device=tokens.device)
            logits.update(zip(level, draft.forward_tree(tokens[nodes][None], start, nodes, parents)[0], strict=True))
        for node in level:
            children = kids[node]
            if sampler.greedy:
                picked = logits[node].topk(len(children)).indices
            else:
                q = sampler.probs(logits[node])
                picked = torch.multinomial(q, len(children), replacement=True, generator=sampler.generator)
            tokens[children] = picked
    return {node: sampler.probs(x) for node, x in logits.items()}


def verify_tree(
    tree, tokens: torch.Tensor, p: torch.Tensor, q: dict[int, torch.Tensor], sampler: Sampler
) -> tuple[list[int], int, list[bool], list[float]]:
    """Walk the tree with :func:`specviz.engine.sampling.verify_siblings`; ``p`` (N, V) the target at every node.

    Returns (accepted path, last token (correction or bonus), test outcomes, Σ min(p, q) at each tested node).
    """
    _, kids, _ = _tree_parts(tree)
    node, path, mask, overlaps = 0, [], [], []
    while kids[node]:
        children = kids[node]
        result = sampling.verify_siblings(p[node], q[node], tokens[children], sampler.generator, greedy=sampler.greedy)
        overlaps.append(float(sampling.overlap(p[node], q[node])))
        mask.append(result.accepted >= 0)
        if result.accepted < 0:
            return path, result.token, mask, overlaps
        node = children[result.accepted]
        path.append(node)
    return path, int(sampler.sample(p[node][None])[0]), mask, overlaps


@torch.inference_mode()
def tree_generate(
    target: Decodable,
    draft: Decodable,
    prompt: torch.Tensor,
    tree,
    temperature: float = 0.0,
    max_new_tokens: int = 128,
    generator: torch.Generator | None = None,
    *,
    calibration_steps: int = 8,
) -> tuple[torch.Tensor, GenerationStats]:
    """Speculative decoding with a draft tree (:class:`specviz.core.trees.Tree`), batch 1, lossless.

    A round: the draft catches up and gives the root's logits, :func:`draft_tree` expands, the target
    scores every node in one tree-masked forward (node n in slot pos + n), :func:`verify_tree` accepts a
    path (SpecInfer at T > 0), :meth:`GPT.keep_path` moves it into place. Returns (tokens
    (max_new_tokens,), stats with ``k`` = the tree's drafts and ``tree``).
    """
    for name, model in (("target", target), ("draft", draft)):
        if not hasattr(model, "forward_tree"):
            raise ValueError(
                f"the {name} ({type(model).__name__}) has no tree attention: tree drafting needs GPT models"
            )
    n = tree.drafts
    check_inputs([target, draft], prompt, max_new_tokens, temperature, max(n, 1))
    clock, sampler = records._Clock(target.device), Sampler(temperature, generator)
    prompt = prompt.to(target.device)
    t0 = clock.now()
    _prefill(target, prompt)
    _prefill(draft, prompt)
    prefill_ms = 1e3 * (clock.now() - t0)
    seq = torch.zeros(target.context_length, dtype=torch.long, device=target.device)
    seq[: prompt.numel()] = prompt
    pos = fed = prompt.numel() - 1  # pending token's position; the draft's cache holds positions < fed
    t_p, t_q = (
        _decode_step_ms(m, prompt[-1:], pos, clock, temperature, calibration_steps)
        if calibration_steps
        else float("nan")
        for m in (target, draft)
    )
    every = torch.arange(n + 1, device=target.device)
    parents, kids, _ = _tree_parts(tree)
    rounds: list[RoundRecord] = []
    generated = 0
    start = clock.now()
    while generated < max_new_tokens:
        t_a = clock.now()
        root_logits = draft(seq[fed : pos + 1][None], fed)[0, -1]  # (V,)
        tokens = torch.zeros(n + 1, dtype=torch.long, device=target.device)
        tokens[0] = seq[pos]
        q = draft_tree(draft, tree, tokens, pos, root_logits, sampler)
        t_b = clock.now()
        p = sampler.probs(target.forward_tree(tokens[None], pos, every, parents)[0])  # (N + 1, V)
        t_c = clock.now()
        path, last, mask, overlaps = verify_tree(tree, tokens, p, q, sampler)
        target.keep_path(pos, torch.tensor(path, dtype=torch.long))
        emitted = tokens[path].tolist() + [last]
        seq[pos + 1 : pos + 1 + len(emitted)] = torch.tensor(emitted, device=seq.device)
        fed, pos = pos + 1, pos + len(emitted)
        t_d = clock.now()
        rounds.append(
            RoundRecord(
                drafted=tokens[1:].tolist(),
                accepted=len(path),
                emitted=emitted,
                accept_mask=mask,
                overlap=overlaps,
                draft_ms=1e3 * (t_b - t_a),
                verify_ms=1e3 * (t_c - t_b),
                other_ms=1e3 * (t_d - t_c),
                path=path,
                ranks=[tree.ranks[node] for node in path],
                leaf=not kids[path[-1] if path else 0],
            )
        )
        generated += len(emitted)
    stats = GenerationStats(n, temperature, max_new_tokens, clock.now() - start, prefill_ms, t_p, t_q, tree=tree)
    return _finish(stats, rounds)

"""Traces for replaying draft-length policies (:mod:`specviz.core.policies`): greedy and sampled."""

from __future__ import annotations

import numpy as np
import torch

from specviz.core import policies, theory
from specviz.engine.decoding.chain import Cursor, commit_step, draft_step, target_probs, verify_step
from specviz.engine.decoding.records import Sampler, _prefill, check_inputs, generate_target_only
from specviz.engine.models import Decodable


@torch.inference_mode()
def greedy_trace(target: Decodable, draft: Decodable, prompt: torch.Tensor, k_max: int, max_new_tokens: int):
    """The positional :class:`specviz.core.policies.Trace` of a greedy run: row j drafts ``k_max`` from output position
    j.

    Per row: q(x) = q_top, the target's p while the chain matches (then NaN), and the leading matches.
    """
    k_max = int(theory.check_k(k_max, "k_max"))
    check_inputs([target, draft], prompt, max_new_tokens, 0.0, k_max)
    prompt = prompt.to(target.device)
    out, _ = generate_target_only(target, prompt, max_new_tokens + k_max, 0.0)
    seq = torch.cat([prompt, out.to(prompt.device)])  # (P + N + K,)
    start = prompt.numel() - 1  # position of the pending token of row 0
    target.setup_cache(1, target.context_length)
    p_all = torch.softmax(target(seq[None, :-1], 0)[0].float(), -1)  # (P + N + K − 1, V): p at each position
    _prefill(draft, prompt)
    q_tok = np.zeros((max_new_tokens, k_max))
    p_tok = np.full((max_new_tokens, k_max), np.nan)
    accepted = np.zeros(max_new_tokens, dtype=np.int64)
    for j in range(max_new_tokens):
        pos, token, matching = start + j, seq[start + j], True
        for i in range(k_max):  # the chain's first step re-feeds the true token, repairing the cache
            probs = torch.softmax(draft(token.view(1, 1), pos + i)[0, -1].float(), -1)  # (V,)
            q, x = probs.max(-1)
            q_tok[j, i] = float(q)
            if matching:
                p_tok[j, i] = float(p_all[pos + i, x])
                matching = int(x) == int(seq[pos + i + 1])
                accepted[j] += matching
            token = x
    return policies.Trace(q_tok, q_tok.copy(), accepted, p_token=p_tok, positional=True)


@torch.inference_mode()
def sampled_trace(
    target: Decodable,
    draft: Decodable,
    prompt: torch.Tensor,
    k_max: int,
    temperature: float,
    max_new_tokens: int,
    generator: torch.Generator | None = None,
):
    """The round :class:`specviz.core.policies.Trace` of a sampled run at ``k_max``."""
    k_max = int(theory.check_k(k_max, "k_max"))
    if not temperature > 0:
        raise ValueError(f"a sampled trace needs temperature > 0 (greedy runs: greedy_trace); got {temperature}")
    check_inputs([target, draft], prompt, max_new_tokens, temperature, k_max)
    sampler = Sampler(temperature, generator)
    prompt = prompt.to(target.device)
    _prefill(target, prompt)
    _prefill(draft, prompt)
    cursor, generated = Cursor.after_prefill(prompt), 0
    q_tok, q_top, p_tok, accepted = [], [], [], []
    while generated < max_new_tokens:
        proposal = draft_step(draft, cursor, k_max, sampler)
        p = target_probs(target, cursor, proposal, sampler)  # (K + 1, V)
        verdict = verify_step(p, proposal, sampler)
        rows = torch.arange(k_max, device=p.device)
        q_tok.append(proposal.q[rows, proposal.tokens].tolist())
        q_top.append(proposal.q.max(-1).values.tolist())
        p_tok.append(p[rows, proposal.tokens].tolist())
        accepted.append(verdict.accepted)
        cursor, emitted = commit_step(cursor, proposal, verdict)
        generated += len(emitted)
    return policies.Trace(np.asarray(q_tok), np.asarray(q_top), np.asarray(accepted), np.asarray(p_tok))

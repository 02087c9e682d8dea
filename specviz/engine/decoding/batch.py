"""Batched decoding: B prompts at once, each row at its own position (target-only and speculative)."""

from __future__ import annotations

import numpy as np
import torch

from specviz.base.i18n import Message
from specviz.engine import sampling
from specviz.engine.decoding import records
from specviz.engine.decoding.records import GenerationStats, RoundRecord, Sampler, check_inputs
from specviz.engine.models import Decodable


def _check_batch(models, prompts: list[torch.Tensor], max_new_tokens: int, temperature: float, k: int) -> None:
    if not prompts:
        raise Message("prompts must hold at least one prompt")
    for i, prompt in enumerate(prompts):
        try:
            check_inputs(models, prompt, max_new_tokens, temperature, k)
        except ValueError as exc:
            raise Message("prompt {i}: {cause}", i=i, cause=exc) from None
        if prompt.numel() < 2:
            raise Message("prompt {i}: batched decoding needs prompts of at least 2 tokens; got 1", i=i)


def _prefill_batch(model: Decodable, prompts: list[torch.Tensor], device) -> tuple[torch.Tensor, torch.Tensor]:
    """Prefill each row but its last token (end-padded): sequences (B, context), positions (B,)."""
    b, width = len(prompts), max(p.numel() for p in prompts)
    seq = torch.zeros(b, model.context_length, dtype=torch.long, device=device)
    for i, p in enumerate(prompts):
        seq[i, : p.numel()] = p.to(device)
    model.setup_cache(b, model.context_length)
    model(seq[:, : width - 1], 0)
    return seq, torch.tensor([p.numel() - 1 for p in prompts], device=device)


@torch.inference_mode()
def generate_target_only_batch(
    target: Decodable,
    prompts: list[torch.Tensor],
    max_new_tokens: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, float]:
    """Target-only decoding of B prompts, one B-token forward a step: (tokens (B, max_new_tokens), loop seconds)."""
    _check_batch([target], prompts, max_new_tokens, temperature, 0)
    device, sampler, clock = target.device, Sampler(temperature, generator), records._Clock(target.device)
    seq, pos = _prefill_batch(target, prompts, device)
    rows = torch.arange(len(prompts), device=device)
    start = clock.now()
    for _ in range(max_new_tokens):
        logits = target(seq[rows, pos][:, None], pos)[:, -1]  # (B, V)
        pos = pos + 1
        seq[rows, pos] = sampler.token(logits)
    decode_s = clock.now() - start
    first = torch.tensor([p.numel() for p in prompts], device=device)[:, None] + torch.arange(
        max_new_tokens, device=device
    )
    return seq.gather(1, first).cpu(), decode_s


@torch.inference_mode()
def speculative_generate_batch(
    target: Decodable,
    draft: Decodable,
    prompts: list[torch.Tensor],
    k: int,
    temperature: float = 0.0,
    max_new_tokens: int = 128,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, list[GenerationStats]]:
    """Speculative decoding of B prompts, each row advancing by its own a + 1; finished rows idle.

    Returns (tokens (B, max_new_tokens), one :class:`GenerationStats` per row with the batch's timings).
    """
    if int(k) != k or k < 1:
        raise Message("k must be an integer >= 1; got {k!r}", k=k)
    k = int(k)
    _check_batch([target, draft], prompts, max_new_tokens, temperature, k)
    device, sampler, clock = target.device, Sampler(temperature, generator), records._Clock(target.device)
    t0 = clock.now()
    seq, pos = _prefill_batch(target, prompts, device)
    _prefill_batch(draft, prompts, device)
    prefill_ms = 1e3 * (clock.now() - t0)
    b = len(prompts)
    rows = torch.arange(b, device=device)
    lengths = torch.tensor([p.numel() for p in prompts], device=device)
    rounds: list[list[RoundRecord]] = [[] for _ in range(b)]
    start = clock.now()
    while True:
        done = (pos + 1 - lengths) >= max_new_tokens  # (B,) rows with all their tokens
        if bool(done.all()):
            break
        t_a = clock.now()
        # a finished row idles at the end of its prompt, where its K + 1 positions always fit the cache
        # (its position may have passed the last new token by up to K); nothing it computes is kept
        work = torch.where(done, lengths - 1, pos)  # (B,)
        feed = torch.stack([seq[rows, work - 1], seq[rows, work]], 1)  # (B, 2) at positions work − 1, work
        at, tokens, q_rows = work - 1, [], []
        for _ in range(k):
            q_i = sampler.probs(draft(feed, at)[:, -1])  # (B, V)
            x = sampler.sample(q_i)  # (B,)
            tokens.append(x)
            q_rows.append(q_i)
            at, feed = at + feed.shape[1], x[:, None]
        drafts, q = torch.stack(tokens, 1), torch.stack(q_rows, 1)  # (B, K), (B, K, V)
        t_b = clock.now()
        p = sampler.probs(target(torch.cat([seq[rows, work][:, None], drafts], 1), work))  # (B, K + 1, V)
        t_c = clock.now()
        result = sampling.verify(p, q, drafts, sampler.generator, greedy=sampler.greedy)
        accepted = torch.where(done, torch.zeros_like(result.accepted), result.accepted)  # (B,)
        committed = []  # (row, a, emitted) of the rows still decoding
        for i in (~done).nonzero()[:, 0].tolist():
            a = int(accepted[i])
            emitted = drafts[i, :a].tolist() + [int(result.next_token[i])]
            seq[i, pos[i] + 1 : pos[i] + 2 + a] = torch.tensor(emitted, device=device)
            committed.append((i, a, emitted))
        pos = torch.where(done, pos, pos + accepted + 1)
        t_d = clock.now()
        for i, a, emitted in committed:
            verified = min(a + 1, k)
            rounds[i].append(
                RoundRecord(
                    drafted=drafts[i].tolist(),
                    accepted=a,
                    emitted=emitted,
                    accept_mask=result.accept_mask[i, :verified].tolist(),
                    overlap=sampling.overlap(p[i, :verified], q[i, :verified]).tolist(),
                    draft_ms=1e3 * (t_b - t_a),
                    verify_ms=1e3 * (t_c - t_b),
                    other_ms=1e3 * (t_d - t_c),
                )
            )
    decode_s = clock.now() - start
    first = lengths[:, None] + torch.arange(max_new_tokens, device=device)
    stats = [
        GenerationStats(
            k=k,
            temperature=temperature,
            new_tokens=max_new_tokens,
            decode_s=decode_s,
            prefill_ms=prefill_ms,
            t_target_ms=float("nan"),
            t_verify_ms=float(np.median([r.verify_ms for r in rounds[i]])) if rounds[i] else float("nan"),
            rounds=rounds[i],
        )
        for i in range(b)
    ]
    return seq.gather(1, first).cpu(), stats

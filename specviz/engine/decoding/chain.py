"""One speculative round as four named steps (draft → target forward → verify → commit) and the chain loop,
:func:`speculative_generate`, with an optional draft-length policy (:func:`policy_draft`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from specviz.base.i18n import Message
from specviz.core import policies
from specviz.engine import sampling
from specviz.engine.decoding import records, resident
from specviz.engine.decoding.records import (
    GenerationStats,
    RoundRecord,
    Sampler,
    _decode_step_ms,
    _prefill,
    check_inputs,
)
from specviz.engine.models import Decodable


@dataclass(frozen=True)
class Cursor:
    """Where decoding stands (batch 1): ``pending`` (1,) at ``pos``; ``draft_feed`` from ``draft_pos``."""

    pending: torch.Tensor  # (1,)
    pos: int
    draft_feed: torch.Tensor  # (1,) or (2,)
    draft_pos: int

    @classmethod
    def after_prefill(cls, prompt: torch.Tensor) -> Cursor:
        return cls(prompt[-1:], prompt.numel() - 1, prompt[-1:], prompt.numel() - 1)


@dataclass(frozen=True)
class Draft:
    """The draft model's proposal for one round: K tokens and the distributions they came from."""

    tokens: torch.Tensor  # (K,) on the models' device
    q: torch.Tensor  # (K, V) draft distribution at each drafted position

    @property
    def k(self) -> int:
        return int(self.tokens.numel())


@dataclass(frozen=True)
class Verdict:
    """Outcome of verifying a :class:`Draft` against the target's distributions."""

    accepted: int  # a: the first a drafts are kept (0..K)
    next_token: torch.Tensor  # (1,): the correction at position a, or the bonus token when a = K
    accept_mask: list[bool]  # per verified position (min(a + 1, K) entries): the test passed
    overlap: list[float]  # Σ min(p_i, q_i) per verified position


def draft_step(draft: Decodable, cursor: Cursor, k: int, sampler: Sampler) -> Draft:
    """K tokens from the draft: one cached forward each, the first over ``cursor.draft_feed``."""
    tokens, q_rows = [], []
    feed, at = cursor.draft_feed, cursor.draft_pos
    for _ in range(k):
        q_i = sampler.probs(draft(feed.view(1, -1), at)[0, -1])  # (V,)
        x = sampler.sample(q_i[None])  # (1,)
        tokens.append(x)
        q_rows.append(q_i)
        at += feed.numel()
        feed = x
    return Draft(torch.cat(tokens), torch.stack(q_rows))


def target_probs(target: Decodable, cursor: Cursor, draft: Draft, sampler: Sampler) -> torch.Tensor:
    """The verify forward: target distributions (K + 1, V) at positions pos..pos+K of [pending, drafts]."""
    block = torch.cat([cursor.pending, draft.tokens])  # (K+1,)
    return sampler.probs(target(block.view(1, -1), cursor.pos)[0])


def verify_step(p: torch.Tensor, draft: Draft, sampler: Sampler) -> Verdict:
    """The acceptance rule (:func:`specviz.engine.sampling.verify`) on p (K + 1, V) and a draft."""
    k = draft.k
    result = sampling.verify(p[None], draft.q[None], draft.tokens.view(1, k), sampler.generator, greedy=sampler.greedy)
    a = int(result.accepted)
    verified = min(a + 1, k)
    return Verdict(
        accepted=a,
        next_token=result.next_token.view(1),
        accept_mask=result.accept_mask[0, :verified].tolist(),
        overlap=sampling.overlap(p[:verified], draft.q[:verified]).tolist(),
    )


def commit_step(cursor: Cursor, draft: Draft, verdict: Verdict) -> tuple[Cursor, list[int]]:
    """Append ``drafts[:a]`` and the next token; return the new cursor and the tokens appended (no cache rollback)."""
    a, k = verdict.accepted, draft.k
    pending = verdict.next_token.to(cursor.pending.device)
    if a == k:
        feed, feed_pos = torch.cat([draft.tokens[-1:], pending]), cursor.pos + k
    else:
        feed, feed_pos = pending, cursor.pos + a + 1
    emitted = draft.tokens[:a].tolist() + [int(pending)]
    return Cursor(pending, cursor.pos + a + 1, feed, feed_pos), emitted


def _round(
    target: Decodable,
    draft: Decodable,
    cursor: Cursor,
    k: int,
    sampler: Sampler,
    clock: records._Clock,
    schedule: policies.Schedule | None = None,
) -> tuple[Cursor, RoundRecord]:
    """One timed round: draft (draft_ms), target forward (verify_ms), verify + commit (other_ms)."""
    t_a = clock.now()
    if schedule is None:
        proposal, steps, why = draft_step(draft, cursor, k, sampler), None, None
    else:
        proposal, steps, why = policy_draft(draft, cursor, schedule, sampler)
    t_b = clock.now()
    p = target_probs(target, cursor, proposal, sampler)  # (K+1, V)
    t_c = clock.now()
    if proposal.k:
        verdict = verify_step(p, proposal, sampler)
        cursor, emitted = commit_step(cursor, proposal, verdict)
    else:
        verdict = Verdict(0, sampler.sample(p[-1:]).view(1), [], [])
        nxt = verdict.next_token.to(cursor.pending.device)
        seen = steps > 0  # a forward fed the draft its pending tokens; else they wait for the next round
        feed = nxt if seen else torch.cat([cursor.draft_feed, nxt])
        cursor = Cursor(nxt, cursor.pos + 1, feed, cursor.pos + 1 if seen else cursor.draft_pos)
        emitted = [int(nxt)]
    if schedule is not None:
        schedule.update(proposal.k, verdict.accepted)
    t_d = clock.now()
    record = RoundRecord(
        drafted=proposal.tokens.tolist(),
        accepted=verdict.accepted,
        emitted=emitted,
        accept_mask=verdict.accept_mask,
        overlap=verdict.overlap,
        draft_ms=1e3 * (t_b - t_a),
        verify_ms=1e3 * (t_c - t_b),
        other_ms=1e3 * (t_d - t_c),
        draft_steps=steps,
        stop=why,
    )
    return cursor, record


def policy_draft(
    draft: Decodable, cursor: Cursor, schedule: policies.Schedule, sampler: Sampler
) -> tuple[Draft, int, str]:
    """Draft within the schedule's budget, asking the policy per token: (drafts, forwards, stop reason)."""
    tokens, q_rows, qs, tops = [], [], [], []
    feed, at, why, steps = cursor.draft_feed, cursor.draft_pos, "budget", 0
    reads = schedule.policy.reads_confidence
    for _ in range(schedule.k):
        logits = draft(feed.view(1, -1), at)[0, -1]  # (V,)
        q_i = sampler.probs(logits)
        x = sampler.sample(q_i[None])  # (1,)
        decision, steps = None, steps + 1
        if reads:
            conf = torch.softmax(logits.float(), -1)
            qs.append(float(conf[x]))
            tops.append(float(conf.max()))
            decision = schedule.policy.stop_here(qs, tops)
        if decision == "drop":
            why = "dropped"
            break
        tokens.append(x)
        q_rows.append(q_i)
        at += feed.numel()
        feed = x
        if decision == "keep":
            why = "rule"
            break
    if len(tokens) < schedule.policy.min_drafts():
        tokens, q_rows, why = [], [], "below n_min"
    empty = torch.zeros(0, dtype=torch.long, device=cursor.pending.device)
    rows = torch.stack(q_rows) if q_rows else torch.zeros(0, 1, device=cursor.pending.device)  # unused: no verify
    return Draft(torch.cat(tokens) if tokens else empty, rows), steps, why


@torch.inference_mode()
def speculative_generate(
    target: Decodable,
    draft: Decodable,
    prompt: torch.Tensor,
    k: int,
    temperature: float = 0.0,
    max_new_tokens: int = 128,
    generator: torch.Generator | None = None,
    *,
    calibration_steps: int = 8,
    policy: policies.Policy | None = None,
) -> tuple[torch.Tensor, GenerationStats]:
    """Speculative decoding: draft K tokens, verify K + 1 positions in one target forward, until ``max_new_tokens``.

    Returns (tokens (max_new_tokens,), :class:`GenerationStats`). A compiled pair with constant K runs
    :mod:`.resident`. ``calibration_steps`` times T_p, T_q first; ``policy`` drafts live, K its cap.
    """
    if int(k) != k or k < 1:
        raise Message("k must be an integer >= 1; got {k!r}", k=k)
    k = int(k)
    check_inputs([target, draft], prompt, max_new_tokens, temperature, k)
    if policy is None and not hasattr(draft, "draft_policy") and resident.supports(target, draft):
        return resident.speculative_generate(
            target, draft, prompt, k, temperature, max_new_tokens, generator, calibration_steps
        )
    clock, sampler = records._Clock(target.device), Sampler(temperature, generator)
    prompt = prompt.to(target.device)
    t0 = clock.now()
    _prefill(target, prompt)
    _prefill(draft, prompt)
    prefill_ms = 1e3 * (clock.now() - t0)
    cursor = Cursor.after_prefill(prompt)
    # single-step costs, measured at the pending position (those cache slots are rewritten by the loop)
    t_p, t_q = (
        _decode_step_ms(m, cursor.pending, cursor.pos, clock, temperature, calibration_steps)
        if calibration_steps
        else float("nan")
        for m in (target, draft)
    )
    rounds: list[RoundRecord] = []
    generated = 0
    start = clock.now()
    if policy is None and hasattr(draft, "draft_policy"):  # a drafter with its own rule (the n-gram one)
        policy = draft.draft_policy(k)
    schedule = None if policy is None else policies.Schedule(policy, k)
    while generated < max_new_tokens:
        cursor, record = _round(target, draft, cursor, k, sampler, clock, schedule)
        rounds.append(record)
        generated += len(record.emitted)
    stats = GenerationStats(k, temperature, max_new_tokens, clock.now() - start, prefill_ms, t_p, t_q)
    return _finish(stats, rounds)


def _finish(stats: GenerationStats, rounds: list[RoundRecord]) -> tuple[torch.Tensor, GenerationStats]:
    """The first ``stats.new_tokens`` emitted tokens (1-D) and ``stats`` with rounds and median verify time."""
    stats.rounds = rounds
    stats.t_verify_ms = float(np.median([r.verify_ms for r in rounds]))
    emitted = [t for r in rounds for t in r.emitted]
    return torch.tensor(emitted[: stats.new_tokens], dtype=torch.long), stats

"""Decoding loops whose state stays on the device: one host synchronisation per speculative round.

The token buffer ``seq`` (L + K + 2,) and position ``pos`` (0-d) live on the device; drafting,
:func:`specviz.engine.sampling.verify` and the commit are device operations, and the host reads
only the accepted count a round. Records stay on the device and are copied once after the loop.
Timing: CUDA events on CUDA, the wall clock on the CPU, so draft, verify and other ms tile each
round without extra synchronisations. Needs the shape-static step
(:meth:`specviz.engine.models.gpt.GPT.forward_at`); :func:`supports` says when these loops apply.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from specviz.engine import sampling
from specviz.engine.decoding.records import GenerationStats, RoundRecord, Sampler, _prefill

__all__ = ["Marks", "generate_target_only", "speculative_generate", "supports", "to_host"]


def supports(*models) -> bool:
    """True when every model has a shape-static step (:class:`~specviz.engine.models.compiled.CompiledGPT`)."""
    from specviz.engine.models.compiled import CompiledGPT

    return all(isinstance(m, CompiledGPT) for m in models)


def _steady():
    """Inside a loop, run compiled steps without re-checking their guards (nothing they guard on changes there)."""
    return torch.compiler.set_stance(skip_guard_eval_unsafe=True)


def to_host(x: torch.Tensor):
    """The loops' only device → host read: ``x`` as a number or list (tests count its calls)."""
    return x.tolist()


class Marks:
    """Points on the device's timeline, read once at the end: CUDA events on CUDA, the wall clock elsewhere."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.points: list = []

    def mark(self) -> None:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.points.append(event)
        else:
            self.points.append(time.perf_counter())

    def intervals_ms(self) -> np.ndarray:
        """Milliseconds between consecutive marks (n − 1,); synchronises once on CUDA."""
        if len(self.points) < 2:
            return np.zeros(0)
        if self.cuda:
            self.points[-1].synchronize()
            return np.array([a.elapsed_time(b) for a, b in zip(self.points, self.points[1:], strict=False)])
        return 1e3 * np.diff(np.array(self.points))


def _step_ms(model, seq: torch.Tensor, pos: torch.Tensor, at: int, temperature: float, steps: int) -> float:
    """Median of ``steps`` whole decode steps at ``pos`` (1,), position ``at``, from their own generator."""
    sampler = Sampler(temperature, torch.Generator(seq.device).manual_seed(0))
    marks = Marks(seq.device)
    idx = seq[pos].view(1, 1)
    inputs = model.chain_inputs(pos, 1, model.span(at + 1))
    marks.mark()
    with _steady():  # as the loops run them
        for _ in range(steps):
            sampler.token(model.forward_at(idx, *inputs)[0, -1][None])
            marks.mark()
    return float(np.median(marks.intervals_ms()))


def _buffer(prompt: torch.Tensor, length: int) -> torch.Tensor:
    """Token buffer (length,) on the prompt's device with the prompt at 0..P−1."""
    seq = torch.zeros(length, dtype=torch.long, device=prompt.device)
    seq[: prompt.numel()] = prompt
    return seq


@torch.inference_mode()
def generate_target_only(
    target, prompt: torch.Tensor, max_new_tokens: int, temperature: float, generator: torch.Generator | None
) -> tuple[torch.Tensor, GenerationStats]:
    """Target-only decoding with the position on the device, as :func:`specviz.engine.decoding.generate_target_only`."""
    sampler = Sampler(temperature, generator)
    prompt = prompt.to(target.device)
    marks = Marks(target.device)
    marks.mark()
    _prefill(target, prompt)
    marks.mark()
    seq = _buffer(prompt, prompt.numel() + max_new_tokens + 1)
    pos = torch.tensor([prompt.numel() - 1], device=target.device)  # (1,): the pending token's position
    start = time.perf_counter()
    with _steady():
        if sampler.greedy:  # each step and its argmax one compiled call (greedy_chain)
            token, before, tokens = seq[pos], pos - 1, []  # (1,) the pending token, (1,) the slot before it
            for i in range(max_new_tokens):
                token = target.greedy_chain(token, before, 1, prompt.numel() + i)  # writes slot P − 1 + i
                before = before + 1
                tokens.append(token)
                marks.mark()
            seq[prompt.numel() : prompt.numel() + max_new_tokens] = torch.cat(tokens)
        else:
            for i in range(max_new_tokens):
                # the step writes slot P − 1 + i and attends over the slots up to it
                inputs = target.chain_inputs(pos, 1, target.span(prompt.numel() + i))
                logits = target.forward_at(seq[pos].view(1, 1), *inputs)[0, -1]  # (V,)
                pos = pos + 1
                seq[pos] = sampler.token(logits[None])
                marks.mark()
    out = seq[prompt.numel() : prompt.numel() + max_new_tokens].cpu()  # the run's one read
    decode_s = time.perf_counter() - start
    ms = marks.intervals_ms()
    stats = GenerationStats(
        k=0,
        temperature=temperature,
        new_tokens=max_new_tokens,
        decode_s=decode_s,
        prefill_ms=float(ms[0]),
        t_target_ms=float(np.median(ms[1:])),
    )
    return out, stats


@torch.inference_mode()
def speculative_generate(
    target,
    draft,
    prompt: torch.Tensor,
    k: int,
    temperature: float,
    max_new_tokens: int,
    generator: torch.Generator | None,
    calibration_steps: int,
) -> tuple[torch.Tensor, GenerationStats]:
    """Chain speculative decoding with one host read per round (the accepted count a), for ``pos`` the pending token's
    position.

    1. draft: K forwards from ``seq[pos − 1]`` (after an all-accepted round) and ``seq[pos]``; at T = 0
       one :meth:`~specviz.engine.models.compiled.CompiledGPT.greedy_chain` call;
    2. verify: one target forward over ``seq[pos]`` and the K drafts at pos … pos + K;
    3. the rule, :func:`specviz.engine.sampling.verify`: a (1,) and the next token (1,); at T = 0
       steps 2–4 are one :meth:`~specviz.engine.models.compiled.CompiledGPT.greedy_verify` call;
    4. commit: ``pos += a + 1``, drafts and next token written to ``seq``.

    Records stay on the device (:class:`_Log`) and become :class:`RoundRecord` s after the loop. As
    :func:`specviz.engine.decoding.speculative_generate` for a compiled pair with constant K.
    """
    device = target.device
    sampler = Sampler(temperature, generator)
    prompt = prompt.to(device)
    p_len = prompt.numel()
    prefill = Marks(device)
    prefill.mark()
    _prefill(target, prompt)
    _prefill(draft, prompt)
    prefill.mark()
    seq = _buffer(prompt, p_len + max_new_tokens + k + 2)
    pos = torch.tensor([p_len - 1], device=device)  # (1,), never a 0-d index: that would be read on the host
    t_p, t_q = (
        _step_ms(m, seq, pos, p_len - 1, temperature, calibration_steps) if calibration_steps else float("nan")
        for m in (target, draft)
    )
    log, marks = _Log(), Marks(device)
    state = _State(seq, pos, p_len - 1, pending=seq[pos], feed=seq[p_len - 2 : p_len] if p_len >= 2 else None)
    start = time.perf_counter()
    marks.mark()
    with _steady():
        while state.generated < max_new_tokens:
            _round(target, draft, state, k, sampler, log, marks)
    decode_s = time.perf_counter() - start
    stats = GenerationStats(k, temperature, max_new_tokens, decode_s, float(prefill.intervals_ms()[0]), t_p, t_q)
    stats.rounds = _records(log, marks.intervals_ms())
    stats.t_verify_ms = float(np.median([x.verify_ms for x in stats.rounds]))
    out = torch.tensor([t for r in stats.rounds for t in r.emitted][:max_new_tokens], dtype=torch.long)
    return out, stats


@dataclass
class _Log:
    """Per-round records on the device, one tensor per round and field, stacked and copied to the host once."""

    drafted: list[torch.Tensor] = field(default_factory=list)  # (K,) the drafts
    tests: list[torch.Tensor] = field(default_factory=list)  # (K,) bool: the acceptance test passed
    overlaps: list[torch.Tensor] = field(default_factory=list)  # (K,) Σ min(p, q); none at temperature 0
    accepted: list[torch.Tensor] = field(default_factory=list)  # (1,) a
    nexts: list[torch.Tensor] = field(default_factory=list)  # (1,) the next token

    def add(self, drafts, tests, a, nxt, overlaps=None) -> None:
        self.drafted.append(drafts)
        self.tests.append(tests)
        self.accepted.append(a)
        self.nexts.append(nxt)
        if overlaps is not None:
            self.overlaps.append(overlaps)

    def host(self) -> tuple[list, list, list, list, list]:
        """drafted, tests, overlaps (R, K), a, next (R,) as lists; a greedy run's overlaps are its tests."""
        drafted, tests = torch.stack(self.drafted).cpu(), torch.stack(self.tests).cpu()
        overlaps = torch.stack(self.overlaps).cpu() if self.overlaps else tests.float()
        accepted, nexts = torch.cat(self.accepted + self.nexts).cpu().view(2, -1).tolist()
        return drafted.tolist(), tests.tolist(), overlaps.tolist(), accepted, nexts


@dataclass
class _State:
    """Where a resident decode stands: the tokens and the position on the device, the counts on the host."""

    seq: torch.Tensor  # (L,) every token so far
    pos: torch.Tensor  # (1,) the pending token's position
    first: int  # the pending token's position before the first round (the prompt's last)
    generated: int = 0  # tokens emitted so far (the host learns a each round)
    rounds: int = 0
    behind: bool = False  # the last round accepted every draft: the draft never saw the last one
    pending: torch.Tensor | None = None  # (1,) the token at pos (a greedy round's; seq's at temperature > 0)
    feed: torch.Tensor | None = None  # (2,) the tokens at pos − 1 and pos (a greedy round's drafting input)


def _round(target, draft, state: _State, k: int, sampler: Sampler, log: _Log, marks: Marks) -> None:
    """One round (steps 1–4 of :func:`speculative_generate`), recorded in ``log``."""
    seq, pos, device = state.seq, state.pos, state.seq.device
    now = state.first + state.generated  # pos, as the host knows it: each forward's span follows from it
    if sampler.greedy and now >= 1:
        # 1. the K drafts in one compiled call, from the token before the pending one (the last draft, which
        # the draft never fed, after a round that accepted every draft; else a rewrite of its slot as it was)
        drafts = draft.greedy_chain(state.feed, pos - 2, k, now + k)  # (K,)
    else:
        # 1. draft: the last draft first when the draft is behind, then the pending token, a one-token forward
        # each (as the greedy chain feeds them: the draft's only compiled step is its one-token one)
        if state.behind:
            draft.forward_at(seq[pos - 1].view(1, 1), *draft.chain_inputs(pos - 1, 1, draft.span(now)))
        logits = draft.forward_at(seq[pos].view(1, 1), *draft.chain_inputs(pos, 1, draft.span(now + 1)))
        tokens, q_rows = [], []
        for i in range(k):
            if i:
                span = draft.span(now + i + 1)
                logits = draft.forward_at(tokens[-1].view(1, 1), *draft.chain_inputs(pos + i, 1, span))
            q_i = sampler.probs(logits[0, -1])  # (V,)
            tokens.append(sampler.sample(q_i[None]))  # (1,)
            q_rows.append(q_i)
        drafts, q = torch.cat(tokens), torch.stack(q_rows)  # (K,), (K, V)
    marks.mark()
    if sampler.greedy:
        # 2–4. the verify forward, the greedy rule and the commit in one compiled call
        a, nxt, tests, state.feed, state.pos = target.greedy_verify(state.pending, drafts, pos, now + k + 1)
        state.pending = nxt
        log.add(drafts, tests, a, nxt)
        marks.mark()
    else:
        # 2. verify forward
        block = torch.cat([seq[pos], drafts])  # (K+1,)
        span = target.span(now + k + 1)
        p = sampler.probs(target.forward_at(block[None], *target.chain_inputs(pos, k + 1, span))[0])  # (K+1, V)
        marks.mark()
        # 3. the rule
        result = sampling.verify(p[None], q[None], drafts[None], sampler.generator)
        a, nxt = result.accepted, result.next_token
        log.add(drafts, result.accept_mask[0], a, nxt, sampling.overlap(p[:k], q))
        # 4. commit
        seq[pos + torch.arange(1, k + 1, device=device)] = drafts
        state.pos = pos + 1 + a  # the next token's slot
        seq[state.pos] = nxt
    accepted = to_host(a[0])  # the round's one read
    r = state.rounds
    state.generated, state.rounds, state.behind = state.generated + 1 + accepted, r + 1, accepted == k
    marks.mark()


def _records(log: _Log, ms: np.ndarray) -> list[RoundRecord]:
    """Round records from the log and the marks' intervals (3R,), trimmed to the verified positions."""
    drafted, tests, overlaps, accepted, nexts = log.host()
    out = []
    for i, (d, t, o, a, nxt) in enumerate(zip(drafted, tests, overlaps, accepted, nexts, strict=True)):
        verified = min(a + 1, len(d))
        out.append(
            RoundRecord(
                drafted=d,
                accepted=a,
                emitted=d[:a] + [nxt],
                accept_mask=t[:verified],
                overlap=o[:verified],
                draft_ms=float(ms[3 * i]),
                verify_ms=float(ms[3 * i + 1]),
                other_ms=float(ms[3 * i + 2]),
            )
        )
    return out

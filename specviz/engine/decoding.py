"""Target-only and speculative generation with per-round records and timings.

Both loops drive any :class:`specviz.engine.models.Decodable` (the bundled GPT, the Hugging
Face adapter) through its cache (written by absolute position) and time only the
decoding loop, synchronising CUDA around every timed region (:class:`_Clock`). A
speculative round is four named steps: :func:`draft_step` (a :class:`Draft` of K
tokens), :func:`target_probs` (one target forward over K + 1 positions),
:func:`verify_step` (:func:`specviz.engine.sampling.verify` — the same rule the lab
simulates — giving a :class:`Verdict`) and :func:`commit_step` (the next
:class:`Cursor`); :func:`_round` times them into a :class:`RoundRecord`.

Cache invariant (batch 1): ``seq`` holds every token so far; both caches hold
valid keys/values for ``seq[:-1]``; the last token is *pending* — fed at the
start of the next forward. After a round that accepted ``a`` of K drafts the
target cache is valid up to the accepted prefix and its stale tail is simply
overwritten next round; the draft cache additionally lacks the last draft when
all K were accepted, so that draft is fed together with the pending token.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from specviz.base.i18n import Message
from specviz.core import policies, theory, trees
from specviz.engine import sampling
from specviz.engine.models import Decodable

__all__ = [
    "Cursor",
    "Divergence",
    "Draft",
    "GenerationStats",
    "RoundRecord",
    "Sampler",
    "Verdict",
    "check_inputs",
    "commit_step",
    "draft_step",
    "first_divergence",
    "generate_target_only",
    "greedy_trace",
    "probabilities",
    "sampled_trace",
    "speculative_generate",
    "target_probs",
    "verify_step",
]


def probabilities(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Sampling distribution of ``logits`` (..., V) at ``temperature``; one-hot argmax at T = 0."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(torch.float32)
    return torch.softmax(logits.float() / temperature, -1)


def _sample(probs: torch.Tensor, generator: torch.Generator | None, greedy: bool) -> torch.Tensor:
    """One token from each row of ``probs`` (B, V) → (B,)."""
    if greedy:
        return probs.argmax(-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


class _Clock:
    """Wall-clock timer that synchronises CUDA so GPU work is inside the timed region."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


@dataclass
class RoundRecord:
    """One speculative round."""

    drafted: list[int]  # the K draft tokens
    accepted: int  # how many of them were accepted (0..K)
    emitted: list[int]  # tokens the round appended: drafted[:accepted] + [correction or bonus]
    accept_mask: list[bool]  # per verified position (min(accepted + 1, K) entries): the test passed
    overlap: list[float]  # Σ min(p_i, q_i) per verified position
    draft_ms: float  # K draft forwards (plus the catch-up token after an all-accepted round)
    verify_ms: float  # the one target forward over K + 1 positions
    other_ms: float  # verification rule, bookkeeping
    path: list[int] | None = None  # tree rounds: the accepted nodes, by depth (root excluded)
    ranks: list[int] | None = None  # tree rounds: the rank of each accepted node among its siblings
    leaf: bool | None = None  # tree rounds: the accepted path ended at a leaf (the last token is a bonus)
    draft_steps: int | None = None  # policy rounds: draft forwards spent (a discarded token's included)
    stop: str | None = None  # policy rounds: why drafting stopped ("budget", "rule", "dropped", "below n_min")

    @property
    def bonus(self) -> bool:
        """True when the last token is a bonus from p: all K drafts (a tree: a whole path) accepted."""
        return self.leaf if self.leaf is not None else bool(self.drafted) and self.accepted == len(self.drafted)


@dataclass
class GenerationStats:
    """Measurements of one generation (target-only when ``k`` is 0)."""

    k: int
    temperature: float
    new_tokens: int
    decode_s: float  # wall time of the decoding loop (prefill excluded)
    prefill_ms: float
    t_target_ms: float  # median single-token target decode step
    t_draft_ms: float = float("nan")  # median single-token draft step
    t_verify_ms: float = float("nan")  # median target forward over K + 1 tokens
    rounds: list[RoundRecord] = field(default_factory=list)
    tree: trees.Tree | None = None  # tree rounds: the draft tree (k is its node count)

    @property
    def policy_run(self) -> bool:
        """Rounds drafted under a draft-length policy (their length varies)."""
        return any(r.draft_steps is not None for r in self.rounds)

    @property
    def draft_steps(self) -> float:
        """Draft forwards per round: K for a chain, the depth for a tree (one forward per level), the
        mean forwards spent for a policy run."""
        if self.tree is not None:
            return self.tree.depth
        if self.policy_run:
            return float(np.mean([r.draft_steps for r in self.rounds]))
        return self.k

    @property
    def mean_drafts(self) -> float:
        """Drafts verified per round (K for a chain run)."""
        return float(np.mean([len(r.drafted) for r in self.rounds])) if self.policy_run else float(self.k)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.decode_s

    @property
    def accepted_total(self) -> int:
        return sum(r.accepted for r in self.rounds)

    @property
    def rejected_rounds(self) -> int:
        return sum(not r.bonus for r in self.rounds if r.drafted)  # a round that verified nothing tested nothing

    @property
    def alpha_hat(self) -> float:
        """MLE of α under the truncated geometric model: A / (A + R)."""
        a, r = self.accepted_total, self.rejected_rounds
        return a / (a + r) if a + r else float("nan")

    @property
    def alpha_overlap(self) -> float:
        """Mean Σ min(p, q) over verified positions."""
        values = [x for r in self.rounds for x in r.overlap]
        return float(np.mean(values)) if values else float("nan")

    @property
    def mean_tokens(self) -> float:
        """Measured E[N]: mean tokens appended per round."""
        return float(np.mean([len(r.emitted) for r in self.rounds])) if self.rounds else float("nan")

    @property
    def per_position_acceptance(self) -> list[float]:
        """a_i = P(position i accepted | positions < i accepted), i = 1..K (NaN if never reached)."""
        reached = [sum(len(r.drafted) >= i and r.accepted >= i - 1 for r in self.rounds) for i in range(1, self.k + 1)]
        passed = [sum(r.accepted >= i for r in self.rounds) for i in range(1, self.k + 1)]
        return [p / n if n else float("nan") for p, n in zip(passed, reached, strict=True)]

    @property
    def c(self) -> float:
        return self.t_target_ms / self.t_draft_ms

    @property
    def v(self) -> float:
        """Extra verification cost per drafted token: (T_verify / T_p − 1) / K, floored at 0."""
        return max(0.0, (self.t_verify_ms / self.t_target_ms - 1.0) / self.mean_drafts) if self.mean_drafts else 0.0

    @property
    def o(self) -> float:
        """Per-round overhead in target steps: mean round time not explained by one verify forward
        and D draft steps (D = :attr:`draft_steps`), (T_round − T_verify − D·T_q) / T_p, floored at 0.
        It holds sampling and bookkeeping on both sides and the draft's catch-up token after an
        all-accepted round."""
        if not self.rounds:
            return 0.0
        round_ms = float(np.mean([r.draft_ms + r.verify_ms + r.other_ms for r in self.rounds]))
        return max(0.0, (round_ms - self.t_verify_ms - self.draft_steps * self.t_draft_ms) / self.t_target_ms)

    @property
    def tree_p(self) -> np.ndarray:
        """Tree runs: the positional acceptance p̂ measured from the rounds (ranks never reached: 0)."""
        return np.nan_to_num(trees.positional_acceptance(self.tree, self.rounds))

    @property
    def predicted_tokens(self) -> float:
        """Tokens per round the model predicts: E[N] at α̂ (chain), F(T) at the measured p̂ (tree)."""
        if self.tree is not None:
            return trees.expected_tokens(self.tree, self.tree_p)
        return float(theory.expected_tokens(min(max(self.alpha_hat, 0.0), 1.0), self.k))

    def predicted_speedup(self, measured_cost: bool = False) -> float:
        """Speedup predicted by specviz.core.theory from :attr:`predicted_tokens` and the measured c (with
        v, o if asked): E[N] / (1 + v·K + o + D/c), D = :attr:`draft_steps`."""
        v, o = (self.v, self.o) if measured_cost else (0.0, 0.0)
        if self.policy_run:  # the cost model at the measured tokens and mean draft lengths
            return self.mean_tokens / (1.0 + v * self.mean_drafts + o + self.draft_steps / self.c)
        steps = self.draft_steps if self.tree is not None else None
        return float(theory.speedup_from_tokens(self.predicted_tokens, self.c, self.k, v, o, steps))


def check_inputs(models, prompt: torch.Tensor, max_new_tokens: int, temperature: float, k: int) -> None:
    """ValueError unless ``prompt`` + ``max_new_tokens`` + K + 1 fits every model's context (and the rest is valid)."""
    if prompt.ndim != 1 or prompt.numel() == 0:
        raise Message("err.decoding.prompt_shape", shape=tuple(prompt.shape))
    if max_new_tokens < 1:
        raise Message("err.decoding.max_new_tokens", n=max_new_tokens)
    if not (temperature >= 0 and np.isfinite(temperature)):
        raise Message("err.decoding.temperature", temperature=temperature)
    need = prompt.numel() + max_new_tokens + k + 1
    context = min(m.context_length for m in models)
    if need > context:
        raise Message("err.decoding.context", prompt=prompt.numel(), new=max_new_tokens, need=need, context=context)


def _prefill(model: Decodable, prompt: torch.Tensor) -> None:
    """Fill the cache with every prompt token but the last (which stays pending)."""
    model.setup_cache(1, model.context_length)
    if prompt.numel() > 1:
        model(prompt[None, :-1], 0)


@torch.inference_mode()
def _decode_step_ms(model: Decodable, pending: torch.Tensor, start: int, clock: _Clock, steps: int = 8) -> float:
    """Median time of single-token cached decode steps at position ``start`` (cache left as it was valid)."""
    times = []
    for _ in range(steps):
        t0 = clock.now()
        model(pending.view(1, 1), start)
        times.append(clock.now() - t0)
    return 1e3 * float(np.median(times))


@torch.inference_mode()
def generate_target_only(
    target: Decodable,
    prompt: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, GenerationStats]:
    """Plain autoregressive decoding with the target's KV cache (the baseline).

    Returns ``(new_tokens, stats)``: exactly ``max_new_tokens`` ids (1-D LongTensor)
    and a :class:`GenerationStats` with ``t_target_ms`` the median decode step.
    """
    check_inputs([target], prompt, max_new_tokens, temperature, 0)
    clock, sampler = _Clock(target.device), Sampler(temperature, generator)
    prompt = prompt.to(target.device)
    t0 = clock.now()
    _prefill(target, prompt)
    prefill_ms = 1e3 * (clock.now() - t0)
    pending, pos = prompt[-1:], prompt.numel() - 1
    out, steps = [], []
    start = clock.now()
    for _ in range(max_new_tokens):
        t = clock.now()
        pending = sampler.sample(sampler.probs(target(pending.view(1, 1), pos)[0, -1])[None])  # (1,)
        steps.append(clock.now() - t)
        out.append(pending)
        pos += 1
    decode_s = clock.now() - start
    stats = GenerationStats(
        k=0,
        temperature=temperature,
        new_tokens=max_new_tokens,
        decode_s=decode_s,
        prefill_ms=prefill_ms,
        t_target_ms=1e3 * float(np.median(steps)),
    )
    return torch.cat(out).cpu(), stats


# --- one speculative round: draft → target forward → verify → commit ------------------------


@dataclass(frozen=True)
class Sampler:
    """How a distribution becomes a token: argmax at temperature 0, else a draw from ``generator``."""

    temperature: float
    generator: torch.Generator | None = None  # on the models' device

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """(..., V) logits → (..., V) distributions at the temperature (see :func:`probabilities`)."""
        return probabilities(logits, self.temperature)

    def sample(self, probs: torch.Tensor) -> torch.Tensor:
        """One token per row of ``probs`` (B, V) → (B,)."""
        return _sample(probs, self.generator, self.greedy)


@dataclass(frozen=True)
class Cursor:
    """Where decoding stands (batch 1; the cache invariant of the module docstring).

    ``pending`` (1,) is the last token, at position ``pos``, not yet fed to the target. ``draft_feed``
    holds the tokens the draft must be fed before it drafts (the pending token, preceded by the
    last draft after an all-accepted round), the first of them at position ``draft_pos``.
    """

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
    """The acceptance rule (:func:`specviz.engine.sampling.verify`, ``docs/design.md`` §1) on p (K + 1, V) and a draft."""
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
    """Append ``drafts[:a]`` + the next token; return the new cursor and the tokens appended.

    No cache is rolled back: stale entries beyond the accepted prefix are overwritten by the
    next forwards. When all K were accepted the draft never saw its last token, so it is fed
    together with the new pending one.
    """
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
    clock: _Clock,
    schedule: policies.Schedule | None = None,
) -> tuple[Cursor, RoundRecord]:
    """One timed round: draft (draft_ms), target forward (verify_ms), verify + commit (other_ms).

    With a ``schedule`` the draft length is the policy's (:func:`policy_draft`), and a round that
    verifies nothing is one plain target step (its token drawn from p, as target-only decoding would).
    """
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
    """Draft up to the schedule's budget, asking the policy after each token whether to go on.

    The rule reads the draft's own (temperature-1) probabilities: q(x) of the token drafted and q_top.
    Returns (the drafts to verify, draft forwards spent, why drafting stopped).
    """
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
    """Speculative decoding: draft K tokens, verify K + 1 positions in one target forward.

    Each round is :func:`draft_step` → :func:`target_probs` → :func:`verify_step` →
    :func:`commit_step` (see :func:`_round`), until ``max_new_tokens`` tokens are out.

    Parameters
    ----------
    target, draft : Decodable
        Models sharing the vocabulary, on the same device.
    prompt : LongTensor, shape (P,)
        Prompt token ids.
    k : int
        Draft length K ≥ 1.
    temperature : float
        0 for greedy (output equals the target's own greedy output), else sampling at T.
    max_new_tokens : int
        Exactly this many ids are returned.
    generator : torch.Generator, optional
        On the models' device; drives drafting and the verification uniforms.
    calibration_steps : int
        Single-token target and draft steps timed before decoding (outside the
        decode timing) to measure T_p and T_q; 0 skips them (T_p, T_q are then NaN).
    policy : specviz.core.policies.Policy, optional
        A draft-length rule run live (:func:`policy_draft`); K is then its cap. None: K every
        round, exactly the constant policy. Records say how many tokens each round drafted and
        verified (``draft_steps``, ``drafted``) and why it stopped (``stop``).

    Returns
    -------
    new_tokens : LongTensor, shape (max_new_tokens,)
    stats : GenerationStats
        Per-round records, α̂ = A/(A+R), α̂_overlap, measured E[N], per-position
        acceptance, T_p, T_q, T_verify, c, v, o, tokens/s and predicted speedups.
    """
    if int(k) != k or k < 1:
        raise Message("err.decoding.k", k=k)
    k = int(k)
    check_inputs([target, draft], prompt, max_new_tokens, temperature, k)
    clock, sampler = _Clock(target.device), Sampler(temperature, generator)
    prompt = prompt.to(target.device)
    t0 = clock.now()
    _prefill(target, prompt)
    _prefill(draft, prompt)
    prefill_ms = 1e3 * (clock.now() - t0)
    cursor = Cursor.after_prefill(prompt)
    # single-step costs, measured at the pending position (those cache slots are rewritten by the loop)
    t_p, t_q = (
        _decode_step_ms(m, cursor.pending, cursor.pos, clock, calibration_steps) if calibration_steps else float("nan")
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
    """The first ``stats.new_tokens`` emitted tokens (1-D) and ``stats`` with the rounds and the
    median verify time filled in (a round may overshoot the count; its extra tokens are dropped)."""
    stats.rounds = rounds
    stats.t_verify_ms = float(np.median([r.verify_ms for r in rounds]))
    emitted = [t for r in rounds for t in r.emitted]
    return torch.tensor(emitted[: stats.new_tokens], dtype=torch.long), stats


# --- traces for replaying draft-length policies (specviz.core.policies) ---------------------------------


@torch.inference_mode()
def greedy_trace(target: Decodable, draft: Decodable, prompt: torch.Tensor, k_max: int, max_new_tokens: int):
    """The positional trace (:class:`specviz.core.policies.Trace`) of a greedy run: row j is the draft's
    greedy chain of ``k_max`` tokens from position j of the target's greedy output.

    The output does not depend on how many tokens a policy drafts, so replaying any policy on these
    rows walks exactly the rounds the engine would run with it. Per row: q(x) = q_top (the draft's
    top-1 probability), the target's p of each drafted token while the chain still matches the
    output (NaN after the first mismatch), and the accepted count (the leading matches). Costs
    ``max_new_tokens`` × ``k_max`` single-token draft forwards and one target forward.
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
    """The round trace (:class:`specviz.core.policies.Trace`, rows = rounds) of a sampled run at a fixed
    ``k_max`` with no early stop: per round and draft position q(x) and q_top of the draft's sampling
    distribution, the target's p(x), and the accepted count.

    A policy replayed on it gets min(k, a) accepted where the run accepted a. At T > 0 that is an
    approximation (a shorter round would have drawn its next round afresh), unlike
    :func:`greedy_trace` at T = 0.
    """
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


# --- draft trees: the draft expands a tree by rank, the target verifies every node at once ----------


@functools.lru_cache(maxsize=32)
def _tree_parts(tree) -> tuple[torch.Tensor, list[list[int]], list[list[int]]]:
    """(parents (N,), children of each node by rank, the internal nodes (those with children) by depth).

    Cached per tree shape: every round of a decode asks for the same one (callers must not mutate)."""
    kids = [tree.children(n) for n in range(len(tree))]
    levels = [[n for n in range(len(tree)) if tree.depths[n] == d and kids[n]] for d in range(tree.depth)]
    return torch.tensor(tree.parents), kids, levels


def draft_tree(
    draft, tree, tokens: torch.Tensor, start: int, root_logits: torch.Tensor, sampler: Sampler
) -> dict[int, torch.Tensor]:
    """Fill ``tokens`` (N,) (node 0, the root, given) by expanding ``tree`` level by level.

    Node n's children take, by rank, the draft's likeliest tokens at n (greedy: the top of its logits,
    since the one-hot q of T = 0 ranks nothing past the first) or tokens drawn i.i.d. from q (T > 0,
    as multi-step speculative sampling needs). One draft forward per level over that level's
    internal nodes (:meth:`GPT.forward_tree`); ``root_logits`` (V,) come from the catch-up forward.
    Returns q (V,) at every internal node.
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
    """Walk the tree from the root with :func:`specviz.engine.sampling.verify_siblings` at every node.

    ``p`` (N, V): the target at every node. Returns (accepted path of nodes, the last token — a
    correction, or a bonus from p at a leaf —, the test outcome at each node tested, Σ min(p, q) there).
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

    A round: the draft catches up on the tokens committed since its last round and gives its logits at
    the root (the pending token); :func:`draft_tree` expands the tree; the target scores every node in
    one forward with a tree attention mask (:meth:`GPT.forward_tree`, node n in cache slot pos + n);
    :func:`verify_tree` accepts a path (greedy: the tokens equal to the target's argmax; T > 0:
    SpecInfer's multi-step speculative sampling, so the output follows the target exactly);
    :meth:`GPT.keep_path` moves the accepted nodes' cache entries to their positions, so the next
    round continues as the chain engine does. Records carry the path and the accepted ranks
    (:func:`specviz.core.trees.positional_acceptance` estimates p from them).

    ``calibration_steps`` times single-token target and draft steps first (T_p, T_q), as
    :func:`speculative_generate` does. Returns (new tokens (max_new_tokens,), stats with ``k`` = the
    tree's drafts and ``tree``).
    """
    for name, model in (("target", target), ("draft", draft)):
        if not hasattr(model, "forward_tree"):
            raise ValueError(
                f"the {name} ({type(model).__name__}) has no tree attention: tree drafting needs GPT models"
            )
    n = tree.drafts
    check_inputs([target, draft], prompt, max_new_tokens, temperature, max(n, 1))
    clock, sampler = _Clock(target.device), Sampler(temperature, generator)
    prompt = prompt.to(target.device)
    t0 = clock.now()
    _prefill(target, prompt)
    _prefill(draft, prompt)
    prefill_ms = 1e3 * (clock.now() - t0)
    seq = torch.zeros(target.context_length, dtype=torch.long, device=target.device)
    seq[: prompt.numel()] = prompt
    pos = fed = prompt.numel() - 1  # pending token's position; the draft's cache holds positions < fed
    t_p, t_q = (
        _decode_step_ms(m, prompt[-1:], pos, clock, calibration_steps) if calibration_steps else float("nan")
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


# --- batched decoding: B prompts at once, each row at its own position ----------------------------


def _check_batch(models, prompts: list[torch.Tensor], max_new_tokens: int, temperature: float, k: int) -> None:
    if not prompts:
        raise Message("err.decoding.no_prompts")
    for i, prompt in enumerate(prompts):
        try:
            check_inputs(models, prompt, max_new_tokens, temperature, k)
        except ValueError as exc:
            raise Message("err.decoding.in_prompt", i=i, cause=exc) from None
        if prompt.numel() < 2:
            raise Message("err.decoding.batch_short", i=i)


def _prefill_batch(model: Decodable, prompts: list[torch.Tensor], device) -> tuple[torch.Tensor, torch.Tensor]:
    """Fill row b's cache with prompt b but its last token; return the sequences (B, context) and the
    pending positions (B,). Shorter prompts are padded at the end: the padding's cache entries sit
    beyond the row's position, where no query of that row looks, and are overwritten as it advances."""
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
    """Target-only decoding of B prompts at once: one cached forward of B tokens per step.

    Returns (new tokens (B, max_new_tokens), wall seconds of the decoding loop).
    """
    _check_batch([target], prompts, max_new_tokens, temperature, 0)
    device, sampler, clock = target.device, Sampler(temperature, generator), _Clock(target.device)
    seq, pos = _prefill_batch(target, prompts, device)
    rows = torch.arange(len(prompts), device=device)
    start = clock.now()
    for _ in range(max_new_tokens):
        logits = target(seq[rows, pos][:, None], pos)[:, -1]  # (B, V)
        pos = pos + 1
        seq[rows, pos] = sampler.sample(sampler.probs(logits))
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
    """Speculative decoding of B prompts at once, each row with its own position and acceptance.

    A round drafts K tokens for every row (the first draft forward feeds each row its last two
    tokens, so a row whose K drafts were all accepted catches the draft up), verifies K + 1 positions
    per row in one target forward at the rows' own positions, applies the acceptance rule row by row
    (:func:`specviz.engine.sampling.verify` is batched) and advances each row by its own a + 1. A row that
    has its ``max_new_tokens`` stops advancing: until all have, it idles at the end of its prompt (its
    work is discarded), so no row ever reaches past the context that :func:`check_inputs` allows.

    Returns (new tokens (B, max_new_tokens), one :class:`GenerationStats` per row: its own rounds;
    the timings are the batch's).
    """
    if int(k) != k or k < 1:
        raise Message("err.decoding.k", k=k)
    k = int(k)
    _check_batch([target, draft], prompts, max_new_tokens, temperature, k)
    device, sampler, clock = target.device, Sampler(temperature, generator), _Clock(target.device)
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


@dataclass(frozen=True)
class Divergence:
    """Where two greedy outputs first differ, and how close the target's choice was there."""

    position: int  # index into the new tokens (0-based)
    expected: int  # the target-only token
    got: int  # the speculative token
    margin: float  # target logit of its top-1 minus its top-2 at that position (full recompute)

    @property
    def near_tie(self) -> bool:
        """A margin below 1e-3 of the logit scale: a numerical near-tie, not a bug in the rule."""
        return self.margin < 1e-3


@torch.inference_mode()
def first_divergence(
    target: Decodable, prompt: torch.Tensor, expected: torch.Tensor, got: torch.Tensor
) -> Divergence | None:
    """First position where ``got`` differs from ``expected`` (both 1-D new-token ids), or None.

    The margin comes from one full-recompute forward (no cache) over prompt + expected[:position]:
    top-1 minus top-2 logit at the last position. A tiny margin means the two engines' numerics
    (batched verify vs one-token steps) can legitimately pick different argmaxes.
    """
    n = min(expected.numel(), got.numel())
    diff = (expected[:n] != got[:n]).nonzero()
    if diff.numel() == 0:
        return None
    pos = int(diff[0, 0])
    context = torch.cat([prompt.cpu(), expected[:pos].cpu()]).to(target.device)  # (T,)
    logits = target(context.view(1, -1))[0, -1].float()  # (V,)
    top = torch.topk(logits, 2).values
    return Divergence(pos, int(expected[pos]), int(got[pos]), float(top[0] - top[1]))

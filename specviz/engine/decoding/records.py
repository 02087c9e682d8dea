"""What a generation measured (:class:`RoundRecord`, :class:`GenerationStats`) and what every loop shares:
probabilities, sampling, clock, prefill, checks, the target-only baseline."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from specviz.base.i18n import Message
from specviz.core import theory, trees
from specviz.engine.models import Decodable


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
    t_target_ms: float  # median single-token target decode step (forward, distribution, token)
    t_draft_ms: float = float("nan")  # median single-token draft step (the same)
    t_verify_ms: float = float("nan")  # median target forward over K + 1 tokens
    rounds: list[RoundRecord] = field(default_factory=list)
    tree: trees.Tree | None = None  # tree rounds: the draft tree (k is its node count)

    @property
    def policy_run(self) -> bool:
        """Rounds drafted under a draft-length policy (their length varies)."""
        return any(r.draft_steps is not None for r in self.rounds)

    @property
    def draft_steps(self) -> float:
        """Draft forwards per round: K (chain), depth (tree), mean spent (policy)."""
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
        """Per-round overhead in target steps: (T_round − T_verify − D·T_q) / T_p, floored at 0."""
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
        """E[N] / (1 + v·K + o + D/c) from :attr:`predicted_tokens`, measured c (v, o if asked)."""
        v, o = (self.v, self.o) if measured_cost else (0.0, 0.0)
        if self.policy_run:  # the cost model at the measured tokens and mean draft lengths
            return self.mean_tokens / (1.0 + v * self.mean_drafts + o + self.draft_steps / self.c)
        steps = self.draft_steps if self.tree is not None else None
        return float(theory.speedup_from_tokens(self.predicted_tokens, self.c, self.k, v, o, steps))


def check_inputs(models, prompt: torch.Tensor, max_new_tokens: int, temperature: float, k: int) -> None:
    """ValueError unless ``prompt`` + ``max_new_tokens`` + K + 1 fits every model's context (and the rest is valid)."""
    if prompt.ndim != 1 or prompt.numel() == 0:
        raise Message(
            "prompt must be a non-empty 1-D tensor of token ids; got shape {shape}", shape=tuple(prompt.shape)
        )
    if max_new_tokens < 1:
        raise Message("max_new_tokens must be >= 1; got {n}", n=max_new_tokens)
    if not (temperature >= 0 and np.isfinite(temperature)):
        raise Message("temperature must be a finite number >= 0; got {temperature}", temperature=temperature)
    need = prompt.numel() + max_new_tokens + k + 1
    context = min(m.context_length for m in models)
    if need > context:
        raise Message(
            "prompt ({prompt} tokens) + max_new_tokens ({new}) + K + 1 = {need} exceeds the model's context of {context} tokens",
            prompt=prompt.numel(),
            new=max_new_tokens,
            need=need,
            context=context,
        )


def _prefill(model: Decodable, prompt: torch.Tensor) -> None:
    """Fill the cache with every prompt token but the last (which stays pending)."""
    model.setup_cache(1, model.context_length)
    if prompt.numel() > 1:
        model(prompt[None, :-1], 0)


def next_token(model: Decodable, pending: torch.Tensor, pos: int, sampler: Sampler) -> torch.Tensor:
    """One target-only step: forward over the pending token at ``pos``, its distribution, the token (1,)."""
    return sampler.token(model(pending.view(1, 1), pos)[0, -1][None])


@torch.inference_mode()
def _decode_step_ms(
    model: Decodable, pending: torch.Tensor, start: int, clock: _Clock, temperature: float, steps: int = 8
) -> float:
    """Median time of whole decode steps (:func:`next_token`, a draw included) at ``start``, the cache left valid."""
    sampler = Sampler(temperature, torch.Generator(pending.device).manual_seed(0))
    times = []
    for _ in range(steps):
        t0 = clock.now()
        next_token(model, pending, start, sampler)
        times.append(clock.now() - t0)
    return 1e3 * float(np.median(times))


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

    def token(self, logits: torch.Tensor) -> torch.Tensor:
        """One token per row of ``logits`` (B, V) → (B,); at T = 0 the argmax directly."""
        return logits.argmax(-1) if self.greedy else self.sample(self.probs(logits))


@torch.inference_mode()
def generate_target_only(
    target: Decodable,
    prompt: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, GenerationStats]:
    """Plain cached autoregressive decoding: (``max_new_tokens`` ids, stats with ``t_target_ms``)."""
    check_inputs([target], prompt, max_new_tokens, temperature, 0)
    from specviz.engine.decoding import resident  # it builds on this module

    if resident.supports(target):  # a compiled target: the position stays on the device
        return resident.generate_target_only(target, prompt, max_new_tokens, temperature, generator)
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
        pending = next_token(target, pending, pos, sampler)  # (1,)
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

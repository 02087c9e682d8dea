"""Target-only and speculative generation with per-round records and timings.

Both loops use the models' static KV caches (written by absolute position) and
time only the decoding loop, synchronising CUDA around every timed region. The
speculative loop calls :func:`specviz.sampling.verify` — the same rule the lab
simulates — so what the lab shows is what the engine does.

Cache invariant (batch 1): ``seq`` holds every token so far; both caches hold
valid keys/values for ``seq[:-1]``; the last token is *pending* — fed at the
start of the next forward. After a round that accepted ``a`` of K drafts the
target cache is valid up to the accepted prefix and its stale tail is simply
overwritten next round; the draft cache additionally lacks the last draft when
all K were accepted, so that draft is fed together with the pending token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from specviz import sampling, theory

__all__ = [
    "Divergence",
    "GenerationStats",
    "RoundRecord",
    "check_inputs",
    "first_divergence",
    "generate_target_only",
    "probabilities",
    "speculative_generate",
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

    @property
    def bonus(self) -> bool:
        """True when all K drafts were accepted and the last token is a bonus from p."""
        return self.accepted == len(self.drafted)


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

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.decode_s

    @property
    def accepted_total(self) -> int:
        return sum(r.accepted for r in self.rounds)

    @property
    def rejected_rounds(self) -> int:
        return sum(not r.bonus for r in self.rounds)

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
        reached = [sum(r.accepted >= i - 1 for r in self.rounds) for i in range(1, self.k + 1)]
        passed = [sum(r.accepted >= i for r in self.rounds) for i in range(1, self.k + 1)]
        return [p / n if n else float("nan") for p, n in zip(passed, reached, strict=True)]

    @property
    def c(self) -> float:
        return self.t_target_ms / self.t_draft_ms

    @property
    def v(self) -> float:
        """Extra verification cost per drafted token: (T_verify / T_p − 1) / K, floored at 0."""
        return max(0.0, (self.t_verify_ms / self.t_target_ms - 1.0) / self.k) if self.k else 0.0

    @property
    def o(self) -> float:
        """Per-round overhead in target steps: mean round time not explained by one verify forward
        and K draft steps, (T_round − T_verify − K·T_q) / T_p, floored at 0. It holds sampling and
        bookkeeping on both sides and the draft's catch-up token after an all-accepted round."""
        if not self.rounds:
            return 0.0
        round_ms = float(np.mean([r.draft_ms + r.verify_ms + r.other_ms for r in self.rounds]))
        return max(0.0, (round_ms - self.t_verify_ms - self.k * self.t_draft_ms) / self.t_target_ms)

    def predicted_speedup(self, measured_cost: bool = False) -> float:
        """Speedup predicted by specviz.theory at the measured α̂ and c (with v, o if asked)."""
        alpha = min(max(self.alpha_hat, 0.0), 1.0)
        if measured_cost:
            return float(theory.speedup(alpha, self.c, self.k, self.v, self.o))
        return float(theory.speedup(alpha, self.c, self.k))


def check_inputs(models, prompt: torch.Tensor, max_new_tokens: int, temperature: float, k: int) -> None:
    """ValueError unless ``prompt`` + ``max_new_tokens`` + K + 1 fits every model's context (and the rest is valid)."""
    if prompt.ndim != 1 or prompt.numel() == 0:
        raise ValueError(f"prompt must be a non-empty 1-D tensor of token ids; got shape {tuple(prompt.shape)}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1; got {max_new_tokens}")
    if not (temperature >= 0 and np.isfinite(temperature)):
        raise ValueError(f"temperature must be a finite number >= 0; got {temperature}")
    need = prompt.numel() + max_new_tokens + k + 1
    context = min(m.cfg.block_size for m in models)
    if need > context:
        raise ValueError(
            f"prompt ({prompt.numel()} tokens) + max_new_tokens ({max_new_tokens}) + K + 1 = {need} "
            f"exceeds the model's context of {context} tokens"
        )


def _prefill(model, prompt: torch.Tensor) -> None:
    """Fill the cache with every prompt token but the last (which stays pending)."""
    model.setup_cache(1, model.cfg.block_size)
    if prompt.numel() > 1:
        model(prompt[None, :-1], 0)


@torch.inference_mode()
def _decode_step_ms(model, pending: torch.Tensor, start: int, clock: _Clock, steps: int = 8) -> float:
    """Median time of single-token cached decode steps at position ``start`` (cache left as it was valid)."""
    times = []
    for _ in range(steps):
        t0 = clock.now()
        model(pending.view(1, 1), start)
        times.append(clock.now() - t0)
    return 1e3 * float(np.median(times))


@torch.inference_mode()
def generate_target_only(
    target,
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
    device = target.wte.weight.device
    clock, greedy = _Clock(device), temperature == 0
    prompt = prompt.to(device)
    t0 = clock.now()
    _prefill(target, prompt)
    prefill_ms = 1e3 * (clock.now() - t0)
    pending, pos = prompt[-1:], prompt.numel() - 1
    out, steps = [], []
    start = clock.now()
    for _ in range(max_new_tokens):
        t = clock.now()
        logits = target(pending.view(1, 1), pos)[0, -1]
        pending = _sample(probabilities(logits, temperature)[None], generator, greedy)
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


@torch.inference_mode()
def speculative_generate(
    target,
    draft,
    prompt: torch.Tensor,
    k: int,
    temperature: float = 0.0,
    max_new_tokens: int = 128,
    generator: torch.Generator | None = None,
    *,
    calibration_steps: int = 8,
) -> tuple[torch.Tensor, GenerationStats]:
    """Speculative decoding: draft K tokens, verify K + 1 positions in one target forward.

    Parameters
    ----------
    target, draft : GPT
        Models sharing the byte vocabulary, on the same device.
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

    Returns
    -------
    new_tokens : LongTensor, shape (max_new_tokens,)
    stats : GenerationStats
        Per-round records, α̂ = A/(A+R), α̂_overlap, measured E[N], per-position
        acceptance, T_p, T_q, T_verify, c, v, o, tokens/s and predicted speedups.
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be an integer >= 1; got {k!r}")
    k = int(k)
    check_inputs([target, draft], prompt, max_new_tokens, temperature, k)
    device = target.wte.weight.device
    clock, greedy = _Clock(device), temperature == 0
    prompt = prompt.to(device)
    t0 = clock.now()
    _prefill(target, prompt)
    _prefill(draft, prompt)
    prefill_ms = 1e3 * (clock.now() - t0)
    pos = prompt.numel() - 1  # position of the pending token
    pending = prompt[-1:]
    # single-step costs, measured at the pending position (those cache slots are rewritten by the loop)
    t_p = _decode_step_ms(target, pending, pos, clock, calibration_steps) if calibration_steps else float("nan")
    t_q = _decode_step_ms(draft, pending, pos, clock, calibration_steps) if calibration_steps else float("nan")
    draft_feed, draft_pos = pending, pos  # tokens the draft must see before it drafts
    generated: list[int] = []
    rounds: list[RoundRecord] = []
    verify_times: list[float] = []
    start = clock.now()
    while len(generated) < max_new_tokens:
        t_a = clock.now()
        drafts, q_rows = [], []
        feed, at = draft_feed, draft_pos
        for _ in range(k):
            q_i = probabilities(draft(feed.view(1, -1), at)[0, -1], temperature)  # (V,)
            x = _sample(q_i[None], generator, greedy)
            drafts.append(x)
            q_rows.append(q_i)
            at += feed.numel()
            feed = x
        t_b = clock.now()
        block = torch.cat([pending, *drafts])  # (K+1,) tokens at positions pos..pos+K
        p = probabilities(target(block.view(1, -1), pos)[0], temperature)  # (K+1, V)
        t_c = clock.now()
        q = torch.stack(q_rows)  # (K, V)
        d = torch.cat(drafts).view(1, k)
        result = sampling.verify(p[None], q[None], d, generator, greedy=greedy)
        a = int(result.accepted)
        emitted = d[0, :a].tolist() + [int(result.next_token)]
        verified = min(a + 1, k)
        overlap = sampling.overlap(p[:verified], q[:verified]).tolist()
        pending = result.next_token.view(1).to(device)
        if a == k:  # the draft never saw its last token: feed it together with the new pending one
            draft_feed, draft_pos = torch.cat([d[0, -1:], pending]), pos + k
        else:
            draft_feed, draft_pos = pending, pos + a + 1
        pos += a + 1
        generated += emitted
        t_d = clock.now()
        verify_times.append(t_c - t_b)
        rounds.append(
            RoundRecord(
                drafted=d[0].tolist(),
                accepted=a,
                emitted=emitted,
                accept_mask=result.accept_mask[0, :verified].tolist(),
                overlap=overlap,
                draft_ms=1e3 * (t_b - t_a),
                verify_ms=1e3 * (t_c - t_b),
                other_ms=1e3 * (t_d - t_c),
            )
        )
    decode_s = clock.now() - start
    stats = GenerationStats(
        k=k,
        temperature=temperature,
        new_tokens=max_new_tokens,
        decode_s=decode_s,
        prefill_ms=prefill_ms,
        t_target_ms=t_p,
        t_draft_ms=t_q,
        t_verify_ms=1e3 * float(np.median(verify_times)),
        rounds=rounds,
    )
    return torch.tensor(generated[:max_new_tokens], dtype=torch.long), stats


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
def first_divergence(target, prompt: torch.Tensor, expected: torch.Tensor, got: torch.Tensor) -> Divergence | None:
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
    device = target.wte.weight.device
    context = torch.cat([prompt.cpu(), expected[:pos].cpu()]).to(device)  # (T,)
    logits = target(context.view(1, -1))[0, -1].float()  # (V,)
    top = torch.topk(logits, 2).values
    return Divergence(pos, int(expected[pos]), int(got[pos]), float(top[0] - top[1]))

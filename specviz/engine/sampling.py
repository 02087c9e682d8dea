"""The verification rule of speculative sampling (torch, batched) and Monte-Carlo rounds.

One function, :func:`verify`, decides every round — the rejection-sampling lab
calls it for context-free distributions, the live engine calls it with the
models' probabilities. The rule (Leviathan et al. 2023, Alg. 1; chapter §6):

* draft token x_i ~ q_i is accepted with probability min(1, p_i(x_i) / q_i(x_i));
* at the first rejection, position i, the emitted token is drawn from the
  residual (p_i − q_i)⁺ / (1 − α_i);
* if all K drafts are accepted, a bonus token is drawn from p_{K+1};
* greedy (temperature 0): accept iff x_i = argmax p_i; correction and bonus are
  argmax p.

The emitted tokens are then distributed exactly as p (the method is lossless).

Randomness: each round consumes exactly K + 1 uniforms, drawn as one ``(B, K+1)``
block from an explicit ``torch.Generator``, so B rounds in one call and B calls
of one round give identical results from the same generator state.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from specviz.base.i18n import Message, Phrase

__all__ = [
    "BUILDERS",
    "VARIANTS",
    "SiblingResult",
    "Verdict",
    "build",
    "chi_square_gof",
    "dirichlet",
    "emitted_verdict",
    "mean_with_ci",
    "normalised",
    "overlap",
    "parse_distribution",
    "residual",
    "simulate_rounds",
    "tempered",
    "uniform",
    "verify",
    "verify_siblings",
    "zipf",
]

#: Verification variants: the exact rule and three real implementation mistakes
#: (chapter exercise 5), each with what it breaks.
VARIANTS: dict[str, str] = {  # name -> what it does (an i18n.Phrase: English as a str, any language on a page)
    "exact": Phrase("The exact rule: accept with min(1, p/q), correct from the residual (p − q)⁺, bonus from p."),
    "accept_first": Phrase(
        "Accepts the first draft token unconditionally (a common 'speed trick'): the first emitted token of every round is a draw from q, not p, so the output leans towards q."
    ),
    "resample_p": Phrase(
        "After a rejection, resamples from p instead of the residual (p − q)⁺: tokens the draft already covers get emitted twice over, so the output over-weights the overlap min(p, q)."
    ),
    "temperature_mismatch": Phrase(
        "Samples drafts from q at one temperature but computes the ratio p/q with q at another: the acceptance test no longer matches the proposal, so the output is biased."
    ),
}

_CHUNK = 1 << 16  # rounds per chunk in simulate_rounds: bounds memory at ~(chunk × V) floats


# --------------------------------------------------------------------------------------
# the verification rule
# --------------------------------------------------------------------------------------


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r"""Unnormalised residual (p − q)⁺; its sum is 1 − α = TV(p, q)."""
    return (p - q).clamp_min(0.0)


def overlap(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r"""Acceptance probability α = Σ_x min(p(x), q(x)) = 1 − TV(p, q), over the last axis.

    Clamped to at most 1: for p = q the rounded sum of V terms can exceed 1 by a few ulps
    (1.0000000000000004 for V = 1000), which is not a probability.
    """
    return torch.minimum(p, q).sum(-1).clamp_max(1.0)


def _sample_rows(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw of one index per row of unnormalised ``weights`` using uniforms ``u``.

    ``weights`` is ``(B, V)`` or ``(V,)`` (one distribution shared by every row);
    ``u`` is ``(B,)`` in [0, 1). Zero-weight indices are never drawn.
    """
    cdf = weights.cumsum(-1)
    target = (u * cdf[..., -1]).unsqueeze(-1) if cdf.ndim > 1 else u * cdf[-1]
    idx = torch.searchsorted(cdf.contiguous(), target.contiguous(), right=True)
    idx = idx.squeeze(-1) if cdf.ndim > 1 else idx
    return idx.clamp_max(weights.shape[-1] - 1)


def _rows(t: torch.Tensor, batch: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """``t[b, pos_b]`` for a broadcastable ``(B|1, P|1, V)`` tensor, as ``(B, V)`` or ``(V,)``.

    If ``t`` is shared by every round and position (shape ``(1, 1, V)``) the one row
    is returned as ``(V,)`` and nothing is copied per round.
    """
    if t.shape[0] == 1 and t.shape[1] == 1:
        return t[0, 0]
    b = batch if t.shape[0] > 1 else torch.zeros_like(batch)
    i = pos if t.shape[1] > 1 else torch.zeros_like(pos)
    return t[b, i]


class VerifyResult(NamedTuple):
    """Outcome of :func:`verify` for a batch of rounds."""

    accepted: torch.Tensor  #: (B,) int64, draft tokens accepted, 0..K
    next_token: torch.Tensor  #: (B,) int64, the correction (accepted < K) or bonus token
    accept_mask: torch.Tensor  #: (B, K) bool, per-position test outcome (before the prefix cut)


def verify(
    p: torch.Tensor,
    q: torch.Tensor,
    drafts: torch.Tensor,
    generator: torch.Generator | None = None,
    *,
    greedy: bool = False,
    variant: str = "exact",
    uniforms: torch.Tensor | None = None,
) -> VerifyResult:
    r"""Verify a batch of speculative rounds.

    Parameters
    ----------
    p : Tensor, shape ``(B|1, K+1|1, V)``
        Target probabilities at the K draft positions and the bonus position.
        Leading dimensions of size 1 broadcast (a context-free p is passed once).
    q : Tensor, shape ``(B|1, K|1, V)``
        Draft probabilities the drafts were sampled from; broadcasts like ``p``.
    drafts : LongTensor, shape ``(B, K)``
        The draft tokens.
    generator : torch.Generator, optional
        Source of the ``(B, K+1)`` uniforms (ignored when ``uniforms`` is given or
        ``greedy``).
    greedy : bool
        Temperature 0: accept iff the draft equals argmax p; correction and bonus
        are argmax p.
    variant : str
        A key of :data:`VARIANTS`. ``"temperature_mismatch"`` only differs in how
        the caller drafts, so here it behaves as ``"exact"``.
    uniforms : Tensor, shape ``(B, K+1)``, optional
        Explicit uniforms: columns 0..K−1 for the acceptance tests, column K for
        the correction/bonus draw.

    Returns
    -------
    VerifyResult
        ``accepted`` (B,), ``next_token`` (B,), ``accept_mask`` (B, K).
        The round emits ``drafts[b, :accepted[b]]`` followed by ``next_token[b]``,
        i.e. N = accepted + 1 tokens.
    """
    if variant not in VARIANTS:
        raise Message("variant must be one of {allowed}; got {variant!r}", allowed=list(VARIANTS), variant=variant)
    if drafts.ndim != 2:
        raise ValueError(f"drafts must have shape (B, K); got {tuple(drafts.shape)}")
    batch_size, k = drafts.shape
    if p.ndim != 3 or p.shape[1] not in (1, k + 1) or q.ndim != 3 or q.shape[1] not in (1, k):
        raise ValueError(f"p must be (B, K+1, V) and q (B, K, V) with K = {k}; got {tuple(p.shape)}, {tuple(q.shape)}")
    batch = torch.arange(batch_size, device=drafts.device)
    p_draft = p if p.shape[1] == 1 else p[:, :k]  # (B|1, K|1, V) target at the draft positions
    p_bonus = p if p.shape[1] == 1 else p[:, k:]  # (B|1, 1, V) target at position K+1

    if greedy:
        best = p.argmax(-1).expand(batch_size, k + 1)  # (B, K+1)
        ok = drafts == best[:, :k]
    else:
        if uniforms is None:
            uniforms = torch.rand(batch_size, k + 1, generator=generator, dtype=p.dtype, device=p.device)
        idx = drafts.unsqueeze(-1)  # (B, K, 1)
        p_x = p_draft.expand(batch_size, k, p.shape[-1]).gather(-1, idx).squeeze(-1)  # (B, K)
        q_x = q.expand(batch_size, k, q.shape[-1]).gather(-1, idx).squeeze(-1)  # (B, K)
        ok = uniforms[:, :k] * q_x < p_x  # u < p/q without dividing; p(x) = 0 never accepts
    if variant == "accept_first":
        ok = ok.clone()
        ok[:, 0] = True
    accepted = ok.long().cumprod(-1).sum(-1)  # length of the all-accepted prefix, (B,)

    if greedy:
        return VerifyResult(accepted, best[batch, accepted], ok)
    # correction from the residual at the first rejected position, bonus from p at K+1
    rejected = accepted < k
    pos = accepted.clamp_max(k - 1)
    fix = p_draft if variant == "resample_p" else residual(p_draft, q)
    fix_rows = _rows(fix, batch, pos)
    # α = 1 at that position: the residual is all zero and a rejection cannot happen; fall back to p
    fallback = _rows(p_draft, batch, pos)
    empty = fix_rows.sum(-1, keepdim=True) <= 0
    fix_rows = torch.where(empty, fallback, fix_rows)
    u_next = uniforms[:, k]
    corrected = _sample_rows(fix_rows, u_next)
    bonus = _sample_rows(_rows(p_bonus, batch, torch.zeros_like(batch)), u_next)
    return VerifyResult(accepted, torch.where(rejected, corrected, bonus), ok)


class SiblingResult(NamedTuple):
    """Outcome of :func:`verify_siblings` at one tree node."""

    accepted: int  #: index of the accepted candidate, or −1 when every one was rejected
    token: int  #: the accepted candidate's token, or the correction drawn from the last residual


def verify_siblings(
    p: torch.Tensor,
    q: torch.Tensor,
    candidates: torch.Tensor,
    generator: torch.Generator | None = None,
    *,
    greedy: bool = False,
    uniforms: torch.Tensor | None = None,
) -> SiblingResult:
    r"""Multi-step speculative sampling at one node of a draft tree (SpecInfer, Miao et al. 2024).

    The m candidates were drawn i.i.d. from ``q`` (V,). They are tried in order against a target
    distribution that starts at ``p`` (V,) and becomes the normalised residual after each rejection:

    .. math::  \text{accept } x_i \text{ iff } u_i \, q(x_i) < p_i(x_i), \qquad
               p_{i+1} = \frac{(p_i - q)^+}{\sum (p_i - q)^+}

    and when all are rejected the token is drawn from :math:`p_{m+1}`. The emitted token is then
    distributed as ``p`` exactly (for m = 1 this is :func:`verify`'s rule at one position). Where
    a residual vanishes (:math:`p_i = q`) no rejection can occur and ``p_i`` is kept.
    ``greedy``: accept the first candidate equal to argmax p, else emit argmax p.
    ``uniforms`` (m + 1,): explicit u_1..u_m and the correction's draw.
    """
    m = len(candidates)
    if greedy:
        best = int(p.argmax())
        hits = (candidates == best).nonzero()
        return SiblingResult(int(hits[0, 0]), best) if len(hits) else SiblingResult(-1, best)
    if uniforms is None:
        uniforms = torch.rand(m + 1, generator=generator, dtype=p.dtype, device=p.device)
    current = p
    for i in range(m):
        x = int(candidates[i])
        if uniforms[i] * q[x] < current[x]:
            return SiblingResult(i, x)
        rest = residual(current, q)
        if rest.sum() > 0:
            current = rest / rest.sum()
    return SiblingResult(-1, int(_sample_rows(current, uniforms[m : m + 1])[0]))


# --------------------------------------------------------------------------------------
# Monte-Carlo rounds for a context-free pair
# --------------------------------------------------------------------------------------


def normalised(weights: torch.Tensor) -> torch.Tensor:
    r"""Finite, non-negative ``weights`` (not all zero) scaled to sum to 1, in float64.

    Computed as w' = w / max(w), then w' / Σ w': every w' is in [0, 1] and Σ w' in [1, V], so the
    sum cannot overflow (weights near 1e308) nor underflow to zero (subnormal weights such as 5e-324),
    where w / Σ w would give 0 or NaN.
    """
    w = weights.to(torch.float64)
    w = w / w.max()
    return w / w.sum()


def _as_distribution(x: torch.Tensor, name: str) -> torch.Tensor:
    if x.ndim != 1 or x.numel() == 0:
        raise Message(
            "{name} must be a 1-D tensor of probabilities; got shape {shape}", name=name, shape=tuple(x.shape)
        )
    if not torch.isfinite(x).all() or (x < 0).any():
        raise Message("{name} must hold finite, non-negative probabilities", name=name)
    if not x.max() > 0:
        raise Message("{name} must not be all zero", name=name)
    return normalised(x)


def simulate_rounds(
    p: torch.Tensor,
    q: torch.Tensor,
    k: int,
    rounds: int,
    generator: torch.Generator,
    variant: str = "exact",
    *,
    greedy: bool = False,
    draft_temperature: float = 0.5,
    progress: Callable[[float], None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Simulate ``rounds`` independent speculative rounds of a context-free pair.

    Each round draws K drafts i.i.d. from q, verifies them with :func:`verify`
    against the same p at every position, and emits N = accepted + 1 tokens.
    Under the exact rule E[N] = (1 − α^{K+1}) / (1 − α) with α = Σ min(p, q), and
    the emitted tokens are distributed as p.

    Parameters
    ----------
    p, q : Tensor, shape ``(V,)``
        Target and draft distributions (normalised here).
    k : int
        Draft length K ≥ 1.
    rounds : int
        Number of rounds (≥ 1).
    generator : torch.Generator
        Explicit source of randomness.
    variant : str
        A key of :data:`VARIANTS`. ``"temperature_mismatch"`` samples drafts from
        q at ``draft_temperature`` (q^{1/T}, renormalised) but verifies with q.
    greedy : bool
        Temperature-0 verification (drafts are still sampled from q).
    draft_temperature : float
        Only for ``"temperature_mismatch"``.
    progress : callable, optional
        Called with the fraction done after each chunk of 65,536 rounds.

    Returns
    -------
    n : LongTensor, shape ``(rounds,)``
        Tokens produced in each round, 1..K+1.
    emitted : LongTensor, shape ``(n.sum(),)``
        Every emitted token, round by round, in order.
    """
    p, q = _as_distribution(p, "p"), _as_distribution(q, "q")
    if p.shape != q.shape:
        raise Message("p and q must have the same length; got {p_len} and {q_len}", p_len=p.numel(), q_len=q.numel())
    if int(k) != k or k < 1:
        raise Message("k must be an integer >= 1; got {k!r}", k=k)
    if int(rounds) != rounds or rounds < 1:
        raise Message("rounds must be an integer >= 1; got {rounds!r}", rounds=rounds)
    if variant not in VARIANTS:
        raise Message("variant must be one of {allowed}; got {variant!r}", allowed=list(VARIANTS), variant=variant)
    k, rounds = int(k), int(rounds)
    q_draw = tempered_probs(q, draft_temperature) if variant == "temperature_mismatch" else q
    p3, q3 = p.view(1, 1, -1), q.view(1, 1, -1)  # shared by every round: never copied
    ns, emitted = [], []
    columns = torch.arange(k + 1)
    for start in range(0, rounds, _CHUNK):
        b = min(_CHUNK, rounds - start)
        u = torch.rand(b, 2 * k + 1, generator=generator, dtype=torch.float64)  # K draft + K+1 verify uniforms
        drafts = _sample_rows(q_draw, u[:, :k].reshape(-1)).view(b, k)
        result = verify(p3, q3, drafts, greedy=greedy, variant=variant, uniforms=u[:, k:])
        tokens = torch.cat([drafts, result.next_token.unsqueeze(1)], 1)  # (b, K+1)
        tokens[torch.arange(b), result.accepted] = result.next_token
        keep = columns.unsqueeze(0) <= result.accepted.unsqueeze(1)  # (b, K+1)
        ns.append(result.accepted + 1)
        emitted.append(tokens[keep])  # row-major: round order, then position order
        if progress is not None:
            progress(min(1.0, (start + b) / rounds))
    return torch.cat(ns), torch.cat(emitted)


# --------------------------------------------------------------------------------------
# distribution builders
# --------------------------------------------------------------------------------------


def _check_size(v: int) -> int:
    if int(v) != v or v < 1:
        raise Message("V (vocabulary size) must be an integer >= 1; got {v!r}", v=v)
    return int(v)


def zipf(v: int, s: float) -> torch.Tensor:
    r"""Zipf(s) over V tokens: p(i) ∝ 1 / i^s, i = 1..V (s ≥ 0; s = 0 is uniform)."""
    v = _check_size(v)
    if not (math.isfinite(s) and s >= 0):
        raise Message("s (Zipf exponent) must be a finite number >= 0; got {s!r}", s=s)
    w = torch.arange(1, v + 1, dtype=torch.float64) ** -float(s)
    return w / w.sum()


def dirichlet(v: int, beta: float, seed: int) -> torch.Tensor:
    r"""A draw from Dirichlet(β, ..., β) over V tokens with its own seeded generator (β > 0)."""
    v = _check_size(v)
    if not (math.isfinite(beta) and beta > 0):
        raise Message("beta (Dirichlet concentration) must be a finite number > 0; got {beta!r}", beta=beta)
    # Normalised Gamma(β) draws; torch's gamma sampler takes no generator, numpy's does.
    x = np.random.default_rng(int(seed)).gamma(float(beta), size=v)
    if x.sum() <= 0:  # all underflowed (tiny β): put the mass on the largest draw
        x = np.eye(v)[int(np.argmax(x))]
    return torch.as_tensor(x / x.sum(), dtype=torch.float64)


def uniform(v: int) -> torch.Tensor:
    """Uniform distribution over V tokens."""
    v = _check_size(v)
    return torch.full((v,), 1.0 / v, dtype=torch.float64)


def tempered_probs(p: torch.Tensor, temperature: float) -> torch.Tensor:
    r"""p at temperature τ: softmax(log p / τ) ∝ p^{1/τ} (τ > 0; zero entries stay zero)."""
    return tempered(torch.log(p.to(torch.float64)), temperature)


def tempered(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    r"""softmax(logits / τ): "draft = target at temperature τ" from one set of logits."""
    if not (math.isfinite(temperature) and temperature > 0):
        raise Message("temperature must be a finite number > 0; got {temperature!r}", temperature=temperature)
    return torch.softmax(logits.to(torch.float64) / float(temperature), -1)


_BYTES_PER_WEIGHT = 64  #: most characters one weight of a typed or uploaded vector may take, separator included


def parse_distribution(data: str | bytes, v: int, name: str = "distribution") -> torch.Tensor:
    """A user-entered distribution: comma/space/newline separated numbers, or a one-column CSV.

    Weights are normalised to sum to 1. Raises ValueError naming ``name`` for an input longer than
    64 · V + 1024 characters (refused before it is parsed), an unparsable entry, a negative or
    non-finite value, all zeros, or a length other than V.
    """
    v = _check_size(v)
    most = _BYTES_PER_WEIGHT * v + 1024  # room for a header and generous spacing, never megabytes
    if len(data) > most:
        raise Message(
            "{name}: {size} characters is more than a vector of V = {v} weights needs (at most {most})",
            name=name,
            size=f"{len(data):,}",
            most=f"{most:,}",
            v=v,
        )
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise Message("{name}: the file is not UTF-8 text", name=name) from None
    rows = [
        [c.strip() for cell in row for c in cell.split()] for row in csv.reader(io.StringIO(data.replace(";", ",")))
    ]
    rows = [[c for c in row if c] for row in rows]
    rows = [row for row in rows if row]
    if len(rows) > 1 and len(rows[0]) == 1 and not _is_number(rows[0][0]):  # a one-column CSV's header, e.g. "p"
        rows = rows[1:]
    cells = [c for row in rows for c in row]
    if not cells:
        raise Message("{name}: no numbers found; enter V = {v} comma-separated non-negative numbers", name=name, v=v)
    values = []
    for i, cell in enumerate(cells, 1):
        if not _is_number(cell):
            raise Message("{name}: entry {i} is {cell!r}, not a number", name=name, i=i, cell=cell)
        values.append(float(cell))
    x = np.asarray(values)
    if np.isnan(x).any() or np.isinf(x).any():
        i = int(np.flatnonzero(~np.isfinite(x))[0]) + 1
        raise Message(
            "{name}: entry {i} is {value!r}; every entry must be a finite number >= 0",
            name=name,
            i=i,
            value=values[i - 1],
        )
    if (x < 0).any():
        i = int(np.flatnonzero(x < 0)[0]) + 1
        raise Message("{name}: entry {i} is {value!r}; every entry must be >= 0", name=name, i=i, value=values[i - 1])
    if x.size != v:
        raise Message("{name}: has {n} entries but V = {v}; enter exactly {v} numbers", name=name, n=x.size, v=v)
    if not x.max() > 0:
        raise Message("{name}: all entries are zero; at least one must be > 0", name=name)
    return normalised(torch.as_tensor(x, dtype=torch.float64))


#: Distribution builders offered by the lab: key -> label.
BUILDERS = {  # name -> what it builds (an i18n.Phrase)
    "zipf": Phrase("Zipf(s)"),
    "dirichlet": Phrase("Dirichlet(β), seeded"),
    "uniform": Phrase("uniform"),
    "tempered": Phrase("target at temperature τ (same logits)"),
    "custom": Phrase("my own vector"),
}


def build(
    kind: str,
    v: int,
    *,
    s: float = 1.0,
    beta: float = 1.0,
    seed: int = 0,
    tau: float = 1.0,
    text: str | bytes = "",
    base: torch.Tensor | None = None,
    name: str = "p",
) -> torch.Tensor:
    """Build a distribution over V tokens with one of :data:`BUILDERS`.

    ``"tempered"`` needs ``base`` (the target p): it returns softmax(log p / τ),
    the draft that is the target at temperature τ.
    """
    if kind == "zipf":
        return zipf(v, s)
    if kind == "dirichlet":
        return dirichlet(v, beta, seed)
    if kind == "uniform":
        return uniform(v)
    if kind == "tempered":
        if base is None:
            raise Message("{name}: 'target at temperature τ' needs a target distribution", name=name)
        return tempered_probs(base, tau)
    if kind == "custom":
        return parse_distribution(text, v, name)
    raise Message("{name} builder must be one of {allowed}; got {kind!r}", name=name, allowed=list(BUILDERS), kind=kind)


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------------
# statistics of a simulation
# --------------------------------------------------------------------------------------


def mean_with_ci(x: torch.Tensor, z: float = 1.959963984540054) -> tuple[float, float]:
    r"""Sample mean and the half-width of its normal-approximation CI: z · s / √n (95 % by default)."""
    x = x.to(torch.float64)
    n = x.numel()
    if n < 2:
        return float(x.mean()), math.inf
    return float(x.mean()), z * float(x.std(unbiased=True)) / math.sqrt(n)


class GofResult(NamedTuple):
    """Chi-square goodness of fit of observed counts against a distribution."""

    statistic: float
    dof: int
    p_value: float
    tv: float  #: total-variation distance between the empirical frequencies and p
    impossible: int  #: emitted tokens that p gives probability 0


def chi_square_gof(tokens: torch.Tensor, p: torch.Tensor, min_expected: float = 5.0) -> GofResult:
    r"""Pearson χ² test of emitted ``tokens`` against ``p``.

    The bins with the smallest expected counts are pooled until every bin expects
    at least ``min_expected`` (the usual validity rule for the χ² approximation). The p-value is the χ² survival
    function, Q(dof/2, X²/2) (regularised upper incomplete gamma). A token with
    p = 0 that was emitted makes the p-value 0.
    """
    p = p.to(torch.float64)
    counts = torch.bincount(tokens, minlength=p.numel()).to(torch.float64)
    n = float(counts.sum())
    freq = counts / n
    tv = 0.5 * float((freq - p).abs().sum())
    impossible = int(counts[p == 0].sum())
    obs, exp = _pool_small_bins(counts[p > 0], (p * n)[p > 0], min_expected)
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = int(obs.numel()) - 1
    if dof == 0:  # everything pooled into one bin: nothing to test
        return GofResult(0.0, 0, 0.0 if impossible else 1.0, tv, impossible)
    p_value = (
        0.0
        if impossible
        else float(
            torch.special.gammaincc(
                torch.tensor(dof / 2.0, dtype=torch.float64), torch.tensor(stat / 2.0, dtype=torch.float64)
            )
        )
    )
    return GofResult(stat, dof, p_value, tv, impossible)


def _pool_small_bins(obs: torch.Tensor, exp: torch.Tensor, min_expected: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge the bins with the smallest expected counts into one until it holds ≥ ``min_expected``.

    Bins are merged smallest first and merging stops at the first point where the
    pooled bin and every remaining bin each expect at least ``min_expected`` counts.
    """
    order = torch.argsort(exp)
    e, o = exp[order], obs[order]
    cum = e.cumsum(0)
    ready = (cum >= min_expected) & torch.cat([e[1:] >= min_expected, torch.tensor([True])])
    j = int(ready.nonzero()[0]) if bool(ready.any()) else e.numel() - 1
    if j == 0:
        return o, e
    return torch.cat([o[: j + 1].sum().view(1), o[j + 1 :]]), torch.cat([e[: j + 1].sum().view(1), e[j + 1 :]])


class Verdict(NamedTuple):
    ok: bool
    text: str


def emitted_verdict(gof: GofResult, variant: str, level: float = 1e-3) -> Verdict:
    """Plain-language reading of a χ² result for the lab page (its text an i18n.Phrase)."""
    if gof.impossible:
        return Verdict(
            False,
            Phrase(
                "biased: {n} emitted tokens have p = 0 — the target would never emit them. {why}",
                n=gof.impossible,
                why=VARIANTS[variant],
            ),
        )
    stats = {"level": f"{level:g}", "tv": f"{gof.tv:.4f}"}
    if gof.p_value >= level:
        return Verdict(
            True,
            Phrase(
                "consistent with p (χ² p-value {p_value} ≥ {level}; TV = {tv}).", p_value=f"{gof.p_value:.3g}", **stats
            ),
        )
    why = VARIANTS[variant] if variant != "exact" else Phrase("Unexpected for the exact rule — check the inputs.")
    return Verdict(
        False,
        Phrase(
            "biased: χ² p-value {p_value} < {level}, TV = {tv}. {why}", p_value=f"{gof.p_value:.2g}", why=why, **stats
        ),
    )

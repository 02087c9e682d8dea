r"""The verification rule of speculative sampling (Leviathan et al. 2023, Alg. 1; chapter §6), batched.

Accept x_i ~ q_i with probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection draw from the
residual (p_i − q_i)⁺ / (1 − α_i); after K acceptances draw a bonus from p_{K+1}. Greedy: accept iff
x_i = argmax p_i. Each round takes K + 1 uniforms, one ``(B, K+1)`` block per call.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from specviz.base.i18n import Message
from specviz.engine.sampling.variants import VARIANTS


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r"""Unnormalised residual (p − q)⁺; its sum is 1 − α = TV(p, q)."""
    return (p - q).clamp_min(0.0)


def overlap(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r"""Acceptance probability α = Σ_x min(p(x), q(x)) = 1 − TV(p, q), over the last axis, clamped to ≤ 1."""
    return torch.minimum(p, q).sum(-1).clamp_max(1.0)


def sample_rows(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw of one index per row of unnormalised ``weights`` (B, V) or (V,) with ``u`` (B,) in [0, 1)."""
    cdf = weights.cumsum(-1)
    target = (u * cdf[..., -1]).unsqueeze(-1) if cdf.ndim > 1 else u * cdf[-1]
    idx = torch.searchsorted(cdf.contiguous(), target.contiguous(), right=True)
    idx = idx.squeeze(-1) if cdf.ndim > 1 else idx
    return idx.clamp_max(weights.shape[-1] - 1)


def _rows(t: torch.Tensor, batch: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """``t[b, pos_b]`` of a ``(B|1, P|1, V)`` tensor as (B, V); a shared (1, 1, V) one as its (V,) row, uncopied."""
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
    r"""Verify a batch of rounds: accepted (B,), next_token (B,), accept_mask (B, K).

    ``p`` (B|1, K+1|1, V) target probabilities at the K draft positions and the bonus one; ``q``
    (B|1, K|1, V) the draft's; size-1 leading dimensions broadcast. ``drafts`` (B, K). ``uniforms``
    (B, K+1): columns 0..K−1 for the tests, column K for the correction or bonus; else drawn from
    ``generator``. ``variant`` is a key of :data:`VARIANTS` (``temperature_mismatch`` acts here as
    ``exact``). The round emits ``drafts[b, :accepted[b]]`` then ``next_token[b]``. Raises ValueError
    for an unknown variant or mismatched shapes.
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
    corrected = sample_rows(fix_rows, u_next)
    bonus = sample_rows(_rows(p_bonus, batch, torch.zeros_like(batch)), u_next)
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
    r"""Multi-step speculative sampling at one tree node (SpecInfer, Miao et al. 2024); candidates i.i.d. from q.

    .. math::  \text{accept } x_i \text{ iff } u_i \, q(x_i) < p_i(x_i), \qquad
               p_{i+1} = \frac{(p_i - q)^+}{\sum (p_i - q)^+}

    After m rejections the token is drawn from :math:`p_{m+1}`. ``greedy``: the first candidate equal
    to argmax p, else argmax p. ``uniforms`` (m + 1,).
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
    return SiblingResult(-1, int(sample_rows(current, uniforms[m : m + 1])[0]))

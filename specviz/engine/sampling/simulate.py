"""Monte-Carlo speculative rounds of a context-free pair (the lab), under the exact rule or a variant."""

from __future__ import annotations

from collections.abc import Callable

import torch

from specviz.base.i18n import Message
from specviz.engine.sampling.distributions import as_distribution, tempered_probs
from specviz.engine.sampling.rule import sample_rows, verify
from specviz.engine.sampling.variants import VARIANTS

_CHUNK = 1 << 16  # rounds per chunk in simulate_rounds: bounds memory at ~(chunk × V) floats


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
    """Simulate ``rounds`` rounds of K drafts i.i.d. from q verified by :func:`verify` against p; p, q (V,).

    Exact rule: E[N] = (1 − α^{K+1}) / (1 − α), α = Σ min(p, q). Returns n (rounds,) and the emitted
    tokens (n.sum(),). Raises ValueError naming a bad p, q, k, rounds or variant.
    """
    p, q = as_distribution(p, "p"), as_distribution(q, "q")
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
        drafts = sample_rows(q_draw, u[:, :k].reshape(-1)).view(b, k)
        result = verify(p3, q3, drafts, greedy=greedy, variant=variant, uniforms=u[:, k:])
        tokens = torch.cat([drafts, result.next_token.unsqueeze(1)], 1)  # (b, K+1)
        tokens[torch.arange(b), result.accepted] = result.next_token
        keep = columns.unsqueeze(0) <= result.accepted.unsqueeze(1)  # (b, K+1)
        ns.append(result.accepted + 1)
        emitted.append(tokens[keep])  # row-major: round order, then position order
        if progress is not None:
            progress(min(1.0, (start + b) / rounds))
    return torch.cat(ns), torch.cat(emitted)

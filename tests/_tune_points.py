"""Tune points made from a known round-cost line, as a server following the model would measure them: shared
by the tuning tests and the Tune page's."""

from __future__ import annotations

from specviz.core import tuning

SHARES = [0.8, 0.6, 0.45, 0.3, 0.2, 0.12]  # u_i of a K = 6 run: drafts accepting >= i tokens


def synthetic(t0: float, o: float, r: float, c: int, ks, shares=SHARES, ttft=0.02, n=128) -> list[dict]:
    """Points exactly on R(K) = T0 (1 + o + r K), as a server following the model would measure them."""
    out = []
    for k in ks:
        e = float(tuning.mean_tokens(shares, k))
        tpot = t0 * (1 + o + r * k) / e if k else t0
        out.append(
            {
                "k": k,
                "concurrency": c,
                "tpot_s": tpot,
                "ttft_s": ttft,
                "output_tokens": n,
                "tokens_per_s": c * n / (ttft + (n - 1) * tpot),
                "shares": list(shares[:k]),
                "requests": 32,
                "failed": 0,
            }
        )
    return out


SHORT = [u * 1.0 for u in SHARES]
LONG = [u * 0.5 for u in SHARES]  # acceptance falls with context (speculators #684: 2.30 → 1.08 accept length)


def two_contexts() -> list[dict]:
    """At 64 tokens drafts pay at every load; at 2048 the step costs more per draft and acceptance halves."""
    points = []
    for c in (1, 8):
        points += [
            p | {"context": 64, "prompt_tokens": 66.0} for p in synthetic(0.01, 0.1, 0.05, c, range(0, 7), SHORT)
        ]
        points += [
            p | {"context": 2048, "prompt_tokens": 2050.0} for p in synthetic(0.02, 0.3, 0.3, c, range(0, 7), LONG)
        ]
    return points

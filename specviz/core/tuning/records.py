"""A tune's points as rows of the run library: compared and calibrated wherever a run is."""

from __future__ import annotations

import math
from collections.abc import Sequence

from specviz.core import hardware
from specviz.core.tuning.context import context_of

BUNDLED = "specviz bundled"  #: data/catalog/pairs.csv's name of the pair a tune specviz starts serves


def bundled_pair() -> dict[str, str]:
    """Target, draft and method of :data:`BUNDLED`, as :func:`library_records` takes them."""
    row = hardware.preset_pairs().set_index("name").loc[BUNDLED]
    return {"target": str(row["target"]), "draft": str(row["draft"]), "method": "model"}


def _finite(x) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def _usable(p: dict) -> bool:
    return p.get("failed", 0) < p.get("requests", 1) and (_finite(p.get("tokens_per_s")) or 0) > 0


def conditional(shares: Sequence[float]) -> list[float]:
    """a_i = u_i / u_(i−1), u_0 = 1: the conditional acceptance per position from the unconditional shares u_i
    (NaN after a position no round reached)."""
    out, prev = [], 1.0
    for u in shares:
        out.append(min(max(u / prev, 0.0), 1.0) if prev > 0 else math.nan)
        prev = u
    return out


def library_records(
    points: Sequence[dict], *, label: str, target: str = "", draft: str = "", method: str = ""
) -> list[dict]:
    """Each usable point with K ≥ 1 as a measurement row: speedup and t_target_ms against K = 0 at its load and
    length, E[N] and the conditional acceptance per position (docs/tune.md, "The run library")."""
    plain = {(int(p["concurrency"]), context_of(p)): p for p in points if int(p["k"]) == 0 and _usable(p)}
    out = []
    for p in sorted(points, key=lambda p: (context_of(p), int(p["concurrency"]), int(p["k"]))):
        k, c, n = int(p["k"]), int(p["concurrency"]), context_of(p)
        if k < 1 or not _usable(p):
            continue
        base = plain.get((c, n))
        row = {
            "label": f"{label}: K = {k}, {c} in flight" + (f", {n}-token prompts" if n else ""),
            "k": k,
            "batch_size": c,
            "concurrency": c,
            "tokens_per_s": _finite(p["tokens_per_s"]),
            "source": "specviz tune",
        }
        tau = _finite(p.get("mean_accepted"))
        if tau is None and len(p.get("shares") or []) >= k:  # E[N] = 1 + Σ u_i over the positions counted
            tau = 1.0 + float(sum(p["shares"][:k]))
        if tau is not None:
            row["mean_accepted_tokens"] = min(max(tau, 1.0), k + 1.0)
        if p.get("shares"):
            row["per_position_acceptance"] = ";".join(f"{a:.6g}" for a in conditional(p["shares"])[:k])
        if base is not None:
            row["speedup"] = row["tokens_per_s"] / float(base["tokens_per_s"])
            row["baseline_tokens_per_s"] = float(base["tokens_per_s"])
            if (t := _finite(base.get("tpot_s"))) is not None and t > 0:
                row["t_target_ms"] = t * 1e3
        if "mean_accepted_tokens" not in row and "speedup" not in row:
            continue
        for name in ("prompt_tokens", "output_tokens"):
            if (x := _finite(p.get(name))) is not None and x > 0:
                row[name] = x
        if (t := _finite(p.get("ttft_s"))) is not None and t > 0:
            row["notes"] = f"mean TTFT {t * 1e3:.3g} ms, mean TPOT {p['tpot_s'] * 1e3:.3g} ms, {p['requests']} requests"
        row |= {
            name: value
            for name, value in (("target_model", target), ("draft_model", draft), ("method", method))
            if value
        }
        out.append(row)
    return out

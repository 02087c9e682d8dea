"""A tune's answer as JSON (``answer.json``, which a later remote tune reads its profile from) and as text."""

from __future__ import annotations

import math

from specviz.base.i18n import Message
from specviz.core.tuning.analysis import Answer
from specviz.core.tuning.fit import Profile


def answer_json(answer: Answer) -> dict:
    """The fitted lines, the profile, the best K per load, the tiers and the predicted/measured table."""
    return {
        "profile": None if answer.profile is None else _no_nan(vars(answer.profile)),
        "fits": [vars(f) | {"measured_ks": list(f.measured_ks)} for f in answer.fits],
        "best": [vars(c) for c in answer.choices],
        "tiers": [list(t) for t in answer.tiers],
        "table": answer.table.to_dict(orient="records"),
    }


def _no_nan(d: dict) -> dict:
    """``d`` with NaN numbers as None (JSON has no NaN)."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in d.items()}


def read_profile(d: dict) -> Profile:
    """The profile of an ``answer.json``; Message naming what is missing or not a number."""
    p = d.get("profile") if isinstance(d, dict) else None
    if not isinstance(p, dict):
        raise Message("the profile file has no profile (an answer.json of a tune with K = 0 and two K measured)")
    values = {}
    for key in ("overhead", "per_token"):
        v = p.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise Message("profile field {field} must be a finite number; got {value!r}", field=key, value=v)
        values[key] = float(v)
    seconds = p.get("overhead_s")  # answer.json files written before it carried seconds have none
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        seconds = math.nan
    return Profile(values["overhead"], values["per_token"], str(p.get("source", "a profile file")), float(seconds))


def answer_text(answer: Answer, why: str, saved: int, total: int) -> str:
    """What the CLI prints: points, each load's line, predicted against measured, the best K and the tiers."""
    lines = [f"points: {saved} of {total} ({why})"]
    if answer.profile is not None:
        p = answer.profile
        ms = "" if not math.isfinite(p.overhead_s) else f" (o = {p.overhead_s * 1e3:.3f} ms)"
        lines.append(f"profile ({p.source}): o = {p.overhead:.3f}, r = {p.per_token:.3f} target steps{ms}")
    lines.append("load  T0 ms      o      r  how")
    for f in answer.fits:
        lines.append(f"{f.concurrency:4d} {f.t0_s * 1e3:6.2f} {f.overhead:6.3f} {f.per_token:6.3f}  {f.how}")
    lines.append("load   K  TPOT ms pred (meas)   tokens/s pred (meas)")
    for r in answer.table.itertuples():
        lines.append(
            f"{r.concurrency:4d} {r.k:3d}  {r.tpot_s * 1e3:7.2f} ({_ms(r.measured_tpot_s)})"
            f"  {r.tokens_per_s:8.0f} ({_n(r.measured_tokens_per_s)})"
        )
    for c in answer.choices:
        gain = c.tokens_per_s / c.without_s - 1.0 if c.without_s > 0 else math.nan
        lines.append(
            f"best K at {c.concurrency} in flight: {c.k} ({c.tokens_per_s:.0f} tokens/s, {gain:+.0%} vs K = 0)"
        )
    lines.append("tiers (from load: K): " + ", ".join(f"{s}: {k}" for s, k in answer.tiers))
    return "\n".join(lines)


def cost_text(by_load, best, plain, usd_per_hour: float, gpus: int, tpot_sla_s: float | None) -> str:
    """The CLI's cost lines: :func:`cost_by_load` per load, then :func:`cheapest`'s two setups."""
    limit = "no TPOT limit" if tpot_sla_s is None else f"TPOT <= {tpot_sla_s * 1e3:g} ms"
    lines = [f"cost at USD {usd_per_hour:g} per GPU-hour x {gpus} GPU ({limit}); USD per million output tokens"]
    lines.append("load   K  tokens/s  USD/M   K=0 tokens/s  USD/M  saving")
    for r in by_load.itertuples():
        k = "—" if not math.isfinite(r.k) else f"{r.k:.0f}"
        lines.append(
            f"{r.concurrency:4d} {k:>3}  {_n(r.tokens_per_s):>8}  {_usd(r.usd_per_m):>6}   {_n(r.plain_tokens_per_s):>12}"
            f"  {_usd(r.plain_usd_per_m):>6}  {_pct(r.saving):>6}"
        )
    for name, row in (("cheapest", best), ("cheapest without speculation", plain)):
        if row is None:
            lines.append(f"{name}: no point meets the TPOT limit")
        else:
            lines.append(
                f"{name}: K = {int(row['k'])} at {int(row['concurrency'])} in flight,"
                f" USD {_usd(row['usd_per_m'])} per million tokens ({row['tokens_per_s']:.0f} tokens/s)"
            )
    return "\n".join(lines)


def _usd(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:.3g}"


def _pct(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:+.0%}"


def _ms(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x * 1e3:.2f}"


def _n(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:.0f}"

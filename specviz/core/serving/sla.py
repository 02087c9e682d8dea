"""What a user asks: the best option at each load under an SLA, the largest rate, GPUs, the K by running batch."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.core.serving.grid import CostGrid
from specviz.core.serving.queue import steady_state
from specviz.core.serving.traffic import Lengths


def _meets(frame: pd.DataFrame, ttft_s: float | None, tpot_s: float | None) -> pd.Series:
    ok = ~frame["overloaded"]
    if ttft_s is not None:
        ok &= frame["ttft_s"] <= ttft_s
    if tpot_s is not None:
        ok &= frame["tpot_s"] <= tpot_s
    return ok


def best_by_load(frame: pd.DataFrame, *, ttft_s: float | None = None, tpot_s: float | None = None) -> pd.DataFrame:
    """Per load, the lowest-TPOT option meeting the SLA (ties to the smaller K; none: the lowest TPOT), and speedup
    TPOT(0) / TPOT(best). Columns: load, k_best, option, tpot_s, tpot_plain_s, speedup, meets_sla, overloaded,
    per_gpu and per_gpu_plain (output tokens/s per GPU of the best option and of K = 0)."""
    f = frame.assign(meets=_meets(frame, ttft_s, tpot_s))
    rows = []
    for load, g in f.groupby("load", sort=True):
        plain = g[g["k"] == 0].iloc[0]
        pool = g[g["meets"]] if g["meets"].any() else g[~g["overloaded"]]
        if pool.empty:
            rows.append(
                dict(
                    load=load,
                    k_best=np.nan,
                    option="",
                    tpot_s=np.nan,
                    tpot_plain_s=np.nan,
                    speedup=np.nan,
                    meets_sla=False,
                    overloaded=True,
                    per_gpu=np.nan,
                    per_gpu_plain=np.nan,
                )
            )
            continue
        best = pool.sort_values(["tpot_s", "k"], kind="stable").iloc[0]
        rows.append(
            dict(
                load=load,
                k_best=int(best["k"]),
                option=best["option"],
                tpot_s=best["tpot_s"],
                tpot_plain_s=plain["tpot_s"],
                speedup=plain["tpot_s"] / best["tpot_s"],
                meets_sla=bool(g["meets"].any()),
                overloaded=False,
                per_gpu=best["tokens_per_s_per_gpu"],
                per_gpu_plain=np.nan if plain["overloaded"] else plain["tokens_per_s_per_gpu"],
            )
        )
    return pd.DataFrame(rows)


def speculation_stops_paying(best: pd.DataFrame) -> float | None:
    """The smallest load from which on k_best is 0 at every larger load; None where speculation pays throughout."""
    b = best[best["k_best"].notna()].sort_values("load")  # overloaded loads say nothing
    if b.empty:
        return None
    pays = b["k_best"].to_numpy() > 0
    if pays[-1]:
        return None
    last = np.flatnonzero(pays)
    return float(b["load"].iloc[last[-1] + 1 if last.size else 0])


def stops_paying_rate(
    grid: CostGrid, output: Lengths, top: float, *, ttft_s=None, tpot_s=None, points: int = 48
) -> float | None:
    """:func:`speculation_stops_paying` over Poisson rates up to ``top`` (the largest any option meets the SLA at,
    :func:`max_rate`): geometric from top / 100, refined once. None: speculation pays at every rate, or none meets."""
    if not (np.isfinite(top) and top > 0):
        return None
    sla = dict(ttft_s=ttft_s, tpot_s=tpot_s)
    lam = np.geomspace(top / 100, top, points)
    stop = speculation_stops_paying(best_by_load(steady_state(grid, output, lam, mode="open"), **sla))
    if stop is None or stop <= lam[0]:
        return stop
    before = lam[np.searchsorted(lam, stop) - 1]
    fine = np.linspace(before, stop, 17)
    return speculation_stops_paying(best_by_load(steady_state(grid, output, fine, mode="open"), **sla))


def max_rate(
    grid: CostGrid, output: Lengths, *, ttft_s: float | None = None, tpot_s: float | None = None, points: int = 256
) -> pd.DataFrame:
    """Largest Poisson rate (requests/s, one replica) meeting the SLA, per option and for the best: a geometric sweep
    up to the throughput at the cap, refined once. Columns: option, k, max_rps, max_rps_per_gpu (NaN: none meets)."""
    rounds = output.expect(lambda g: g - 1) / grid.mean_tokens  # R (nO,)
    cap = grid.option_caps()  # (nO,)
    at_cap = np.array([np.interp(c, grid.batch, grid.round_s[:, j]) for j, c in enumerate(cap)])  # (nO,)
    tau_cap = at_cap + cap * grid.prefill_s / rounds
    hi = float(np.max(cap / (rounds * tau_cap)))  # the throughput at the cap bounds every steady rate
    lam = np.geomspace(hi * 1e-4, hi * 1.001, points)
    frame = steady_state(grid, output, lam, mode="open")
    ok = _meets(frame, ttft_s, tpot_s).to_numpy().reshape(lam.size, -1)  # (nL, nO)
    # the SLA holds below a rate and fails above it (every metric grows with λ): the last rate that meets
    last = np.where(ok.any(axis=0), ok.shape[0] - 1 - np.argmax(ok[::-1], axis=0), -1)
    lo = np.where(last >= 0, lam[np.maximum(last, 0)], np.nan)
    nxt = np.minimum(last + 1, lam.size - 1)
    fine = np.linspace(0.0, 1.0, 33)
    out = lo.copy()
    for j in np.flatnonzero(last >= 0):
        if last[j] == lam.size - 1:
            continue
        cand = lam[last[j]] + fine * (lam[nxt[j]] - lam[last[j]])
        f = steady_state(grid, output, cand, mode="open")
        meets = _meets(f, ttft_s, tpot_s).to_numpy().reshape(cand.size, -1)[:, j]
        out[j] = cand[meets].max() if meets.any() else lo[j]
    frame = pd.DataFrame(
        {
            "option": [o.label for o in grid.options],
            "k": [o.k for o in grid.options],
            "max_rps": out,
            "max_rps_per_gpu": out / grid.gpus,
        }
    )
    return frame


def gpus_needed(rate: float, max_rps: float, gpus_per_replica: int) -> float:
    """⌈rate / max_rps⌉ replicas of ``gpus_per_replica`` GPUs serve ``rate`` requests/s; NaN where none meets it."""
    if not (np.isfinite(rate) and rate > 0):
        raise Message("target rate must be a number of requests/s > 0; got {value}", value=rate)
    if not (np.isfinite(max_rps) and max_rps > 0):
        return float("nan")
    return float(np.ceil(rate / max_rps - 1e-12) * gpus_per_replica)


# --------------------------------------------------------------------------------------
# the schedule as each engine takes it
# --------------------------------------------------------------------------------------


def k_by_batch(grid: CostGrid, output: Lengths) -> pd.DataFrame:
    """The chain K (trees left out) of lowest TPOT τ_K(B) / E[N]_K at each batch B = 1 … cap, τ_K(B) = t_K(B) +
    (B / R_K)·p_K (ties to the smaller K; 0: no speculation, also past a K's cap). Columns: batch, k, tpot_s."""
    batches = np.arange(1, int(grid.cap) + 1, dtype=float)
    chains = [j for j, o in enumerate(grid.options) if o.k == 0 or (o.verify_tokens == o.k + 1 and o.draft_tokens == 1)]
    rounds = output.expect(lambda g: g - 1) / grid.mean_tokens[chains]
    t = np.stack([np.interp(batches, grid.batch, grid.round_s[:, j]) for j in chains], -1)
    tpot = (t + batches[:, None] * grid.prefill_s[chains] / rounds) / grid.mean_tokens[chains]  # (nB, nO)
    tpot = np.where(batches[:, None] <= grid.option_caps()[chains], tpot, np.inf)  # past its cap a K cannot run
    best = tpot.argmin(axis=1)
    ks = np.array([grid.options[j].k for j in chains])
    return pd.DataFrame({"batch": batches.astype(int), "k": ks[best], "tpot_s": tpot[np.arange(batches.size), best]})

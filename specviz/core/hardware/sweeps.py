"""Speedup and K* over a grid of batch sizes and contexts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.core import theory
from specviz.core.hardware.pair import pair_costs, round_speedup


def _mean_tokens(alpha, k_max: int) -> np.ndarray:
    """E[N] for K = 1..k_max, shape (k_max,), from α or a_1..a_m (the last a repeats beyond m)."""
    a = np.atleast_1d(theory.check_alpha(alpha))
    if a.ndim != 1:
        raise Message(
            "alpha must be one number or a vector of per-position acceptance; got shape {shape}", shape=a.shape
        )
    if a.size < k_max:
        a = np.concatenate([a, np.full(k_max - a.size, a[-1])])  # positions beyond the vector: the last one
    return theory.expected_tokens_by_position(a[:k_max])  # (k_max,)


def speedup_by_batch(
    target,
    draft,
    gpu,
    alpha,
    batch,
    context,
    k_max=8,
    *,
    dtype="bf16",
    tp_target=1,
    tp_draft=1,
    draft_context=None,
    efficiency=None,
    draft_tokens=1,
    verify_tokens=None,
    expert_parallel=False,
) -> pd.DataFrame:
    """Per (batch, context) row: batch, context, c, t_target, s_1..s_{k_max}, k_star, speedup_at_k_star (K* = 0,
    speedup 1, where no K pays). ``alpha``: a number, per-position a_1, a_2, … (E[N] = 1 + Σ_i Π_{j≤i} a_j; the
    last repeats) or α(L) of the context. Other keywords go to :func:`pair_costs`."""
    if not (isinstance(k_max, int | np.integer) and 1 <= k_max <= 64):
        raise Message("k_max must be an integer in [1, 64]; got {value!r}", value=k_max)
    b = np.atleast_1d(np.asarray(batch, dtype=float))[:, None, None]  # (nB, 1, 1)
    ctx = np.atleast_1d(np.asarray(context, dtype=float))[None, :, None]  # (1, nL, 1)
    ks = np.arange(1, k_max + 1)[None, None, :]  # (1, 1, K)
    costs = pair_costs(
        target,
        draft,
        gpu,
        b,
        ctx,
        ks,
        dtype=dtype,
        tp_target=tp_target,
        tp_draft=tp_draft,
        draft_context=None
        if draft_context is None
        else np.atleast_1d(np.asarray(draft_context, dtype=float))[None, :, None],
        efficiency=efficiency,
        draft_tokens=draft_tokens,
        verify_tokens=verify_tokens,
        expert_parallel=expert_parallel,
    )
    if callable(alpha):  # α(L), e.g. a fitted decay (specviz.core.acceptance.DecayFit): E[N] per context
        a = theory.check_alpha(np.asarray(alpha(ctx[0, :, 0]), dtype=float))  # (nL,)
        mean = theory.expected_tokens(a[None, :, None], ks)  # (1, nL, K)
    else:
        mean = _mean_tokens(alpha, k_max)  # (K,)
    s = round_speedup(mean, costs)  # (nB, nL, K)
    s = np.broadcast_to(s, np.broadcast_shapes(b.shape, ctx.shape, ks.shape))
    best = s.argmax(-1)  # first maximum: ties go to the smaller K
    s_best = np.take_along_axis(s, best[..., None], -1)[..., 0]
    k_star = np.where(s_best > 1.0, best + 1, 0)
    nb, nl = s.shape[:2]
    frame = pd.DataFrame(
        {
            "batch": np.repeat(np.atleast_1d(batch), nl).astype(int),
            "context": np.tile(np.atleast_1d(context), nb).astype(int),
            "c": np.broadcast_to(costs["c"][..., 0], (nb, nl)).ravel(),
            "t_target": np.broadcast_to(costs["t_target"][..., 0], (nb, nl)).ravel(),
        }
    )
    for i in range(k_max):
        frame[f"s_{i + 1}"] = s[..., i].ravel()
    frame["k_star"] = k_star.ravel()
    frame["speedup_at_k_star"] = np.where(k_star > 0, s_best, 1.0).ravel()
    return frame


def k_schedule(target, draft, gpu, alpha, context, batches, k_max=8, **kw) -> pd.DataFrame:
    """K*(B) at ``context`` for each of ``batches``: columns batch, k (0: speculation does not pay)."""
    frame = speedup_by_batch(target, draft, gpu, alpha, batches, [context], k_max, **kw)
    return pd.DataFrame({"batch": frame["batch"].to_numpy(), "k": frame["k_star"].to_numpy()})


def alpha_from_measurements(frame: pd.DataFrame, per_position: bool = False, what: str | None = None):
    """α from measured rows (canonical columns): the mean of ``alpha_used``, or with ``per_position``
    the a_1;a_2;… of the row with the largest K (unreached positions take the last value). ValueError names
    what is missing in ``what`` (default "the run")."""
    what = Phrase("the run") if what is None else what
    if frame is None or not len(frame):
        raise Message("{what} has no measured rows to take α from", what=what)
    if not per_position:
        alpha = pd.to_numeric(frame.get("alpha_used"), errors="coerce").dropna() if "alpha_used" in frame else []
        if not len(alpha):
            raise Message("{what} has no α (alpha_used) in any row", what=what)
        return float(alpha.mean())
    cells = frame.get("per_position_acceptance")
    rows = frame[cells.notna() & (cells.astype(str).str.strip() != "")] if cells is not None else frame.iloc[:0]
    if not len(rows):
        raise Message("{what} has no per-position acceptance (per_position_acceptance); use its mean α", what=what)
    row = rows.loc[pd.to_numeric(rows["k"], errors="coerce").idxmax()]
    values = [float(x) for x in str(row["per_position_acceptance"]).split(";") if x.strip()]
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        raise Message("{what}: per-position acceptance at K = {k} was never measured (all nan)", what=what, k=row["k"])
    out, last = [], finite[0]
    for v in values:
        last = v if np.isfinite(v) else last
        out.append(float(np.clip(last, 0.0, 1.0)))
    return out

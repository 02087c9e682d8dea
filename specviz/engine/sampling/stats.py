"""Statistics of a simulation: a mean with its confidence interval, Pearson's χ² goodness of fit."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


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
    r"""Pearson χ² test of emitted ``tokens`` against ``p``: p-value Q(dof/2, X²/2) (regularised upper gamma).

    The smallest-expectation bins are pooled until each expects ≥ ``min_expected``; an emitted token
    with p = 0 makes the p-value 0.
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
    """Merge the smallest-expectation bins, smallest first, until each bin expects ≥ ``min_expected``."""
    order = torch.argsort(exp)
    e, o = exp[order], obs[order]
    cum = e.cumsum(0)
    ready = (cum >= min_expected) & torch.cat([e[1:] >= min_expected, torch.tensor([True])])
    j = int(ready.nonzero()[0]) if bool(ready.any()) else e.numel() - 1
    if j == 0:
        return o, e
    return torch.cat([o[: j + 1].sum().view(1), o[j + 1 :]]), torch.cat([e[: j + 1].sum().view(1), e[j + 1 :]])

"""The Metric converter's scenario (one engine's metric, its value and K, a speed ratio) and what it converts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.app import grids, ui
from specviz.app.share import Param
from specviz.base.i18n import N_
from specviz.core import theory

PAGE = "converter"  #: the page's widget keys start with it
N_ALPHA = 201  #: points of the metrics' curves over α in [0, 1]
SPEC = (
    Param("metric", "mean_tokens", "choice", choices=tuple(theory.METRICS), label=N_("I have this metric")),
    Param("value", 2.5, "float", 0.0, 65.0, label=N_("value")),
    Param("k", 4, "int", 1, 64, label=N_("K (draft length)")),
    Param(
        "conv",
        "c",
        "choice",
        choices=tuple(grids.C_CONVENTIONS),
        label=N_("I have"),
        labels=(N_("c = T_target / T_draft"), N_("c_L = T_draft / T_target (Leviathan)")),
    ),
    Param("ratio", 8.0, "float", 1e-3, 1e4, label=N_("value")),
)


@dataclass(frozen=True)
class Scenario:
    """The page's inputs: a metric's value at K, and a speed ratio in the convention ``conv``."""

    metric: str  #: one of theory.METRICS
    value: float
    k: int  #: draft length K
    conv: str  #: one of grids.C_CONVENTIONS
    ratio: float


def scenario(view: dict) -> Scenario:
    """The page's scenario from its controls' ``view``."""
    return Scenario(view["metric"], view["value"], view["k"], view["conv"], view["ratio"])


@ui.cached
def converted(s: Scenario) -> dict:
    """Every metric of theory.METRICS at the given one's value and K (theory.convert_metric; raises ValueError)."""
    return theory.convert_metric(s.value, s.k, s.metric)


@ui.cached
def curves(k: int) -> tuple[np.ndarray, dict]:
    """(α at N_ALPHA points in [0, 1], {metric: its value at each α}) at K = ``k``."""
    alpha = np.linspace(0.0, 1.0, N_ALPHA)
    return alpha, theory.convert_metric(alpha, k, "alpha")


def ratios(s: Scenario) -> tuple[float, float]:
    """(c, c_L = 1/c) of the speed ratio (raises ValueError on a ratio that is not positive)."""
    c = float(grids.to_c(s.ratio, s.conv))
    return c, float(theory.c_to_leviathan(c))

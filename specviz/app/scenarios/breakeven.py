"""The Break-even page's scenario (K max, the speed-ratio axis, the cost terms, one point) and the maps it draws."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.app import grids, ui
from specviz.app.share import Param
from specviz.base.i18n import N_
from specviz.core import theory

PAGE = "breakeven"  #: the page's widget keys start with it
N_ALPHA, N_C = 201, 121  # grid resolution (α axis, c axis)
SPEC = (
    Param(
        "conv",
        "c",
        "choice",
        choices=tuple(grids.C_CONVENTIONS),
        label=N_("Speed-ratio convention"),
        labels=(N_("c = T_target / T_draft"), N_("c_L = T_draft / T_target (Leviathan)")),
    ),
    Param("curves", [2.0, 4.0, 8.0, 16.0, 32.0], "floats", 1e-3, 1e4, max_items=16),
    Param("k_max", 32, "int", 2, 64, label=N_("K max")),
    Param("c_min", 0.5, "float", 1e-3, 1e4, log=True),
    Param("c_max", 100.0, "float", 1e-3, 1e4, log=True),
    Param("v", 0.0, "float", 0.0, 2.0, label=N_("v — extra verify cost per drafted token")),
    Param("o", 0.0, "float", 0.0, 5.0, label=N_("o — fixed overhead per round (target steps)")),
    Param("f_alpha", 0.8, "float", 0.0, 1.0),
    Param("f_c", 10.0, "float", 1e-3, 1e4, log=True),
    Param(
        "opt_map",
        "kstar",
        "choice",
        choices=("kstar", "speedup"),
        label=N_("Map"),
        labels=("K*(α, c)", N_("Speedup at K*")),
    ),
    Param(
        "view",
        "frontier",
        "choice",
        choices=("frontier", "optimum", "chapter"),
        labels=(N_("Break-even frontier"), N_("Optimal K"), N_("Chapter numbers")),
    ),
)
CURVE_CHOICES = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 16.0, 32.0, 64.0, 100.0]


@dataclass(frozen=True)
class Axes:
    """K = 1 … ``k_max``, the speed-ratio range in the convention ``conv`` and the cost terms v and o."""

    k_max: int
    c_min: float
    c_max: float
    conv: str  #: one of grids.C_CONVENTIONS
    v: float  #: extra verify cost per drafted token, target steps
    o: float  #: fixed overhead per round, target steps


@dataclass(frozen=True)
class Scenario:
    """The page's inputs: the axes, the frontier curves' ratios, the optimum map shown and the f(K) point."""

    axes: Axes
    curves: tuple  #: the speed ratios of the frontier curves, as the control holds them
    opt_map: str  #: "kstar" or "speedup"
    f_alpha: float  #: α of the f(K) point
    f_c: float  #: the speed ratio of the f(K) point, in ``axes.conv``


def scenario(view: dict) -> Scenario:
    """The page's scenario from its controls' ``view``."""
    axes = Axes(view["k_max"], view["c_min"], view["c_max"], view["conv"], view["v"], view["o"])
    return Scenario(axes, tuple(view["curves"]), view["opt_map"], view["f_alpha"], view["f_c"])


def curves(s: Scenario) -> tuple[float, ...]:
    """The frontier curves' ratios, distinct and sorted (a value that is not a number raises ValueError)."""
    try:
        return tuple(sorted({float(x) for x in s.curves}))
    except TypeError as exc:
        raise ValueError(ui.t("frontier values must be numbers: {error}", error=exc)) from exc


@ui.cached
def frontier(a: Axes, ratios: tuple[float, ...]) -> tuple[np.ndarray, dict]:
    """(K = 1 … k_max, {"<conv> = <ratio>": break-even α* at each K}) for each ratio of ``ratios``."""
    ks = np.arange(1, a.k_max + 1)
    return ks, {
        f"{a.conv} = {x:g}": theory.break_even_alpha(ks, float(grids.to_c(x, a.conv)), a.v, a.o) for x in ratios
    }


@ui.cached
def frontier_map(a: Axes) -> grids.Grid:
    """α*(K, c) over K = 1 … k_max and N_C log-spaced ratios."""
    return grids.break_even_grid(
        np.arange(1, a.k_max + 1), grids.log_axis(a.c_min, a.c_max, N_C, a.conv), a.conv, a.v, a.o
    )


@ui.cached
def optimum_maps(a: Axes) -> tuple[grids.Grid, grids.Grid]:
    """(K*(α, c), S at K*) over N_ALPHA α values in [0, 1] and N_C log-spaced ratios."""
    alpha = np.linspace(0.0, 1.0, N_ALPHA)
    return grids.optimal_k_grids(alpha, grids.log_axis(a.c_min, a.c_max, N_C, a.conv), a.conv, a.k_max, a.v, a.o)


def f_of_k(s: Scenario) -> tuple[np.ndarray, np.ndarray, theory.OptimalK]:
    """(K = 1 … k_max, the speedup at each K, theory.optimal_k's best K) at the point (f_alpha, f_c)."""
    a = s.axes
    c = float(grids.to_c(s.f_c, a.conv))
    ks = np.arange(1, a.k_max + 1)
    return ks, theory.speedup(s.f_alpha, c, ks, a.v, a.o), theory.optimal_k(s.f_alpha, c, a.k_max, a.v, a.o)

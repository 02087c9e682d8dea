"""The Design space page's scenario (the maps' axes, the cost terms and one point) and the grids it draws."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.app import grids, ui
from specviz.app.share import Param, by_key
from specviz.base.i18n import N_
from specviz.core import theory

PAGE = "design"  #: the page's widget keys start with it
N_ALPHA, N_C = 201, 121  # grid resolution (α axis, c axis)
SPEC = (
    Param(
        "view",
        "heatmap",
        "choice",
        choices=("heatmap", "surface"),  # figures.grid_figure's modes
        label=N_("Chart type"),
        labels=(N_("Heatmap"), N_("3-D surface")),
    ),
    Param(
        "map",
        "s_c",
        "choice",
        choices=("s_c", "s_k", "en"),
        label=N_("Map"),
        labels=(N_("Speedup over (α, c)"), N_("Speedup over (α, K)"), N_("E[N] over (α, K)")),
    ),
    Param(
        "conv",
        "c",
        "choice",
        choices=tuple(grids.C_CONVENTIONS),
        label=N_("Speed-ratio convention"),
        labels=(N_("c = T_target / T_draft"), N_("c_L = T_draft / T_target (Leviathan)")),
    ),
    Param("alpha", (0.0, 1.0), "range", 0.0, 1.0, label=N_("α range")),
    Param("c_min", 1.0, "float", 1e-3, 1e4, log=True),
    Param("c_max", 100.0, "float", 1e-3, 1e4, log=True),
    Param("k", 4, "int", 1, 64, label=N_("K for the (α, c) map")),
    Param("k_max", 16, "int", 2, 64, label=N_("K max for the (α, K) maps")),
    Param("c_fix", 8.0, "float", 1e-3, 1e4, log=True),
    Param("v", 0.0, "float", 0.0, 2.0, label=N_("v — extra verify cost per drafted token")),
    Param("o", 0.0, "float", 0.0, 5.0, label=N_("o — fixed overhead per round (target steps)")),
    Param("i_alpha", 0.8, "float", 0.0, 1.0),
    Param("i_c", 10.0, "float", 1e-3, 1e4, log=True),
    Param("i_k", 4, "int", 1, 64),
    Param("tab", "maps", "choice", choices=("maps", "inspector"), labels=(N_("Maps"), N_("Point inspector"))),
)
K_MAX = int(by_key(SPEC)["i_k"].hi)  # the inspector's optimal K searches 1..K_MAX


@dataclass(frozen=True)
class Maps:
    """The map drawn and its axes; speed ratios are in the convention ``conv``."""

    map: str  #: "s_c" (speedup over α, c), "s_k" (speedup over α, K) or "en" (E[N] over α, K)
    alpha: tuple[float, float]  #: the α range
    c_min: float
    c_max: float
    conv: str  #: one of grids.C_CONVENTIONS
    k: int  #: K of the (α, c) map
    k_max: int  #: the largest K of the (α, K) maps
    c_fix: float  #: the speed ratio of the (α, K) speedup map
    v: float  #: extra verify cost per drafted token, target steps
    o: float  #: fixed overhead per round, target steps


@dataclass(frozen=True)
class Point:
    """The inspector's point: α, the speed ratio in ``conv``, K, and the cost terms v and o."""

    alpha: float
    ratio: float
    conv: str
    k: int
    v: float
    o: float


@dataclass(frozen=True)
class Scenario:
    """The page's inputs: the chart type, the maps and the inspector's point."""

    chart: str  #: "heatmap" or "surface"
    maps: Maps
    point: Point


def scenario(view: dict) -> Scenario:
    """The page's scenario from its controls' ``view``."""
    conv, v, o = view["conv"], view["v"], view["o"]
    maps = Maps(
        view["map"],
        tuple(view["alpha"]),
        view["c_min"],
        view["c_max"],
        conv,
        view["k"],
        view["k_max"],
        view["c_fix"],
        v,
        o,
    )
    point = Point(view["i_alpha"], view["i_c"], conv, view["i_k"], v, o)
    return Scenario(view["view"], maps, point)


@ui.cached
def grid(m: Maps) -> grids.Grid:
    """The chosen map over N_ALPHA α values: S(α, c) at K over N_C log-spaced ratios, S(α, K) at ``c_fix``, or
    E[N](α, K) for K = 1 … ``k_max`` (raises ValueError on a bad axis or ratio)."""
    c = float(grids.to_c(m.c_fix, m.conv)) if m.map == "s_k" else None  # a bad ratio is named first
    alpha = grids.lin_axis(*m.alpha, N_ALPHA, "α")
    if m.map == "s_c":
        return grids.speedup_alpha_c_grid(alpha, grids.log_axis(m.c_min, m.c_max, N_C, m.conv), m.conv, m.k, m.v, m.o)
    if m.map == "s_k":
        return grids.speedup_alpha_k_grid(alpha, np.arange(1, m.k_max + 1), c, m.v, m.o)
    return grids.expected_tokens_grid(alpha, np.arange(1, m.k_max + 1))


def inspect(p: Point) -> dict:
    """At one (α, c, K): ``e_n`` = E[N], the speedup ``s``, the break-even ``a_star`` (NaN: never pays off),
    the ``best`` K of 1 … K_MAX (theory.optimal_k) and the ``pmf`` of N."""
    c = float(grids.to_c(p.ratio, p.conv))
    return dict(
        e_n=float(theory.expected_tokens(p.alpha, p.k)),
        s=float(theory.speedup(p.alpha, c, p.k, p.v, p.o)),
        a_star=float(theory.break_even_alpha(p.k, c, p.v, p.o)),
        best=theory.optimal_k(p.alpha, c, K_MAX, p.v, p.o),
        pmf=theory.accepted_length_pmf(p.alpha, p.k),
    )

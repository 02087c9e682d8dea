"""Speculative sampling: the verification rule (torch, batched), its buggy variants, and the Monte-Carlo lab."""

from specviz.engine.sampling.distributions import (
    BUILDERS,
    build,
    dirichlet,
    normalised,
    parse_distribution,
    tempered,
    tempered_probs,
    uniform,
    zipf,
)
from specviz.engine.sampling.rule import SiblingResult, VerifyResult, overlap, residual, verify, verify_siblings
from specviz.engine.sampling.simulate import simulate_rounds
from specviz.engine.sampling.stats import GofResult, chi_square_gof, mean_with_ci
from specviz.engine.sampling.variants import VARIANTS, Verdict, emitted_verdict

__all__ = [
    "BUILDERS",
    "VARIANTS",
    "GofResult",
    "SiblingResult",
    "Verdict",
    "VerifyResult",
    "build",
    "chi_square_gof",
    "dirichlet",
    "emitted_verdict",
    "mean_with_ci",
    "normalised",
    "overlap",
    "parse_distribution",
    "residual",
    "simulate_rounds",
    "tempered",
    "tempered_probs",
    "uniform",
    "verify",
    "verify_siblings",
    "zipf",
]

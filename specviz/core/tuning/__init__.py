"""Tuning a measured server: its round cost per load, the K that load wants, and the schedule that follows."""

from specviz.core.tuning.analysis import KS_PREDICTED, Answer, analyse, confirm, next_to_measure, single_k_errors
from specviz.core.tuning.context import (
    acceptance_by_context,
    analyse_by_context,
    at_context,
    context_of,
    contexts,
    k_by_context,
    prompt_tokens,
)
from specviz.core.tuning.cost import cheapest, cost_by_load, priced, tokens_per_s_at_cost
from specviz.core.tuning.fit import (
    OWN,
    LoadFit,
    Profile,
    fit_load,
    mean_tokens,
    pooled_profile,
    predict,
    profile_at,
)
from specviz.core.tuning.records import bundled_pair, conditional, library_records
from specviz.core.tuning.report import answer_json, answer_text, cost_text, read_profile
from specviz.core.tuning.schedule import (
    Choice,
    best_k,
    fixed_k_loss,
    k_at,
    mix_weights,
    static_vs_schedule,
    tiers,
    warm_zero_tiers,
)

__all__ = [
    "KS_PREDICTED",
    "OWN",
    "Answer",
    "Choice",
    "LoadFit",
    "Profile",
    "acceptance_by_context",
    "analyse",
    "analyse_by_context",
    "answer_json",
    "answer_text",
    "at_context",
    "best_k",
    "bundled_pair",
    "cheapest",
    "conditional",
    "confirm",
    "context_of",
    "contexts",
    "cost_by_load",
    "cost_text",
    "fit_load",
    "fixed_k_loss",
    "k_at",
    "k_by_context",
    "library_records",
    "mean_tokens",
    "mix_weights",
    "next_to_measure",
    "pooled_profile",
    "predict",
    "priced",
    "profile_at",
    "prompt_tokens",
    "read_profile",
    "single_k_errors",
    "static_vs_schedule",
    "tiers",
    "tokens_per_s_at_cost",
    "warm_zero_tiers",
]

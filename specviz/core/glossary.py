"""What serving stacks call the quantities of speculative decoding (docs/design.md §6).

Under the i.i.d. model with per-token acceptance α and draft length K. ``ours`` names the quantity in specviz's
terms; ``metric`` is the key of :data:`specviz.core.theory.METRICS` it converts through (empty if not a
function of α and K alone).
"""

from __future__ import annotations

import pandas as pd

from specviz.base.i18n import N_

STACK_TERMS: tuple[dict[str, str], ...] = (
    {
        "stack": "vLLM V1",
        "name": "Mean acceptance length",
        "definition": N_("1 + accepted / drafts (bonus counted)"),
        "ours": N_("E[N]"),
        "metric": "mean_tokens",
    },
    {
        "stack": "vLLM V1",
        "name": "Draft acceptance rate",
        "definition": N_("accepted / drafted draft tokens"),
        "ours": N_("r = (E[N] − 1) / K"),
        "metric": "acceptance_rate",
    },
    {
        "stack": "vLLM V1",
        "name": "Per-position acceptance rate",
        "definition": N_("drafts accepting ≥ i+1 tokens / drafts (unconditional)"),
        "ours": N_("α^(i+1); conditional ratio ≈ α"),
        "metric": "",
    },
    {
        "stack": "vLLM V1",
        "name": "num_speculative_tokens",
        "definition": N_("draft length"),
        "ours": N_("K"),
        "metric": "",
    },
    {
        "stack": "vLLM V0",
        "name": "System efficiency",
        "definition": N_("emitted / (seqs × (K+1))"),
        "ours": N_("E[N] / (K + 1)"),
        "metric": "system_efficiency",
    },
    {
        "stack": "SGLang",
        "name": "accept len",
        "definition": N_("(accepted + bonus) / forward passes"),
        "ours": N_("E[N]"),
        "metric": "mean_tokens",
    },
    {
        "stack": N_("SGLang (before April 2026)"),
        "name": "accept rate",
        "definition": N_("accept len / speculative_num_draft_tokens"),
        "ours": N_("E[N] / (K + 1) for chains — not r"),
        "metric": "system_efficiency",
    },
    {
        "stack": N_("SGLang (since PR #23530, April 2026)"),
        "name": "accept rate",
        "definition": N_("accepted draft tokens / proposed draft tokens"),
        "ours": N_("r = (E[N] − 1) / K"),
        "metric": "acceptance_rate",
    },
    {
        "stack": "llama.cpp",
        "name": "accept %",
        "definition": N_("n_accept / n_drafted, n_accept excludes bonus"),
        "ours": N_("r"),
        "metric": "acceptance_rate",
    },
    {
        "stack": "llama.cpp",
        "name": "n_draft / --draft-max",
        "definition": N_("draft length"),
        "ours": N_("K"),
        "metric": "",
    },
    {
        "stack": "TensorRT-LLM",
        "name": "avg_decoded_tokens_per_iter",
        "definition": N_("target token + accepted drafts per step"),
        "ours": N_("E[N]"),
        "metric": "mean_tokens",
    },
    {
        "stack": N_("HF transformers"),
        "name": "num_assistant_tokens",
        "definition": N_('draft length (schedule "constant" / "heuristic")'),
        "ours": N_("K"),
        "metric": "",
    },
    {
        "stack": "Spec-Bench",
        "name": "#Mean accepted tokens",
        "definition": N_("mean of accept_lengths per step, 1.00 for vanilla"),
        "ours": N_("E[N]"),
        "metric": "mean_tokens",
    },
    {
        "stack": N_("Leviathan et al."),
        "name": "γ, c",
        "definition": N_("draft length; T_draft / T_target"),
        "ours": N_("K; 1/c"),
        "metric": "",
    },
)


def stack_terms() -> pd.DataFrame:
    """The glossary as a table (one row per serving stack's term)."""
    return pd.DataFrame(STACK_TERMS)

"""What engines call the quantities of speculative decoding (docs/design.md §6).

Under the i.i.d. model with per-token acceptance α and draft length K. The
``ours`` column names the quantity in specviz's terms; ``metric`` is the key of
:data:`specviz.core.theory.METRICS` it converts through (empty when it is not a
function of α and K alone).
"""

from __future__ import annotations

import pandas as pd

ENGINE_TERMS: tuple[dict[str, str], ...] = (
    {
        "engine": "vLLM V1",
        "name": "Mean acceptance length",
        "definition": "1 + accepted / drafts (bonus counted)",
        "ours": "E[N]",
        "metric": "mean_tokens",
    },
    {
        "engine": "vLLM V1",
        "name": "Draft acceptance rate",
        "definition": "accepted / drafted draft tokens",
        "ours": "r = (E[N] − 1) / K",
        "metric": "acceptance_rate",
    },
    {
        "engine": "vLLM V1",
        "name": "Per-position acceptance rate",
        "definition": "drafts accepting ≥ i+1 tokens / drafts (unconditional)",
        "ours": "α^(i+1); conditional ratio ≈ α",
        "metric": "",
    },
    {"engine": "vLLM V1", "name": "num_speculative_tokens", "definition": "draft length", "ours": "K", "metric": ""},
    {
        "engine": "vLLM V0",
        "name": "System efficiency",
        "definition": "emitted / (seqs × (K+1))",
        "ours": "E[N] / (K + 1)",
        "metric": "system_efficiency",
    },
    {
        "engine": "SGLang",
        "name": "accept len",
        "definition": "(accepted + bonus) / forward passes",
        "ours": "E[N]",
        "metric": "mean_tokens",
    },
    {
        "engine": "SGLang (before April 2026)",
        "name": "accept rate",
        "definition": "accept len / speculative_num_draft_tokens",
        "ours": "E[N] / (K + 1) for chains — not r",
        "metric": "system_efficiency",
    },
    {
        "engine": "SGLang (since PR #23530, April 2026)",
        "name": "accept rate",
        "definition": "accepted draft tokens / proposed draft tokens",
        "ours": "r = (E[N] − 1) / K",
        "metric": "acceptance_rate",
    },
    {
        "engine": "llama.cpp",
        "name": "accept %",
        "definition": "n_accept / n_drafted, n_accept excludes bonus",
        "ours": "r",
        "metric": "acceptance_rate",
    },
    {"engine": "llama.cpp", "name": "n_draft / --draft-max", "definition": "draft length", "ours": "K", "metric": ""},
    {
        "engine": "TensorRT-LLM",
        "name": "avg_decoded_tokens_per_iter",
        "definition": "target token + accepted drafts per step",
        "ours": "E[N]",
        "metric": "mean_tokens",
    },
    {
        "engine": "HF transformers",
        "name": "num_assistant_tokens",
        "definition": 'draft length (schedule "constant" / "heuristic")',
        "ours": "K",
        "metric": "",
    },
    {
        "engine": "Spec-Bench",
        "name": "#Mean accepted tokens",
        "definition": "mean of accept_lengths per step, 1.00 for vanilla",
        "ours": "E[N]",
        "metric": "mean_tokens",
    },
    {
        "engine": "Leviathan et al.",
        "name": "γ, c",
        "definition": "draft length; T_draft / T_target",
        "ours": "K; 1/c",
        "metric": "",
    },
)


def engine_terms() -> pd.DataFrame:
    """The glossary as a table (one row per engine term)."""
    return pd.DataFrame(ENGINE_TERMS)

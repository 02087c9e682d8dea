"""A round's terms in target steps: what it gains, what each part costs, and why speculation loses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.core import hardware

L8, EAGLE3, L1 = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "meta-llama/Llama-3.2-1B-Instruct",
)
H100 = "H100-SXM5-80GB"


@settings(max_examples=60, deadline=None)
@given(
    draft=st.sampled_from([L1, EAGLE3, hardware.NGRAM]),
    batch=st.integers(1, 512),
    k=st.integers(1, 8),
    alpha=st.floats(0.0, 0.95),
)
def test_round_terms_add_up_to_the_speedup(draft, batch, k, alpha):
    """S = E[N] / (1 + verify + draft + overhead) is round_speedup's; it loses exactly when the extra cost
    exceeds the E[N] − 1 tokens gained; the largest term is the biggest of the three."""
    costs = hardware.pair_costs(L8, draft, H100, batch, 2048, k, efficiency="vllm")
    mean_tokens = (1 - alpha ** (k + 1)) / (1 - alpha)
    got = hardware.round_terms(mean_tokens, costs)
    assert got["speedup"] == pytest.approx(float(hardware.round_speedup(mean_tokens, costs)), rel=1e-9)
    extra = sum(got[n] for n in hardware.ROUND_TERMS)
    if abs(extra - got["gained"]) > 1e-9:
        assert (got["speedup"] < 1) == (extra > got["gained"])
    assert got[got["largest"]] == max(got[n] for n in hardware.ROUND_TERMS)

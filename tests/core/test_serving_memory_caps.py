"""Each option's memory cap under load: a draft's weights, its KV cache and the K + 1 verify slots leave room
for fewer sequences than the target alone, so past the draft's cap requests queue with speculation while
they still decode without it (TensorRT-LLM #9279: the draft's KV taken from the target's)."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.core import hardware, profiles, serving

PAIR = hardware.preset_pairs(heads=True).set_index("name").loc["Llama-3.1 8B + 3.2 1B"]
OUTPUT = serving.Lengths.fixed(256)


def grid(gpu: str = "L4-24GB", prompt: int = 4096, kv: str = "unified", max_seqs: int = 1024):
    return serving.cost_grid(
        PAIR["target"],
        PAIR["draft"],
        gpu,
        serving.chain_options(0.8, 6),
        serving.Lengths.fixed(prompt),
        OUTPUT,
        stack="vllm",
        efficiency=profiles.profile("vllm"),
        max_seqs=max_seqs,
        kv=kv,
    )


@pytest.fixture(scope="module")
def small():
    """A 24 GB GPU at a 4K context: 10 sequences fit without the draft, 4 with it."""
    return grid()


def test_the_caps_are_the_memory_plans_with_and_without_the_draft(small):
    caps = small.option_caps()
    reach = 4096 + 256  # the cache a request reaches, prompt + output, not the decode context L̄
    assert small.context < reach
    plan = hardware.memory_plan(PAIR["target"], PAIR["draft"], "L4-24GB", 1, reach, 6)
    assert caps[0] == plan.max_batch_plain and (caps[1:] == plan.max_batch).all()
    assert caps[0] > caps[1] >= 1 and small.cap == caps[0]


def test_a_llama_server_has_the_same_slots_drafting_or_not_and_max_seqs_bounds_both():
    assert len(set(grid(kv="slots").option_caps())) == 1
    assert set(grid("H200-SXM-141GB", 1024, max_seqs=64).option_caps()) == {64}


def test_between_the_two_caps_speculation_queues_and_no_speculation_still_decodes(small):
    caps = small.option_caps()
    users = int(caps[0])  # every user fits without the draft, not with it
    f = serving.steady_state(small, OUTPUT, [users], mode="closed")
    plain, spec = f[f["k"] == 0].iloc[0], f[f["k"] == 3].iloc[0]
    assert not plain["queued"] and spec["queued"]
    assert spec["batch"] <= caps[3] + 1e-9 < plain["batch"]


def test_past_the_drafts_cap_the_schedule_turns_speculation_off(small):
    caps = small.option_caps()
    by = serving.k_by_batch(small, OUTPUT).set_index("batch")["k"]
    assert by.index.max() == caps[0]
    assert (by.loc[caps[1] + 1 :] == 0).all() and np.isfinite(serving.k_by_batch(small, OUTPUT)["tpot_s"]).all()


def test_an_open_loop_rate_bound_uses_each_options_own_cap(small):
    """The largest rate meeting a loose SLA is each option's throughput at its own cap: no speculation, with
    2.5 times the sequences, serves more requests/s than any K on this GPU."""
    rates = serving.max_rate(small, OUTPUT, tpot_s=1.0, ttft_s=600.0).set_index("k")["max_rps"]
    assert rates.loc[0] > rates.drop(0).max()


@pytest.mark.slow
def test_the_vectorised_chain_matches_the_per_point_loop_at_each_options_own_cap(small):
    """steady_state (every option at once, each capped on its own) against serving.open_loop_point (one option,
    its cap, the chain walked level by level) at a rate where K = 3 runs at its cap of 4 and K = 0 does not."""
    rate = 0.2
    f = serving.steady_state(small, OUTPUT, [rate], mode="open").set_index("k")
    rounds = (OUTPUT.mean - 1) / small.mean_tokens
    for j in (0, 3):

        def price(b, j=j):
            return float(
                serving.round_seconds(
                    PAIR["target"], PAIR["draft"], "L4-24GB", small.options, [b], small.context, efficiency="vllm"
                )[0, j]
            )

        ref = serving.open_loop_point(
            price, rate, rounds[j], small.prefill_s[j], small.mean_tokens[j], small.option_caps()[j]
        )
        assert f.loc[j, "tpot_s"] == pytest.approx(ref["tpot_s"], rel=2e-3)
        assert f.loc[j, "batch"] == pytest.approx(ref["batch"], rel=2e-3)

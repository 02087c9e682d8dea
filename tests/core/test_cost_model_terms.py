"""The cost model's engine terms: links, quantised kernels, draft loops, expert parallelism, the
three-level fit and the error band. Hand computations, limits and a Monte-Carlo."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from _tiers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.core import bands, hardware, moe, published, regimes
from specviz.core import profiles as stack_profiles

REGIME = regimes.Regime("vllm", "none", "dense", "b1")
EXACT = stack_profiles.Efficiency(compute=1.0, memory=1.0, network=1.0, overhead_s=0.0, allreduce_latency_s=0.0)
LLAMA8 = "meta-llama/Llama-3.1-8B-Instruct"
V3 = "deepseek-ai/DeepSeek-V3"


# --------------------------------------------------------------------------------------
# expert parallelism: the busiest GPU's experts
# --------------------------------------------------------------------------------------


@settings(max_examples=examples(100), deadline=None)
@given(m=st.integers(0, 2000))
def test_one_rank_is_every_expert_touched(m):
    assert moe.experts_on_busiest_rank(256, 8, m, 1) == pytest.approx(moe.experts_touched(256, 8, m))


@settings(max_examples=examples(100), deadline=None)
@given(e=st.sampled_from([8, 64, 256]), ranks=st.sampled_from([2, 4, 8]), m=st.integers(1, 64))
def test_the_busiest_rank_holds_at_least_its_share_and_at_most_its_experts(e, ranks, m):
    busiest = float(moe.experts_on_busiest_rank(e, 2, m, ranks))
    assert moe.experts_touched(e, 2, m) / ranks - 1e-9 <= busiest <= e / ranks + 1e-9


def test_many_tokens_touch_every_expert_of_every_rank():
    assert moe.experts_on_busiest_rank(256, 8, 100_000, 8) == pytest.approx(32.0)


@pytest.mark.slow
def test_busiest_rank_against_a_monte_carlo_of_top_k_routing():
    rng = np.random.default_rng(7)
    e, k, m, ranks, trials = 64, 4, 3, 8, 4000
    per_rank = e // ranks
    counts = np.empty(trials)
    for t in range(trials):
        picked = np.zeros(e, dtype=bool)
        for _ in range(m):
            picked[rng.choice(e, size=k, replace=False)] = True
        counts[t] = picked.reshape(ranks, per_rank).sum(axis=1).max()
    # the model treats the ranks' counts as independent; 4,000 trials give a standard error of
    # counts.std() / 63 ≈ 0.013, and the independence leaves a bias under 0.1 expert here
    assert float(moe.experts_on_busiest_rank(e, k, m, ranks)) == pytest.approx(counts.mean(), abs=0.12)


def test_expert_parallel_reads_more_at_batch_1_and_the_same_at_large_batch():
    kw = dict(dtype="fp8", tp=8, efficiency=EXACT)
    one_tp, one_ep = (hardware.step_time(V3, "H200-SXM-141GB", 1, 1024, 1, expert_parallel=ep, **kw) for ep in (0, 1))
    big_tp, big_ep = (
        hardware.step_time(V3, "H200-SXM-141GB", 4096, 1024, 1, expert_parallel=ep, **kw) for ep in (0, 1)
    )
    assert one_ep > one_tp * 1.1
    assert big_ep == pytest.approx(big_tp, rel=1e-3)


def test_expert_parallel_leaves_a_dense_model_alone():
    kw = dict(dtype="bf16", tp=4, efficiency=EXACT)
    assert hardware.step_time(LLAMA8, "H100-SXM5-80GB", 1, 512, 1, expert_parallel=True, **kw) == hardware.step_time(
        LLAMA8, "H100-SXM5-80GB", 1, 512, 1, **kw
    )


# --------------------------------------------------------------------------------------
# links, quantised kernels, draft loops
# --------------------------------------------------------------------------------------


def test_links_by_gpu_and_group_size():
    assert hardware.link_kind("A100-PCIe-80GB", 2) == "pcie"
    assert hardware.link_kind("H100-SXM5-80GB", 8) == "nvlink"
    assert hardware.link_kind("H100-SXM5-80GB", 16) == "pcie"  # beyond one board: through the network cards
    assert hardware.link_kind({**hardware.gpu_spec("L4-24GB"), "name": "x"}, 2) == "pcie"


def test_each_link_pays_its_own_all_reduce_latency():
    eff = replace(EXACT, allreduce_latency_s=1e-5, pcie_allreduce_latency_s=1e-4)
    layers = hardware.model_spec(LLAMA8)["n_layers"]
    for gpu, latency in (("A100-PCIe-80GB", 1e-4), ("A100-SXM4-80GB", 1e-5)):
        extra = hardware.step_time(LLAMA8, gpu, 1, 0, 1, tp=2, efficiency=eff) - hardware.step_time(
            LLAMA8, gpu, 1, 0, 1, tp=2, efficiency=replace(eff, allreduce_latency_s=0, pcie_allreduce_latency_s=0)
        )
        assert extra == pytest.approx(2 * layers * latency, rel=1e-9)


def test_across_nodes_the_link_is_one_network_card():
    eff = replace(EXACT, pcie_allreduce_latency_s=0.0)
    table = hardware.operator_costs(LLAMA8, "H100-SXM5-80GB", 64, 0, 1, tp=16)
    nbytes = float(table["all-reduce"][1])
    got = hardware.step_breakdown(LLAMA8, "H100-SXM5-80GB", 64, 0, 1, tp=16, efficiency=eff)
    seconds = float(got.loc[got["operator"] == "all-reduce", "seconds"].iloc[0])
    assert seconds == pytest.approx(2 * 15 / 16 * nbytes / (hardware.NIC_GBS * 1e9), rel=1e-9)


def test_quantised_weights_reach_their_share_of_the_bandwidth_and_nothing_else_does():
    eff = replace(EXACT, quant_memory=0.5)
    for dtype, slower in (("int4", True), ("fp8", True), ("bf16", False)):
        base = hardware.step_breakdown(LLAMA8, "H100-SXM5-80GB", 1, 4096, 1, dtype=dtype, efficiency=EXACT)
        got = hardware.step_breakdown(LLAMA8, "H100-SXM5-80GB", 1, 4096, 1, dtype=dtype, efficiency=eff)
        ratio = (got["seconds"] / base["seconds"]).set_axis(got["operator"])
        weights = ratio[list(hardware.WEIGHT_OPERATORS[:3])]
        assert np.allclose(weights, 2.0 if slower else 1.0)  # memory-bound at B = 1: half the bandwidth
        assert ratio["attention"] == pytest.approx(1.0)  # the KV cache is not a quantised weight


def test_the_per_request_cost_is_paid_once_a_round_by_the_verify_not_by_each_draft_forward():
    eff = replace(stack_profiles.DEFAULT_EFFICIENCY, seq_overhead_s=1e-3)
    draft, batch = "meta-llama/Llama-3.2-1B-Instruct", 8
    for d in (draft, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"):
        per_request = hardware.pair_costs(LLAMA8, d, "H100-SXM5-80GB", batch, 512, 4, efficiency=eff)
        none = hardware.pair_costs(LLAMA8, d, "H100-SXM5-80GB", batch, 512, 4)
        assert float(per_request["t_draft"]) == pytest.approx(float(none["t_draft"]))
        for step in ("t_target", "t_verify"):
            assert float(per_request[step] - none[step]) == pytest.approx(batch * 1e-3)


def test_every_draft_forward_pays_the_draft_loop_once_and_a_lookup_once_per_round():
    eff = replace(stack_profiles.DEFAULT_EFFICIENCY, draft_overhead_s=2e-3)
    kw = dict(efficiency=eff)
    draft = "meta-llama/Llama-3.2-1B-Instruct"
    with_loop = hardware.pair_costs(LLAMA8, draft, "H100-SXM5-80GB", 1, 512, 4, **kw)
    plain = hardware.pair_costs(LLAMA8, draft, "H100-SXM5-80GB", 1, 512, 4)
    assert float(with_loop["t_draft"] - plain["t_draft"]) == pytest.approx(2e-3)
    assert float(with_loop["draft_steps"]) == 4  # D forwards, each with the loop's cost, in D / c
    lookup = hardware.pair_costs(LLAMA8, hardware.NGRAM, "H100-SXM5-80GB", 1, 512, 4, **kw)
    assert float(lookup["draft_steps"]) == 1 and float(lookup["t_draft"]) == pytest.approx(eff.overhead_s + 2e-3)


# --------------------------------------------------------------------------------------
# the fit's levels and what rows constrain
# --------------------------------------------------------------------------------------


def _rows(**cols) -> pd.DataFrame:
    base = dict(kind="step", batch=1, tp=1, gpu="H100-SXM5-80GB", dtype="bf16", method="none")
    base |= dict(target="meta-llama/Llama-3.1-8B-Instruct")
    return pd.DataFrame([base | cols])


def test_rows_constrain_only_the_terms_they_can_see():
    plain = published.constrained(_rows())
    assert not plain & {
        "round_overhead_s",
        "draft_overhead_s",
        "seq_overhead_s",
        "quant_memory",
        "moe_layer_overhead_s",
    }
    assert "moe_layer_overhead_s" in published.constrained(_rows(target="Qwen/Qwen3-30B-A3B"))
    # the all-reduce latencies are measured by all-reduce benchmarks, never fitted, whatever the rows
    for rows in (_rows(), _rows(tp=8), _rows(tp=16), _rows(tp=2, gpu="A100-PCIe-80GB")):
        assert not published.constrained(rows) & {"allreduce_latency_s", "pcie_allreduce_latency_s"}
    assert "quant_memory" in published.constrained(_rows(dtype="int4"))
    assert {"round_overhead_s"} <= published.constrained(_rows(kind="speedup", method="ngram"))
    assert "draft_overhead_s" not in published.constrained(_rows(kind="speedup", method="ngram"))
    assert "draft_overhead_s" in published.constrained(_rows(kind="speedup", method="eagle"))


@pytest.mark.slow
def test_stack_levels_move_only_stack_terms():
    frame = published.load_measurements()
    rows = frame[published.priceable(frame) & frame["source_id"].isin(["llamacpp-pr-4766", "eagle-readme-gptfast"])]
    profiles = published.fit_profiles(rows)
    shared = profiles[published.SHARED]
    for name in ("family:compiled", "gpt-fast", "llama.cpp"):
        for term in set(stack_profiles.TERMS) - set(published.STACK_TERMS):
            assert getattr(profiles[name], term) == getattr(shared, term), (name, term)


# --------------------------------------------------------------------------------------
# the shipped predictions and the error band
# --------------------------------------------------------------------------------------


def test_the_shipped_predictions_are_what_the_shipped_profiles_and_the_default_predict():
    table = published.load_predictions()
    frame = published.load_measurements()
    rows = frame[published.priceable(frame)]
    assert set(table["row_id"]) == set(rows["row_id"]), "rerun benchmarks/validation_bench.py --write-profiles"
    names = stack_profiles.profile_names()
    fitted = published.predict(rows, {e: stack_profiles.profile(e) for e in rows["stack"].unique() if e in names})
    default = published.predict(rows, {})
    got = table.set_index("row_id")
    np.testing.assert_allclose(got.loc[rows["row_id"], "fitted_predicted"], fitted["predicted"], rtol=1e-4)
    np.testing.assert_allclose(got.loc[rows["row_id"], "default_predicted"], default["predicted"], rtol=1e-4)


def test_the_band_is_its_regimes_held_out_deciles_and_an_unvalidated_regime_borrows_the_widest(tmp_path):
    ratios = np.linspace(0.8, 1.25, 10)
    own = regimes.Regime("vllm", "none", "dense", "b1").key
    frame = pd.DataFrame(
        {
            "kind": "step",
            "stack": ["vllm"] * 10 + ["sglang"],
            "source_id": [f"s{i % 3}" for i in range(11)],
            "measured": 1.0,
            "loso_predicted": [*ratios, 3.0],
            "default_predicted": 1.0,
            "regime": [own] * 10 + [regimes.Regime("sglang", "none", "moe", "b17+").key],
        }
    )
    path = tmp_path / "predictions.csv"
    frame.to_csv(path, index=False)
    band = bands.band_for("vllm", "step", "none", False, 1, path=path)
    assert band.validated and band.rows == 10 and band.regime.key == own
    assert (band.lo, band.hi) == pytest.approx(tuple(np.quantile(ratios, [0.1, 0.9])))
    lone = bands.band_for("sglang", "step", "none", True, 64, path=path)  # one row of its own: unvalidated
    assert not lone.validated and lone.rows == 1 and lone.nearest.key == own
    assert (lone.lo, lone.hi) == pytest.approx((band.lo, band.hi))  # the widest validated band: the only one
    assert bands.band_for("vllm", "speedup", "eagle3", False, 1, path=path) is None  # no speedup rows at all
    roofline = bands.band_for("roofline", "step", "none", False, 1, path=path)
    assert roofline.regime.engine == regimes.ANY and roofline.median == pytest.approx(1.0)
    with pytest.raises(ValueError, match="kind must be"):
        bands.band_for("vllm", "latency", "none", False, 1, path=path)


@settings(max_examples=examples(200), deadline=None)
@given(
    point=st.floats(1e-9, 1e9),
    lo=st.floats(1e-3, 1e3),
    spread=st.floats(1.0, 1e3),
    median=st.floats(0.0, 1.0),
)
def test_the_point_estimate_lies_inside_its_band_for_any_band(point, lo, spread, median):
    """Issue 56: step 14.9 ms beside a band of 15.5–31.7 ms; the band is now the hull of the point and measured."""
    hi = lo * spread
    band = regimes.Band(REGIME, lo, hi, lo + median * (hi - lo), 8, True)
    e = bands.estimate(point, band)
    assert e.low <= e.point == point <= e.high
    assert e.low == pytest.approx(min(point, point / hi)) and e.high == pytest.approx(max(point, point / lo))
    assert (e.bias is None) == (lo <= 1 <= hi)  # a bias is named only where every held-out row lies on one side
    if e.bias is not None:
        assert (e.bias > 0) == (hi < 1)  # predicted / measured below 1: measured above the prediction
    many = bands.estimate(np.array([point, 2 * point]), band)
    assert (many.low <= many.point).all() and (many.point <= many.high).all()


def test_the_band_of_the_issue_56_report_holds_its_point_and_names_the_bias():
    e = bands.estimate(14.9, regimes.Band(REGIME, 0.47, 0.96, 0.78, 99, True))
    assert (e.low, e.point) == (14.9, 14.9) and e.high == pytest.approx(14.9 / 0.47)
    assert e.bias == pytest.approx(1 / 0.78 - 1)  # measured 28 % above the prediction at the median


@settings(max_examples=examples(40), deadline=None)
@given(
    overhead=st.floats(0, 5e-3),
    layer=st.floats(0, 2e-4),
    quant=st.floats(0.3, 1.0),
)
def test_every_profile_term_stays_a_valid_efficiency(overhead, layer, quant):
    eff = stack_profiles.Efficiency(overhead_s=overhead, layer_overhead_s=layer, quant_memory=quant)
    t = hardware.step_time(LLAMA8, "H100-SXM5-80GB", [1, 64], 1024, 1, dtype="int8", efficiency=eff)
    assert np.all(np.isfinite(t)) and np.all(np.diff(t) > 0)


@settings(max_examples=examples(100), deadline=None)
@given(e=st.sampled_from([8, 64, 256]), skew=st.floats(0.0, 2.0), m=st.integers(1, 512))
def test_a_skewed_router_touches_no_more_experts_than_a_uniform_one(e, skew, m):
    load = moe.zipf_load(e, skew)
    assert load.shape == (e,) and load.sum() == pytest.approx(1.0) and np.all(np.diff(load) <= 1e-15)
    assert moe.experts_touched(e, 2, m, load) <= moe.experts_touched(e, 2, m) + 1e-9


def test_zero_skew_is_uniform_routing_and_a_dense_model_has_no_router():
    assert np.allclose(moe.zipf_load(16, 0.0), 1 / 16)
    assert hardware.with_routing_skew(V3, 0.0) == V3
    assert hardware.with_routing_skew(LLAMA8, 1.0) == LLAMA8
    with pytest.raises(ValueError, match="routing skew must be a number from 0 to 4"):
        moe.zipf_load(16, -1.0)


def test_an_engine_the_catalogue_lacks_is_priced_with_its_familys_profile():
    assert stack_profiles.profile_for("vllm") == stack_profiles.profile("vllm")
    assert stack_profiles.profile_for("lmdeploy") == stack_profiles.profile("compiled")
    assert stack_profiles.family("hf-transformers") == "eager" and stack_profiles.family("lmdeploy") == "compiled"
    names = stack_profiles.profile_names()
    assert set(stack_profiles.FAMILY_PROFILES) <= set(names)

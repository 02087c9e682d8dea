"""Engine profiles, head drafts and the fit against published rows: hand computations and recovery."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specviz.core import hardware as hw
from specviz.core import heads, profiles, published

A100 = "A100-SXM4-80GB"
EXACT = profiles.Efficiency(compute=1.0, memory=1.0, network=1.0, overhead_s=0.0, allreduce_latency_s=0.0)


def test_eagle_head_is_one_layer_of_the_target_plus_its_fusion_linear():
    target = hw.model_spec("lmsys/vicuna-7b-v1.3")
    spec = heads.draft_model(heads.head_spec("yuhuili/EAGLE-Vicuna-7B-v1.3"), target)
    d, ff, v = 4096, 11008, 32000
    # one decoder layer (4·d² attention, 3·d·ff MLP, 2 norms) + the target's LM head + fc 2d → d
    want = 4 * d * d + 3 * d * ff + 2 * d + d * v + 2 * d * d
    bytes_ = sum(float(b) for _, b in hw.operator_costs(spec, A100, 1, 0, 1, dtype="fp16").values())
    assert bytes_ == pytest.approx(2 * want, rel=2e-3)  # fp16 weights dominate at B = 1, L = 0


def test_medusa_pass_reads_k_heads_of_resblock_and_lm_head():
    target, head = hw.model_spec("lmsys/vicuna-7b-v1.3"), heads.head_spec("FasterDecoding/medusa-vicuna-7b-v1.3")
    assert heads.medusa_weights(head, target, 4) == 4 * (4096 * 4096 + 4096 * 32000)
    costs = hw.pair_costs("lmsys/vicuna-7b-v1.3", head["name"], A100, 1, 0, 4, dtype="fp16", efficiency=EXACT)
    assert float(costs["draft_steps"]) == 1
    assert float(costs["t_draft"]) == pytest.approx(
        (2 * 4 * (4096 * 4096 + 4096 * 32000) + 2 * 5 * 4 * 32000) / 2.039e12, rel=1e-6
    )  # fp16 weights of 4 heads, and their logits at T = 5 positions
    with pytest.raises(ValueError, match="at most the 5 heads"):
        hw.pair_costs("lmsys/vicuna-7b-v1.3", head["name"], A100, 1, 0, 6)


def _mtp_round(k: int) -> dict:
    return hw.pair_costs(
        "deepseek-ai/DeepSeek-V3",
        "deepseek-ai/DeepSeek-V3-MTP",
        "H200-SXM-141GB",
        1,
        1024,
        k,
        dtype="fp8",
        tp_target=8,
        tp_draft=8,
    )


def test_mtp_module_is_one_moe_block_so_verifying_more_tokens_reads_more_experts():
    c1, c4 = _mtp_round(1), _mtp_round(4)
    assert float(c4["t_verify"]) > float(c1["t_verify"]) * 1.3  # K + 1 tokens touch up to 8(K + 1) experts
    assert float(c1["c"]) > 5  # one block of 61 (plus the head) is far cheaper than the target


def test_round_speedup_is_the_chapter_rule_for_a_chain():
    costs = hw.pair_costs("lmsys/vicuna-7b-v1.3", "double7/vicuna-68m", A100, 1, 512, 4, dtype="fp16")
    c, v = float(costs["c"]), float(costs["v"])
    assert float(hw.round_speedup(3.0, costs)) == pytest.approx(3.0 / (1 + 4 * v + 4 / c))


def test_engine_terms_enter_the_step_time():
    base = float(hw.step_time("lmsys/vicuna-7b-v1.3", A100, 4, 512, 1, dtype="fp16", efficiency=EXACT))
    eff = profiles.Efficiency(
        compute=1.0,
        memory=1.0,
        network=1.0,
        overhead_s=1e-3,
        allreduce_latency_s=0.0,
        layer_overhead_s=1e-4,
        seq_overhead_s=2e-4,
    )
    got = float(hw.step_time("lmsys/vicuna-7b-v1.3", A100, 4, 512, 1, dtype="fp16", efficiency=eff))
    assert got - base == pytest.approx(1e-3 + 32 * 1e-4 + 4 * 2e-4)
    costs = hw.pair_costs(
        "lmsys/vicuna-7b-v1.3", "ngram", A100, 1, 512, 3, efficiency=profiles.Efficiency(round_overhead_s=1e-3)
    )
    assert float(costs["o"]) == pytest.approx(1e-3 / float(costs["t_target"]))


def test_unknown_engine_names_the_choices():
    with pytest.raises(ValueError, match="engine must be one of .*roofline"):
        profiles.profile("nope")


def _synthetic_rows() -> pd.DataFrame:
    rows = []
    common = dict(
        gpu=A100,
        tp=1,
        dtype="fp16",
        stack="x",
        context=512,
        includes_prefill="",
        prompt_tokens=None,
        output_tokens=None,
        source_id="s",
    )
    for target in ("lmsys/vicuna-7b-v1.3", "lmsys/vicuna-13b-v1.3"):
        for b in (1, 4):
            rows.append(
                common
                | dict(
                    kind="step",
                    target=target,
                    draft=None,
                    method="none",
                    batch=b,
                    k=None,
                    draft_tokens=None,
                    verify_tokens=None,
                    tau=None,
                    speedup=None,
                    t_step_ms=1.0,
                )
            )
        for draft, method, k in (("double7/vicuna-68m", "model", 4), ("ngram", "ngram", 10)):
            rows.append(
                common
                | dict(
                    kind="speedup",
                    target=target,
                    draft=draft,
                    method=method,
                    batch=1,
                    k=k,
                    draft_tokens=1,
                    verify_tokens=k + 1,
                    tau=2.5,
                    speedup=1.0,
                    t_step_ms=None,
                )
            )
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_fit_recovers_known_overheads_from_synthetic_rows():
    true = profiles.Efficiency(memory=0.65, overhead_s=2e-3, layer_overhead_s=1.5e-4, round_overhead_s=1e-3)
    frame = _synthetic_rows()
    truth = published.predict(frame, {"x": true})["predicted"]
    frame["t_step_ms"] = np.where(frame["kind"] == "step", truth, np.nan)
    frame["speedup"] = np.where(frame["kind"] == "speedup", truth, np.nan)
    terms = ("memory", "overhead_s", "layer_overhead_s", "round_overhead_s")
    fit = published.fit_profile(frame, profiles.DEFAULT_EFFICIENCY, terms, weight=0.0)
    assert fit.memory == pytest.approx(0.65, rel=0.05)
    assert fit.overhead_s == pytest.approx(2e-3, rel=0.1)
    assert fit.layer_overhead_s == pytest.approx(1.5e-4, rel=0.1)
    assert np.abs(published.predict(frame, {"x": fit})["ratio"] - 1).max() < 0.01
    # the pull toward the prior costs accuracy but never more than the prior itself
    pulled = published.fit_profile(frame, profiles.DEFAULT_EFFICIENCY, terms)
    worst = {
        name: np.abs(np.log(published.predict(frame, {"x": eff})["ratio"])).max()
        for name, eff in (("pulled", pulled), ("prior", profiles.DEFAULT_EFFICIENCY))
    }
    assert worst["pulled"] < worst["prior"] / 2


def test_every_engine_profile_names_published_sources_it_was_fitted_on():
    frame = published.load_measurements()
    fit = published.fitted_rows(frame[published.priceable(frame)])
    table = profiles.load_profiles()
    assert table.index[0] == profiles.DEFAULT_PROFILE
    for name, row in table.iloc[1:].iterrows():
        assert isinstance(profiles.profile(name), profiles.Efficiency)
        sources = set(row["fitted_on"].split())
        assert sources and sources <= set(frame["source_id"]), name
        stack = fit["stack"].map(profiles.family) if name in profiles.FAMILY_PROFILES else fit["stack"]
        assert int(row["rows"]) == int((stack == name).sum())


def test_a_not_fitted_source_is_scored_but_its_speedups_reach_no_fit(monkeypatch):
    frame = published.load_measurements()
    rows = frame[published.priceable(frame)]
    out = published.fitted_rows(rows)
    dropped = rows.loc[rows.index.difference(out.index)]
    assert len(dropped) and set(dropped["source_id"]) == set(published.NOT_FITTED)
    assert (dropped["kind"] == "speedup").all()
    # the same sources' plain-decoding rows stay in the fit
    assert (out["source_id"].isin(published.NOT_FITTED) & (out["kind"] == "step")).any()
    seen = []
    monkeypatch.setattr(published, "fit_profile", lambda r, prior=None, *a, **k: seen.append(r) or prior)
    published.fit_profiles(rows)
    assert seen and all(not set(r["row_id"]) & set(dropped["row_id"]) for r in seen)
    # held out, they are still predicted and scored like any other source's rows
    assert set(dropped["source_id"]) <= set(published.load_predictions()["source_id"])


def test_published_rows_resolve_in_the_catalogues_and_carry_a_source():
    frame = published.load_measurements()
    rows = frame[published.priceable(frame)]
    assert len(rows) >= 40 and rows["source_id"].nunique() >= 6 and rows["gpu"].nunique() >= 3
    assert rows["source"].str.len().min() > 10
    models, gpus = hw.load_catalog()
    assert set(rows["target"]) <= set(models.index) and set(rows["gpu"]) <= set(gpus.index)
    drafts = rows.loc[rows["method"].isin(["model"]), "draft"]
    assert set(drafts) <= set(models.index)
    head_rows = rows.loc[rows["method"].isin(["eagle", "eagle2", "eagle3", "medusa", "mtp"]), "draft"]
    assert set(head_rows) <= set(heads.load_heads().index)
    assert ((rows["kind"] == "step") & (rows["batch"] > 1)).any() and (rows["batch"] == 1).any()


def test_a_speedup_row_with_tau_left_unpriced_says_why():
    """A row drops out of pricing only when no catalogue describes its draft, and its notes say so."""
    frame = published.load_measurements()
    spec = (frame["kind"] == "speedup") & frame["tau"].notna() & frame["method"].isin(published.METHODS)
    left = frame[spec & ~published.priceable(frame)]
    assert not published.described_drafts(left).any()
    assert left["notes"].str.contains("Not priced: the catalogue has no config", regex=False).all(), list(
        left["row_id"]
    )
    drafted = spec & published.priceable(frame) & (frame["method"] != "ngram")
    unknown = frame[drafted].groupby("method").head(1).assign(draft="example/not-in-any-catalogue")
    assert not published.priceable(unknown).any()  # a draft no catalogue describes drops out of pricing


def test_verdicts_count_losses_flagged_and_false_alarms():
    frame = pd.DataFrame(
        {
            "kind": ["speedup"] * 4 + ["step"],
            "predicted": [0.8, 1.2, 0.9, 1.5, 3.0],
            "measured": [0.7, 0.9, 1.1, 1.4, 2.0],
        }
    )
    v = published.verdicts(frame)
    assert v == {"rows": 4, "right": 0.5, "losses": 2, "flagged": 1, "false_alarms": 1}


def _throughput_row(**cells) -> pd.Series:
    row = {
        "kind": "speedup",
        "target": "meta-llama/Llama-3.1-8B-Instruct",
        "draft": "meta-llama/Llama-3.2-1B-Instruct",
        "method": "model",
        "gpu": "H100-SXM5-80GB",
        "tp": 1,
        "dtype": "bf16",
        "batch": 64,
        "context": 100,
        "k": 3,
        "tau": 2.5,
        "draft_tokens": 1,
        "verify_tokens": 4,
        "output_tokens": float("nan"),
        "prompt_tokens": float("nan"),
        "includes_prefill": "no",
    }
    return pd.Series(row | cells)


def test_a_reported_kv_capacity_caps_each_runs_batch_at_its_slots_per_request():
    assert published.running_batches(_throughput_row()) == (64, 64)  # no capacity given: the concurrency
    row = _throughput_row(kv_tokens=1000.0, plain_kv_tokens=1000.0)
    assert published.running_batches(row) == (1000 // 104, 1000 // 100)  # L + K + 1 slots with speculation, L without
    roomy = _throughput_row(kv_tokens=1e6, plain_kv_tokens=1e6)
    assert published.running_batches(roomy) == (64, 64)  # a capacity that holds every request changes nothing
    stated = _throughput_row(kv_tokens=1000.0, plain_kv_tokens=1000.0, prompt_tokens=60.0, output_tokens=80.0)
    assert published.running_batches(stated) == (1000 // 144, 1000 // 140)  # the length a request reaches: P + O


def test_a_throughput_ratio_between_different_batches_is_each_runs_tokens_per_second():
    eff = profiles.Efficiency()
    row = _throughput_row(kv_tokens=3000.0, plain_kv_tokens=6400.0)
    b_s, b_p = published.running_batches(row)
    assert (b_s, b_p) == (28, 64)
    kw = dict(dtype="bf16", tp_target=1, tp_draft=1, efficiency=eff, draft_tokens=1, verify_tokens=4)
    costs = hw.pair_costs(row["target"], row["draft"], row["gpu"], b_s, 100, 3, **kw)
    per_seq = float(hw.round_speedup(2.5, costs))  # a sequence's speed, with speculation ÷ without, at B_s
    spec_tps = b_s * per_seq / float(costs["t_target"])
    plain_tps = b_p / float(hw.step_time(row["target"], row["gpu"], b_p, 100, 1, dtype="bf16", efficiency=eff))
    assert published.predict_row(row, eff) == pytest.approx(spec_tps / plain_tps, rel=1e-12)
    assert published.predict_row(row, eff) < published.predict_row(_throughput_row(), eff)  # fewer fit: it pays less


def test_a_speculative_run_with_its_prefill_pays_the_drafts_prefill_too():
    """(t_p + O·t) / (t_p + t'_p + O·t / S): the draft model prefills the same prompts (serving.prefill_seconds)."""
    eff = profiles.Efficiency()
    row = _throughput_row(includes_prefill="yes", prompt_tokens=100.0, output_tokens=50.0)
    kw = dict(dtype="bf16", efficiency=eff)
    t_p = float(hw.step_time(row["target"], row["gpu"], 64, 0, 100, **kw))
    t_d = float(hw.step_time(row["draft"], row["gpu"], 64, 0, 100, **kw))
    costs = hw.pair_costs(
        row["target"],
        row["draft"],
        row["gpu"],
        64,
        100,
        3,
        tp_target=1,
        tp_draft=1,
        draft_tokens=1,
        verify_tokens=4,
        **kw,
    )
    s, t = float(hw.round_speedup(2.5, costs)), float(costs["t_target"])
    expected = (t_p + 50 * t) / (t_p + t_d + 50 * t / s)
    assert published.predict_row(row, eff) == pytest.approx(expected, rel=1e-12)
    assert expected < (t_p + 50 * t) / (t_p + 50 * t / s)  # without the draft's prefill it would pay more


def test_capacities_are_given_only_for_throughput_ratios_with_the_log_line_they_come_from():
    frame = published.load_measurements()
    given = frame[frame["kv_tokens"].notna() | frame["plain_kv_tokens"].notna()]
    assert len(given) >= 36 and given["kv_tokens"].notna().all() and given["plain_kv_tokens"].notna().all()
    assert (given["kind"] == "speedup").all() and given["speedup_of"].str.contains("throughput").all()
    assert given["notes"].str.contains("GPU KV cache size", regex=False).all()
    assert (given["kv_tokens"] <= given["plain_kv_tokens"]).all()  # the draft's weights and cache take room

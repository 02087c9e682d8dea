"""The Hardware & batch page in AppTest: every view renders, reacts, restores from a link, and says what is wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from _apps import open_app, rerun, shown_errors
from _tiers import first_quick

from specviz.core import bands, moe, profiles, regimes
from specviz.core import hardware as hw

PAGE = "pages/hardware.py"
EFF = profiles.profile(profiles.SERVER_PROFILE)  #: the engine profile the page opens on
VIEWS = {
    "step": ["fig_split", "fig_roofline"],
    "costs": ["fig_costs"],
    "speedup": ["fig_speedup_b"],
    "map": ["fig_map_k", "fig_map_s"],
    "memory": [],
    "engine": [],
}


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def default_at_batch_1(efficiency=EFF):
    """The library's row at B = 1 for the page's default pair, GPU, α, context and TP."""
    return hw.speedup_by_batch(
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "H100-SXM5-80GB",
        0.8,
        [1],
        [2048],
        8,
        tp_target=4,
        efficiency=efficiency,
    ).iloc[0]


def default_k_star_at_batch_1(efficiency=EFF) -> int:
    """K* at B = 1 of the page's default pair, GPU, α, context and TP, from the library."""
    return int(default_at_batch_1(efficiency).k_star)


@pytest.mark.slow
@pytest.mark.parametrize("view", list(VIEWS))
def test_every_view_renders_only_its_own_charts(view):
    at = open_app(PAGE, view=view)
    assert [c.key for c in at.get("plotly_chart")] == VIEWS[view]
    assert not at.error and not at.warning


def test_defaults_give_the_models_k_star_at_batch_1():
    at = open_app(PAGE)
    assert metric(at, "At B = 1") == f"K* = {default_k_star_at_batch_1()}"
    assert dict(at.query_params) == {}  # defaults are not written into the link


@pytest.mark.slow
def test_changing_gpu_and_alpha_changes_the_answer_and_the_link():
    at = open_app(PAGE, view="step")
    h100 = metric(at, "Target decode step")
    at.selectbox(key="hardware.gpu").select("L4-24GB")
    rerun(at)
    assert metric(at, "Target decode step") != h100
    assert at.query_params["gpu"] == "L4-24GB"
    at.session_state["hardware.view"] = "speedup"
    at.slider(key="hardware.alpha").set_value(0.3)
    rerun(at)
    assert at.query_params["alpha"] == "0.3"


def test_a_link_restores_the_view_and_the_engine_configs_follow_it():
    at = open_app(PAGE, view="engine", pair="Qwen2.5 72B + 0.5B", gpu="H200-SXM-141GB", tp_t="2", ctx="8192")
    assert at.selectbox(key="hardware.pair").value == "Qwen2.5 72B + 0.5B"
    assert at.number_input(key="hardware.ctx").value == 8192
    config = json.loads(at.code[0].value)
    assert config["model"] == "Qwen/Qwen2.5-0.5B-Instruct"
    want = hw.vllm_speculative_config(
        "Qwen/Qwen2.5-72B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "H200-SXM-141GB",
        0.8,
        8192,
        [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
        8,
        tp_target=2,
        efficiency=EFF,
    )
    assert config == want
    assert at.code[1].value.startswith("--spec-draft-n-max") or at.code[1].value.startswith("# speculation")


def test_a_medusa_head_is_said_to_have_no_vllm_config_not_given_a_wrong_one():
    medusa = "FasterDecoding/medusa-vicuna-7b-v1.3"
    query = dict(pair="custom", target="lmsys/vicuna-7b-v1.3", draft=medusa, tp_t="1", k_max="5", ctx="1024")
    at = open_app(PAGE, view="engine", **query)
    assert not any('"medusa"' in c.value for c in at.code)  # vLLM 0.34.0 has no such method
    assert any("not expressible in vLLM" in i.value and "medusa" in i.value for i in at.info)


def test_a_custom_pair_with_different_vocabularies_is_an_error_naming_both():
    at = open_app(PAGE, pair="custom", target="openai-community/gpt2-xl", draft="JackFram/llama-68m")
    errors = shown_errors(at)
    assert any("vocab_size 50,257" in e and "vocab_size 32,000" in e and "share a tokenizer" in e for e in errors)


@pytest.mark.slow
def test_a_target_that_does_not_fit_is_flagged_and_memory_says_so():
    at = open_app(PAGE, pair="Llama-3.1 405B + 8B", tp_t="1", view="memory")
    assert any("811.7 GB" in w.value and "The weights alone do not fit: raise the TP" in w.value for w in at.warning)
    assert metric(at, "Largest batch at L = 2,048 with speculation") == "the weights alone do not fit"


def test_memory_counts_the_head_and_the_verify_slots_as_the_library_does():
    """Every part of the plan is the library's; a setup that fits at B = 1 but not at the chosen batch says so."""
    query = dict(pair="Llama-3.1 8B + EAGLE-3", gpu="H100-SXM5-80GB", dtype="bf16", tp_t="1", tp_d="1")
    at = open_app(PAGE, view="memory", batch="64", ctx="16384", **query)
    plan = hw.memory_plan(
        "meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "H100-SXM5-80GB", 64, 16384, 8
    )
    assert not plan.fits and plan.max_batch < 64
    table = next(m.value for m in at.markdown if m.value.startswith("| Memory per GPU"))
    assert f"| Draft weights (a head: only its own layers) | {plan.draft_weights / 1e9:,.2f} |" in table
    assert f"| Total | {plan.need / 1e9:,.2f} |" in table
    warning = next(w.value for w in at.warning if w.value.startswith("Memory per GPU at B = 64"))
    assert (
        f"the largest batch that fits is {plan.max_batch:,} ({plan.max_batch_plain:,} without speculation)" in warning
    )
    assert metric(at, "… without speculation") == f"{plan.max_batch_plain:,} sequences"


def test_bad_link_values_warn_and_fall_back():
    at = open_app(PAGE, ctx="-5", gpu="H900", k_max="99")
    texts = " ".join(w.value for w in at.warning)
    assert "ctx" in texts and "gpu" in texts and "k_max" in texts
    assert at.number_input(key="hardware.ctx").value == 2048
    assert at.selectbox(key="hardware.gpu").value == "H100-SXM5-80GB"


def test_a_calibrated_machine_is_offered_as_hardware(tmp_path, monkeypatch):
    machine = {
        "name": "this machine (test CPU, 2 threads)",
        "memory_gb": 24.0,
        "bandwidth_tbs": 0.02,
        "fp32_tflops": 0.1,
        "bf16_tflops": 0.2,
        "fp16_tflops": 0.2,
        "interconnect_gbs": 1.0,
        "overhead_s": 1e-4,
        "layer_overhead_s": 5e-5,
    }
    (tmp_path / "machine.json").write_text(json.dumps(machine))
    monkeypatch.setattr(hw.catalog, "CALIBRATION_DIR", tmp_path)
    query = dict(gpu=machine["name"], pair="specviz bundled", dtype="fp32", tp_t="1", ctx="256", view="step")
    query["engine"] = profiles.DEFAULT_PROFILE  # the roofline prices with the machine's own measured figures
    at = open_app(PAGE, **query)
    assert at.selectbox(key="hardware.gpu").value == machine["name"]
    want = hw.step_time("specviz/bundled-target", machine, 1, 256, 1, dtype="fp32")
    assert want > 1e-4 + 6 * 5e-5  # the measured fixed costs are part of the step
    assert metric(at, "Target decode step") == f"{want * 1e3:.3f} ms"
    assert not at.error and not at.warning
    caption = next(c.value for c in at.caption if "Efficiencies assumed" in c.value)
    assert "100% of peak FLOP/s, 100% of HBM bandwidth, 0.1 ms fixed per step and 50 µs per layer" in caption
    assert "fig_calibration" not in [c.key for c in at.get("plotly_chart")]  # no steps.csv: no parity chart
    steps = pd.DataFrame(
        {
            "model": ["target", "target", "draft"],
            "batch": [1, 4, 1],
            "tokens": [1, 1, 2],
            "context": [64] * 3,
            "measured_s": [0.004, 0.008, 0.001],
            "predicted_s": [0.005, 0.006, 0.001],
        }
    )
    steps.to_csv(tmp_path / "steps.csv", index=False)
    at = open_app(PAGE, **query)
    assert "fig_calibration" in [c.key for c in at.get("plotly_chart")]
    assert any("median |predicted / measured − 1| 25% (draft 0%, target 25%)" in c.value for c in at.caption)


@pytest.mark.slow
def test_a_context_beyond_the_models_window_is_flagged():
    at = open_app(PAGE, pair="specviz bundled", ctx="2048", tp_t="1")
    assert any("context 2,048" in w.value and "512" in w.value for w in at.warning)


@pytest.fixture
def library_with_a_run(db_url):
    """A run library holding the bundled pair's shipped bench run (run 1)."""
    from specviz.data import measurements, store
    from specviz.data.measurements import SAMPLES_DIR

    engine = store.open_library(db_url)
    frame, report = measurements.load_measurements((SAMPLES_DIR / "specviz_bench_bundled_cpu.csv").read_bytes())
    run_id = store.save_run(engine, frame, label="bench", source="test", report=report.summary())
    engine.dispose()
    return run_id, frame


@pytest.mark.slow
def test_alpha_from_a_library_run_mean_and_per_position(library_with_a_run):
    run_id, frame = library_with_a_run
    at = open_app(PAGE, a_src="a run in the library", run=str(run_id))
    assert not at.error
    mean = hw.alpha_from_measurements(frame)
    want = hw.speedup_by_batch(
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "H100-SXM5-80GB",
        mean,
        [1],
        [2048],
        8,
        tp_target=4,
        efficiency=EFF,
    )
    assert metric(at, "At B = 1") == f"K* = {int(want.k_star.iloc[0])}"
    at = open_app(PAGE, a_src="library", run=str(run_id), a_pos="true")
    per_position = hw.alpha_from_measurements(frame, per_position=True)
    assert any(c.value == "α per position: " + ", ".join(f"{a:.3f}" for a in per_position) for c in at.caption)


def test_alpha_sources_that_cannot_give_one_say_why(library_with_a_run):
    at = open_app(PAGE, a_src="live")
    assert any("the live page has no run in this session yet" in e for e in shown_errors(at))
    at = open_app(PAGE, a_src="library", run="999")
    assert at.error  # the library names the missing run
    assert at.get("plotly_chart")  # the page still draws with the typed α


def test_custom_gpu_figures_drive_the_model_and_live_in_the_link():
    query = dict(gpu="custom", g_mem="48", g_bw="1.5", g_tflops="400", g_link="64", view="step")
    at = open_app(PAGE, **query)
    gpu = {
        "name": "custom",
        "memory_gb": 48.0,
        "bandwidth_tbs": 1.5,
        "bf16_tflops": 400.0,
        "fp16_tflops": 400.0,
        "fp8_tflops": 800.0,
        "interconnect_gbs": 64.0,
    }
    want = hw.step_time("meta-llama/Llama-3.1-70B-Instruct", gpu, 1, 2048, 1, tp=4, efficiency=EFF)
    assert metric(at, "Target decode step") == f"{want * 1e3:.3f} ms"
    assert at.number_input(key="hardware.g_bw").value == 1.5
    assert at.query_params["g_bw"] == "1.5"


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_engine_profile_from_a_link_prices_the_step_and_says_so(lang):
    default = open_app(PAGE, view="step", lang=lang)
    at = open_app(PAGE, view="step", engine="hf-transformers", lang=lang)
    assert not at.exception and not shown_errors(at)
    assert at.selectbox(key="hardware.engine").value == "hf-transformers"
    eff = profiles.profile("hf-transformers")
    want = hw.step_breakdown("meta-llama/Llama-3.1-70B-Instruct", "H100-SXM5-80GB", 1, 2048, 1, tp=4, efficiency=eff)[
        "seconds"
    ].sum()
    assert metric(at, metric_label(lang)) == f"{want * 1e3:.3f} ms" != metric(default, metric_label(lang))
    assert any("Hugging Face transformers" in c.value and "spec-bench-leaderboard" in c.value for c in at.caption)


def test_the_engine_profile_prices_k_star_by_batch():
    at = open_app(PAGE, view="speedup", engine="hf-transformers")
    assert metric(at, "At B = 1") == f"K* = {default_k_star_at_batch_1('hf-transformers')}"


def test_an_unknown_engine_in_a_link_warns_and_falls_back_to_the_pages_default_profile():
    at = open_app(PAGE, engine="warp-drive")
    assert "engine" in " ".join(w.value for w in at.warning)
    assert at.selectbox(key="hardware.engine").value == profiles.SERVER_PROFILE


def metric_label(lang: str) -> str:
    return "Target decode step" if lang == "en" else "B = 1"


# ------------------------------------------------------------------------------------------
# head drafts, MoE targets, the draft's KV budget, expert parallelism, the error band
# ------------------------------------------------------------------------------------------

EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
V3 = dict(pair="DeepSeek-V3 + MTP", gpu="H200-SXM-141GB", dtype="fp8", tp_t="8")  #: fits: 671 GB of fp8 on 8 GPUs


def k_star_at_batch_1(target, draft, gpu="H100-SXM5-80GB", tp=1, dtype="bf16", **kw) -> int:
    kw = dict(dtype=dtype, tp_target=tp, tp_draft=tp, efficiency=EFF) | kw
    frame = hw.speedup_by_batch(target, draft, gpu, 0.8, [1], [2048], 8, **kw)
    return int(frame.k_star.iloc[0])


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_eagle3_head_gives_the_librarys_k_star_as_a_chain_and_as_a_tree(lang):
    at = open_app(PAGE, pair="custom", target=LLAMA_8B, draft=EAGLE3, tp_t="1", lang=lang)
    assert not shown_errors(at) and not at.warning
    b1 = "At B = 1" if lang == "en" else "B = 1"
    assert metric(at, b1) == f"K* = {k_star_at_batch_1(LLAMA_8B, EAGLE3)}"
    assert at.selectbox(key="hardware.draft").value == EAGLE3
    labels = at.selectbox(key="hardware.draft").options
    assert any(EAGLE3 in o and "EAGLE-3" in o and "SafeAILab/EAGLE" in o for o in labels)  # kind and source
    assert not any("EAGLE-Vicuna" in o for o in labels)  # heads of other targets are not offered
    # the roofline: vLLM's fixed costs per step hide the tree's extra tokens at B = 1 (both S = 1.97×)
    query = dict(pair="Llama-3.1 8B + EAGLE-3", tp_t="1", d_tokens="4", v_tokens="32", engine=profiles.DEFAULT_PROFILE)
    tree = open_app(PAGE, **query, lang=lang)
    kw = dict(tp_target=1, tp_draft=1)
    chain = hw.speedup_by_batch(LLAMA_8B, EAGLE3, "H100-SXM5-80GB", 0.8, [1], [2048], 8, **kw).iloc[0]
    want = hw.speedup_by_batch(
        LLAMA_8B, EAGLE3, "H100-SXM5-80GB", 0.8, [1], [2048], 8, draft_tokens=4, verify_tokens=32, **kw
    ).iloc[0]
    assert metric(tree, b1) == f"K* = {int(want.k_star)}"
    shown = next(m.delta for m in tree.metric if m.label.startswith(b1))
    assert shown == f"S = {want.speedup_at_k_star:.2f}×" != f"S = {chain.speedup_at_k_star:.2f}×"  # the tree costs more
    assert tree.number_input(key="hardware.d_tokens").value == 4
    assert tree.number_input(key="hardware.v_tokens").value == 32
    assert tree.query_params["d_tokens"] == "4" and tree.query_params["v_tokens"] == "32"


def test_a_tree_smaller_than_k_max_plus_one_and_a_head_of_another_target_are_errors():
    at = open_app(PAGE, pair="Llama-3.1 8B + EAGLE-3", tp_t="1", v_tokens="5")
    assert any("T = 5" in e and "K max + 1 = 9" in e for e in shown_errors(at))
    assert metric(at, "At B = 1") == f"K* = {k_star_at_batch_1(LLAMA_8B, EAGLE3)}"  # priced as a chain meanwhile
    at = open_app(PAGE, pair="custom", target=LLAMA_8B, draft="yuhuili/EAGLE-Vicuna-7B-v1.3")
    assert any("lmsys/vicuna-7b-v1.3" in e and LLAMA_8B in e for e in shown_errors(at))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_medusa_with_k_above_its_heads_is_an_error_naming_k(lang):
    query = dict(pair="custom", target="lmsys/vicuna-7b-v1.3", draft="FasterDecoding/medusa-vicuna-7b-v1.3")
    at = open_app(PAGE, tp_t="1", ctx="1024", lang=lang, **query)
    assert any("k" in e and "5" in e and "8" in e for e in shown_errors(at))
    assert any("FasterDecoding/medusa-vicuna-7b-v1.3" in e for e in shown_errors(at))
    at = open_app(PAGE, tp_t="1", ctx="1024", k_max="5", **query)
    assert not shown_errors(at)
    want = hw.speedup_by_batch(
        "lmsys/vicuna-7b-v1.3",
        "FasterDecoding/medusa-vicuna-7b-v1.3",
        "H100-SXM5-80GB",
        0.8,
        [1],
        [1024],
        5,
        efficiency=EFF,
    )
    assert metric(at, "At B = 1") == f"K* = {int(want.k_star.iloc[0])}"


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_draft_kv_budget_changes_c_as_the_library_says(lang):
    def c_of(at) -> str:
        return at.metric[0].value  # c at B = 1, then v

    full = open_app(PAGE, view="costs", ctx="32768", lang=lang)
    at = open_app(PAGE, view="costs", ctx="32768", d_ctx="512", lang=lang)
    kw = dict(tp_target=4, tp_draft=1, efficiency=EFF)
    args = ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 1, 32768, 8)
    budget = float(hw.pair_costs(*args, draft_context=512, **kw)["c"])
    assert c_of(at) == f"{budget:.2f}" != c_of(full) == f"{float(hw.pair_costs(*args, **kw)['c']):.2f}"
    assert budget > float(hw.pair_costs(*args, **kw)["c"])  # the draft no longer reads 32k tokens of KV
    assert at.number_input(key="hardware.d_ctx").value == 512
    assert any("512" in c.value and "32,768" in c.value for c in at.caption)  # what the budget means


def test_the_moe_tab_of_the_v3_preset_gives_the_librarys_k_star_beside_the_dense_comparator():
    at = open_app(PAGE, view="moe", **V3)
    assert not shown_errors(at) and not at.warning
    assert [c.key for c in at.get("plotly_chart")] == ["fig_moe"]
    kw = dict(gpu="H200-SXM-141GB", tp=8, dtype="fp8")
    want = k_star_at_batch_1("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-MTP", **kw)
    assert metric(at, "MoE target at B = 1") == f"K* = {want}"
    dense = hw.dense_comparator("deepseek-ai/DeepSeek-V3")
    assert (
        metric(at, "Dense comparator at B = 1")
        == f"K* = {k_star_at_batch_1(dense, 'deepseek-ai/DeepSeek-V3-MTP', **kw)}"
    )
    touched = float(moe.experts_touched(256, 8, 9))  # K max + 1 = 9 tokens of one sequence, V3's E = 256, k = 8
    assert 60 < touched < 72 and any(f"{touched:.1f} of 256" in c.value for c in at.caption)


@pytest.mark.slow
@pytest.mark.parametrize("view", list(VIEWS) + ["moe"])
def test_the_v3_preset_renders_every_view_without_an_error_or_a_warning(view):
    at = open_app(PAGE, view=view, **V3)
    assert not at.error and not at.warning, ([e.value for e in at.error], [w.value for w in at.warning])


@pytest.mark.parametrize("lang", first_quick(["en", "zh"]))
def test_the_moe_tab_of_a_dense_target_offers_the_v3_preset(lang):
    at = open_app(PAGE, view="moe", lang=lang)
    assert at.info and not at.get("plotly_chart")
    assert "DeepSeek-V3 + MTP" in at.info[0].value
    at.button(key="hardware.moe_preset").click()
    rerun(at)
    assert at.selectbox(key="hardware.pair").value == "DeepSeek-V3 + MTP"
    assert at.query_params["pair"] == "DeepSeek-V3 + MTP"


def test_expert_parallelism_from_a_link_prices_the_moe_step_as_the_library_says():
    at = open_app(PAGE, view="step", ep="true", **V3)
    assert at.checkbox(key="hardware.ep").value is True
    kw = dict(dtype="fp8", tp=8, efficiency=EFF)
    args = ("deepseek-ai/DeepSeek-V3", "H200-SXM-141GB", 1, 2048, 1)
    want = hw.step_breakdown(*args, expert_parallel=True, **kw)["seconds"].sum()
    assert metric(at, "Target decode step") == f"{want * 1e3:.3f} ms"
    assert not open_app(PAGE, view="step", ep="true").checkbox  # no checkbox for a dense target


def _band(lo, hi, validated=True, rows=17):
    r = regimes.Regime("vllm", "model", "dense", "b1")
    nearest = None if validated else regimes.Regime("hf-eager", "model", "dense", "b1")
    return regimes.Band(r, lo, hi, (lo + hi) / 2, rows, validated, nearest)


@pytest.mark.parametrize("validated", [True, False])
def test_the_band_is_shown_on_the_step_and_the_speedup_and_shaded_on_the_figure(monkeypatch, validated):
    got = {"step": _band(0.8, 1.25, validated), "speedup": _band(0.9, 1.6, validated)}
    asked = []

    def band_for(name, kind, method, moe, batch, request_rate=None, path=None):
        asked.append((name, kind, method, moe, batch))
        return got[kind]

    monkeypatch.setattr(bands, "band_for", band_for)  # the page reads it at run time
    at = open_app(PAGE, view="step")
    start = "Measured is typically between" if validated else "Unvalidated regime (vLLM · separate draft model"
    assert any(c.value.startswith(start) for c in at.caption), [c.value for c in at.caption]
    assert ("vllm", "step", "model", False, 1) in asked  # the default pair: a dense target, a draft model, B = 1
    if not validated:
        note = next(c.value for c in at.caption if c.value.startswith(start))
        assert "Nearest validated regime: HF eager · separate draft model · dense target · B = 1" in note
    at = open_app(PAGE, view="speedup")
    assert {b for (_, kind, _, _, b) in asked if kind == "speedup"} >= {1, 16, 32}  # one band per batch's regime
    fig = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if c.proto.id.endswith("fig_speedup_b")))
    filled = [t for t in fig["data"] if t.get("fill") == "tonexty"]
    assert len(filled) == 1


def test_the_page_runs_on_the_librarys_own_regime_bands():
    """With the shipped predictions: vLLM with a draft model at B = 1 has no validated speedup regime yet, HF eager does."""
    at = open_app(PAGE, view="speedup")
    own = bands.band_for(profiles.SERVER_PROFILE, "speedup", "model", False, 1)
    assert own is not None and own.regime.key == "vllm/model/dense/b1"
    start = "Measured is typically" if own.validated else "Unvalidated regime (vLLM · separate draft model"
    assert any(c.value.startswith(start) for c in at.caption), [c.value for c in at.caption]
    eager = bands.band_for("hf-transformers", "speedup", "model", False, 1)
    assert eager.validated and eager.rows >= regimes.MIN_ROWS
    at = open_app(PAGE, view="speedup", engine="hf-transformers")
    note = next(c.value for c in at.caption if c.value.startswith("Measured is typically"))
    assert f"{eager.rows} held-out published rows in this regime (HF eager · separate draft model" in note


@pytest.mark.slow
def test_a_routing_skew_from_a_link_prices_fewer_experts_as_the_library_does():
    query = dict(view="step", pair="DeepSeek-V3 + MTP", gpu="H200-SXM-141GB", tp_t="8", dtype="fp8", batch="16")
    uniform, skewed = open_app(PAGE, **query), open_app(PAGE, **query, skew="1.0")
    assert not shown_errors(skewed) and skewed.number_input(key="hardware.skew").value == 1.0
    target = hw.with_routing_skew("deepseek-ai/DeepSeek-V3", 1.0)
    want = hw.step_breakdown(target, "H200-SXM-141GB", 16, 2048, 1, dtype="fp8", tp=8, efficiency=EFF)
    want = want["seconds"].sum()
    assert metric(skewed, "Target decode step") == f"{want * 1e3:.3f} ms"
    ms = [float(metric(at, "Target decode step").split()[0]) for at in (skewed, uniform)]
    assert ms[0] < ms[1]  # a skewed router touches fewer experts


def test_a_refused_upload_keeps_the_pair_of_the_controls_and_says_so():
    """Defect 1 of issue 56: a refused config.json left the figures on the default 70B pair, unsaid."""
    at = open_app(PAGE, view="step", pair="Llama-3.1 8B + 3.2 1B", tp_t="1")
    at.file_uploader(key="hardware.upload_target").upload("my-config.json", b"{not json", "application/json")
    rerun(at)
    errors = shown_errors(at)
    assert len(errors) == 1 and "my-config.json" in errors[0] and "refused" in errors[0], errors
    assert "not valid JSON" in errors[0] and "Llama-3.1 8B + 3.2 1B" in errors[0], errors
    want = hw.step_breakdown("meta-llama/Llama-3.1-8B-Instruct", "H100-SXM5-80GB", 1, 2048, 1, efficiency=EFF)
    assert metric(at, "Target decode step") == f"{want['seconds'].sum() * 1e3:.3f} ms"


@pytest.mark.parametrize(("lo", "hi"), first_quick([(0.47, 0.96), (1.05, 1.32), (0.8, 1.25)]))
def test_every_number_lies_inside_its_band_and_a_one_sided_band_says_its_bias(monkeypatch, lo, hi):
    """Issue 56: step 14.9 ms stood beside a band of 15.5–31.7 ms (the band excluded a biased profile's point)."""
    monkeypatch.setattr(bands, "band_for", lambda *a, **kw: _band(lo, hi, rows=9))
    for view, start, unit in (("step", "Target decode step", " ms"), ("speedup", "At B = 1", "×")):
        at = open_app(PAGE, view=view)
        shown = metric(at, start) if view == "step" else next(m.delta for m in at.metric if m.label == start)
        point = float(shown.removeprefix("S = ").removesuffix(unit))
        caption = next(c.value for c in at.caption if c.value.startswith("Measured is typically"))
        low, high = (float(x) for x in re.findall(r"between ([\d.]+)\D*?and ([\d.]+)", caption)[0])
        assert low <= point <= high, (point, caption)
        assert ("above the prediction" in caption) == (hi < 1) and ("below the prediction" in caption) == (lo > 1)


def test_where_speculation_loses_the_page_says_which_term_makes_it_lose():
    """At α = 0.1 no K pays at B = 1 for the default 70B + 1B pair (TP 4 and 1): the caption gives the library's
    round terms at B = 1, K = 1, and names the largest in words."""
    at = open_app(PAGE, view="speedup", alpha="0.1", pair="Llama-3.1 70B + 3.2 1B", tp_t="4", tp_d="1")
    assert metric(at, "At B = 1") == "don't speculate"
    note = next(c.value for c in at.caption if c.value.startswith("Speculation loses at B = 1"))
    kw = dict(dtype="bf16", tp_target=4, tp_draft=1, efficiency=profiles.SERVER_PROFILE)
    args = ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB", 1, 2048, 1)
    got = hw.round_terms(1.1, hw.pair_costs(*args, **kw))
    assert got["speedup"] < 1
    assert f"gains {got['gained']:.2f} tokens" in note
    assert f"costs {got['verify'] + got['draft'] + got['overhead']:.2f} target steps more" in note
    assert f"the draft forwards: {got['draft']:.2f}" in note
    largest = {"verify": "verifying K + 1 tokens instead of one", "draft": "the draft forwards"}
    assert f"The largest term is {largest.get(got['largest'], 'the round' + chr(39) + 's fixed overhead')}." in note


HF_CONFIGS = Path(__file__).parents[1] / "fixtures" / "hf_configs"


@pytest.mark.parametrize("lang", first_quick(["en", "zh"]))
def test_a_head_uploaded_from_its_config_drafts_for_the_uploaded_target(lang):
    """Issue 57: a head is added from its config.json (SpecForge's Qwen3-8B P-EAGLE) and priced as one: one draft
    forward of K positions on the target's GPUs, the vLLM config with parallel drafting, SGLang said to lack it."""
    at = open_app(PAGE, view="engine", lang=lang)
    for which, name in (("target", "Qwen__Qwen3-8B"), ("draft", "sgl-project__SpecForge-qwen3-8b-peagle")):
        data = (HF_CONFIGS / f"{name}.json").read_bytes()
        at.file_uploader(key=f"hardware.upload_{which}").upload(f"{name}.json", data, "application/json")
        rerun(at)
    assert not shown_errors(at), shown_errors(at)
    vllm = json.loads(next(c.value for c in at.code if '"method"' in c.value))
    assert vllm["method"] == "eagle3" and vllm["parallel_drafting"] is True
    assert any("SGLang 0.5.10.post1" in c.value for c in at.caption), [c.value for c in at.caption]


def test_the_map_says_what_one_fixed_k_loses_against_k_star_by_batch_and_context():
    from specviz.app.scenarios import hardware as scenarios
    from specviz.core import tuning

    at = open_app(PAGE, view="map")
    frame = hw.speedup_by_batch(
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "H100-SXM5-80GB",
        0.8,
        scenarios.BATCHES,
        scenarios.CONTEXTS,
        8,
        tp_target=4,
        efficiency=EFF,
    )  # the page's defaults, as default_at_batch_1 prices them
    k, loss = tuning.fixed_k_loss(frame[[f"s_{i}" for i in range(1, 9)]].to_numpy())
    said = f"One fixed K = {k} for every batch and context loses {loss.mean():.1%} on average"
    assert any(said in c.value and f"{loss.max():.1%} at worst" in c.value for c in at.caption), [
        c.value for c in at.caption
    ]

"""The Drafting strategies page in AppTest: each view, links, p typed or geometric, bad p named."""

from __future__ import annotations

import numpy as np
import pytest
from _apps import open_app, rerun, shown_errors
from _messages import CJK

from specviz.core import configs, hardware, policies, profiles, trees
from specviz.data import measurements, store

PAGE = "pages/strategies.py"
VIEWS = {
    "tree": ["fig_tree"],
    "shapes": ["fig_shapes"],
    "budget_depth": [],
    "hardware": [],
    "flags": [],
    "policies": ["fig_policies", "fig_k_rounds", "fig_k_hist", "fig_policy_sweep"],
    "ngram": ["fig_ngram"],
}


def metric(at, start: str):
    return next(m for m in at.metric if m.label.startswith(start))


@pytest.mark.slow
@pytest.mark.parametrize("view", list(VIEWS))
def test_every_view_renders_only_its_charts(view):
    at = open_app(PAGE, view=view)
    assert [c.key for c in at.get("plotly_chart")] == VIEWS[view]
    assert not at.error


def test_defaults_show_the_optimal_tree_and_what_it_buys():
    at = open_app(PAGE)
    p = trees.geometric_p(0.6, 4)
    tree = trees.optimal_tree(p, 16, 6)
    m = metric(at, "Optimal tree")
    assert m.value == f"{trees.expected_tokens(tree, p):.3f}" and tree.describe() in m.delta
    at.slider(key="strategies.budget").set_value(4)
    rerun(at)
    assert metric(at, "Optimal tree").value == f"{trees.expected_tokens(trees.optimal_tree(p, 4, 6), p):.3f}"
    assert at.query_params["budget"] == "4"


def test_a_typed_p_from_a_link_drives_the_engine_flags():
    at = open_app(PAGE, p_src="typed", p="0.5, 0.2, 0.1", budget="8", depth="4", view="flags")
    _, depth, topk = trees.best_topk([0.5, 0.2, 0.1], 8, 4)
    assert at.code[0].value == configs.sglang.tree_flags(depth, topk, 8)
    assert at.text_input(key="strategies.p").value == "0.5, 0.2, 0.1"


def test_engine_flags_for_a_budget_no_top_k_tree_holds_is_a_warning_not_a_crash():
    at = open_app(PAGE, budget="16", depth="1", view="flags")
    assert not at.exception and not at.error and not at.code
    assert "budget must be at most 8" in at.warning[0].value and "Maximum depth" in at.warning[0].value
    at = open_app(PAGE, budget="16", depth="1", view="shapes")
    assert not at.exception and [c.key for c in at.get("plotly_chart")] == ["fig_shapes"]


def test_a_cost_model_where_no_tree_pays_says_do_not_speculate():
    at = open_app(PAGE, view="hardware", c="1", v="1", alpha="0.1")
    m = metric(at, "Best tree")
    assert m.value == "do not speculate" and "1.00×" in m.delta


def test_hardware_view_follows_the_cost_model():
    at = open_app(PAGE, view="hardware", c="5", v="0.3")
    p = trees.geometric_p(0.6, 4)
    tree, s = trees.best_tree_for_hardware(p, 1 / 5, lambda n: 1 + 0.3 * (n - 1), 16, 6)
    m = metric(at, "Best tree")
    assert m.value == tree.describe() and f"{s:.2f}×" in m.delta


@pytest.mark.parametrize(
    ("p", "message"),
    [
        ("0.7, 0.5", "p must sum to at most 1"),
        ("abc", "p: 'abc' is not a comma-separated list"),
        ("", "p: type at least"),
    ],
)
def test_a_bad_typed_p_is_an_error_naming_it_and_the_page_still_draws(p, message):
    at = open_app(PAGE, p_src="typed", p=p)
    assert any(message in e for e in shown_errors(at)), shown_errors(at)
    assert at.get("plotly_chart")  # drawn with the default profile


VICUNA_PAIR, EAGLE = "Vicuna-7B + Vicuna-68M", "yuhuili/EAGLE-Vicuna-7B-v1.3"


def best_priced_tree(p, target, draft, gpu, batch, ctx, budget, depth, efficiency=None):
    """The page's rule from the library: Sequoia's choice with one draft token per level, then the tree
    priced level by level by pair_costs (draft_tokens = the nodes a level extends, verify_tokens = n + 1)."""
    n = np.arange(1, budget + 1)
    costs = hardware.pair_costs(
        target, draft, gpu, batch, ctx, 1, efficiency=efficiency, draft_tokens=n, verify_tokens=n + 1
    )
    t1, round_s = float(costs["t_target"]), float(costs["o"] * costs["t_target"])

    def verify(m):
        return t1 if m == 1 else float(costs["t_verify"][m - 2]) + round_s

    tree, _ = trees.best_tree_for_hardware(p, float(costs["t_draft"][0]), verify, budget, depth)
    if not tree.drafts:
        return tree, 1.0
    levels = np.bincount(tree.depths)[: tree.depth]
    s = trees.expected_tokens(tree, p) * t1 / (sum(costs["t_draft"][w - 1] for w in levels) + verify(tree.drafts + 1))
    return (tree, s) if s > 1 else (trees.NO_TREE, 1.0)


def test_hardware_view_on_a_pair_and_gpu_uses_the_roofline_model():
    pair = hardware.preset_pairs().iloc[1]
    at = open_app(PAGE, view="hardware", cost="gpu", pair=pair["name"], gpu="A100-SXM4-80GB")
    assert not at.error
    p = trees.geometric_p(0.6, 4)
    tree, s = best_priced_tree(p, pair["target"], pair["draft"], "A100-SXM4-80GB", 1, 1024, 16, 6)
    m = metric(at, "Best tree")
    assert m.value == (tree.describe() if tree.drafts else "do not speculate") and f"{s:.2f}×" in m.delta
    assert any("roofline model" in c.value and "A100-SXM4-80GB" in c.value for c in at.caption)
    assert any("Priced with the engine profile Roofline" in c.value for c in at.caption)
    at.selectbox(key="strategies.gpu").set_value("L4-24GB")
    at = rerun(at)
    assert any("L4-24GB" in c.value for c in at.caption) and at.query_params["gpu"] in ("L4-24GB", ["L4-24GB"])


def test_the_engine_profile_prices_the_best_tree_as_the_library_says():
    query = dict(view="hardware", cost="gpu", pair=VICUNA_PAIR, gpu="A100-SXM4-80GB", alpha="0.8", batch="8")
    roofline = open_app(PAGE, **query)
    at = open_app(PAGE, **query)
    at.selectbox(key="strategies.engine").set_value("hf-transformers")
    at = rerun(at)
    assert at.query_params["engine"] in ("hf-transformers", ["hf-transformers"])
    p = trees.geometric_p(0.8, 4)
    args = (p, "lmsys/vicuna-7b-v1.3", "double7/vicuna-68m", "A100-SXM4-80GB", 8, 1024, 16, 6)
    for page, efficiency in ((roofline, None), (at, profiles.profile("hf-transformers"))):
        tree, s = best_priced_tree(*args, efficiency=efficiency)
        m = metric(page, "Best tree")
        assert m.value == (tree.describe() if tree.drafts else "do not speculate") and f"speedup {s:.2f}×" == m.delta
    assert metric(at, "Best tree").delta != metric(roofline, "Best tree").delta  # the eager stack pays per layer
    fitted = profiles.load_profiles().loc["hf-transformers", "fitted_on"]
    assert any("Hugging Face transformers" in c.value and fitted in c.value for c in at.caption)


def test_a_head_of_the_pairs_target_drafts_the_tree():
    at = open_app(PAGE, view="hardware", cost="gpu", pair=VICUNA_PAIR, gpu="H100-SXM5-80GB", draft=EAGLE)
    assert not at.error and not at.warning
    box = at.selectbox(key="strategies.draft")
    assert box.value == EAGLE and box.options == ["the pair's draft model: double7/vicuna-68m", f"{EAGLE} (EAGLE head)"]
    tree, s = best_priced_tree(
        trees.geometric_p(0.6, 4), "lmsys/vicuna-7b-v1.3", EAGLE, "H100-SXM5-80GB", 1, 1024, 16, 6
    )
    m = metric(at, "Best tree")
    assert m.value == tree.describe() and m.delta == f"speedup {s:.2f}×"
    assert any(f"{EAGLE} drafting" in c.value for c in at.caption)
    at.selectbox(key="strategies.pair").set_value("Llama-3.1 8B + 3.2 1B")
    at = rerun(at)  # a head of another target: reported, and the pair's draft model drafts
    assert any("drafts for lmsys/vicuna-7b-v1.3" in w.value for w in at.warning)
    assert at.selectbox(key="strategies.draft").value == "pair"
    assert "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (EAGLE-3 head)" in at.selectbox(key="strategies.draft").options


def test_a_link_restores_the_pair_the_head_and_the_profile():
    query = dict(view="hardware", cost="gpu", pair=VICUNA_PAIR, draft=EAGLE, engine="sglang", ctx="4096", batch="4")
    at = open_app(PAGE, **query)
    assert (
        at.selectbox(key="strategies.engine").value == "sglang" and at.selectbox(key="strategies.draft").value == EAGLE
    )
    assert at.number_input(key="strategies.ctx").value == 4096
    assert {k: at.query_params[k] for k in query} in (query, {k: [v] for k, v in query.items()})
    args = (trees.geometric_p(0.6, 4), "lmsys/vicuna-7b-v1.3", EAGLE, "H100-SXM5-80GB", 4, 4096, 16, 6)
    _, s = best_priced_tree(*args, efficiency=profiles.profile("sglang"))
    assert metric(at, "Best tree").delta == f"speedup {s:.2f}×"
    assert any("SGLang" in c.value and "lmsys-blog-mtp" in c.value for c in at.caption)


@pytest.mark.slow
def test_bad_engine_or_head_in_a_link_warns_and_falls_back():
    at = open_app(PAGE, view="hardware", cost="gpu", engine="warp-drive")
    assert "engine" in " ".join(w.value for w in at.warning) and not at.error
    assert at.selectbox(key="strategies.engine").value == profiles.DEFAULT_PROFILE
    at = open_app(PAGE, view="hardware", cost="gpu", pair="Llama-2 70B + 7B", draft=EAGLE)
    assert any(EAGLE in w.value and "meta-llama/Llama-2-70b-hf" in w.value for w in at.warning) and not at.error
    _, s = best_priced_tree(
        trees.geometric_p(0.6, 4),
        "meta-llama/Llama-2-70b-hf",
        "meta-llama/Llama-2-7b-hf",
        "H100-SXM5-80GB",
        1,
        1024,
        16,
        6,
    )
    assert metric(at, "Best tree").delta == f"speedup {s:.2f}×"


def test_a_custom_profile_prices_the_tree_and_bad_terms_are_named():
    terms = "overhead_s=0.002,round_overhead_s=0.001"
    at = open_app(PAGE, view="hardware", cost="gpu", pair=VICUNA_PAIR, engine="custom", eng_terms=terms)
    args = (trees.geometric_p(0.6, 4), "lmsys/vicuna-7b-v1.3", "double7/vicuna-68m", "H100-SXM5-80GB", 1, 1024, 16, 6)
    _, s = best_priced_tree(*args, efficiency=profiles.decode_terms(terms))
    assert metric(at, "Best tree").delta == f"speedup {s:.2f}×"
    assert any("custom engine profile" in c.value and terms in c.value for c in at.caption)
    at = open_app(PAGE, view="hardware", cost="gpu", engine="custom", eng_terms="memory=3")
    assert any("memory" in e and "(0, 1]" in e for e in shown_errors(at)), shown_errors(at)


def test_the_best_tree_on_a_gpu_in_chinese():
    query = dict(view="hardware", cost="gpu", pair=VICUNA_PAIR, draft=EAGLE, engine="vllm", lang="zh")
    at = open_app(PAGE, **query)
    assert not at.error and not at.warning
    _, s = best_priced_tree(
        trees.geometric_p(0.6, 4),
        "lmsys/vicuna-7b-v1.3",
        EAGLE,
        "H100-SXM5-80GB",
        1,
        1024,
        16,
        6,
        profiles.profile("vllm"),
    )
    assert f"{s:.2f}" in at.metric[0].delta and CJK.search(at.metric[0].label)
    priced = [c.value for c in at.caption if "vLLM (CUDA graphs)" in c.value]
    assert priced and all(CJK.search(c) for c in priced) and "vllm-pr-16937" in priced[0]
    assert any(EAGLE in c.value and CJK.search(c.value) for c in at.caption)
    assert CJK.search(at.selectbox(key="strategies.draft").options[0])


@pytest.mark.slow
def test_p_from_a_tree_run_in_the_library(db_url):
    rows = [
        {"label": "chain", "k": 4, "alpha": 0.7},
        {
            "label": "tree",
            "k": 8,
            "alpha": 0.75,
            "tree": "optimal:8,4 (8 drafts, depth 4)",
            "tree_depth": 4,
            "tree_p": "0.6;0.2;0.05",
            "predicted_tokens_per_round": 2.9,
        },
    ]
    frame, _ = measurements.load_records(rows)
    run = store.save_run(store.open_library(db_url), frame, label="trees", source="test")
    at = open_app(PAGE, p_src="library", run=str(run))
    assert not at.error
    assert any(
        c.value.startswith(f"p (run {run}, row 2 (tree optimal:8,4") and "0.600, 0.200, 0.050" in c.value
        for c in at.caption
    )
    chain_only = store.save_run(store.open_library(db_url), frame.iloc[:1], label="chain", source="test")
    at = open_app(PAGE, p_src="library", run=str(chain_only))
    assert any("only p_1 = α is measured" in c.value and "0.700" in c.value for c in at.caption)
    at = open_app(PAGE, p_src="library", run="999")
    assert shown_errors(at)


def test_p_from_the_live_page_needs_a_run_there():
    at = open_app(PAGE, p_src="live")
    assert any("the live page has no finished run" in e for e in shown_errors(at))
    assert at.get("plotly_chart")  # the page still draws, on the default profile


@pytest.mark.slow
def test_policies_view_replays_the_rules_on_a_synthetic_trace():
    at = open_app(PAGE, view="policies", t_alpha="0.7", k_max="8", rounds="2000", p_min="0.6")
    assert not at.error
    table = at.dataframe[0].value
    trace = policies.synthetic_trace(0.7, 8, 2000, np.random.default_rng(0), "calibrated")
    want = policies.compare(
        trace,
        [
            policies.hf_heuristic(20),
            policies.hf_confidence(0.4, 8),
            policies.llamacpp_pmin(0.6, 8),
            policies.llamacpp_pmin(0.6, 8, keep_crossing=False),
            policies.specdecpp(0.7, 8),
        ],
        20.0,
        0.02,
        0.0,
    )
    assert table["policy"].tolist() == want["policy"].tolist()
    np.testing.assert_allclose(table["speedup (×)"], want["speedup"].round(3))
    oracle = table.loc[table.kind == "oracle", "speedup (×)"].iloc[0]
    assert (table["speedup (×)"] <= oracle + 1e-9).all()  # nothing beats the oracle
    at.number_input(key="strategies.p_min").set_value(0.9)
    at = rerun(at)
    assert at.query_params["p_min"] in ("0.9", ["0.9"])
    assert at.dataframe[0].value["speedup (×)"].tolist() != table["speedup (×)"].tolist()


def test_an_uploaded_trace_that_is_not_one_is_an_error_naming_the_file():
    at = open_app(PAGE, view="policies", trace_src="upload")
    assert any("upload a trace file" in e for e in shown_errors(at))
    assert not at.get("plotly_chart") or "fig_policies" not in [c.key for c in at.get("plotly_chart")]
    with pytest.raises(ValueError, match="notes.jsonl: line 1 must be a 'specviz trace 1' header"):
        policies.parse_trace("hello", "notes.jsonl")


def test_ngram_view_replays_prompt_lookup_on_the_text():
    text = "def f(x):\n    return x\n" * 6
    at = open_app(PAGE, view="ngram", ng_src="text", ng_text=text, ng_c="100")
    assert not at.error
    table = at.dataframe[0].value
    assert set(table["rule"]) == {"hf", "vllm"} and table["K"].tolist()[:3] == [1, 2, 3]
    hf8 = table[(table.rule == "hf") & (table.K == 8)].iloc[0]
    assert hf8.tokens_per_round > 3  # the text repeats itself: lookup accepts long runs
    at = open_app(PAGE, view="ngram", ng_src="text", ng_text="x")
    assert any("text: type at least two characters" in e for e in shown_errors(at))


def test_policies_from_the_live_page_need_a_recorded_trace():
    at = open_app(PAGE, view="policies", trace_src="live")
    assert any("the live page has no recorded trace in this session" in e for e in shown_errors(at))


@pytest.mark.parametrize("engine", [profiles.DEFAULT_PROFILE, "hf-transformers"])
def test_policies_can_be_priced_by_the_roofline_model_of_a_pair_on_a_gpu(engine):
    pair = hardware.preset_pairs().iloc[0]
    at = open_app(
        PAGE,
        view="policies",
        pol_cost="gpu",
        pair=pair["name"],
        gpu="H100-SXM5-80GB",
        rounds="1000",
        k_max="8",
        engine=engine,
    )
    assert not at.error
    efficiency = None if engine == profiles.DEFAULT_PROFILE else profiles.profile(engine)
    costs = hardware.pair_costs(pair["target"], pair["draft"], "H100-SXM5-80GB", 1, 1024, 8, efficiency=efficiency)
    caption = next(c.value for c in at.caption if c.value.startswith("Trace — synthetic"))
    assert f"c = {float(costs['c']):.4g}" in caption and f"o = {float(costs['o']):.3g}" in caption
    assert "the roofline model" in caption
    label = profiles.load_profiles().loc[engine, "label"]
    assert (
        sum(f"Priced with the engine profile {label}" in c.value for c in at.caption) == 2
    )  # above and below the figures


@pytest.mark.slow
def test_ngram_view_runs_the_target_with_both_drafters(db_url):
    from _apps import click

    text = "def area(w, h):\n    return w * h\n\n\ndef area(w, h):\n    return"
    at = open_app(PAGE, view="ngram", ng_src="text", ng_text=text, ng_k="4")
    at = click(at, "Run the bundled target with n-gram drafts and with its draft model")
    assert not at.error
    table = at.dataframe[1].value
    assert table["drafter"].tolist() == ["n-gram (prompt lookup)", "bundled draft model"]
    assert table["greedy_exact"].tolist() == [True, True] and (table["speedup (×)"] > 0).all()
    assert table["c"].iloc[0] > table["c"].iloc[1]  # a lookup is far cheaper than a draft forward

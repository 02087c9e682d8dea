"""The Serving page in AppTest: each view, the headline numbers are the library's, links restore it,
bad input is named, both languages."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
import yaml
from _apps import SERVING_NO_K_TTFT, SWITCHING_GPU, open_app, rerun, shown_errors
from _messages import CJK
from _tiers import first_quick

from specviz.app.ui import number
from specviz.core import configs, hardware, profiles, serving

PAGE = "pages/serving.py"
VIEWS = {"pareto": ["serving.fig_pareto"], "tpot": ["serving.fig_tpot"], "table": [], "schedule": []}
PAIR = hardware.preset_pairs(heads=True).set_index("name").loc["Llama-3.1 8B + 3.2 1B"]


def metric(at, start: str):
    return next(m for m in at.metric if m.label.startswith(start))


def library_answer(**over):
    """What the page should show for its defaults (with ``over`` changed), from specviz.core.serving."""
    v = dict(alpha=0.8, k_max=6, p=1024, g=256, rates=[0.5, 1, 2, 4, 8, 12, 16, 24, 32, 48], ttft=2.0, tpot=0.05)
    v |= dict(gpu="H100-SXM5-80GB") | over
    output = serving.Lengths.fixed(v["g"])
    grid = serving.cost_grid(
        PAIR["target"],
        PAIR["draft"],
        v["gpu"],
        serving.chain_options(v["alpha"], v["k_max"]),
        serving.Lengths.fixed(v["p"]),
        output,
        stack="vllm",
        efficiency=profiles.profile("vllm"),
    )
    frame = serving.steady_state(grid, output, v["rates"])
    return grid, frame, serving.max_rate(grid, output, ttft_s=v["ttft"], tpot_s=v["tpot"])


@pytest.mark.slow
@pytest.mark.parametrize("view", first_quick(list(VIEWS)))
def test_every_view_renders_only_its_charts(view):
    at = open_app(PAGE, view=view)
    assert [c.key for c in at.get("plotly_chart")] == VIEWS[view]
    assert not at.error


@pytest.mark.slow
def test_headline_numbers_are_the_library_s():
    at = open_app(PAGE)
    _, _, rates = library_answer()
    plain = rates.iloc[0]
    best = rates.iloc[1:].sort_values(["max_rps", "k"], ascending=[False, True]).iloc[0]
    assert metric(at, "Largest rate per GPU").value == number(plain["max_rps_per_gpu"])  # 3 significant digits
    m = metric(at, "… with speculation")
    assert f"K = {int(best['k'])}" in m.label and m.value == number(best["max_rps_per_gpu"])
    assert "vLLM" in " ".join(c.value for c in at.caption)  # the profile that priced it is named


def test_reacts_and_mirrors_the_url():
    at = open_app(PAGE)
    before = metric(at, "… with speculation").value
    at.slider(key="serving.alpha").set_value(0.95)
    rerun(at)
    assert at.query_params["alpha"] == "0.95"
    assert metric(at, "… with speculation").value != before


@pytest.mark.slow
def test_a_link_restores_the_view():
    at = open_app(PAGE, alpha="0.6", mode="closed", users="1,4,16,64", tpot="30", view="table")
    assert at.radio(key="serving.mode").value == "closed"
    assert at.slider(key="serving.alpha").value == pytest.approx(0.6)
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == [1.0, 4.0, 16.0, 64.0]


@pytest.mark.slow
def test_schedules_round_trip():
    at = open_app(PAGE, view="schedule", gpu=SWITCHING_GPU, alpha="0.75")  # K falls 3, 2, 1, 0 with the batch
    codes = [c.value for c in at.code]
    vllm = json.loads(codes[0])
    ranges = vllm["num_speculative_tokens_per_batch_size"]
    assert ranges[0][0] == 1 and all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    assert vllm["num_speculative_tokens"] == max(k for _, _, k in ranges)
    trt = yaml.safe_load(codes[1])["speculative_config"]
    lengths = trt["draft_len_schedule"]  # ceiling keys: the smallest covers batch 1 and drafts the most
    assert lengths[min(lengths)] == trt["max_draft_len"] >= max(lengths.values())
    assert codes[2].startswith("--speculative-algorithm") or codes[2].startswith("#")
    assert "--spec-draft-n-max" in codes[3] or "# speculation does not pay" in codes[3]
    assert codes[3].startswith("-np 256 --kv-unified ")  # vLLM's profile: one cache for every sequence


@pytest.mark.slow
def test_a_schedule_whose_k_rises_is_not_expressible_in_tensorrt_llm():
    at = open_app(PAGE, view="schedule", gpu=SWITCHING_GPU)  # the default α: K 3 at batch 1, 4 at 7-20
    ranges = json.loads(at.code[0].value)["num_speculative_tokens_per_batch_size"]
    first, rises = ranges[0][2], [(lo, k) for lo, _, k in ranges if k > ranges[0][2]]
    assert rises, "this view's schedule no longer rises with the batch: pick another"
    lo, k = rises[0]
    said = at.code[1].value
    assert said.startswith("# not expressible in TensorRT-LLM") and f"K = {k} at batch {lo}, above K = {first}" in said


@pytest.mark.slow
def test_llama_server_with_a_kv_stream_per_slot():
    query = dict(engine="llama.cpp", max_seqs="8", mode="closed", users="1,2,4,8", view="table")
    unified, slots = open_app(PAGE, **query), open_app(PAGE, **query, kv="slots")
    assert unified.radio(key="serving.kv").value == "unified" and slots.radio(key="serving.kv").value == "slots"
    assert not unified.error and not slots.error
    said = "One KV cache per slot"
    assert not any(said in c.value for c in unified.caption) and any(said in c.value for c in slots.caption)
    tpot = {name: at.dataframe[0].value.iloc[:, 2].to_numpy() for name, at in (("u", unified), ("s", slots))}
    # one user: one busy slot either way; all eight busy: one run of slots; in between, scattered runs cost more
    assert tpot["s"][0] == pytest.approx(tpot["u"][0], rel=1e-9) and (tpot["s"][1:3] > tpot["u"][1:3]).all()
    output = serving.Lengths.fixed(256)
    grid = serving.cost_grid(
        PAIR["target"],
        PAIR["draft"],
        "H100-SXM5-80GB",
        serving.chain_options(0.8, 6),
        serving.Lengths.fixed(1024),
        output,
        stack="llama.cpp",
        max_seqs=8,
        kv="slots",
    )
    best = serving.best_by_load(
        serving.steady_state(grid, output, [1, 2, 4, 8], mode="closed"), ttft_s=2.0, tpot_s=0.05
    )
    assert np.allclose(tpot["s"], best["tpot_s"])
    slots.radio(key="serving.kv").set_value("unified")
    rerun(slots)
    assert slots.query_params.get("kv") in (None, "unified")
    schedule = open_app(PAGE, **query | dict(view="schedule"), kv="slots").code[3].value
    assert schedule.startswith("-np 8 ") and "--kv-unified" not in schedule
    # another engine's profile: the control is not offered and a link's kv is not priced
    other = open_app(PAGE, **query | dict(engine="vllm"), kv="slots")
    assert not [r for r in other.radio if r.key == "serving.kv"]
    assert not any(said in c.value for c in other.caption)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (dict(p_dist="uniform", p_len="900", p_hi="100"), "the range 900..100 is empty"),
        (dict(pair="custom", target="meta-llama/Llama-3.1-70B-Instruct", draft="JackFram/llama-68m"), "vocab"),
        (dict(gpu="RTX-4090-24GB", pair="Llama-3.1 70B + 3.2 1B"), "do not fit on the GPU"),
    ],
)
def test_bad_input_is_named_not_a_traceback(query, message):
    at = open_app(PAGE, **query)
    errors = shown_errors(at)
    assert errors and message in errors[0]


@pytest.mark.slow
def test_overload_is_reported():
    at = open_app(PAGE, rates="1,1000,5000")
    assert any("Overloaded at 2 of the loads" in w.value for w in at.warning)


@pytest.mark.slow
def test_chinese():
    at = open_app(PAGE, lang="zh")
    assert CJK.search(at.title[0].value)
    assert all(CJK.search(m.label) for m in at.metric)


@pytest.mark.slow
def test_grid_prices_match_the_hardware_page_at_batch_one():
    grid, _, _ = library_answer(rates=[1e-6])
    t1 = grid.round_s[1]
    s = hardware.speedup_by_batch(
        PAIR["target"], PAIR["draft"], "H100-SXM5-80GB", 0.8, [1], [int(grid.context)], 6, efficiency="vllm"
    )
    np.testing.assert_allclose(
        t1[0] / t1[1:] * grid.mean_tokens[1:], s[[f"s_{k}" for k in range(1, 7)]].iloc[0], rtol=1e-9
    )


@pytest.mark.slow
def test_an_emptied_load_list_and_an_sla_no_k_meets_are_said_not_crashed():
    at = open_app(PAGE)
    at.multiselect(key="serving.rates").set_value([])
    rerun(at)
    assert any("no load is chosen" in e for e in shown_errors(at))
    at = open_app(PAGE, ttft=SERVING_NO_K_TTFT)
    m = metric(at, "… with speculation")
    assert "no K meets the SLA" in m.label and not m.delta and m.value == "—"


@pytest.mark.slow
def test_a_tree_is_one_more_line_beside_the_chains():
    at = open_app(PAGE, tree="8", t_depth="3", view="tpot")
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [t["name"] for t in figure["data"]]
    assert len(names) == 8 and names[-1].startswith("tree of 8") and "depth" in names[-1]
    assert at.query_params["tree"] == "8"


@pytest.mark.slow
def test_a_link_with_more_users_than_the_model_takes_is_refused_by_the_link_reader_not_the_page():
    """Defect 6 of issue 56: users=100000 passed the link (≤ 100,000) and failed the model (≤ 10,000)."""
    at = open_app(PAGE, mode="closed", users="4,100000")
    assert not shown_errors(at)
    assert any("users" in w.value.lower() and "10000" in w.value.replace(",", "") for w in at.warning)


@pytest.mark.slow
def test_gpu_counts_are_whole_numbers_with_thousands_separators():
    """Defect 7 of issue 56: GPUs for 1e+06 requests/s read 5.49e+04 / 5.76e+04."""
    at = open_app(PAGE, goal="1000000")
    m = metric(at, "GPUs for")
    assert "e+" not in m.value + m.label and "1,000,000" in m.label
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", n) for n in m.value.split(" / ")), m.value


@pytest.mark.slow
def test_when_no_k_meets_the_sla_no_label_names_a_k():
    """Defect 8 of issue 56: "no K meets the SLA" beside a GPU count labelled K = 1."""
    at = open_app(PAGE, ttft=SERVING_NO_K_TTFT)
    assert metric(at, "Largest rate per GPU").value != "—"  # plain decoding meets it: only speculation fails
    assert "no K meets the SLA" in metric(at, "… with speculation").label
    assert not [m.label for m in at.metric if "K = " in m.label]


def test_the_defaults_open_on_loads_that_fit_and_the_headline_agrees_with_itself():
    """Issue 56: the page opened in "Overloaded at 3 of the loads", and "−5 %" stood beside "stops paying: never"."""
    at = open_app(PAGE)
    assert not at.warning and not at.error
    delta = metric(at, "… with speculation").delta
    stops = metric(at, "Speculation stops paying").value
    assert delta and (delta.startswith("-") or delta.startswith("−")) == (not stops.startswith("never")), (delta, stops)


@pytest.mark.slow
def test_hardware_and_serving_open_on_the_same_engine_profile_and_say_it():
    hw_page = open_app("pages/hardware.py")
    at = open_app(PAGE)
    assert at.selectbox(key="serving.engine").value == hw_page.selectbox(key="hardware.engine").value
    for page in (at, hw_page):
        assert any(c.value.startswith("Priced with the engine profile") for c in page.caption)


@pytest.mark.parametrize("mode", ["open", "closed"])
@pytest.mark.slow
def test_the_gain_carries_the_band_of_its_regime(monkeypatch, mode):
    """The largest-rate gain is a throughput ratio priced in its regime: a request rate (open) or the user count."""
    from specviz.core import bands, regimes

    asked = []

    def band_for(name, kind, method, moe, batch, request_rate=None, path=None):
        asked.append((name, kind, method, moe, batch, request_rate))
        r = regimes.Regime("vllm", method, "dense", regimes.load_of(batch, request_rate))
        return regimes.Band(r, 0.9, 1.2, 1.0, 12, True, None)

    monkeypatch.setattr(bands, "band_for", band_for)
    query = dict(mode="closed", users="1,4,16,64") if mode == "closed" else dict(goal="250")
    at = open_app(PAGE, **query)
    note = next(c.value for c in at.caption if c.value.startswith("Largest rate with speculation over without"))
    gain = float(re.search(r"without: ([0-9.]+)×", note).group(1))
    low, high = (float(x) for x in re.search(r"between ([0-9.]+)× and ([0-9.]+)×", note).groups())
    assert low <= gain <= high
    name, kind, method, moe, batch, rate = asked[-1]
    assert (name, kind, method, moe) == (profiles.SERVER_PROFILE, "speedup", "model", False)
    assert (batch, rate) == ((64, None) if mode == "closed" else (None, 250.0))
    assert ("B ≥ 17 or a request rate" if mode == "open" else "B ≥ 17") in note


def _cost(at) -> list[float]:
    shown = next(m.value for m in at.metric if m.label.startswith(("Cost per million", "每百万")))
    return [float(x.removeprefix("USD ").replace(",", "")) for x in shown.split(" / ")]


@pytest.mark.slow
@pytest.mark.parametrize("lang", first_quick(["en", "zh"]))
def test_the_cost_per_million_tokens_is_the_price_over_the_largest_rate_meeting_the_sla(lang):
    """Issue 58 §4: $/M output tokens = price / (largest rate per GPU meeting the SLA × output tokens × 3600) × 10⁶,
    at the catalogue's dated price or a typed one; a GPU without a published price says so."""
    _, _, rates = library_answer()
    best = rates.iloc[1:].sort_values(["max_rps", "k"], ascending=[False, True]).iloc[0]
    price, date, _ = serving.gpu_price("H100-SXM5-80GB")
    at = open_app(PAGE, lang=lang)
    assert not shown_errors(at)
    want = [price / (r * 256 * 3600) * 1e6 for r in (rates.iloc[0]["max_rps_per_gpu"], best["max_rps_per_gpu"])]
    assert _cost(at) == pytest.approx(want, abs=6e-4)  # shown to 3 decimals
    assert any(date in c.value and f"{price:.2f}" in c.value for c in at.caption)
    typed = open_app(PAGE, price=str(2 * price), lang=lang)
    assert _cost(typed) == pytest.approx([2 * w for w in want], abs=6e-4)
    none = open_app(PAGE, gpu="H20-96GB", lang=lang)
    assert not any(m.label.startswith(("Cost per million", "每百万")) for m in none.metric)
    assert any("H20-96GB" in c.value for c in none.caption)


@pytest.mark.slow
def test_the_pareto_carries_iso_cost_lines_at_the_gpus_price_and_none_without_one():
    """Cost per token depends on tokens/s per GPU alone: each dotted line is the tokens/s per GPU at which the
    GPU's price buys a million tokens for the USD its label says."""
    price = serving.gpu_price("H100-SXM5-80GB")[0]
    at = open_app(PAGE)
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    lines = [s["y0"] for s in fig["layout"]["shapes"] if s.get("line", {}).get("dash") == "dot"]
    labels = [a["text"] for a in fig["layout"]["annotations"] if a["text"].endswith("/ M tokens")]
    assert lines and len(lines) == len(labels)
    for y, label in zip(lines, labels, strict=True):
        usd = float(re.match(r"USD ([\d.]+) / M tokens", label).group(1))
        assert serving.usd_per_million_tokens(price, 1, y) == pytest.approx(usd, rel=1e-9)
    none = open_app(PAGE, gpu="H20-96GB")
    fig = json.loads(none.get("plotly_chart")[0].proto.spec)
    assert not [a for a in fig["layout"].get("annotations", []) if a["text"].endswith("/ M tokens")]


@pytest.mark.slow
def test_the_table_prices_every_load_each_way_with_users_and_once_with_an_open_rate():
    """Issue 58 §4: USD per M output tokens at every load. A fixed number of users is served faster with
    speculation, so its tokens cost less; an open loop serves the offered rate either way: one column."""
    price = serving.gpu_price("H100-SXM5-80GB")[0]
    at = open_app(PAGE, view="table", mode="closed")
    shown = at.dataframe[0].value
    grid, _, _ = library_answer()
    frame = serving.steady_state(grid, serving.Lengths.fixed(256), list(shown["users"]), mode="closed", think_s=0.0)
    plain = frame[frame["k"] == 0].set_index("load")["tokens_per_s_per_gpu"]
    want = price / (plain.loc[shown["users"]].to_numpy() * 3600) * 1e6
    assert shown["USD per M tokens without speculation"].to_numpy() == pytest.approx(want, rel=1e-9)
    assert (shown["USD per M tokens at best K"] <= shown["USD per M tokens without speculation"]).all()
    opened = open_app(PAGE, view="table").dataframe[0].value
    assert "USD per M tokens" in opened and "USD per M tokens without speculation" not in opened
    rate = opened["requests/s"].to_numpy()
    assert opened["USD per M tokens"].to_numpy() == pytest.approx(price / (rate * 256 * 3600) * 1e6, rel=1e-9)


@pytest.mark.slow
def test_the_caption_gives_the_memory_cap_with_and_without_the_draft():
    """Issue 58 §3: on a 24 GB GPU at a 4K context fewer sequences fit beside a 1B draft than without it."""
    at = open_app(PAGE, gpu="L4-24GB", p_len="4096", max_seqs="1024")
    g = serving.cost_grid(
        PAIR["target"],
        PAIR["draft"],
        "L4-24GB",
        serving.chain_options(0.8, 6),
        serving.Lengths.fixed(4096),
        serving.Lengths.fixed(256),
        stack="vllm",
        efficiency=profiles.profile("vllm"),
        max_seqs=1024,
    )
    spec, plain = int(g.option_caps()[-1]), int(g.option_caps()[0])
    assert spec < plain
    assert any(
        f"at most {spec} sequences fit in a batch with the draft" in c.value and f"{plain} without" in c.value
        for c in at.caption
    ), [c.value for c in at.caption]


@pytest.mark.slow
def test_the_schedule_view_says_what_k_0_costs_where_the_schedule_turns_speculation_off():
    grid, _, _ = library_answer(gpu=SWITCHING_GPU)
    schedule = serving.k_by_batch(grid, serving.Lengths.fixed(256))
    at = open_app(PAGE, view="schedule", gpu=SWITCHING_GPU)
    said = [c.value for c in at.caption]
    vllm = configs.switching.SWITCHING["vLLM"]
    shown = any(c.startswith(vllm.while_off) for c in said)
    assert shown == configs.switching.switches_off(schedule["k"].tolist())
    assert shown  # the default pair on an A100 turns speculation off at large batches

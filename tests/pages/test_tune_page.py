"""The Tune page: the shipped example's answer, its reactions, a link that restores a tune's plan, bad input
named, hosted mode's refusal to start servers, and a tune run from the page against a real llama-server."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl

import pytest
from _apps import click, open_app, shown_errors
from _tune_points import two_contexts

from specviz.app.scenarios import tune as scenarios
from specviz.core import configs, serving, tuning
from specviz.data import store
from specviz.servers import tune

PAGE = "pages/tune.py"


def example_answer() -> tuning.Answer:
    return tuning.analyse(tune.read_points(scenarios.EXAMPLE))


def test_the_example_shows_the_librarys_best_k_per_load_and_each_stacks_schedule():
    at = open_app(PAGE)
    a = example_answer()
    assert [(m.label, int(m.value)) for m in at.metric] == [
        (f"best K at {c.concurrency} in flight", c.k) for c in a.choices
    ]
    codes = {c.language: c.value for c in at.code}  # bash / json blocks
    assert len(at.code) == 4 and not at.error
    vllm = json.loads(next(c.value for c in at.code if c.value.lstrip().startswith("{")))
    assert vllm["num_speculative_tokens_per_batch_size"][0][0] == 1
    sglang = next(
        c.value for c in at.code if "--speculative-adaptive" in c.value or "not expressible in SGLang" in c.value
    )
    assert json.loads(sglang.split("# adaptive.json:\n")[1]) == configs.sglang.adaptive_config(a.tiers)
    assert codes


def test_the_traffic_mix_and_the_algorithm_change_the_answer_and_live_in_the_link():
    at = open_app(PAGE)
    before = [m.value for m in at.markdown if "**Schedule**" in m.value]
    at.text_input(key="tune.mix").set_value("1: 1, 8: 0").run()
    after = [m.value for m in at.markdown if "**Schedule**" in m.value]
    assert before != after and at.query_params["mix"] == "1: 1, 8: 0"
    at.selectbox(key="tune.algorithm").set_value("EAGLE").run()
    assert any("--speculative-algorithm EAGLE " in c.value for c in at.code) or any(
        "not expressible in SGLang" in c.value for c in at.code
    )


def test_a_link_restores_a_local_tunes_plan(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    at = open_app(PAGE, source="local", name="night-run", ks="0,2,4", conc="1,4", requests="8", tokens="32")
    assert at.text_input(key="tune.name").value == "night-run"
    assert at.multiselect(key="tune.ks").value == [0, 2, 4] and at.multiselect(key="tune.conc").value == [1, 4]
    assert at.number_input(key="tune.requests").value == 8
    assert any("No points measured yet" in i.value for i in at.info)


def pareto_annotations(at) -> list[str]:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return [a.get("text", "") for fig in specs for a in fig["layout"].get("annotations", [])]


def test_the_cost_section_prices_every_load_at_the_catalogues_dated_price_with_iso_cost_lines():
    at = open_app(PAGE)
    found = serving.gpu_price("H100-SXM5-80GB")
    assert any(c.value.startswith(f"at USD {found[0]:.2f} per GPU-hour, the catalogue's price") for c in at.caption)
    frame = tuning.priced(example_answer().table, found[0], 1)
    best, _ = tuning.cheapest(frame, None)
    line = next(m.value for m in at.markdown if m.value.startswith("**Cheapest within the limit:**"))
    assert f"K = {int(best['k'])} at {int(best['concurrency'])} in flight, USD {best['usd_per_m']:.3g}" in line
    assert any(a.endswith("/ M tokens") for a in pareto_annotations(at))


def test_a_link_restores_price_gpus_and_a_tpot_limit_only_speculation_meets():
    at = open_app(PAGE, price="3.5", gpus="2", tpot="3")
    assert any(c.value == "at your price, USD 3.50 per GPU-hour" for c in at.caption)
    frame = tuning.priced(example_answer().table, 3.5, 2)
    best, plain = tuning.cheapest(frame, 0.003)
    assert plain is None and best is not None and best["k"] > 0  # the example's K = 0 TPOT is above 3 ms
    line = next(m.value for m in at.markdown if m.value.startswith("**Cheapest within the limit:**"))
    assert "Without speculation no load measured meets the limit." in line
    at.number_input(key="tune.tpot").set_value(0.0).run()
    assert at.query_params.get("tpot") in (None, "0", "0.0") and not at.error


def test_a_gpu_without_a_published_price_asks_for_one():
    at = open_app(PAGE, gpu="Xeon-E5-2683v4-DDR4-2133")
    assert any("No published rental price for Xeon-E5-2683v4-DDR4-2133" in i.value for i in at.info)
    assert not any(a.endswith("/ M tokens") for a in pareto_annotations(at))


@pytest.mark.parametrize(
    ("query", "said"),
    [
        (
            {"source": "local", "name": "../etc"},
            "Tune name must be letters, digits, '-', '_' or '.', not starting with '.'; got '../etc'",
        ),
        ({"mix": "1: lots"}, "Traffic mix: '1: lots' is not 'load: share'"),
        ({"mix": "3: 1"}, "Traffic mix: '3: 1' must name a measured load (1, 2, 4, 8)"),
    ],
)
def test_bad_input_is_named_not_a_traceback(query, said, tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    at = open_app(PAGE, **query)
    assert any(said in e for e in shown_errors(at)), shown_errors(at)


def test_a_link_with_an_impossible_gpu_count_or_tpot_limit_is_named_and_the_default_used():
    at = open_app(PAGE, gpus="0", tpot="-1")
    said = [w.value for w in at.warning]
    assert "Ignored URL parameter gpus='0': it must be an integer in [1, 64]. Using the default 1." in said
    assert "Ignored URL parameter tpot='-1': it must be a number in [0, 10000]. Using the default 0." in said
    assert not at.error


def test_hosted_mode_refuses_to_start_servers(monkeypatch, tmp_path):
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    monkeypatch.setenv("SPECVIZ_ENGINE_HOSTS", "gpu-node:8000")
    at = open_app(PAGE, source="local")
    assert any("Starting servers is off in hosted mode" in e for e in shown_errors(at))
    assert not [b for b in at.button if b.label == "Run tune"]


@pytest.mark.slow
def test_chinese(tmp_path, monkeypatch):
    at = open_app(PAGE, lang="zh")
    assert at.title[0].value == "调优" and not at.error


@pytest.mark.slow
@pytest.mark.llamacpp
def test_a_tune_run_from_the_page_measures_every_point_and_shows_its_answer(llama_binary, tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    at = open_app(PAGE, 600, source="local", name="t", ks="0,1", conc="1,2", requests="4", tokens="16")
    at = click(at, "Run tune")
    assert not at.error, shown_errors(at)
    assert len(tune.read_points(tmp_path / "t")) == 4
    assert [m.label for m in at.metric] == ["best K at 1 in flight", "best K at 2 in flight"]


def test_an_earlier_tune_is_compared_with_this_ones_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    at = open_app(PAGE, prior="example")
    points = tune.read_points(scenarios.EXAMPLE)
    shown = tuning.confirm(tuning.analyse(points), points)
    said = f"Median |predicted / measured − 1| of tokens/s: {shown['error'].abs().median():.1%}"
    assert any(said == c.value for c in at.caption), [c.value for c in at.caption]
    at = open_app(PAGE, prior="no-such-tune")
    assert any("no tune named 'no-such-tune' has points here" in e for e in shown_errors(at))


def test_a_remote_tune_is_priced_with_an_earlier_tunes_profile_and_says_what_to_measure_next(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    example = tune.read_points(scenarios.EXAMPLE)
    remote = [p for p in example if p["k"] == 4]  # a server at K = 4, as a remote tune measures it
    plan = tune.TunePlan("remote", (4,), (1, 2, 4, 8), requests=32, max_tokens=128, target="http://gpu:8000")
    tune.open_tune(tmp_path / "prod", plan)
    for p in remote:
        tune.append_point(tmp_path / "prod", p)
    at = open_app(PAGE, source="remote", name="prod", k="4", url="http://gpu:8000")
    assert any("name one above" in i.value for i in at.info) and at.error  # one K alone cannot be priced
    at = open_app(PAGE, source="remote", name="prod", k="4", url="http://gpu:8000", prior="example")
    assert not at.error, shown_errors(at)
    a = tuning.analyse(remote, tuning.analyse(example).profile)
    nxt = tuning.next_to_measure(a, 4)
    notes = [i.value for i in at.info if i.value.startswith("Worth measuring next")]
    assert len(notes) == len(nxt) and all(
        f"K = {k} at {n} in flight" in m for (n, k, _), m in zip(nxt, notes, strict=True)
    )


def test_every_way_a_sweep_can_end_early_is_said_in_words(tmp_path):
    """A sweep ends "done", "time" (its bound) or "stop": the page words the last two in both languages."""
    from specviz.base import i18n
    from specviz.servers.fetch import FetchPolicy

    p = tune.TunePlan("local", (0,), (1,), requests=1, max_tokens=2, minutes=1)
    _, why = tune.sweep(p, tmp_path, None, ["x"], FetchPolicy(), clock=iter([0.0, 61.0, 61.0]).__next__)
    assert why == "time" and set(scenarios.ENDED) == {"time", "stop"}
    assert all(i18n.text("zh", m) != m for m in scenarios.ENDED.values())


def write_points(folder, points) -> None:
    folder.mkdir(parents=True)
    (folder / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))


@pytest.mark.slow
def test_a_tune_over_prompt_lengths_shows_k_by_context_and_reads_the_chosen_one(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    points = two_contexts()
    write_points(tmp_path / "ctx", points)
    at = open_app(PAGE, source="local", name="ctx", ctx="2048")
    assert not at.error and any(h.value == "By prompt length" for h in at.subheader)
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    frame = tuning.k_by_context(points, tuning.analyse_by_context(points))
    assert heat["type"] == "heatmap" and heat["y"] == ["64", "2048"]
    assert heat["z"] == [
        [float(frame.set_index(["context", "concurrency"]).loc[(n, c), "k"]) for c in (1, 8)] for n in (64, 2048)
    ]
    long = tuning.analyse(tuning.at_context(points, 2048))
    assert [int(m.value) for m in at.metric] == [c.k for c in long.choices]
    at.number_input(key="tune.ctx").set_value(64).run()
    short = tuning.analyse(tuning.at_context(points, 64))
    assert [int(m.value) for m in at.metric] == [c.k for c in short.choices] and at.query_params["ctx"] == "64"
    at.number_input(key="tune.ctx").set_value(100).run()
    assert any("The tune has no prompt length 100: the answer below is for 64." in i.value for i in at.info)


@pytest.mark.slow
def test_capacity_gives_the_largest_batch_with_and_without_the_draft_and_says_when_loads_exceed_it(
    tmp_path, monkeypatch
):
    """Issue 58 §3: the memory plan of the named models at the tune's context (prompt + output tokens)."""
    from _tune_points import synthetic

    from specviz.core import hardware

    target, draft = "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-3B-Instruct"
    at = open_app(PAGE, target=target, draft=draft, gpu="L4-24GB")
    points = tune.read_points(scenarios.EXAMPLE)  # no prompt tokens counted: the prompts as given, plus the output
    context = scenarios.capacity_context(points)
    assert context == round(sum(p["output_tokens"] for p in points) / len(points))
    plan = hardware.memory_plan(target, draft, "L4-24GB", 8, context, 6)
    shown = {m.label: m.value for m in at.metric}
    assert shown[f"Largest batch at L = {context:,} with speculation (K = 6)"] == f"{plan.max_batch:,} sequences"
    assert shown["… without speculation"] == f"{plan.max_batch_plain:,} sequences"
    assert 8 < plan.max_batch < plan.max_batch_plain and not at.warning and not at.error
    monkeypatch.setenv(scenarios.ENV_DIR, str(tmp_path))
    write_points(tmp_path / "busy", synthetic(0.01, 0.2, 0.1, 32, range(0, 4)))  # 32 in flight: more than fit
    busy = open_app(PAGE, source="local", name="busy", target=target, draft=draft, gpu="L4-24GB")
    assert any(w.value.startswith("At 32 in flight the draft's weights and KV cache do not fit") for w in busy.warning)
    big = open_app(
        PAGE, target="meta-llama/Llama-3.1-8B-Instruct", draft="meta-llama/Llama-3.2-3B-Instruct", gpu="L4-24GB"
    )
    assert any("The draft's weights do not fit beside the target's on 1 × L4-24GB" in w.value for w in big.warning)
    none = open_app(PAGE)
    assert any("Name the models the server runs" in c.value for c in none.caption)


def test_the_measured_alpha_stands_beside_the_chosen_published_prior():
    """Issue 58 §5: once measured, the tune's α against the published α of a method and task domain."""
    from specviz.core import acceptance

    at = open_app(PAGE, published="eagle3/code")
    measured = tuning.acceptance_by_context(tune.read_points(scenarios.EXAMPLE)).iloc[0]
    prior = (
        acceptance.domain_priors(acceptance.load_reference()).set_index(["method", "domain"]).loc[("eagle3", "code")]
    )
    line = next(m.value for m in at.markdown if m.value.startswith("**Measured α"))
    assert f"**Measured α = {measured['alpha']:.3f}** (E[N] = {measured['mean_tokens']:.2f} at K = 6)" in line
    assert f"published for EAGLE3 · code: median α = {prior['alpha']:.3f}" in line and not at.error


def test_the_example_over_prompt_lengths_opens_on_its_k_map_and_acceptance_by_length():
    at = open_app(PAGE, source="lengths")
    points = tune.read_points(scenarios.EXAMPLES["lengths"])
    assert tuning.contexts(points) == [64, 192, 320] and not at.error
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert heat["type"] == "heatmap" and heat["y"] == ["64", "192", "320"] and heat["x"] == ["1", "4"]
    table = at.dataframe[0].value
    assert list(table.iloc[:, 1]) == [64, 192, 320]  # the prompt tokens the server counted: as asked
    assert any("The example over prompt lengths" in i.value for i in at.info)


def test_a_schedule_that_turns_speculation_off_says_what_each_stack_does_at_k_0_and_back_on():
    """The example's schedule is K = 6 at 1 in flight and 0 from 2 on: each stack that switches K by batch says
    what its K = 0 tier costs and what turning speculation back on costs, with the source it was read in."""
    at = open_app(PAGE)
    assert configs.switching.switches_off([c.k for c in example_answer().choices])
    said = [c.value for c in at.caption]
    for stack, sw in configs.switching.SWITCHING.items():
        assert any(c.startswith(sw.while_off) and sw.source in c for c in said), stack
    # vLLM and SGLang price their K = 0 tiers with one draft forward per step: T0 (1 + r) at each such load
    a = example_answer()
    r = {f.concurrency: f.per_token for f in a.fits}
    zero = [c for c in a.choices if c.k == 0]
    priced = [f"{c.concurrency} in flight: {c.without_s / (1 + r[c.concurrency]):,.0f} tokens/s" for c in zero]
    for stack in configs.switching.SWITCHING:
        note = next(c for c in said if c.startswith(configs.switching.SWITCHING[stack].while_off))
        assert all(p in note for p in priced) == (stack in configs.switching.WARM_AT_ZERO), stack
    assert not configs.switching.switches_off([3, 3, 2]) and not configs.switching.switches_off([0, 0])


SAVE = "Save the tune to the run library as “tune example”"


@pytest.mark.slow
def test_the_tune_is_saved_as_one_run_and_its_link_calibrates_an_engine_profile_from_it(db_url):
    at = click(open_app(PAGE), SAVE)
    (said,) = [s.value for s in at.success]
    assert said.startswith("Saved as run #1: [compare it](compare-runs?runs=1)")
    run = store.load_run(store.open_library(db_url), 1)
    points = [p for p in tune.read_points(scenarios.EXAMPLE) if p["k"] > 0]
    assert len(run) == len(points) and run["mean_accepted_tokens"].tolist() == pytest.approx(
        [p["mean_accepted"] for p in points]
    )
    query = dict(parse_qsl(re.search(r"\(validation\?([^)]*)\)", said).group(1)))
    assert query | {"r_gpu": "", "r_tp": ""} == {
        **{"view": "calibrate", "mine": "library", "run": "1", "r_method": "model", "r_gpu": "", "r_tp": ""},
        **{"r_target": "specviz/bundled-target", "r_draft": "specviz/bundled-draft"},
    }
    validation = open_app("pages/validation.py", **query)
    base, fitted = (float(m.value.rstrip("%")) for m in validation.metric[:2])
    assert not validation.error and fitted < base / 2  # the profile fitted to the tune prices it better


def test_a_visitor_who_may_not_save_is_told_so_and_offered_no_button(db_url, monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    at = open_app(PAGE)
    assert not [b for b in at.button if b.label == SAVE]
    assert any("run library is read-only" in i.value for i in at.info)

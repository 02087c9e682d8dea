"""specviz.app.scenarios: each page's scenario is frozen and hashable, and its cached functions are keyed by
its value (an equal scenario built anew hits the cache and gets the same result; another one does not)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from specviz.app import grids, overlays, profiles, ui
from specviz.app.scenarios import breakeven, converter, design, hardware, lab, monitor, serving, strategies, validation
from specviz.core import hardware as core_hardware
from specviz.core import policies, theory, trees
from specviz.core import serving as core_serving
from specviz.core import validation as core_validation
from specviz.engine import sampling


def hardware_scenario(**over) -> hardware.Scenario:
    fields = dict(
        target="meta-llama/Llama-3.1-8B-Instruct",
        draft="meta-llama/Llama-3.2-1B-Instruct",
        gpu=hardware.frozen(
            {"name": "custom", "memory_gb": 80.0, "bandwidth_tbs": 3.35, "bf16_tflops": 989.0}
            | {"fp16_tflops": 989.0, "fp8_tflops": 1978.0, "interconnect_gbs": 450.0}
        ),
        alpha=(0.9, 0.8, 0.7),
        ctx=2048,
        batch=1,
        k_max=4,
        dtype="bf16",
        tp_t=1,
        tp_d=1,
        profile=profiles.Profile.of("custom", "overhead_s=0.0005"),
    )
    return hardware.Scenario(**(fields | over))


def serving_scenario(**over) -> serving.Scenario:
    length = serving.LengthsSpec("fixed", 256, None, "tokens")
    replica = serving.Replica(
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "H100-SXM5-80GB",
        "bf16",
        profiles.Profile.of("vllm"),
        tp=1,
        max_seqs=64,
        alpha=0.8,
        k_max=3,
        tree=0,
        depth=4,
        lang="en",
        prompt=length,
        output=dataclasses.replace(length, lo=64),
        chunk=2048,
    )
    return serving.Scenario(dataclasses.replace(replica, **over), "open", (1.0, 4.0), 0.0, 2.0, 50.0, 10.0)


def strategies_scenario(**over) -> strategies.Scenario:
    pair = strategies.PairOnGpu(
        "lmsys/vicuna-7b-v1.3", "double7/vicuna-68m", "H100-SXM5-80GB", 1, 1024, profiles.Profile.of("sglang")
    )
    return strategies.Scenario(
        tree=strategies.Tree(tuple(trees.geometric_p(0.6, 4)), **({"budget": 8, "depth": 4} | over)),
        c=20.0,
        v=0.02,
        cost="gpu",
        pair=pair,
        trace_src="synthetic",
        trace=strategies.SyntheticTrace(0.8, 8, 500, 0, "calibrated"),
        rules=strategies.Rules(20, 0.4, 0.75, 0.7, 0.0, "llama.cpp p_min"),
        pol_cost="cv",
        ngram=strategies.NgramText("text", "abcabcabcabc", 150.0, 0.02),
        ng_k=4,
    )


def validation_scenario(**over) -> validation.Scenario:
    rows = validation.Published(**({"pred": "default", "stacks": ("vllm",), "sources": ()} | over))
    yours = validation.YourRows("none", 1, "t", "d", "H100-SXM5-80GB", "bf16", 1, 1024, "model")
    return validation.Scenario(rows, yours, "roofline")


def design_scenario(**over) -> design.Scenario:
    fields = dict(map="s_c", alpha=(0.0, 1.0), c_min=1.0, c_max=100.0, conv="c", k=4, k_max=16, c_fix=8.0, v=0.0, o=0.0)
    return design.Scenario("heatmap", design.Maps(**(fields | over)), design.Point(0.8, 10.0, "c", 4, 0.0, 0.0))


def breakeven_scenario(**over) -> breakeven.Scenario:
    axes = breakeven.Axes(**({"k_max": 32, "c_min": 0.5, "c_max": 100.0, "conv": "c", "v": 0.0, "o": 0.0} | over))
    return breakeven.Scenario(axes, (2.0, 4.0, 8.0), "kstar", 0.8, 10.0)


def lab_scenario(**over) -> lab.Scenario:
    p = lab.Builder("p", "zipf", 1.1, 0.5, 0, 1.0, "")
    q = lab.Builder("q", "tempered", 0.8, 0.5, 1, 1.5, "")
    rounds = lab.Rounds(**({"k": 4, "rounds": 2000, "seed": 0, "variant": "exact", "t_draft": 0.5} | over))
    return lab.Scenario(50, p, q, rounds)


def converter_scenario(**over) -> converter.Scenario:
    return converter.Scenario(**({"metric": "mean_tokens", "value": 2.5, "k": 4, "conv": "c", "ratio": 8.0} | over))


def monitor_scenario(**over) -> monitor.Scenario:
    fields = dict(src="typed", typed=8.0, pair=monitor.PAIRS.index[0], gpu="H100-SXM5-80GB", batch=1, ctx=2048)
    source = monitor.CSource(**(fields | over))
    return monitor.Scenario("http://127.0.0.1:8000 vllm", True, 2.0, 4, source, 1)


SCENARIOS = {
    "design": design_scenario,
    "breakeven": breakeven_scenario,
    "lab": lab_scenario,
    "converter": converter_scenario,
    "hardware": hardware_scenario,
    "serving": serving_scenario,
    "strategies": strategies_scenario,
    "validation": validation_scenario,
    "monitor": monitor_scenario,
}


@pytest.mark.parametrize("page", SCENARIOS)
def test_a_scenario_is_frozen_and_hashable_by_value(page):
    build = SCENARIOS[page]
    one, two = build(), build()
    assert one is not two and one == two and hash(one) == hash(two)
    assert len({one, two}) == 1
    field = dataclasses.fields(one)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(one, field, getattr(one, field))
    for part in (getattr(one, f.name) for f in dataclasses.fields(one)):  # the parts are frozen values too
        if dataclasses.is_dataclass(part):
            assert dataclasses.fields(part) and hash(part) is not None
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(part, dataclasses.fields(part)[0].name, None)


def counted(monkeypatch, module, name: str) -> list:
    """Every call of ``module.name`` from now on (the function still runs)."""
    calls: list = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def same(a, b) -> bool:
    if isinstance(a, pd.DataFrame):
        return a.equals(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) if not hasattr(a, "__array__") else bool((a == b).all())


def test_hardware_by_batch_is_keyed_by_the_scenario(monkeypatch):
    hardware.by_batch.clear()
    calls = counted(monkeypatch, core_hardware, "speedup_by_batch")
    first = hardware.by_batch(hardware_scenario())
    again = hardware.by_batch(hardware_scenario())
    assert same(first, again) and len(calls) == 1  # an equal scenario built anew: the cached result
    other = hardware.by_batch(hardware_scenario(profile=profiles.Profile.of("custom", "overhead_s=0.002")))
    assert len(calls) == 2 and not same(first, other)  # the profile's terms are part of the key
    assert hardware.Scenario.__hash__ is not None and hardware.thawed(hardware_scenario().gpu)["memory_gb"] == 80.0


def test_hardware_by_batch_and_context_is_keyed_by_the_scenario(monkeypatch):
    hardware.by_batch_and_context.clear()
    calls = counted(monkeypatch, core_hardware, "speedup_by_batch")
    first = hardware.by_batch_and_context(hardware_scenario(alpha=0.8))
    assert same(first, hardware.by_batch_and_context(hardware_scenario(alpha=0.8))) and len(calls) == 1
    hardware.by_batch_and_context(hardware_scenario(alpha=0.8, decay="1.5;0.2"))
    assert len(calls) == 2


@pytest.mark.slow
def test_serving_grid_is_keyed_by_the_replica(monkeypatch):
    serving.grid.clear()
    calls = counted(monkeypatch, core_serving, "cost_grid")
    first = serving.sweep(serving_scenario())
    again = serving.sweep(serving_scenario())
    assert same(first[2:], again[2:]) and len(calls) == 1
    serving.sweep(serving_scenario(max_seqs=32))
    assert len(calls) == 2


def test_strategies_cached_functions_are_keyed_by_their_part(monkeypatch):
    for fn in (strategies.table, strategies.shapes, strategies.level_costs, strategies.synthetic):
        fn.clear()
    calls = counted(monkeypatch, trees, "optimal_tree_table")
    s = strategies_scenario()
    assert same(strategies.table(s.tree), strategies.table(strategies_scenario().tree)) and len(calls) == 1
    strategies.table(strategies_scenario(depth=5).tree)
    assert len(calls) == 2
    assert same(strategies.best_tree(s)[2], strategies.best_tree(strategies_scenario())[2])
    traced = counted(monkeypatch, policies, "synthetic_trace")
    assert strategies.synthetic(s.trace).rounds == strategies.synthetic(strategies_scenario().trace).rounds == 500
    assert len(traced) == 1


@pytest.mark.slow
def test_validation_errors_are_keyed_by_the_published_part(monkeypatch):
    validation._errors.clear()
    calls = counted(monkeypatch, core_validation, "verdicts")
    first = validation.errors(validation_scenario().published)
    assert same(first, validation.errors(validation_scenario().published)) and len(calls) == 1
    validation.errors(validation_scenario(stacks=()).published)
    assert len(calls) == 2


def test_design_grid_is_keyed_by_the_maps(monkeypatch):
    design.grid.clear()
    calls = counted(monkeypatch, grids, "speedup_alpha_c_grid")
    first = design.grid(design_scenario().maps)
    assert same(first.z, design.grid(design_scenario().maps).z) and len(calls) == 1
    other = design.grid(design_scenario(k=8).maps)
    assert len(calls) == 2 and not same(first.z, other.z)
    got = design.inspect(design_scenario().point)
    assert got["e_n"] == pytest.approx(float(theory.expected_tokens(0.8, 4))) and got["best"].k >= 1


def test_breakeven_maps_are_keyed_by_the_axes(monkeypatch):
    for fn in (breakeven.frontier, breakeven.frontier_map, breakeven.optimum_maps):
        fn.clear()
    calls = counted(monkeypatch, grids, "optimal_k_grids")
    first = breakeven.optimum_maps(breakeven_scenario().axes)
    assert same(first[0].z, breakeven.optimum_maps(breakeven_scenario().axes)[0].z) and len(calls) == 1
    breakeven.optimum_maps(breakeven_scenario(v=0.1).axes)
    assert len(calls) == 2
    framed = counted(monkeypatch, grids, "break_even_grid")
    breakeven.frontier_map(breakeven_scenario().axes), breakeven.frontier_map(breakeven_scenario().axes)
    assert len(framed) == 1
    s = breakeven_scenario()
    assert breakeven.curves(dataclasses.replace(s, curves=(8.0, 2.0, 8.0))) == (2.0, 8.0)
    with pytest.raises(ValueError, match="frontier values must be numbers"):
        breakeven.curves(dataclasses.replace(s, curves=(None,)))


def test_lab_simulation_is_stored_by_its_inputs(monkeypatch):
    ui.shared_results.clear()  # a fresh store: no run of an earlier test
    calls = counted(monkeypatch, sampling, "simulate_rounds")
    p, q = lab.distributions(lab_scenario())
    first = lab.simulate(p, q, lab_scenario().rounds)
    again = lab.simulate(*lab.distributions(lab_scenario()), lab_scenario().rounds)
    assert same(first, again) and len(calls) == 1 and len(first[0]) == 2000
    lab.simulate(p, q, lab_scenario(seed=1).rounds)
    assert len(calls) == 2 and lab.simulated(p, q, lab_scenario(seed=2).rounds) is None


def test_converter_is_keyed_by_the_scenario(monkeypatch):
    converter.converted.clear()
    calls = counted(monkeypatch, theory, "convert_metric")
    first = converter.converted(converter_scenario())
    assert same(first, converter.converted(converter_scenario())) and len(calls) == 1
    assert float(first["mean_tokens"]) == pytest.approx(2.5)
    converter.converted(converter_scenario(value=3.0))
    assert len(calls) == 2
    assert converter.ratios(converter_scenario(conv="c_L", ratio=0.25)) == pytest.approx((4.0, 0.25))


def test_monitor_design_grid_is_keyed_by_the_assumed_c(monkeypatch):
    monitor.design_grid.clear()
    calls = counted(monkeypatch, overlays, "heatmap_grid")
    c, note, unmeasured = monitor.assumed_c(monitor_scenario(), None)
    assert (c, note, unmeasured) == (8.0, "c = 8 (typed)", False)
    first = monitor.design_grid(4, c)
    again = monitor.design_grid(monitor_scenario().k, monitor.assumed_c(monitor_scenario(), None)[0])
    assert same(first.z, again.z) and len(calls) == 1
    other = monitor.design_grid(4, monitor.assumed_c(monitor_scenario(typed=20.0), None)[0])
    assert len(calls) == 2 and other.z.shape == first.z.shape  # another c: a new grid (the same α-c window)
    assert not same(monitor.design_grid(8, c).z, first.z) and len(calls) == 3  # the server's K is in the key


def test_monitor_assumed_c_is_a_function_of_the_scenario_and_the_measured_c():
    s = monitor_scenario(src="hardware", ctx=1024)
    pair = monitor.PAIRS.iloc[0]
    costs = core_hardware.pair_costs(pair["target"], pair["draft"], "H100-SXM5-80GB", 1, 1024, s.k)
    c, note, unmeasured = monitor.assumed_c(s, 3.0)  # a measured c is not the roofline's
    assert c == pytest.approx(float(costs["c"])) and "roofline" in note and not unmeasured
    assert monitor.assumed_c(monitor_scenario(src="loadgen"), 3.25)[:2] == (
        3.25,
        "c = 3.25 measured by the load generator (draft-only ÷ target-only tokens/s)",
    )
    assert monitor.assumed_c(monitor_scenario(src="loadgen"), None) == (8.0, "c = 8 (typed)", True)
    defaults = monitor.scenario({p.key: p.default for p in monitor.SPEC})  # the page's view with no link
    assert defaults == dataclasses.replace(monitor_scenario(), endpoints="")

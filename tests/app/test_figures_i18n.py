"""Chart texts in English and Chinese: every figure builder of specviz.app.figures (hardware in specviz.app.figures.hardware)
takes ``lang`` and writes its own words (axis titles, legend and trace names, hover templates, annotations,
colour-bar and legend titles) from the catalogues (keys ``fig.*`` and ``hwfig.*``).

Checked: the default is English byte for byte; in Chinese no chart text is an English catalogue text with
words (nor one filled in); plotly's ``%{…}`` fields of every hover template survive translation; the words
the data brings (series labels) stay as given; every key the two modules ask for exists in both catalogues.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _tiers import first_quick

from specviz.app import figures, grids, overlays
from specviz.app.figures import hardware as hardware_figures
from specviz.base import catalogues, i18n
from specviz.core import hardware, theory
from specviz.data.measurements import SAMPLES_DIR, load_measurements

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "specviz" / "app" / "figures"
#: group -> the figure modules in it
MODULES = {
    "fig.": sorted(p for p in FIGURES.glob("*.py") if p.name != "hardware.py"),
    "hwfig.": [FIGURES / "hardware.py"],
}
CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"(?<![\w])[A-Za-z]{3,}(?![\w])")  # an English word (not α, K, E[N], c_L, T_draft)
FIELD = re.compile(r"%\{[^}]*\}")  # a plotly template field
NOT_WORDS = {"Leviathan", "FLOP", "byte", "tokens"}  # proper names and units (FLOP/byte, tokens/s)


# ------------------------------------------------------------------------------------------
# inputs: small, built the way the pages build them
# ------------------------------------------------------------------------------------------

ALPHA = np.linspace(0.0, 1.0, 21)
C = np.geomspace(0.5, 100.0, 13)
KS = np.arange(1, 9)


def _measured():
    name = "specviz_bench_bundled_cpu.csv"  # has cost columns, per-position acceptance and two temperatures
    frame, report = load_measurements((SAMPLES_DIR / name).read_bytes(), name)
    assert not report.row_errors
    points = overlays.with_series(frame)
    params = overlays.series_params(points)
    return points, params, overlays.curves(params)


POINTS, PARAMS, CURVES = _measured()
SPEEDUP = grids.speedup_alpha_c_grid(ALPHA, C, "c", 4, 0.0, 0.0)
BREAK_EVEN = grids.break_even_grid(KS, C, "c", 0.0, 0.0)
K_MAP, S_MAP = grids.optimal_k_grids(ALPHA, C, "c", 8, 0.0, 0.0)
P, Q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.5, 0.3])
KS_BY_RULE = {"rule one": np.array([1, 2, 3, 4]), "rule two": np.array([4, 4, 0, 1])}
STEP = hardware.step_breakdown("meta-llama/Llama-2-7b-hf", "A100-SXM4-80GB", 256, 128, 1, dtype="fp16")
PAIR = hardware.preset_pairs().iloc[0]
BATCHES = [1, 4, 16, 64, 256, 1024]
BY_BATCH = hardware.speedup_by_batch(PAIR.target, PAIR.draft, "H100-SXM5-80GB", 0.8, BATCHES, [512], 8).assign(
    v=np.linspace(0.1, 0.5, len(BATCHES))
)
BY_CONTEXT = hardware.speedup_by_batch(PAIR.target, PAIR.draft, "H100-SXM5-80GB", 0.8, BATCHES, [512, 32768], 8)
CALIBRATION = pd.DataFrame(
    dict(
        model=["m1", "m1", "m2"],
        batch=[1, 4, 1],
        tokens=[1, 2, 1],
        context=[8, 8, 8],
        measured_s=[0.01, 0.02, 0.03],
        predicted_s=[0.011, 0.018, 0.035],
    )
)

#: figure -> a builder taking the language's keyword arguments ({} for the default, {"lang": ...} else)
BUILDERS = {
    "grid_figure": lambda **kw: figures.grid_figure(SPEEDUP, break_even=True, title="a title", **kw),
    "grid_figure_c_L": lambda **kw: figures.grid_figure(
        grids.speedup_alpha_c_grid(ALPHA, 1.0 / C, "c_L", 4, 0.0, 0.0), break_even=True, **kw
    ),
    "grid_figure_surface": lambda **kw: figures.grid_figure(SPEEDUP, mode="surface", break_even=True, **kw),
    "grid_figure_expected_tokens": lambda **kw: figures.grid_figure(grids.expected_tokens_grid(ALPHA, KS), **kw),
    "grid_figure_s_at_k_star": lambda **kw: figures.grid_figure(S_MAP, break_even=True, **kw),
    "pmf_figure": lambda **kw: figures.pmf_figure(theory.accepted_length_pmf(0.8, 4), 3.36, **kw),
    "break_even_curves": lambda **kw: figures.break_even_curves(
        KS, {"c = 0.5": np.full(KS.size, np.nan), "c = 4": BREAK_EVEN.z[5]}, **kw
    ),
    "break_even_map": lambda **kw: figures.break_even_map(BREAK_EVEN, **kw),
    "optimal_k_map": lambda **kw: figures.optimal_k_map(K_MAP, **kw),
    "speedup_vs_k": lambda **kw: figures.speedup_vs_k(KS, KS / 3.0, 3, 2.0, **kw),
    "metrics_vs_alpha": lambda **kw: figures.metrics_vs_alpha(
        ALPHA, {"E[N]": 1 + ALPHA}, {"α": 0.5, "E[N]": 1.5}, **kw
    ),
    "distribution_bars": lambda **kw: figures.distribution_bars(P, Q, **kw),
    "n_histogram": lambda **kw: figures.n_histogram(np.array([5, 3, 2]), P, 10, **kw),
    "emitted_vs_target": lambda **kw: figures.emitted_vs_target(P, P, Q, **kw),
    "overlay_speedup_vs_k": lambda **kw: figures.overlay_speedup_vs_k(POINTS, CURVES, PARAMS, **kw),
    "overlay_alpha_c": lambda **kw: figures.overlay_alpha_c(SPEEDUP, POINTS, 4, **kw),
    "overlay_expected_tokens": lambda **kw: figures.overlay_expected_tokens(POINTS, CURVES, PARAMS, **kw),
    "parity": lambda **kw: figures.parity(POINTS, **kw),
    "per_position_figure": lambda **kw: figures.per_position_figure(overlays.per_position(POINTS), **kw),
    "cost_breakdown": lambda **kw: figures.cost_breakdown(["K = 2", "K = 4"], [1, 2], [3, 4], [0.1, 0.2], [3, 5], **kw),
    "speedup_by_batch_measured": lambda **kw: figures.speedup_by_batch_measured(
        pd.DataFrame(dict(batch_size=[1, 2, 1, 2], speedup=[2.0, 1.5, 1.8, 0.9], k=[2, 2, 4, 4], temperature=0.0)),
        **kw,
    ),
    "tree_figure": lambda **kw: figures.tree_figure([0, -1, 1], [0, -1, -1], [-1, 0, 0], [1, 0.6, 0.3], "012", **kw),
    "tokens_by_budget": lambda **kw: figures.tokens_by_budget(
        pd.DataFrame(dict(shape=["chain", "chain", "top-k"], budget=[1, 2, 2], expected_tokens=[1.5, 1.8, 2.0])), **kw
    ),
    "measured_vs_predicted": lambda **kw: figures.measured_vs_predicted(["a", "b"], [1, 2], [1.1, 1.9], "y", "F", **kw),
    "policy_bars": lambda **kw: figures.policy_bars(
        pd.DataFrame(
            dict(
                policy=["constant", "static", "oracle"],
                speedup=[1.5, 1.6, 2.0],
                kind=["rule", "best static K", "oracle"],
                tokens_per_round=[2.0, 2.1, 3.0],
                drafts_per_round=[4.0, 4.0, 3.0],
            )
        ),
        **kw,
    ),
    "k_over_rounds": lambda **kw: figures.k_over_rounds(KS_BY_RULE, **kw),
    "draft_length_histogram": lambda **kw: figures.draft_length_histogram(KS_BY_RULE, 4, **kw),
    "policy_sweep": lambda **kw: figures.policy_sweep(
        pd.DataFrame(dict(value=[0.1, 0.2], speedup=[1.2, 1.3])), "threshold", 1.4, 1.8, **kw
    ),
    "ngram_by_k": lambda **kw: figures.ngram_by_k(
        pd.DataFrame(dict(rule=["a", "a"], k=[1, 2], tokens_per_round=[1.2, 1.3], speedup=[1.1, 1.2])), **kw
    ),
    "acceptance_by_position": lambda **kw: figures.acceptance_by_position(
        np.array([0.8, 0.6]), np.array([0.8, 0.75]), **kw
    ),
    "stack_rates": lambda **kw: figures.stack_rates(
        pd.DataFrame(dict(time=[0, 1], drafted_per_s=[10, 12], accepted_per_s=[7, 8], mean_length=[2.0, 2.1])), **kw
    ),
    "roofline": lambda **kw: hardware_figures.roofline(STEP, *hardware.attainable("A100-SXM4-80GB", "fp16"), **kw),
    "step_split": lambda **kw: hardware_figures.step_split(STEP, **kw),
    "costs_by_batch": lambda **kw: hardware_figures.costs_by_batch(BY_BATCH, 8, **kw),
    "speedup_by_batch": lambda **kw: hardware_figures.speedup_by_batch(BY_BATCH, 8, **kw),
    "batch_context_map_k_star": lambda **kw: hardware_figures.batch_context_map(BY_CONTEXT, "k_star", **kw),
    "batch_context_map_speedup": lambda **kw: hardware_figures.batch_context_map(BY_CONTEXT, "speedup_at_k_star", **kw),
    "calibration_parity": lambda **kw: hardware_figures.calibration_parity(CALIBRATION, **kw),
}


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def chart_texts(fig) -> list[str]:
    """Every text the figure itself shows: trace names and hover templates, tick texts, colour-bar, axis
    and legend titles, annotations and the title (not per-point hover text, which the data brings)."""
    spec = json.loads(fig.to_json())
    out = []
    for trace in spec["data"]:
        out += [trace[k] for k in ("name", "hovertemplate") if isinstance(trace.get(k), str)]
        colorbar = trace.get("colorbar") or trace.get("marker", {}).get("colorbar") or {}
        out += [colorbar.get("title", {}).get("text")] + list(colorbar.get("ticktext") or [])
    layout = spec["layout"]
    axes = [layout[k] for k in layout if re.fullmatch(r"[xy]axis\d*", k)] + list(layout.get("scene", {}).values())
    out += [a.get("title", {}).get("text") for a in axes if isinstance(a, dict)]
    out += [a.get("text") for a in layout.get("annotations", [])]
    out += [layout.get("legend", {}).get("title", {}).get("text"), layout.get("title", {}).get("text")]
    return [s for s in out if s]


def segments(text: str) -> list[str]:
    """The parts of a chart text a person reads as one phrase: split at line breaks, without ``<extra>``."""
    text = re.sub(r"<extra>.*?</extra>", "", text)
    return [s for s in re.split(r"<br>", text) if s]


def has_words(text: str) -> bool:
    return any(w not in NOT_WORDS for w in WORD.findall(FIELD.sub(" ", text)))


def module_msgids(paths) -> set[str]:
    """The messages the figure modules ``paths`` ask for (as extraction reads them)."""
    out = set()
    for path in paths:
        with open(path, "rb") as f:
            for _, name, args, _ in catalogues.extract_python(f, catalogues.KEYWORDS, (), {}):
                if name == "C_":
                    out.add(i18n.C_(*args[:2]))
                else:
                    out |= {a for a in args if a}
    return out


def english_patterns() -> list[re.Pattern]:
    """Every English text of the figure modules that has words, as a pattern matching it with any fields filled."""
    out = []
    for template in module_msgids([p for paths in MODULES.values() for p in paths]):
        if has_words(re.sub(r"\{\w+\}", " ", template)):
            parts = re.split(r"\{\w+\}", template)
            out.append(re.compile("(?s)" + "(.*?)".join(re.escape(p) for p in parts)))
    return out


def hover_fields(fig) -> list[list[str]]:
    return [FIELD.findall(t.hovertemplate or "") for t in fig.data]


# ------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", sorted(MODULES))
def test_every_text_the_figure_modules_ask_for_is_translated(prefix):
    asked = module_msgids(MODULES[prefix])
    assert len(asked) > 10
    for msgid in asked:
        assert i18n.translated("zh", msgid), msgid
        if has_words(re.sub(r"\{\w+\}", " ", msgid)):
            zh = i18n.text("zh", msgid)
            assert CJK.search(zh) and zh != msgid, (msgid, zh)
    if prefix == "hwfig.":  # every operator step_breakdown draws has a name
        assert set(hardware.OPERATORS) | {"fixed overhead"} <= set(hardware_figures.OPERATOR_NAMES)


def test_axis_titles_keep_the_english_and_titles_stays_importable():
    assert figures.TITLES["alpha"] == "α (per-token acceptance)" and figures.TITLES["speedup"] == "speedup S"
    assert figures.TITLES["c"] == grids.C_CONVENTIONS["c"] and figures.TITLES["c_L"] == grids.C_CONVENTIONS["c_L"]
    assert {n: figures.axis_title(n) for n in figures.AXES} == figures.TITLES
    assert figures.axis_title("speedup", "zh") == "加速比 S"
    assert figures.axis_title("alpha", "zh") == "α（每个 token 的接受率）"
    assert figures.axis_title("expected_tokens", "zh") == "E[N]" and figures.axis_title("optimal_k", "zh") == "K*"
    with pytest.raises(KeyError, match="no axis title for 'tokens'"):
        figures.axis_title("tokens", "zh")
    with pytest.raises(ValueError, match="not one of en, zh"):
        figures.axis_title("k", "fr")


@pytest.mark.parametrize("name", first_quick(sorted(BUILDERS)))
def test_a_figure_is_english_by_default_and_chinese_with_lang_zh(name):
    build = BUILDERS[name]
    default, english, chinese = build(), build(lang="en"), build(lang="zh")
    assert default.to_json() == english.to_json()  # the default is English, byte for byte
    zh_texts = chart_texts(chinese)
    assert any(CJK.search(s) for s in zh_texts), zh_texts
    patterns = english_patterns()

    def english_in(texts):
        return [s for t in texts for s in segments(t) if any(p.fullmatch(s) for p in patterns)]

    assert english_in(chart_texts(english)), "the check finds the English texts of the English figure"
    assert not english_in(zh_texts), f"English chart texts in the Chinese figure: {english_in(zh_texts)}"
    assert hover_fields(chinese) == hover_fields(english)  # plotly's %{…} fields survive translation
    assert [len(t.x) if t.x is not None else None for t in chinese.data] == [
        len(t.x) if t.x is not None else None for t in english.data
    ]


def test_the_words_the_figures_add_are_chinese_and_the_datas_own_labels_stay():
    curves = BUILDERS["break_even_curves"](lang="zh")
    assert [t.name for t in curves.data] == ["c = 0.5（永不划算）", "c = 4"]
    assert curves.layout.legend.title.text == "速度比" and curves.layout.yaxis.title.text == "盈亏平衡 α*（S = 1）"
    assert curves.layout.xaxis.title.text == "K（草稿长度）"

    grid = BUILDERS["grid_figure"](lang="zh")
    assert grid.layout.xaxis.title.text == "α（每个 token 的接受率）" and grid.layout.title.text == "a title"
    assert grid.data[0].colorbar.title.text == "加速比 S" and grid.data[1].name == "S = 1（盈亏平衡）"
    assert grid.data[1].hovertemplate == "S = 1 处：α = %{x:.3f}，c = %{customdata:.3g}<extra></extra>"
    surface = BUILDERS["grid_figure_surface"](lang="zh").layout.scene
    assert (surface.xaxis.title.text, surface.zaxis.title.text) == ("α（每个 token 的接受率）", "加速比 S")

    be_map = BUILDERS["break_even_map"](lang="zh")
    assert "永不划算" in [t.name for t in be_map.data] and "永不划算" in [a.text for a in be_map.layout.annotations]
    k_map = BUILDERS["optimal_k_map"](lang="zh")
    assert k_map.data[0].colorbar.ticktext[0] == "不推测" and k_map.layout.annotations[0].text == "不推测"

    pmf = BUILDERS["pmf_figure"](lang="zh").layout
    assert (pmf.xaxis.title.text, pmf.yaxis.title.text) == ("N（一轮生成的 token 数）", "概率")
    bars = BUILDERS["distribution_bars"](lang="zh")
    assert [t.name for t in bars.data] == [
        "min(p, q) — 直接接受",
        "(p − q)⁺ — 残差，拒绝后从中重新采样",
        "p（目标模型）",
        "q（草稿模型）",
    ]
    assert BUILDERS["n_histogram"](lang="zh").data[0].name == "模拟"  # the default bars' name
    assert figures.n_histogram(np.array([1]), np.array([1.0]), 1, observed="gemessen", lang="zh").data[0].name == (
        "gemessen"  # the caller's name, as given
    )

    cost = BUILDERS["cost_breakdown"](lang="zh")
    assert cost.data[-1].name == "基本模型：T_p + K·T_q" and cost.layout.xaxis.title.text == "单元"
    assert cost.data[0].hovertemplate == "%{x}<br>草稿（K 步）：每轮 %{y:.3f} ms<extra></extra>"
    assert list(cost.data[-1].x) == ["K = 2", "K = 4"]

    rates = BUILDERS["stack_rates"](lang="zh").layout
    assert rates.yaxis2.title.text == "平均接受长度" and rates.yaxis.title.text == "tokens/s"  # a unit stays


def test_series_labels_stay_as_typed_and_only_the_added_words_change():
    english = {t.name for t in BUILDERS["overlay_speedup_vs_k"]().data if t.name}
    chinese = {t.name for t in BUILDERS["overlay_speedup_vs_k"](lang="zh").data if t.name}
    series = [figures.plotly_text(s) for s in PARAMS["series"]]
    for s in series:
        assert f"{s}: measured" in english and f"{s}：实测" in chinese
        assert f"{s}: basic model" in english and f"{s}：基本模型" in chinese
    assert any(name.endswith("：实测成本模型（v, o）") for name in chinese)
    expected = {t.name for t in BUILDERS["overlay_expected_tokens"](lang="zh").data if t.name}
    assert {f"{s}：该 α 下的 E[N]" for s in series} <= expected
    alpha_c = BUILDERS["overlay_alpha_c"](lang="zh")
    assert alpha_c.layout.title.text == "K = 4 时的 S(α, c) 与实测点"
    assert {"K = 4 时的实测点", "其他 K"} <= {t.name for t in alpha_c.data}
    assert {t.name for t in BUILDERS["parity"](lang="zh").data} >= {"基本模型", "实测成本模型", "y = x"}


def test_hardware_figures_in_chinese():
    roof = BUILDERS["roofline"](lang="zh")
    assert roof.data[0].name == "屋顶线" and {"访存受限", "计算受限"} <= {t.name for t in roof.data}
    assert (
        roof.layout.annotations[0].text.startswith("脊点 ")
        and roof.layout.xaxis.title.text == "算术强度（每字节 FLOP 数）"
    )
    assert "%{text}<br>算术强度 %{x:.3g} FLOP/byte<br>" in roof.data[1].hovertemplate
    assert (
        hardware_figures.bound_name("disk", "zh") == "disk 受限" and hardware_figures.bound_name("disk") == "disk-bound"
    )
    by_batch = BUILDERS["speedup_by_batch"](lang="zh").layout
    assert (by_batch.xaxis.title.text, by_batch.yaxis.title.text) == ("批大小 B", "加速比 S")
    assert next(a.text for a in by_batch.annotations if "B =" in a.text).endswith("起不再划算")
    k_star = BUILDERS["batch_context_map_k_star"](lang="zh")
    assert k_star.data[0].colorbar.ticktext[0] == "不推测" and k_star.layout.yaxis.title.text == "上下文长度 L"
    assert BUILDERS["batch_context_map_speedup"](lang="zh").data[0].colorbar.title.text == "K* 处的 S"
    assert BUILDERS["costs_by_batch"](lang="zh").data[1].name == "K = 8 时的 v"
    calibration = BUILDERS["calibration_parity"](lang="zh")
    assert calibration.data[0].name == "预测 = 实测" and calibration.data[1].name == "±25 %"
    assert calibration.data[3].hovertemplate.endswith("<br>实测 %{x:.3f} ms，预测 %{y:.3f} ms<extra></extra>")


def test_names_the_library_uses_as_identifiers_are_shown_in_chinese():
    from specviz.core import policies

    trace = policies.synthetic_trace(0.8, 4, 200, np.random.default_rng(0), "calibrated")
    frame = policies.compare(trace, [policies.constant(3), policies.hf_heuristic(20)], c=10.0)
    assert list(frame["policy"][:2]) == ["constant K = 3", "HF heuristic (start 20)"]  # English as strings
    bars = list(figures.policy_bars(frame, lang="zh").data[0].x)
    assert bars[:2] == ["固定 K = 3", "HF “heuristic”（起始 20）"] and "理想上限（oracle）" in bars
    shapes = pd.DataFrame({"budget": [1, 1], "shape": ["optimal tree", "my shape"], "expected_tokens": [1.5, 1.4]})
    assert [t.name for t in figures.tokens_by_budget(shapes, lang="zh").data] == ["最优树", "my shape"]
    names = hardware_figures.OPERATOR_NAMES
    assert i18n.name("zh", names, "attention") == "注意力" and i18n.name("zh", names, "custom op") == "custom op"

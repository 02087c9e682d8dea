"""Hostile links and widget input: every page survives any URL, and every list and view is capped.

Property tests (one per page, ``slow``): hypothesis builds query strings from the page's own control
names (read from its ``Param(...)`` calls with :mod:`ast`: pages are scripts, not importable) plus
junk names, with values at the float limits (1e308, 5e-324), non-finite and unparsable text, repeated
parameters, comma lists up to thousands of items, very long and unicode strings, and valid values
(every tab of a lazy ``view``). The page must never show an exception element.

Cap tests: a list parameter over its ``max_items`` is refused with a warning naming the parameter
and the cap, in a link (share.decode) and in a widget (ui.multiselect); an overlay over its row or
series budget is refused with a message naming the counts.
"""

from __future__ import annotations

import ast
from functools import cache

import pandas as pd
import pytest
from _apps import ROOT, open_app
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from specviz.app import grids, live, overlays, share
from specviz.core import hardware, theory
from specviz.data import measurements, store
from specviz.engine import sampling

PAGES = (
    "pages/home.py",
    "pages/design-space.py",
    "pages/break-even.py",
    "pages/sampling-lab.py",
    "pages/hardware.py",
    "pages/strategies.py",
    "pages/live.py",
    "pages/server-monitor.py",
    "pages/measured-data.py",
    "pages/converter.py",
)
#: Where a page's controls are declared, besides the page itself (the live page builds them in request.py;
#: the pages with a scenario in specviz/app/scenarios declare them beside it).
DECLARED_IN = {
    "pages/live.py": ("specviz/app/live/request.py",),
    "pages/hardware.py": ("specviz/app/scenarios/hardware.py",),
    "pages/strategies.py": ("specviz/app/scenarios/strategies.py",),
    "pages/design-space.py": ("specviz/app/scenarios/design.py",),
    "pages/break-even.py": ("specviz/app/scenarios/breakeven.py",),
    "pages/sampling-lab.py": ("specviz/app/scenarios/lab.py",),
    "pages/converter.py": ("specviz/app/scenarios/converter.py",),
    "pages/server-monitor.py": ("specviz/app/scenarios/monitor.py",),
    "pages/measured-data.py": ("specviz/app/measured/scenarios.py",),  # the old route of three pages
}
#: The script to run for a page, where it is not the page file: Home's links need the router around it.
SCRIPT = {"pages/home.py": "app.py"}
#: Valid values that pages take from specviz tables (not literals in a page), offered to every control.
TOKENS = tuple(
    dict.fromkeys(
        [
            *sampling.BUILDERS,
            *sampling.VARIANTS,
            *grids.C_CONVENTIONS,
            *theory.METRICS,
            *live.DTYPES,
            "bundled",
            *hardware.load_catalog()[1].index,
            *hardware.preset_pairs()["name"],
            *hardware.load_catalog()[0].index[-4:],
        ]
    )
)
#: Valid values kept small where a valid maximum is slow by design (5,000,000 lab rounds take ~10 s).
TAME = {"rounds": st.sampled_from(["1000", "5000"]), "v": st.sampled_from(["1", "2", "3", "100"])}

FLOAT_LIMITS = (
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e309",
    "5e-324",
    "-5e-324",
    "2.2250738585072014e-308",
    "0",
    "-0",
    "9" * 400,
)
NON_FINITE = ("nan", "NaN", "-nan", "inf", "-inf", "Infinity", "+inf")
ODD = (
    "",
    " ",
    ",",
    ",,,",
    "1,",
    ",1",
    "0x10",
    "1_000",
    "١٢٣",  # Arabic-Indic digits: float() reads 123
    "½",
    "α",
    "😀",
    "\u202e",
    "\x00",
    "<script>alert(1)</script>",
    "[x](javascript:alert(1))",
    "'; DROP TABLE runs; --",
)
JUNK_KEYS = ("", "x", "embed", "embed_options", "__proto__", "view[]", "ÿ", "a" * 300, "curves ", "RUNS")


# ----------------------------------------------------------------------------- controls, read with ast


def _literal(node: ast.AST | None):
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


@cache
def controls(page: str) -> dict[str, dict]:
    """``{key: {"kind", "lo", "hi", "choices"}}`` of every ``Param("key", ...)`` call declaring ``page``'s controls.

    Arguments that are not literals (``choices=tuple(sampling.BUILDERS)``, ``2**31 - 1``) read as None.
    """
    out = {}
    for path in (page, *DECLARED_IN.get(page, ())):
        for node in ast.walk(ast.parse((ROOT / path).read_text())):
            name = getattr(node.func, "id", None) if isinstance(node, ast.Call) else None
            if name is not None and name.endswith("_param") and node.args and _literal(node.args[0]):
                out[_literal(node.args[0])] = {"kind": "choice", "lo": None, "hi": None, "choices": ()}
                continue  # a helper building one choice control: prior_param("prior", label)
            if name != "Param" or _literal(node.args[0] if node.args else None) is None:
                continue  # a Param built inside such a helper has no literal key
            args = [*node.args, *[None] * 5][:5]  # key, default, kind, lo, hi
            kw = {k.arg: k.value for k in node.keywords}
            out[_literal(args[0])] = {
                "kind": _literal(kw.get("kind", args[2])) or "float",
                "lo": _literal(kw.get("lo", args[3])),
                "hi": _literal(kw.get("hi", args[4])),
                "choices": _literal(kw.get("choices")) or (),
            }
    return out


def test_controls_are_read_from_every_page():
    assert controls("pages/home.py") == {}
    measured = controls("pages/measured-data.py")
    assert measured["prior"]["kind"] == "choice" and None not in measured
    assert set(controls("pages/break-even.py")) >= {"curves", "k_max", "view"}
    assert controls("pages/break-even.py")["view"]["choices"] == ("frontier", "optimum", "chapter")
    assert set(controls("pages/live.py")) >= {"ks", "temps", "pair", "repeats"}
    assert controls("pages/sampling-lab.py")["p_vec"]["kind"] == "text"
    assert set(controls("pages/measured-data.py")) >= {"runs", "filter", "hk"}
    assert set(controls("pages/hardware.py")) >= {"gpu", "pair", "ctx", "batch", "alpha", "k_max", "view"}


# ----------------------------------------------------------------------------- strategies


def _number_list(n: int, item: str = "") -> str:
    return ",".join(item or str(i) for i in range(1, n + 1))


hostile_scalar = st.one_of(
    st.sampled_from(FLOAT_LIMITS + NON_FINITE + ODD),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.text(max_size=40),
    st.sampled_from(TOKENS),
)
hostile_list = st.one_of(
    st.lists(st.sampled_from(FLOAT_LIMITS + NON_FINITE), min_size=2, max_size=6).map(",".join),
    st.integers(2, 3000).map(_number_list),  # long comma lists: /break-even?curves=1,...,1500
    st.integers(2, 3000).map(lambda n: _number_list(n, "1e308")),
    st.integers(1000, 30_000).map(lambda n: "9" * n),  # very long strings
    st.integers(1, 3000).map(lambda n: "α😀" * n),
)


def _valid(info: dict) -> st.SearchStrategy[str]:
    """Values the control accepts, to reach the code behind it (every tab of a ``view``, the custom vector)."""
    lo, hi = info["lo"], info["hi"]
    if info["choices"]:
        return st.sampled_from([str(c) for c in info["choices"]])
    if info["kind"] == "float" and lo is not None and hi is not None:
        return st.floats(lo, hi).map(repr)
    if info["kind"] == "int" and lo is not None and hi is not None:
        return st.integers(int(lo), int(hi)).map(str)
    if info["kind"] == "bool":
        return st.sampled_from(["true", "false"])
    return st.sampled_from(TOKENS)


def _value(name: str, info: dict | None) -> st.SearchStrategy:
    options = [hostile_scalar, hostile_list]
    if info is not None:
        options += [TAME.get(name, _valid(info))] * 2  # half the draws reach past the URL checks
    one = st.one_of(*options)
    return st.one_of(one, st.lists(one, min_size=1, max_size=3))  # a list: the parameter repeated


def queries(page: str) -> st.SearchStrategy[dict]:
    """Query-parameter dicts for ``page``: some of its controls and junk keys, each with a hostile or valid value."""
    known = controls(page)
    names = st.sampled_from(sorted(known)) if known else st.nothing()
    junk = st.one_of(st.sampled_from(JUNK_KEYS), st.text(min_size=1, max_size=12))
    return st.dictionaries(st.one_of(names, names, junk), st.just(None), max_size=8).flatmap(
        lambda d: st.fixed_dictionaries({k: _value(k, known.get(k)) for k in d})
    )


# ----------------------------------------------------------------------------- the page runs


@pytest.fixture(scope="module")
def library_url(tmp_path_factory):
    """A run library (SPECVIZ_DB_URL) with runs 1..3, so links naming runs reach the overlays."""
    url = f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'library.sqlite'}"
    engine = store.open_library(url)
    good = (ROOT / "data" / "samples" / "specviz_bench_bundled_cpu.csv").read_bytes()
    for name, data in (("bench", good), ("one", b"label,k,alpha,c,speedup\none,4,0.8,20,2.2\n")):
        frame, report = measurements.load_measurements(data, name=name)
        store.save_run(engine, frame, label=name, source="test", report=report.summary())
    store.save_run(engine, frame, label="one again", source="test")
    engine.dispose()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(store.ENV_URL, url)
        for name in ("SPECVIZ_HOSTED", "SPECVIZ_HF_ALLOWLIST", "SPECVIZ_MAX_WALL_S", "SPECVIZ_MAX_NEW_TOKENS"):
            mp.delenv(name, raising=False)
        yield url


def run_page(page: str, query: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / SCRIPT.get(page, page)), default_timeout=120)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    return at


def no_exception(page: str, query: dict) -> None:
    at = run_page(page, query)
    shown = {k: (v if len(str(v)) < 80 else f"{str(v)[:80]}…") for k, v in query.items()}
    assert not at.exception, (shown, [e.value for e in at.exception])


HOSTILE = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/home.py"))
def test_home_survives_any_link(query, library_url):
    no_exception("pages/home.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/design-space.py"))
@example(query={"alpha": "5e-324,1e308", "c_min": "5e-324", "c_max": "1e308", "view": "3-D surface"})
def test_design_space_survives_any_link(query, library_url):
    no_exception("pages/design-space.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/break-even.py"))
@example(query={"curves": _number_list(1500), "view": "Break-even frontier"})
@example(query={"curves": "1e-3,1e4", "f_alpha": "5e-324", "f_c": "1e4", "view": "Optimal K"})
@example(query={"view": "Chapter numbers", "k_max": "nan"})
def test_break_even_survives_any_link(query, library_url):
    no_exception("pages/break-even.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/sampling-lab.py"))
@example(query={"p": "custom", "p_vec": "1e308,1e308,1e308", "v": "3"})
@example(query={"p": "custom", "p_vec": "1e308,1e308,1e308", "v": "3", "view": "Tokens per round"})
@example(query={"view": "Tokens per round", "v": "1000", "p": "uniform", "q": "uniform", "k": "1"})  # α overshot 1
@example(
    query={
        "p": "custom",
        "p_vec": "5e-324,5e-324",
        "q": "custom",
        "q_vec": "1e308,0",
        "v": "2",
        "view": "Emitted tokens",
    }
)
def test_sampling_lab_survives_any_link(query, library_url):
    no_exception("pages/sampling-lab.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/live.py"))
@example(query={"temps": ",".join(f"{i / 1000:g}" for i in range(1000)), "ks": _number_list(3000)})
def test_live_survives_any_link(query, library_url):
    no_exception("pages/live.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/measured-data.py"))
@example(query={"runs": "1,2,3", "hk": "64"})
@example(query={"runs": _number_list(3000), "filter": "\x00" * 200})
def test_measured_data_survives_any_link(query, library_url):
    no_exception("pages/measured-data.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/hardware.py"))
@example(query={"ctx": "131072", "batch": "512", "tp_t": "8", "k_max": "16", "view": "map"})
@example(query={"pair": "custom (choose target and draft)", "target": "specviz/bundled-target", "draft": "gpt2"})
def test_hardware_survives_any_link(query):
    no_exception("pages/hardware.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/strategies.py"))
@example(query={"p_src": "typed", "p": "0.9,0.9", "budget": "128", "depth": "16", "view": "shapes"})
@example(query={"p_src": "typed", "p": "nan,inf,-1", "view": "hardware"})
def test_strategies_survive_any_link(query):
    no_exception("pages/strategies.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/converter.py"))
@example(query={"metric": "acceptance_rate", "value": "5e-324", "k": "64", "ratio": "1e-3"})
def test_converter_survives_any_link(query, library_url):
    no_exception("pages/converter.py", query)


@pytest.mark.slow
@HOSTILE
@given(query=queries("pages/server-monitor.py"))
@example(query={"endpoints": "http://127.0.0.1:1\nfile:///etc/passwd\nhttp://[::1 x", "k": "64", "every": "60"})
@example(query={"c_src": "hardware", "batch": "512", "ctx": "131072", "detail": "16"})
@example(query={"endpoints": "\n".join(f"http://127.0.0.1:{p}" for p in range(1, 20))})
def test_server_monitor_survives_any_link(query, library_url):
    no_exception("pages/server-monitor.py", query)


# ----------------------------------------------------------------------------- list caps: links and widgets


def _warned(at: AppTest, *words: str) -> bool:
    return any(all(w in x.value for w in words) for x in at.warning)


def test_break_even_refuses_a_link_with_more_curves_than_the_cap():
    """/break-even?curves= with 1,500 values drew 1,500 curves (18–25 s); now: the default curves and a warning."""
    at = open_app("pages/break-even.py", curves=_number_list(1500))
    assert _warned(at, "Ignored URL parameter curves=", "at most 16 comma-separated numbers")
    assert at.multiselect(key="breakeven.curves").value == [2.0, 4.0, 8.0, 16.0, 32.0]
    assert at.multiselect(key="breakeven.curves").proto.max_selections == 16
    assert "curves" not in at.query_params  # the link now shows the default


@pytest.mark.slow
def test_break_even_widget_keeps_at_most_the_cap_and_drops_typed_junk():
    at = open_app("pages/break-even.py")
    box = at.multiselect(key="breakeven.curves")
    box.set_value([str(x) for x in range(1, 18)]).run()  # one more than the UI allows (a hand-made request)
    assert not at.exception
    assert at.multiselect(key="breakeven.curves").value == [float(x) for x in range(1, 17)]
    assert _warned(at, "Kept the first 16 of 17 curves values", "at most 16")
    at.multiselect(key="breakeven.curves").set_value(["2", "abc", "nan", "1e308", "-5"]).run()
    assert not at.exception  # "abc" reached the URL encoder and raised there
    assert at.multiselect(key="breakeven.curves").value == [2.0]
    assert _warned(at, "Ignored curves value(s) 'abc', 'nan', '1e308', '-5'", "a number in [0.001, 10000]")
    assert at.query_params["curves"] == "2"


def test_live_lists_are_capped_in_links_and_widgets(library_url):
    temps = ",".join(f"{i / 100:g}" for i in range(17))
    at = open_app("pages/live.py", timeout=120, temps=temps)
    assert _warned(at, "Ignored URL parameter temps=", "at most 16 comma-separated numbers")
    assert at.multiselect(key="live.temps").value == [0.0, 1.0]
    assert at.multiselect(key="live.temps").proto.max_selections == 16
    assert at.multiselect(key="live.ks").proto.max_selections == 16


@pytest.mark.slow
def test_measured_runs_are_capped_in_links_and_widgets(library_url):
    at = open_app("pages/measured-data.py", runs=_number_list(65))
    assert _warned(at, "Ignored URL parameter runs=", "at most 64 comma-separated integers")
    assert at.multiselect(key="measured.runs").value == []
    assert at.multiselect(key="measured.runs").proto.max_selections == 64
    at = open_app("pages/measured-data.py", runs="1,2,3")
    assert at.multiselect(key="measured.runs").value == [1, 2, 3]
    assert at.get("plotly_chart")  # within the budget: the overlays are drawn


# ----------------------------------------------------------------------------- the overlay budget


def _rows(n_series: int, n_k: int) -> pd.DataFrame:
    text = "label,k,alpha,c,speedup\n" + "".join(
        f"s{i},{k},0.7,10,1.5\n" for i in range(n_series) for k in range(1, n_k + 1)
    )
    frame, report = measurements.load_measurements(text.encode(), name="many.csv")
    assert not report.row_errors
    return frame


@pytest.mark.slow
def test_overlays_refuse_more_rows_than_the_budget_naming_the_counts():
    overlays.with_series(_rows(1, overlays.MAX_ROWS))  # at the cap: fine
    with pytest.raises(ValueError, match=r"^measurements to overlay: 5,001 rows; at most 5,000 per view: select"):
        overlays.with_series(_rows(1, overlays.MAX_ROWS + 1))


def test_overlays_refuse_more_series_than_the_budget_naming_the_counts():
    assert overlays.with_series(_rows(overlays.MAX_SERIES, 1))["series"].nunique() == overlays.MAX_SERIES
    with pytest.raises(ValueError, match=r"^measurements to overlay: 65 series; at most 64 per view: select"):
        overlays.with_series(_rows(overlays.MAX_SERIES + 1, 1))


def test_measured_page_shows_the_overlay_budget_as_an_error(library_url, monkeypatch):
    monkeypatch.setattr(overlays, "MAX_ROWS", 2)  # the bundled sample run has more rows than that
    at = open_app("pages/measured-data.py", runs="1")
    assert any("measurements to overlay" in e.value and "at most 2 per view" in e.value for e in at.error)
    assert not at.get("plotly_chart")


def test_list_caps_are_the_params_max_items():
    """One rule: the live controls' caps are Param.max_items, as decode and ui.multiselect use them."""
    p = share.by_key(live.controls(live.Limits()))
    assert (p["ks"].max_items, p["temps"].max_items) == (16, 16)
    assert share.clean_list(p["ks"], [3, "3", 3.0, "17", "x"]) == (
        [3],
        "Ignored ks value(s) '17', 'x': each must be an integer in [1, 16].",
    )
    assert share.clean_list(p["temps"], [0.5, 0]) == ([0.0, 0.5], None)
    values = share.clean_list(p["temps"], [i / 100 for i in range(20)])
    assert values[0] == [i / 100 for i in range(16)] and values[1].startswith("Kept the first 16 of 20 temps values")


def test_pages_declare_their_list_caps():
    """Every list control of a page has a cap (explicit or the default), so no link lists without bound."""
    for page in PAGES:
        for name, info in controls(page).items():
            if info["kind"] in ("floats", "ints"):
                # trash_pick: the trash's own multiselect, never read from a link, capped by its Param
                assert name in {"curves", "runs", "ks", "temps", "batches", "trash_pick"}, (
                    f"{page}: new list control {name}: test its cap"
                )

"""AppTest for every page: renders, reacts to widgets, restores from the URL, never raises."""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import parse_qsl

import pandas as pd
import pytest
from _apps import shown_errors
from streamlit.testing.v1 import AppTest

from specviz.app import ui
from specviz.core import chapter

TIMEOUT = 60
ROOT = Path(__file__).resolve().parents[2]


def run(path: str, **query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


# ----------------------------------------------------------------------------- router + home


def test_every_page_is_named_by_its_url_path_and_hands_over_to_the_router():
    """A freshly started server runs pages/ as a legacy folder app for its first request: a shared link
    finds its page file only if the file is named by the URL path, and the page must hand the run to
    the router (tests/browser/test_browser.py opens a deep link first on a fresh server)."""
    from specviz.app.router import PAGES

    routes = [(r.name, r.url_path or r.name) for r in PAGES]
    # Home, the default page, is served at "/" and, through a hidden page, at "/home" (its file's name)
    routed = {name: url for name, url in routes if url != "main"}
    assert len(routed) == 17 and all(name == url for name, url in routed.items()), routes
    assert ("home", "main") in routes and any(r.url_path == "home" and r.hidden for r in PAGES)
    assert {p.stem for p in (ROOT / "pages").glob("*.py")} == set(routed)
    for name in routed:
        lines = (ROOT / "pages" / f"{name}.py").read_text(encoding="utf-8").splitlines()
        first_call = next(line for line in lines if line and not line.startswith(("import", "from", '"""', " ", "#")))
        assert first_call.startswith("router.enter(__file__)"), (name, first_call)


def test_router_renders_home_with_links_to_every_page():
    at = run("app.py")
    assert any("Tokens per round" in s.value for s in at.subheader)
    assert len(at.latex) == 2  # E[N] and the speedup
    assert "specviz" in at.title[0].value
    assert [link.page for link in at.page_link] == [
        "design-space",
        "break-even",
        "sampling-lab",
        "hardware",
        "validation",
        "strategies",
        "live",
        "server-monitor",
        "tune",
        "run-library",
        "compare-runs",
        "published-acceptance",
        "converter",
    ]


@pytest.mark.parametrize(
    "page",
    [
        "pages/design-space.py",
        "pages/break-even.py",
        "pages/sampling-lab.py",
        "pages/converter.py",
        "pages/hardware.py",
    ],
)
def test_router_switches_to_each_page(page):
    at = run("app.py")
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value  # the page's own title rendered


# ----------------------------------------------------------------------------- design space


INSPECT = {"tab": "inspector"}


def test_design_space_defaults_show_chapter_point():
    at = run("pages/design-space.py", **INSPECT)
    m = metrics(at)
    # inspector defaults: α = 0.8, c = 10, K = 4 -> chapter table 5.3 first row
    assert m["E[N] tokens per round"] == "3.3616"
    assert m["Speedup S"] == "2.4011×"
    assert m["Optimal K (1..64)"] == "6"
    assert [c.key for c in at.get("plotly_chart")] == ["fig_pmf"]  # lazy tabs: only the open tab is sent
    assert at.query_params["tab"] == "inspector"
    # the maps tab (the default): the chosen map only; the other maps are drawn when chosen
    assert [c.key for c in run("pages/design-space.py").get("plotly_chart")] == ["fig_s_c"]


def test_design_space_draws_the_chosen_map_and_mirrors_it_in_the_url():
    at = run("pages/design-space.py", map="E[N] over (α, K)")  # a link from before the slugs
    assert [c.key for c in at.get("plotly_chart")] == ["fig_en"]
    assert at.query_params["map"] == "en"
    at.session_state["design.map"] = "s_k"  # as choosing it does
    at.run()
    assert [c.key for c in at.get("plotly_chart")] == ["fig_s_k"]
    assert at.query_params["map"] == "s_k"
    at.session_state["design.map"] = "s_c"  # the default map: not in the URL
    at.run()
    assert "map" not in at.query_params


def test_design_space_reacts_to_widgets_and_mirrors_url():
    at = run("pages/design-space.py", **INSPECT)
    before = metrics(at)
    at.number_input(key="design.i_alpha").set_value(0.5).run()
    after = metrics(at)
    assert after["E[N] tokens per round"] == "1.9375"
    assert after["Speedup S"] != before["Speedup S"]
    assert at.query_params["i_alpha"] == "0.5"
    at.slider(key="design.k").set_value(12).run()
    assert at.query_params["k"] == "12"


def test_design_space_restores_from_query_params():
    query = dict(i_alpha="0.9", i_c="10", i_k="8", view="surface", alpha="0.2,0.9", k="7")
    at = run("pages/design-space.py", **query, **INSPECT)
    assert not at.warning
    assert at.number_input(key="design.i_alpha").value == 0.9
    assert at.number_input(key="design.i_k").value == 8
    assert at.radio(key="design.view").value == "surface"
    assert at.slider(key="design.alpha").value == (0.2, 0.9)
    assert at.slider(key="design.k").value == 7
    assert metrics(at)["Speedup S"] == "3.4032×"  # chapter table 5.3: α = 0.9, c = 10, K = 8


@pytest.mark.parametrize(
    "name, value",
    [("i_alpha", "7"), ("k", "2.5"), ("view", "pie"), ("alpha", "0.9,0.1"), ("c_min", "abc"), ("v", "-1")],
)
def test_design_space_bad_query_param_warns_and_falls_back(name, value):
    at = run("pages/design-space.py", **{name: value}, **INSPECT)
    assert any(name in w.value and value in w.value for w in at.warning), [w.value for w in at.warning]
    assert metrics(at)["E[N] tokens per round"]  # page still rendered


def test_design_space_bad_input_shows_error_not_traceback():
    at = run("pages/design-space.py")
    at.number_input(key="design.c_min").set_value(500.0).run()
    assert not at.exception
    assert any("c min must be below c max" in e.value for e in at.error), [e.value for e in at.error]


def test_design_space_convention_flip_keeps_the_ratio():
    at = run("pages/design-space.py", **INSPECT)
    s_before = metrics(at)["Speedup S"]
    at.radio(key="design.conv").set_value("c_L").run()
    assert at.number_input(key="design.i_c").value == pytest.approx(0.1)
    assert at.number_input(key="design.c_min").value == pytest.approx(0.01)
    assert at.number_input(key="design.c_max").value == pytest.approx(1.0)
    assert metrics(at)["Speedup S"] == s_before


def test_design_space_share_link_reproduces_view():
    at = run("pages/design-space.py", **INSPECT)
    assert not at.code  # the link is drawn once "Share this view" is opened
    at.number_input(key="design.i_k").set_value(8).run()
    at.session_state[ui.share_key("design")] = True  # as opening the expander does
    at.run()
    link = at.code[-1].value
    assert link.startswith("/design-space?") and "i_k=8" in link
    query = dict(parse_qsl(link.split("?", 1)[1]))
    again = run("pages/design-space.py", **query)
    assert metrics(again) == metrics(at)


def test_design_space_inspector_values_survive_a_visit_to_the_maps_tab():
    at = run("pages/design-space.py", **INSPECT)
    at.number_input(key="design.i_alpha").set_value(0.5).run()
    at.session_state["design.tab"] = "maps"  # what clicking the tab does: the inspector's widgets are not drawn
    at.run()
    assert at.query_params["i_alpha"] == "0.5" and [c.key for c in at.get("plotly_chart")] == ["fig_s_c"]
    at.session_state["design.tab"] = "inspector"
    at.run()
    assert at.number_input(key="design.i_alpha").value == 0.5
    assert metrics(at)["E[N] tokens per round"] == "1.9375"


# ----------------------------------------------------------------------------- break-even


def test_break_even_renders_chapter_tables_all_matching():
    at = run("pages/break-even.py", view="Chapter numbers")
    tables = [m.value for m in at.markdown if m.value.startswith("| ")]
    assert [t.splitlines()[0] for t in tables] == [
        ui.markdown_table(table).splitlines()[0]
        for table in (chapter.table_4_4(), chapter.exercise_2(), chapter.table_5_3())
    ]
    rows = [line for t in tables for line in t.splitlines()[2:]]
    assert len(rows) == 10 + 3 + 5 and all(line.endswith("| yes |") for line in rows)  # every printed value matches
    assert "| 0.8 | 10 | 4 | 3.36 | 3.3616 | 2.40 | 2.4011 | yes |" in tables[2]
    assert not at.get("plotly_chart")  # lazy tabs: only the open tab's content is sent


def test_break_even_draws_only_the_open_tab_and_mirrors_it_in_the_url():
    at = run("pages/break-even.py")
    assert [c.key for c in at.get("plotly_chart")] == ["fig_curves", "fig_be_map"]
    assert "view" not in at.query_params  # the default tab
    at.session_state["breakeven.view"] = "optimum"  # what clicking the tab does
    at.run()
    assert [c.key for c in at.get("plotly_chart")] == ["fig_kstar", "fig_fk"]
    assert at.query_params["view"] == "optimum"
    assert metrics(at)["Optimal K"] == "6"  # α = 0.8, c = 10


def test_break_even_draws_the_chosen_optimum_map_and_mirrors_it_in_the_url():
    at = run("pages/break-even.py", view="Optimal K")
    assert [c.key for c in at.get("plotly_chart")] == ["fig_kstar", "fig_fk"]
    again = run("pages/break-even.py", view="Optimal K", opt_map="Speedup at K*")
    assert [c.key for c in again.get("plotly_chart")] == ["fig_sstar", "fig_fk"]
    assert again.query_params["opt_map"] == "speedup"
    at.radio(key="breakeven.opt_map").set_value("speedup").run()
    assert [c.key for c in at.get("plotly_chart")] == ["fig_sstar", "fig_fk"]
    assert at.query_params["opt_map"] == "speedup"


@pytest.mark.slow
def test_break_even_reacts_and_restores():
    at = run("pages/break-even.py", view="Optimal K")
    at.number_input(key="breakeven.f_alpha").set_value(0.1).run()
    assert metrics(at)["Optimal K"] == "don't speculate"
    assert at.query_params["f_alpha"] == "0.1"
    again = run("pages/break-even.py", view="Optimal K", f_alpha="0.95", f_c="30", k_max="40")
    assert again.slider(key="breakeven.k_max").value == 40
    assert int(metrics(again)["Optimal K"]) > 6


def test_break_even_frontier_values_from_url():
    at = run("pages/break-even.py", curves="1,8")
    assert at.multiselect(key="breakeven.curves").value == [1.0, 8.0]
    fig = at.get("plotly_chart")[0].proto.spec
    assert "c = 1 (never pays off)" in fig and "c = 8" in fig


def test_break_even_bad_query_param_and_bad_input():
    at = run("pages/break-even.py", k_max="1000", curves="x,y")
    assert any("k_max" in w.value for w in at.warning)
    assert any("curves" in w.value for w in at.warning)
    at.number_input(key="breakeven.c_max").set_value(0.5).run()
    assert any("c min must be below c max" in e.value for e in at.error)


# ----------------------------------------------------------------------------- converter


def test_converter_defaults_and_widgets():
    at = run("pages/converter.py")
    m = metrics(at)
    assert m["draft acceptance rate"] == "0.3750" and m["system efficiency"] == "0.5000"
    at.selectbox(key="converter.metric").set_value("acceptance_rate").run()
    at.number_input(key="converter.value").set_value(1.0).run()
    m = metrics(at)
    assert m["α"] == "1.0000" and m["mean acceptance length"] == "5.0000"
    assert at.query_params["metric"] == "acceptance_rate"


def test_converter_restores_from_query_params():
    at = run("pages/converter.py", metric="alpha", value="0.8", k="4", conv="c_L", ratio="0.125")
    m = metrics(at)
    assert m["mean acceptance length"] == "3.3616"
    assert m["c = T_target / T_draft (specviz)"] == "8"
    assert at.selectbox(key="converter.metric").value == "alpha"


def test_converter_out_of_range_value_is_an_error_naming_the_range():
    at = run("pages/converter.py", metric="mean_tokens", value="6", k="4")
    assert any("mean_tokens must be in [1, K + 1]; got 6" in e for e in shown_errors(at)), shown_errors(at)
    assert any(m.value.startswith("| serving stack | name |") for m in at.markdown)  # the glossary still renders


def test_converter_bad_query_param_warns():
    at = run("pages/converter.py", metric="tau", k="0")
    assert any("metric" in w.value for w in at.warning)
    assert any("k=" in w.value for w in at.warning)
    assert not math.isnan(float(metrics(at)["α"]))


# ----------------------------------------------------------------------------- rejection-sampling lab


def test_lab_defaults_match_formula_and_are_lossless():
    at = run("pages/sampling-lab.py")
    m = metrics(at)
    assert m["α = Σ min(p, q)"] == m["1 − TV"]
    assert [c.key for c in at.get("plotly_chart")] == ["fig_bars"]  # lazy tabs: one chart, no simulation
    tokens = run("pages/sampling-lab.py", view="tokens")
    assert metrics(tokens)["formula inside the 95 % CI"] == "yes"
    assert [c.key for c in tokens.get("plotly_chart")] == ["fig_hist"]
    emitted = run("pages/sampling-lab.py", view="emitted")
    assert emitted.success and emitted.success[0].value.startswith("consistent with p")
    assert [c.key for c in emitted.get("plotly_chart")] == ["fig_emitted"]


def test_lab_switching_tabs_shows_each_claim_and_mirrors_it_in_the_url():
    at = run("pages/sampling-lab.py")
    assert "view" not in at.query_params and "simulated mean N" not in metrics(at)
    at.session_state["lab.view"] = "tokens"  # what clicking the tab does
    at.run()
    assert metrics(at)["formula inside the 95 % CI"] == "yes" and at.query_params["view"] == "tokens"
    at.session_state["lab.view"] = "emitted"
    at.run()
    assert at.success and at.query_params["view"] == "emitted"


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["accept_first", "resample_p", "temperature_mismatch"])
def test_lab_buggy_variants_are_flagged_and_explained(variant):
    at = run("pages/sampling-lab.py", view="emitted")
    at.selectbox(key="lab.variant").set_value(variant).run()
    assert not at.success
    assert any(w.value.startswith("biased") for w in at.warning), [w.value for w in at.warning]
    assert any("What this variant does" in i.value for i in at.info)
    assert at.query_params["variant"] == variant


@pytest.mark.slow
def test_lab_reacts_to_k_and_restores_from_url():
    at = run("pages/sampling-lab.py", view="tokens")
    before = metrics(at)["formula E[N]"]
    at.slider(key="lab.k").set_value(8).run()
    assert metrics(at)["formula E[N]"] != before
    assert at.query_params["k"] == "8"
    query = dict(k="8", p="uniform", q="tempered", q_tau="2", rounds="20000", seed="7")
    again = run("pages/sampling-lab.py", **query, view="tokens")
    assert again.slider(key="lab.k").value == 8
    assert again.selectbox(key="lab.q").value == "tempered"
    assert again.number_input(key="lab.rounds").value == 20000
    assert metrics(again)["simulated mean N"].startswith("9.0000")
    assert metrics(run("pages/sampling-lab.py", **query))["α = Σ min(p, q)"] == "1.0000"  # uniform at any τ


@pytest.mark.parametrize(
    "vector, message",
    [
        ("1,2,-3", "p: entry 3 is -3.0; every entry must be >= 0"),
        ("0,0,0", "p: all entries are zero"),
        ("1,nan,1", "p: entry 2 is nan"),
        ("1,2", "p: has 2 entries but V = 3"),
        ("1,x,2", "p: entry 2 is 'x', not a number"),
    ],
)
def test_lab_invalid_user_vector_is_a_clear_error(vector, message):
    at = run("pages/sampling-lab.py", v="3", p="custom", p_vec=vector)
    assert any(message in e for e in shown_errors(at)), shown_errors(at)
    assert not at.get("plotly_chart")


def test_lab_user_vector_runs():
    query = dict(v="3", p="custom", p_vec="1,1,2", q="uniform", rounds="20000")
    assert metrics(run("pages/sampling-lab.py", **query))["α = Σ min(p, q)"] == "0.8333"
    assert run("pages/sampling-lab.py", **query, view="emitted").success


def test_lab_bad_query_param_warns():
    at = run("pages/sampling-lab.py", variant="typo", k="99", view="emitted")
    assert any("variant" in w.value for w in at.warning) and any("k=" in w.value for w in at.warning)
    assert at.success  # fell back to the exact rule


def test_lab_uploaded_csv_is_used_and_bad_file_is_an_error():
    sample = (ROOT / "data" / "samples" / "distribution_example.csv").read_bytes()
    at = run("pages/sampling-lab.py", v="20", p="custom", q="uniform", rounds="20000")
    assert any("p: no numbers found" in e.value for e in at.error)  # nothing entered yet
    at.file_uploader(key="lab.p_file").upload("p.csv", sample, "text/csv").run()
    assert not at.error and not at.exception
    assert metrics(at)["α = Σ min(p, q)"] == "0.5374"  # Σ min(Zipf(1.2) weights, 1/20)
    at.file_uploader(key="lab.p_file").upload("p.csv", b"p\n1\n-2\n", "text/csv").run()
    assert any("p: entry 2 is -2.0" in e.value for e in at.error), [e.value for e in at.error]


def test_markdown_table_shows_every_cell_as_written():
    frame = pd.DataFrame({"a|b": ["x|y", "*z*_"], "n": [1.23456, float("nan")], "ok": [True, False]})
    assert ui.markdown_table(frame, {"n": ".2f"}).splitlines() == [
        r"| a\|b | n | ok |",
        "|---|---:|---|",  # numbers right-aligned
        r"| x\|y | 1.23 | yes |",
        r"| \*z\*\_ | — | no |",  # a missing value reads "—", never empty or "nan"
    ]

"""End-to-end, in headless Chromium: the Tune page (pages/tune.py) of the running app.

A deep link with a traffic mix draws tokens/s against K, one legend entry per load, and the schedule line
the library computes for that mix; typing a mix in the box is mirrored in the URL; a mix that names a load
not measured is an error naming it, not a traceback; the Chinese page is titled in Chinese.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import pytest
from _browser import CHROMIUM, app_server, browser_fixture, page_fixture
from test_browser import PLOT, RUN_TIMEOUT_MS, assert_no_exception, open_page, wait_for_query

from specviz.app.scenarios import tune as scenarios
from specviz.core import tuning
from specviz.servers import tune

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]
MAIN = '[data-testid="stMain"]'


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with app_server(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, RUN_TIMEOUT_MS)


def schedule_line(mix: dict[int, float] | None) -> str:
    """The numbers of the page's schedule line, from the library."""
    a = tuning.analyse(tune.read_points(scenarios.EXAMPLE))
    loads = [c.concurrency for c in a.choices]
    table = {(int(r.k), int(r.concurrency)): float(r.tokens_per_s) for r in a.table.itertuples()}
    static, _, _, sched_tps, gain = tuning.static_vs_schedule(table, loads, sorted({k for k, _ in table}), mix)
    return f"{sched_tps:,.0f} tokens/s over the traffic mix, {gain:+.1%} against the best single K = {static}"


def test_a_deep_link_draws_tokens_by_k_per_load_and_the_mixs_schedule(app_url, page):
    open_page(page, app_url + "/tune?mix=1%3A%201%2C%208%3A%203", charts=True)
    assert_no_exception(page, "/tune?mix=…")
    plots = page.locator(PLOT)
    legend = [t.strip() for t in plots.first.locator(".legend .legendtext").all_text_contents()]
    assert legend == ["1 in flight", "2 in flight", "4 in flight", "8 in flight"]
    assert schedule_line({1: 1.0, 8: 3.0}) in page.locator(MAIN).inner_text()
    pareto = plots.nth(plots.count() - 1)  # the cost section's Pareto, with its iso-cost lines labelled
    labels = [t.strip() for t in pareto.locator(".annotation-text").all_text_contents()]
    assert any(t.startswith("USD ") and t.endswith("/ M tokens") for t in labels), labels


def test_typing_a_mix_follows_in_the_url_and_a_bad_one_is_named(app_url, page):
    open_page(page, app_url + "/tune", charts=True)
    box = page.get_by_label("Traffic mix (load: share, …; empty: equal)")
    box.fill("2: 1")
    box.press("Enter")
    wait_for_query(page, "mix", "2: 1", "the typed mix is not in the URL")
    page.get_by_text(schedule_line({2: 1.0})).first.wait_for(timeout=RUN_TIMEOUT_MS)
    box.fill("3: 1")
    box.press("Enter")
    error = page.locator('[data-testid="stAlertContentError"]').first
    error.wait_for(timeout=RUN_TIMEOUT_MS)
    assert "Traffic mix: '3: 1' must name a measured load (1, 2, 4, 8)" in error.inner_text()
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_chinese_page(app_url, page):
    open_page(page, app_url + "/tune?lang=zh", charts=True)
    assert page.locator(f"{MAIN} h1").first.inner_text().strip() == "调优"
    assert_no_exception(page, "/tune?lang=zh")


def test_aiperf_exports_uploaded_are_fitted_and_a_duplicate_is_named(app_url, page, tmp_path):
    """Two AIPerf exports (K = 3 with vLLM's speculative totals, K = 0 without) at 8 in flight: the page
    fits the load from them with the example tune's o and r and shows its best K; the same file twice is
    refused by name."""
    import json

    from specviz.base.paths import ROOT

    spec = ROOT / "tests" / "fixtures" / "formats" / "aiperf-profile-export.json"
    plain = json.loads(spec.read_text())
    for key in ("pooled_spec_decode_acceptance_histogram", "total_spec_decode_steps", "total_draft_tokens",
                "total_accepted_draft_tokens", "spec_decode_overall_draft_acceptance_rate"):  # fmt: skip
        plain.pop(key)
    (tmp_path / "k0.json").write_text(json.dumps(plain))
    open_page(page, app_url + "/tune?source=aiperf&prior=example")
    uploader = page.locator('[data-testid="stFileUploader"] input[type="file"]')
    uploader.set_input_files([str(spec), str(tmp_path / "k0.json")])
    metric = page.locator('[data-testid="stMetric"]').first
    metric.wait_for(timeout=RUN_TIMEOUT_MS)
    assert "best K at 8 in flight" in metric.inner_text()
    assert_no_exception(page, "/tune?source=aiperf with two exports")
    uploader.set_input_files([str(spec), str(spec)])
    error = page.locator('[data-testid="stAlertContentError"]').first
    error.wait_for(timeout=RUN_TIMEOUT_MS)
    assert "both measure K = 3 at 8 in flight; keep one" in error.inner_text()

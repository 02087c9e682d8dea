"""End-to-end, in headless Chromium: a link to an old address opens the page that now shows its view, with
the link's controls restored (:func:`specviz.app.router.forward`).

``/measured-data`` opens Compare runs where its query names ``hk``, or ``runs`` without ``filter``, else the
Run library (:func:`specviz.app.measured.old_route`); ``/engine-monitor`` opens the Server monitor. Checked
as the first request of a freshly started server (Streamlit's legacy lookup runs the old page's file) and on
a server that has served before.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from _browser import CHROMIUM, ROOT, app_server, browser_fixture, page_fixture
from playwright.sync_api import expect
from test_browser import (
    CHART_SHOWN,
    RUN_TIMEOUT_MS,
    assert_no_exception,
    open_page,
    query,
    wait_drawn,
    watch_for_not_found,
)

from specviz.data import measurements, store

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

LABEL = "bundled cpu"
MAIN = '[data-testid="stMain"]'


def library_with_a_run(tmp_path_factory) -> tuple[str, int]:
    """A throw-away library holding the bundled bench CSV as one run; (its URL, the run's id)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('library') / 'runs.sqlite'}"
    frame, _ = measurements.load_measurements(
        (ROOT / "data" / "samples" / "specviz_bench_bundled_cpu.csv").read_text(encoding="utf-8")
    )
    return url, store.save_run(store.open_library(url), frame, label=LABEL, source="test")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on a library holding one run; yields (base URL, run id)."""
    url, run_id = library_with_a_run(tmp_path_factory)
    with app_server(tmp_path_factory, library=url) as base:
        yield base, run_id


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, RUN_TIMEOUT_MS)


def land(page, url: str, path: str, title: str) -> None:
    """Open ``url``; the browser ends up at ``path`` under the page titled ``title``, with no exception."""
    watch_for_not_found(page)
    open_page(page, url)  # may settle on the old page's run, before the switch
    page.wait_for_url(lambda u: urlsplit(u).path == path, timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    expect(page.locator(f"{MAIN} h1").first).to_have_text(title, timeout=RUN_TIMEOUT_MS)
    assert_no_exception(page, url)
    assert not page.evaluate("() => window.__notFound === true"), f"'Page not found' shown for {url}"


def number(page, label: str) -> str:
    """The value shown by the number input labelled ``label``."""
    return page.locator(MAIN).get_by_label(label, exact=True).input_value()


def expect_chosen(page, run_id: int) -> None:
    """The "Runs to plot" multiselect holds run ``run_id`` (its only chip)."""
    box = page.locator(f'{MAIN} [data-testid="stMultiSelect"]').filter(has_text="Runs to plot")
    expect(box.locator("[data-tag]")).to_have_text([f"#{run_id} {LABEL}"], timeout=RUN_TIMEOUT_MS)


def check_compare(page, run_id: int) -> None:
    """Compare runs with run ``run_id`` selected and the heatmap's K at 3, all in its URL."""
    assert query(page.url).get("runs") == [str(run_id)] and query(page.url).get("hk") == ["3"], page.url
    expect_chosen(page, run_id)
    page.locator(CHART_SHOWN).first.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    page.get_by_role("tab", name="(α, c) map").click()
    assert number(page, "K of the heatmap (0 = the most common K of the selection)") == "3"


def test_an_old_link_is_the_first_request_of_a_fresh_server(tmp_path_factory, browser):
    url, run_id = library_with_a_run(tmp_path_factory)
    with app_server(tmp_path_factory, library=url) as base:
        context = browser.new_context()
        context.set_default_timeout(RUN_TIMEOUT_MS)
        try:
            pg = context.new_page()
            land(pg, f"{base}/measured-data?runs={run_id}&hk=3", "/compare-runs", "Compare runs")
            check_compare(pg, run_id)
        finally:
            context.close()


def test_a_measured_data_link_with_hk_opens_compare_runs(served, page):
    base, run_id = served
    land(page, f"{base}/measured-data?runs={run_id}&hk=3", "/compare-runs", "Compare runs")
    check_compare(page, run_id)


def test_a_measured_data_link_naming_runs_opens_compare_runs(served, page):
    base, run_id = served
    land(page, f"{base}/measured-data?runs={run_id}", "/compare-runs", "Compare runs")
    assert query(page.url).get("runs") == [str(run_id)], page.url
    expect_chosen(page, run_id)
    page.locator(CHART_SHOWN).first.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)


def test_a_plain_measured_data_link_opens_the_run_library(served, page):
    base, _ = served
    land(page, f"{base}/measured-data", "/run-library", "Run library")
    expect(page.locator(f'{MAIN} [data-testid="stFileUploader"]')).to_be_visible()
    assert not query(page.url), page.url


def test_a_measured_data_link_with_a_filter_opens_the_run_library(served, page):
    base, run_id = served
    land(page, f"{base}/measured-data?runs={run_id}&filter=bundled", "/run-library", "Run library")
    assert query(page.url).get("filter") == ["bundled"] and query(page.url).get("runs") == [str(run_id)], page.url
    assert page.locator(MAIN).get_by_label("Filter by label, model, hardware or method").input_value() == "bundled"
    expect_chosen(page, run_id)
    expect(page.get_by_role("button", name="Export the selected runs (CSV)")).to_be_visible()


def test_an_engine_monitor_link_opens_the_server_monitor(served, page):
    base, _ = served
    land(page, f"{base}/engine-monitor?k=6&every=5&poll=false", "/server-monitor", "Server monitor")
    q = query(page.url)
    assert (q.get("k"), q.get("every"), q.get("poll")) == (["6"], ["5"], ["false"]), page.url
    assert number(page, "K to assume") == "6"
    assert float(number(page, "Every (s)")) == 5.0

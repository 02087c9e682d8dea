"""End-to-end, in headless Chromium: Compare runs' *By context and domain* view on a run saved in the
library, its fitted α(L) followed by link to Hardware & batch and to Serving, and the run on the
*Against published acceptance* page.

The fit shown is the library's (:func:`specviz.core.acceptance.fit_decay` on the same rows, computed in the
test process); the links are the page's own (their ``href``), opened as a person following them would.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import pytest
from _browser import CHROMIUM, app_server, browser_fixture, page_fixture
from test_browser import RUN_TIMEOUT_MS, assert_no_exception, open_page, query

from specviz.core import acceptance
from specviz.data import measurements, store

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

TARGET = "meta-llama/Llama-3.1-8B-Instruct"
CSV = "label,k,mean_accepted_tokens,rounds,context_length,domain,target_model,method,temperature\n" + "".join(
    f"long context,3,{m},400,{c},{d},{TARGET},eagle3,0\n"
    for c, d, m in ((512, "code", 3.1), (2048, "code", 2.8), (8192, "chat", 2.4), (32768, "chat", 2.0))
)
FRAME, _ = measurements.load_measurements(CSV)
FIT = acceptance.fit_decay(acceptance.row_acceptance(FRAME))
MAIN = '[data-testid="stMain"]'


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on a library holding the run; yields (base URL, run id)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('library') / 'runs.sqlite'}"
    run_id = store.save_run(store.open_library(url), FRAME, label="long context", source="test")
    with app_server(tmp_path_factory, library=url) as base:
        yield base, run_id


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, RUN_TIMEOUT_MS)


def _open_tab(page, base: str, run_id: int, tab: str):
    open_page(page, f"{base}/compare-runs?runs={run_id}")  # its first chart sits in a hidden tab
    page.get_by_role("tab", name=tab).click()
    return page.locator(f"{MAIN} [role='tabpanel']:visible")


def test_the_fit_is_shown_and_its_links_price_long_contexts(served, page):
    base, run_id = served
    panel = _open_tab(page, base, run_id, "By context and domain")
    statement = f"logit α(L) = {FIT.a:.3f} − {FIT.b:.3f}·ln(L / 1024)"
    panel.get_by_text(statement, exact=False).wait_for(state="visible")
    assert_no_exception(page, "compare-runs, By context and domain")
    hardware = panel.get_by_role("link", name="Price long contexts with this α(L) on Hardware & batch")
    href = hardware.get_attribute("href")
    assert query(href) == {"a_src": ["fit"], "alpha_l": [FIT.to_param()]}
    open_page(page, href if href.startswith("http") else base + href)
    assert_no_exception(page, "hardware with the fit")
    page.get_by_text("a fitted decay α(L)").first.wait_for(state="visible")
    serving = _open_tab(page, base, run_id, "By context and domain").get_by_role("link", name="Serve with this α(L)")
    href = serving.get_attribute("href")
    open_page(page, href if href.startswith("http") else base + href)
    assert_no_exception(page, "serving with the fit")
    assert page.locator('input[aria-label^="α(L) fit"]').first.input_value() == FIT.to_param()


def test_the_run_is_set_beside_the_published_rows_of_its_target(served, page):
    base, run_id = served
    open_page(page, f"{base}/published-acceptance?runs={run_id}")
    page.locator(f'{MAIN} [data-testid="stDataFrame"]').first.wait_for(state="visible")
    assert_no_exception(page, "published-acceptance")

"""End-to-end, in headless Chromium: the Hardware and Serving defects a hostile pass found (issue 56, defects
1, 6, 7 and 8), each reproduced as a person meets it in the running app.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import re

import pytest
from _apps import SERVING_NO_K_TTFT
from _browser import APP_DRAWN_JS, CHROMIUM, app_server, browser_fixture, page_fixture
from playwright.sync_api import expect
from test_browser import CHART_SHOWN, assert_no_exception

from specviz.core import hardware, profiles, serving

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

MAIN = '[data-testid="stMain"]'
ERROR = '[data-testid="stAlertContentError"]'
WARNING = '[data-testid="stAlertContentWarning"]'
TIMEOUT_MS = 120_000  #: one run of Serving's sweep on a busy 2-core machine (test_browser's 30 s is too short)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with app_server(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, TIMEOUT_MS)


def open_page(page, url: str) -> None:
    """Go to ``url`` and wait until the app has drawn its first chart and finished its run."""
    page.goto(url, wait_until="domcontentloaded")
    page.locator(CHART_SHOWN).first.wait_for(state="visible", timeout=TIMEOUT_MS)
    page.wait_for_function(APP_DRAWN_JS, timeout=TIMEOUT_MS)


def metrics(page) -> dict[str, str]:
    """The main area's metrics, label -> value."""
    shown = page.locator(f'{MAIN} [data-testid="stMetric"]').evaluate_all(
        """ms => ms.map(m => ['stMetricLabel', 'stMetricValue'].map(
            id => (m.querySelector(`[data-testid="${id}"]`)?.innerText ?? '').trim()))"""
    )
    return dict(shown)


def test_defect_1_a_refused_upload_keeps_the_chosen_pair_and_says_so(app_url, page):
    open_page(page, app_url + "/hardware?pair=Llama-3.1+8B+%2B+3.2+1B&tp_t=1&view=step")
    page.get_by_text("Upload config.json").click()
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Target config.json")
    payload = {"name": "my-config.json", "mimeType": "application/json", "buffer": b"{not json"}
    uploader.locator('input[type="file"]').set_input_files(payload)
    error = page.locator(ERROR)
    expect(error).to_have_count(1, timeout=TIMEOUT_MS)
    page.wait_for_function(APP_DRAWN_JS, timeout=TIMEOUT_MS)
    text = error.inner_text()
    assert "my-config.json" in text and "refused" in text and "Llama-3.1 8B + 3.2 1B" in text, text
    eff = profiles.profile(profiles.SERVER_PROFILE)
    step = hardware.step_breakdown("meta-llama/Llama-3.1-8B-Instruct", "H100-SXM5-80GB", 1, 2048, 1, efficiency=eff)
    want = f"{step['seconds'].sum() * 1e3:.3f} ms"
    expect(page.locator(f'{MAIN} [data-testid="stMetricValue"]').first).to_have_text(want, timeout=TIMEOUT_MS)


def test_defect_6_more_users_than_the_model_takes_is_a_warning_about_the_link(app_url, page):
    open_page(page, app_url + "/serving?mode=closed&users=4,100000")
    assert_no_exception(page, "/serving?users=4,100000")
    warnings = " ".join(page.locator(WARNING).all_inner_texts())
    assert "users" in warnings and f"{serving.MAX_USERS}" in warnings.replace(",", ""), warnings


def test_defect_7_gpu_counts_are_whole_numbers_with_thousands_separators(app_url, page):
    open_page(page, app_url + "/serving?goal=1000000")
    label, value = next((k, v) for k, v in metrics(page).items() if k.startswith("GPUs for"))
    assert "1,000,000" in label and "e+" not in label + value, (label, value)
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", n) for n in value.split(" / ")), value


def test_defect_8_no_label_names_a_k_when_no_k_meets_the_sla(app_url, page):
    open_page(page, app_url + f"/serving?ttft={SERVING_NO_K_TTFT}")
    labels = list(metrics(page))
    assert any("no K meets the SLA" in label for label in labels), labels
    assert not [label for label in labels if "K = " in label], labels

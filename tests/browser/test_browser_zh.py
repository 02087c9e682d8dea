"""In headless Chromium, Streamlit's own texts on a Chinese page read in Chinese.

Streamlit 1.67 writes the file uploader's button ("Upload") and its limit ("20MB per file • CSV, …") in its
frontend, with no option to change them; specviz.app.ui.frontend restyles them per uploader on a Chinese
page. The check reads what the browser draws: the original text at font size 0 and the Chinese text in its
place (the ``::after`` content), at a visible size; and the multiselect's placeholder, an argument. The English
page keeps Streamlit's texts.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import pytest
from _browser import CHROMIUM, app_server, browser_fixture, page_fixture
from test_browser import RUN_TIMEOUT_MS, assert_no_exception, open_page

from specviz.base import i18n

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

UPLOADER = '[data-testid="stMain"] [data-testid="stFileUploaderDropzone"]'
BUTTON = f'{UPLOADER} button [data-testid="stMarkdownContainer"] p'
LIMIT = f'{UPLOADER} [data-testid="stFileUploaderDropzoneInstructions"] span'
MULTISELECT = '[data-testid="stMultiSelect"] input'  # Validation's sidebar filters: empty at first
#: What the browser draws of an element: its own text and size, and its ::after content and size.
DRAWN_JS = """e => {
    const own = getComputedStyle(e), after = getComputedStyle(e, '::after');
    return {text: e.textContent, size: own.fontSize, after: after.content, afterSize: after.fontSize,
            width: e.getBoundingClientRect().width};
}"""


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


def drawn(page, selector: str) -> dict:
    return page.locator(selector).first.evaluate(DRAWN_JS)


def test_the_uploader_reads_in_chinese_on_a_chinese_page(app_url, page):
    open_page(page, app_url + "/measured-data?lang=zh")
    assert_no_exception(page, "/measured-data?lang=zh")
    button, limit = drawn(page, BUTTON), drawn(page, LIMIT)
    assert button["text"] == "Upload" and button["size"] == "0px", button  # Streamlit's text, not drawn
    assert button["after"] == f'"{i18n.text("zh", "Upload")}"' and button["afterSize"] == "14px", button
    assert button["width"] > 10, button  # the Chinese label takes the room of the English one
    types = "CSV, TSV, TXT, JSONL, JSON, LOG"
    assert limit["text"].startswith("20MB per file") and limit["width"] > 100, limit
    assert limit["size"] == "0px" and limit["afterSize"] == "14px", limit
    assert limit["after"] == '"' + i18n.text("zh", "At most {size} MB per file • {types}", size=20, types=types) + '"'


def test_the_english_page_keeps_streamlits_uploader_texts(app_url, page):
    open_page(page, app_url + "/measured-data?lang=en")
    button = drawn(page, BUTTON)
    assert button["text"] == "Upload" and button["size"] == "14px" and button["after"] == "none", button


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_multiselect_placeholder_is_in_the_pages_language(app_url, page, lang):
    page.goto(app_url + f"/validation?lang={lang}", wait_until="domcontentloaded")
    page.locator(MULTISELECT).first.wait_for(
        state="attached", timeout=2 * RUN_TIMEOUT_MS
    )  # (maybe in a closed expander)
    placeholders = page.locator(MULTISELECT).evaluate_all("els => els.map(e => e.placeholder)")
    assert placeholders and set(placeholders) == {i18n.text(lang, "Choose one or more")}, placeholders

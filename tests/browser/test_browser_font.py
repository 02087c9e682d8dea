"""The Chinese interface is drawn in the shipped web font, "specviz CJK SC" (static/fonts/), from its first paint.

Not in whatever CJK font the machine has: Chromium reports the platform fonts it drew an element's text with
(DevTools ``CSS.getPlatformFontsForNode``), and a web font as ``isCustomFont``. On a machine with
fonts-noto-cjk an installed "Noto Sans CJK SC" would draw the same text, so every check requires the web font
and no installed font at all (Source Sans, Streamlit's own web font, draws the Latin letters).

The first page load of a freshly started server (a fresh browser context: no cache, no stored theme) opens
``/design-space?lang=zh``; its language switch ("中文"), page title and every navigation entry must be drawn in
the shipped face. An init script records the moment each of them enters the page: the face must be declared
by then, with ``font-display: block``, and loaded within the block period, so that no frame shows them in a
fallback font (or as tofu where there is none). The English page's switch ("中文", its only Chinese) too.

Needs Debian's ``chromium`` on PATH; skipped without it.
"""

from __future__ import annotations

import json
import re

import pytest
from _browser import APP_DRAWN_JS, CHROMIUM, VIEWPORT, app_server, browser_fixture

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

FAMILY = "specviz CJK SC"
TIMEOUT_MS = 30_000
BLOCK_PERIOD_MS = 3_000  # font-display: block hides text at most this long, then paints a fallback
SIDEBAR = '[data-testid="stSidebar"]'
NAV_LINK = '[data-testid="stSidebarNav"] a[data-testid="stSidebarNavLink"]'
TITLE = '[data-testid="stMain"] h1'

# Before the page's own scripts: note when the switch, a Chinese page title and the Chinese "Design space"
# navigation entry first enter the document (a MutationObserver runs before the next paint), with the faces
# of FAMILY then declared, and when each face finished loading.
FIRST_PAINT_JS = (
    """(() => {
    const FAMILY = FAMILY_NAME;
    const seen = {}, loaded = {};
    window.__fontFirstPaint = {seen, loaded};
    const ownText = (e, re) => [...e.childNodes].some(n => n.nodeType === 3 && re.test(n.data.trim()));
    const find = {
        switch: () => [...document.querySelectorAll('SIDEBAR *')].find(e => ownText(e, /^中文$/)),
        title: () => [...document.querySelectorAll('TITLE')].find(e => /[\\u4e00-\\u9fff]/.test(e.textContent)),
        nav: () => [...document.querySelectorAll('SIDEBAR *')].find(e => ownText(e, /^设计空间$/)),
    };
    const faces = () => [...document.fonts].filter(f => f.family.replace(/["']/g, '') === FAMILY);
    document.fonts.addEventListener('loadingdone', event => {
        for (const f of event.fontfaces) {
            if (f.family.replace(/["']/g, '') === FAMILY && !(f.weight in loaded)) loaded[f.weight] = performance.now();
        }
    });
    new MutationObserver(() => {
        for (const [name, finder] of Object.entries(find)) {
            if (seen[name] || !finder()) continue;
            seen[name] = {at: performance.now(), faces: faces().map(f => ({weight: f.weight, display: f.display}))};
        }
    }).observe(document, {subtree: true, childList: true, characterData: true});
})();""".replace("FAMILY_NAME", json.dumps(FAMILY))
    .replace("SIDEBAR", SIDEBAR)
    .replace("TITLE", TITLE)
)


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A freshly started ``streamlit run app.py``: yields its URL, nothing has requested a page yet."""
    with app_server(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def first_load(server, browser):
    """The server's first page load, ``/design-space?lang=zh``, in a fresh context; yields the page.

    A fixture, so that it is the first request whatever test runs first.
    """
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.add_init_script(FIRST_PAINT_JS)
    open_drawn(page, f"{server}/design-space?lang=zh", "设计空间")
    yield page
    context.close()


def open_drawn(page, url: str, nav_text: str) -> None:
    """Open ``url``; wait until the router's navigation (``nav_text``) is drawn, the run done, the fonts loaded.

    The first request after a server start runs pages/ as a legacy multipage app before the router takes
    over (see app.py), so the app is "drawn" once before the navigation is the router's.
    """
    page.goto(url, wait_until="domcontentloaded")
    page.locator('[data-testid="stSidebarNav"]').get_by_text(nav_text, exact=True).wait_for()
    page.wait_for_function(APP_DRAWN_JS, timeout=TIMEOUT_MS)
    page.evaluate("() => document.fonts.ready.then(() => true)")


CJK = "[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]"  # Han, CJK punctuation, full-width forms


def rendering_fonts(where, cdp) -> tuple[list[dict], str]:
    """The platform fonts Chromium drew the first Chinese text under locator ``where`` with, glyph counts and
    isCustomFont included, and that text: the own text of its element (the protocol reports a node's child
    text nodes only)."""
    page = where.page
    page.evaluate(
        "() => document.querySelectorAll('[data-font-probe]').forEach(e => e.removeAttribute('data-font-probe'))"
    )
    text = where.first.evaluate(
        """(e, cjk) => {
            const re = new RegExp(cjk), walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
            while (walk.nextNode()) {
                if (re.test(walk.currentNode.data)) {
                    const owner = walk.currentNode.parentElement;
                    owner.setAttribute('data-font-probe', '1');
                    return [...owner.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('');
                }
            }
            return null;
        }""",
        CJK,
    )
    assert text is not None, f"no Chinese text in {where.first.inner_text()!r}"
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-font-probe]"})["nodeId"]
    return cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"], text


def assert_in_shipped_face(where, cdp, what: str) -> None:
    """Every Chinese character of ``where`` is drawn in the web font FAMILY, and no glyph by an installed font.

    Source Sans has no Chinese glyph: a Chinese character it "draws" is its tofu box. So the glyphs of FAMILY
    must number at least the Chinese characters.
    """
    fonts, text = rendering_fonts(where, cdp)
    chinese = len(re.findall(CJK, text))
    ours = sum(f["glyphCount"] for f in fonts if f["familyName"] == FAMILY and f["isCustomFont"])
    assert ours >= chinese, f"{what} ({text!r}, {chinese} Chinese characters): {fonts}"
    installed = [f for f in fonts if not f["isCustomFont"]]
    assert not installed, f"{what} ({text!r}): glyphs from an installed font, not the shipped one: {installed}"


def cdp_session(page):
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    return cdp


def test_the_first_load_draws_the_switch_title_and_navigation_in_the_shipped_face(first_load):
    page, cdp = first_load, cdp_session(first_load)
    assert_in_shipped_face(page.locator(SIDEBAR).get_by_text("中文", exact=True), cdp, "the language switch")
    assert_in_shipped_face(page.locator(TITLE), cdp, "the page title")
    links = page.locator(NAV_LINK)
    assert links.count() >= 9, links.all_inner_texts()
    for i in range(links.count()):
        assert_in_shipped_face(links.nth(i), cdp, "a navigation entry")


def test_the_first_paint_of_the_chinese_is_in_the_shipped_face(first_load):
    """Declared before the text enters the page, font-display: block, loaded within the block period."""
    record = first_load.evaluate("() => window.__fontFirstPaint")
    seen, loaded = record["seen"], record["loaded"]
    assert set(seen) == {"switch", "title", "nav"}, record
    weights = {  # the face each is drawn with (headings are bold)
        "switch": first_load.locator(SIDEBAR).get_by_text("中文", exact=True),
        "title": first_load.locator(TITLE).first,
        "nav": first_load.locator('[data-testid="stSidebarNav"]').get_by_text("设计空间", exact=True),
    }
    for name, at_first in seen.items():
        faces = {f["weight"]: f["display"] for f in at_first["faces"]}
        assert faces == {"400": "block", "700": "block"}, f"{name} entered the page with {FAMILY} faces {faces}"
        weight = int(weights[name].first.evaluate("e => getComputedStyle(e).fontWeight"))
        face = "700" if weight > 500 else "400"
        assert loaded.get(face) is not None, f"the {face} face never loaded: {record}"
        waited = loaded[face] - at_first["at"]
        assert waited < BLOCK_PERIOD_MS, f"{name}: its face loaded {waited:.0f} ms after it entered the page"


def test_the_english_pages_language_switch_is_drawn_in_the_shipped_face(server, browser, first_load):
    """A new visitor of the English home page (a fresh context): "中文" is its only Chinese text."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        open_drawn(page, f"{server}/", "Design space")
        switch = page.locator(SIDEBAR).get_by_text("中文", exact=True)
        assert_in_shipped_face(switch, cdp_session(page), "the English page's language switch")
    finally:
        context.close()

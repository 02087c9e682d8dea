"""End-to-end: run the real app (``streamlit run app.py``) and drive it in headless Chromium.

Checks that every page renders without a Streamlit exception (charts drawn), that the
home page links to the other pages, that a control change is mirrored in the URL and
that the link restores the view, and that an invalid URL value gives a warning. Pages
in the app's navigation that are not listed in PAGES are opened and checked too.

Screenshots of every page go to ``$SPECVIZ_SCREENSHOT_DIR`` when set, so
``SPECVIZ_SCREENSHOT_DIR=docs/screenshots python -m pytest tests/browser/test_browser.py``
refreshes the README images; otherwise to pytest's ``tmp_path``.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from _browser import (
    APP_DRAWN_JS,
    CHROMIUM,
    ROOT,
    VIEWPORT,
    app_server,
    browser_fixture,
    page_fixture,
)
from _uploads import HANG_S, UPLOADS, give, write_largest
from playwright.sync_api import expect

RUN_TIMEOUT_MS = 30_000  # one script run of a page, including plotly drawing its charts

# (url path, screenshot name, has charts)
PAGES = [
    ("/", "home.png", False),
    ("/design-space", "design-space.png", True),
    ("/break-even", "break-even.png", True),
    ("/sampling-lab", "sampling-lab.png", True),
    ("/hardware", "hardware.png", True),
    ("/strategies", "strategies.png", True),
    ("/live", "live.png", False),
    ("/server-monitor", "server-monitor.png", False),
    ("/tune", "tune.png", True),
    ("/run-library", "run-library.png", False),
    ("/compare-runs", "compare-runs.png", False),
    ("/published-acceptance", "published-acceptance.png", False),
    ("/converter", "converter.png", True),
]
K_SLIDER = "K for the (α, c) map"  # on /design-space, mirrored as ?k=

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

CHART_SHOWN = '[data-testid="stPlotlyChart"] .js-plotly-plot svg.main-svg'
PLOT = '[data-testid="stPlotlyChart"] .js-plotly-plot'  # one per chart (a chart has several svg.main-svg)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """Base URL of ``streamlit run app.py`` on a free localhost port; stopped (whole group) at the end."""
    with app_server(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, RUN_TIMEOUT_MS)


@pytest.fixture
def screenshot_dir(tmp_path) -> Path:
    d = Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR") or tmp_path)
    if not d.is_absolute():
        d = ROOT / d
    d.mkdir(parents=True, exist_ok=True)
    return d


def open_page(page, url: str, charts: bool = False) -> None:
    """Go to ``url`` and wait until the app has finished its run and drawn it (with a chart)."""
    page.goto(url, wait_until="domcontentloaded")
    if charts:
        page.locator(CHART_SHOWN).first.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)


def wait_drawn(page) -> None:
    page.wait_for_function(APP_DRAWN_JS, timeout=RUN_TIMEOUT_MS)


def assert_no_exception(page, where: str) -> None:
    """No Streamlit exception box (an uncaught error) and no ``st.error`` box (a reported one)."""
    for what, sel in (("exception", '[data-testid="stException"]'), ("error", '[data-testid="stAlertContentError"]')):
        boxes = page.locator(sel)
        assert boxes.count() == 0, f"Streamlit {what} on {where}:\n" + "\n---\n".join(boxes.all_inner_texts())


def full_page_screenshot(page, path: Path) -> None:
    """Screenshot of the whole page. The app scrolls inside ``stMain`` (and the sidebar),
    not the document, so ``full_page=True`` alone stops at the viewport: grow the viewport
    to the content's height first, then put it back."""
    size = page.viewport_size
    height_js = """() => Math.max(window.innerHeight, ...[...document.querySelectorAll(
        '[data-testid="stMain"], [data-testid="stSidebarContent"]')].map(e => e.scrollHeight))"""
    try:
        for _ in range(3):  # the layout may reflow once at the new size
            height = page.evaluate(height_js)
            if height <= page.viewport_size["height"]:
                break
            page.set_viewport_size({"width": size["width"], "height": height})
            wait_drawn(page)
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)


def find_slider(page, label: str):
    """The thumb of the slider labelled ``label``: a ``role="slider"`` element or, as in
    Streamlit 1.67 (react-aria), a visually hidden ``<input type="range">`` (not matchable by
    ``get_by_role(name=...)``: its accessible name repeats the label)."""
    thumb = f'[data-testid="stSlider"] :is([role="slider"], input[type="range"])[aria-label="{label}"]'
    return page.locator(thumb)


def slider_value(slider) -> str:
    """Current value of a slider: aria-valuenow where set, else the value of the range input."""
    return slider.evaluate("el => el.getAttribute('aria-valuenow') ?? el.value")


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


@pytest.mark.parametrize(("path", "shot", "charts"), PAGES, ids=[name.removesuffix(".png") for _, name, _ in PAGES])
def test_page_renders(app_url, page, screenshot_dir, path, shot, charts):
    open_page(page, app_url + path, charts=charts)
    assert_no_exception(page, path)
    assert page.locator('[data-testid="stMain"] h1').count() >= 1, f"no title on {path}"
    if path == "/":
        # Page links and formulas are lazy-loaded components: drawn shortly after the run ends.
        for target in (
            "design-space",
            "break-even",
            "sampling-lab",
            "hardware",
            "strategies",
            "live",
            "server-monitor",
            "run-library",
            "compare-runs",
            "published-acceptance",
            "converter",
        ):
            link = page.locator(f'[data-testid="stMain"] [data-testid="stPageLink"] a[href$="{target}"]').first
            expect(link, f"home has no link to {target}").to_be_visible(timeout=RUN_TIMEOUT_MS)
        expect(page.locator('[data-testid="stMain"] .katex').first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    full_page_screenshot(page, screenshot_dir / shot)


def watch_for_not_found(pg) -> None:
    """Record a "Page not found" dialog the moment it appears (it may be gone by the time the run ends)."""
    pg.add_init_script(
        """new MutationObserver(() => {
            if (document.body && document.body.textContent.includes('Page not found')) window.__notFound = true;
        }).observe(document, {childList: true, subtree: true, characterData: true});"""
    )


def test_home_links_open_home_without_a_dialog(tmp_path_factory, browser):
    """Home is served at "/"; "/home" (its file's name) opens it too, first on a fresh server and again later."""
    with app_server(tmp_path_factory) as url:
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(RUN_TIMEOUT_MS)
        try:
            for link in ("/home?from=link", "/home", "/"):
                pg = context.new_page()
                watch_for_not_found(pg)
                open_page(pg, url + link)
                assert_no_exception(pg, link)
                assert not pg.evaluate("() => window.__notFound === true"), f"'Page not found' shown for {link}"
                expect(pg.locator('[data-testid="stMain"] h1').first).to_contain_text("specviz")
                pg.close()
        finally:
            context.close()


def test_deep_link_first_on_a_freshly_started_server(tmp_path_factory, browser):
    """A shared link is the first request a just-started server gets (as after a redeploy): the linked
    page opens with the linked settings and no "Page not found" dialog shows, even briefly."""
    with app_server(tmp_path_factory) as url:
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(RUN_TIMEOUT_MS)
        try:
            pg = context.new_page()
            watch_for_not_found(pg)
            open_page(pg, url + "/design-space?k=6&conv=c_L", charts=True)
            assert_no_exception(pg, "a deep link on a fresh server")
            assert not pg.evaluate("() => window.__notFound === true"), "a 'Page not found' dialog was shown"
            assert pg.get_by_text("Page not found").count() == 0
            assert pg.locator('[role="dialog"]').count() == 0, pg.locator('[role="dialog"]').all_inner_texts()
            expect(pg.locator('[data-testid="stMain"] h1').first).to_have_text("Design space")
            # the router ran (not only the page): its sidebar caption and its page titles in the navigation
            expect(pg.locator('[data-testid="stSidebar"]').get_by_text("specviz: where speculative")).to_be_visible()
            expect(pg.locator('[data-testid="stSidebarNav"]').get_by_text("Break-even & optimal K")).to_be_visible()
            assert slider_value(find_slider(pg, K_SLIDER)) == "6"
            expect(pg.get_by_text("c_L min", exact=True)).to_be_visible()
            assert urlsplit(pg.url).path == "/design-space" and query(pg.url).get("k") == ["6"], pg.url
        finally:
            context.close()


def expand_navigation(page) -> None:
    """Show every page of the sidebar's navigation: past ten pages it ends with "View N more"."""
    more = page.locator('[data-testid="stSidebarNav"] [data-testid="stSidebarNavViewButton"]')
    expect(page.locator('[data-testid="stSidebarNav"] a[data-testid="stSidebarNavLink"]').first).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    if more.count() and "more" in more.inner_text():
        more.click()
        expect(more).not_to_contain_text("more")


def test_every_page_in_the_navigation_renders(app_url, page):
    """Pages added to app.py after this file was written are opened too (no screenshot)."""
    open_page(page, app_url + "/")
    expand_navigation(page)
    nav = page.locator('[data-testid="stSidebarNav"] a[data-testid="stSidebarNavLink"]')
    paths = {urlsplit(href).path.rstrip("/") or "/" for href in nav.evaluate_all("as => as.map(a => a.href)")}
    known = {path for path, _, _ in PAGES} | {"/home"}
    assert {path for path, _, _ in PAGES} - {"/"} <= paths, f"pages missing from the navigation: {sorted(paths)}"
    for path in sorted(paths - known):
        open_page(page, app_url + path)
        assert page.locator('[data-testid="stMain"] h1').count() >= 1, f"no title on {path}"
        assert_no_exception(page, path)


def wait_for_query(page, name: str, value: str, failure: str, timeout_s: float = 15) -> None:
    """Wait until the page's URL holds ``name=value`` (a rerun mirrors a control); else fail with ``failure``
    and the URL as it is then."""
    deadline = time.monotonic() + timeout_s
    while query(page.url).get(name) != [value]:
        if time.monotonic() > deadline:
            pytest.fail(f"{failure}: {page.url}")
        page.wait_for_timeout(200)


def test_slider_change_is_mirrored_in_url_and_restored(app_url, page, browser):
    open_page(page, app_url + "/design-space", charts=True)
    slider = find_slider(page, K_SLIDER)
    before = int(slider_value(slider))
    assert "k" not in query(page.url), page.url  # default value: not in the URL

    slider.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expected = str(before + 2)

    wait_for_query(page, "k", expected, f"URL not updated to k={expected} after moving the slider")
    wait_drawn(page)
    assert slider_value(slider) == expected
    assert_no_exception(page, "/design-space after moving the K slider")
    shared = page.url

    # A fresh browser context (no session state) opening the link gets the same view.
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        other = context.new_page()
        open_page(other, shared, charts=True)
        assert_no_exception(other, shared)
        assert slider_value(find_slider(other, K_SLIDER)) == expected
        assert query(other.url).get("k") == [expected], other.url
    finally:
        context.close()


def test_the_chosen_map_is_drawn_and_mirrored_in_the_url(app_url, page):
    open_page(page, app_url + "/design-space", charts=True)
    assert page.locator(PLOT).count() == 1  # the chosen map only (the inspector is a lazy tab)
    page.locator('[data-testid="stRadio"]').get_by_text("E[N] over (α, K)", exact=True).click()
    wait_for_query(page, "map", "en", "URL not updated to the E[N] map")
    wait_drawn(page)
    expect(page.locator(PLOT)).to_have_count(1)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_have_text("Expected tokens per round")
    assert_no_exception(page, "/design-space after choosing the E[N] map")


def test_a_lazy_tab_runs_when_clicked_and_is_mirrored_in_the_url(app_url, page):
    open_page(page, app_url + "/design-space?map=E%5BN%5D+over+%28%CE%B1%2C+K%29", charts=True)
    page.get_by_role("tab", name="Point inspector").click()
    wait_for_query(page, "tab", "inspector", "URL not updated to the inspector tab")
    wait_drawn(page)
    expect(page.get_by_text("E[N] tokens per round")).to_be_visible()
    assert query(page.url).get("map") == ["en"]  # the other tab's choice is kept in the link
    page.get_by_role("tab", name="Maps").click()
    expect(page.locator(PLOT).first.locator(".gtitle")).to_have_text(
        "Expected tokens per round", timeout=RUN_TIMEOUT_MS
    )
    assert_no_exception(page, "/design-space after switching tabs")


_MANY = ",".join(str(i) for i in range(1, 1501))
HOSTILE_LINKS = [
    "/home?x=%00&embed=true&__proto__=1",
    "/design-space?alpha=5e-324,1e308&c_min=5e-324&c_max=1e308&k=1e309&tab=Point+inspector&i_alpha=nan",
    f"/break-even?curves={_MANY}&k_max=-1&view=Optimal+K&f_c=inf",
    "/sampling-lab?p=custom&p_vec=1e308,1e308,1e308&v=3&view=Tokens+per+round",
    "/sampling-lab?view=emitted&v=1000&p=uniform&q=uniform&k=1&variant=resample_p",
    f"/live?pair=data,pages&ks={_MANY}&temps=nan,inf",
    f"/measured-data?runs={_MANY}&hk=1e308&filter=%3Cscript%3Ealert(1)%3C/script%3E",
    f"/run-library?runs={_MANY}&filter=%3Cscript%3Ealert(1)%3C/script%3E",
    f"/compare-runs?runs={_MANY}&hk=1e308",
    f"/published-acceptance?runs={_MANY}&lang=%3Cscript%3E",
    "/converter?metric=__proto__&value=1e308&k=0&ratio=-inf",
]


@pytest.mark.parametrize("link", HOSTILE_LINKS, ids=lambda link: link.split("?")[0].strip("/") or "home")
def test_hostile_links_show_no_exception(app_url, page, link):
    """Crafted links (float limits, NaN, long lists, junk keys, markup) open a page, never a traceback."""
    open_page(page, app_url + link)
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]'
    ).all_inner_texts()
    expect(page.locator('[data-testid="stMain"] h1').first).to_be_visible()


def test_share_link_is_drawn_when_the_box_is_opened(app_url, page):
    open_page(page, app_url + "/converter?k=6", charts=True)
    assert page.locator('[data-testid="stCode"]').count() == 0
    page.get_by_text("Share this view").click()
    expect(page.locator('[data-testid="stCode"]').first).to_contain_text("/converter?k=6", timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    assert_no_exception(page, "/converter after opening the share box")


def test_invalid_url_value_warns(app_url, page):
    open_page(page, app_url + "/design-space?i_alpha=7", charts=True)
    alert = page.locator('[data-testid="stAlert"], [data-testid="stWarning"]').filter(has_text="i_alpha").first
    alert.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    assert alert.locator('[data-testid="stAlertContentWarning"]').count() == 1, alert.inner_html()
    assert "7" in alert.inner_text()
    assert_no_exception(page, "/design-space?i_alpha=7")


def test_upload_save_and_overlay(app_url, page, browser, screenshot_dir):
    """Upload our bench CSV on the Run library and save it; the Compare runs page of the navigation overlays
    the saved (selected) run on the theory; its link reopens the selection."""
    open_page(page, app_url + "/run-library")
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
        str(ROOT / "data" / "samples" / "specviz_bench_bundled_cpu.csv")
    )
    save = page.get_by_role("button", name="Save to library")
    save.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    save.click()
    expect(page.get_by_text("Saved as run #1.")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    assert query(page.url).get("runs") == ["1"], page.url
    assert_no_exception(page, "/run-library after saving")

    # the selection follows to Compare runs, which draws the overlay
    expand_navigation(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Compare runs").click()
    page.wait_for_url(re.compile(r"/compare-runs(\?|$)"), timeout=RUN_TIMEOUT_MS)
    page.locator(CHART_SHOWN).first.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    assert urlsplit(page.url).path == "/compare-runs" and query(page.url).get("runs") == ["1"], page.url
    assert_no_exception(page, "/compare-runs after saving")
    full_page_screenshot(page, screenshot_dir / "compare-runs-overlays.png")

    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        other = context.new_page()
        open_page(other, page.url, charts=True)
        assert_no_exception(other, page.url)
        assert other.locator(CHART_SHOWN).count() >= 1
    finally:
        context.close()


def test_live_run_draws_the_overlay(app_url, page, screenshot_dir):
    """Press Run on the tiny configuration (bundled pair, K ∈ {1, 2}, 16 new tokens) and wait for the chart."""
    open_page(page, app_url + "/live?ks=1,2&temps=0&new_tokens=16&n_prompts=2")
    assert page.locator(CHART_SHOWN).count() == 0  # opening the link does not run anything
    page.get_by_role("button", name="Run").click()
    page.locator(CHART_SHOWN).first.wait_for(state="visible", timeout=120_000)
    wait_drawn(page)
    assert_no_exception(page, "/live after Run")
    expect(page.get_by_text("speculative output equals target-only output").first).to_be_visible()
    full_page_screenshot(page, screenshot_dir / "live-run.png")


def test_two_sessions_run_at_once_and_both_complete(app_url, browser):
    """Two browser sessions press Run together: one queues behind the other, both draw their results."""
    url = app_url + "/live?ks=1,2&temps=0&new_tokens=16&n_prompts=2"
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(2)]
    try:
        pages = []
        for context in contexts:
            context.set_default_timeout(RUN_TIMEOUT_MS)
            pg = context.new_page()
            open_page(pg, url)
            pages.append(pg)
        for pg in pages:
            pg.get_by_role("button", name="Run").click()
        for pg in pages:
            pg.locator(CHART_SHOWN).first.wait_for(state="visible", timeout=120_000)
            wait_drawn(pg)
            assert_no_exception(pg, "/live, two sessions running at once")
            expect(pg.get_by_text("2 cells measured").first).to_be_visible()
    finally:
        for context in contexts:
            context.close()


@pytest.mark.parametrize("view", ["policies", "ngram"])
def test_strategies_views_render_in_a_browser(app_url, page, view):
    """The policies and n-gram views open from a link and draw their charts."""
    from urllib.parse import quote

    open_page(page, f"{app_url}/strategies?view={quote(view)}&rounds=2000", charts=True)
    assert_no_exception(page, f"/strategies ({view})")
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 1


@pytest.mark.llamacpp
def test_server_monitor_reads_a_running_llama_server(app_url, page, llama_server, screenshot_dir):
    """The Server monitor polls a real llama.cpp server (the bundled pair, K = 4) and draws its figures."""
    from specviz.servers import llamacpp

    llamacpp.complete(llama_server.url, list(b"def main(argv):\n    "), 48)
    open_page(page, f"{app_url}/server-monitor?endpoints={quote(llama_server.url)}&every=2")
    assert_no_exception(page, "/server-monitor")
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("Mean acceptance length").first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(main.get_by_text("α at K = 4").first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(main.locator(PLOT)).to_have_count(3, timeout=RUN_TIMEOUT_MS)  # per position, tokens/s, the map
    values = main.locator('[data-testid="stMetricValue"]').all_inner_texts()
    assert values and values[0] != "—", values
    full_page_screenshot(page, screenshot_dir / "server-monitor-llamacpp.png")


ZH_PAGES = [(path, shot.removesuffix(".png"), charts) for path, shot, charts in PAGES]


@pytest.mark.parametrize(("path", "name", "charts"), ZH_PAGES, ids=[name for _, name, _ in ZH_PAGES])
def test_chinese_pages_render_with_a_cjk_font(app_url, page, screenshot_dir, path, name, charts):
    """?lang=zh opens the page in Chinese, drawn in the web font the app ships (static/fonts/), so no glyph
    falls back to a tofu box whether or not the browser's machine has a CJK font."""
    open_page(page, f"{app_url}{path}?lang=zh", charts=charts)
    assert_no_exception(page, path)
    title = page.locator('[data-testid="stMain"] h1').first.inner_text()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in title) or title == "specviz", title
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "中文" in sidebar and "设计空间" in sidebar  # the switch and the translated navigation
    fonts = rendering_fonts(page.get_by_text("设计空间", exact=True))  # the navigation's "Design space"
    assert any(is_shipped_cjk(f) for f in fonts), f"not drawn in the shipped simplified-Chinese face: {fonts}"
    if charts:  # a chart's Chinese words (axis titles, legends) too
        chinese = page.locator(f"{PLOT} svg text").filter(has_text=re.compile("[\u4e00-\u9fff]"))
        fonts = rendering_fonts(chinese)
        assert any(is_shipped_cjk(f) for f in fonts), f"chart text not in the shipped Chinese face: {fonts}"
    full_page_screenshot(page, screenshot_dir / f"zh-{name}.png")


def is_shipped_cjk(font: dict) -> bool:
    """Whether a platform-font record of ``rendering_fonts`` is the theme's shipped web font."""
    return font["familyName"] == "specviz CJK SC" and font.get("isCustomFont", False)


def rendering_fonts(where) -> list[dict]:
    """The platform fonts Chromium actually drew the first element of locator ``where`` with (DevTools
    protocol), glyph counts included. The element is marked, then found by the protocol."""
    page = where.page
    page.evaluate(
        "() => document.querySelectorAll('[data-font-probe]').forEach(e => e.removeAttribute('data-font-probe'))"
    )
    where.first.evaluate("e => e.setAttribute('data-font-probe', '1')")
    cdp = page.context.new_cdp_session(page)
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    cdp.send("CSS.enable")
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-font-probe]"})["nodeId"]
    return cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]


def test_a_chinese_tab_click_opens_it_and_the_link_keeps_its_choice(app_url, page):
    open_page(page, f"{app_url}/break-even?lang=zh", charts=True)
    page.get_by_role("tab", name="最优 K").click()
    expect(page.get_by_text("某一 (α, c) 下的 f(K)")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    assert query(page.url).get("view") == ["optimum"] and query(page.url).get("lang") == ["zh"]


@pytest.fixture(scope="module")
def largest_inputs(tmp_path_factory):
    """The folder the largest accepted input of each kind is written to (tests/_uploads.py), once per module."""
    return tmp_path_factory.mktemp("largest")


@pytest.mark.parametrize("kind", [u.name for u in UPLOADS])
def test_the_largest_accepted_input_of_each_kind_renders_within_the_budget(app_url, page, largest_inputs, kind):
    """Hostile pass over the uploads and text boxes that feed a chart: the largest input each cap lets
    through (config.json, traces at the row and K_max caps, the n-gram text, benchmark files on the Run library) opens
    without an exception element and the page settles: within :data:`HANG_S`, a hang guard (the 10 s render
    budget is benchmarks/upload_bench.py's target)."""
    upload = next(u for u in UPLOADS if u.name == kind)
    seconds = give(page, app_url, upload, write_largest(largest_inputs, upload))
    assert_no_exception(page, f"{upload.path} with {kind}")
    assert seconds <= HANG_S, f"{kind}: settled after {seconds:.1f} s"


def test_an_over_the_cap_trace_is_refused_with_a_message_naming_the_cap(app_url, page, tmp_path):
    """A trace wider than the K_max cap: a message naming the cap, no exception, the page stays usable."""
    from specviz.core import policies

    k = policies.MAX_TRACE_K * 50
    row = {"segment": 0, "accepted": 1, "q_token": [0.5] * k, "q_top": [0.5] * k, "p_token": [None] * k}
    path = tmp_path / "wide.jsonl"
    header = {"format": policies.TRACE_FORMAT, "k_max": k, "positional": True}
    path.write_text("\n".join(json.dumps(x) for x in (header, *[row] * 50)) + "\n")
    open_page(page, app_url + "/strategies?view=policies&trace_src=upload")
    page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(str(path))
    expect(page.get_by_text(f"from 1 to {policies.MAX_TRACE_K}; got {k}")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_megabyte_pasted_into_the_ngram_box_is_cut_with_a_note(app_url, page):
    """1 MB typed into the 20,000-character box keeps its first 20,000 characters and says so."""
    open_page(page, app_url + "/strategies?view=ngram&ng_src=text")
    box = page.get_by_label("Text (UTF-8 bytes are the tokens)")
    box.fill("abc def " * 131_072)
    box.press("Control+Enter")
    expect(page.get_by_text("kept the first 20,000 of the 1,048,576 characters")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # the box shows the kept text once the frontend applies the rerun's value (it may lag the note)
    expect(box).to_have_value("abc def " * 2_500, timeout=RUN_TIMEOUT_MS)
    assert_no_exception(page, "/strategies after a 1 MB paste")

"""End-to-end, in headless Chromium: the drawn layout of every chart on every page, in English and Chinese,
at 1280 px and 390 px (a phone in portrait) wide.

For every visible plotly chart the checks read what plotly drew (the DOM and the chart's ``_fullLayout``):
no legend box over a plot area (``g.legend`` against the ``.nsewdrag`` rectangles), no text ending in "…"
or "...", tick labels of numeric axes that parse as the numbers at their positions (SI suffixes, ×, %, and
units after the number allowed; a log axis labelled "5" at 0.5 fails), a depth axis that starts at 0, no chart wider than its container,
and no headline (``st.metric``) label or value cut short. One server, one browser and one context per
width serve the 56 views; a failure names the page, the language and the width.

Screenshots of each view (the first viewport, palette PNG) go to ``$SPECVIZ_SCREENSHOT_DIR/layout`` when
set, so ``SPECVIZ_SCREENSHOT_DIR=docs/screenshots python -m pytest tests/browser/test_browser_layout.py``
refreshes docs/screenshots/layout/; otherwise to pytest's ``tmp_path``.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from pathlib import Path

import pytest
from _browser import APP_DRAWN_JS, CHROMIUM, ROOT, app_server, browser_fixture

from specviz.app import router
from specviz.base import i18n

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

RUN_TIMEOUT_MS = 60_000  # one script run of a page on a busy 2-core machine, including plotly's drawing
WIDTHS = {1280: 800, 390: 844}  #: viewport width -> height (a laptop; a phone in portrait)
LANGS = ("en", "zh")
#: every page of the navigation but the forwarding stubs (they only open another page)
PAGES = [r.url_path or r.name for r in router.PAGES if not r.hidden]
PAGES = ["" if p == "main" else p for p in PAGES]

# What plotly drew, per visible chart: legend boxes over a plot area, texts cut short, numeric tick labels
# (with their positions, the axis type and range, and whether the app gave the labels), widths.
LAYOUT_JS = """() => {
    const rect = e => e.getBoundingClientRect();
    const box = r => [r.left, r.top, r.right, r.bottom].map(v => Math.round(v));
    const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const cut = s => /(…|\\.\\.\\.)\\s*$/.test(s.trim());
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .filter(c => c.getClientRects().length > 0 && !c.closest('details:not([open])'));
    const out = {charts: [], metrics: []};
    charts.forEach((c, i) => {
        const gd = c.querySelector('.js-plotly-plot');
        const fl = gd._fullLayout;
        const keyed = c.closest('[class*="st-key-"]');
        const key = keyed && [...keyed.classList].find(k => k.startsWith('st-key-'));
        const name = key ? key.slice(7) : (fl.title && fl.title.text) || `chart ${i + 1}`;
        const chart = {name, legend: [], cut: [], axes: [], width: rect(gd).width, container: rect(c).width};
        const plots = [...gd.querySelectorAll('.draglayer .nsewdrag')].map(rect).filter(r => r.width * r.height > 0);
        for (const lg of gd.querySelectorAll('g.legend')) {
            const bg = lg.querySelector('rect.bg') || lg;
            const lr = rect(bg);
            if (lr.width * lr.height === 0) continue;
            for (const p of plots) if (overlap(lr, p)) chart.legend.push({legend: box(lr), plot: box(p)});
        }
        for (const t of gd.querySelectorAll('text')) {
            if (t.getClientRects().length && cut(t.textContent)) chart.cut.push(t.textContent.trim());
        }
        for (const key of Object.keys(fl).filter(k => /^[xy]axis\\d*$/.test(k))) {
            const ax = fl[key];
            if (!ax || !ax.visible || !ax.showticklabels || !['linear', 'log'].includes(ax.type)) continue;
            const ticks = (ax._vals || []).filter(v => v.text !== undefined && v.text !== '' && !v.minor);
            chart.axes.push({
                name: key, type: ax.type, range: ax.range, given: ax.tickmode === 'array',
                title: (ax.title && ax.title.text) || '',
                ticks: ticks.map(v => [v.x, String(v.text)]),
            });
        }
        out.charts.push(chart);
    });
    // a headline is cut short where a box of it clips its text with an ellipsis, or where its text spills
    // out of its metric's box (over the next column)
    for (const m of document.querySelectorAll('[data-testid="stMetricLabel"], [data-testid="stMetricValue"]')) {
        if (!m.getClientRects().length) continue;
        const clipped = [m, ...m.querySelectorAll('*')].some(
            e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).textOverflow === 'ellipsis');
        const words = document.createRange();
        words.selectNodeContents(m);
        const own = rect(m.closest('[data-testid="stMetric"]') || m);
        const spills = [...words.getClientRects()].some(r => r.width && (r.right > own.right + 1 || r.left < own.left - 1));
        if (clipped || spills) out.metrics.push(m.textContent.trim());
    }
    return out;
}"""

DEPTH = {i18n.text(lang, "depth") for lang in LANGS}  #: the title of a tree's depth axis, in each language
SI = {
    "P": 1e15,
    "E": 1e18,
    "p": 1e-12,
    "n": 1e-9,
    "µ": 1e-6,
    "μ": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "B": 1e9,
    "T": 1e12,
}
NUMBER = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)(?:\s*[×x]\s*10\^?([+-]?\d+))?\s*([pnµμmkMGBT])?(?![a-zA-Z])"
)


def parse_tick(label: str) -> float | None:
    """The number a tick label shows: "0.5", "1,200", "2k", "5×10^3", "1e+3", "10^-2", "50 %", "1.5×", "3 ms"
    (units after the number allowed; an SI prefix multiplies unless a unit follows it); None if it is no number."""
    s = re.sub(r"<sup>(.*?)</sup>", r"^\1", label).replace("\u2212", "-").replace("\u2009", "").replace(",", "")
    s = re.sub(r"<[^>]+>", "", s).strip()
    if m := re.fullmatch(r"10\^([+-]?\d+)", s):
        return 10.0 ** int(m.group(1))
    m = NUMBER.match(s)
    if not m:
        return None
    value = float(m.group(1))
    if m.group(2):
        value *= 10.0 ** int(m.group(2))
    if m.group(3):
        value *= SI[m.group(3)]
    return value


def tick_problems(axis: dict) -> list[str]:
    """What is wrong with the drawn tick labels of one numeric axis (an empty list when nothing is)."""
    ticks = axis["ticks"]
    shown = [(x, label, parse_tick(label)) for x, label in ticks]
    bad = [f"{label!r} is no number" for _, label, v in shown if v is None]
    if bad or len(shown) < 2:
        return bad
    if axis["title"] in DEPTH and min(v for _, _, v in shown) != 0:
        return [f"a depth axis labelled {[label for _, label, _ in sorted(shown)]}: depth starts at 0"]
    if axis["given"]:  # labels the app chose (a log10-drawn ratio, depth): numbers, in the order of the ticks
        values = [v for _, _, v in sorted(shown)]
        steps = [b - a for a, b in itertools.pairwise(values)]
        if not (all(s > 0 for s in steps) or all(s < 0 for s in steps)):
            return [f"labels {[label for _, label, _ in sorted(shown)]} are not in the order of their ticks"]
        return []
    log = axis["type"] == "log"
    xs = sorted(x for x, _, _ in shown)
    spacing = min(b - a for a, b in itertools.pairwise(xs))
    out = []
    for x, label, v in shown:
        at = (math.log10(v) if v > 0 else -math.inf) if log else v
        if abs(at - x) > 0.5 * spacing + 1e-9 * max(abs(x), 1.0):
            where = f"{10**x:.4g}" if log else f"{x:.4g}"
            out.append(f"{label!r} drawn at {where}")
    return out


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """``streamlit run app.py`` on a throw-away run library, one for the module."""
    with app_server(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture(scope="module", params=list(WIDTHS), ids=lambda w: f"{w}px")
def tab(request, browser):
    """(width, a page of a context at that viewport width): one context per width, reused by every view."""
    width = request.param
    context = browser.new_context(viewport={"width": width, "height": WIDTHS[width]})
    context.set_default_timeout(RUN_TIMEOUT_MS)
    try:
        yield width, context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    base = os.environ.get("SPECVIZ_SCREENSHOT_DIR")
    d = (
        (Path(base) if Path(base).is_absolute() else ROOT / base) / "layout"
        if base
        else tmp_path_factory.mktemp("layout")
    )
    d.mkdir(parents=True, exist_ok=True)
    return d


def save_screenshot(page, path: Path) -> None:
    """The first viewport as a 64-colour palette PNG (a few tens of kB)."""
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(page.screenshot(type="png"))).convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("path", PAGES, ids=lambda p: p or "home")
def test_drawn_layout(app_url, tab, shots, path, lang):
    width, page = tab
    page.goto(f"{app_url}/{path}?lang={lang}", wait_until="domcontentloaded")
    page.wait_for_function(APP_DRAWN_JS, timeout=RUN_TIMEOUT_MS)
    page.wait_for_timeout(300)  # plotly's resize to the container lands a frame or two after the first draw
    page.wait_for_function(APP_DRAWN_JS, timeout=RUN_TIMEOUT_MS)
    got = page.evaluate(LAYOUT_JS)
    save_screenshot(page, shots / f"{path or 'home'}-{lang}-{width}.png")
    problems = [f"headline cut short: {m!r}" for m in got["metrics"]]
    for chart in got["charts"]:
        name = chart["name"]
        problems += [f"{name}: legend {x['legend']} over the plot area {x['plot']}" for x in chart["legend"]]
        problems += [f"{name}: text cut short: {t!r}" for t in chart["cut"]]
        if chart["width"] > chart["container"] + 1:
            problems.append(f"{name}: {chart['width']:.0f} px wide in a {chart['container']:.0f} px container")
        for axis in chart["axes"]:
            problems += [f"{name}, {axis['name']} ({axis['type']}): {p}" for p in tick_problems(axis)]
    assert not problems, f"/{path}?lang={lang} at {width} px:\n" + "\n".join(problems)

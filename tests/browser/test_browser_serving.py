"""End-to-end, in headless Chromium: the Serving page (pages/serving.py) of the running app.

A deep link with non-default controls draws TPOT by load (one line per K and the no-speculation line) and
the four headline numbers; moving the α slider and switching the traffic mode in the browser is mirrored in
the URL and changes those numbers; the engine schedules' code blocks parse as the engines take them; the
Chinese page is drawn in the shipped web font; an empty length range in a link is named, not a traceback.
Every number is the library's (:mod:`specviz.core.serving`) computed in the test process and formatted as
the page formats it.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
import yaml
from _apps import SWITCHING_GPU
from _browser import CHROMIUM, app_server, browser_fixture, page_fixture
from playwright.sync_api import expect
from test_browser import (
    PLOT,
    RUN_TIMEOUT_MS,
    assert_no_exception,
    find_slider,
    is_shipped_cjk,
    open_page,
    query,
    rendering_fonts,
    slider_value,
    wait_drawn,
    wait_for_query,
)

from specviz.app.ui import number
from specviz.base import i18n
from specviz.core import configs, hardware, profiles, serving

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

#: the page's defaults (pages/serving.py's SPEC) that the checks below depend on
GPU, PAIR_NAME, ENGINE, K_MAX, PROMPT, OUTPUT, TTFT_S, TPOT_S, GOAL = (
    "H100-SXM5-80GB",
    "Llama-3.1 8B + 3.2 1B",
    profiles.SERVER_PROFILE,
    6,
    1024,
    256,
    2.0,
    0.050,
    100.0,
)
RATES = [0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 16.0]
PAIR = hardware.preset_pairs(heads=True).set_index("name").loc[PAIR_NAME]
#: the deep link: α, closed loop, three user counts, TPOT by load (every one off its default)
ALPHA, USERS = 0.7, [1.0, 4.0, 16.0]
LINK = "/serving?alpha=0.7&mode=closed&users=1,4,16&view=tpot"
MAIN = '[data-testid="stMain"]'
TITLE = f"{MAIN} h1"
CJK = re.compile("[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """``streamlit run app.py`` on a throw-away run library, one for the module."""
    with app_server(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, RUN_TIMEOUT_MS)


# ------------------------------------------------------------------------------------------
# what the page should show, from the library
# ------------------------------------------------------------------------------------------


def priced(alpha: float, mode: str, loads: list[float], gpu: str = GPU):
    """(grid, output, frame, best, rates) as the page's sweep computes them for its defaults with ``alpha``,
    ``mode``, ``loads`` and ``gpu`` changed."""
    output = serving.Lengths.fixed(OUTPUT)
    grid = serving.cost_grid(
        PAIR["target"],
        PAIR["draft"],
        gpu,
        serving.chain_options(alpha, K_MAX),
        serving.Lengths.fixed(PROMPT),
        output,
        stack=ENGINE,
        efficiency=profiles.profile(ENGINE),
        prefill=serving.PREFILL.get(ENGINE, "mixed"),
    )
    frame = serving.steady_state(grid, output, sorted(loads), mode=mode)
    best = serving.best_by_load(frame, ttft_s=TTFT_S, tpot_s=TPOT_S)
    rates = serving.max_rate(grid, output, ttft_s=TTFT_S, tpot_s=TPOT_S)
    return grid, output, frame, best, rates


def expected_headline(alpha: float, mode: str, loads: list[float], lang: str = "en") -> list[tuple[str, str, str]]:
    """The headline's metrics as (label, value, delta), as pages/serving.py writes them: four answers and the cost."""
    grid, _, _, _, rates = priced(alpha, mode, loads)
    plain = rates.iloc[0]
    spec = rates.iloc[1:].sort_values(["max_rps", "k"], ascending=[False, True], kind="stable").iloc[0]
    option = spec["option"]
    shown = number
    need = [serving.gpus_needed(GOAL, r, grid.gpus) for r in (plain["max_rps"], spec["max_rps"])]
    top = float(np.nanmax(rates["max_rps"]))
    stops = serving.stops_paying_rate(grid, serving.Lengths.fixed(OUTPUT), top, ttft_s=TTFT_S, tpot_s=TPOT_S)
    never = i18n.text(lang, "never, up to the largest rate meeting the SLA")
    return [
        (i18n.text(lang, "Largest rate per GPU meeting the SLA, no speculation"), shown(plain["max_rps_per_gpu"]), ""),
        (
            i18n.text(lang, "… with speculation ({option})", option=option),
            shown(spec["max_rps_per_gpu"]),
            f"{spec['max_rps'] / plain['max_rps'] - 1:+.0%}",
        ),
        (
            i18n.text(lang, "GPUs for {rate} requests/s (no speculation / {option})", rate=number(GOAL), option=option),
            " / ".join(shown(n) for n in need),
            "",
        ),
        (
            i18n.text(lang, "Speculation stops paying at"),
            never if stops is None else i18n.text(lang, "{rate} requests/s per GPU", rate=number(stops / grid.gpus)),
            "",
        ),
        (
            i18n.text(
                lang,
                "Cost per million output tokens at the largest rate meeting the SLA (no speculation / with speculation)",
            ),
            " / ".join(f"USD {_cost(r):,.3f}" for r in (plain["max_rps_per_gpu"], spec["max_rps_per_gpu"])),
            "",
        ),
    ]


def _cost(rps_per_gpu: float) -> float:
    """USD per million output tokens at ``rps_per_gpu``, at the catalogue's price of the GPU (the page's default)."""
    return float(serving.usd_per_million_tokens(serving.gpu_price(GPU)[0], 1, rps_per_gpu * OUTPUT))


def expected_schedules(alpha: float = 0.8, mode: str = "open", loads: list[float] = RATES, gpu: str = GPU) -> list[str]:
    """The four code blocks of the schedule view (pages/serving.py's show_schedules)."""
    grid, output, _, _, _ = priced(alpha, mode, loads, gpu)
    schedule = serving.k_by_batch(grid, output)
    draft = PAIR["draft"]
    first = serving.steady_state(grid, output, sorted(loads)[:1], mode=mode)
    b0 = int(np.clip(round(np.nan_to_num(first["batch"].iloc[0], nan=1.0)), 1, grid.cap))
    k0 = int(schedule.loc[schedule["batch"] == b0, "k"].iloc[0])
    return [
        json.dumps(configs.vllm.speculative_config(schedule, model=draft)),
        configs.trtllm.extra_options_yaml(configs.trtllm.speculative_config(schedule, model=draft)),
        configs.sglang.chain_flags(k0, draft=draft),
        configs.llamacpp.draft_flags(k0, slots=int(grid.cap)),
    ]


# ------------------------------------------------------------------------------------------
# what the page shows
# ------------------------------------------------------------------------------------------


def headline_shown(page) -> list[tuple[str, str, str]]:
    """Every metric of the main area as (label, value, delta; "" where it has none)."""
    return [
        tuple(m)
        for m in page.locator(f'{MAIN} [data-testid="stMetric"]').evaluate_all(
            """ms => ms.map(m => ['stMetricLabel', 'stMetricValue', 'stMetricDelta'].map(
                id => (m.querySelector(`[data-testid="${id}"]`)?.innerText ?? '').trim()))"""
        )
    ]


def assert_headline(page, expected: list[tuple[str, str, str]]) -> None:
    """The headline's metrics are visible and show ``expected``."""
    metrics = page.locator(f'{MAIN} [data-testid="stMetric"]')
    expect(metrics).to_have_count(len(expected))
    for i in range(len(expected)):
        expect(metrics.nth(i)).to_be_visible()
    assert headline_shown(page) == expected


def assert_no_traceback(page, where: str) -> None:
    """No exception box, and no traceback text anywhere on the page."""
    assert page.locator('[data-testid="stException"]').count() == 0, where
    body = page.locator("body").inner_text()
    assert "Traceback" not in body and 'File "' not in body, f"traceback text on {where}:\n{body}"


def open_tab(page) -> str:
    return page.locator(f'{MAIN} [role="tab"][aria-selected="true"]').inner_text().strip()


def legend(page) -> list[str]:
    """The chart's legend entries (svg text: its textContent; an svg element has no innerText)."""
    return [t.strip() for t in page.locator(f"{PLOT} .legend .legendtext").all_text_contents()]


def axis_title(page, axis: str) -> str:
    return (page.locator(f"{PLOT} .g-{axis}title").first.text_content() or "").strip()


def wait_until(page, condition, failure: str, timeout_s: float = 15) -> None:
    """Wait until ``condition()`` holds, else fail with ``failure``. Waits with ``page.wait_for_timeout``: the
    sync API updates ``page.url`` only while it runs a call (a ``time.sleep`` would never see it change)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(failure() if callable(failure) else failure)
        page.wait_for_timeout(200)


def k_legend(lang: str = "en") -> list[str]:
    """The TPOT-by-load chart's lines: no speculation, then K = 1 … K max."""
    return [i18n.text(lang, "no speculation"), *(f"K = {k}" for k in range(1, K_MAX + 1))]


# ------------------------------------------------------------------------------------------
# the tests
# ------------------------------------------------------------------------------------------


def test_a_deep_link_draws_tpot_by_load_and_the_headline(app_url, page):
    open_page(page, app_url + LINK, charts=True)
    assert_no_exception(page, LINK)
    assert_no_traceback(page, LINK)
    expect(page.locator(TITLE).first).to_have_text("Serving")
    assert open_tab(page) == "TPOT by load"
    # the link's controls are kept in the URL (the page mirrors every one)
    q = query(page.url)
    assert (q.get("alpha"), q.get("mode"), q.get("users"), q.get("view")) == (
        ["0.7"],
        ["closed"],
        ["1,4,16"],
        ["tpot"],
    ), page.url
    assert slider_value(find_slider(page, "Acceptance α")) == "0.7"
    # one chart: a line per K and the no-speculation line, over the three user counts
    _, _, frame, _, _ = priced(ALPHA, "closed", USERS)
    assert not frame["overloaded"].any() and frame["k"].nunique() == K_MAX + 1
    chart = page.locator(PLOT)
    expect(chart).to_have_count(1)
    expect(chart.locator(".scatterlayer .trace")).to_have_count(K_MAX + 1)
    assert legend(page) == k_legend()
    assert axis_title(page, "x") == "users" and axis_title(page, "y") == "TPOT (ms)"
    assert chart.locator(".scatterlayer .trace").first.locator(".point").count() == len(USERS)
    assert_headline(page, expected_headline(ALPHA, "closed", USERS))


def test_moving_alpha_and_switching_traffic_follow_in_the_url_and_the_headline(app_url, page):
    open_page(page, app_url + LINK, charts=True)
    before = expected_headline(ALPHA, "closed", USERS)
    assert_headline(page, before)

    slider = find_slider(page, "Acceptance α")
    slider.focus()
    for _ in range(5):  # steps of 0.01: one moves the headline's rates by less than its 3 digits show
        page.keyboard.press("ArrowRight")
    wait_for_query(page, "alpha", "0.75", "URL not updated to alpha=0.75 after moving the α slider")
    wait_drawn(page)
    assert slider_value(slider) == "0.75"
    after = expected_headline(0.75, "closed", USERS)
    assert after != before, "α = 0.75 should change the library's headline for this check to mean something"
    assert_headline(page, after)
    assert_no_exception(page, "/serving after moving the α slider")
    assert query(page.url).get("mode") == ["closed"] and query(page.url).get("users") == ["1,4,16"], page.url

    # open loop (the default: it leaves the URL), over the default request rates
    page.locator('[data-testid="stSidebar"] [data-testid="stRadio"]').get_by_text(
        "requests per second (Poisson arrivals)", exact=True
    ).click()
    wait_until(
        page,
        lambda: "mode" not in query(page.url),
        lambda: f"URL still holds mode after choosing open loop: {page.url}",
    )
    wait_drawn(page)
    expect(page.locator(f"{PLOT} .g-xtitle").first).to_have_text("requests/s")
    opened = expected_headline(0.75, "open", RATES)
    # where speculation stops paying is a rate of the model (serving.stops_paying_rate), not a load shown
    assert opened[3] == after[3], "the traffic mode should not move where speculation stops paying"
    assert_headline(page, opened)
    assert query(page.url).get("alpha") == ["0.75"], page.url
    assert_no_exception(page, "/serving after switching to open loop")
    assert_no_traceback(page, "/serving after switching to open loop")


def test_the_schedule_view_gives_each_engine_its_configuration(app_url, page):
    # on an A100 at α = 0.75 the default pair's best K falls with the batch (3, 2, 1, 0): a schedule every engine takes
    link = f"/serving?view=schedule&gpu={SWITCHING_GPU}&alpha=0.75"
    open_page(page, app_url + link)
    assert_no_exception(page, link)
    assert_no_traceback(page, link)
    assert open_tab(page) == "Serving-stack schedules"
    assert page.locator(PLOT).count() == 0  # the open tab only
    codes = page.locator(f'{MAIN} [data-testid="stCode"] code')
    expect(codes).to_have_count(4)
    shown = [c.strip() for c in codes.all_inner_texts()]
    for name in (
        "vLLM --speculative-config",
        "TensorRT-LLM extra_llm_api_options.yaml",
        "SGLang",
        "llama.cpp llama-server",
    ):
        expect(page.locator(f"{MAIN} strong").filter(has_text=name).first).to_be_visible()
    expected = expected_schedules(alpha=0.75, gpu=SWITCHING_GPU)

    vllm = json.loads(shown[0])
    assert vllm == json.loads(expected[0])
    ranges = vllm["num_speculative_tokens_per_batch_size"]
    assert ranges[0][0] == 1 and vllm["model"] == PAIR["draft"]
    assert vllm["num_speculative_tokens"] == max(k for _, _, k in ranges) >= 1

    trt = yaml.safe_load(shown[1])
    assert trt == yaml.safe_load(expected[1])
    schedule = trt["speculative_config"]["draft_len_schedule"]
    assert schedule[min(schedule)] == trt["speculative_config"]["max_draft_len"] >= 1  # ceiling keys

    assert shown[2:] == [e.strip() for e in expected[2:]]
    assert shown[2].startswith("--speculative-algorithm") and "--spec-draft-n-max" in shown[3]


def test_the_chinese_deep_link_is_drawn_in_the_shipped_web_font(app_url, page):
    link = LINK + "&lang=zh"
    open_page(page, app_url + link, charts=True)
    assert_no_exception(page, link)
    assert_no_traceback(page, link)
    title = i18n.text("zh", "Serving")
    assert i18n.translated("zh", "Serving") and title == "在线服务"
    expect(page.locator(TITLE).first).to_have_text(title)
    assert open_tab(page) == i18n.text("zh", "TPOT by load")
    assert query(page.url).get("lang") == ["zh"], page.url
    assert_headline(page, expected_headline(ALPHA, "closed", USERS, lang="zh"))
    assert legend(page) == k_legend("zh") and CJK.search(legend(page)[0])
    # the title, a metric's label and the chart's Chinese words in the theme's shipped face
    fonts = rendering_fonts(page.locator(TITLE).get_by_text(title, exact=True))
    assert any(is_shipped_cjk(f) for f in fonts), f"title not drawn in the shipped Chinese face: {fonts}"
    shipped = sum(f["glyphCount"] for f in fonts if is_shipped_cjk(f))
    assert shipped >= len(title), f"some of the title's {len(title)} characters fell back: {fonts}"
    label = page.locator(f'{MAIN} [data-testid="stMetricLabel"]').get_by_text(
        i18n.text("zh", "Speculation stops paying at"), exact=True
    )
    fonts = rendering_fonts(label)
    assert any(is_shipped_cjk(f) for f in fonts), f"a metric's label not in the shipped Chinese face: {fonts}"
    chinese = page.locator(f"{PLOT} svg text").filter(has_text=CJK)
    fonts = rendering_fonts(chinese)
    assert any(is_shipped_cjk(f) for f in fonts), f"chart text not in the shipped Chinese face: {fonts}"


def test_an_empty_prompt_range_in_a_link_is_named_not_a_traceback(app_url, page):
    link = "/serving?p_dist=uniform&p_len=900&p_hi=100"
    open_page(page, app_url + link)
    assert_no_traceback(page, link)
    errors = page.locator(f'{MAIN} [data-testid="stAlertContentError"]')
    expect(errors).to_have_count(1)
    said = errors.first.inner_text()
    assert "900..100" in said and "prompt tokens" in said, said
    expect(page.locator(TITLE).first).to_have_text("Serving")
    # nothing was priced: no headline, no chart; the controls stay usable to fix it
    assert page.locator(f'{MAIN} [data-testid="stMetric"]').count() == 0
    assert page.locator(PLOT).count() == 0
    expect(page.get_by_label("Prompt tokens, highest")).to_have_value("100")
    assert query(page.url).get("p_len") == ["900"] and query(page.url).get("p_hi") == ["100"], page.url

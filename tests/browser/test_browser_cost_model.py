"""End-to-end, in headless Chromium: what the cost model shows on the Hardware & batch and Validation pages.

The Hardware & batch page priced with a fitted engine profile (its caption, its step time), an MoE preset's
v/K* figure, a head draft's K*; every Validation view in English and Chinese; and a profile calibrated in
the browser from an uploaded CSV, saved to a throw-away run library and opened on Hardware & batch from
its link. Every number is checked against the library (:mod:`specviz.core.hardware`,
:mod:`specviz.core.profiles`) computed in the test process, formatted as the page formats it.

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import quote, urljoin

import pandas as pd
import pytest
from _browser import CHROMIUM, app_server, browser_fixture, page_fixture
from playwright.sync_api import expect
from test_browser import (
    CHART_SHOWN,
    PLOT,
    RUN_TIMEOUT_MS,
    assert_no_exception,
    open_page,
    query,
    wait_drawn,
)

from specviz.base import i18n
from specviz.core import bands, heads, profiles, published, validation
from specviz.core import hardware as hw
from specviz.data import store

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

#: the Hardware & batch page's defaults (pages/hardware.py's SPEC) that the checks below depend on
GPU, DTYPE, TP_TARGET, TP_DRAFT, CONTEXT, ALPHA, K_MAX = "H100-SXM5-80GB", "bf16", 4, 1, 2048, 0.8, 8
LLAMA_70B, LLAMA_1B = "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"
LLAMA_8B, EAGLE3 = "meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
V3, V3_MTP = "deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-MTP"
#: the MoE preset where it fits (671 GB of fp8 on 8 GPUs), so the page has nothing to warn about
V3_LINK = "pair=DeepSeek-V3+%2B+MTP&gpu=H200-SXM-141GB&dtype=fp8&tp_t=8"
V3_SETUP = dict(gpu="H200-SXM-141GB", dtype="fp8", tp_target=8, tp_draft=8)  # the MTP head: the target's GPUs
#: the profile the synthetic rows of the calibration are measured with: the default roofline with an
#: eager-like fixed cost per forward and per layer
TRUE = replace(profiles.DEFAULT_EFFICIENCY, overhead_s=1.2e-3, layer_overhead_s=8e-5)
#: how close the fitted per-forward and per-layer costs come to TRUE's: the rows are exact, so only the
#: pull toward the prior and the rounding to 4 significant digits move the fit (a few per cent here)
FIT_TOLERANCE = 0.2


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> str:
    """The URL of a throw-away run library, so that saving a profile touches no real one."""
    return f"sqlite:///{tmp_path_factory.mktemp('library') / 'runs.sqlite'}"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, library):
    """``streamlit run app.py`` on :func:`library` (the calibration test reads it back)."""
    with app_server(tmp_path_factory, library) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, RUN_TIMEOUT_MS)


def zh(msgid: str, **fields) -> str:
    """``msgid`` in Chinese; fails where the catalogue lacks it (the page would show the English)."""
    assert i18n.translated("zh", msgid), f"no Chinese for {msgid!r}"
    return i18n.text("zh", msgid, **fields)


def metric(page, label: str):
    """The (first) ``st.metric`` of the main area whose label contains ``label``."""
    main = page.locator('[data-testid="stMain"]')
    return main.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=label)
    )


def metric_value(page, label: str) -> str:
    return metric(page, label).first.locator('[data-testid="stMetricValue"]').inner_text().strip()


def captions(page) -> list[str]:
    return [
        c.strip() for c in page.locator('[data-testid="stMain"] [data-testid="stCaptionContainer"]').all_inner_texts()
    ]


def open_tab(page) -> str:
    """The label of the main area's selected tab."""
    return page.locator('[data-testid="stMain"] [role="tab"][aria-selected="true"]').inner_text().strip()


def k_star_at_batch_1(target, draft, gpu=GPU, *, dtype=DTYPE, tp_target=TP_TARGET, tp_draft=TP_DRAFT, **kw):
    """The page's "At B = 1" figures from the library: (K*, speedup at K*) at B = 1, the page's α,
    context and K max (pages/hardware.py's by_batch)."""
    kw = dict(dtype=dtype, tp_target=tp_target, tp_draft=tp_draft, efficiency=profiles.SERVER_PROFILE) | kw
    frame = hw.speedup_by_batch(target, draft, gpu, ALPHA, [1], [CONTEXT], K_MAX, **kw)
    return int(frame.k_star.iloc[0]), float(frame.speedup_at_k_star.iloc[0])


def at_b1(k_star: int, speedup: float) -> tuple[str, str]:
    """A K* metric's value and delta as the page writes them."""
    return f"K* = {k_star}", f"S = {speedup:.2f}×"


def assert_k_star_metric(page, label: str, k_star: int, speedup: float) -> None:
    assert k_star > 0, "the pair should pay at B = 1 for this check to mean something"
    value, delta = at_b1(k_star, speedup)
    shown = metric(page, label).first
    expect(shown.locator('[data-testid="stMetricValue"]')).to_have_text(value)
    expect(shown.locator('[data-testid="stMetricDelta"]')).to_have_text(delta)


def band_between(kind: str, engine: str, predicted: float, fmt: str, method: str, moe: bool = False) -> str | None:
    """The band caption's range for ``predicted`` at B = 1 (bands.estimate: the hull of the point and its regime's
    held-out range; an unvalidated regime shows the widest validated band), or None without bands."""
    band = bands.band_for(engine, kind, method, moe, 1)
    if band is None:
        return None
    e = bands.estimate(predicted, band)
    low, high = fmt.format(e.low), fmt.format(e.high)
    return f"between {low} and {high}" if band.validated else f"widest validated band, {low} to {high}"


# ------------------------------------------------------------------------------------------
# Hardware & batch
# ------------------------------------------------------------------------------------------


def test_a_fitted_engine_profile_from_a_link_prices_the_step_and_names_its_sources(app_url, page):
    engine = "tensorrt-llm"
    open_page(page, f"{app_url}/hardware?engine={engine}&view=step", charts=True)
    assert_no_exception(page, f"/hardware?engine={engine}")
    row = profiles.load_profiles().loc[engine]
    assert row["fitted_on"], "the profile should name the sources it was fitted on"
    fitted = i18n.text("en", "fitted on {sources}", sources=row["fitted_on"])
    caption = i18n.text("en", "Priced with the engine profile {engine} ({fitted}).", engine=row["label"], fitted=fitted)
    assert caption in captions(page), captions(page)
    eff = profiles.profile(engine)
    step_ms = 1e3 * float(hw.step_time(LLAMA_70B, GPU, 1, CONTEXT, 1, dtype=DTYPE, tp=TP_TARGET, efficiency=eff))
    default_ms = 1e3 * float(hw.step_time(LLAMA_70B, GPU, 1, CONTEXT, 1, dtype=DTYPE, tp=TP_TARGET))
    assert f"{step_ms:.3f}" != f"{default_ms:.3f}", "the profile should change the step time"
    assert metric_value(page, f"Target decode step at B = 1, L = {CONTEXT:,}") == f"{step_ms:.3f} ms"
    between = band_between("step", engine, step_ms, "{:.3f} ms", "none")
    assert between is not None, "the shipped predictions give every profile a band"
    assert any(between in c for c in captions(page)), captions(page)
    assert page.locator(PLOT).count() == 2  # where the step's time goes, and the roofline


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_moe_preset_link_draws_v_and_k_star_beside_the_dense_comparator(app_url, page, lang):
    link = f"{app_url}/hardware?{V3_LINK}&view=moe&ep=true" + ("&lang=zh" if lang == "zh" else "")
    open_page(page, link, charts=True)
    assert_no_exception(page, link)
    moe_tab = i18n.text(lang, "MoE against dense")
    if lang == "zh":
        assert moe_tab == zh("MoE against dense")
    assert open_tab(page) == moe_tab
    figure = page.locator(PLOT)
    expect(figure).to_have_count(1)
    expect(figure.locator("svg.main-svg").first).to_be_visible()
    assert figure.locator(".scatterlayer .trace").count() >= 4  # v and K* of the MoE target and of its comparator
    ep = page.locator('[data-testid="stSidebar"] [data-testid="stCheckbox"] input[type="checkbox"]')
    expect(ep).to_have_count(1)
    expect(ep).to_be_checked()  # expert parallelism from the link
    label = i18n.text(lang, "MoE target at B = 1")
    assert_k_star_metric(page, label, *k_star_at_batch_1(V3, V3_MTP, **V3_SETUP, expert_parallel=True))
    dense = hw.dense_comparator(V3)
    label = i18n.text(lang, "Dense comparator at B = 1")
    assert_k_star_metric(page, label, *k_star_at_batch_1(dense, V3_MTP, **V3_SETUP, expert_parallel=True))


def test_a_head_draft_preset_gives_the_librarys_k_star_at_batch_1(app_url, page):
    link = f"{app_url}/hardware?pair={quote('Llama-3.1 8B + EAGLE-3')}&view=speedup"
    open_page(page, link, charts=True)
    assert_no_exception(page, link)
    # a head runs on the target's GPUs: the draft's TP is the target's; its round is a chain (one token
    # per draft forward, K + 1 verified) at the full context
    k_star, speedup = k_star_at_batch_1(LLAMA_8B, EAGLE3, tp_draft=TP_TARGET, draft_tokens=1)
    assert_k_star_metric(page, "At B = 1", k_star, speedup)
    between = band_between("speedup", profiles.SERVER_PROFILE, speedup, "{:.2f}×", "eagle3")
    assert between is not None, "the shipped predictions give every profile a band"
    assert any(between in c for c in captions(page)), captions(page)
    sidebar = page.locator('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]')
    expect(sidebar.filter(has_text=head_label(EAGLE3))).to_have_count(1)


def head_label(head: str) -> str:
    """How the sidebar names a head draft: its id, its kind and its source (pages/hardware.py's draft_label)."""
    row = heads.load_heads().loc[head]
    kind = {"eagle": "EAGLE", "eagle3": "EAGLE-3", "mtp": "MTP", "medusa": "Medusa"}[row["kind"]]
    return f"{head} ({kind} head; {row['source']})"


# ------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------

VIEW_LABELS = {"parity": "Parity", "errors": "Errors", "runs": "Your runs", "calibrate": "Calibrate"}
#: what the views on your rows say while you have none (pages/validation.py)
NO_ROWS = {
    "runs": (
        "Choose your rows in the sidebar: an uploaded CSV in the columns of data/validation/measurements.csv "
        "(kind, target, draft, method, gpu, tp, dtype, stack, batch, context, k, tau, speedup, t_step_ms), "
        "or a run of the library with the pair and GPU it was measured on."
    ),
    "calibrate": "Calibration fits an engine profile to your rows: choose them in the sidebar first.",
}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("view", list(VIEW_LABELS))
def test_every_validation_view_renders(app_url, page, view, lang):
    link = f"{app_url}/validation?view={view}" + ("&lang=zh" if lang == "zh" else "")
    open_page(page, link, charts=view == "parity")
    assert_no_exception(page, link)
    label = zh(VIEW_LABELS[view]) if lang == "zh" else VIEW_LABELS[view]
    assert open_tab(page) == label
    title = zh("Validation") if lang == "zh" else "Validation"
    expect(page.locator('[data-testid="stMain"] h1').first).to_have_text(title)
    main = page.locator('[data-testid="stMain"]')
    if view == "parity":  # speedups and step times: every priceable published row, predicted and measured
        expect(main.locator(PLOT)).to_have_count(2)
        assert main.locator(CHART_SHOWN).count() >= 2
    elif view == "errors":  # the targets, overall, by engine, by source, by method
        expect(main.locator('[data-testid="stDataFrame"]')).to_have_count(5)
        assert main.locator('[data-testid="stDataFrame"] canvas').count() >= 5
    else:  # no rows of yours yet: the view says where they come from
        said = zh(NO_ROWS[view]) if lang == "zh" else NO_ROWS[view]
        expect(main.locator('[data-testid="stAlert"]').filter(has_text=said)).to_have_count(1)


def synthetic_csv() -> bytes:
    """Step rows of three Llama sizes at three batches, each measurement predicted with :data:`TRUE`
    (published.predict_row): what a run on an engine with exactly that profile would have measured."""
    out = [
        dict(kind="step", target=target, gpu=GPU, tp=tp, batch=b, context=1024, dtype=DTYPE, engine="my-engine")
        for target, tp in ((LLAMA_1B, 1), (LLAMA_8B, 1), (LLAMA_70B, 4))
        for b in (1, 8, 32)
    ]
    frame = pd.DataFrame(out)
    rows, problems = validation.check_rows(frame.assign(t_step_ms=1.0))
    assert not problems, problems
    frame["t_step_ms"] = [published.predict_row(row, TRUE) for _, row in rows.iterrows()]
    return frame.to_csv(index=False).encode()


def test_a_profile_calibrated_in_the_browser_is_saved_and_prices_hardware_from_its_link(
    app_url, page, library, tmp_path
):
    csv = tmp_path / "my-engine.csv"
    csv.write_bytes(synthetic_csv())
    open_page(page, f"{app_url}/validation?view=calibrate&mine=upload")
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploader"] input[type="file"]').set_input_files(
        str(csv)
    )
    code = page.locator('[data-testid="stMain"] [data-testid="stCode"]').first
    code.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    assert_no_exception(page, "/validation calibrating an upload")
    terms = code.inner_text().strip()
    eff = profiles.decode_terms(terms)  # what the page shows is a profile the library reads back
    for term in ("overhead_s", "layer_overhead_s"):
        assert abs(getattr(eff, term) / getattr(TRUE, term) - 1) <= FIT_TOLERANCE, (term, terms)
    expect(page.locator(f'[data-testid="stMain"] {PLOT}')).to_have_count(1)  # the fit's parity plot

    name = "my engine, H100 (browser)"
    box = page.get_by_label("Profile name")
    box.fill(name)
    box.press("Enter")
    wait_drawn(page)
    page.get_by_role("button", name="Save profile").click()
    expect(page.get_by_text(f"Saved as {name}.")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    assert_no_exception(page, "/validation after saving the profile")
    saved = store.list_profiles(store.open_library(library))
    assert saved["name"].tolist() == [name] and saved["terms"].tolist() == [terms]

    href = page.get_by_role("link", name="Open in Hardware & batch").first.get_attribute("href")
    open_page(page, urljoin(page.url, href), charts=True)
    assert_no_exception(page, href)
    assert query(page.url).get("engine") == ["custom"] and query(page.url).get("eng_terms") == [terms], page.url
    assert i18n.text("en", "Priced with a custom engine profile: {terms}.", terms=terms) in captions(page)
    k_star, speedup = k_star_at_batch_1(LLAMA_70B, LLAMA_1B, efficiency=eff)
    assert_k_star_metric(page, "At B = 1", k_star, speedup)

    page.get_by_role("tab", name="Step time").click()
    label = f"Target decode step at B = 1, L = {CONTEXT:,}"
    metric(page, label).first.wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    wait_drawn(page)
    step_ms = 1e3 * float(hw.step_time(LLAMA_70B, GPU, 1, CONTEXT, 1, dtype=DTYPE, tp=TP_TARGET, efficiency=eff))
    default_ms = 1e3 * float(hw.step_time(LLAMA_70B, GPU, 1, CONTEXT, 1, dtype=DTYPE, tp=TP_TARGET))
    assert f"{step_ms:.3f}" != f"{default_ms:.3f}"
    assert metric_value(page, label) == f"{step_ms:.3f} ms"
    assert_no_exception(page, "/hardware priced with the calibrated profile")

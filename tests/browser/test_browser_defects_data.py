"""Issue 56's data defects in headless Chromium, one test each: impossible calibration rows named (2), the reader
of a measurement-schema JSON lines upload named (3), a speculation profile's wrong type named (4), a vLLM
request's disagreeing values named with the ones used (5), and no Save profile in hosted mode without sign-in (9).

Needs Debian's ``chromium`` on PATH (``playwright install`` is never run); skipped without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _browser import CHROMIUM, ServerError, app_server, browser_fixture, page_fixture, streamlit_server
from playwright.sync_api import expect
from test_browser import RUN_TIMEOUT_MS, open_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium executable on PATH (apt-get install chromium)"),
]

FORMATS = Path(__file__).parents[1] / "fixtures" / "formats"
MAIN_UPLOAD = '[data-testid="stMain"] [data-testid="stFileUploader"] input[type="file"]'
SIDEBAR_UPLOAD = '[data-testid="stSidebar"] [data-testid="stFileUploader"] input[type="file"]'
STEP = dict(kind="step", target="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-SXM5-80GB", batch=1, t_step_ms=9.0)
SPEEDUP = STEP | dict(
    kind="speedup", draft="meta-llama/Llama-3.2-1B-Instruct", method="model", k=4, tau=3.0, speedup=2.0, t_step_ms=None
)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with app_server(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def hosted_url(tmp_path_factory):
    """A hosted server whose sign-in is a proxy header no request carries: every visitor is anonymous."""
    library = f"sqlite:///{tmp_path_factory.mktemp('hosted') / 'runs.sqlite'}"
    env = {"SPECVIZ_DB_URL": library, "SPECVIZ_HOSTED": "1", "SPECVIZ_AUTH_HEADER": "X-Forwarded-Email"}
    try:
        with streamlit_server("app.py", tmp_path_factory.mktemp("streamlit") / "server.log", env=env) as url:
            yield url
    except ServerError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def browser():
    yield from browser_fixture()


@pytest.fixture
def page(browser):
    yield from page_fixture(browser, RUN_TIMEOUT_MS)


def upload(page, selector: str, path: Path) -> None:
    page.locator(selector).first.set_input_files(str(path))


def rows_csv(path: Path, *rows: dict) -> Path:
    pd.DataFrame(list(rows)).to_csv(path, index=False)
    return path


def test_impossible_calibration_rows_are_named(app_url, page, tmp_path):
    csv = rows_csv(tmp_path / "mine.csv", STEP, SPEEDUP, SPEEDUP | dict(speedup=1e6), STEP | dict(t_step_ms=1e300))
    open_page(page, f"{app_url}/validation?view=calibrate&mine=upload")
    upload(page, SIDEBAR_UPLOAD, csv)
    expect(page.get_by_text("row 3: speedup = '1000000.0' is not allowed")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_text("at most τ = 3: a round costs at least one target step")).to_be_visible()
    expect(page.get_by_text("row 4: t_step_ms = '1e+300' is not allowed")).to_be_visible()
    expect(page.get_by_text("2 of 4 rows are valid and used.")).to_be_visible()


def test_schema_json_lines_are_read_as_such_and_the_reader_is_named(app_url, page, tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"label": "a", "k": 3, "alpha": 0.7}\n{"label": "b", "k": 5, "mean_accepted_tokens": 3.2}\n')
    open_page(page, f"{app_url}/run-library")
    upload(page, MAIN_UPLOAD, path)
    said = "Read as JSON lines in the measurement schema (detected from the content)."
    expect(page.get_by_text(said)).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0


def test_a_speculation_profile_of_the_wrong_type_names_field_value_and_type(app_url, page, tmp_path):
    profile = json.loads((FORMATS / "speculation_profile.json").read_text()) | {"num_speculative_tokens": "three"}
    path = tmp_path / "speculation_profile.json"
    path.write_text(json.dumps(profile))
    open_page(page, f"{app_url}/run-library")
    upload(page, MAIN_UPLOAD, path)
    error = page.locator('[data-testid="stAlertContentError"]').first
    expect(error).to_contain_text('num_speculative_tokens = "three" is text', timeout=RUN_TIMEOUT_MS)
    expect(error).to_contain_text("allowed: a JSON integer ≥ 1")  # Markdown draws >= as ≥
    expect(
        page.get_by_text("Read as Model-Optimizer speculation profiles (detected from the content).")
    ).to_be_visible()


def test_a_vllm_request_whose_values_disagree_is_named_with_the_values_used(app_url, page, tmp_path):
    response = json.loads((FORMATS / "vllm-per-request-spec.json").read_text())
    response["metrics"]["speculative_decoding"]["mean_acceptance_length"] = 3.9
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(response) + "\n")
    open_page(page, f"{app_url}/run-library")
    upload(page, MAIN_UPLOAD, path)
    said = page.get_by_text("mean_acceptance_length = 3.9 disagrees with", exact=False)
    expect(said).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(said).to_contain_text("2.556 is used")


def test_hosted_an_anonymous_visitor_is_told_to_sign_in_not_offered_save(hosted_url, page, tmp_path):
    open_page(page, f"{hosted_url}/validation?view=calibrate&mine=upload")
    upload(page, SIDEBAR_UPLOAD, rows_csv(tmp_path / "mine.csv", STEP, SPEEDUP))
    expect(page.get_by_text("Sign in to save or delete engine profiles.")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert page.get_by_role("button", name="Save profile").count() == 0

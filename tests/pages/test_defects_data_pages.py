"""Issue 56's data defects on the pages, in AppTest: impossible rows refused before a calibration (2), the reader
that took an upload named (3), and no Save profile for a visitor who may not save in hosted mode (9)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from _apps import open_app, rerun, shown_errors

from specviz.base import i18n

VALIDATION, LIBRARY = "pages/validation.py", "pages/run-library.py"
STEP = dict(kind="step", target="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-SXM5-80GB", batch=1)
SPEEDUP = STEP | dict(
    kind="speedup", draft="meta-llama/Llama-3.2-1B-Instruct", method="model", k=4, tau=3.0, speedup=2.0
)
#: two plausible rows and three impossible ones (a speedup above τ; a 1 ns and a 1e300 ms step)
ROWS = pd.DataFrame(
    [
        STEP | dict(t_step_ms=9.0),
        SPEEDUP,
        SPEEDUP | dict(speedup=1e6),
        STEP | dict(t_step_ms=1e-9),
        STEP | dict(t_step_ms=1e300),
    ]
)
SCHEMA_LINES = "\n".join(
    json.dumps(r) for r in ({"label": "a", "k": 3, "alpha": 0.7, "speedup": 2.1}, {"label": "b", "k": 5, "alpha": 0.6})
)


def upload_rows(at, frame: pd.DataFrame):
    at.file_uploader(key="validation.upload").upload("mine.csv", frame.to_csv(index=False).encode(), "text/csv")
    return rerun(at)


@pytest.mark.parametrize("lang", ["en", pytest.param("zh", marks=pytest.mark.slow)])
def test_impossible_rows_are_refused_before_the_calibration(lang):
    at = upload_rows(open_app(VALIDATION, view="calibrate", mine="upload", lang=lang), ROWS)
    errors = shown_errors(at)
    row = "第 {n} 行：" if lang == "zh" else "row {n}: "
    for n, field, value in ((3, "speedup", "1000000.0"), (4, "t_step_ms", "1e-09"), (5, "t_step_ms", "1e+300")):
        assert any(e.startswith(row.format(n=n) + f"{field} = {value!r}") for e in errors), errors
    said = i18n.text(lang, "{good} of {total} rows are valid and used.").format(good=2, total=5)
    assert said in [c.value for c in at.caption]


@pytest.mark.parametrize("lang", ["en", pytest.param("zh", marks=pytest.mark.slow)])
def test_json_lines_in_the_schema_are_read_as_such_and_the_reader_is_named(db_url, lang):
    at = open_app(LIBRARY, lang=lang)
    at.file_uploader(key="measured.files").upload("mine.jsonl", SCHEMA_LINES.encode(), "application/jsonl")
    rerun(at)
    assert not at.error, shown_errors(at)
    title = i18n.text(lang, "JSON lines in the measurement schema")
    how = i18n.text(lang, "detected from the content")
    said = i18n.text(lang, "Read as {title} ({how}).").format(title=title, how=how)
    assert said in [c.value for c in at.caption], [c.value for c in at.caption]


def test_a_refused_file_still_names_the_reader_that_refused_it(db_url):
    at = open_app(LIBRARY)
    bad = {"schema_version": "1.0", "conditional_accept_rates": [0.8], "num_speculative_tokens": "one"}
    at.file_uploader(key="measured.files").upload("speculation_profile.json", json.dumps(bad).encode(), "text/json")
    rerun(at)
    assert any('num_speculative_tokens = "one" is text' in e for e in shown_errors(at)), shown_errors(at)
    captions = [c.value for c in at.caption]
    assert "Read as Model-Optimizer speculation profiles (detected from the content)." in captions, captions


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "sign_in"), [("en", True), ("zh", True), ("en", False)])
def test_hosted_an_anonymous_visitor_is_told_to_sign_in_instead_of_offered_save(db_url, monkeypatch, lang, sign_in):
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    if sign_in:
        monkeypatch.setenv("SPECVIZ_AUTH_HEADER", "X-Forwarded-Email")
    at = upload_rows(open_app(VALIDATION, view="calibrate", mine="upload", lang=lang), ROWS.iloc[:2])
    assert at.code, "the calibration ran"
    buttons = [b.label for b in at.button]
    assert i18n.text(lang, "Save profile") not in buttons and i18n.text(lang, "Delete profile") not in buttons
    infos = [i.value for i in at.info]
    if sign_in:
        action = i18n.text(lang, "save or delete engine profiles")
        assert i18n.text(lang, "Sign in to {action}.").format(action=action) in infos, infos
    else:
        assert any("read-only" in i for i in infos), infos

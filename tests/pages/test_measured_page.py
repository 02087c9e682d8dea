"""AppTest of the run library and compare-runs pages (split from "Measured data", whose links still open
them) against a throw-away run library."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from _apps import open_app, rerun, shown_errors
from streamlit.testing.v1 import AppTest

from specviz.app import figures, ui
from specviz.base import i18n
from specviz.data import measurements, store

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "measured-data.py")
SAMPLES = ROOT / "data" / "samples"
GOOD = (SAMPLES / "specviz_bench_bundled_cpu.csv").read_bytes()
PARTLY_BAD = b"label,k,alpha,c,speedup\nok,4,0.8,20,2.1\nbad alpha,4,1.7,20,2.0\nbad k,0,0.5,20,1.1\nok2,2,0.6,10,1.3\n"
VLLM_LINE = (
    "INFO 05-12 10:00:01 [loggers.py:123] SpecDecoding metrics: Mean acceptance length: 2.95, "
    "Accepted: 195200 tokens, Drafted: 300000 tokens, Per-position acceptance rate: 0.800, 0.640, 0.512"
)


def run(**query: str) -> AppTest:
    """The old route: a link to /measured-data opens the run library or compare runs, as its query names."""
    return open_app("pages/measured-data.py", **query)


def library(**query: str) -> AppTest:
    return open_app("pages/run-library.py", **query)


def compare(**query: str) -> AppTest:
    return open_app("pages/compare-runs.py", **query)


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}; have {[b.label for b in at.button]}"
    return matches[0]


def charts(at: AppTest) -> list:
    return at.get("plotly_chart")


def saved_runs(url: str) -> pd.DataFrame:
    return store.list_runs(store.open_library(url))


def test_empty_library_renders_with_template_and_hints(db_url):
    at = run()
    assert at.title[0].value == "Run library"
    infos = " ".join(i.value for i in at.info)
    assert "library is empty" in infos
    assert any("Select runs" in i.value for i in compare().info)
    assert not at.error
    options = at.selectbox(key="measured.sample").options
    assert [o.split(" — ")[0] for o in options] == list(measurements.available_samples())
    assert len(options) == 4 and any("not our measurements" in o for o in options)


@pytest.mark.slow
def test_upload_good_file_preview_save_and_overlays(db_url):
    at = run()
    at.file_uploader(key="measured.files").upload("bench.csv", GOOD, "text/csv")
    rerun(at)
    assert "read 12 row(s)" in at.caption[1].value or any("read 12 row(s)" in c.value for c in at.caption)
    assert not at.error and not at.warning
    assert (
        at.text_input(key=next(t.key for t in at.text_input if t.label == "Run name")).value
        == "specviz bundled pair (CPU)"
    )
    button(at, "Save to library").click()
    rerun(at)
    runs = saved_runs(db_url)
    assert len(runs) == 1 and runs.n_rows.iloc[0] == 12 and runs.source.iloc[0] == "bench.csv"
    assert at.query_params["runs"] == str(runs.id.iloc[0])  # the new run is selected and in the URL
    assert any(s.value.startswith("Saved as run #") for s in at.success)
    at = compare(runs=at.query_params["runs"][0])
    # overlays: speedup vs K, (α, c) map, E[N] vs K, parity, per position and the distribution of N
    assert len(charts(at)) == 6
    assert [t.label for t in at.tabs] == [
        "Speedup vs K",
        "(α, c) map",
        "E[N] vs K",
        "Measured vs predicted",
        "Per position",
        "By context and domain",
    ]
    series_table = at.dataframe[-1].value
    run_id = runs.id.iloc[0]
    assert list(series_table.series) == [
        f"#{run_id} specviz bundled pair (CPU) · T=0",
        f"#{run_id} specviz bundled pair (CPU) · T=1",
    ]


@pytest.mark.slow
def test_partly_bad_file_lists_errors_and_saves_good_rows(db_url):
    at = run()
    at.file_uploader(key="measured.files").upload("mixed.csv", PARTLY_BAD, "text/csv")
    rerun(at)
    (warning,) = at.warning
    assert "2 bad cell(s) in 2 row(s)" in warning.value
    errors = at.dataframe[0].value
    assert list(errors.row) == [3, 4] and list(errors.column) == ["alpha", "k"]
    assert "[0, 1]" in errors.allowed.iloc[0]
    assert list(at.dataframe[1].value.label) == ["ok", "ok2"]  # the preview holds the good rows
    button(at, "Save to library").click()
    rerun(at)
    assert saved_runs(db_url).n_rows.tolist() == [2]


@pytest.mark.parametrize(
    "name,data,message",
    [
        ("binary.csv", bytes(range(256)) * 4, "not a text file"),
        ("empty.csv", b"", "empty"),
        ("nok.csv", b"label,alpha\na,0.5\n", "k"),
    ],
)
def test_unusable_files_are_one_clear_error_and_store_nothing(db_url, name, data, message):
    at = run()
    at.file_uploader(key="measured.files").upload(name, data, "text/csv")
    rerun(at)
    (error,) = at.error
    assert name in error.value and message in error.value
    assert not [b for b in at.button if b.label == "Save to library"]
    assert saved_runs(db_url).empty


def test_pasted_vllm_log_needs_k_then_loads(db_url):
    at = run()
    at.text_area(key="measured.paste").input(VLLM_LINE)
    rerun(at)
    assert (
        "do not state the draft length K" in at.error[0].value
        and "set K for files that do not state it" in at.error[0].value
    )
    at.number_input(key="measured.k_given").set_value(3)
    rerun(at)
    assert not at.error
    preview = at.dataframe[0].value
    assert preview.k.tolist() == [3] and abs(preview.alpha_used.iloc[0] - 0.8) < 0.01


@pytest.mark.slow
def test_one_click_sample_then_select_and_restore_from_url(db_url):
    at = run()
    at.selectbox(key="measured.sample").set_value("published_leviathan2023.csv")
    button(at, "Load this sample").click()
    rerun(at)
    button(at, "Save to library").click()
    rerun(at)
    (run_id,) = saved_runs(db_url).id
    # a fresh session opened from the shared link shows the same selection and K of the heatmap
    at2 = run(runs=str(run_id), hk="7")
    assert at2.multiselect(key="measured.runs").value == [run_id]
    assert at2.number_input(key="measured.hk").value == 7
    assert len(charts(at2)) == 4  # no per-position data in the paper's table
    assert "None of the selected rows has per-position acceptance." in [i.value for i in at2.info]
    heatmap = charts(at2)[1]
    assert "K = 7" in heatmap.proto.spec


@pytest.mark.slow
def test_bad_and_stale_url_values_warn(db_url):
    at = run(runs="1,abc", hk="500")
    messages = " ".join(w.value for w in at.warning)
    assert "runs='1,abc'" in messages and "hk='500'" in messages
    a, _ = _store_two_runs(db_url)
    at = run(runs=f"{a},42")
    assert any("#42" in w.value and "not in the library" in w.value for w in at.warning)
    assert at.multiselect(key="measured.runs").value == [a]
    assert at.query_params["runs"] == str(a)


def _store_two_runs(url: str) -> tuple[int, int]:
    engine = store.open_library(url)
    ids = []
    for label, target in (("alpha run", "llama-70b"), ("beta run", "qwen-32b")):
        df, report = measurements.load_measurements(
            f"label,k,alpha,c,speedup,target_model\n{label},4,0.8,20,2.2,{target}\n", name=label
        )
        ids.append(store.save_run(engine, df, label=label, source="test", report=report.summary()))
    return ids[0], ids[1]


def test_filter_narrows_the_library(db_url):
    _a, b = _store_two_runs(db_url)
    at = run(filter="qwen")
    assert at.dataframe[0].value.id.tolist() == [b]
    assert at.multiselect(key="measured.runs").options == [f"#{b} beta run"]


@pytest.mark.slow
def test_trash_asks_for_confirmation_and_cancel_keeps(db_url):
    a, b = _store_two_runs(db_url)
    at = library(runs=f"{a}")
    button(at, "Move the selected runs to the trash…").click()
    rerun(at)
    assert any("can restore it for 30 days" in w.value for w in at.warning)
    assert len(saved_runs(db_url)) == 2  # nothing moved before the confirmation
    button(at, "Cancel").click()
    rerun(at)
    assert len(saved_runs(db_url)) == 2
    button(at, "Move the selected runs to the trash…").click()
    rerun(at)
    button(at, "Yes, move to the trash").click()
    rerun(at)
    assert saved_runs(db_url).id.tolist() == [b]
    assert store.list_trash(store.open_library(db_url)).id.tolist() == [a]
    assert at.multiselect(key="measured.runs").value == []


def test_export_of_selected_runs_is_escaped_csv(db_url):
    engine = store.open_library(db_url)
    df, _ = measurements.load_measurements("label,k,alpha\n=HYPERLINK(1),4,0.8\n", name="x")
    run_id = store.save_run(engine, df, label="formula", source="test")
    at = library(runs=str(run_id))
    (download,) = [d for d in at.get("download_button") if "(CSV)" in d.proto.label]
    data = store.export_csv(store.load_runs(engine, [run_id]))
    assert b"'=HYPERLINK(1)" in data and b",=HYPERLINK" not in data
    assert download.proto.label == "Export the selected runs (CSV)"


def test_unopenable_library_is_an_error_not_a_crash(monkeypatch):
    monkeypatch.setenv(store.ENV_URL, "not a database url")
    at = run()
    assert any(store.ENV_URL in e and "not a database url" in e for e in shown_errors(at))
    at.file_uploader(key="measured.files").upload("bench.csv", GOOD, "text/csv")
    rerun(at)  # files can still be checked, just not saved
    assert not [b for b in at.button if b.label == "Save to library"]


def test_identical_inputs_are_shown_once(db_url):
    at = run()
    at.file_uploader(key="measured.files").upload("a.csv", GOOD, "text/csv")
    at.file_uploader(key="measured.files").upload("b.csv", GOOD, "text/csv")
    rerun(at)
    assert [b.label for b in at.button].count("Save to library") == 1
    assert any("same content as a.csv" in c.value for c in at.caption)


@pytest.mark.slow
def test_a_deleted_run_can_be_saved_again(db_url):
    at = run()
    at.file_uploader(key="measured.files").upload("mixed.csv", PARTLY_BAD, "text/csv")
    rerun(at)
    button(at, "Save to library").click()
    rerun(at)
    (first,) = saved_runs(db_url).id
    store.delete_runs(store.open_library(db_url), [first])  # e.g. by a colleague
    rerun(at)
    assert not any(s.value.startswith("Saved as run") for s in at.success)
    button(at, "Save to library").click()
    rerun(at)
    assert saved_runs(db_url).id.tolist() == [first + 1]  # a new id: ids are never reused


def test_the_report_is_drawn_from_its_fields(db_url):
    data = b"label,k,c_L,alpha,junk,speedup_ratio\nA,4,0.125,0.7,x,1.2\n"
    at = run()
    at.file_uploader(key="measured.files").upload("fields.csv", data, "text/csv")
    rerun(at)
    _, report = measurements.load_measurements(data, name="fields.csv")
    captions = [c.value for c in at.caption]
    for line in (report.headline, report.conversions_text, report.ignored_text, *report.warnings):
        assert any(ui.plain(line) in c for c in captions), line
    assert report.ignored and report.warnings  # the file exercises every kind of line
    assert any("`c_L` → `c`" in i.value for i in at.info)


def test_option_widgets_take_their_bounds_and_choices_from_their_params(db_url):
    at = run()
    k_given = at.number_input(key="measured.k_given")
    assert (k_given.min, k_given.max, k_given.value) == (0, 4096, 0)
    fmt = at.selectbox(key="measured.format")
    assert fmt.value == "auto"
    assert fmt.options == ["detect", *(measurements.READERS[n].title for n in sorted(measurements.READERS))]
    assert at.checkbox(key="measured.no_bonus").value is False


QUOTED = 'say "hi" <b>x</b> & y'


@pytest.mark.slow
def test_a_quoted_label_shows_as_typed_in_tables_and_charts(db_url):
    """A run named with " < > & is data in the tables and escaped only for plotly in the charts.

    Was a defect: the legends and hovers showed " as &quot; (an entity plotly does not decode).
    """
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([["label", "k", "alpha", "c", "speedup"], [QUOTED, 4, 0.8, 20, 2.2]])
    df, _ = measurements.load_measurements(buf.getvalue(), name="q.csv")
    run_id = store.save_run(store.open_library(db_url), df, label=QUOTED, source="q.csv")
    assert library(runs=str(run_id)).dataframe[0].value.label.tolist() == [QUOTED]  # the library table
    at = compare(runs=str(run_id))
    assert at.dataframe[-1].value.series.tolist() == [f"#{run_id} {QUOTED}"]  # the series table
    traces = json.loads(charts(at)[0].proto.spec)["data"]
    names = [t["name"] for t in traces if t.get("name")]
    assert f"#{run_id} {figures.plotly_text(QUOTED)}: measured" in names, names
    hover = next(t["text"][0] for t in traces if t.get("name", "").endswith(": measured"))
    assert f"label: {figures.plotly_text(QUOTED)}<br>" in hover
    assert not [t for t in traces if "&quot;" in json.dumps(t)]


def test_hosted_mode_shows_no_database_path(tmp_path, monkeypatch):
    """A run-library error names the database for the operator, and hides it on a hosted deployment."""
    url = f"sqlite:///{tmp_path / 'library.sqlite'}"
    engine = store.open_library(url)
    with engine.begin() as conn:  # a library from a newer specviz: open_library refuses it, quoting its URL
        conn.exec_driver_sql("UPDATE specviz_info SET value = '99' WHERE key = 'schema_version'")
    engine.dispose()
    monkeypatch.setenv(store.ENV_URL, url)
    monkeypatch.delenv("SPECVIZ_HOSTED", raising=False)
    (error,) = shown_errors(run())
    assert str(tmp_path) in error  # the operator's own server says which file
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    (error,) = shown_errors(run())
    assert "[hidden]" in error and "99" in error, error
    assert str(tmp_path) not in error and "sqlite" not in error, error


def test_reader_and_sample_names_are_catalogue_texts():
    """The Format and Sample choices show the readers' titles and the samples' descriptions, which are
    messages (i18n.Phrase) translated into Chinese, so a new reader or sample brings its texts."""
    for item in [r.title for r in measurements.READERS.values()] + list(measurements.SAMPLES.values()):
        assert isinstance(item, i18n.Phrase) and i18n.translated("zh", item.msgid)


@pytest.mark.slow
def test_in_chinese_the_page_works_through_reruns_and_keeps_canonical_names(db_url):
    at = run(lang="zh")
    assert at.title[0].value == "运行库"
    assert at.selectbox(key="measured.format").options[0] == i18n.text("zh", "detect")
    at.text_area(key="measured.paste").input("label,k,alpha\nP,4,0.8\n")
    rerun(at)  # a second run in zh (the selectboxes' labels are formatted again)
    assert "**粘贴的文本**" in [m.value for m in at.markdown]
    button(at, i18n.text("zh", "Save to library")).click()
    rerun(at)
    runs = saved_runs(db_url)
    assert runs.source.tolist() == ["pasted text"]  # stored under the canonical name
    table = at.dataframe[-1].value  # the library table keeps its column names; only the headers are translated
    assert "target_model" in table.columns
    assert json.loads(at.dataframe[-1].proto.columns)["target_model"]["label"] == "目标模型"
    assert compare(runs=str(runs.id.iloc[0]), lang="zh").tabs[0].label == i18n.text("zh", "Speedup vs K")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "title", "published"),
    [
        ({}, "Run library", {}),
        ({"filter": "qwen"}, "Run library", {"filter": "qwen"}),
        ({"runs": "RUN", "filter": "beta"}, "Run library", {"runs": "RUN", "filter": "beta"}),
        ({"runs": "RUN"}, "Compare runs", {"runs": "RUN"}),
        ({"hk": "3", "k_given": "2", "no_bonus": "true"}, "Compare runs", {"hk": "3"}),
        ({"runs": "RUN", "hk": "3", "filter": "beta"}, "Compare runs", {"runs": "RUN", "hk": "3"}),
    ],
)
def test_an_old_measured_data_link_opens_the_page_its_query_names(db_url, query, title, published):
    """/measured-data?…: hk, or runs without a filter, open compare runs; anything else the run library; the
    controls the page has are restored from the same query and mirrored back."""
    _, b = _store_two_runs(db_url)
    at = run(**{k: v.replace("RUN", str(b)) for k, v in query.items()})
    assert at.title[0].value == title
    assert dict(at.query_params) == {k: v.replace("RUN", str(b)) for k, v in published.items()}
    if "runs" in query:
        assert at.multiselect(key="measured.runs").value == [b]
    assert not at.warning, [w.value for w in at.warning]


@pytest.mark.slow
def test_the_selection_follows_from_the_library_to_compare_runs(db_url):
    a, _ = _store_two_runs(db_url)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["runs"] = str(a)
    rerun(at.switch_page("pages/run-library.py"))
    assert at.multiselect(key="measured.runs").value == [a]
    at.query_params.clear()  # a page switch leaves the query behind
    rerun(at.switch_page("pages/compare-runs.py"))
    assert at.title[0].value == "Compare runs" and at.multiselect(key="measured.runs").value == [a]

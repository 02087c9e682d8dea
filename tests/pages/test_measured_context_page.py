"""AppTest of the compare-runs page's acceptance by context and domain, the against-published page and the
run library's speculation-profile export; and the Hardware and Serving pages priced with a fitted α(L)."""

from __future__ import annotations

import pytest
from _apps import open_app, rerun, shown_errors

from specviz.base import i18n
from specviz.core import acceptance
from specviz.data import measurements, store

TARGET = "meta-llama/Llama-3.1-8B-Instruct"
ROWS = [  # (context, domain, E[N]) at K = 3, 400 rounds each
    (512, "code", 3.1),
    (2048, "code", 2.8),
    (8192, "chat", 2.4),
    (32768, "chat", 2.0),
]
CSV = "label,k,mean_accepted_tokens,rounds,context_length,domain,target_model,method,temperature\n" + "".join(
    f"long context,3,{m},400,{c},{d},{TARGET},eagle3,0\n" for c, d, m in ROWS
)


def saved(db_url: str, lang: str = "en", page: str = "compare-runs"):
    """``page`` showing the CSV saved as a run (on the run library) and selected."""
    at = open_app("pages/run-library.py", lang=lang)
    at.text_area(key="measured.paste").set_value(CSV)
    rerun(at)
    next(b for b in at.button if b.label == i18n.text(lang, "Save to library")).click()
    rerun(at)
    return at if page == "run-library" else open_app(f"pages/{page}.py", lang=lang, runs=at.query_params["runs"][0])


@pytest.mark.slow
def test_acceptance_by_context_fits_the_decay_and_links_it(db_url):
    at = saved(db_url)
    assert not at.error
    frame, _ = measurements.load_measurements(CSV)
    fit = acceptance.fit_decay(acceptance.row_acceptance(frame))
    assert fit.b > 0 and fit.weighted
    text = " ".join(m.value for m in at.markdown)
    assert (
        f"logit α(L) = {fit.a:.3f} − {fit.b:.3f}·ln(L / 1024)" in text and "on 4 row(s) at 4 context length(s)" in text
    )
    links = {link.label: link.proto.url for link in at.get("link_button")}
    hardware = links["Price long contexts with this α(L) on Hardware & batch"]
    assert hardware.endswith(f"/hardware?a_src=fit&alpha_l={fit.to_param().replace(';', '%3B')}")
    assert links["Serve with this α(L)"].endswith("/serving?alpha_l=" + fit.to_param().replace(";", "%3B"))
    tables = [d.value for d in at.dataframe]
    by_bucket = next(t for t in tables if "bucket" in t.columns)
    assert by_bucket["bucket"].tolist() == ["256–512", "1k–2k", "4k–8k", "16k–32k"]
    assert by_bucket["alpha_lo"].lt(by_bucket["alpha"]).all() and by_bucket["alpha_hi"].gt(by_bucket["alpha"]).all()
    by_domain = next(t for t in tables if "domain" in t.columns and "alpha_lo" in t.columns)
    assert sorted(by_domain["domain"]) == ["chat", "code"]


@pytest.mark.slow
def test_a_run_is_compared_with_the_published_rows_of_its_target(db_url):
    at = saved(db_url, page="published-acceptance")
    table = next(d.value for d in at.dataframe if "published_alpha" in d.value.columns)
    reference = acceptance.load_reference()
    same = reference[reference["target"] == TARGET]
    assert len(table) == min(8, len(same)) and set(table["source"]) <= set(same["source"])
    assert table["published_draft"].iloc[0] in set(same[same["method"] == "eagle3"]["draft"]) | {"eagle3"}
    differs = table[table["published_k"] != 3]
    assert all("K = 3 here" in d for d in differs["differences"])


@pytest.mark.slow
def test_profile_export_of_the_selected_run(db_url):
    at = saved(db_url, page="run-library")
    runs = store.list_runs(store.open_library(db_url))
    frame = store.load_runs(store.open_library(db_url), runs["id"].tolist())
    profile = measurements.profile_from_rows(frame)
    assert profile["num_speculative_tokens"] == 3 and profile["accept_length_model"] == "chain_analytic"
    assert profile["conditional_accept_rates"] == [pytest.approx(profile["conditional_accept_rates"][0])] * 3
    with pytest.raises(ValueError, match="speculation profile"):
        measurements.profile_from_rows(frame.iloc[:0])
    assert any(b.proto.label == "Export as speculation_profile.json" for b in at.get("download_button"))


@pytest.mark.slow
def test_the_context_view_in_chinese(db_url):
    at = saved(db_url, lang="zh")
    assert not at.error
    assert i18n.text("zh", "By context and domain") in [t.label for t in at.tabs]
    assert any(link.proto.label == i18n.text("zh", "Serve with this α(L)") for link in at.get("link_button"))


@pytest.mark.slow
def test_rows_without_context_or_domain_say_what_is_missing(db_url):
    at = open_app("pages/measured-data.py")
    at.text_area(key="measured.paste").set_value("label,k,alpha\nplain,3,0.7\n")
    rerun(at)
    next(b for b in at.button if b.label == "Save to library").click()
    rerun(at)
    at = open_app("pages/compare-runs.py", runs=at.query_params["runs"][0])
    assert any("None of the selected rows has a context length or a domain" in i.value for i in at.info)


@pytest.mark.slow
def test_hardware_prices_the_context_at_the_fitted_alpha():
    fit = acceptance.DecayFit(1.5, 0.3)
    at = open_app("pages/hardware.py", a_src="fit", alpha_l=fit.to_param(), ctx="16384", view="map")
    assert not at.error
    assert any("Each context is priced at its own α(L)" in c.value for c in at.caption)
    at = open_app("pages/hardware.py", a_src="fit", alpha_l="1.5", ctx="16384")
    assert any("alpha_l" in e and "'1.5'" in e for e in shown_errors(at))


@pytest.mark.slow
def test_serving_takes_the_fit_and_names_bad_text():
    fit = acceptance.DecayFit(1.5, 0.3)
    plain = open_app("pages/serving.py")
    decayed = open_app("pages/serving.py", alpha_l=fit.to_param())
    assert not plain.error and not decayed.error
    assert plain.text_input(key="serving.alpha_l").value == ""
    assert decayed.text_input(key="serving.alpha_l").value == fit.to_param()
    bad = open_app("pages/serving.py", alpha_l="x;y")
    assert any("alpha_l" in e for e in shown_errors(bad))


def test_hardware_speedup_by_batch_takes_alpha_of_context():
    from specviz.core import hardware

    fit = acceptance.DecayFit(1.5, 0.3)
    pair = ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "H100-SXM5-80GB")
    by_fit = hardware.speedup_by_batch(*pair, fit, [1], [1024, 32768], 4)
    for ctx, row in zip([1024, 32768], by_fit.itertuples(), strict=True):
        fixed = hardware.speedup_by_batch(*pair, float(fit.alpha(ctx)), [1], [ctx], 4)
        assert row.s_4 == pytest.approx(float(fixed["s_4"].iloc[0]))


FORMATS = __import__("pathlib").Path(__file__).parents[1] / "fixtures" / "formats"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "reader"),
    [
        ("vllm-bench-serve.json", "vllm_bench"),
        ("sglang-bench-speculative.jsonl", "sglang_bench"),
        ("aiperf-profile-export.json", "aiperf"),
        ("speculation_profile.json", "speculation_profile"),
        ("speculation_profile.ar_validate.json", "speculation_profile"),
        ("llamacpp-spec-stats.log", "llamacpp_log"),
        ("vllm-per-request-spec.json", "vllm_request"),
    ],
)
def test_the_page_reads_each_tools_file_with_its_report(db_url, name, reader):
    """Each format uploaded on the page: detected, its report shown, its rows previewed and saved."""
    at = open_app("pages/measured-data.py")
    at.number_input(key="measured.k_given").set_value(3)
    at.file_uploader(key="measured.files").upload(name, (FORMATS / name).read_bytes(), "text/plain")
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    frame, report = measurements.load_measurements(FORMATS / name, name=name, k=3)
    assert report.format == reader
    assert any(str(report.headline) in c.value.replace("\\", "") for c in at.caption)  # ui.plain escapes _
    preview = next(d.value for d in at.dataframe if "label" in d.value.columns)
    assert len(preview) == len(frame)
    next(b for b in at.button if b.label == "Save to library").click()
    rerun(at)
    assert store.list_runs(store.open_library(db_url)).n_rows.tolist() == [len(frame)]
    at = open_app("pages/compare-runs.py", runs=at.query_params["runs"][0])
    if "per_position_acceptance" in frame and frame["per_position_acceptance"].notna().any():
        assert any("The tokens per round N" in c.value for c in at.caption)  # drawn against the chapter's pmf

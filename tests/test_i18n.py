"""The interface in English and Chinese: catalogues, keys used by the code, the language switch."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest
from _apps import open_app, rerun

from specviz.base import i18n

ROOT = Path(__file__).resolve().parents[1]
#: Every page: each visible string comes from the catalogues.
TRANSLATED = tuple(f"pages/{p.stem}.py" for p in sorted((ROOT / "pages").glob("*.py")))
#: A link that makes the page show more of itself (in zh, every part must be Chinese).
PAGE_QUERY = {
    "pages/hardware.py": {
        "view": "Memory",
        "pair": "Llama-3.1 405B + 8B",
        "tp_t": "1",
        "a_src": "the live page's last run",
    },
    "pages/sampling-lab.py": {"view": "Emitted tokens", "variant": "temperature_mismatch"},
    "pages/strategies.py": {"view": "Draft-length policies", "rounds": "1000"},
    "pages/engine-monitor.py": {"endpoints": "http://127.0.0.1:1", "c_src": "the Hardware page's model"},
    "pages/break-even.py": {"view": "Chapter numbers"},
    "pages/design-space.py": {"tab": "Point inspector", "i_c": "0.5"},  # "never pays off", "don't speculate"
}
#: Catalogue texts the same in both languages besides symbols and formulas: proper names, engine identifiers.
SAME_IN_BOTH = {"specviz", "accept len / speculative_num_draft_tokens"}
WORD = re.compile(r"(?<![\w])[A-Za-z]{3,}(?![\w])")  # an English word (not α, K, E[N], c_L, T_draft)
PROPER_NAMES = {
    "specviz",
    "SpecDec",
    "MLP",
    "Leviathan",
    "vLLM",
    "SGLang",
    "llama",
    "cpp",
    "TensorRT",
    "LLM",
    "GPU",
    "URL",
}


def needs_translation(english: str) -> bool:
    """Whether a catalogue text has words to translate (symbols, formulas and proper names stay as they are)."""
    words = [w for w in WORD.findall(re.sub(r"\{[^{}]*\}", "", english)) if w not in PROPER_NAMES]  # not {fields}
    return english not in SAME_IN_BOTH and bool(words)


def code_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "specviz").rglob("*.py"))]


def test_catalogues_have_the_same_keys_and_fields():
    en, zh = i18n.catalogue("en"), i18n.catalogue("zh")
    assert set(en) == set(zh), sorted(set(en) ^ set(zh))
    assert i18n.missing("zh") == []
    wrong = {k: (i18n.fields(en[k]), i18n.fields(zh[k])) for k in en if i18n.fields(en[k]) != i18n.fields(zh[k])}
    assert not wrong, wrong


def test_every_chinese_text_is_translated():
    en, zh = i18n.catalogue("en"), i18n.catalogue("zh")
    same = [k for k in en if zh[k] == en[k] and needs_translation(en[k])]
    assert not same, same
    assert all(re.search(r"[\u4e00-\u9fff]", zh[k]) for k in zh if needs_translation(en[k]))


def test_every_page_uses_the_one_glossary_of_terms():
    """A catalogue text that uses a glossary term in English uses its Chinese term (data/i18n/terms.json)."""
    glossary = json.loads((ROOT / "data" / "i18n" / "terms.json").read_text(encoding="utf-8"))
    en, zh = i18n.catalogue("en"), i18n.catalogue("zh")
    assert set(glossary["exceptions"]) <= set(en)
    wrong = [
        (key, term, zh[key])
        for term, chinese in glossary["terms"].items()
        for key in en
        if key not in glossary["exceptions"]
        and re.search(rf"(?<![\w`_-]){re.escape(term)}(?![\w`_])", en[key], re.IGNORECASE)
        and chinese not in zh[key]
    ]
    assert not wrong, wrong


def test_every_key_the_code_asks_for_exists():
    literal = re.compile(r"""\b(?:t|Message|Phrase)\(\s*["']([\w.-]+)["']""")  # ui.t("k"), i18n.Message("k", ...)
    asked = {m for path in code_files() for m in literal.findall(path.read_text(encoding="utf-8"))}
    pages = [p.stem for p in (ROOT / "pages").glob("*.py")]
    asked |= {f"nav.{p}" for p in pages} | {f"home.link.{p}" for p in pages if p != "home"}
    assert asked, "the scan found no keys"
    assert not sorted(asked - set(i18n.catalogue("en")))


def test_text_fills_fields_and_falls_back_to_english(monkeypatch):
    monkeypatch.setitem(i18n.catalogue("en"), "test.only_english", "{n} tokens")
    assert i18n.text("zh", "test.only_english", n=3) == "3 tokens"
    with pytest.raises(KeyError):
        i18n.text("en", "no.such.key")
    with pytest.raises(ValueError, match="not one of en, zh"):
        i18n.catalogue("fr")


def test_a_message_error_reads_english_as_a_string_and_any_language_on_a_page(monkeypatch):
    for lang, wrap, k in (
        ("en", "{where}: {cause}", "K must be >= 1; got {k}"),
        ("zh", "{where}：{cause}", "K 必须 ≥ 1；收到 {k}"),
    ):
        monkeypatch.setitem(i18n.catalogue(lang), "test.wrap", wrap)
        monkeypatch.setitem(i18n.catalogue(lang), "test.k", k)
    exc = i18n.Message("test.wrap", where="run 3", cause=i18n.Message("test.k", k=0))
    assert isinstance(exc, ValueError) and str(exc) == "run 3: K must be >= 1; got 0"
    assert exc.text("zh") == i18n.localized(exc, "zh") == "run 3：K 必须 ≥ 1；收到 0"  # the cause in zh too
    assert pickle.loads(pickle.dumps(exc)).text("zh") == exc.text("zh")
    assert i18n.localized(ValueError("plain"), "zh") == "plain"
    note = i18n.Phrase("test.wrap", where="link", cause=i18n.Phrase("test.k", k=5))
    assert note == "link: K must be >= 1; got 5" and isinstance(note, str)  # as a string: English
    assert i18n.localized(note, "zh") == "link：K 必须 ≥ 1；收到 5"
    assert pickle.loads(pickle.dumps(note)).text("zh") == note.text("zh")


@pytest.mark.parametrize(
    ("locale", "lang"), [("zh-CN", "zh"), ("zh_TW", "zh"), ("ZH", "zh"), ("en-US", "en"), ("de", "en"), (None, "en")]
)
def test_language_from_the_browser_locale(locale, lang):
    assert i18n.from_locale(locale) == lang


def chart_texts(at) -> list[str]:
    """Every word a chart shows: titles, axis and colour-bar titles, legend, trace names, annotations."""
    out = []

    def walk(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                if k != "template":  # plotly's theme, not our text
                    walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in ("text", "name", "title", "hovertemplate"):
            out.append(node)

    for chart in at.get("plotly_chart"):
        walk(json.loads(chart.proto.spec))
    return out


def visible_texts(at) -> list[str]:
    """Every string a person reads on the page: titles, headers, text, messages, links and widget labels."""
    kinds = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success")
    out = [e.value for kind in kinds for e in getattr(at, kind)]
    widgets = ("text_area", "text_input", "number_input", "selectbox", "toggle", "button", "expander", "metric")
    return out + [link.label for link in at.page_link] + [w.label for kind in widgets for w in getattr(at, kind)]


@pytest.mark.parametrize("page", TRANSLATED)
def test_a_page_in_english_shows_no_chinese_text(page):
    """The other half of "both languages": in English no Chinese catalogue text leaks (the switch's 中文 aside)."""
    script = "app.py" if page == "pages/home.py" else page
    at = open_app(script, lang="en", **PAGE_QUERY.get(page, {}))
    shown = [s.replace(i18n.LANGUAGES["zh"], "") for s in visible_texts(at) + chart_texts(at)]
    assert shown and not [s for s in shown if re.search(r"[\u4e00-\u9fff]", s)]


@pytest.mark.parametrize("page", TRANSLATED)
def test_a_translated_page_shows_no_english_catalogue_text_in_chinese(page):
    script = "app.py" if page == "pages/home.py" else page
    at = open_app(script, lang="zh", **PAGE_QUERY.get(page, {}))
    english = {v for v in i18n.catalogue("en").values() if needs_translation(v)}
    shown = visible_texts(at)
    assert shown and not [s for s in shown if s in english]
    drawn = chart_texts(at)  # a chart's words are in the catalogue whole, or with a field filled in
    assert not [s for s in drawn if s in english or any(e in s for e in english if len(e) > 12)]
    assert any(re.search(r"[\u4e00-\u9fff]", s) for s in shown)


def test_the_switch_changes_the_language_and_the_url_keeps_it():
    at = open_app("app.py")
    assert at.subheader[0].value == i18n.text("en", "home.tokens_per_round")
    switch = at.sidebar.button_group[0]
    switch.set_value("zh")
    rerun(at)
    assert at.subheader[0].value == i18n.text("zh", "home.tokens_per_round")
    assert at.query_params["lang"] == "zh"
    assert at.page_link[0].label == i18n.text("zh", "home.link.design-space")


def test_switching_language_keeps_every_other_control():
    at = open_app("pages/converter.py", k="7", value="3.5")
    at.session_state["_specviz_lang"] = "zh"
    rerun(at)
    assert at.number_input(key="converter.k").value == 7 and at.number_input(key="converter.value").value == 3.5
    assert at.query_params["lang"] == "zh" and at.query_params["k"] == "7"


def test_the_chapter_tables_show_the_chapters_own_headings_in_chinese():
    at = open_app("pages/break-even.py", lang="zh", view="Chapter numbers")
    shown = " ".join(m.value for m in at.markdown)
    assert "4.4 数值算例" in shown and "5.3 数值算例" in shown and "题 2（计算）" in shown
    assert "（章节）" in shown and "加速比（计算）" in shown and "| 是 |" in shown  # headers and verdicts
    assert [t.label for t in at.tabs] == ["盈亏平衡边界", "最优 K", "章节数值"]


def test_a_translated_tab_opens_by_its_choice_and_keeps_it_in_the_link():
    at = open_app("pages/break-even.py", lang="zh")
    at.session_state["breakeven.view"] = "Optimal K"  # the choice, as a link or a click sets it
    rerun(at)
    assert at.query_params["view"] == "Optimal K" and any(m.label == "最优 K" for m in at.metric)
    assert at.session_state["breakeven.view._label"] == "最优 K"  # the tabs show the choice's label


def test_a_chinese_choice_set_from_outside_the_script_run_keeps_its_label():
    """AppTest maps a value to its label by calling format_func outside the script run; ui binds the language."""
    at = open_app("pages/design-space.py", lang="zh")
    at.radio(key="design.view").set_value("3-D surface")
    rerun(at)
    assert at.radio(key="design.view").value == "3-D surface" and at.query_params["view"] == "3-D surface"
    assert i18n.text("zh", "ds.view.3-D surface") in at.radio(key="design.view").options

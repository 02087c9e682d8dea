"""The interface in English and Chinese: the gettext catalogues and their check, plurals and contexts, the
language switch, and every page in both languages."""

from __future__ import annotations

import ast
import json
import pickle
import re
import shutil
from pathlib import Path

import pytest
from _apps import open_app, rerun

from specviz.base import catalogues, i18n
from specviz.base.i18n import C_

ROOT = Path(__file__).resolve().parents[2]
#: Every page: each visible string comes from the catalogues.
TRANSLATED = tuple(f"pages/{p.stem}.py" for p in sorted((ROOT / "pages").glob("*.py")))
#: A link that makes the page show more of itself (in zh, every part must be Chinese).
PAGE_QUERY = {
    "pages/hardware.py": {
        "view": "memory",
        "pair": "Llama-3.1 405B + 8B",
        "tp_t": "1",
        "a_src": "live",
    },
    "pages/sampling-lab.py": {"view": "emitted", "variant": "temperature_mismatch"},
    "pages/strategies.py": {"view": "policies", "rounds": "1000"},
    "pages/server-monitor.py": {"endpoints": "http://127.0.0.1:1", "c_src": "hardware"},
    "pages/break-even.py": {"view": "Chapter numbers"},
    "pages/design-space.py": {"tab": "inspector", "i_c": "0.5"},  # "never pays off", "don't speculate"
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


def chinese() -> list[tuple[str, str]]:
    """(English, Chinese) of every message of the Chinese catalogue, each plural form beside its English."""
    out = []
    for (_context, msgid), forms in i18n.translations("zh").items():
        out += [(msgid, form) for form in forms]
    return out


@pytest.mark.slow
def test_the_catalogues_are_in_step_with_the_code():
    """The .pot holds exactly the code's messages; Chinese translates each, none fuzzy, with the same fields."""
    assert catalogues.problems() == []
    assert len(i18n.translations("zh")) > 1000


@pytest.mark.slow
def test_the_check_names_a_stale_translation_and_a_missing_one(tmp_path, monkeypatch):
    """Edit an English text in a copy of the code: the check reports the message the catalogues lack and,
    after an update, the translation that went fuzzy (what a translator then reviews)."""
    for part in ("specviz", "pages", "app.py", "data/i18n"):
        src = ROOT / part
        dst = tmp_path / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dst.write_bytes(src.read_bytes())
    page = tmp_path / "pages" / "home.py"
    page.write_text(page.read_text(encoding="utf-8").replace('"Pages"', '"All pages"'), encoding="utf-8")
    monkeypatch.setattr(catalogues, "POT", tmp_path / "data" / "i18n" / "specviz.pot")
    monkeypatch.setattr(i18n, "CATALOGUE_DIR", tmp_path / "data" / "i18n")
    found = catalogues.problems(tmp_path)
    assert "specviz.pot: missing (None, 'All pages') (run python -m specviz.base.catalogues update)" in found
    assert "zh.po: no translation of 'All pages'" in found
    catalogues.update(tmp_path)
    assert catalogues.problems(tmp_path) == ["zh.po: the translation of 'All pages' is fuzzy (its English changed)"]


def test_every_chinese_text_is_translated():
    same = [en for en, zh in chinese() if zh == en and needs_translation(en)]
    assert not same, same
    assert all(re.search(r"[\u4e00-\u9fff]", zh) for en, zh in chinese() if needs_translation(en))


def test_every_page_uses_the_one_glossary_of_terms():
    """A message that uses a glossary term in English uses its Chinese term (data/i18n/terms.json)."""
    glossary = json.loads((ROOT / "data" / "i18n" / "terms.json").read_text(encoding="utf-8"))
    assert not [e for e in glossary["exceptions"] if e not in {en for en, _ in chinese()}]
    wrong = [
        (en, term, zh)
        for term, chinese_term in glossary["terms"].items()
        for en, zh in chinese()
        if en not in glossary["exceptions"]
        and re.search(rf"(?<![\w`_-]){re.escape(term)}(?![\w`_])", en, re.IGNORECASE)
        and chinese_term not in zh
    ]
    assert not wrong, wrong


@pytest.mark.slow
def test_no_message_is_built_at_run_time():
    """A msgid is a literal (or a name bound to one, marked N_): no f-string, concatenation or .format,
    which extraction cannot see."""
    built = []
    for path in code_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            spec = catalogues.KEYWORDS.get(name, "absent")
            if spec == "absent" or (name == "text" and len(node.args) < 2):
                continue
            positions = [0] if spec is None else [(p[0] if isinstance(p, tuple) else p) - 1 for p in spec]
            for i in positions:
                if i < len(node.args) and isinstance(node.args[i], ast.JoinedStr | ast.BinOp):
                    built.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if (
                    i < len(node.args)
                    and isinstance(node.args[i], ast.Call)
                    and getattr(node.args[i].func, "attr", "") == "format"
                ):
                    built.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not built, built


def test_text_fills_fields_and_falls_back_to_english():
    assert i18n.text("zh", "{n} tokens nobody translated", n=3) == "3 tokens nobody translated"
    assert not i18n.translated("zh", "{n} tokens nobody translated") and i18n.translated("en", "anything")
    with pytest.raises(ValueError, match="not one of en, zh"):
        i18n.text("fr", "Pages")


def test_plurals_and_contexts(monkeypatch):
    """English picks its form by the count, Chinese has one; one English text in two contexts has two translations."""
    deleted = [i18n.plural("Moved {n} run to the trash.", "Moved {n} runs to the trash.", n) for n in (1, 2)]
    assert [i18n.text("en", m, n=n) for m, n in zip(deleted, (1, 2), strict=True)] == [
        "Moved 1 run to the trash.",
        "Moved 2 runs to the trash.",
    ]
    assert [i18n.text("zh", m, n=n) for m, n in zip(deleted, (1, 2), strict=True)] == [
        "已将 1 个运行移入回收站。",
        "已将 2 个运行移入回收站。",
    ]
    assert pickle.loads(pickle.dumps(deleted[1])).n == 2
    zh = i18n.translations("zh")  # the catalogues hold no context now: two are made up for the test
    monkeypatch.setitem(zh, ("home", "Tokens per round"), ("每轮期望生成 token 数",))
    monkeypatch.setitem(zh, ("lab", "Tokens per round"), ("每轮生成 token 数",))
    home, lab = C_("home", "Tokens per round"), C_("lab", "Tokens per round")
    assert str(home) == str(lab) == "Tokens per round" and i18n.text("zh", home) != i18n.text("zh", lab)
    assert pickle.loads(pickle.dumps(home)).context == "home"


def test_a_message_error_reads_english_as_a_string_and_any_language_on_a_page(monkeypatch):
    zh = i18n.translations("zh")
    monkeypatch.setitem(zh, (None, "{where}: {cause}"), ("{where}：{cause}",))
    monkeypatch.setitem(zh, (None, "K must be >= 1; got {k}"), ("K 必须 ≥ 1；收到 {k}",))
    exc = i18n.Message("{where}: {cause}", where="run 3", cause=i18n.Message("K must be >= 1; got {k}", k=0))
    assert isinstance(exc, ValueError) and str(exc) == "run 3: K must be >= 1; got 0"
    assert exc.text("zh") == i18n.localized(exc, "zh") == "run 3：K 必须 ≥ 1；收到 0"  # the cause in zh too
    assert pickle.loads(pickle.dumps(exc)).text("zh") == exc.text("zh")
    assert i18n.localized(ValueError("plain"), "zh") == "plain"
    note = i18n.Phrase("{where}: {cause}", where="link", cause=i18n.Phrase("K must be >= 1; got {k}", k=5))
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


@pytest.mark.slow
@pytest.mark.parametrize("page", TRANSLATED)
def test_a_page_in_english_shows_no_chinese_text(page):
    """The other half of "both languages": in English no Chinese catalogue text leaks (the switch's 中文 aside)."""
    script = "app.py" if page == "pages/home.py" else page
    at = open_app(script, lang="en", **PAGE_QUERY.get(page, {}))
    shown = [s.replace(i18n.LANGUAGES["zh"], "") for s in visible_texts(at) + chart_texts(at)]
    assert shown and not [s for s in shown if re.search(r"[\u4e00-\u9fff]", s)]


@pytest.mark.slow
@pytest.mark.parametrize("page", TRANSLATED)
def test_a_translated_page_shows_no_english_catalogue_text_in_chinese(page):
    script = "app.py" if page == "pages/home.py" else page
    at = open_app(script, lang="zh", **PAGE_QUERY.get(page, {}))
    english = {en for en, _ in chinese() if needs_translation(en)}
    shown = visible_texts(at)
    assert shown and not [s for s in shown if s in english]
    drawn = chart_texts(at)  # a chart's words are in the catalogue whole, or with a field filled in
    assert not [s for s in drawn if s in english or any(e in s for e in english if len(e) > 12)]
    assert any(re.search(r"[\u4e00-\u9fff]", s) for s in shown)


def test_the_switch_changes_the_language_and_the_url_keeps_it():
    at = open_app("app.py")
    assert at.subheader[0].value == i18n.text("en", "Tokens per round")
    switch = at.sidebar.button_group[0]
    switch.set_value("zh")
    rerun(at)
    assert at.subheader[0].value == i18n.text("zh", "Tokens per round")
    assert at.query_params["lang"] == "zh"
    assert at.page_link[0].label == i18n.text("zh", "Design space — E[N] and speedup maps, point inspector")


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


@pytest.mark.slow
def test_a_translated_tab_opens_by_its_choice_and_keeps_it_in_the_link():
    at = open_app("pages/break-even.py", lang="zh")
    at.session_state["breakeven.view"] = "optimum"  # the choice, as a link or a click sets it
    rerun(at)
    assert at.query_params["view"] == "optimum" and any(m.label == "最优 K" for m in at.metric)
    assert at.session_state["breakeven.view._label"] == "最优 K"  # the tabs show the choice's label


def test_a_chinese_choice_set_from_outside_the_script_run_keeps_its_label():
    """AppTest maps a value to its label by calling format_func outside the script run; ui binds the language."""
    at = open_app("pages/design-space.py", lang="zh")
    at.radio(key="design.view").set_value("surface")
    rerun(at)
    assert at.radio(key="design.view").value == "surface" and at.query_params["view"] == "surface"
    assert i18n.text("zh", "3-D surface") in at.radio(key="design.view").options

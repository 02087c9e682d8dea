"""中文 complete: every page, opened in Chinese, shows no English word outside the glossary of names, units and
symbols (data/i18n/latin_allowed.json) and no markup a person would read as characters.

Each page's default view is rendered in AppTest with ``lang=zh`` (the link views of tests/base/test_i18n.py's
``PAGE_QUERY`` too), and every text of its element tree is read: headings, markdown, captions, alerts, widget
labels, help texts, options and placeholders, metric labels, values and deltas, tab and expander labels, table
headers and cells, and the words of each plotly figure (titles, axis and legend titles, trace names, hover
templates, annotations, tick labels). The texts Streamlit's frontend writes itself (the multiselect's
"Choose options", the uploader's "Upload" and "200MB per file") count when the page leaves them as they are.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from _apps import open_app
from base.test_i18n import PAGE_QUERY
from google.protobuf.message import Message as Proto

from specviz.app.ui import frontend

pytestmark = pytest.mark.slow  # every page, rendered once: about 1 s each

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = json.loads((ROOT / "data" / "i18n" / "latin_allowed.json").read_text(encoding="utf-8"))
PAGES = ("app.py", *(f"pages/{p.stem}.py" for p in sorted((ROOT / "pages").glob("*.py")) if p.stem != "home"))

#: Proto fields a person reads (by name); ids, keys, icons, formats, URLs and raw values are not read.
READ = {"body", "label", "help", "placeholder", "options", "delta", "caption", "content", "value", "default"}
#: Elements whose texts Streamlit renders as Markdown (a backtick pair is code, not a backtick).
MARKDOWN = {"Markdown", "Heading", "Alert", "Caption"}
#: What Streamlit's frontend writes in English where the page gives it nothing else (1.67).
FRONTEND = {"MultiSelect": "Choose options", "FileUploader": "Upload · 200MB per file"}
TOKEN = re.compile(r"[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*")
URL = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+")
PLOTLY_MARKUP = re.compile(r"%\{[^{}]*\}|</?(?:br|b|i|sup|sub|extra|span)[^>]*>|&[a-z]+;")


@dataclass(frozen=True)
class Seen:
    """A text a person reads: on which page, in which element (and field), and whether Markdown renders it."""

    page: str
    where: str
    text: str
    markdown: bool = False


WORDS = {w for group in ALLOWED["words"].values() for w in group}
PHRASES = sorted((p for group in ALLOWED["phrases"].values() for p in group), key=len, reverse=True)
#: Quoted verbatim: a code span, a text in quotes, a URL, a Markdown link's target, a formula ($…$), and an
#: English term glossed in full-width brackets right after its Chinese (屋顶线（roofline）).
VERBATIM = re.compile(
    r"``.*?``|`[^`]*`|'[^'\n]*'|\"[^\"\n]*\"|“[^”]*”|\]\([^)]*\)|\$\$.*?\$\$|\$[^$]+\$|"
    r"(?<=[\u4e00-\u9fff])（[A-Za-z][A-Za-z -]*）|" + URL.pattern,
    re.DOTALL,
)
#: An identifier: a name with _ . / inside (a file, a module, a field, a path), or a lower-case id with two
#: hyphens or more (a data source).
IDENTIFIER = re.compile(r"[\w-]*[A-Za-z0-9][_./][\w./-]*|/\w[\w./-]*|[a-z0-9]+(?:-[a-z0-9.]+){2,}")
#: The engines and sources of the validation data, named as data/validation/measurements.csv and
#: acceptance.csv spell them.
DATA_NAMES = {
    name
    for row in csv.DictReader((ROOT / "data" / "validation" / "measurements.csv").open(encoding="utf-8"))
    for name in (row["stack"], row["source_id"])
} | {
    row["source_id"] for row in csv.DictReader((ROOT / "data" / "validation" / "acceptance.csv").open(encoding="utf-8"))
}


def allowed(token: str) -> bool:
    return token in WORDS or any(re.fullmatch(p, token) for p in ALLOWED["patterns"])


def latin_words(text: str) -> list[str]:
    """The Latin words of ``text`` outside the glossary (verbatim quotes, identifiers and phrases aside)."""
    text = re.sub(r"\\([^\sA-Za-z0-9])", r"\1", text)  # Markdown's escapes (n\_accept reads n_accept)
    text = IDENTIFIER.sub(" ", VERBATIM.sub(" ", text))
    for phrase in PHRASES:
        text = text.replace(phrase, " ")
    text = " ".join(w for w in text.split(" ") if w.rstrip(",;") not in DATA_NAMES)  # a list of them: "a, b"
    return [w for w in TOKEN.findall(text) if sum(c.isalpha() for c in w) >= 2 and not allowed(w)]


def raw_markup(seen: Seen) -> list[str]:
    """Markup a person would read as characters: escaped Markdown, or any Markdown and HTML where none renders."""
    if seen.markdown:  # escaped markup shows as its characters; an unpaired backtick too
        unpaired = ["`"] if len(re.findall(r"(?<!\\)`", seen.text)) % 2 else []
        return re.findall(r"\\`|\\\*\\\*|&lt;br&gt;|<br\s*/?>", seen.text) + unpaired
    return re.findall(r"`|\*\*|\$|<br\s*/?>|\\[`*$_]", seen.text)


def _strings(proto: Proto, element: str, out: list[tuple[str, str]]) -> None:
    for field, value in proto.ListFields():
        values = value if isinstance(value, list | tuple) or hasattr(value, "append") else [value]
        for v in values:
            if isinstance(v, Proto):
                _strings(v, element, out)
            elif isinstance(v, str) and field.name in READ and v.strip():
                out.append((f"{type(proto).__name__}.{field.name}", v))


def _plotly(spec: dict, out: list[tuple[str, str]]) -> None:
    def walk(node, key, path):
        if isinstance(node, dict):
            for k, v in node.items():
                if k not in ("template", "meta", "uid", "customdata", "x", "y", "z", "ids"):
                    walk(v, k, f"{path}.{k}")
        elif isinstance(node, list):
            for v in node:
                walk(v, key, path)
        elif isinstance(node, str) and key in ("text", "name", "title", "hovertemplate", "ticktext", "texttemplate"):
            out.append((f"figure{path}", PLOTLY_MARKUP.sub(" ", node)))

    walk(spec, "", "")


def page_texts(at, page: str) -> list[Seen]:
    """Every text the rendered page ``at`` shows (see the module's docstring)."""
    seen: list[Seen] = []

    def walk(node):
        proto = getattr(node, "proto", None)
        kind = type(proto).__name__
        if isinstance(proto, Proto) and kind == "PlotlyChart":
            found: list[tuple[str, str]] = []
            _plotly(json.loads(proto.spec), found)
            seen.extend(Seen(page, w, s) for w, s in found)
        elif isinstance(proto, Proto) and kind in ("Arrow", "ArrowTable", "DataFrame", "Html"):
            pass  # tables: read below from their DataFrames; st.html: the page's own styles
        elif isinstance(proto, Proto):
            found = []
            _strings(proto, kind, found)
            seen.extend(Seen(page, w, s, kind in MARKDOWN or w.endswith((".label", ".help"))) for w, s in found)
            if kind in FRONTEND and not getattr(proto, "placeholder", "") and not _overridden(at, proto):
                seen.append(Seen(page, f"{kind} (Streamlit's own text)", FRONTEND[kind]))
        children = getattr(node, "children", None)
        for child in children.values() if isinstance(children, dict) else ():
            walk(child)

    walk(at._tree)
    for kind in ("dataframe", "table"):
        for i, table in enumerate(getattr(at, kind)):
            frame = table.value
            seen += [Seen(page, f"{kind}[{i}] header", str(c)) for c in frame.columns]
            seen += [
                Seen(page, f"{kind}[{i}] cell", v) for col in frame.columns for v in frame[col] if isinstance(v, str)
            ]
    return seen


def _overridden(at, proto) -> bool:
    """Whether the page restyles the uploader ``proto``'s own texts in Chinese (specviz.app.ui.frontend)."""
    if type(proto).__name__ != "FileUploader":
        return False
    scope = ".st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", proto.id.split("-", 2)[-1])
    styles = []

    def walk(node):
        p = getattr(node, "proto", None)
        if type(p).__name__ == "Html":
            styles.append(p.body)
        children = getattr(node, "children", None)
        for child in children.values() if isinstance(children, dict) else ():
            walk(child)

    walk(at._tree)
    return any(frontend.MARK in s and scope + " " in s for s in styles)


def findings(at, page: str) -> list[str]:
    out = []
    for s in page_texts(at, page):
        for word in latin_words(s.text):
            out.append(f"{s.page} · {s.where}: English word {word!r} in {s.text[:120]!r}")
        for mark in raw_markup(s):
            out.append(f"{s.page} · {s.where}: raw markup {mark!r} in {s.text[:120]!r}")
    return out


@pytest.mark.parametrize("page", PAGES)
def test_a_page_in_chinese_shows_no_english_word_and_no_raw_markup(page):
    at = open_app(page, lang="zh")
    found = findings(at, page)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("page", sorted(PAGE_QUERY))
def test_the_views_a_link_opens_in_chinese_show_no_english_word_and_no_raw_markup(page):
    """The views tests/base/test_i18n.py opens by link (memory, policies, chapter numbers, an unreachable server…)."""
    at = open_app(page, lang="zh", **PAGE_QUERY[page])
    found = findings(at, page)
    assert not found, "\n".join(found)

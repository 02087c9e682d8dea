"""The shipped CJK web font (static/fonts/, built by scripts/build-cjk-font) and the theme that names it.

Every character the interface's texts use is in the font, the theme's font faces point at files that
exist under static/ and are served, and the theme's font stack names the shipped family after Source Sans.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
import unicodedata
from pathlib import Path

import pytest

from specviz.base.i18n import LANGUAGES

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".streamlit" / "config.toml"
FAMILY = "specviz CJK SC"
TEXTS = [ROOT / "data/i18n/specviz.pot", ROOT / "data/i18n/zh.po", ROOT / "data/i18n/terms.json"]
CHAPTER = ROOT / "data" / "chapter"
#: Characters the texts use that Noto Sans CJK SC (2.004) has no glyph for, so the subset cannot hold them;
#: none is CJK (a test checks), and Source Sans or a system font of the stack draws them.
NOT_IN_NOTO = {
    "\u0302": "combining circumflex accent (p̂)",
    "\u207a": "superscript plus sign",
    "\u2093": "latin subscript small letter x",
}
REBUILD = "run scripts/build-cjk-font (needs fonts-noto-cjk) and commit static/fonts/"

pytest.importorskip("fontTools.ttLib", reason="needs fontTools (requirements-dev.txt)")


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@functools.cache
def used_characters() -> dict[str, str]:
    """Each drawn character (not whitespace or a control) the texts use -> a file that uses it."""
    where: dict[str, str] = {}
    files = [*TEXTS, *sorted(p for p in CHAPTER.rglob("*") if p.is_file())]
    for path in files:
        raw = path.read_text(encoding="utf-8")
        texts = _strings(json.loads(raw)) if path.suffix == ".json" else [raw]
        name = str(path.relative_to(ROOT))
        for ch in set("".join(texts)):
            where.setdefault(ch, name)
    for label in LANGUAGES.values():  # the language switch's labels ("中文")
        for ch in label:
            where.setdefault(ch, "specviz/base/i18n.py LANGUAGES")
    return {ch: f for ch, f in where.items() if not ch.isspace() and unicodedata.category(ch)[0] not in "CZ"}


def is_cjk(ch: str) -> bool:
    """A Han ideograph, CJK symbol or punctuation, or a full-width form."""
    o = ord(ch)
    return 0x3000 <= o <= 0x303F or 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF


def font_faces() -> list[dict]:
    return tomllib.loads(CONFIG.read_text(encoding="utf-8"))["theme"].get("fontFaces", [])


def shipped_files() -> list[Path]:
    """The files of the theme's faces of FAMILY, as paths under static/ (their URL is app/static/...)."""
    urls = [face["url"] for face in font_faces() if face.get("family") == FAMILY]
    return [ROOT / "static" / url.removeprefix("app/static/") for url in urls]


def test_the_theme_declares_the_shipped_face_in_regular_and_bold():
    faces = [f for f in font_faces() if f.get("family") == FAMILY]
    assert sorted(str(f.get("weight")) for f in faces) == ["400", "700"], faces
    for face in faces:
        assert face["url"].endswith(".woff2"), face  # Streamlit writes format("woff2") into the rule


def test_each_font_face_url_is_a_file_under_static():
    config = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    assert config["server"].get("enableStaticServing") is True, "static/ is served only with enableStaticServing"
    urls = [face["url"] for face in font_faces() if face.get("family") == FAMILY]
    assert urls, f"no [[theme.fontFaces]] entry of {FAMILY!r} in {CONFIG}"
    assert all(url.startswith("app/static/") for url in urls), f"{urls}: static/ is served at app/static/"
    files = shipped_files()
    for path in files:
        assert path.is_file(), f"{path}: missing ({REBUILD})"
        assert path.read_bytes()[:4] == b"wOF2", f"{path}: not a woff2 file"
        assert path.stat().st_size < 200_000, f"{path}: {path.stat().st_size:,} bytes; keep the subset small"
    assert (ROOT / "static/fonts/OFL.txt").read_text(encoding="utf-8").count("SIL OPEN FONT LICENSE Version 1.1")


def test_the_theme_font_stack_puts_the_shipped_family_after_source_sans():
    font = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["theme"]["font"]
    stack = [name.strip().strip("\"'") for name in font.split(",")]
    assert stack[:2] == ["Source Sans", FAMILY], stack
    assert "Noto Sans CJK SC" in stack[2:] and stack[-1] == "sans-serif", stack  # the system fallbacks after it


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: p.name)
def test_the_shipped_font_holds_every_character_the_texts_use(path):
    from fontTools.ttLib import TTFont

    font = TTFont(path)
    assert font["name"].getDebugName(1) == FAMILY
    cmap = font.getBestCmap()
    missing = {ch: f for ch, f in used_characters().items() if ord(ch) not in cmap and ch not in NOT_IN_NOTO}
    listed = ", ".join(f"{ch!r} U+{ord(ch):04X} ({f})" for ch, f in sorted(missing.items()))
    assert not missing, f"{path.name} lacks {len(missing)} characters the texts use: {listed}; {REBUILD}"


def test_only_non_cjk_characters_are_excused():
    assert not [ch for ch in NOT_IN_NOTO if is_cjk(ch)]
    assert re.search("[\u4e00-\u9fff]", "".join(used_characters()))  # the check above saw Chinese at all

"""The user interface in English and Chinese: one catalogue per language, text asked for by key.

The catalogues are data (``data/i18n/en.json``, ``data/i18n/zh.json``): flat objects from a key
such as ``"home.title"`` to the text, with ``{name}`` fields filled by :func:`text`. English is
the reference: every key exists in it, and a key missing from another catalogue falls back to
English (tests/test_i18n.py reports every such key, so none ships).

The language is a property of a person's session (``specviz.app.ui.language``), never of the
process: many people share one server. Nothing here imports streamlit.

Not translated, because they are interfaces: canonical CSV column names, CLI output, log text,
download file names. Numbers, units and symbols (α, K, c, E[N]) stay as they are.

Errors a person may see on a page are :class:`Message` exceptions: a catalogue key and its fields.
``str()`` of one is its English text (what the command line, logs and tests read); a page shows
``Message.text(lang)``.
"""

from __future__ import annotations

import functools
import json
import string
from collections.abc import Mapping

from specviz.base.paths import DATA

CATALOGUE_DIR = DATA / "i18n"
LANGUAGES = {"en": "English", "zh": "中文"}  #: code -> the language's own name
DEFAULT = "en"


@functools.cache
def catalogue(lang: str) -> Mapping[str, str]:
    """The catalogue of ``lang`` (read once per process; read-only)."""
    if lang not in LANGUAGES:
        raise ValueError(f"language {lang!r} is not one of {', '.join(LANGUAGES)}")
    path = CATALOGUE_DIR / f"{lang}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{path}: a catalogue is one JSON object of string keys to string texts")
    return data


def fields(template: str) -> set[str]:
    """The ``{name}`` fields of a catalogue text."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def text(lang: str, key: str, /, **values) -> str:
    """The text of ``key`` in ``lang`` (English where ``lang`` lacks it), its ``{fields}`` filled.

    A key missing from English too is a programming error: KeyError naming it.
    """
    template = catalogue(lang).get(key)
    if template is None:
        template = catalogue(DEFAULT)[key]
    return template.format(**values) if values else template


def name(lang: str, group: str, value: str) -> str:
    """The catalogue text of ``group.value`` in ``lang``: a fixed name the library uses as an identifier
    (a tree shape, an operator) shown in the reader's language; ``value`` itself where the catalogue
    has no such key (a name from the person's data)."""
    return text(lang, f"{group}.{value}") if f"{group}.{value}" in catalogue(DEFAULT) else str(value)


def from_locale(locale: str | None) -> str:
    """The language for a browser locale such as ``zh-CN`` or ``en-US``: Chinese for any ``zh``, else English."""
    if locale and locale.strip().lower().replace("_", "-").split("-")[0] == "zh":
        return "zh"
    return DEFAULT


def missing(lang: str) -> list[str]:
    """Keys of the English catalogue that ``lang`` lacks."""
    own = catalogue(lang)
    return [k for k in catalogue(DEFAULT) if k not in own]


def _in(lang: str, fields: dict) -> dict:
    """``fields`` with every :class:`Message` or :class:`Phrase` among them rendered in ``lang``."""
    return {k: v.text(lang) if isinstance(v, Message | Phrase) else v for k, v in fields.items()}


class Message(ValueError):
    """A ValueError whose text is the catalogue entry ``key`` filled with ``fields``.

    ``str(exc)`` is the English text; :meth:`text` gives it in any language. A field that is itself a
    Message or a :class:`Phrase` (a cause quoted inside a wider error) is rendered in the same language;
    any other field (a number, the person's input, a file name) is inserted as it is.
    """

    def __init__(self, key: str, /, **fields) -> None:
        self.key, self.fields = key, fields
        super().__init__(self.text(DEFAULT))

    def text(self, lang: str) -> str:
        """This message in ``lang`` (English where the catalogue lacks the key)."""
        return text(lang, self.key, **_in(lang, self.fields))

    def __reduce__(self):  # pickling (st.cache_data, process pools) keeps key and fields
        return _message, (self.key, self.fields)


class Phrase(str):
    """A catalogue text that is, as a ``str``, its English text (what logs, files and tests read), and
    that a page can read in any language with :meth:`text`: a warning or note a library returns."""

    def __new__(cls, key: str, /, **fields):
        self = super().__new__(cls, text(DEFAULT, key, **_in(DEFAULT, fields)))
        self.key, self.fields = key, fields
        return self

    def text(self, lang: str) -> str:
        """This phrase in ``lang`` (English where the catalogue lacks the key)."""
        return text(lang, self.key, **_in(lang, self.fields))

    def __reduce__(self):
        return _phrase, (self.key, self.fields)


def _message(key: str, fields: dict) -> Message:
    return Message(key, **fields)


def _phrase(key: str, fields: dict) -> Phrase:
    return Phrase(key, **fields)


def localized(item: BaseException | str, lang: str) -> str:
    """What a page shows for a library error or note in ``lang``: a :class:`Message` or :class:`Phrase`
    in that language, anything else as its ``str``."""
    return item.text(lang) if isinstance(item, Message | Phrase) else str(item)

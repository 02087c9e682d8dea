"""The user interface in English and Chinese, with gettext catalogues managed by Babel.

The English text is the message id, written where the message is raised or shown
(``Message("α = {alpha} is outside [0, 1]", alpha=a)``, ``ui.t("Draft length K")``). The
translations are ``data/i18n/<lang>.po`` files, extracted with ``pybabel`` into
``data/i18n/specviz.pot`` (``python -m specviz.base.catalogues update``; docs/i18n.md) and read here directly
with Babel. A msgid that two places use with different meanings carries a context
(:func:`C_`); a message about a count has a plural (:func:`plural`).

Markers that extraction reads (``babel.cfg`` lists them): ``t``, ``text`` (its second argument),
``Message`` and its subclasses, ``Phrase``, :func:`N_`, :func:`C_`, :func:`plural`. A msgid kept
for later (a label in a table, a Param's label) is wrapped in :func:`N_` so that extraction finds
it; nothing builds a msgid from pieces at run time.

The language is a property of a person's session (``specviz.app.ui.language``), never of the
process: many people share one server. Nothing here imports streamlit.

Not translated, because they are interfaces: canonical CSV column names, CLI output, log text,
download file names. Numbers, units and symbols (α, K, c, E[N]) stay as they are.

Errors a person may see on a page are :class:`Message` exceptions: a msgid and its fields.
``str()`` of one is its English text (what the command line, logs and tests read); a page shows
``Message.text(lang)``.
"""

from __future__ import annotations

import functools
import gettext
import string
from collections.abc import Mapping

from specviz.base.paths import DATA

CATALOGUE_DIR = DATA / "i18n"
DOMAIN = "specviz"
LANGUAGES = {"en": "English", "zh": "中文"}  #: code -> the language's own name
DEFAULT = "en"  #: the language of the msgids


class Msgid(str):
    """A msgid with a context (:func:`C_`) or a plural (:func:`plural`); as a ``str``, its English text."""

    context: str | None = None
    singular: str | None = None  #: a plural's first form (its msgid in the catalogue)
    n: int | None = None  #: a plural's count

    def __reduce__(self):
        return _msgid, (str(self), self.context, self.singular, self.n)


def _msgid(english: str, context: str | None, singular: str | None = None, n: int | None = None) -> Msgid:
    m = Msgid(english)
    m.context, m.singular, m.n = context, singular, n
    return m


def N_(msgid: str) -> str:
    """Mark ``msgid`` for extraction without translating it now (it is translated where it is shown)."""
    return msgid


def C_(context: str, msgid: str) -> Msgid:
    """``msgid`` in ``context`` (gettext's msgctxt): the same English meaning different things in two places."""
    return _msgid(msgid, context)


def plural(singular: str, plural_form: str, n: int) -> Msgid:
    """The msgid of a message about ``n`` things (gettext's ngettext): in English ``singular`` when
    n = 1, else ``plural_form``; another language picks its form by its ``.po``'s ``Plural-Forms``
    (Chinese has one)."""
    n = int(n)
    return _msgid(singular if n == 1 else plural_form, None, singular, n)


@functools.cache
def _catalogue(lang: str):
    """The Babel catalogue of ``lang`` (read once per process); None for English, the msgids' language."""
    if lang not in LANGUAGES:
        raise ValueError(f"language {lang!r} is not one of {', '.join(LANGUAGES)}")
    if lang == DEFAULT:
        return None
    from babel.messages.pofile import read_po  # here: English (the CLI, the GPU tier) needs no Babel

    with open(CATALOGUE_DIR / f"{lang}.po", "rb") as f:
        return read_po(f, locale=lang, domain=DOMAIN)


@functools.cache
def translations(lang: str) -> Mapping[tuple[str | None, str], tuple[str, ...]]:
    """``(context, msgid) -> forms``: the translated, non-fuzzy messages of ``lang``'s ``.po``
    (a plural's msgid is its singular)."""
    cat = _catalogue(lang)
    out: dict[tuple[str | None, str], tuple[str, ...]] = {}
    for m in cat or ():
        if not m.id or m.fuzzy:
            continue
        forms = tuple(m.string) if m.pluralizable else (m.string,)
        if all(forms):
            out[(m.context, m.id[0] if m.pluralizable else m.id)] = forms
    return out


@functools.cache
def _plural_rule(lang: str):
    """``n -> form index`` of ``lang`` (gettext's C expression in the ``.po`` header)."""
    cat = _catalogue(lang)
    return (lambda n: int(n != 1)) if cat is None else gettext.c2py(cat.plural_expr)


def _lookup(msgid: str) -> tuple[str | None, str]:
    return getattr(msgid, "context", None), getattr(msgid, "singular", None) or str(msgid)


def translated(lang: str, msgid: str) -> bool:
    """Whether ``lang``'s catalogue translates ``msgid`` (always, for English: the msgids are English)."""
    return lang == DEFAULT or _lookup(msgid) in translations(lang)


def template(lang: str, msgid: str) -> str:
    """``msgid`` in ``lang``, its fields not filled; the English (the msgid) where ``lang`` lacks it."""
    forms = translations(lang).get(_lookup(msgid))
    if forms is None:
        return str(msgid)
    if getattr(msgid, "n", None) is None:
        return forms[0]
    return forms[min(_plural_rule(lang)(msgid.n), len(forms) - 1)]


def fields(text: str) -> set[str]:
    """The ``{name}`` fields of a message."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def text(lang: str, msgid: str, /, **values) -> str:
    """``msgid`` in ``lang`` (English where ``lang`` lacks it), its ``{fields}`` filled."""
    t = template(lang, msgid)
    return t.format(**values) if values else t


def name(lang: str, names: Mapping[str, str], value: str) -> str:
    """The name ``names[value]`` (a msgid) in ``lang``: a fixed name the library uses as an identifier
    (a tree shape, an operator) shown in the reader's language; ``value`` itself where ``names`` has
    no entry (a name from the person's data)."""
    return text(lang, names[value]) if value in names else str(value)


def from_locale(locale: str | None) -> str:
    """The language for a browser locale such as ``zh-CN`` or ``en-US``: Chinese for any ``zh``, else English."""
    if locale and locale.strip().lower().replace("_", "-").split("-")[0] == "zh":
        return "zh"
    return DEFAULT


def _in(lang: str, fields: dict) -> dict:
    """``fields`` with every :class:`Message` or :class:`Phrase` among them rendered in ``lang``."""
    return {k: v.text(lang) if isinstance(v, Message | Phrase) else v for k, v in fields.items()}


class Message(ValueError):
    """A ValueError whose text is ``msgid`` filled with ``fields``.

    ``str(exc)`` is the English text; :meth:`text` gives it in any language. A field that is itself a
    Message or a :class:`Phrase` (a cause quoted inside a wider error) is rendered in the same language;
    any other field (a number, the person's input, a file name) is inserted as it is.
    """

    def __init__(self, msgid: str, /, **fields) -> None:
        self.msgid, self.fields = msgid, fields
        super().__init__(self.text(DEFAULT))

    def text(self, lang: str) -> str:
        """This message in ``lang`` (English where the catalogue lacks it)."""
        return text(lang, self.msgid, **_in(lang, self.fields))

    def __reduce__(self):  # pickling (st.cache_data, process pools) keeps msgid and fields
        return _message, (self.msgid, self.fields)


class Phrase(str):
    """A message that is, as a ``str``, its English text (what logs, files and tests read), and that a
    page can read in any language with :meth:`text`: a warning or note a library returns."""

    def __new__(cls, msgid: str, /, **fields):
        self = super().__new__(cls, text(DEFAULT, msgid, **_in(DEFAULT, fields)))
        self.msgid, self.fields = msgid, fields
        return self

    def text(self, lang: str) -> str:
        """This phrase in ``lang`` (English where the catalogue lacks it)."""
        return text(lang, self.msgid, **_in(lang, self.fields))

    def __reduce__(self):
        return _phrase, (self.msgid, self.fields)


def _message(msgid: str, fields: dict) -> Message:
    return Message(msgid, **fields)


def _phrase(msgid: str, fields: dict) -> Phrase:
    return Phrase(msgid, **fields)


def localized(item: BaseException | str, lang: str) -> str:
    """What a page shows for a library error or note in ``lang``: a :class:`Message` or :class:`Phrase`
    in that language, anything else as its ``str``."""
    return item.text(lang) if isinstance(item, Message | Phrase) else str(item)

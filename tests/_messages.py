"""Checks shared by the tests of translated library errors (i18n.Message) and notes (i18n.Phrase).

A case checks what a message means, not its wording: its msgid, the values in its fields (so a wrong
number fails), that each value reads the same in the English and the Chinese text, and that the
Chinese is Chinese. A wording change in the catalogue breaks no case; the catalogue check
(specviz.base.catalogues) keeps the translations in step with the msgids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pytest

from specviz.base import i18n
from specviz.base.i18n import Message, Phrase

CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"(?<![\w])[A-Za-z]{3,}(?![\w])")  #: an English word (tests/base/test_i18n.py's rule)


def caught(fn, *args, **kwargs) -> Message:
    """The ValueError ``fn(*args, **kwargs)`` raises."""
    with pytest.raises(ValueError) as info:
        fn(*args, **kwargs)
    return info.value


@dataclass(frozen=True)
class Inner:
    """What a field that is itself a Message or Phrase must be: its msgid and fields (a ``Joined``: its items)."""

    msgid: str
    fields: Mapping = field(default_factory=dict)
    items: tuple | None = None


def inner(msgid: str, /, **fields) -> Inner:
    """A nested Message or Phrase with key ``msgid`` and exactly ``fields``."""
    return Inner(msgid, fields)


def joined(*items, sep: str = "; ") -> Inner:
    """A list joined by the separator msgid ``sep`` (specviz.data.measurements.report.Joined) of ``items``."""
    return Inner(sep, {}, items)


@dataclass(frozen=True)
class Raised:
    """An exception quoted as a field (a cause): its class and its text."""

    kind: type[BaseException]
    text: str


def _same(actual, expected, where: str) -> None:
    if isinstance(expected, Inner):
        assert isinstance(actual, Message | Phrase), (where, actual)
        assert str(actual.msgid) == expected.msgid, (where, actual.msgid)
        assert i18n.translated("zh", actual.msgid), (where, actual.msgid)
        if expected.items is not None:
            assert len(actual.items) == len(expected.items), (where, actual.items)
            for i, (a, e) in enumerate(zip(actual.items, expected.items, strict=True)):
                _same(a, e, f"{where}[{i}]")
        _fields(actual, expected.fields, where)
    elif isinstance(expected, Raised):
        assert type(actual) is expected.kind and str(actual) == expected.text, (where, actual)
    elif isinstance(expected, type):
        assert isinstance(actual, expected), (where, actual)
    elif isinstance(expected, float) and expected != expected:
        assert actual != actual, (where, actual)  # nan
    elif isinstance(actual, np.ndarray):
        assert np.array_equal(actual, expected), (where, actual)
    else:
        assert not isinstance(actual, Message | Phrase) or type(expected) is not str, (where, "use inner()")
        assert actual == expected, (where, actual, expected)


def _fields(item: Message | Phrase, fields: Mapping, where: str) -> None:
    assert set(item.fields) == set(fields), (where, sorted(item.fields), sorted(fields))
    zh = item.text("zh")
    for name, expected in fields.items():
        _same(item.fields[name], expected, f"{where}.{name}")
        value = item.fields[name]
        if isinstance(value, Message | Phrase):  # a cause quoted inside: in the same language
            assert value.text("zh") in zh, (where, name, value.text("zh"), zh)


def expect(item, msgid: str, fields: Mapping | None = None, shows: Iterable[str] = ()) -> None:
    """``item`` is a Message or Phrase whose msgid is ``msgid`` and whose fields are exactly ``fields``
    (a nested one given as :func:`inner` / :func:`joined`, a quoted exception as :class:`Raised`, a value
    that varies from run to run as its type); each text of ``shows`` (a value as a person reads it:
    ``"1,500"``, ``"'xlsx'"``) appears in both its English and its Chinese text; the Chinese has CJK
    characters (where the English has a word); the msgid, and every nested one, is translated."""
    assert isinstance(item, Message | Phrase), type(item)
    assert str(item.msgid) == msgid, item.msgid
    assert i18n.translated("zh", item.msgid), item.msgid
    _fields(item, fields or {}, "fields")
    en, zh = item.text("en"), item.text("zh")
    assert en == str(item), (en, str(item))
    assert CJK.search(zh) or not WORD.search(en), zh  # "[1/4, 1] (E[N] / (K + 1))" has no word to translate
    for piece in shows:
        assert piece in en, (piece, en)
        assert piece in zh, (piece, zh)

"""Checks shared by the tests of translated library errors (i18n.Message) and notes (i18n.Phrase)."""

from __future__ import annotations

import re

import pytest

from specviz.base import i18n
from specviz.base.i18n import Message, Phrase

CJK = re.compile(r"[\u4e00-\u9fff]")


def caught(fn, *args, **kwargs) -> Message:
    """The ValueError ``fn(*args, **kwargs)`` raises."""
    with pytest.raises(ValueError) as info:
        fn(*args, **kwargs)
    return info.value


def check(item: Message | Phrase, english: str, *same: str) -> None:
    """``item`` reads ``english``; its Chinese has CJK and every string in ``same``; its msgid is translated."""
    assert isinstance(item, Message | Phrase), type(item)
    assert str(item) == english
    zh = item.text("zh")
    assert CJK.search(zh), zh
    for s in same:
        assert s in zh, (s, zh)
    assert i18n.translated("zh", item.msgid), item.msgid

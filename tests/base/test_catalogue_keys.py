"""Every message of the catalogues is used by the code, and every message the code uses is in both languages."""

import pytest

from specviz.base import catalogues, i18n


def _keys(cat) -> set:
    return {(m.context, m.id if isinstance(m.id, str) else tuple(m.id)) for m in cat if m.id}


@pytest.mark.slow
def test_the_catalogues_hold_exactly_the_messages_of_the_code():
    code = _keys(catalogues.extract())
    english = _keys(catalogues._read(catalogues.POT))
    assert not english - code, f"in {catalogues.POT.name}, unused by the code: {sorted(english - code, key=str)}"
    assert not code - english, f"used by the code, missing in {catalogues.POT.name}: {sorted(code - english, key=str)}"
    for lang in catalogues.TRANSLATED:
        cat = catalogues._read(i18n.CATALOGUE_DIR / f"{lang}.po", lang)
        held = {
            (m.context, m.id if isinstance(m.id, str) else tuple(m.id))
            for m in cat
            if m.id and not m.fuzzy and all(m.string if isinstance(m.string, tuple) else (m.string,))
        }
        assert not _keys(cat) - code, f"in {lang}.po, unused by the code: {sorted(_keys(cat) - code, key=str)}"
        assert not code - held, f"used by the code, untranslated in {lang}.po: {sorted(code - held, key=str)}"
        assert not cat.obsolete, f"{lang}.po keeps obsolete messages: {sorted(cat.obsolete, key=str)}"


@pytest.mark.slow
def test_no_message_carries_a_context_under_an_old_key():
    """The catalogues' contexts were the keys of the catalogue before gettext (md.col.*, live.col.* …)."""
    assert not {context for context, _ in _keys(catalogues.extract()) if context}

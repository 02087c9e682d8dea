"""Keep the translation catalogues in step with the code: extract, update, check (Babel).

``python -m specviz.base.catalogues update`` re-extracts ``data/i18n/specviz.pot`` from the code
and merges it into each language's ``.po`` (a changed English text leaves its translation marked
fuzzy; a message no longer in the code becomes obsolete). ``… check`` exits non-zero, naming each
problem, when the ``.pot`` is out of date, a message lacks a translation, a translation is fuzzy,
or a translation's ``{fields}`` differ from its msgid's. ``.ci/run`` runs the check.
"""

from __future__ import annotations

import ast
import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from specviz.base import i18n
from specviz.base.paths import ROOT

#: What extraction reads: function name -> the msgid's argument (Babel's keyword spec).
KEYWORDS = {
    "t": None,
    "text": (2,),
    "N_": None,
    "C_": ((1, "c"), 2),
    "plural": (1, 2),
    "Message": None,
    "Phrase": None,
    "StoreError": None,
    "AccessError": None,
    "MeasurementError": None,
    "TelemetryError": None,
    "FetchError": None,
    "refused": None,
    "stop_as": None,
}
_METHOD = "specviz.base.catalogues:extract_python"
SOURCES = [("specviz/**.py", _METHOD), ("pages/**.py", _METHOD), ("app.py", _METHOD)]
POT = i18n.CATALOGUE_DIR / f"{i18n.DOMAIN}.pot"
TRANSLATED = tuple(lang for lang in i18n.LANGUAGES if lang != i18n.DEFAULT)


def extract_python(fileobj, keywords, comment_tags, options):
    """Babel extraction method over the syntax tree: every call of a name in ``keywords`` (``ui.t``,
    ``Message`` …), with each branch of a conditional argument (``t("a" if x else "b")``) as its own
    message. Babel's token-based extractor loses a message whose arguments mention a keyword name
    as an attribute (``snippet=_snippet(self.text)``); the tree has no such ambiguity."""
    tree = ast.parse(fileobj.read())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name not in keywords or (isinstance(func, ast.Attribute) and _is_streamlit(func.value)):
            continue
        for args in _branches(node.args):
            yield node.lineno, name, tuple(args), []


def _is_streamlit(value: ast.expr) -> bool:
    return isinstance(value, ast.Name) and value.id in ("st", "container", "col", "c1", "c2", "c3")


def _branches(args: list[ast.expr]) -> list[list[str | None]]:
    """The string arguments of a call (None for any other), one list per choice of each conditional."""
    out: list[list[str | None]] = [[]]
    for a in args:
        options = _strings(a)
        out = [prefix + [o] for prefix in out for o in options]
    return out


def _strings(a: ast.expr) -> list[str | None]:
    if isinstance(a, ast.Constant) and isinstance(a.value, str):
        return [a.value]
    if isinstance(a, ast.IfExp):
        return _strings(a.body) + _strings(a.orelse)
    return [None]


def extract(root: Path = ROOT) -> Catalog:
    """The messages of the code under ``root`` as a template catalogue (no line numbers: a moved line
    does not change it)."""
    cat = Catalog(project="specviz", domain=i18n.DOMAIN, charset="utf-8")
    for filename, lineno, message, comments, context in extract_from_dir(
        root, SOURCES, keywords=KEYWORDS, comment_tags=("i18n:",), strip_comment_tags=True
    ):
        if message:
            cat.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    return cat


def _po_bytes(cat: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, cat, no_location=True, sort_output=True, width=100, ignore_obsolete=True)
    return out.getvalue()


def _read(path: Path, locale: str | None = None) -> Catalog:
    with open(path, "rb") as f:
        return read_po(f, locale=locale, domain=i18n.DOMAIN)


def _ids(cat: Catalog) -> set:
    return {(m.context, m.id if isinstance(m.id, str) else tuple(m.id)) for m in cat if m.id}


def update(root: Path = ROOT) -> None:
    """Re-extract the ``.pot`` and merge it into every translated ``.po`` (fuzzy where a text changed)."""
    template = extract(root)
    template.creation_date = template.revision_date = _read(POT).creation_date if POT.exists() else None
    POT.write_bytes(_po_bytes(template))
    for lang in TRANSLATED:
        path = i18n.CATALOGUE_DIR / f"{lang}.po"
        cat = _read(path, lang)
        cat.update(template, update_header_comment=False, update_creation_date=False)
        path.write_bytes(_po_bytes(cat))


def problems(root: Path = ROOT) -> list[str]:
    """What is wrong with the catalogues, one line each (empty: in step with the code)."""
    found = []
    code, pot = _ids(extract(root)), _ids(_read(POT))
    found += [
        f"{POT.name}: missing {m!r} (run python -m specviz.base.catalogues update)" for m in sorted(code - pot, key=str)
    ]
    found += [f"{POT.name}: {m!r} is no longer in the code (run … update)" for m in sorted(pot - code, key=str)]
    for lang in TRANSLATED:
        cat = _read(i18n.CATALOGUE_DIR / f"{lang}.po", lang)
        have = {}
        for m in cat:
            if m.id:
                have[(m.context, m.id if isinstance(m.id, str) else tuple(m.id))] = m
        for key in sorted(code, key=str):
            m = have.get(key)
            forms = () if m is None else (tuple(m.string) if m.pluralizable else (m.string,))
            if m is None or not all(forms):
                found.append(f"{lang}.po: no translation of {key[1]!r}")
            elif m.fuzzy:
                found.append(f"{lang}.po: the translation of {key[1]!r} is fuzzy (its English changed)")
            else:
                ids = key[1] if isinstance(key[1], tuple) else (key[1],)
                want = set().union(*(i18n.fields(i) for i in ids))
                for form in forms:
                    if i18n.fields(form) != want:
                        found.append(
                            f"{lang}.po: {key[1]!r} has fields {sorted(i18n.fields(form))}, not {sorted(want)}"
                        )
        found += [f"{lang}.po: obsolete {m.id!r}" for m in cat.obsolete.values()]
    return found


def main(argv: list[str]) -> int:
    if argv == ["update"]:
        update()
        return 0
    if argv == ["check"]:
        found = problems()
        for line in found:
            print(line, file=sys.stderr)
        print(f"catalogues: {len(found)} problem(s)" if found else "catalogues: in step with the code")
        return 1 if found else 0
    print("usage: python -m specviz.base.catalogues update|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

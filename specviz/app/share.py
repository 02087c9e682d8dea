"""Query-parameter codec for shareable views (no streamlit here).

A page declares its controls once as a tuple of :class:`Param`. :func:`decode`
turns a URL's query parameters into validated values (falling back to the
default, with a message, for anything missing-but-wrong); :func:`encode` turns
values back into the query string, leaving out values equal to their default so
links stay short. ``decode(encode(v)) == v`` for every valid ``v``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from specviz.base.i18n import Message, Phrase

__all__ = [
    "MAX_ITEMS",
    "Param",
    "by_key",
    "check_items",
    "check_work",
    "clean_list",
    "clean_text",
    "decode",
    "encode",
    "share_url",
]

#: Default cap on the values of a list parameter (``"floats"`` / ``"ints"``): a link asking for
#: more is refused, so no URL can make one view compute and draw without bound.
MAX_ITEMS = 64
#: Characters of an ignored value quoted in a warning (a longer one is cut, with its length).
_SHOWN_CHARS = 60


@dataclass(frozen=True)
class Param:
    """One shareable control.

    Attributes
    ----------
    key : str
        Query-string name (also the widget's key within its page).
    default : Any
        Value used when the URL does not give a valid one.
    kind : str
        ``"float"``, ``"int"``, ``"choice"``, ``"bool"``, ``"range"`` (a pair lo ≤ hi of
        floats), ``"floats"`` / ``"ints"`` (a sorted list of distinct numbers, each within the
        bounds; ``"ints"`` may be empty) or ``"text"``
        (free text of at most ``hi`` characters, validated by the page).
    lo, hi : float, optional
        Inclusive bounds for numeric kinds.
    choices : tuple, optional
        Allowed values for ``"choice"``.
    log : bool
        Hint for the UI (log-scaled control); the codec ignores it.
    max_items : int
        Most distinct values a ``"floats"`` / ``"ints"`` list may hold (default :data:`MAX_ITEMS`);
        a URL with more is refused with a warning, and a list widget takes it as ``max_selections``.
    label : str
        The control's label (an English msgid of the catalogues, ``specviz.base.i18n``); a widget
        bound to the Param shows it in the session's language unless the page passes its own.
    labels : tuple
        Each choice's label (msgids, parallel to ``choices``); empty: the choices are shown as they are.
    aliases : tuple
        ``(older spelling, choice)`` pairs: what a link may carry for a choice that was renamed
        (``("the live page's last run", "live")``), read
        as that choice, so a link saved before a choice was renamed opens the same view. A choice's
        English label is read as the choice too.
    """

    key: str
    default: Any
    kind: str = "float"
    lo: float | None = None
    hi: float | None = None
    choices: tuple = ()
    log: bool = False
    max_items: int = MAX_ITEMS
    label: str = ""
    labels: tuple = ()
    aliases: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.labels and len(self.labels) != len(self.choices):
            raise ValueError(f"control {self.key!r}: {len(self.labels)} labels for {len(self.choices)} choices")
        if not {choice for _, choice in self.aliases} <= set(self.choices):
            raise ValueError(f"control {self.key!r}: an alias names no choice ({self.aliases})")

    def choice_of(self, text: str):
        """The choice a link's ``text`` names: a choice, an alias or a choice's English label; else None."""
        for choice in self.choices:
            if text == _fmt(choice):
                return choice
        for old, choice in self.aliases:
            if text == old:
                return choice
        for choice, label in zip(self.choices, self.labels, strict=False):
            if text == str(label):
                return choice
        return None

    def choice_label(self, choice) -> str:
        """The msgid of ``choice``'s label (the choice itself where the Param has no labels)."""
        return self.labels[self.choices.index(choice)] if self.labels else str(choice)

    def allowed(self) -> str:
        """Human description of the allowed values, for messages (a :class:`~specviz.base.i18n.Phrase`)."""
        if self.kind == "choice":
            return Phrase("one of {choices}", choices=", ".join(str(c) for c in self.choices))
        if self.kind == "bool":
            return Phrase("true or false")
        if self.kind == "text":
            return Phrase("text of at most {n} characters", n=int(self.hi))
        interval = self.interval()
        if self.kind == "float":
            return Phrase("a number in {interval}", interval=interval)
        if self.kind == "int":
            return Phrase("an integer in {interval}", interval=interval)
        if self.kind == "range":
            return Phrase("two numbers lo,hi with lo < hi in {interval}", interval=interval)
        if self.kind == "floats":
            return Phrase("at most {n} comma-separated numbers in {interval}", n=self.max_items, interval=interval)
        if self.kind == "ints":
            return Phrase("at most {n} comma-separated integers in {interval}", n=self.max_items, interval=interval)
        raise KeyError(self.kind)

    def interval(self) -> str:
        """The bounds as written in messages: ``"[lo, hi]"``."""
        return f"[{_fmt(self.lo)}, {_fmt(self.hi)}]"


def by_key(spec: Sequence[Param]) -> dict[str, Param]:
    """The controls of a page by query-string name: ``by_key(SPEC)["k"].hi``."""
    out = {p.key: p for p in spec}
    if len(out) != len(spec):
        raise ValueError(f"duplicate control keys in {[p.key for p in spec]}")
    return out


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return repr(x) if not x.is_integer() else str(int(x)) if abs(x) < 1e15 else repr(x)
    if isinstance(x, (list, tuple)):
        return ",".join(_fmt(v) for v in x)
    return str(x)


def _number(text: str, p: Param, integer: bool) -> float | int:
    value = float(text)  # ValueError on garbage
    if not math.isfinite(value):
        raise ValueError(text)
    if integer:
        if not value.is_integer():
            raise ValueError(text)
        value = int(value)
    if (p.lo is not None and value < p.lo) or (p.hi is not None and value > p.hi):
        raise ValueError(text)
    return value


def check_work(what: str, factors: Mapping[str, int], cap: int, hint: str = "") -> int:
    """The work ``what`` asks for, W = Π factors, or ValueError when W > ``cap``.

    The message names ``what``, each factor with its count, W and the cap, then ``hint``, e.g.
    ``"frontier: 1,500 curves × 64 K values = 96,000; at most 1,024 per view"``. It is a
    :class:`~specviz.base.i18n.Message`: ``what``, ``hint`` and the factor names may be
    :class:`~specviz.base.i18n.Phrase` objects, which a page then shows in its language too.
    """
    work = math.prod(int(n) for n in factors.values())
    if work > cap:
        terms = None
        for name, n in factors.items():
            term = Phrase("{n:,} {u}", n=int(n), u=name)  # "1,500 curves": a count and its unit
            terms = term if terms is None else Phrase("{a} × {b}", a=terms, b=term)
        if len(factors) > 1 and hint:
            raise Message(
                "{what}: {terms} = {work:,}; at most {cap:,} per view: {hint}",
                what=what,
                terms=terms,
                work=work,
                cap=cap,
                hint=hint,
            )
        if len(factors) > 1:
            raise Message(
                "{what}: {terms} = {work:,}; at most {cap:,} per view", what=what, terms=terms, work=work, cap=cap
            )
        if hint:
            raise Message(
                "{what}: {terms}; at most {cap:,} per view: {hint}", what=what, terms=terms, cap=cap, hint=hint
            )
        raise Message("{what}: {terms}; at most {cap:,} per view", what=what, terms=terms, cap=cap)
    return work


def check_items(p: Param, values: Sequence[Any]) -> None:
    """ValueError naming the parameter, its count and its cap when ``values`` holds more than ``p.max_items``.

    The one rule for list lengths: :func:`decode` applies it to links; code computing from a list
    that reached it another way (a widget's state) calls it before the work.
    """
    check_work(p.key, {Phrase("values"): len(values)}, p.max_items)


def clean_text(p: Param, value: str) -> tuple[str, str | None]:
    """A text control's value from a widget, cut to ``p.hi`` characters (the rule a link obeys), and a
    note naming the parameter, how much was typed and the limit; the note is None when nothing was cut."""
    if p.kind != "text":
        raise ValueError(f"control {p.key!r} is not text (kind {p.kind!r})")
    text, most = str(value), int(p.hi)
    if len(text) <= most:
        return text, None
    return text[:most], Phrase(
        "{param}: kept the first {n} of the {typed} characters typed; this box holds at most {n}.",
        param=p.key,
        typed=f"{len(text):,}",
        n=f"{most:,}",
    )


def clean_list(p: Param, values: Iterable[Any]) -> tuple[list, str | None]:
    """A list control's value from a widget, by the rule a link obeys, and a note of what was dropped.

    Each value (a number or typed text) must pass the number rule of ``p`` (finite, within
    ``[lo, hi]``, an integer for ``"ints"``); the others are dropped. The rest are made distinct and
    sorted; beyond ``p.max_items`` the largest are dropped. The note names the parameter, the dropped
    values and what is allowed; it is None when nothing was dropped.
    """
    if p.kind not in ("floats", "ints"):
        raise ValueError(f"control {p.key!r} is not a list (kind {p.kind!r})")
    kept, bad = set(), []
    for value in values:
        try:
            kept.add(_number(str(value).strip(), p, p.kind == "ints"))
        except ValueError:
            bad.append(str(value))
    kept = sorted(kept)
    ignored = capped = None
    if bad:
        shown = ", ".join(_shown(b) for b in bad[:5])
        if len(bad) > 5:
            shown = Phrase("{shown} and {more} more", shown=shown, more=len(bad) - 5)
        ignored = {"param": p.key, "shown": shown, "interval": p.interval()}
    if len(kept) > p.max_items:
        capped = {"n": p.max_items, "total": len(kept)}
        kept = kept[: p.max_items]
    return kept, _list_note(p, ignored, capped)


def _list_note(p: Param, ignored: dict | None, capped: dict | None) -> str | None:
    """The note of :func:`clean_list`: values dropped as not allowed (``ignored``), beyond the cap (``capped``)."""
    ints = p.kind == "ints"
    if ignored and capped:
        if ints:
            return Phrase(
                "Ignored {param} value(s) {shown}: each must be an integer in {interval}. Kept the first {n} of {total} {param} values: at most {n} are allowed.",
                **ignored,
                **capped,
            )
        return Phrase(
            "Ignored {param} value(s) {shown}: each must be a number in {interval}. Kept the first {n} of {total} {param} values: at most {n} are allowed.",
            **ignored,
            **capped,
        )
    if ignored:
        if ints:
            return Phrase("Ignored {param} value(s) {shown}: each must be an integer in {interval}.", **ignored)
        return Phrase("Ignored {param} value(s) {shown}: each must be a number in {interval}.", **ignored)
    if capped:
        return Phrase("Kept the first {n} of {total} {param} values: at most {n} are allowed.", param=p.key, **capped)
    return None


def _shown(raw: str) -> str:
    """``raw`` quoted for a message: cut after :data:`_SHOWN_CHARS` characters, saying how long it was."""
    if len(raw) <= _SHOWN_CHARS:
        return repr(raw)
    return Phrase("{value!r}… ({chars:,} characters)", value=raw[:_SHOWN_CHARS], chars=len(raw))


def _parse(text: str, p: Param) -> Any:
    """Parse one query value or raise ValueError."""
    if p.kind == "text":
        if len(text) > int(p.hi):
            raise ValueError(text[:20])
        return text
    text = text.strip()
    if p.kind in ("float", "int"):
        return _number(text, p, p.kind == "int")
    if p.kind == "bool":
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(text)
    if p.kind == "choice":
        choice = p.choice_of(text)
        if choice is None:
            raise ValueError(text)
        return choice
    parts = [s for s in text.split(",") if s.strip()]
    values = [_number(s, p, p.kind == "ints") for s in parts]
    if p.kind == "range":
        if len(values) != 2 or not values[0] < values[1]:
            raise ValueError(text)
        return (values[0], values[1])
    if p.kind not in ("floats", "ints"):
        raise ValueError(f"unknown kind {p.kind!r}")
    values = sorted(set(values))
    if p.kind == "floats" and not values:
        raise ValueError(text)
    check_items(p, values)
    return values


def decode(spec: Sequence[Param], query: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Validated values for every parameter of ``spec`` from a query mapping.

    Parameters
    ----------
    spec : sequence of Param
        The page's controls.
    query : mapping
        Query parameters (``st.query_params`` or a dict); a list value uses its last item.
        Keys not in ``spec`` are ignored.

    Returns
    -------
    values : dict
        ``{key: value}`` for every parameter; the default where the URL has none
        or an invalid one.
    warnings : dict
        ``{key: message}`` for each invalid parameter; the message names the
        parameter, its value and what is allowed.
    """
    values, warnings = {}, {}
    for p in spec:
        raw = query.get(p.key)
        if isinstance(raw, (list, tuple)):
            raw = raw[-1] if raw else None
        if raw is None:
            values[p.key] = p.default
            continue
        try:
            values[p.key] = _parse(str(raw), p)
        except ValueError:
            values[p.key] = p.default
            default = _fmt(p.default)
            shown = _shown(str(raw))
            if default:
                warnings[p.key] = Phrase(
                    "Ignored URL parameter {param}={value}: it must be {allowed}. Using the default {default}.",
                    param=p.key,
                    value=shown,
                    allowed=p.allowed(),
                    default=default,
                )
            else:
                warnings[p.key] = Phrase(
                    "Ignored URL parameter {param}={value}: it must be {allowed}. Using the default (empty).",
                    param=p.key,
                    value=shown,
                    allowed=p.allowed(),
                )
    return values, warnings


def _normalise(p: Param, value: Any) -> Any:
    if p.kind == "float":
        return float(value)
    if p.kind in ("range", "floats"):
        return [float(v) for v in value]
    return value


def encode(spec: Sequence[Param], values: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters for ``values``, omitting those equal to their default."""
    out = {}
    for p in spec:
        value, default = _normalise(p, values.get(p.key, p.default)), _normalise(p, p.default)
        if value != default:
            out[p.key] = _fmt(value)
    return out


def app_root(page_url: str | None, page_path: str) -> str:
    """The app's root URL from the URL of the page at ``page_path`` (its query dropped): where another
    page's link starts (``http://host/base/measured-data?runs=1`` → ``http://host/base``)."""
    root = (page_url or "").split("?", 1)[0].split("#", 1)[0].rstrip("/")
    return root[: -len(page_path) - 1] if page_path and root.endswith("/" + page_path) else root


def share_url(base: str | None, page_path: str, params: Mapping[str, str]) -> str:
    """Absolute (or root-relative, without ``base``) link to a page with ``params``."""
    root = (base or "").rstrip("/")
    if root.endswith("/" + page_path):
        root = root[: -len(page_path) - 1]
    url = f"{root}/{page_path}" if page_path else f"{root}/"
    query = urlencode(params)
    return f"{url}?{query}" if query else url

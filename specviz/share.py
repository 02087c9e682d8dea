"""Query-parameter codec for shareable views (no streamlit here).

A page declares its controls once as a tuple of :class:`Param`. :func:`decode`
turns a URL's query parameters into validated values (falling back to the
default, with a message, for anything missing-but-wrong); :func:`encode` turns
values back into the query string, leaving out values equal to their default so
links stay short. ``decode(encode(v)) == v`` for every valid ``v``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

__all__ = ["Param", "by_key", "decode", "encode", "share_url"]


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
    """

    key: str
    default: Any
    kind: str = "float"
    lo: float | None = None
    hi: float | None = None
    choices: tuple = ()
    log: bool = False

    def allowed(self) -> str:
        """Human description of the allowed values, for messages."""
        if self.kind == "choice":
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "text":
            return f"text of at most {int(self.hi)} characters"
        what = {
            "float": "a number",
            "int": "an integer",
            "range": "two numbers lo,hi with lo < hi",
            "floats": "comma-separated numbers",
            "ints": "comma-separated integers",
        }[self.kind]
        return f"{what} in [{_fmt(self.lo)}, {_fmt(self.hi)}]"


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
        for choice in p.choices:
            if text == _fmt(choice):
                return choice
        raise ValueError(text)
    parts = [s for s in text.split(",") if s.strip()]
    values = [_number(s, p, p.kind == "ints") for s in parts]
    if p.kind == "range":
        if len(values) != 2 or not values[0] < values[1]:
            raise ValueError(text)
        return (values[0], values[1])
    if p.kind == "floats":
        if not values:
            raise ValueError(text)
        return sorted(set(values))
    if p.kind == "ints":
        return sorted(set(values))
    raise ValueError(f"unknown kind {p.kind!r}")


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
            warnings[p.key] = (
                f"Ignored URL parameter {p.key}={str(raw)!r}: it must be {p.allowed()}. "
                f"Using the default {_fmt(p.default) or '(empty)'}."
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


def share_url(base: str | None, page_path: str, params: Mapping[str, str]) -> str:
    """Absolute (or root-relative, without ``base``) link to a page with ``params``."""
    root = (base or "").rstrip("/")
    if root.endswith("/" + page_path):
        root = root[: -len(page_path) - 1]
    url = f"{root}/{page_path}" if page_path else f"{root}/"
    query = urlencode(params)
    return f"{url}?{query}" if query else url

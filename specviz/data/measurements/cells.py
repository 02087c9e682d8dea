"""Bytes → text → cells → numbers: byte-order marks, encodings, percent, decimal comma.

Raises :class:`~specviz.data.measurements.report.MeasurementError` (the whole file) or :class:`Bad`
(one cell, which the checks turn into a :class:`~specviz.data.measurements.report.RowError`).
"""

from __future__ import annotations

import codecs
import contextlib
import math
import os
import re
from pathlib import Path

import numpy as np

from specviz.base.i18n import Message, Phrase
from specviz.data.measurements.report import LoadReport, MeasurementError

HINT = "a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines"

# --------------------------------------------------------------------------------------
# input -> bytes or str
# --------------------------------------------------------------------------------------


def read_input(data, name: str, max_bytes: int) -> bytes | str:
    """The raw content: bytes from bytes / paths / file objects, str as given (a str is content, not a path)."""
    if isinstance(data, str):
        if "\n" not in data and len(data) < 4096 and os.path.isfile(data):
            raise MeasurementError(
                Message(
                    "{name}: a str is read as the file's text, and {data!r} is a file name; pass pathlib.Path({data!r}) to read the file",
                    name=name,
                    data=data,
                )
            )
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, os.PathLike):
        return _read_path(data, name, max_bytes)
    reader = getattr(data, "getvalue", None) or getattr(data, "read", None)
    if callable(reader):  # BytesIO, StringIO, Streamlit's UploadedFile, open files
        try:
            content = reader() if reader.__name__ == "getvalue" else reader(max_bytes + 1)
        except (OSError, ValueError, TypeError) as exc:
            raise MeasurementError(
                Message("{name}: cannot read the file object: {cause}", name=name, cause=exc)
            ) from None
        if isinstance(content, (str, bytes, bytearray, memoryview)):
            return content if isinstance(content, str) else bytes(content)
    raise MeasurementError(
        Message(
            "data must be bytes, a str holding the file's text, or a path (os.PathLike); got {type}",
            type=type(data).__name__,
        )
    )


def _read_path(data: os.PathLike, name: str, max_bytes: int) -> bytes:
    try:
        path = Path(data)
    except TypeError as exc:
        raise MeasurementError(Message("{name}: not a usable path: {cause}", name=name, cause=exc)) from None
    try:
        if not path.is_file():
            raise MeasurementError(
                Message("{name}: file {path!r} does not exist or is not a file", name=name, path=str(path))
            )
        size = path.stat().st_size
        if size > max_bytes:
            raise MeasurementError(too_big(name, size, max_bytes))
        return path.read_bytes()
    except OSError as exc:
        raise MeasurementError(
            Message("{name}: cannot read {path!r}: {cause}", name=name, path=str(path), cause=exc)
        ) from None


def too_big(name: str, size: int, max_bytes: int) -> str:
    return Phrase(
        "{name}: the file is {size:,} bytes; the limit is max_bytes = {max_bytes:,} bytes ({mb:g} MB)",
        name=name,
        size=size,
        max_bytes=max_bytes,
        mb=max_bytes / 10**6,
    )


# --------------------------------------------------------------------------------------
# bytes -> text
# --------------------------------------------------------------------------------------

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_C0 = re.compile("[\x00-\x08\x0e-\x1f\x7f]")  # control characters other than \t \n \v \f \r
_C0_C1 = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")


def text_of(raw: bytes | str, name: str, max_bytes: int, report: LoadReport) -> str:
    """The text of the input (decoded, size-checked, not binary, not empty); sets ``report.encoding``."""
    if isinstance(raw, str):
        size = len(raw.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise MeasurementError(too_big(name, size, max_bytes), report)
        # lone surrogates (only possible in a str) cannot be stored anywhere; make them visible
        text = raw.encode("utf-8", "surrogatepass").decode("utf-8", "replace").lstrip("\ufeff")
        check_text(text, name)
        report.encoding = "text"
    else:
        if len(raw) > max_bytes:
            raise MeasurementError(too_big(name, len(raw), max_bytes), report)
        if not raw.strip():
            raise MeasurementError(Message("{name}: the file is empty", name=name), report)
        text, report.encoding = decode(raw, name)
    if not text.strip():
        raise MeasurementError(Message("{name}: the file is empty", name=name), report)
    return text


def _binary(name: str, why: Phrase) -> MeasurementError:
    """The error of input that is not text; ``why`` says how it shows (a Phrase; the text ends with :data:`HINT`)."""
    return MeasurementError(
        Message(
            "{name}: this is not a text file ({why}); upload a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines",
            name=name,
            why=why,
        )
    )


def decode(raw: bytes, name: str) -> tuple[str, str]:
    """Text and encoding: BOMs (UTF-8/16/32), UTF-16 without BOM, UTF-8, else cp1252, else Latin-1."""
    decoded = _decode_bom(raw, name)
    if decoded is None and b"\x00" in raw:
        decoded = _decode_utf16_without_bom(raw)
        if decoded is None:
            raise _binary(name, Phrase("it holds NUL bytes"))
    if decoded is None:
        for enc in ("utf-8", "cp1252", "latin-1"):
            with contextlib.suppress(UnicodeDecodeError):
                decoded = raw.decode(enc), enc
                break
    assert decoded is not None  # latin-1 decodes every byte string
    text, encoding = decoded
    check_text(text, name, c1=encoding == "latin-1")
    return text, encoding


def _decode_bom(raw: bytes, name: str) -> tuple[str, str] | None:
    """(text, encoding) of input that starts with a byte-order mark; None without one."""
    for bom, enc in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(enc), enc
            except UnicodeDecodeError as exc:
                why = Phrase(
                    "it starts with a {encoding} byte-order mark but is not valid {encoding}: {reason} at byte {byte}",
                    encoding=enc,
                    reason=exc.reason,
                    byte=exc.start,
                )
                raise _binary(name, why) from None
    return None


def _decode_utf16_without_bom(raw: bytes) -> tuple[str, str] | None:
    """UTF-16 text without a BOM: every other byte (nearly) zero; None if it is not that."""
    even, odd = raw[0::2], raw[1::2]
    for enc, zeros, chars in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if len(raw) % 2 == 0 and zeros.count(0) >= 0.9 * len(zeros) and chars.count(0) <= 0.1 * len(chars):
            with contextlib.suppress(UnicodeDecodeError):
                return raw.decode(enc), f"{enc} (no BOM)"
            return None
    return None


def check_text(text: str, name: str, c1: bool = False) -> None:
    """Refuse text with NULs or more than a few control characters (``c1``: count C1 controls too)."""
    if "\x00" in text:
        raise _binary(name, Phrase("it holds NUL characters"))
    n_bad = len((_C0_C1 if c1 else _C0).findall(text))
    if n_bad > max(2, 0.01 * len(text)):
        raise _binary(
            name, Phrase("{bad} of its {chars} characters are control characters", bad=n_bad, chars=len(text))
        )


# --------------------------------------------------------------------------------------
# cells -> numbers
# --------------------------------------------------------------------------------------

NUM = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?inf(?:inity)?", re.IGNORECASE)
COMMA_NUM = re.compile(r"[+-]?[0-9]*,[0-9]+(?:[eE][+-]?[0-9]+)?%?")
DOT_NUM = re.compile(r"[+-]?[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?%?")
MISSING = frozenset({"", "na", "n/a", "nan", "none", "null", "-", "—", "–"})  #: cells read as empty
TRUE_CELLS = frozenset({"true", "1", "yes", "1.0"})
FALSE_CELLS = frozenset({"false", "0", "no", "0.0"})


class Bad(Exception):
    """A cell that is not a number (always turned into a RowError)."""


def cell_text(value) -> str:
    """A cell as text for messages (floats by ``repr``; None → "")."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_number(value, decimal_comma: bool, suffixes: str) -> tuple[float | None, bool]:
    """(number or None if missing, whether it ended in '%'); '%' divides by 100, 'x' / '×' is dropped (where
    ``suffixes`` allow them), ``decimal_comma`` reads ',' as the point. Raises :class:`Bad`."""
    if value is None:
        return None, False
    if isinstance(value, bool):
        raise Bad
    if isinstance(value, (int, float, np.integer, np.floating)):
        try:
            x = float(value)
        except OverflowError:  # an int beyond float range
            x = math.copysign(math.inf, value)
        return (None if math.isnan(x) else x), False
    s = str(value).strip()
    if s.lower() in MISSING:
        return None, False
    percent = False
    if s.endswith("%") and "%" in suffixes:
        s, percent = s[:-1].rstrip(), True
    elif s[-1:] in "xX×" and "x" in suffixes:
        s = s[:-1].rstrip()
    if decimal_comma:
        s = s.replace(",", ".")
    if not NUM.fullmatch(s):
        raise Bad
    x = float(s)
    if math.isnan(x):
        return None, percent
    return (x / 100.0 if percent else x), percent


def parse_bool(cell) -> bool | None:
    """True / False from true/false, 1/0, yes/no; None if empty; raises :class:`Bad` otherwise."""
    s = cell_text(cell).strip().lower()
    if s in MISSING:
        return None
    if s in TRUE_CELLS:
        return True
    if s in FALSE_CELLS:
        return False
    raise Bad


def parse_positions(cell, decimal_comma: bool) -> list[float] | None:
    """A per-position list "a_1;a_2;…" → floats in [0, 1] (nan allowed); None if empty; raises :class:`Bad`."""
    s = cell_text(cell).strip()
    if s.lower() in MISSING:
        return None
    s = s.strip("[]() ")
    parts = re.split(r"[;\s]+" if decimal_comma else r"[;,\s]+", s)
    out = []
    for p in parts:
        if decimal_comma:
            p = p.replace(",", ".")
        if p.lower() == "nan":
            out.append(math.nan)
            continue
        if not NUM.fullmatch(p):
            raise Bad
        x = float(p)
        if not 0.0 <= x <= 1.0:
            raise Bad
        out.append(x)
    return out if out else None


def count_separators(cells: list, positions: bool) -> tuple[int, int]:
    """(cells written with a decimal comma, cells written with a decimal point) among ``cells``."""
    comma = dot = 0
    for c in cells:
        s = c.strip() if isinstance(c, str) else ""
        parts = re.split(r"[;\s]+", s.strip("[]() ")) if positions else [s]
        for p in parts:
            if COMMA_NUM.fullmatch(p):
                comma += 1
            elif DOT_NUM.fullmatch(p):
                dot += 1
    return comma, dot

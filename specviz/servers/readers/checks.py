"""The error of every telemetry reader, and the checks that turn a body's values into numbers or say why not."""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace

from specviz.base.i18n import N_, Message
from specviz.servers.telemetry import Telemetry

MAX_MODEL = 160  #: characters of a model name kept (the run's label is "<stack> <model>", at most 200)
_SHOWN = 160  #: characters of a series, value or parser error quoted in a message


class TelemetryError(Message):
    """A body that is not the telemetry expected (wrong format, stack, or speculation off); a ValueError."""

    def __reduce__(self):  # pickling keeps the class
        return _telemetry_error, (self.msgid, self.fields)


def _telemetry_error(key: str, fields: dict) -> TelemetryError:
    return TelemetryError(key, **fields)


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


def _cut(text: object, limit: int = _SHOWN) -> str:
    """``text`` cut to ``limit`` characters (… when cut)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _model(name: object) -> str:
    """A served model's name cut to :data:`MAX_MODEL` characters."""
    return _cut(name, MAX_MODEL) if name else ""


def _with(t: Telemetry, **changes) -> Telemetry:
    return replace(t, **{k: v for k, v in changes.items() if v is not None})


def _json(body: dict | list | str, what: str):
    """``body`` parsed as JSON; else (too deep or long included) TelemetryError naming ``what``, the endpoint."""
    if isinstance(body, (dict, list)):
        return body
    try:
        return json.loads(body)
    except (ValueError, TypeError, RecursionError) as exc:
        raise TelemetryError(
            "{what}: the body is not JSON ({error_type}: {error})",
            what=what,
            error_type=exc.__class__.__name__,
            error=_cut(exc),
        ) from None


def _number(value: object, what: str, field: str) -> float:
    """``field`` as a count: a finite number ≥ 0 (a numeric string too); else TelemetryError naming it."""
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise TelemetryError(
            "{what}: {field} is {value}; a count is a finite number ≥ 0",
            what=what,
            field=field,
            value=_cut(repr(value), 60),
        )
    return number


def _checked(value: object, ok, message: str, what: str, field: str) -> float:
    """``field`` as a float when a number (no str or bool) that ``ok`` accepts; else TelemetryError ``message``."""
    if not (isinstance(value, int | float) and not isinstance(value, bool) and ok(value)):  # NaN fails ok too
        raise TelemetryError(message, what=what, field=field, value=_cut(repr(value), 60))
    return float(value)


def _fraction(value: object, what: str, field: str) -> float:
    """``field`` as a share of time, 0..1."""
    return _checked(
        value,
        lambda v: 0.0 <= v <= 1.0,
        N_("{what}: {field} is {value}; a share of time is a number from 0 to 1"),
        what,
        field,
    )


def _milliseconds(value: object, what: str, field: str) -> float:
    """``field`` as a duration, a finite number of ms ≥ 0."""
    return _checked(
        value,
        lambda v: math.isfinite(v) and v >= 0,
        N_("{what}: {field} is {value}; a duration is a finite number of milliseconds ≥ 0"),
        what,
        field,
    )

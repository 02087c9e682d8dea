"""Every ``SPECVIZ_*`` environment variable a deployment sets: its kind, default, hosted default and rule.

One table, :data:`SETTINGS`, that the modules using a setting read it through (:func:`value`, :func:`number`)
and that docs/deploy.md's tables are checked against (``tests/base/test_settings.py``). Reading is lazy: each call
reads the environment given (``os.environ`` by default), so a test or a restarted server sees a new value.
The variables of the test harness (``SPECVIZ_TEST_POSTGRES_URL``, ``SPECVIZ_REQUIRE_*``) are not settings
of the app; docs/testing.md lists them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from specviz.base.i18n import Message

__all__ = ["ENV_MOST", "SETTINGS", "Setting", "number", "setting", "value"]

ENV_MOST = 10**9  #: the largest value a number setting may take (a widget's bound must stay below 2**53)


@dataclass(frozen=True)
class Setting:
    """One environment variable: ``kind`` says how it is read.

    - ``"flag"``: hosted mode's yes / no (:mod:`specviz.base.hosting` reads it, misspellings included);
    - ``"count"``: a positive integer at most :data:`ENV_MOST`; ``"seconds"``: a positive number at most that;
    - ``"text"``: a list or URL its module parses; ``"path"``: a file or folder.

    ``default`` applies when the variable is unset or blank; ``hosted`` is the default in hosted mode where it
    differs (None: the same). Both are None where the module computes the default (a per-user data folder).
    """

    name: str
    kind: str
    default: int | float | str | None
    hosted: int | float | str | None = None
    meaning: str = ""


SETTINGS: tuple[Setting, ...] = (
    Setting("SPECVIZ_HOSTED", "flag", "", meaning="hosted mode (docs/deploy.md §3)"),
    Setting("SPECVIZ_HF_ALLOWLIST", "text", "", meaning="Hugging Face TARGET,DRAFT pairs allowed in hosted mode"),
    Setting("SPECVIZ_MAX_NEW_TOKENS", "count", 1024, 256, "new tokens per live run"),
    Setting("SPECVIZ_MAX_REPEATS", "count", 10, 3, "repeats per prompt"),
    Setting("SPECVIZ_MAX_PROMPTS", "count", 32, 12, "prompts per live run"),
    Setting("SPECVIZ_MAX_CELLS", "count", 64, 16, "(K, temperature) cells per live run"),
    Setting("SPECVIZ_MAX_WALL_S", "seconds", 900.0, 120.0, "a live run stops after this many seconds"),
    Setting("SPECVIZ_MAX_BATCH", "count", 64, 8, "sequences decoded at once"),
    Setting("SPECVIZ_ENGINE_HOSTS", "text", "", meaning="the hosts the Engine monitor may fetch in hosted mode"),
    Setting("SPECVIZ_DB_URL", "text", None, meaning="the run library's database URL"),
    Setting("SPECVIZ_ADMINS", "text", "", meaning="e-mail addresses and @domains with the admin role"),
    Setting("SPECVIZ_EDITORS", "text", "", meaning="e-mail addresses and @domains with the editor role"),
    Setting("SPECVIZ_DEFAULT_ROLE", "text", "viewer", meaning="the role of a signed-in person on neither list"),
    Setting("SPECVIZ_AUTH_HEADER", "text", "", meaning="the header a trusted proxy puts the e-mail in"),
    Setting("SPECVIZ_TRASH_DAYS", "count", 30, 30, "days a trashed run can be restored before it is purged"),
    Setting("SPECVIZ_LIVE_PER_HOUR", "count", 1000, 6, "live runs one person may start per hour"),
    Setting("SPECVIZ_LOADGEN_PER_HOUR", "count", 1000, 6, "load-generator runs one person may start per hour"),
    Setting("SPECVIZ_LLAMA_SERVER", "path", None, meaning="a llama-server binary for the engine tests"),
    Setting("SPECVIZ_LLAMA_CACHE", "path", None, meaning="the folder holding a built llama-server"),
    Setting("SPECVIZ_TUNE_DIR", "path", None, meaning="the folder the Tune page keeps its tunes in"),
)
_BY_NAME = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    """The :class:`Setting` named ``name``; KeyError for a name that is not one (a typo in the code)."""
    return _BY_NAME[name]


def value(name: str, environ: Mapping[str, str] | None = None) -> str:
    """``$name`` as set, stripped of surrounding white space ("" when unset)."""
    setting(name)
    environ = os.environ if environ is None else environ
    return environ.get(name, "").strip()


def number(name: str, environ: Mapping[str, str] | None = None, *, hosted: bool = False) -> int | float:
    """A ``count`` or ``seconds`` setting: its value, or its (hosted) default when unset or blank.

    Raises
    ------
    ValueError
        A :class:`~specviz.base.i18n.Message` naming the variable, its value and what is allowed, for a
        value that is no positive number (``-1``, ``0``, ``nan``, ``abc``; ``3.5`` for a count) or exceeds
        :data:`ENV_MOST` (``inf``, ``1e400``, 20 digits).
    """
    s = setting(name)
    if s.kind not in ("count", "seconds"):
        raise TypeError(f"{name} is a {s.kind} setting, not a number")
    kind = int if s.kind == "count" else float
    raw = value(name, environ)
    if not raw:
        return kind(s.hosted if hosted and s.hosted is not None else s.default)
    try:
        parsed = kind(raw)
    except ValueError:
        raise _not_positive(name, raw, kind) from None
    if not parsed > 0:
        raise _not_positive(name, raw, kind)
    if not parsed <= ENV_MOST:  # an int too large for a widget, or a float that is infinite (inf, 1e400)
        raise Message(
            "{name} must be a positive number at most {most}; got {raw!r}", name=name, raw=raw, most=f"{ENV_MOST:,}"
        )
    return parsed


def _not_positive(name: str, raw: str, kind) -> Message:
    if kind is int:
        return Message("{name} must be a positive integer; got {raw!r}", name=name, raw=raw)
    return Message("{name} must be a positive number; got {raw!r}", name=name, raw=raw)

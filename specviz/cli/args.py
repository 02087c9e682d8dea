"""Argument types and defaults the subcommands share."""

from __future__ import annotations

import argparse

from specviz.base.paths import DATA

DEFAULT_PAIR_DIR = DATA / "models" / "bundled"


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers; got {text!r}") from None


def _ints(text: str, lo: int = 1) -> list[int]:
    values = _floats(text)
    if not values or any(v != int(v) or v < lo for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= {lo}; got {text!r}")
    return [int(v) for v in values]


def _ks(text: str) -> list[int]:
    """Draft lengths, 0 (no speculation) allowed."""
    return _ints(text, lo=0)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return value


def _engines(text: str) -> list[str]:
    """``--engine``: a comma-separated list of specviz.engine.bench.ENGINES."""
    from specviz.engine.bench import ENGINES

    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or any(n not in ENGINES for n in names):
        raise argparse.ArgumentTypeError(f"expected one or more of {', '.join(ENGINES)}; got {text!r}")
    return list(dict.fromkeys(names))

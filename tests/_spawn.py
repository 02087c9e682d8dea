"""Spawned worker processes for the concurrency tests of the run library."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager


@contextmanager
def plain_main() -> Iterator[None]:
    """Spawn children with an empty __main__: AppTest (other test files) leaves sys.modules['__main__'] pointing
    at the last page it ran, and a spawned child would import, i.e. run, that page first."""
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


@contextmanager
def spawned(ctx, target: Callable, args: Sequence[tuple], join_s: float = 30) -> Iterator[list]:
    """Start one daemon process of ``ctx`` (a spawn context) per tuple in ``args``; join them on leaving.

    A process still alive ``join_s`` seconds after the block is killed (its exit code then shows it).
    """
    procs = [ctx.Process(target=target, args=a, daemon=True) for a in args]
    with plain_main():
        for p in procs:
            p.start()
    try:
        yield procs
    finally:
        for p in procs:
            p.join(timeout=join_s)
            if p.is_alive():
                p.kill()
                p.join()

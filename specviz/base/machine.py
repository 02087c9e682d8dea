"""What machine a measurement ran on (no torch here, so the theory benchmark can use it too)."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_name() -> str:
    """CPU model and core count, e.g. ``"AMD EPYC, 2 cores"``."""
    return f"{cpu_model()}, {os.cpu_count()} cores"


def median_time(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> tuple[float, list[float]]:
    """Median wall time of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls; and every time."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def release_freed_memory() -> bool:
    """Hand the heap pages that freed objects left behind back to the operating system.

    Parsing a 20 MB upload allocates ~100 MB of short-lived Python objects; glibc keeps the freed
    pages in the arena of the thread that parsed (each Streamlit script run has its own), so without
    this the server's resident memory stays at the peak of every upload. ``malloc_trim(0)`` is glibc's
    public call for exactly this (as Dask's workers use it). Returns whether it ran: False where the C
    library is not glibc.
    """
    import ctypes
    import ctypes.util

    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True

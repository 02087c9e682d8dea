"""What machine a measurement ran on (no torch here, so the theory benchmark can use it too)."""

from __future__ import annotations

import os
import platform
import statistics
import threading
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


#: Seconds between two trims of the server's heap (:func:`start_heap_trimmer`)
TRIM_PERIOD_S = 30.0
_trimmer: threading.Thread | None = None
_trimmer_lock = threading.Lock()
_trimmer_stop = threading.Event()  #: set to end the trimmer (tests); it is a daemon thread otherwise


def start_heap_trimmer(period_s: float = TRIM_PERIOD_S) -> bool:
    """Start, once per process, a daemon thread that calls :func:`release_freed_memory` every ``period_s``.

    Every Streamlit script run has its own thread and glibc gives threads their own arenas, so the pages that
    a run frees stay resident, scattered between live objects, until something trims them: under many
    visitors the server's RSS climbs with no object alive to show for it. A trim takes 10–80 ms here and holds
    no Python lock (ctypes releases the GIL), so it runs beside the sessions rather than in one of their runs.
    Returns whether the trimmer runs (False where the C library is not glibc).
    """
    global _trimmer
    if platform.libc_ver()[0] != "glibc":
        return False
    with _trimmer_lock:
        if _trimmer is None or not _trimmer.is_alive():

            def trim() -> None:
                while not _trimmer_stop.wait(period_s):
                    release_freed_memory()

            _trimmer = threading.Thread(target=trim, name="specviz-heap-trimmer", daemon=True)
            _trimmer.start()
    return True

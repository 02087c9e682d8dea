"""The server's heap trimmer: one thread per process, calling glibc's malloc_trim at its period."""

from __future__ import annotations

import itertools
import platform
import threading
import time

import pytest

from specviz.base import machine

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")


def test_one_trimmer_per_process_trims_at_its_period(monkeypatch):
    calls = []
    monkeypatch.setattr(machine, "release_freed_memory", lambda: calls.append(time.monotonic()) or True)
    if machine._trimmer is not None:  # a page run earlier in this worker started the server's own: end it first
        machine._trimmer_stop.set()
        machine._trimmer.join(timeout=5)
        machine._trimmer_stop.clear()
    monkeypatch.setattr(machine, "_trimmer", None)
    try:
        assert machine.start_heap_trimmer(0.02) and machine.start_heap_trimmer(0.02)
        named = [t for t in threading.enumerate() if t.name == "specviz-heap-trimmer"]
        assert len(named) == 1 and named[0] is machine._trimmer  # the second call started none
        deadline = time.monotonic() + 5
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(calls) >= 3 and min(b - a for a, b in itertools.pairwise(calls)) >= 0.015
    finally:
        machine._trimmer_stop.set()
        machine._trimmer.join(timeout=5)
        machine._trimmer_stop.clear()
    assert not machine._trimmer.is_alive()

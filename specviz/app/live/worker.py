"""One run at a time, on one thread: the worker thread that does every torch call (the run queue is
:mod:`specviz.app.queues`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from specviz.app.queues import LIVE_QUOTA, LOADGEN_QUEUE, LOADGEN_QUOTA, RUN_QUEUE, HourlyQuota, RunQueue
from specviz.base.i18n import Message

__all__ = [
    "LIVE_QUOTA",
    "LOADGEN_QUEUE",
    "LOADGEN_QUOTA",
    "RUN_QUEUE",
    "HourlyQuota",
    "RunQueue",
    "Worker",
    "gpu_summary",
    "shared_worker",
    "torch_dtype",
    "wait",
]


def wait(future: Future, tick: Callable[[], None], interval_s: float = 0.2):
    """Call ``tick()`` about every ``interval_s`` until ``future`` is done; return its result (or raise its error).

    The page's progress bar updates in ``tick``; that is also where Streamlit interrupts the
    script when the person presses Stop.
    """
    while not future.done():
        tick()
        time.sleep(interval_s)
    return future.result()


class Worker:
    """The one thread on which the live runs do all their torch work: loading pairs and measuring.

    PyTorch's CPU thread pool (OpenMP) belongs to the thread that calls into it. Streamlit runs each
    rerun of a page on a new thread; when a pair loaded on one thread is run from another, the idle
    pools contend for the cores and decoding measured 15–40 % slower on a 2-core CPU (a thread that
    loads and runs alike is as fast as the CLI's main thread). So every load and every run goes
    through this single worker thread; loaded pairs are kept (at most ``max_pairs``, oldest dropped).
    """

    def __init__(self, max_pairs: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specviz-live")
        self._pairs: dict[tuple, tuple] = {}
        self._max_pairs = max_pairs

    def submit(self, fn: Callable, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` on the worker thread (after any job already queued)."""
        return self._pool.submit(fn, *args, **kwargs)

    def pair(self, spec: str, device: str, dtype: str) -> tuple:
        """``load_pair(spec, device, torch_dtype(dtype))``, cached; call it from a job running on this worker."""
        from specviz.engine.models import load_pair

        key = (spec, device, dtype)
        if key not in self._pairs:
            while len(self._pairs) >= self._max_pairs:
                self._pairs.pop(next(iter(self._pairs)))
            self._pairs[key] = load_pair(spec, device=device, dtype=torch_dtype(dtype))
        return self._pairs[key]


_SHARED: list[Worker] = []
_SHARED_LOCK = threading.Lock()


def shared_worker() -> Worker:
    """The process's worker, created on first use and shared by every browser session."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(Worker())
        return _SHARED[0]


def torch_dtype(name: str):
    """The ``torch.dtype`` of a :data:`specviz.app.live.DTYPES` name; None for "auto" (the device's default)."""
    import torch

    from specviz.app.live.request import DTYPES

    if name not in DTYPES:
        raise Message("dtype: {dtype!r}; allowed: {allowed}", dtype=name, allowed=", ".join(DTYPES))
    return None if name == "auto" else getattr(torch, name)


def gpu_summary(device: str) -> str | None:
    """ "NAME, N GiB" of the GPU a run on ``device`` ("auto", "cpu", "cuda") would use; None when it runs on the CPU."""
    import torch

    if device == "cpu" or not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return f"{props.name}, {props.total_memory / 2**30:.0f} GiB"

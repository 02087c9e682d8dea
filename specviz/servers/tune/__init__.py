"""Tuning a serving stack from outside: sweep draft lengths × loads, keep every point, resume where it stopped."""

from specviz.servers.tune.plan import LIMITS, MODES, TunePlan, prompts_sha
from specviz.servers.tune.store import append_point, done, open_tune, read_points
from specviz.servers.tune.sweep import Progress, isolation, local, measure_point, pin_threads, remote, sweep

__all__ = [
    "LIMITS",
    "MODES",
    "Progress",
    "TunePlan",
    "append_point",
    "done",
    "isolation",
    "local",
    "measure_point",
    "open_tune",
    "pin_threads",
    "prompts_sha",
    "read_points",
    "remote",
    "sweep",
]

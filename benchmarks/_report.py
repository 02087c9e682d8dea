"""What every benchmark script shares: the machine line, median timing, PASS/FAIL summary."""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # scripts run as `python benchmarks/x.py` import specviz from the repo
    sys.path.insert(0, str(ROOT))

from specviz.base.machine import median_time  # noqa: E402  (after the path set-up; re-exported to the scripts)

#: (name, measured text, target text, "PASS" | "FAIL" | "SKIP"), in the order checked
RESULTS: list[tuple[str, str, str, str]] = []


def record(name: str, measured: str, target: str, ok: bool | None) -> str:
    """Record one check; ``ok=None`` means skipped. Returns the verdict word."""
    verdict = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
    RESULTS.append((name, measured, target, verdict))
    return verdict


def time_reference(fn, points: list, repeats: int = 3) -> tuple[list, float, float]:
    """``[fn(*p) for p in points]`` timed as a whole (median of ``repeats``, no warm-up).

    Returns (results of the last call, median seconds, median seconds per point).
    """
    out: dict[str, list] = {}

    def run() -> None:
        out["results"] = [fn(*p) for p in points]

    med, _ = median_time(run, repeats=repeats, warmup=0)
    return out["results"], med, med / len(points)


def fmt_s(t: float) -> str:
    """A duration with a readable unit."""
    if t >= 1.0:
        return f"{t:.3f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    if t >= 1e-6:
        return f"{t * 1e6:.2f} us"
    return f"{t * 1e9:.1f} ns"


def machine_line(extra: str = "") -> str:
    """One line naming the machine: platform, CPU model, cores, Python, load, plus ``extra``."""
    from specviz.base.machine import cpu_model

    cpu = cpu_model()
    try:
        load = f"{os.getloadavg()[0]:.2f}"
    except OSError:
        load = "n/a"
    parts = [
        f"machine: {platform.platform()}",
        f"cpu: {cpu}",
        f"cores: {os.cpu_count()}",
        f"python {platform.python_version()}",
        extra,
        f"load avg (1 min) {load}",
    ]
    return " | ".join(p for p in parts if p)


def summary(t_start: float) -> int:
    """Print the table of every recorded check; return the number of FAILs."""
    print("\nsummary")
    w0 = max(len(r[0]) for r in RESULTS)
    w1 = max(len(r[1]) for r in RESULTS + [("", "measured", "", "")])
    w2 = max(len(r[2]) for r in RESULTS + [("", "", "target", "")])
    print(f"  {'check':<{w0}}  {'measured':<{w1}}  {'target':<{w2}}  result")
    for name, measured, target, verdict in RESULTS:
        print(f"  {name:<{w0}}  {measured:<{w1}}  {target:<{w2}}  {verdict}")
    counts = {v: sum(r[3] == v for r in RESULTS) for v in ("PASS", "FAIL", "SKIP")}
    print(
        f"  {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['SKIP']} SKIP; "
        f"total run time {time.perf_counter() - t_start:.1f} s"
    )
    return counts["FAIL"]


def chosen(text: str, allowed, parser) -> list[str]:
    """The comma-separated names of ``--variants``-style option ``text``; a name not in ``allowed``
    ends the script through ``parser.error`` naming it and the choices."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown:
        parser.error(f"--variants: unknown {unknown}; choose from {list(allowed)}")
    return names


def shape_config(shape: str):
    """The trained target's config, or ``"LxD"``'s: L layers of width D in heads of 64, same context."""
    from dataclasses import replace

    from specviz.engine import train

    if not shape:
        return train.TARGET
    try:
        layers, width = (int(v) for v in shape.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--shape must be LAYERSxWIDTH, e.g. 6x384; got {shape!r}") from None
    if layers < 1 or width < 64 or width % 64:
        raise SystemExit(f"--shape needs layers >= 1 and a width that is a multiple of 64; got {shape!r}")
    return replace(train.TARGET, n_layer=layers, n_embd=width, n_head=width // 64)

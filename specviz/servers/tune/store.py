"""A tune's folder: its plan (``plan.json``) and one line per measured point (``points.jsonl``), appended as
each point finishes, so a tune killed mid-sweep resumes with no point lost or measured twice."""

from __future__ import annotations

import json
import os
from pathlib import Path

from specviz.base.i18n import Message
from specviz.servers.tune.plan import TunePlan

PLAN, POINTS = "plan.json", "points.jsonl"


def open_tune(folder: Path, plan: TunePlan) -> list[dict]:
    """Start ``folder`` for ``plan``, or resume it: the points already measured there (a partial last line,
    from a kill mid-write, is dropped). Raises Message when the folder holds another plan's tune."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PLAN
    if path.is_file():
        old = TunePlan.from_json(json.loads(path.read_text()))
        if old.digest() != plan.digest():
            raise Message(
                "{folder} holds a tune of another plan ({old}); choose another folder or the same settings",
                folder=str(folder),
                old=_said(old),
            )
    else:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(plan.to_json(), indent=1))
        os.replace(tmp, path)
    return read_points(folder)


def _said(plan: TunePlan) -> str:
    said = (
        f"K {list(plan.ks)}, concurrency {list(plan.concurrency)}, {plan.requests} requests × {plan.max_tokens} tokens"
    )
    return said if plan.contexts == (0,) else f"{said}, contexts {list(plan.contexts)}"


def read_points(folder: Path) -> list[dict]:
    """The points of ``folder``, in the order measured; a line that is not whole JSON (the last, cut) is skipped."""
    path = folder / POINTS
    if not path.is_file():
        return []
    points = []
    for line in path.read_text().splitlines():
        try:
            points.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return points


def append_point(folder: Path, point: dict) -> None:
    """Add one point as one line, flushed to disk before this returns."""
    path = folder / POINTS
    text = path.read_bytes() if path.is_file() else b""
    with open(path, "ab") as f:
        if text and not text.endswith(b"\n"):
            f.write(b"\n")  # a line cut by a kill stays a line of its own, and is skipped on reading
        f.write(json.dumps(point, sort_keys=True).encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())


def done(points: list[dict]) -> set[tuple[int, int, int]]:
    """(K, concurrency, context) already measured (a point without a context: the prompts as given, 0)."""
    return {(int(p["k"]), int(p["concurrency"]), int(p.get("context", 0))) for p in points}

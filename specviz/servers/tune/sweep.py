"""Measuring a tune's points: a closed loop per (K, load) with the speculative counters read around it.

Local: a llama-server on loopback per K (0: no draft), one slot per request in flight at the plan's largest
load; idle servers cost no CPU, so all stay up and each load measures every K in turn. Remote: the user's server, at the K it runs. Each point is saved as it finishes; a stop
or the plan's time bound ends the sweep between or inside points, and an unfinished point is not saved.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specviz.base.i18n import Message
from specviz.servers import loadgen
from specviz.servers.fetch import FetchPolicy, fetch
from specviz.servers.readers import read_metrics
from specviz.servers.telemetry import window
from specviz.servers.tune import store
from specviz.servers.tune.plan import TunePlan

LOCAL_CONTEXT = 512  #: tokens per slot of a local server (llamacpp.server_args' ctx): the bundled pair's block size
DEFAULT_CHARS_PER_TOKEN = 4.0  #: a BPE tokenizer on English prose, where the server reports no prompt tokens


@dataclass(frozen=True)
class Progress:
    """Where a sweep is: points saved of the plan's total, the one measuring now, seconds so far."""

    saved: int
    total: int
    k: int
    concurrency: int
    elapsed_s: float
    note: str = ""
    context: int = 0


def _metrics(url: str, policy: FetchPolicy, k: int | None):
    """The server's speculative counters now, or None where it has none (K = 0, or metrics off)."""
    try:
        return read_metrics(fetch(loadgen.metrics_url(url), policy).text, k=k)
    except ValueError:  # FetchError and TelemetryError are ValueErrors: no counters to read
        return None


def measure_point(
    url: str,
    plan: TunePlan,
    k: int,
    concurrency: int,
    prompts: list[str],
    policy: FetchPolicy,
    stop=None,
    seconds: float | None = None,
    context: int = 0,
) -> dict | None:
    """One closed loop at ``concurrency``; the point's figures, or None when ``stop`` or ``seconds`` (default:
    the plan's whole time) ended it before its last request.

    TPOT and TTFT are means over the successful requests (as ``vllm bench serve`` reports them); ``shares``
    are u_i = drafts accepting ≥ i tokens / drafts over the run, from the server's /metrics. ``context``: the
    prompt length the prompts were padded to (0: as given), recorded beside the server's mean prompt tokens.
    """
    spec = loadgen.LoadSpec(
        url,
        prompts,
        max_tokens=plan.max_tokens,
        concurrency=concurrency,
        max_requests=plan.requests_at(concurrency),
        max_seconds=max(1.0, plan.minutes * 60 if seconds is None else seconds),
    )
    before = _metrics(url, policy, k or None)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    result = loadgen.run_load(spec, policy, stop=stop)
    if result.stopped_by != "requests":
        return None
    after = _metrics(url, policy, k or None)
    ok = result.records[result.records["ok"]]
    w = window(before, after) if after is not None else None
    shares = [float(u) for u in w.unconditional] if w is not None and k > 0 else []
    return {
        "k": k,
        "concurrency": concurrency,
        "context": context,
        "prompt_tokens": _finite(result.prompt_tokens_mean),
        "started": started,
        "requests": int(result.done),
        "failed": int(result.failed),
        "tokens": int(result.tokens),
        "wall_s": float(result.wall_s),
        "tokens_per_s": float(result.tokens_per_s),
        "tpot_s": _mean(ok["tpot_s"]),
        "ttft_s": _mean(ok["ttft_s"]),
        "output_tokens": _mean(ok["completion_tokens"]),
        "shares": shares[:k] if k else [],
        "mean_accepted": (w.mean_acceptance_length if w is not None and k > 0 else None),
        "server_k": None if after is None else after.k,
    }


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _mean(column) -> float:
    x = column.astype(float)
    x = x[x.notna()]
    return float(x.mean()) if len(x) else math.nan


def sweep(
    plan: TunePlan,
    folder: Path,
    serve: Callable[[int], contextlib.AbstractContextManager[str]],
    prompts: list[str],
    policy: FetchPolicy,
    *,
    stop: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[dict], str]:
    """Measure the plan's points not yet in ``folder``; (all its points, why it ended: done, time or stop).

    ``serve(k)`` yields the base URL of a server running at K; each is started when first needed, warmed by one
    request, and kept up until the sweep ends (a load measures every K in turn).
    """
    points = store.open_tune(folder, plan)
    todo = [p for p in plan.points() if p not in store.done(points)]
    t0, total = clock(), len(plan.points())
    deadline = t0 + plan.minutes * 60
    with contextlib.ExitStack() as servers:
        urls: dict[int, str] = {}
        ratio = DEFAULT_CHARS_PER_TOKEN
        for k, c, n in todo:
            if stop is not None and stop.is_set():
                return points, "stop"
            if clock() >= deadline:
                return points, "time"
            if progress is not None:
                progress(Progress(len(points), total, k, c, clock() - t0, context=n))
            if k not in urls:  # every server stays up to the end: each load visits every K in turn
                urls[k] = servers.enter_context(serve(k))
                ratio = _warm(urls[k], prompts, policy) or ratio
            sent = loadgen.padded_prompts(prompts, n, ratio) if n else prompts
            point = measure_point(urls[k], plan, k, c, sent, policy, stop, deadline - clock(), context=n)
            if point is None:
                return points, "time" if clock() >= deadline else "stop"
            store.append_point(folder, point)
            points.append(point)
    if progress is not None:
        progress(Progress(len(points), total, -1, 0, clock() - t0, "done"))
    return points, "done"


def _warm(url: str, prompts: list[str], policy: FetchPolicy) -> float | None:
    """One short request, not measured: the first after a start pays for buffers and caches. Returns the
    server's characters per prompt token for the prompts (None where it reports no prompt tokens)."""
    spec = loadgen.LoadSpec(url, prompts[:1], max_tokens=8, concurrency=1, max_requests=1, max_seconds=60)
    records = loadgen.run_load(spec, policy).records
    ok = records[records["ok"] & records["prompt_tokens"].notna()]
    if ok.empty or int(ok["prompt_tokens"].iloc[0]) <= 0:
        return None
    return float(ok["prompt_chars"].iloc[0]) / float(ok["prompt_tokens"].iloc[0])


@contextlib.contextmanager
def remote(url: str, plan: TunePlan, policy: FetchPolicy):
    """A remote server as ``serve``: its own K must be the plan's (read from /metrics where the stack says it)."""
    t = _metrics(url, policy, None)
    said = None if t is None else t.k
    if said is not None and said != plan.ks[0]:
        raise Message(
            "the server at {url} drafts K = {said}, not the K = {k} given; tune it at its own K",
            url=url,
            said=said,
            k=plan.ks[0],
        )
    yield url


def isolation(threads: int) -> tuple[set[int], set[int]] | None:
    """(the server's CPUs, the load generator's): the last ``threads`` CPUs this process may use and the rest;
    None where the OS cannot pin (no ``sched_setaffinity``) or no CPU would be left for the load generator."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) <= threads:
        return None
    return set(cpus[-threads:]), set(cpus[:-threads])


def pin_threads(pid: int, cpus: set[int]) -> None:
    """Every thread of process ``pid`` on ``cpus`` (threads it starts later inherit it)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(tid), cpus)


def local(
    binary: Path, target: Path, draft: Path, plan: TunePlan, log_dir: Path, threads: int = 1, isolate: bool = False
):
    """``serve`` for llama-server on loopback: a fresh server at each K, a slot per request in flight.

    ``isolate`` (a process of its own, the CLI): the server on CPUs of its own and this process on the others
    (:func:`isolation`), so the load generator's work never takes the server's cores; its affinity comes back
    when the server stops."""
    from specviz.servers import llamacpp

    cpus = isolation(threads) if isolate else None

    longest = max(plan.contexts) + plan.max_tokens
    if longest > LOCAL_CONTEXT:
        raise Message(
            "the longest prompt plus its answer ({n} tokens) exceeds the {most} tokens a local server's slot holds; use shorter prompt lengths or fewer output tokens",
            n=longest,
            most=LOCAL_CONTEXT,
        )

    @contextlib.contextmanager
    def serve(k: int):
        slots = max(plan.concurrency)
        with llamacpp.serve(
            binary,
            target,
            draft if k > 0 else None,
            k,
            log_dir=log_dir,
            threads=threads,
            slots=slots,
        ) as server:
            if cpus is None:
                yield server.url
                return
            before = os.sched_getaffinity(0)
            pin_threads(server.process.pid, cpus[0])
            os.sched_setaffinity(0, cpus[1])
            try:
                yield server.url
            finally:
                os.sched_setaffinity(0, before)

    return serve

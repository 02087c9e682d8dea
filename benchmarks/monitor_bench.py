"""The Server monitor under load: 10 endpoints polled every 2 s, served locally over loopback.

Run from the repository root::

    python benchmarks/monitor_bench.py            # 10 endpoints, 20 warm reruns
    python benchmarks/monitor_bench.py --endpoints 4 --reruns 5

Each endpoint is a small HTTP server on 127.0.0.1 answering a vLLM V1 /metrics body (two engines,
K = 3, counters growing at every scrape) after ``--delay-ms`` (default 10 ms, a nearby server's
answer time). Checks:

1. a warm rerun of the Server monitor page (AppTest, the page polling all endpoints, drawing every
   card and the first endpoint's charts; the script compiled once, as a server keeps it), median
   over ``--reruns``                                                                   [<= 0.3 s]
2. one poll of every endpoint: :func:`specviz.servers.monitor.poll_all` (concurrent, one thread
   per endpoint) against the naive reference, the same fetches one after the other
   (ratio sequential ÷ concurrent; no target, context)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from contextlib import ExitStack

from _report import ROOT, machine_line, record, summary

sys.path.insert(0, str(ROOT / "tests"))  # the loopback test server (tests/_http.py)

from _http import send_bytes, serve, vllm_metrics
from streamlit.runtime.scriptrunner import script_cache
from streamlit.testing.v1 import AppTest

from specviz.servers import fetch, monitor

PAGE = ROOT / "pages" / "server-monitor.py"


def metrics_route(delay_s: float):
    """A /metrics route whose vLLM counters grow by one interval at each scrape."""
    state = {"n": 0}
    lock = threading.Lock()

    def route(h) -> None:
        with lock:
            state["n"] += 1
            n = state["n"]
        time.sleep(delay_s)
        body = vllm_metrics(
            n, engines=("0", "1"), model="bench/model", accepted=170, generated=380, per_position=(80, 55, 35)
        )
        send_bytes(h, body)

    return route


def keep_bytecode() -> None:
    """Compile the page once, as a running server does: AppTest starts every run with an empty script cache."""
    compiled = {}
    fresh = script_cache.ScriptCache.get_bytecode

    def get_bytecode(self, script_path):
        if script_path not in compiled:
            compiled[script_path] = fresh(self, script_path)
        return compiled[script_path]

    script_cache.ScriptCache.get_bytecode = get_bytecode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--endpoints", type=int, default=10)
    ap.add_argument("--reruns", type=int, default=20)
    ap.add_argument("--delay-ms", type=float, default=10.0)
    args = ap.parse_args()
    t_start = time.perf_counter()
    print(machine_line())
    keep_bytecode()
    with ExitStack() as stack:
        urls = [
            stack.enter_context(serve({("GET", "/metrics"): metrics_route(args.delay_ms / 1e3)}))
            for _ in range(args.endpoints)
        ]
        at = AppTest.from_file(str(PAGE), default_timeout=60)
        at.query_params["endpoints"] = "\n".join(urls)
        at.query_params["every"] = "2"
        t0 = time.perf_counter()
        at.run()
        cold = time.perf_counter() - t0
        if at.exception or len(at.metric) < 4 * args.endpoints:
            print("the page did not render every endpoint:", [e.value for e in at.exception], file=sys.stderr)
            return 2
        times = []
        for _ in range(args.reruns):
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
        warm = statistics.median(times)
        print(
            f"page: cold run {cold:.3f} s; warm reruns median {warm:.3f} s (min {min(times):.3f}, max {max(times):.3f})"
        )
        record(f"warm rerun, {args.endpoints} endpoints", f"{warm:.3f} s", "<= 0.3 s", warm <= 0.3)

        policy = fetch.FetchPolicy()
        endpoints = [monitor.Endpoint(u + "/metrics") for u in urls]
        client = fetch.make_client(policy, max_connections=2 * len(endpoints))
        conc, seq = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            polls = monitor.poll_all(endpoints, policy, None, client=client)
            conc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            polls_seq = [monitor.poll(e, policy, None, client=client) for e in endpoints]
            seq.append(time.perf_counter() - t0)
        client.close()
        bad = [p.error for p in polls + polls_seq if p.error]
        if bad:
            print("polls failed:", bad[:3], file=sys.stderr)
            return 2
        c, s = statistics.median(conc), statistics.median(seq)
        print(
            f"one poll of {len(endpoints)} endpoints: concurrent {c * 1e3:.1f} ms, one after another {s * 1e3:.1f} ms"
        )
        record("poll all: sequential ÷ concurrent", f"{s / c:.1f}×", "(context)", None)
    return 1 if summary(t_start) else 0


if __name__ == "__main__":
    sys.exit(main())

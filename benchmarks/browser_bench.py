"""Time to the first drawn chart when a shared link opens in a fresh browser, and warm reruns, of every page.

Run from the repository root::

    python benchmarks/browser_bench.py                      # exit 0 even if a target fails
    python benchmarks/browser_bench.py --strict             # exit 1 if any target fails
    python benchmarks/browser_bench.py --baseline 52a81bf   # also the tree at that revision, side by side

Starts ``streamlit run app.py`` and a minimal Streamlit app (one 10 x 10 plotly heatmap,
written to a temporary folder) side by side on free localhost ports, opens every page once to warm
both servers, then opens every page and the minimal app in ``--sessions`` fresh browser
contexts (interleaved, so both see the same machine load) in headless Debian Chromium.

The pages are every visible route of :data:`specviz.app.router.PAGES`: Home and each ``pages/*.py``
but the forwarding stubs (``measured-data``, ``engine-monitor``). Per page it prints the median time from
navigation start to the first drawn plotly chart (a ``.js-plotly-plot`` whose ``svg.main-svg`` holds a
drawn trace: an image or a path in a trace layer), or, on a page that opens without a chart (Home, Live,
Server monitor, Run library, Compare runs, Against published acceptance), to the page drawn (the first
script run finished and every element painted, ``tests/_browser.APP_DRAWN_JS``), read in the page as
``performance.now()``; its ratio to the minimal app's first chart in the same run [target <= 1.3x]; and the
websocket bytes the browser received (Playwright frame sizes) up to then and in the whole first script run.

It also times a warm rerun of every page (the median of :data:`RERUNS` AppTest reruns after a first run,
in a subprocess, :data:`ROUNDS` rounds; Home is ``app.py``) [target <= 0.5 s].

``--baseline REF`` also serves the app as it was at git revision ``REF`` (a detached worktree in a
temporary folder) beside the current one, visits both trees interleaved, times the baseline's warm reruns
in rounds alternating with the current tree's, and checks that the current tree's first chart and warm
rerun are no slower than the baseline's [target <= 1.15x, the spread of repeated runs on a shared 2-core
machine].
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from _report import machine_line, record, summary
from playwright.sync_api import sync_playwright

from specviz.app import router
from specviz.base import i18n
from tests._browser import APP_DRAWN_JS, VIEWPORT, launch_chromium, streamlit_server


@dataclass(frozen=True)
class Page:
    """A page as the benchmark opens it: its label, URL path and the file AppTest runs."""

    label: str
    path: str
    file: str


def all_pages() -> list[Page]:
    """Every visible route of the app, in the navigation's order (Home runs as app.py in AppTest)."""
    pages = []
    for r in router.PAGES:
        if not r.hidden:
            home = r.default
            label = i18n.text("en", router.TITLES[r.name]).lower()
            pages.append(
                Page(label, "/" if home else f"/{r.url_path or r.name}", "app.py" if home else f"pages/{r.name}.py")
            )
    return pages


MINIMAL = "minimal app (1 heatmap)"
MINIMAL_APP = """import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.plotly_chart(go.Figure(go.Heatmap(z=np.random.default_rng(0).random((10, 10)))))
"""
TARGET_RATIO = 1.3
BASELINE_RATIO = 1.15  #: current / baseline, first chart and warm rerun
RERUNS = 15
ROUNDS = 3  #: warm-rerun rounds per tree, alternating; the median of the rounds' medians is compared
BASELINE = " (baseline)"
RERUN_TARGET_S = 0.5
# Median seconds of a warm AppTest rerun of each page given on the command line, as JSON (run in a tree's root).
RERUN_SCRIPT = """
import json, statistics, sys, time
from streamlit.testing.v1 import AppTest
out = {}
for page in sys.argv[2:]:
    at = AppTest.from_file(page, default_timeout=120)
    at.run()
    times = []
    for _ in range(int(sys.argv[1])):
        t = time.perf_counter(); at.run(); times.append(time.perf_counter() - t)
    out[page] = statistics.median(times)
print(json.dumps(out))
"""
TIMEOUT_MS = 120_000

# [performance.now() (ms since navigation start), "chart"] once a plotly chart has drawn a trace;
# [performance.now(), "page drawn"] once the first run has finished and every element is painted; else false.
FIRST_CHART_JS = (
    """() => {
    for (const svg of document.querySelectorAll('.js-plotly-plot svg.main-svg')) {
        if (svg.querySelector('.mlayer image, .mlayer path')) return [performance.now(), "chart"];
    }
    return ("""
    + APP_DRAWN_JS
    + """)() ? [performance.now(), "page drawn"] : false;
}"""
)
# True once the first script run has finished and nothing is pending.
RUN_DONE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-testid="stStatusWidgetRunningIcon"]');
}"""


@dataclass
class Visit:
    """One fresh browser context: seconds to the first chart (or the page drawn: ``what``), websocket bytes
    received then and by the run's end."""

    seconds: float
    bytes_to_chart: int
    bytes_total: int
    what: str = "chart"


def visit(browser, url: str) -> Visit:
    """Open ``url`` in a new browser context and measure it."""
    received: list[int] = []

    def on_websocket(ws) -> None:
        ws.on("framereceived", lambda payload: received.append(len(payload)))

    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.on("websocket", on_websocket)
        page.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
        ms, what = page.wait_for_function(FIRST_CHART_JS, polling="raf", timeout=TIMEOUT_MS).json_value()
        to_chart = sum(received)
        page.wait_for_function(RUN_DONE_JS, timeout=TIMEOUT_MS)
        page.wait_for_timeout(300)  # late frames of the same run (e.g. the forward-message cache)
        return Visit(ms / 1000.0, to_chart, sum(received), what)
    finally:
        context.close()


@contextlib.contextmanager
def baseline_tree(ref: str, tmp: Path):
    """A detached git worktree of ``ref`` under ``tmp``, removed on exit."""
    path = tmp / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", str(path), ref], check=True, capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], check=False, capture_output=True)


def warm_reruns(tree: Path, pages: list[str]) -> dict[str, float]:
    """Median seconds of a warm AppTest rerun of each page file, measured in ``tree``'s own code."""
    out = subprocess.run(
        [sys.executable, "-c", RERUN_SCRIPT, str(RERUNS), *pages], cwd=tree, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(sessions: int, pages: list[Page], baseline: Path | None = None) -> dict[str, list[Visit]]:
    """Start the servers, warm them, then visit every target ``sessions`` times (interleaved)."""
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="browser_bench_")))
        (tmp / "minimal_app.py").write_text(MINIMAL_APP)
        env = {"SPECVIZ_DB_URL": f"sqlite:///{tmp / 'runs.sqlite'}"}
        app = stack.enter_context(streamlit_server("app.py", tmp / "app.log", env=env))
        minimal = stack.enter_context(streamlit_server(tmp / "minimal_app.py", tmp / "minimal.log", cwd=tmp))
        targets = [(MINIMAL, minimal + "/")] + [(p.label, app + p.path) for p in pages]
        if baseline is not None:
            env_b = {"SPECVIZ_DB_URL": f"sqlite:///{tmp / 'runs-baseline.sqlite'}"}
            old = stack.enter_context(streamlit_server("app.py", tmp / "baseline.log", cwd=baseline, env=env_b))
            targets += [(p.label + BASELINE, old + p.path) for p in pages]
        browser = launch_chromium(stack.enter_context(sync_playwright()))
        for _, url in targets:  # warm-up: imports, caches and the first script run on each server
            visit(browser, url)
        visits: dict[str, list[Visit]] = {label: [] for label, _ in targets}
        for _ in range(sessions):
            for label, url in targets:
                visits[label].append(visit(browser, url))
        browser.close()
    return visits


def report(visits: dict[str, list[Visit]]) -> None:
    """Print the table and record one PASS/FAIL per page (ratio to the minimal app's first chart)."""
    base = statistics.median(v.seconds for v in visits[MINIMAL])
    width = max(len(label) for label in visits)
    print(
        f"\n  {'page':<{width}}  {'first':<10}  {'median s':>8}  {'min..max s':>11}  {'x minimal':>9}  "
        f"{'ws KB to it':>11}  {'ws KB run':>9}"
    )
    for label, vs in visits.items():
        med = statistics.median(v.seconds for v in vs)
        lo, hi = min(v.seconds for v in vs), max(v.seconds for v in vs)
        kb_chart = statistics.median(v.bytes_to_chart for v in vs) / 1024
        kb_total = statistics.median(v.bytes_total for v in vs) / 1024
        what = statistics.mode(v.what for v in vs)
        print(
            f"  {label:<{width}}  {what:<10}  {med:>8.3f}  {f'{lo:.2f}..{hi:.2f}':>11}  {med / base:>8.2f}x  "
            f"{kb_chart:>11.1f}  {kb_total:>9.1f}"
        )
        if label != MINIMAL and not label.endswith(BASELINE):
            record(
                f"{label}: time to first {what}",
                f"{med:.2f} s = {med / base:.2f}x minimal",
                "<= 1.3x",
                med / base <= TARGET_RATIO,
            )


def report_reruns(reruns: dict[str, float], pages: list[Page]) -> None:
    """Record one PASS/FAIL per page: its warm AppTest rerun against :data:`RERUN_TARGET_S`."""
    for p in pages:
        t = reruns[p.file]
        record(f"{p.label}: warm rerun ({p.file})", f"{t * 1e3:.0f} ms", "<= 0.5 s", t <= RERUN_TARGET_S)


def compare(visits: dict[str, list[Visit]], reruns: dict[str, tuple[float, float]], pages: list[Page]) -> None:
    """Record current ÷ baseline for each page's first chart and warm rerun."""
    for label in [lb for lb in visits if lb + BASELINE in visits]:
        now = statistics.median(v.seconds for v in visits[label])
        old = statistics.median(v.seconds for v in visits[label + BASELINE])
        record(
            f"{label}: first chart vs baseline",
            f"{now / old:.2f}x ({now:.2f} vs {old:.2f} s)",
            "<= 1.15x",
            now / old <= BASELINE_RATIO,
        )
    for p in pages:
        now, old = reruns[p.file]
        record(
            f"{p.label}: warm rerun vs baseline",
            f"{now / old:.2f}x ({now * 1e3:.0f} vs {old * 1e3:.0f} ms)",
            "<= 1.15x",
            now / old <= BASELINE_RATIO,
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strict", action="store_true", help="exit 1 if any target fails")
    ap.add_argument("--sessions", type=int, default=5, help="fresh browser contexts per page (>= 1)")
    ap.add_argument("--page", action="append", default=None, help="only this URL path, e.g. /converter (repeatable)")
    ap.add_argument("--baseline", default=None, help="also serve git revision REF and compare against it")
    ap.add_argument("--no-browser", action="store_true", help="only the warm AppTest reruns")
    args = ap.parse_args(argv)
    pages = [p for p in all_pages() if args.page is None or p.path in args.page]

    t_start = time.perf_counter()
    print(machine_line())
    print(
        f"browser benchmark, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: navigation -> first drawn plotly chart "
        f"(or the page drawn), median of {args.sessions} fresh browser contexts per page on a warm server "
        f"(headless Chromium); warm rerun: median of {RERUNS} AppTest reruns, median of {ROUNDS} rounds"
    )
    with contextlib.ExitStack() as stack:
        baseline = None
        if args.baseline:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="browser_bench_ref_")))
            baseline = stack.enter_context(baseline_tree(args.baseline, tmp))
            print(f"baseline: {args.baseline} in {baseline}")
        visits = {}
        if not args.no_browser:
            visits = run(max(1, args.sessions), pages, baseline)
            report(visits)
        files = [p.file for p in pages]
        now, old = [], []
        for _ in range(ROUNDS):  # the trees in turn, so both see the same machine load
            now.append(warm_reruns(Path.cwd(), files))
            if baseline is not None:
                old.append(warm_reruns(baseline, files))
        med = lambda runs, f: statistics.median(r[f] for r in runs)
        print_reruns({f: med(now, f) for f in files}, {f: med(old, f) for f in files} if old else None, pages)
        report_reruns({f: med(now, f) for f in files}, pages)
        if baseline is not None:
            compare(visits, {f: (med(now, f), med(old, f)) for f in files}, pages)
    n_fail = summary(t_start)
    return 1 if (args.strict and n_fail) else 0


def print_reruns(now: dict[str, float], old: dict[str, float] | None, pages: list[Page]) -> None:
    """The warm-rerun table: each page's median, and the baseline's when there is one."""
    width = max(len(p.label) for p in pages)
    print(f"\n  {'page':<{width}}  {'file':<30}  {'warm rerun ms':>13}" + (f"  {'baseline ms':>11}" if old else ""))
    for p in pages:
        line = f"  {p.label:<{width}}  {p.file:<30}  {now[p.file] * 1e3:>13.0f}"
        print(line + (f"  {old[p.file] * 1e3:>11.0f}" if old else ""))


if __name__ == "__main__":
    sys.exit(main())

"""The largest input of each kind, given to the running app in headless Chromium: time to render and memory.

Run from the repository root::

    python benchmarks/upload_bench.py            # exit 0 even if a target fails
    python benchmarks/upload_bench.py --strict   # exit 1 if any target fails

Starts ``streamlit run app.py`` on a free localhost port and, for every kind of upload or text box that
feeds a chart (``tests/_uploads.py``: run-library CSV, Spec-Bench JSON lines, vLLM log lines,
config.json, a trace at the row cap and one at the K_max cap, the n-gram text), builds its largest
accepted instance, opens its page in a fresh browser context, gives it the input and waits until the
page has settled (no running script; every chart drawn or a message shown). Per kind it prints the
input's size, the seconds from the hand-over to the settled page [target <= 10 s] and the server's
resident memory after it, with what that input added to it [target <= 150 MB]; over ``--passes``
passes, what the passes after the first added (a leak adds again) [target <= 150 MB], and the whole
growth after a warm-up (every page opened once), which the bounded upload caches hold.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

from _report import ROOT, machine_line, record, summary
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(ROOT / "tests"))  # the browser helpers and the largest inputs (tests/_uploads.py)
from _browser import VIEWPORT, launch_chromium, streamlit_server
from _uploads import MEMORY_BUDGET_MB, RENDER_BUDGET_S, UPLOADS, give, server_rss_mb, write_largest

WARM_PATHS = ("/", "/run-library", "/hardware?view=memory", "/strategies?view=policies")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 if any target fails")
    parser.add_argument("--passes", type=int, default=2, help="passes over every kind (default 2)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    print(f"upload_bench — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        folder = Path(tmp)
        paths = {u.name: write_largest(folder, u) for u in UPLOADS}
        env = {"SPECVIZ_DB_URL": f"sqlite:///{folder / 'library.sqlite'}"}
        with streamlit_server("app.py", folder / "server.log", env=env) as url:
            port = urlparse(url).port
            browser = launch_chromium(pw)
            for path in WARM_PATHS:
                context = browser.new_context(viewport=VIEWPORT)
                context.new_page().goto(url + path, wait_until="networkidle")
                context.close()
            base = rss = server_rss_mb(port)
            print(f"server RSS after the warm-up: {base:,.1f} MB\n")
            print(f"  {'input':<24} {'size':>10} {'pass':>4} {'render':>9} {'server RSS':>11} {'added':>8}")
            for n in range(1, args.passes + 1):
                for upload in UPLOADS:
                    context = browser.new_context(viewport=VIEWPORT)
                    page = context.new_page()
                    try:
                        seconds = give(page, url, upload, paths[upload.name])
                        errors = page.locator('[data-testid="stException"]').count()
                    finally:
                        context.close()
                    rss, before = server_rss_mb(port), rss
                    size = paths[upload.name].stat().st_size
                    print(
                        f"  {upload.name:<24} {size / 1e6:>8.2f} MB {n:>4} {seconds:>7.2f} s {rss:>8.1f} MB"
                        f" {rss - before:>+6.1f} MB",
                        flush=True,
                    )
                    record(
                        f"{upload.name}: server memory added (pass {n})",
                        f"{rss - before:+.1f} MB",
                        f"<= {MEMORY_BUDGET_MB:g} MB",
                        rss - before <= MEMORY_BUDGET_MB,
                    )
                    record(f"{upload.name}: no exception (pass {n})", f"{errors} shown", "0", errors == 0)
                    record(
                        f"{upload.name}: render (pass {n})",
                        f"{seconds:.2f} s",
                        f"<= {RENDER_BUDGET_S:g} s",
                        seconds <= RENDER_BUDGET_S,
                    )
                if n == 1:
                    after_first = rss
            print(f"\nserver RSS growth after the warm-up: {rss - base:+.1f} MB (the bounded upload caches filled)")
            if args.passes > 1:
                again = rss - after_first
                record(
                    f"server memory added by passes 2..{args.passes}",
                    f"{again:+.1f} MB",
                    f"<= {MEMORY_BUDGET_MB:g} MB",
                    again <= MEMORY_BUDGET_MB,
                )
            browser.close()
    failures = summary(t0)
    return 1 if failures and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())

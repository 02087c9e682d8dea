"""The live page's code path against the CLI's, on the same settings, with PASS/FAIL.

Run from the repository root::

    python benchmarks/live_bench.py             # the page's default configuration
    python benchmarks/live_bench.py --strict    # exit 1 if a target fails

Checks (targets in brackets):

1. A complete default run of the "Live benchmark" page (AppTest: the page script as a browser
   session runs it — model load on first use, run queue, ``bench.sweep``, cell details, every
   chart) finishes in under 60 s on this machine                                      [< 60 s]
2. The page adds no overhead inside the timed region: its measured speedup per (K, T) cell
   against ``python -m specviz bench`` (run as a subprocess) with the same settings and seed. Noise is measured in the same run: the CLI path is run twice (before and
   after the page) and its own run-to-run difference is the yardstick.
   median over cells of |page / CLI − 1|  ≤  max(10 %, 2 × median |CLI₁ / CLI₂ − 1|)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
from _report import ROOT, machine_line, record, summary
from streamlit.testing.v1 import AppTest

from specviz.engine import bench
from specviz.engine.models import resolve_device

PAGE = str(ROOT / "pages" / "live.py")
DEFAULT = {"ks": [1, 2, 4, 6], "temps": [0.0, 1.0], "n_prompts": 4, "new_tokens": 96, "repeats": 1, "seed": 0}
WALL_TARGET_S = 60.0
NOISE_FLOOR = 0.10


def page_run(device: str) -> tuple[float, dict[tuple[int, float], float]]:
    """Open the page with its defaults, press Run; (wall seconds from the click, {(K, T): speedup})."""
    os.environ.setdefault("SPECVIZ_DB_URL", f"sqlite:///{tempfile.mkdtemp()}/runs.sqlite")  # not the user's library
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params["device"] = device
    at.run()
    (run,) = [b for b in at.button if b.label == "Run"]
    t0 = time.perf_counter()
    run.click()
    at.run()
    wall = time.perf_counter() - t0
    if at.exception or at.error:
        raise SystemExit(f"the page failed: {[e.value for e in at.exception] + [e.value for e in at.error]}")
    rows = at.session_state["live.result"].rows  # the page's live.LiveRun
    return wall, {(r["k"], r["temperature"]): r["speedup"] for r in rows}


def cli_run(device: str, workdir: Path) -> dict[tuple[int, float], float]:
    """``python -m specviz bench`` itself, in its own process, on the page's first prompts."""
    prompts = workdir / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"text": p}) + "\n" for p in bench.load_prompts()[: DEFAULT["n_prompts"]]))
    out = workdir / "cli.csv"
    cmd = [
        sys.executable,
        "-m",
        "specviz",
        "bench",
        "--pair",
        "bundled",
        "--k",
        ",".join(map(str, DEFAULT["ks"])),
        "--temperature",
        ",".join(f"{t:g}" for t in DEFAULT["temps"]),
        "--new-tokens",
        str(DEFAULT["new_tokens"]),
        "--repeats",
        str(DEFAULT["repeats"]),
        "--seed",
        str(DEFAULT["seed"]),
        "--prompts",
        str(prompts),
        "--device",
        device,
        "--out",
        str(out),
    ]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    table = pd.read_csv(out)
    return {(int(r.k), float(r.temperature)): float(r.speedup) for r in table.itertuples()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target fails")
    args = parser.parse_args()
    device = str(resolve_device(args.device))
    started = time.perf_counter()
    print(machine_line(f"torch {torch.__version__} ({torch.get_num_threads()} threads), device {device}"))
    print(f"settings (the page's defaults): {DEFAULT}")

    workdir = Path(tempfile.mkdtemp())
    cli_a = cli_run(args.device, workdir)  # the CLI runs in its own process; this one does no torch work
    wall, page = page_run(args.device)
    cli_b = cli_run(args.device, workdir)

    print(f"\n{'K':>3} {'T':>4} {'CLI #1':>7} {'page':>7} {'CLI #2':>7} {'page/CLI':>9} {'CLI1/CLI2':>10}")
    rel_page, rel_cli = [], []
    for cell in sorted(page):
        cli = statistics.mean([cli_a[cell], cli_b[cell]])
        rel_page.append(abs(page[cell] / cli - 1))
        rel_cli.append(abs(cli_a[cell] / cli_b[cell] - 1))
        print(
            f"{cell[0]:>3} {cell[1]:>4g} {cli_a[cell]:>7.3f} {page[cell]:>7.3f} {cli_b[cell]:>7.3f} "
            f"{page[cell] / cli:>9.3f} {cli_a[cell] / cli_b[cell]:>10.3f}"
        )
    page_dev, cli_dev = statistics.median(rel_page), statistics.median(rel_cli)
    bound = max(NOISE_FLOOR, 2 * cli_dev)

    print()
    record(
        "default page run, wall time from the Run click",
        f"{wall:.1f} s",
        f"< {WALL_TARGET_S:.0f} s",
        wall < WALL_TARGET_S,
    )
    record(
        "page vs CLI speedup, median |page/CLI - 1|",
        f"{page_dev:.1%} (CLI vs CLI: {cli_dev:.1%})",
        f"<= {bound:.1%}",
        page_dev <= bound,
    )
    fails = summary(started)
    return 1 if fails and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())

"""``specviz tune`` against a llama-server it starts: time, the recommended K, single-K predictions, resume.

Run from the repository root (llama-server built by scripts/build-llama-server)::

    python benchmarks/tune_bench.py                  # K = 0..6 × 1, 2, 4, 8 in flight, 32 requests × 128 tokens
    python benchmarks/tune_bench.py --write          # and keep the sweep as the Tune page's example
    python benchmarks/tune_bench.py --ks 0,2 --concurrency 1,2 --requests 8 --max-tokens 32   # smoke run

Checks (docs/tune.md says what each means):
1. the whole tune, as a user runs it (``python -m specviz tune``, a fresh process)        [<= 10 min]
2. at each load, the measured tokens/s of the recommended K (the fitted lines' best) against the best
   measured K at that load                                                                 [>= 0.95×]
3. from a single measured K at a load, every other K's TPOT and tokens/s there, predicted with o and r
   carried from the other loads (leave one load out: what a remote tune at one K does)      [p90 <= 15 %]
4. killed (SIGKILL) mid-sweep and run again: every point once, none lost                   [exactly once]

Unless ``--no-repeat``, the same plan is swept a second time into another folder and each point's TPOT and tokens/s
are compared with the first sweep's: the machine's repeatability, the floor under check 3's errors (printed, no
target), and check 3 on the second sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import ROOT, machine_line, record, summary

from specviz.core import tuning
from specviz.servers import tune

EXAMPLE = ROOT / "data" / "tune" / "llamacpp-bundled"


def cli(out: Path, ks: str, conc: str, requests: int, tokens: int, minutes: int) -> list[str]:
    return [
        sys.executable, "-m", "specviz", "tune", "--out", str(out), "--ks", ks, "--concurrency", conc,
        "--requests", str(requests), "--max-tokens", str(tokens), "--minutes", str(minutes),
    ]  # fmt: skip


def whole_tune(out: Path, args) -> tuple[float, list[dict]]:
    t0 = time.perf_counter()
    done = subprocess.run(cli(out, args.ks, args.concurrency, args.requests, args.max_tokens, 30), cwd=ROOT, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"specviz tune exited with {done.returncode}")
    return seconds, tune.read_points(out)


def resume_check(out: Path) -> tuple[bool, str]:
    """Start a 2 K × 2 loads tune, SIGKILL it once two points are saved, run it again; each point once."""
    cmd = cli(out, "0,2", "1,2", 8, 32, 10)
    # its own process group, killed whole: the tune and the llama-servers it started, as a job scheduler or a
    # terminal's Ctrl-C stops them (a SIGKILL of the tune alone would leave its servers running)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while len(tune.read_points(out)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    killed_at = len(tune.read_points(out))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    keys = [(p["k"], p["concurrency"]) for p in tune.read_points(out)]
    ok = sorted(keys) == sorted({(k, c) for k in (0, 2) for c in (1, 2)}) and len(keys) == 4
    return ok, f"killed with {killed_at} of 4 saved; after resuming {len(keys)} points, {len(set(keys))} distinct"


def repeatability(first: list[dict], second: list[dict]) -> str:
    """|second / first − 1| of TPOT and tokens/s over the (K, load) points both sweeps measured: median and p90."""
    before = {(p["k"], p["concurrency"]): p for p in first}
    pairs = [(before[(p["k"], p["concurrency"])], p) for p in second if (p["k"], p["concurrency"]) in before]
    said = []
    for key, name in (("tpot_s", "TPOT"), ("tokens_per_s", "tokens/s")):
        d = np.abs([b[key] / a[key] - 1.0 for a, b in pairs])
        said.append(f"{name} median {np.median(d):.1%}, p90 {np.quantile(d, 0.9):.1%}, max {d.max():.1%}")
    return f"{len(pairs)} points measured twice, |second / first - 1|: " + "; ".join(said)


def single_k(points: list[dict], label: str) -> None:
    """Check 3 on one sweep's points."""
    errs = tuning.single_k_errors(points)
    for col, name in (("tpot_err", "TPOT"), ("tokens_per_s_err", "tokens/s")):
        e = errs[col].abs()
        shown = f"median {e.median():.1%}, p90 {e.quantile(0.9):.1%}, max {e.max():.1%} ({len(e)} predictions)"
        record(f"single-K predictions, {name}{label}", shown, "p90 <= 15 %", e.quantile(0.9) <= 0.15)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="0,1,2,3,4,5,6")
    ap.add_argument("--concurrency", default="1,2,4,8")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--write", action="store_true", help="keep the sweep as the Tune page's example")
    ap.add_argument("--no-repeat", action="store_true", help="skip the second sweep of the same plan")
    args = ap.parse_args()
    t_start = time.perf_counter()
    print(machine_line("llama-server b11434, 1 thread, the bundled pair"))
    with tempfile.TemporaryDirectory(prefix="tune-bench-") as tmp:
        out = Path(tmp) / "sweep"
        seconds, points = whole_tune(out, args)
        record("whole tune (fresh process)", f"{seconds:.0f} s, {len(points)} points", "<= 600 s", seconds <= 600)
        answer = tuning.analyse(points)  # what the CLI printed above
        worst = 1.0
        for choice in answer.choices:
            measured = {p["k"]: p["tokens_per_s"] for p in points if p["concurrency"] == choice.concurrency}
            best_k = max(measured, key=measured.get)
            ratio = measured.get(choice.k, float("nan")) / measured[best_k]
            print(
                f"  {choice.concurrency} in flight: recommended K = {choice.k}, best measured K = {best_k}, {ratio:.3f}×"
            )
            worst = min(worst, ratio)
        record("recommended K vs best measured, worst load", f"{worst:.3f}×", ">= 0.95×", worst >= 0.95)
        single_k(points, "")
        if not args.no_repeat:
            _, again = whole_tune(Path(tmp) / "again", args)
            print("  repeatability (the same plan swept again):", repeatability(points, again))
            single_k(again, ", second sweep")
        if args.write:
            shutil.rmtree(EXAMPLE, ignore_errors=True)
            EXAMPLE.mkdir(parents=True)
            for name in (tune.store.PLAN, tune.store.POINTS):
                shutil.copy(out / name, EXAMPLE / name)
            (EXAMPLE / "answer.json").write_text(json.dumps(tuning.answer_json(answer), indent=1) + "\n")
            print(f"wrote {EXAMPLE.relative_to(ROOT)}")
        ok, said = resume_check(Path(tmp) / "resume")
        record("killed mid-sweep, resumed", said, "every point once", ok)
    return 1 if summary(t_start) else 0


if __name__ == "__main__":
    sys.exit(main())

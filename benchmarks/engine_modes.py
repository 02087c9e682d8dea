"""Eager against compiled: the bench CLI's rows of both engines, side by side, with the targets of docs/engine.md.

Reads the CSVs ``python -m specviz bench --engine eager,compiled`` writes (one per dtype, say; the
GPU check writes three) and prints, per device, dtype and temperature, each K's measured speedup and
tokens/s under both engines, the compiled engine's measured-cost prediction against its measured
speedup, c, o and the compile time::

    python -m specviz bench --k 1,2,4,6,8 --temperature 0 --repeats 3 --engine eager,compiled --out cpu.csv
    python benchmarks/engine_modes.py cpu.csv

Checks, on the compiled rows:
1. the measured-cost prediction (E[N] / (1 + v·K + o + K / c) at the row's own α, c, v, o) within ±15 %
   of the measured speedup at every K (a CUDA row: also what the pre-compiled engine missed, the
   per-round overhead o measured without per-part synchronisation);
2. on CUDA in float16: the speedup at the best K ≥ 1.5 (greedy rows).
Nothing is timed here: the figures are the CSVs'.
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd
from _report import machine_line, record, summary

COLUMNS = ["k", "speedup", "tokens_per_s", "baseline_tokens_per_s", "c", "o", "predicted_speedup_measured_cost"]


def side_by_side(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (device, dtype, temperature, K): the eager and the compiled row's figures."""
    keys = ["device", "dtype", "temperature", "k"]
    eager = frame[~frame["compiled"].astype(bool)].set_index(keys)[COLUMNS[1:]]
    comp = (
        frame[frame["compiled"].astype(bool)]
        .set_index(keys)[[*COLUMNS[1:], "compile_s"]]
        .rename(columns={"compile_s": "compile"})
    )
    return eager.add_suffix("_eager").join(comp.add_suffix("_compiled"), how="outer").reset_index()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="bench CSVs with rows of both engines")
    args = ap.parse_args()
    t_start = time.perf_counter()
    print(machine_line("figures from " + ", ".join(args.csv)))
    frame = pd.concat([pd.read_csv(p) for p in args.csv], ignore_index=True)
    if "compiled" not in frame or not frame["compiled"].astype(bool).any():
        print("no compiled rows: run the bench with --engine eager,compiled", file=sys.stderr)
        return 2
    table = side_by_side(frame)
    with pd.option_context("display.width", 220, "display.max_columns", 30):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    comp = table.dropna(subset=["speedup_compiled"])
    err = comp["speedup_compiled"] / comp["predicted_speedup_measured_cost_compiled"] - 1.0
    for (device, dtype), idx in comp.groupby(["device", "dtype"]).groups.items():
        worst = err.loc[idx].abs().idxmax()
        record(
            f"{device} {dtype}: measured ÷ predicted − 1, compiled, worst K",
            f"{err[worst]:+.1%} (K = {int(comp.loc[worst, 'k'])}, T = {comp.loc[worst, 'temperature']:g})",
            "within ±15 %",
            abs(err[worst]) <= 0.15,
        )
    half = comp[comp["device"].astype(str).str.startswith("cuda") & (comp["dtype"] == "float16")]
    greedy = half[half["temperature"] == 0]
    if len(greedy):
        best = greedy.loc[greedy["speedup_compiled"].idxmax()]
        record(
            "cuda float16 greedy: compiled speedup at the best K",
            f"{best['speedup_compiled']:.2f}× (K = {int(best['k'])}; eager there {best['speedup_eager']:.2f}×)",
            ">= 1.5×",
            best["speedup_compiled"] >= 1.5,
        )
    return 1 if summary(t_start) else 0


if __name__ == "__main__":
    sys.exit(main())

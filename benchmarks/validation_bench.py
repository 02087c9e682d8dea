"""The cost model against published GPU measurements (data/validation/measurements.csv), with PASS/FAIL.

Run from the repository root::

    python benchmarks/validation_bench.py                    # score; prints every row and the summaries
    python benchmarks/validation_bench.py --write-profiles   # also refit data/catalog/profiles.csv on all rows
                                                             # and write data/validation/predictions.csv

For every priceable row: the prediction with the default roofline profile, and leave-one-source-out
(LOSO: the row's source predicted with stack profiles fitted by specviz.core.published on the other
sources only; a serving stack seen in no other source falls back to its family's profile, then to the
default). The profiles are fitted in three levels (specviz.core.published.fit_profiles: shared,
family, stack), each row weighted so that every source weighs the same. Targets (issue 31): speedup median |S_pred / S_meas − 1| <= 10 % LOSO and >= 75 % of rows
within ±15 %; plain-decoding step time median error <= 15 % LOSO.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time

import pandas as pd
from _report import machine_line, record, summary

from specviz.core import bands, published, regimes
from specviz.core import profiles as stack_profiles
from specviz.core.validation.coverage import coverage, under_load

T0 = time.perf_counter()
LABELS = {
    "hf-transformers": "Hugging Face transformers (eager PyTorch)",
    "vllm": "vLLM (CUDA graphs)",
    "vllm-2023": "vLLM 2023 (eager PyTorch)",  # before CUDA graphs (vLLM PR #1926)
    "sglang": "SGLang (CUDA graphs)",
    "tensorrt-llm": "TensorRT-LLM",
    "gpt-fast": "gpt-fast (torch.compile)",
    "llama.cpp": "llama.cpp (CUDA)",
    "llama.cpp-cpu": "llama.cpp (CPU)",
    "llama.cpp-metal": "llama.cpp (Metal)",
    "mlc-llm": "MLC LLM",
    "exllamav2": "ExLlamaV2",
    **stack_profiles.FAMILY_LABELS,
}


#: per-regime targets (issue 57): kind -> most median |ratio − 1|; and the most |bias| in every validated regime
REGIME_TARGETS = {"speedup": 0.10, "step": 0.12}
REGIME_BIAS = 0.05
PAYS_RIGHT = 0.90  #: issue 57: "speculation pays / loses" right in at least 90 % of rows


def table_coverage(frame: pd.DataFrame) -> None:
    """Record what the published table covers against issue 57's growth targets (every row, priceable or not)."""
    for _, c in coverage(frame, published.priceable(frame)).iterrows():
        share = c["unit"] == "share"
        shown = (
            f"{c['value']:.0%} ({c['priced']:.0%} of priced)"
            if share
            else f"{int(c['value'])} ({int(c['priced'])} priced)"
        )
        least = f">= {c['target']:.0%}" if share else f">= {int(c['target'])}"
        record(f"table: {c['measure']}", shown, least, bool(c["met"]))


def pays_or_loses(loso: pd.DataFrame) -> None:
    """Record how often the held-out speedup says "pays" or "loses" as measured, under load and at B = 1."""
    loaded = under_load(loso)
    for label, rows in (("under load (B > 1 or a rate)", loaded), ("at B = 1", ~loaded)):
        v = published.verdicts(loso[rows])
        record(
            f"speedup pays/loses right LOSO, {label}",
            f"{v['right']:.1%} of {v['rows']} ({v['flagged']}/{v['losses']} losses flagged, "
            f"{v['false_alarms']} false alarms)",
            ">= 90 %",
            v["right"] >= PAYS_RIGHT,
        )


def loaded_errors(loso: pd.DataFrame) -> None:
    """Record the held-out median error under load: per-token times of plain decoding (step rows, the TPOT a
    serving run measures) and the speedups (throughput ratios but one, a "decoding speed" ratio)."""
    err = published.errors(loso[under_load(loso)])
    for kind, label in (("step", "TPOT (steps of plain decoding)"), ("speedup", "speedups")):
        e, n = err.loc[kind, "median_abs_err"], int(err.loc[kind, "rows"])
        record(f"under load: {label} median |err| LOSO", f"{e:.1%} ({n} rows)", "<= 15 %", e <= 0.15)


def regime_verdicts(loso: pd.DataFrame) -> None:
    """Print the leave-one-source-out error per regime and record PASS/FAIL for each validated regime."""
    keys = published.regime_keys(loso)
    for kind, bound in REGIME_TARGETS.items():
        rows = loso[loso["kind"] == kind]
        ratios = pd.DataFrame(
            {
                "regime": keys[rows.index].map(regimes.Regime.from_key),
                "ratio": rows["ratio"],
                "source_id": rows["source_id"],
            }
        )
        table = regimes.summary(ratios).sort_values("rows", ascending=False)
        print(f"\n{kind}: leave-one-source-out error per regime (validated: >= {regimes.MIN_ROWS} rows)")
        shown = table.drop(columns=["regime"]).assign(label=table["regime"].map(regimes.label))
        with pd.option_context("display.width", 250, "display.max_colwidth", 80):
            print(shown.round(3).to_string())
        for key, cell in table[table["validated"]].iterrows():
            err, bias = float(cell["median_abs_err"]), float(cell["bias"])
            record(
                f"{kind} {key} median |err|",
                f"{err:.1%} ({int(cell['rows'])} rows, p90 {cell['p90_abs_err']:.1%})",
                f"<= {bound:.0%}",
                err <= bound,
            )
            record(f"{kind} {key} bias", f"{bias:+.1%}", f"within ±{REGIME_BIAS:.0%}", abs(bias) <= REGIME_BIAS)
        unvalidated = table[~table["validated"]]
        print(f"{kind}: {len(unvalidated)} regimes unvalidated ({int(unvalidated['rows'].sum())} rows)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write-profiles",
        action="store_true",
        help="refit data/catalog/profiles.csv on all rows and write data/validation/predictions.csv",
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes for leave-one-source-out (default 2)")
    args = parser.parse_args()
    print(machine_line())
    frame = published.load_measurements()
    rows = frame[published.priceable(frame)]
    print(
        f"{len(frame)} published rows, {len(rows)} priceable; {rows['source_id'].nunique()} sources, "
        f"{rows['stack'].nunique()} stacks, {rows['gpu'].nunique()} GPUs"
    )
    table_coverage(frame)
    default = published.predict(rows, {})
    loso = published.leave_one_source_out(rows, jobs=args.jobs)
    table = loso[
        ["row_id", "kind", "stack", "gpu", "target", "method", "batch", "measured", "predicted", "profile_from"]
    ]
    table = table.assign(default_ratio=default["ratio"].round(3), loso_ratio=loso["ratio"].round(3))
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.max_colwidth", 40):
        print("\nevery row (ratio = predicted / measured)")
        print(table.drop(columns=["measured", "predicted"]).to_string(index=False))
        for name, got in (("default roofline", default), ("leave-one-source-out", loso)):
            print(f"\n{name}: median |ratio − 1| and share within ±15 %")
            print(published.errors(got).round(3).to_string())
            print(published.errors(got, "stack").round(3).to_string())
            print(published.errors(got, "source_id").round(3).to_string())
            print(published.errors(got, "method").round(3).to_string())
    err = published.errors(loso)
    s, t = err.loc["speedup"], err.loc["step"]
    record(
        "speedup median |err| LOSO",
        f"{s['median_abs_err']:.1%} ({int(s['rows'])} rows)",
        "<= 10 %",
        s["median_abs_err"] <= 0.10,
    )
    record("speedup rows within ±15 % LOSO", f"{s['within_15']:.0%}", ">= 75 %", s["within_15"] >= 0.75)
    record(
        "step-time median |err| LOSO",
        f"{t['median_abs_err']:.1%} ({int(t['rows'])} rows)",
        "<= 15 %",
        t["median_abs_err"] <= 0.15,
    )
    loaded_errors(loso)
    pays_or_loses(loso)
    regime_verdicts(loso)
    base = published.errors(default)
    print(
        f"\ndefault profile for comparison: speedup {base.loc['speedup', 'median_abs_err']:.1%}, "
        f"step {base.loc['step', 'median_abs_err']:.1%}"
    )
    if args.write_profiles:
        profiles = published.fit_profiles(rows)
        today = datetime.date.today().isoformat()
        fit = published.fitted_rows(rows)  # what each profile names as fitted on
        out = [
            published.profile_row(name, profiles[name], fit[fit["stack"] == name], LABELS.get(name, name), today)
            for name in sorted(fit["stack"].unique())
        ]
        family = fit["stack"].map(stack_profiles.family)
        out += [  # the families' profiles, for a stack the catalogue does not list
            published.profile_row(name, profiles[f"family:{name}"], fit[family == name], LABELS[name], today)
            for name in stack_profiles.FAMILY_PROFILES
        ]
        pd.DataFrame(out).to_csv(stack_profiles.PROFILES_CSV, index=False, float_format="%.6g")
        print(f"wrote {len(out)} profiles to {stack_profiles.PROFILES_CSV}")
        fitted = published.predict(rows, profiles)
        table = published.prediction_table(default, fitted, loso)
        table.to_csv(published.PREDICTIONS, index=False, float_format="%.6g")
        print(f"wrote {len(table)} rows to {published.PREDICTIONS}")
        bands.reload()
        print("\nerror bands (10–90 % of held-out predicted / measured) by profile")
        for name in [stack_profiles.DEFAULT_PROFILE, *sorted(rows["stack"].unique()), *stack_profiles.FAMILY_PROFILES]:
            for kind in bands.KINDS:
                table = bands.held_out(name, kind, str(published.PREDICTIONS))
                if table is None:
                    continue
                engine = bands.engine_for(name)
                own = table["regime"].map(lambda r, e=engine: r.engine == e)
                for _, b in table[table["validated"] & own].iterrows():
                    print(f"  {name} {kind} {b['regime'].key}: {b['lo']:.2f}–{b['hi']:.2f} ({b['rows']} rows)")
    return 1 if summary(T0) else 0


if __name__ == "__main__":
    sys.exit(main())

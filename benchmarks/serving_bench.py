"""The serving model (specviz.core.serving): its sweep's speed, and its predictions against a real server
under load, with PASS/FAIL.

Run from the repository root::

    python benchmarks/serving_bench.py                 # both parts (the server part needs llama.cpp built)
    python benchmarks/serving_bench.py --sweep-only    # the timing part only (seconds)

1. Sweep: the Serving view's whole sweep, ``--loads`` Poisson rates × K = 0..8 for one pair and GPU
   (``serving.cost_grid`` + ``serving.steady_state`` + ``serving.best_by_load``), against the same
   steady states from a per-point loop (``serving.open_loop_point``: a bisection pricing every step with
   ``serving.round_seconds``). Targets: <= 0.5 s, >= 50× the loop, the same best K at every load and
   TPOT within 0.5 %.
2. A real server: llama.cpp's llama-server (``scripts/build-llama-server``) with ``--slots`` slots
   (continuous batching) serves the bundled pair exported to GGUF, once without the draft and once
   with it at ``--k``. The load generator (specviz.servers.loadgen, streaming) drives each at
   concurrency 1, 2, 4, 8 and at two Poisson rates. Predicted: the serving model on step costs
   measured beforehand by llama-batched-bench (B sequences decoding together) and llama-bench (the
   verify forward), never by the load runs. Targets: TPOT and output throughput within ±20 % at every
   load; the concurrency from which speculation stops paying within one step of the measured one.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _report import machine_line, median_time, record, summary

from specviz.core import hardware, serving

T0 = time.perf_counter()


def sweep_check(pair: str, gpu: str, tp: int, engine: str, alpha: float, n_loads: int) -> None:
    """Part 1: the whole sweep, vectorised against the per-point loop."""
    row = hardware.preset_pairs(heads=True).set_index("name").loc[pair]
    target, draft = row["target"], row["draft"]
    prompt, output = serving.Lengths.fixed(1024), serving.Lengths.fixed(256)
    options = serving.chain_options(alpha, 8)
    kw = dict(tp=tp, engine=engine)

    def vectorised():
        grid = serving.cost_grid(target, draft, gpu, options, prompt, output, **kw)
        cap_rate = float(np.max(grid.cap / ((output.mean - 1) / grid.mean_tokens * grid.round_s[-1])))
        loads = np.geomspace(cap_rate / 200, cap_rate * 0.75, n_loads)
        frame = serving.steady_state(grid, output, loads)
        return grid, loads, frame, serving.best_by_load(frame)

    t_vec, _ = median_time(vectorised, repeats=7, warmup=1)
    grid, loads, frame, best = vectorised()
    rounds = (output.mean - 1) / grid.mean_tokens
    eff = hardware.as_efficiency(engine) if engine else None
    t0 = time.perf_counter()
    ref = np.full((loads.size, len(options)), np.nan)
    for i, rate in enumerate(loads):
        for k, option in enumerate(options):

            def price(b, option=option):
                return float(
                    serving.round_seconds(target, draft, gpu, [option], [b], grid.context, tp=tp, efficiency=eff)[0, 0]
                )

            ref[i, k] = serving.open_loop_point(
                price, rate, rounds[k], grid.prefill_s[k], grid.mean_tokens[k], grid.cap
            )["tpot_s"]
    t_loop = time.perf_counter() - t0
    got = frame["tpot_s"].to_numpy().reshape(loads.size, len(options))
    both = np.isfinite(ref) & np.isfinite(got)
    same_overload = bool((np.isfinite(ref) == np.isfinite(got)).all())
    worst = float(np.max(np.abs(got[both] / ref[both] - 1)))
    k_ref = np.where(np.isfinite(ref).any(1), np.nanargmin(np.where(np.isfinite(ref), ref, np.inf), 1), -1)
    k_vec = best["k_best"].fillna(-1).to_numpy().astype(int)
    print(f"\n1. sweep: {pair} on {tp} × {gpu}, {engine} profile, α = {alpha}: {loads.size} rates × K = 0..8")
    print(f"   rates {loads[0]:.3g} … {loads[-1]:.3g} requests/s; cap {grid.cap:.0f} sequences; L̄ = {grid.context:.0f}")
    print(f"   vectorised: {t_vec * 1e3:.1f} ms (median of 7); per-point loop: {t_loop:.2f} s")
    print("   best K by load:", " ".join(str(k) for k in k_vec))
    record("whole sweep time", f"{t_vec * 1e3:.1f} ms", "<= 500 ms", t_vec <= 0.5)
    record("sweep vs per-point loop", f"{t_loop / t_vec:.0f}×", ">= 50×", t_loop / t_vec >= 50)
    record("same TPOT as the loop", f"worst {worst:.2e}", "<= 0.5 %", worst <= 5e-3 and same_overload)
    record(
        "same best K as the loop", f"{int((k_vec == k_ref).sum())}/{k_vec.size}", "all", bool((k_vec == k_ref).all())
    )


# --------------------------------------------------------------------------------------
# 2. against llama-server under load
# --------------------------------------------------------------------------------------


def batched_bench(binary, gguf, *, npp, ntg, npl, threads: int, repeats: int) -> dict:
    """llama-batched-bench's times (s) by B, medians of ``repeats`` runs: {B: (t_pp / 1, t_tg / ntg)}:
    t_pp the forward over B sequences × ``npp`` new tokens at context 0, t_tg one step of B sequences
    decoding one token each at contexts npp … npp + ntg (the mean over the ntg steps)."""
    import json
    import subprocess

    runs: dict[int, list[tuple[float, float]]] = {}
    for _ in range(repeats):
        cmd = [str(binary), "-m", str(gguf), "-c", str(max(npl) * (npp + ntg) + 64), "-b", "2048", "-ub", "512"]
        cmd += ["-npp", str(npp), "-ntg", str(ntg), "-npl", ",".join(map(str, npl)), "-t", str(threads)]
        cmd += ["--output-format", "jsonl"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                runs.setdefault(int(r["pl"]), []).append((r["t_pp"], r["t_tg"] / max(r["tg"], 1)))
    return {b: tuple(float(np.median([x[i] for x in v])) for i in range(2)) for b, v in runs.items()}


def server_check(args) -> None:
    """Part 2: the serving model against llama-server with ``args.slots`` slots, with and without the draft."""
    import tempfile
    from pathlib import Path

    from specviz.engine import bench as engine_bench
    from specviz.engine.models.gguf import export_pair_gguf
    from specviz.servers import llamacpp, loadgen
    from specviz.servers.fetch import FetchPolicy

    binary = llamacpp.find_binary()
    tools = binary.parent if binary else None
    bbench = tools / "llama-batched-bench" if tools else None
    names = (
        "TPOT within ±20 % at every load",
        "throughput within ±20 % at every load",
        "where speculation stops paying",
    )
    if binary is None or not (bbench and bbench.is_file()):
        for name in names:
            record(name, "llama-server or llama-batched-bench missing", "scripts/build-llama-server", None)
        return
    k, slots, threads, g = args.k, args.slots, args.threads, args.tokens
    prompts = engine_bench.load_prompts()
    load_prompts, cal_prompts = prompts[: args.prompts], prompts[args.prompts : args.prompts + 3]
    p_tokens = len(load_prompts[0].encode())  # byte-level: one token per byte
    work = Path(tempfile.mkdtemp(prefix="specviz-serving-"))
    target, draft = export_pair_gguf("bundled", work)
    batches = list(range(1, slots + 1))
    print(f"\n2. llama-server ({binary}), {slots} slots, {threads} threads; bundled pair, K = {k}")
    print(
        f"   prompts of {p_tokens} tokens, {g} output tokens; step costs from llama-batched-bench (median of {args.repeats})"
    )
    # step costs, measured before any load run and never from one
    cost = {}
    for name, gguf in (("target", target), ("draft", draft)):
        cost[name, "decode"] = batched_bench(
            bbench, gguf, npp=p_tokens, ntg=g, npl=batches, threads=threads, repeats=args.repeats
        )
        for n in (1, k + 1):
            cost[name, n] = batched_bench(
                bbench, gguf, npp=n, ntg=1, npl=batches, threads=threads, repeats=args.repeats
            )
    cost["target", "prompt"] = batched_bench(
        bbench, target, npp=p_tokens, ntg=1, npl=[1], threads=threads, repeats=args.repeats
    )
    cost["draft", "prompt"] = batched_bench(
        bbench, draft, npp=p_tokens, ntg=1, npl=[1], threads=threads, repeats=args.repeats
    )
    t_dec = np.array([cost["target", "decode"][b][1] for b in batches])
    t_extra = np.array([cost["target", k + 1][b][0] - cost["target", 1][b][0] for b in batches])
    d_dec = np.array([cost["draft", "decode"][b][1] for b in batches])
    d_reeval = np.array([cost["draft", k + 1][b][0] for b in batches])
    p_plain = cost["target", "prompt"][1][0] - cost["target", 1][1][0]
    p_spec = p_plain + cost["draft", "prompt"][1][0] - cost["draft", 1][1][0]

    policy = FetchPolicy(connect_timeout_s=5.0, read_timeout_s=120.0, total_timeout_s=600.0)
    log_dir = work / "logs"
    with (
        llamacpp.serve(binary, target, None, k, log_dir=log_dir, threads=threads, slots=slots) as plain_srv,
        llamacpp.serve(binary, target, draft, k, log_dir=log_dir, threads=threads, slots=slots) as spec_srv,
    ):
        # calibration, on prompts the load never sends, one request at a time: the server's own fixed cost per
        # step (its loop, sampling, streaming) beyond the forward, and E[N] at K
        def one(url, prompt):
            body = {**llamacpp.GREEDY, "prompt": prompt, "n_predict": g, "cache_prompt": False}
            return llamacpp.complete_raw(url, body)["timings"]

        plain_t = [one(plain_srv.url, p) for p in cal_prompts * 2]
        spec_t = [one(spec_srv.url, p) for p in cal_prompts * 2]
        step_1 = np.median([t["predicted_ms"] / t["predicted_n"] for t in plain_t]) / 1e3
        o_step = max(step_1 - t_dec[0], 0.0)
        drafted = sum(t.get("draft_n", 0) for t in spec_t)
        accepted = sum(t.get("draft_n_accepted", 0) for t in spec_t)
        mean_tokens = 1 + k * accepted / drafted if drafted else 1.0
        round_1 = np.median([t["predicted_ms"] / t["predicted_n"] for t in spec_t]) / 1e3 * mean_tokens
        spec_round = t_dec + t_extra + k * d_dec + d_reeval + o_step
        o_round = max(round_1 - spec_round[0], 0.0)
        spec_round = spec_round + o_round
        print(f"   calibration ({len(cal_prompts)} other prompts, one at a time): step at B = 1 {step_1 * 1e3:.3f} ms")
        print(
            f"   (forward {t_dec[0] * 1e3:.3f} ms + server {o_step * 1e3:.3f} ms); E[N] at K = {k}: {mean_tokens:.3f};"
        )
        print(f"   round at B = 1 {round_1 * 1e3:.3f} ms (its fixed cost beyond the forwards {o_round * 1e3:.3f} ms)")
        options = (serving.Option("K = 0", 0, 1.0), serving.Option(f"K = {k}", k, mean_tokens, k + 1))
        rounds = np.stack([t_dec + o_step, spec_round], -1)
        grid = serving.grid_from_steps(batches, rounds, options, [p_plain, p_spec], context=p_tokens + g / 2)
        output = serving.Lengths.fixed(g)
        cap_rps = float(slots / ((g - 1) * rounds[-1, 0] + slots * p_plain))
        rates = [round(0.35 * cap_rps, 1), round(0.7 * cap_rps, 1)]
        loads = [("closed", c) for c in args.concurrency] + [("open", r) for r in rates]
        rows = []
        for mode, load in loads:
            pred = serving.steady_state(grid, output, [load], mode=mode).set_index("k")
            for kk, srv in ((0, plain_srv), (k, spec_srv)):
                n_req = max(args.requests, int(2 * load)) if mode == "closed" else int(load * args.open_seconds)
                spec = loadgen.LoadSpec(
                    srv.url,
                    load_prompts,
                    max_tokens=g,
                    concurrency=int(load) if mode == "closed" else slots,
                    max_requests=n_req,
                    max_seconds=600.0,
                    rate=None if mode == "closed" else float(load),
                    seed=1,
                )
                got = loadgen.run_load(spec, policy)
                rows.append(
                    dict(
                        mode=mode,
                        load=load,
                        k=kk,
                        tpot_pred=pred.loc[kk, "tpot_s"] * 1e3,
                        tpot_meas=got.tpot.mean * 1e3,
                        tps_pred=pred.loc[kk, "tokens_per_s"],
                        tps_meas=got.output_tokens_per_s,
                        batch_pred=pred.loc[kk, "batch"],
                        tokens=got.output_tokens_mean,
                        failed=got.failed,
                    )
                )
    import pandas as pd

    table = pd.DataFrame(rows)
    table["tpot_err"] = table["tpot_pred"] / table["tpot_meas"] - 1
    table["tps_err"] = table["tps_pred"] / table["tps_meas"] - 1
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    closed = table[table["mode"] == "closed"].pivot(index="load", columns="k", values=["tpot_pred", "tpot_meas"])

    def stops(col):  # the first concurrency from which K's TPOT is no better than plain decoding's
        worse = closed[(col, k)].to_numpy() >= closed[(col, 0)].to_numpy()
        idx = [i for i in range(worse.size) if worse[i:].all()]
        return idx[0] if idx else worse.size

    c = list(closed.index)
    s_pred, s_meas = stops("tpot_pred"), stops("tpot_meas")
    shown = lambda i: f"c = {c[i]:g}" if i < len(c) else "never"
    print(f"   speculation stops paying: predicted {shown(s_pred)}, measured {shown(s_meas)}")
    worst_t, worst_x = float(table["tpot_err"].abs().max()), float(table["tps_err"].abs().max())
    record(names[0], f"worst {worst_t:.1%} (median {table['tpot_err'].abs().median():.1%})", "<= 20 %", worst_t <= 0.2)
    record(names[1], f"worst {worst_x:.1%} (median {table['tps_err'].abs().median():.1%})", "<= 20 %", worst_x <= 0.2)
    record(
        names[2], f"predicted {shown(s_pred)}, measured {shown(s_meas)}", "within one step", abs(s_pred - s_meas) <= 1
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", default="Llama-3.1 70B + 3.2 1B", help="a preset pair (sweep)")
    p.add_argument("--gpu", default="H100-SXM5-80GB")
    p.add_argument("--tp", type=int, default=4)
    p.add_argument("--engine", default="vllm")
    p.add_argument("--alpha", type=float, default=0.8)
    p.add_argument("--loads", type=int, default=12, help="rates in the sweep")
    p.add_argument("--sweep-only", action="store_true", help="skip the llama-server part")
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--k", type=int, default=2, help="the speculative server's fixed K")
    p.add_argument("--tokens", type=int, default=128, help="output tokens per request")
    p.add_argument("--prompts", type=int, default=9, help="prompts the load sends (the next 3 calibrate)")
    p.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8])
    p.add_argument("--requests", type=int, default=16, help="requests per closed-loop run (at least 2 per user)")
    p.add_argument("--open-seconds", type=float, default=20.0, help="seconds of arrivals per open-loop run")
    p.add_argument("--repeats", type=int, default=3, help="llama-batched-bench runs per cost")
    args = p.parse_args()
    print(machine_line())
    sweep_check(args.pair, args.gpu, args.tp, args.engine, args.alpha, args.loads)
    if not args.sweep_only:
        server_check(args)
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())

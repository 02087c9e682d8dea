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
   measured by llama-bench (a forward over B·n tokens at the decode context) and the server's own
   timings of single requests on prompts the load never sends, never by the load runs. Targets: TPOT and output throughput within ±20 % at every
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


def llama_bench(binary, gguf, ns, *, depth: int, threads: int, reps: int) -> dict:
    """llama-bench's mean forward times (s): {n: a forward over n new tokens at a context of ``depth``}
    for every n in ``ns`` (n = 1 is the decode path, one token generated), over ``reps`` repetitions."""
    import json
    import subprocess

    prompts = sorted({n for n in ns if n > 1})
    cmd = [str(binary), "-m", str(gguf), "-d", str(depth), "-r", str(reps), "-t", str(threads), "-o", "json"]
    cmd += ["-p", ",".join(map(str, prompts)) if prompts else "0", "-n", "16"]
    out = {}
    for test in json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout):
        if test["n_gen"]:
            out[1] = test["avg_ns"] / 1e9 / test["n_gen"]
        elif test["n_prompt"]:
            out[test["n_prompt"]] = test["avg_ns"] / 1e9
    return out


def step_costs(bench_bin, target, draft, *, k: int, slots: int, prompt: int, depth: int, threads: int, reps: int):
    """What the server's steps cost on this machine, measured by llama-bench alone (never by a load run).

    A step of B sequences with n new tokens each is one llama.cpp batch of B·n tokens: llama-bench's
    forward over B·n tokens at the decode context (the matrix products see the same B·n rows; the
    attention of B sequences over their own contexts costs what one sequence's B·n tokens do over one).
    Returns per B = 1 … slots: the target's step (B tokens), its verify (B·(K + 1) tokens), the draft's
    step (B tokens) and its pass over the verified B·(K + 1) tokens (llama.cpp's draft re-evaluates
    them: common/speculative.cpp ``process``), and one prompt's prefill (P tokens at context 0, beyond
    a one-token forward), target and draft.
    """
    b = np.arange(1, slots + 1)
    ns = sorted({*b.tolist(), *(b * (k + 1)).tolist()})
    t = llama_bench(bench_bin, target, ns, depth=depth, threads=threads, reps=reps)
    d = llama_bench(bench_bin, draft, ns, depth=depth, threads=threads, reps=reps)
    t0 = llama_bench(bench_bin, target, [2, prompt], depth=0, threads=threads, reps=reps)
    d0 = llama_bench(bench_bin, draft, [2, prompt], depth=0, threads=threads, reps=reps)
    return {
        "target": np.array([t[x] for x in b]),
        "verify": np.array([t[x * (k + 1)] for x in b]),
        "draft": np.array([d[x] for x in b]),
        "reeval": np.array([d[x * (k + 1)] for x in b]),
        "prefill": t0[prompt] - t0[2] / 2,
        "prefill_draft": d0[prompt] - d0[2] / 2,
    }


def server_check(args) -> None:
    """Part 2: the serving model against llama-server with ``args.slots`` slots, with and without the draft.

    The machine is shared and its forwards vary by ±30 % from one minute to the next, so the step costs
    and the load runs are interleaved: each of ``--repeats`` rounds measures the costs, predicts every
    load from them, then runs every load on both servers; prediction and measurement are each the median
    over the rounds.
    """
    import tempfile
    from pathlib import Path

    import pandas as pd

    from specviz.engine import bench as engine_bench
    from specviz.engine.models.gguf import export_pair_gguf
    from specviz.servers import llamacpp, loadgen
    from specviz.servers.fetch import FetchPolicy

    binary = llamacpp.find_binary()
    bench_bin = binary.parent / "llama-bench" if binary else None
    names = (
        "TPOT within ±20 % at every load",
        "throughput within ±20 % at every load",
        "where speculation stops paying",
    )
    if binary is None or not (bench_bin and bench_bin.is_file()):
        for name in names:
            record(name, "llama-server or llama-bench missing", "scripts/build-llama-server", None)
        return
    k, slots, threads, g = args.k, args.slots, args.threads, args.tokens
    prompts = engine_bench.load_prompts()
    load_prompts, cal_prompts = prompts[: args.prompts], prompts[args.prompts : args.prompts + 3]
    p_tokens = len(load_prompts[0].encode())  # byte-level: one token per byte
    # every request a prompt of its own (the load's prompts rotated, a new shift for each), so that no
    # request finds its prompt in a slot's cache: llama-server reuses a slot's cached prefix, and a user's
    # traffic repeats no prompt; the calibration's prompts are never among them
    fresh = iter([t[j:] + t[:j] for j in range(p_tokens) for t in load_prompts])
    depth = int(p_tokens + g / 2)  # the decode context L̄ of fixed lengths
    work = Path(tempfile.mkdtemp(prefix="specviz-serving-"))
    target, draft = export_pair_gguf("bundled", work)
    batches = list(range(1, slots + 1))
    output = serving.Lengths.fixed(g)
    print(f"\n2. llama-server ({binary}), {slots} slots, {threads} thread(s); bundled pair, K = {k}")
    print(f"   prompts of {p_tokens} tokens, {g} output tokens; {args.repeats} rounds of costs then loads")
    policy = FetchPolicy(connect_timeout_s=5.0, read_timeout_s=120.0, total_timeout_s=600.0)
    log_dir = work / "logs"
    rows, rates = [], []
    with (
        llamacpp.serve(binary, target, None, k, log_dir=log_dir, threads=threads, slots=slots) as plain_srv,
        llamacpp.serve(binary, target, draft, k, log_dir=log_dir, threads=threads, slots=slots) as spec_srv,
    ):

        def one(url, prompt):  # calibration: one request alone, the server's own timings
            body = {**llamacpp.GREEDY, "prompt": prompt, "n_predict": g, "cache_prompt": False}
            return llamacpp.complete_raw(url, body)["timings"]

        for r in range(args.repeats):
            c = step_costs(
                bench_bin, target, draft, k=k, slots=slots, prompt=p_tokens, depth=depth, threads=threads, reps=5
            )
            # calibration on prompts the load never sends, one request at a time: the server's own work per
            # step beyond the forward (its loop, sampling, streaming), the round's beyond its forwards, and E[N]
            plain_t = [one(plain_srv.url, p) for p in cal_prompts]
            spec_t = [one(spec_srv.url, p) for p in cal_prompts]
            step_1 = np.median([t["predicted_ms"] / t["predicted_n"] for t in plain_t]) / 1e3
            drafted = sum(t.get("draft_n", 0) for t in spec_t)
            accepted = sum(t.get("draft_n_accepted", 0) for t in spec_t)
            mean_tokens = 1 + k * accepted / drafted if drafted else 1.0
            round_1 = np.median([t["predicted_ms"] / t["predicted_n"] for t in spec_t]) / 1e3 * mean_tokens
            o_step = max(step_1 - c["target"][0], 0.0)
            spec_round = c["verify"] + k * c["draft"] + c["reeval"] + o_step
            o_round = max(round_1 - spec_round[0], 0.0)
            print(
                f"   round {r + 1}: target step {c['target'][0] * 1e3:.3f} ms at B = 1, {c['target'][-1] * 1e3:.3f} ms at "
                f"B = {slots}; server {o_step * 1e3:.3f} ms a step, {o_round * 1e3:.3f} ms more a round; E[N] {mean_tokens:.3f}"
            )
            options = (serving.Option("K = 0", 0, 1.0), serving.Option(f"K = {k}", k, mean_tokens, k + 1))
            rounds = np.stack([c["target"] + o_step, spec_round + o_round], -1)
            prefill = [c["prefill"], c["prefill"] + c["prefill_draft"]]
            grid = serving.grid_from_steps(batches, rounds, options, prefill, context=depth)
            cap_rps = float(slots / ((g - 1) * rounds[-1, 0] + slots * prefill[0]))
            if r == 0:  # the two rates: 35 % and 70 % of the first round's predicted capacity without speculation
                rates = [round(0.35 * cap_rps, 1), round(0.7 * cap_rps, 1)]
            loads = [("closed", x) for x in args.concurrency] + [("open", x) for x in rates]
            for mode, load in loads:
                pred = serving.steady_state(grid, output, [load], mode=mode).set_index("k")
                for kk, srv in ((0, plain_srv), (k, spec_srv)):
                    # a closed loop runs ``--per-user`` requests a user (its start and end, when fewer than N
                    # decode, weigh less the longer it runs); an open loop ``--open-seconds`` of arrivals
                    n_req = int(args.per_user * load) if mode == "closed" else int(load * args.open_seconds)
                    spec = loadgen.LoadSpec(
                        srv.url,
                        [next(fresh) for _ in range(n_req)],
                        max_tokens=g,
                        concurrency=int(load) if mode == "closed" else slots,
                        max_requests=n_req,
                        max_seconds=600.0,
                        rate=None if mode == "closed" else float(load),
                        seed=r,
                    )
                    got = loadgen.run_load(spec, policy)
                    if got.failed:
                        print(f"   {mode} {load} K = {kk}: {got.summary()}; {got.errors[:2]}")
                    rows.append(
                        dict(
                            round=r,
                            mode=mode,
                            load=load,
                            k=kk,
                            tpot_pred=pred.loc[kk, "tpot_s"] * 1e3,
                            tpot_meas=got.tpot.mean * 1e3,
                            tps_pred=pred.loc[kk, "tokens_per_s"],
                            tps_meas=got.output_tokens_per_s,
                            batch_pred=pred.loc[kk, "batch"],
                            failed=got.failed,
                        )
                    )
    frame = pd.DataFrame(rows)
    table = (
        frame.groupby(["mode", "load", "k"], sort=False).median(numeric_only=True).drop(columns="round").reset_index()
    )
    table["tpot_err"] = table["tpot_pred"] / table["tpot_meas"] - 1
    table["tps_err"] = table["tps_pred"] / table["tps_meas"] - 1
    print(f"   medians over {args.repeats} rounds (TPOT in ms, throughput in output tokens/s):")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    closed = table[table["mode"] == "closed"].pivot(index="load", columns="k", values=["tpot_pred", "tpot_meas"])

    def stops(col):  # the first concurrency from which K's TPOT is no better than plain decoding's
        worse = closed[(col, k)].to_numpy() >= closed[(col, 0)].to_numpy()
        idx = [i for i in range(worse.size) if worse[i:].all()]
        return idx[0] if idx else worse.size

    c_list = list(closed.index)
    s_pred, s_meas = stops("tpot_pred"), stops("tpot_meas")

    def shown(i):
        return f"c = {c_list[i]:g}" if i < len(c_list) else "never"

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
    p.add_argument("--threads", type=int, default=1, help="llama.cpp threads (one core left to the client)")
    p.add_argument("--k", type=int, default=2, help="the speculative server's fixed K")
    p.add_argument("--tokens", type=int, default=128, help="output tokens per request")
    p.add_argument("--prompts", type=int, default=9, help="prompts the load sends (the next 3 calibrate)")
    p.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8])
    p.add_argument("--per-user", type=int, default=6, help="requests a user sends in a closed-loop run")
    p.add_argument("--open-seconds", type=float, default=20.0, help="seconds of arrivals per open-loop run")
    p.add_argument("--repeats", type=int, default=3, help="rounds of costs then loads (medians over them)")
    args = p.parse_args()
    print(machine_line())
    sweep_check(args.pair, args.gpu, args.tp, args.engine, args.alpha, args.loads)
    if not args.sweep_only:
        server_check(args)
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())

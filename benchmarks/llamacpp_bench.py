"""The theory against llama.cpp, on the same pair: predicted vs delivered speedup, and α vs ours.

Run from the repository root (builds llama-server first if needed, ~5 min on 2 cores)::

    python benchmarks/llamacpp_bench.py               # K = 1..8, 4 prompts × 5 repeats × 256 tokens
    python benchmarks/llamacpp_bench.py --ks 2,4 --prompts 2 --repeats 1   # smoke run

The bundled pair is exported to GGUF (:mod:`specviz.engine.models.gguf`) and served by llama.cpp's
llama-server on loopback, ``--threads`` threads each, one slot: one target-only server, one
speculative server per K (``--spec-type draft-simple --spec-draft-n-max K --spec-draft-n-min K
--spec-draft-p-min 0``: K fixed) and one more at the calibration K, all started before any run,
greedy. Single forwards on this kind of machine vary by ±30 % from one to the next, so every cost
is a statistic over many samples taken between the runs, in one shuffled loop.

1. Runs: each repeat visits every (prompt, K) and every calibration prompt once, in a shuffled
   order: a target-only completion, then the speculative one. measured S = K's pooled decode
   tokens/s (Σ ``predicted_n`` / Σ ``predicted_ms``) ÷ that of the target-only runs beside them;
   E[N] at K = 1 + Δaccepted / Δdrafts of K's server's /metrics over the runs, pooled the same
   way, so that E[N] / S is the mean round time in target-only steps.
2. Costs, measured between the runs, never from the speculative runs' timings:
   - T_p, the target-only server's decode step (Σ ``predicted_ms`` / Σ ``predicted_n``) over the
     target-only runs beside K's, for K's prediction (and the calibration's beside its own);
   - ΔT_v(n), what the target's forward over n tokens costs beyond one: before each run,
     ``--probes`` sets in which the target-only server evaluates n = 1 … K_max + 1 new tokens in
     one batch after a cached prefix (:func:`specviz.servers.llamacpp.forward_ms`, at the runs' mean
     context); ΔT_v(n) = mean forward(n) − mean forward(1). Means, because a run's tokens/s is a
     mean over its rounds, slow ones included. v = ΔT_v(K + 1) / (K · T_p);
   - T_q, the draft's forward over one token, and T_qv(n), over n tokens (llama-bench, once per
     repeat; means); c = T_p / T_q.
3. The round llama.cpp b11434 does (``tools/server/server-context.cpp``, ``common/speculative.cpp``):
   K draft forwards, one target forward over K + 1 tokens, a step's sampling and bookkeeping, and
   then the draft evaluates the verified K + 1 tokens again (the source's
   ``TAG_SPEC_AVOID_DRAFT_REEVAL``: "for now, always re-evaluate"). So, in T_p,
   round = 1 + v·K + K / c + o_K with o_K = T_qv(K + 1) / T_p + o_0, and
   predicted S = E[N] / round (:func:`specviz.core.theory.speedup_from_tokens`).
   o_0 is the rest of a round's work (the sampler copied for a rollback, sampling at each accepted
   position, the caches trimmed, the hand-overs between the two models), calibrated on prompts
   outside the benchmark set: at K = ``--calibrate-k`` on ``--calibration-prompts`` prompts, run in
   the same loop, o_0 = E[N] / S − (1 + v·K + K / c + T_qv(K + 1) / T_p) there. The prediction
   with o_0 = 0 is printed beside it.                                             [±15 % at every K]
4. α: llama.cpp's (from its E[N] at K) vs our engine's on the same prompts, greedy
   (:func:`specviz.engine.bench.run_cell`, α from its E[N] the same way)                 [±0.03 at every K]
5. Speed against llama.cpp, same pair, prompts and thread count. Target-only tokens/s of llama-server
   and of both our engines (eager, compiled: :mod:`specviz.engine.models.compiled`), taken in turns
   in one loop while the servers idle (:func:`paired_target_only`)            [compiled >= 0.9× llama.cpp];
   speculative tokens/s at each one's best K: llama.cpp's from step 1, ours from a
   :func:`specviz.engine.bench.run_cell` per engine and K after the loop  [compiled >= 1.0× llama.cpp];
   our compiled engine's per-round overhead o, median over K                         [<= 0.1 T_p].
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from _report import machine_line, record, summary

from specviz.core import theory
from specviz.engine import bench
from specviz.engine.models import ByteTokenizer, load_pair
from specviz.engine.models.gguf import export_pair_gguf
from specviz.servers import llamacpp, read_llamacpp, window


def bench_forward_ms(bench_bin: Path, gguf: Path, n_max: int, depth: int, threads: int, reps: int) -> dict:
    """llama-bench's forward times (ms, every repeat) at a context of ``depth``: {n: [...]} for a batch
    of n = 1 … ``n_max`` tokens, {0: [...]} per token of a 16-token generation."""
    cmd = [str(bench_bin), "-m", str(gguf), "-p", ",".join(str(n) for n in range(1, n_max + 1)), "-n", "16"]
    cmd += ["-d", str(depth), "-r", str(reps), "-t", str(threads), "-o", "json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    out = {}
    for test in json.loads(done.stdout):
        per = max(test["n_gen"], 1)
        out[test["n_prompt"]] = [ns / 1e6 / per for ns in test["samples_ns"]]
    return out


def measure(
    plan: list[tuple[list[int], str, list]],
    base_url: str,
    prefix: list[int],
    n_max: int,
    draft_costs,
    repeats: int,
    new_tokens: int,
    probes: int,
    seed: int = 0,
) -> dict:
    """Every (prompt, speculative server, sink) of ``plan``, ``repeats`` times in a shuffled order, and
    the costs measured between them: before each entry, ``probes`` sets of the target-only server's
    forward over n = 1 … ``n_max`` tokens; then a target-only and a speculative completion of the
    prompt, whose ``timings`` go to the entry's sink as a (spec, target-only) pair.
    ``draft_costs()`` (one llama-bench call on the draft: {n: [ms]}, {0: [ms per generated
    token]}) runs once per repeat.

    Returns the forward costs in ms: ΔT_v(n) = mean forward(n) − mean forward(1) over every probe set
    (means: a run's tokens/s is a mean over its rounds, rare slow forwards included), T_q and T_qv(n)
    (means). T_p comes from each entry's own target-only runs (:func:`speedup_and_step`).
    """
    rng = random.Random(seed)
    fwd, draft = {n: [] for n in range(1, n_max + 1)}, {}
    for _ in range(repeats):
        for n, ms in draft_costs().items():
            draft.setdefault(n, []).extend(ms)
        for prompt, url, sink in rng.sample(plan, len(plan)):
            for _ in range(probes):
                for n in fwd:
                    fwd[n].append(llamacpp.forward_ms(base_url, prefix, prompt[:n]))
            b = llamacpp.complete(base_url, prompt, new_tokens)["timings"]
            s = llamacpp.complete(url, prompt, new_tokens)["timings"]
            sink.append((s, b))
    mean = statistics.fmean
    return dict(
        forward_1_ms=mean(fwd[1]),
        delta_v_ms={n: mean(fwd[n]) - mean(fwd[1]) for n in fwd if n > 1},
        t_q_ms=mean(draft[0]),
        t_qv_ms={n: mean(ms) for n, ms in draft.items() if n},
    )


def paired_target_only(base_url: str, engines: dict, prompts: list[list[int]], new_tokens: int, repeats: int) -> dict:
    """Target-only decode tokens/s of llama.cpp and of each of our engines, measured in turns: every
    repeat visits each prompt once in a shuffled order and runs llama-server's target-only completion
    and each engine's :func:`specviz.engine.decoding.generate_target_only` back to back, so that the
    machine's drift (±30 % over minutes on this VM) falls on all of them alike. Pooled: Σ tokens / Σ time.
    Returns {"llama.cpp": tps, engine: tps, ...}."""
    from specviz.engine import decoding

    rng = random.Random(1)
    llama, ours = [], {name: [0, 0.0] for name in engines}
    for _ in range(repeats):
        for prompt in rng.sample(prompts, len(prompts)):
            llama.append(llamacpp.complete(base_url, prompt, new_tokens)["timings"])
            for name, target in engines.items():
                _, stats = decoding.generate_target_only(target, torch.tensor(prompt), new_tokens)
                ours[name][0] += stats.new_tokens
                ours[name][1] += stats.decode_s
    return {"llama.cpp": decode_tps(llama), **{name: n / s for name, (n, s) in ours.items()}}


def acceptance(k: int, before, url: str) -> dict:
    """llama.cpp's E[N] and α at K from its /metrics since ``before``."""
    w = window(before, read_llamacpp(llamacpp.metrics_text(url)))
    mean = min(w.mean_acceptance_length, k + 1.0)
    return dict(mean_llama=mean, alpha_llama=float(theory.alpha_from_mean_tokens(mean, k)))


def decode_tps(runs: list[dict]) -> float:
    """Pooled decode tokens/s of completions' ``timings``: Σ predicted_n / Σ predicted_ms."""
    return 1000.0 * sum(t["predicted_n"] for t in runs) / sum(t["predicted_ms"] for t in runs)


def speedup_and_step(pairs: list[tuple[dict, dict]]) -> tuple[float, float]:
    """(S, T_p in ms) over (spec, target-only) run pairs: S = pooled speculative tokens/s ÷ pooled
    target-only tokens/s, T_p = the target-only runs' pooled step, Σ ms / Σ tokens.

    Pooled, as E[N] from /metrics is (Σ accepted / Σ drafts): E[N] / S is then the mean round time
    over the runs in steps T_p of the target-only runs beside them, which the prediction then uses.
    """
    base = decode_tps([b for _, b in pairs])
    return decode_tps([s for s, _ in pairs]) / base, 1000.0 / base


def predict(k: int, mean: float, costs: dict, o_0: float, t_p: float) -> dict:
    """The round llama.cpp does at K in steps ``t_p`` (ms) and the speedup it predicts, from the
    measured forward costs."""
    v = max(costs["delta_v_ms"][k + 1], 0.0) / (k * t_p)
    c = t_p / costs["t_q_ms"]
    o_re = costs["t_qv_ms"][k + 1] / t_p  # the draft evaluating the verified K + 1 tokens again
    return dict(
        v=v,
        c=c,
        o=o_re + o_0,
        round_predicted=1.0 + v * k + k / c + o_re + o_0,
        predicted=float(theory.speedup_from_tokens(mean, c, k, v, o_re + o_0)),
        predicted_o0=float(theory.speedup_from_tokens(mean, c, k, v, o_re)),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ks", default="1,2,3,4,5,6,7,8")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument(
        "--threads", type=int, default=1, help="threads of llama.cpp and of torch (1: no contention with the client)"
    )
    ap.add_argument("--bench-repeats", type=int, default=10, help="llama-bench repeats per call on the draft")
    ap.add_argument("--probes", type=int, default=2, help="sets of forward probes before each run")
    ap.add_argument("--out", default=None, help="write the per-K table as JSON here")
    ap.add_argument(
        "--calibrate-k",
        type=int,
        default=4,
        help="calibrate llama.cpp's remaining per-round work o_0 at this K on other prompts first (0: o_0 = 0)",
    )
    ap.add_argument("--calibration-prompts", type=int, default=3, help="prompts for the calibration (after the others)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    ks = [int(k) for k in args.ks.split(",")]
    binary = llamacpp.find_binary(build=True)
    if binary is None or not (binary.parent / "llama-bench").is_file():
        print("llama-server could not be built (scripts/build-llama-server); nothing to compare", file=sys.stderr)
        return 2
    tok = ByteTokenizer()
    texts_all = bench.load_prompts()
    ids = [tok.encode(t) for t in texts_all[: args.prompts]]
    cal_ids = [tok.encode(t) for t in texts_all[args.prompts : args.prompts + args.calibration_prompts]]
    if args.calibrate_k and len(cal_ids) < max(args.calibration_prompts, 1):
        print(
            f"--prompts {args.prompts} + --calibration-prompts {args.calibration_prompts} needs that many prompts; "
            f"there are {len(texts_all)}",
            file=sys.stderr,
        )
        return 2
    torch.set_num_threads(args.threads)
    print(machine_line(f"torch {torch.__version__}, {args.threads} threads for both engines | {binary}"))
    work = Path(tempfile.mkdtemp(prefix="specviz-llamacpp-"))
    target_gguf, draft_gguf = export_pair_gguf("bundled", work)
    target, draft, _ = load_pair("bundled")
    # the probes' context: the runs' mean (a prompt plus half the new tokens), from the prompts' own text
    depth = int(statistics.mean(len(i) for i in ids)) + args.new_tokens // 2
    prefix = (tok.encode("".join(texts_all)) * 2)[:depth]
    n_max = max(ks + [args.calibrate_k]) + 1

    def draft_costs() -> dict:
        return bench_forward_ms(
            binary.parent / "llama-bench", draft_gguf, n_max, depth, args.threads, args.bench_repeats
        )

    with contextlib.ExitStack() as stack:
        start = dict(log_dir=work, threads=args.threads)
        base = stack.enter_context(llamacpp.serve(binary, target_gguf, None, 1, **start)).url
        urls = {k: stack.enter_context(llamacpp.serve(binary, target_gguf, draft_gguf, k, **start)).url for k in ks}
        cal_k = args.calibrate_k
        if cal_k:  # a server of its own, so that the benchmark's /metrics windows hold only benchmark prompts
            cal_url = stack.enter_context(llamacpp.serve(binary, target_gguf, draft_gguf, cal_k, **start)).url
        for url in [base, *urls.values()] + ([cal_url] if cal_k else []):
            llamacpp.complete(url, ids[0], 16)  # warm-up, before any window opens
        before = {k: read_llamacpp(llamacpp.metrics_text(url)) for k, url in urls.items()}
        pairs = {k: [] for k in ks}
        plan = [(p, urls[k], pairs[k]) for p in ids for k in ks]
        if cal_k:
            before_cal = read_llamacpp(llamacpp.metrics_text(cal_url))
            cal_pairs = []
            plan += [(p, cal_url, cal_pairs) for p in cal_ids]
        costs = measure(plan, base, prefix, n_max, draft_costs, args.repeats, args.new_tokens, args.probes)
        per_k = {}
        for k in ks:
            measured, t_p_k = speedup_and_step(pairs[k])
            per_k[k] = dict(acceptance(k, before[k], urls[k]), measured=measured, t_p_ms=t_p_k)
        o_0 = 0.0
        if cal_k:
            cal = acceptance(cal_k, before_cal, cal_url)
            s_cal, t_p_cal = speedup_and_step(cal_pairs)
            round_measured = cal["mean_llama"] / s_cal
            round_o0 = predict(cal_k, cal["mean_llama"], costs, 0.0, t_p_cal)["round_predicted"]
            o_0 = max(round_measured - round_o0, 0.0)
            print(
                f"calibration: K = {cal_k} on {len(cal_ids)} other prompts: round measured {round_measured:.3f} T_p, "
                f"predicted with o_0 = 0 {round_o0:.3f} T_p, so o_0 = {o_0:.3f} T_p "
                f"({o_0 * t_p_cal:.3f} ms) per round" + ("" if round_measured >= round_o0 else " (clipped at 0)")
            )

        # our engines against llama.cpp's target-only server, in turns (the servers idle meanwhile)
        pairs_by_engine = {name: bench.with_engine(target, draft, name) for name in bench.ENGINES}
        for t, d in pairs_by_engine.values():
            bench.warm_up(t, d, torch.tensor(ids[0]), 2)
        speed = paired_target_only(base, {n: t for n, (t, _) in pairs_by_engine.items()}, ids, args.new_tokens, 3)

    prompts_t = [torch.tensor(i, dtype=torch.long) for i in ids]
    base_tps = decode_tps([b for k in ks for _, b in pairs[k]])
    t_p = 1000.0 / base_tps
    print(
        f"\ncosts (ms): T_p {t_p:.3f} (target-only server step, all benchmark runs), T_q {costs['t_q_ms']:.3f} (draft forward), "
        f"c = T_p / T_q = {t_p / costs['t_q_ms']:.1f}; the target server's forward over 1 token "
        f"{costs['forward_1_ms']:.3f} (with the fixed work of a prompt), probed at a context of {depth} tokens"
    )
    print(
        f"\n{'K':>2} {'T_p':>6} {'E[N] llama':>10} {'α llama':>8} {'α ours':>7} {'ΔT_v':>6} {'T_qv':>6} {'v':>6} {'o_K':>6} "
        f"{'round meas':>10} {'round pred':>10} {'S meas':>7} {'S pred':>7} {'pred/meas':>9} {'(o_0 = 0)':>9}"
    )
    rows = []
    for k in ks:
        row = dict(k=k, **per_k[k], **predict(k, per_k[k]["mean_llama"], costs, o_0, per_k[k]["t_p_ms"]))
        ours = {}
        for name, (t, d) in pairs_by_engine.items():
            bench.warm_up(t, d, prompts_t[0], k)  # compiles K's verify shape outside the timings
            ours[name] = bench.run_cell(t, d, prompts_t, k, 0.0, args.new_tokens, 1)
        row.update(
            ours_compiled_tps=ours["compiled"]["tokens_per_s"],
            ours_compiled_o=ours["compiled"]["o"],
            ours_eager_o=ours["eager"]["o"],
        )
        ours = ours["eager"]
        row.update(
            delta_v_ms=costs["delta_v_ms"][k + 1],
            t_qv_ms=costs["t_qv_ms"][k + 1],
            alpha_ours=float(theory.alpha_from_mean_tokens(ours["mean_accepted_tokens"], k)),
            ours_tps=ours["tokens_per_s"],
            ours_base_tps=ours["baseline_tokens_per_s"],
            ours_speedup=ours["speedup"],
            llama_tps=decode_tps([s for s, _ in pairs[k]]),
        )
        rows.append(row)
        mean, measured, predicted = row["mean_llama"], row["measured"], row["predicted"]
        print(
            f"{k:>2} {row['t_p_ms']:>6.3f} {mean:>10.3f} {row['alpha_llama']:>8.3f} {row['alpha_ours']:>7.3f} {row['delta_v_ms']:>6.3f} "
            f"{row['t_qv_ms']:>6.3f} {row['v']:>6.3f} {row['o']:>6.3f} {mean / measured:>10.3f} "
            f"{row['round_predicted']:>10.3f} {measured:>7.2f} {predicted:>7.2f} {predicted / measured:>9.3f} "
            f"{row['predicted_o0'] / measured:>9.3f}"
            + ("  (o_0 calibrated at this K, on other prompts)" if k == args.calibrate_k else "")
        )
    print(
        "(round: one round's cost in steps T_p of the target-only runs beside K's; measured = E[N] / S, predicted = 1 + v·K + K / c + o_K, "
        "o_K = T_qv / T_p + o_0; ΔT_v: the target server's forward over K + 1 tokens minus over 1; T_qv: the draft's "
        "forward over K + 1 tokens; (o_0 = 0): pred/meas without the calibrated rest; times in ms)"
    )

    worst = max(rows, key=lambda r: abs(r["predicted"] / r["measured"] - 1.0))
    err = worst["predicted"] / worst["measured"] - 1.0
    record("predicted / measured S, worst K", f"{err:+.1%} (K = {worst['k']})", "within ±15 %", abs(err) <= 0.15)
    gap = max(rows, key=lambda r: abs(r["alpha_llama"] - r["alpha_ours"]))
    d = gap["alpha_llama"] - gap["alpha_ours"]
    record("α llama.cpp − α ours, worst K", f"{d:+.4f} (K = {gap['k']})", "within ±0.03", abs(d) <= 0.03)
    best_l = max(rows, key=lambda r: r["llama_tps"])
    best_e = max(rows, key=lambda r: r["ours_tps"])
    best_c = max(rows, key=lambda r: r["ours_compiled_tps"])
    print(
        f"\ntokens/s on this CPU, same pair and prompts, {args.threads} thread(s):"
        f"\n  target only, in turns (3 repeats): llama.cpp {speed['llama.cpp']:.0f}, ours eager "
        f"{speed['eager']:.0f}, ours compiled {speed['compiled']:.0f}"
        f"\n  speculative at each one's best K: llama.cpp {best_l['llama_tps']:.0f} (K = {best_l['k']}), ours eager "
        f"{best_e['ours_tps']:.0f} (K = {best_e['k']}), ours compiled {best_c['ours_compiled_tps']:.0f} (K = {best_c['k']})"
        f"\n  per-round overhead o, median over K (target steps): ours eager "
        f"{statistics.median(r['ours_eager_o'] for r in rows):.3f}, ours compiled "
        f"{statistics.median(r['ours_compiled_o'] for r in rows):.3f}; llama.cpp's o_0 {o_0:.3f}"
    )
    ratio = speed["compiled"] / speed["llama.cpp"]
    record("target only: ours compiled ÷ llama.cpp", f"{ratio:.2f}", ">= 0.9", ratio >= 0.9)
    ratio = best_c["ours_compiled_tps"] / best_l["llama_tps"]
    record("speculative, best K: ours compiled ÷ llama.cpp", f"{ratio:.2f}", ">= 1.0", ratio >= 1.0)
    o_c = statistics.median(r["ours_compiled_o"] for r in rows)
    record("per-round overhead o, ours compiled (median over K)", f"{o_c:.3f} T_p", "<= 0.1 T_p", o_c <= 0.1)
    if args.out:
        costs_json = {**costs, "delta_v_ms": {str(n): ms for n, ms in costs["delta_v_ms"].items()}}
        costs_json["t_qv_ms"] = {str(n): ms for n, ms in costs["t_qv_ms"].items()}
        Path(args.out).write_text(json.dumps({"costs": costs_json, "o_0": o_0, "rows": rows}, indent=1))
    return 1 if summary(t_start) else 0


if __name__ == "__main__":
    sys.exit(main())

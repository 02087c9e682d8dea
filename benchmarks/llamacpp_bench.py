"""The theory against llama.cpp, on the same pair: predicted vs delivered speedup, and α vs ours.

Run from the repository root (builds llama-server first if needed, ~5 min on 2 cores)::

    python benchmarks/llamacpp_bench.py               # K = 1..8, 4 prompts × 3 repeats × 256 tokens
    python benchmarks/llamacpp_bench.py --ks 2,4 --prompts 2 --repeats 1   # smoke run

The bundled pair is exported to GGUF (:mod:`specviz.models.gguf`) and served by llama.cpp's
llama-server on loopback, one server per configuration, ``--threads`` threads each, one slot:

1. target only (no draft): the server's decode time per token (``timings.predicted_ms /
   predicted_n``) on each prompt → T_p, and its tokens/s per prompt (the baseline);
2. draft only (the draft GGUF served alone): its step T_d, the same way; c = T_p / T_d.
   The forwards alone, timed by llama.cpp's own llama-bench at a context of ``--depth`` tokens:
   the target over 1 token (T_t) and over K + 1 tokens (T_verify(K + 1)), the draft over 1 (T_q).
   The server's baseline step T_p is T_t plus its per-step work (sampling, slot, HTTP), which a
   speculative round pays once, as a baseline step does: v = (T_verify − T_t) / (K · T_p), so that
   a round costs T_verify + K · T_d + (T_p − T_t) = T_p (1 + v·K + K / c). (Also printed: the
   prediction with c = T_p / T_q, the draft's bare forward.)
3. for each K: the pair with ``--spec-type draft-simple --spec-draft-n-max K --spec-draft-n-min K
   --spec-draft-p-min 0`` (K fixed), greedy; its E[N] from /metrics (1 + Δaccepted / Δdrafts over
   the K's runs) and its decode tokens/s per prompt (``timings.predicted_per_second``).
   measured S = median over prompts of (spec tokens/s ÷ target-only tokens/s);
   each prompt's baseline and speculative runs interleaved (a target-only server runs beside the
   K's server), so that drift of the machine hits both;
   predicted S = E[N] / (1 + v·K + o + K / c) (:func:`specviz.theory.speedup_from_tokens`)
   from llama.cpp's own E[N], c and v (none of them taken from these speculative runs' timings)
   and its per-round overhead o, in T_p, calibrated once before the K loop: the same measurement
   at K = ``--calibrate-k`` on ``--calibration-prompts`` other prompts gives o = E[N] / S − (1 + v·K
   + K / c) there (the work a round does beyond one verify, K draft steps and one baseline step's
   server work: the draft catching up on the accepted tokens, sampling K + 1 positions, switching
   between the two models). The prediction with o = 0 is printed beside it.      [±15 % at every K]
4. α: llama.cpp's (from its E[N] at K) vs our engine's on the same prompts, greedy
   (:func:`specviz.bench.run_cell`, α from its E[N] the same way)                 [±0.03 at every K]
5. (figure, no target) tokens/s of our engine and of llama.cpp on the same pair and CPU:
   target only, and speculative at each one's best K.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from _report import machine_line, record, summary

from specviz import bench, theory
from specviz.engines import llamacpp, read_llamacpp, window
from specviz.models import ByteTokenizer, load_pair
from specviz.models.gguf import export_pair_gguf


def decode_runs(url: str, prompts: list[list[int]], new: int, repeats: int) -> list[list[dict]]:
    """``timings`` of every (prompt, repeat) completion: [prompt][repeat]."""
    return [[llamacpp.complete(url, p, new)["timings"] for _ in range(repeats)] for p in prompts]


def per_token_ms(runs: list[list[dict]]) -> float:
    """Median decode milliseconds per token over every run."""
    return statistics.median(t["predicted_ms"] / t["predicted_n"] for prompt in runs for t in prompt)


def tokens_per_s(runs: list[list[dict]]) -> list[float]:
    """Per prompt: the median over repeats of llama.cpp's decode tokens/s."""
    return [statistics.median(t["predicted_per_second"] for t in prompt) for prompt in runs]


def forward_ms(bench_bin: Path, gguf: Path, n_prompt: str, n_gen: int, depth: int, threads: int, reps: int) -> dict:
    """llama-bench's median forward times (ms) at a context of ``depth``: {"pp", n} for a batch of n prompt
    tokens (``n_prompt`` a comma list), {"tg": ms} per generated token (``n_gen`` > 0)."""
    cmd = [str(bench_bin), "-m", str(gguf), "-p", n_prompt, "-n", str(n_gen), "-d", str(depth)]
    cmd += ["-r", str(reps), "-t", str(threads), "-o", "json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    out = {}
    for test in json.loads(done.stdout):
        ms = statistics.median(test["samples_ns"]) / 1e6
        if test["n_gen"]:
            out["tg"] = ms / test["n_gen"]
        else:
            out[("pp", test["n_prompt"])] = ms
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ks", default="1,2,3,4,5,6,7,8")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument(
        "--threads", type=int, default=1, help="threads of llama.cpp and of torch (1: no contention with the client)"
    )
    ap.add_argument("--depth", type=int, default=256, help="context of llama-bench's timed forwards")
    ap.add_argument("--bench-repeats", type=int, default=20)
    ap.add_argument("--out", default=None, help="write the per-K table as JSON here")
    ap.add_argument(
        "--calibrate-k",
        type=int,
        default=4,
        help="measure llama.cpp's per-round overhead o at this K on other prompts first (0: o = 0)",
    )
    ap.add_argument("--calibration-prompts", type=int, default=2, help="prompts for the calibration (after the others)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    ks = [int(k) for k in args.ks.split(",")]
    binary = llamacpp.find_binary(build=True)
    if binary is None or not (binary.parent / "llama-bench").is_file():
        print("llama-server could not be built (scripts/build-llama-server); nothing to compare", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    print(machine_line(f"torch {torch.__version__}, {args.threads} threads for both engines | {binary}"))
    tok = ByteTokenizer()
    texts_all = bench.load_prompts()
    texts = texts_all[: args.prompts]
    ids = [tok.encode(t) for t in texts]
    work = Path(tempfile.mkdtemp(prefix="specviz-llamacpp-"))
    target_gguf, draft_gguf = export_pair_gguf("bundled", work)
    serve = dict(log_dir=work, threads=args.threads)

    bench_bin = binary.parent / "llama-bench"
    reps = str(args.bench_repeats)

    target, draft, _ = load_pair("bundled")
    prompts_t = [torch.tensor(i, dtype=torch.long) for i in ids]
    rows, all_base = [], []

    def measure_k(k: int, prompts: list[list[int]], base_url: str, o: float = 0.0) -> tuple[dict, list]:
        """llama.cpp at K on ``prompts``: its costs measured next to its runs, E[N], the measured S and
        the predicted S (with per-round overhead ``o``, in T_p; and with o = 0); and the baseline runs."""
        tgt = forward_ms(bench_bin, target_gguf, str(k + 1), 16, args.depth, args.threads, reps)
        t_q = forward_ms(bench_bin, draft_gguf, "1", 16, args.depth, args.threads, reps)["tg"]
        with llamacpp.serve(binary, draft_gguf, None, 1, **serve) as d:
            decode_runs(d.url, prompts[:1], 16, 1)  # warm-up
            t_d = per_token_ms(decode_runs(d.url, prompts[:2], args.new_tokens // 2, 2))
        with llamacpp.serve(binary, target_gguf, draft_gguf, k, **serve) as s:
            decode_runs(s.url, prompts[:1], 16, 1)  # warm-up, before the window opens
            before = read_llamacpp(llamacpp.metrics_text(s.url))
            base_runs, spec_runs = [], []
            for p in prompts:  # baseline and speculative runs of each prompt interleaved, so drift hits both
                b, r = [], []
                for _ in range(args.repeats):
                    b.append(llamacpp.complete(base_url, p, args.new_tokens)["timings"])
                    r.append(llamacpp.complete(s.url, p, args.new_tokens)["timings"])
                base_runs.append(b)
                spec_runs.append(r)
            w = window(before, read_llamacpp(llamacpp.metrics_text(s.url)))
        t_p, t_t = per_token_ms(base_runs), tgt["tg"]
        c, c_fwd = t_p / t_d, t_p / t_q
        mean = min(w.mean_acceptance_length, k + 1.0)
        v = max((tgt[("pp", k + 1)] - t_t) / (k * t_p), 0.0)
        measured = statistics.median(
            a / b for a, b in zip(tokens_per_s(spec_runs), tokens_per_s(base_runs), strict=True)
        )
        row = dict(
            k=k,
            mean_llama=mean,
            alpha_llama=float(theory.alpha_from_mean_tokens(mean, k)),
            t_p_ms=t_p,
            c=c,
            v=v,
            o=o,
            measured=measured,
            predicted=float(theory.speedup_from_tokens(mean, c, k, v, o)),
            predicted_o0=float(theory.speedup_from_tokens(mean, c, k, v)),
            predicted_forward_c=float(theory.speedup_from_tokens(mean, c_fwd, k, v, o)),
            round_predicted_o0=1 + v * k + k / c,
            t_t_ms=t_t,
            t_verify_ms=tgt[("pp", k + 1)],
            t_d_ms=t_d,
            t_q_ms=t_q,
            c_forward=c_fwd,
            llama_tps=statistics.median(tokens_per_s(spec_runs)),
            llama_base_tps=statistics.median(tokens_per_s(base_runs)),
        )
        return row, base_runs

    with llamacpp.serve(binary, target_gguf, None, 1, **serve) as base:
        decode_runs(base.url, ids[:1], 16, 1)  # warm-up
        o = 0.0
        if args.calibrate_k:
            cal_ids = [tok.encode(t) for t in texts_all[args.prompts : args.prompts + args.calibration_prompts]]
            if len(cal_ids) < max(args.calibration_prompts, 1):
                print(
                    f"--prompts {args.prompts} + --calibration-prompts {args.calibration_prompts} needs that many "
                    f"prompts; there are {len(texts_all)}",
                    file=sys.stderr,
                )
                return 2
            cal = measure_k(args.calibrate_k, cal_ids, base.url)[0]
            o = max(cal["mean_llama"] / cal["measured"] - cal["round_predicted_o0"], 0.0)
            print(
                f"calibration: K = {args.calibrate_k} on {len(cal_ids)} other prompts: round measured "
                f"{cal['mean_llama'] / cal['measured']:.3f} T_p, predicted with o = 0 {cal['round_predicted_o0']:.3f} "
                f"T_p, so o = {o:.3f} T_p ({o * cal['t_p_ms']:.3f} ms) per round"
            )
        print(
            f"\n{'K':>2} {'T_p':>6} {'T_t':>6} {'T_v':>6} {'T_d':>6} {'T_q':>6} {'E[N] llama':>10} {'α llama':>8} "
            f"{'α ours':>7} {'c':>6} {'v':>6} {'round meas':>10} "
            f"{'round pred':>10} {'S meas':>7} {'S pred':>7} {'pred/meas':>9} {'(o = 0)':>8} {'(c fwd)':>8}"
        )
        for k in ks:
            row, base_runs = measure_k(k, ids, base.url, o)
            ours = bench.run_cell(target, draft, prompts_t, k, 0.0, args.new_tokens, 1)
            row.update(
                alpha_ours=float(theory.alpha_from_mean_tokens(ours["mean_accepted_tokens"], k)),
                ours_tps=ours["tokens_per_s"],
                ours_base_tps=ours["baseline_tokens_per_s"],
                ours_speedup=ours["speedup"],
            )
            rows.append(row)
            all_base += base_runs
            mean, measured, predicted = row["mean_llama"], row["measured"], row["predicted"]
            print(
                f"{k:>2} {row['t_p_ms']:>6.3f} {row['t_t_ms']:>6.3f} {row['t_verify_ms']:>6.3f} {row['t_d_ms']:>6.3f} "
                f"{row['t_q_ms']:>6.3f} {mean:>10.3f} {row['alpha_llama']:>8.3f} {row['alpha_ours']:>7.3f} "
                f"{row['c']:>6.1f} {row['v']:>6.3f} {mean / measured:>10.3f} {mean / predicted:>10.3f} "
                f"{measured:>7.2f} {predicted:>7.2f} {predicted / measured:>9.3f} "
                f"{row['predicted_o0'] / measured:>8.3f} {row['predicted_forward_c'] / measured:>8.3f}"
                + ("  (o calibrated at this K, on other prompts)" if k == args.calibrate_k else "")
            )
    t_p = per_token_ms(all_base)
    base_tps = [t["predicted_per_second"] for p in all_base for t in p]
    print(
        "(round: the cost of one round in baseline steps T_p; measured = E[N] / S, predicted = 1 + v·K + o + K / c, "
        "c = T_p / T_d, the draft-only server's step; (o = 0): pred/meas without the overhead; (c fwd): pred/meas "
        "with c = T_p / T_q, llama-bench's draft "
        "forward; times in ms, each K's measured next to its runs; "
        f"T_p over all baseline runs {t_p:.3f} ms)"
    )

    worst = max(rows, key=lambda r: abs(r["predicted"] / r["measured"] - 1.0))
    err = worst["predicted"] / worst["measured"] - 1.0
    record("predicted / measured S, worst K", f"{err:+.1%} (K = {worst['k']})", "within ±15 %", abs(err) <= 0.15)
    gap = max(rows, key=lambda r: abs(r["alpha_llama"] - r["alpha_ours"]))
    d = gap["alpha_llama"] - gap["alpha_ours"]
    record("α llama.cpp − α ours, worst K", f"{d:+.4f} (K = {gap['k']})", "within ±0.03", abs(d) <= 0.03)
    best_l = max(rows, key=lambda r: r["measured"])
    best_o = max(rows, key=lambda r: r["ours_speedup"])
    base_ours = statistics.median(r["ours_base_tps"] for r in rows)
    print(
        f"\ntokens/s on this CPU, same pair: target only — llama.cpp {statistics.median(base_tps):.0f}, "
        f"ours {base_ours:.0f}; speculative at the best K — llama.cpp {best_l['llama_tps']:.0f} "
        f"(K = {best_l['k']}), ours {best_o['ours_tps']:.0f} (K = {best_o['k']})"
    )
    record(
        "tokens/s ours ÷ llama.cpp (target only / best spec)",
        f"{base_ours / statistics.median(base_tps):.2f} / {best_o['ours_tps'] / best_l['llama_tps']:.2f}",
        "(figure)",
        None,
    )
    if args.out:
        Path(args.out).write_text(json.dumps({"t_p_ms": t_p, "o": o, "rows": rows}, indent=1))
    return 1 if summary(t_start) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The theory against llama.cpp, on the same pair: predicted vs delivered speedup, and α vs ours.

Run from the repository root (builds llama-server first if needed, ~5 min on 2 cores)::

    python benchmarks/llamacpp_bench.py               # K = 1..8, 4 prompts × 2 repeats × 128 tokens
    python benchmarks/llamacpp_bench.py --ks 2,4 --prompts 2 --repeats 1   # smoke run

The bundled pair is exported to GGUF (:mod:`specviz.models.gguf`) and served by llama.cpp's
llama-server on loopback, one server per configuration, ``--threads`` threads each, one slot:

1. target only (no draft) and draft only (the draft GGUF as the model): llama.cpp's decode time
   per token (``timings.predicted_ms / predicted_n``) on each prompt → T_target, T_draft and
   c = T_target / T_draft;
2. the verify cost: with the prompt cached, the target forward over K + 1 more prompt tokens
   (``timings.prompt_ms``) → T_verify(K + 1) and v = (T_verify / T_target − 1) / K;
3. for each K: the pair with ``--spec-type draft-simple --spec-draft-n-max K --spec-draft-n-min K
   --spec-draft-p-min 0`` (K fixed), greedy; its E[N] from /metrics (1 + Δaccepted / Δdrafts over
   the K's runs) and its decode tokens/s per prompt (``timings.predicted_per_second``).
   measured S = median over prompts of (spec tokens/s ÷ target-only tokens/s);
   predicted S = E[N] / (1 + v·K + K / c) (:func:`specviz.theory.speedup_from_tokens`, o = 0)
   from llama.cpp's own E[N], c and v                                              [±15 % at every K]
4. α: llama.cpp's (from its E[N] at K) vs our engine's on the same prompts, greedy
   (:func:`specviz.bench.run_cell`, α from its E[N] the same way)                 [±0.03 at every K]
5. (figure, no target) tokens/s of our engine and of llama.cpp on the same pair and CPU:
   target only, and speculative at each one's best K.
"""

from __future__ import annotations

import argparse
import json
import statistics
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


def verify_ms(url: str, prompt: list[int], k: int, repeats: int) -> float:
    """Median ms of one target forward over k + 1 tokens after ``prompt`` (cached): the verify step's shape."""
    body = {"prompt": prompt, "n_predict": 1, "temperature": 0.0, "cache_prompt": True}
    times = []
    for r in range(repeats + 1):
        llamacpp.complete_raw(url, body)  # cache the prompt
        extra = prompt + [ord(ch) for ch in "    return x\n"][: k + 1]
        t = llamacpp.complete_raw(url, {**body, "prompt": extra})["timings"]
        if r and t["prompt_n"] == k + 1:  # first pair warms up
            times.append(t["prompt_ms"])
    if not times:
        raise RuntimeError(f"llama-server did not reuse the cached prompt (prompt_n != {k + 1})")
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ks", default="1,2,3,4,5,6,7,8")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the per-K table as JSON here")
    args = ap.parse_args()
    t_start = time.perf_counter()
    ks = [int(k) for k in args.ks.split(",")]
    binary = llamacpp.find_binary(build=True)
    if binary is None:
        print("llama-server could not be built (scripts/build-llama-server); nothing to compare", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    print(machine_line(f"torch {torch.__version__}, {args.threads} threads for both engines | {binary}"))
    tok = ByteTokenizer()
    texts = bench.load_prompts()[: args.prompts]
    ids = [tok.encode(t) for t in texts]
    work = Path(tempfile.mkdtemp(prefix="specviz-llamacpp-"))
    target_gguf, draft_gguf = export_pair_gguf("bundled", work)
    serve = dict(log_dir=work, threads=args.threads)

    with llamacpp.serve(binary, target_gguf, None, 1, **serve) as s:
        base_runs = decode_runs(s.url, ids, args.new_tokens, args.repeats)
        v_ms = {k: verify_ms(s.url, ids[0], k, args.repeats) for k in ks}
    with llamacpp.serve(binary, draft_gguf, None, 1, **serve) as s:
        draft_runs = decode_runs(s.url, ids, args.new_tokens, args.repeats)
    t_target, t_draft = per_token_ms(base_runs), per_token_ms(draft_runs)
    c = t_target / t_draft
    base_tps = tokens_per_s(base_runs)
    print(f"llama.cpp: T_target {t_target:.3f} ms, T_draft {t_draft:.3f} ms, c = {c:.2f}")

    target, draft, _ = load_pair("bundled")
    prompts_t = [torch.tensor(i, dtype=torch.long) for i in ids]
    rows = []
    print(
        f"\n{'K':>2} {'E[N] llama':>10} {'α llama':>8} {'α ours':>7} {'v':>6} {'S meas':>7} {'S pred':>7} {'pred/meas':>9}"
    )
    for k in ks:
        with llamacpp.serve(binary, target_gguf, draft_gguf, k, **serve) as s:
            before = read_llamacpp(llamacpp.metrics_text(s.url))
            runs = decode_runs(s.url, ids, args.new_tokens, args.repeats)
            w = window(before, read_llamacpp(llamacpp.metrics_text(s.url)))
        mean = w.mean_acceptance_length
        v = max((v_ms[k] / t_target - 1.0) / k, 0.0)
        measured = statistics.median(a / b for a, b in zip(tokens_per_s(runs), base_tps, strict=True))
        predicted = float(theory.speedup_from_tokens(min(mean, k + 1.0), c, k, v))
        alpha_llama = float(theory.alpha_from_mean_tokens(min(mean, k + 1.0), k))
        ours = bench.run_cell(target, draft, prompts_t, k, 0.0, args.new_tokens, 1)
        alpha_ours = float(theory.alpha_from_mean_tokens(ours["mean_accepted_tokens"], k))
        row = dict(
            k=k,
            mean_llama=mean,
            alpha_llama=alpha_llama,
            alpha_ours=alpha_ours,
            v=v,
            measured=measured,
            predicted=predicted,
            llama_tps=statistics.median(tokens_per_s(runs)),
            ours_tps=ours["tokens_per_s"],
            ours_base_tps=ours["baseline_tokens_per_s"],
            ours_speedup=ours["speedup"],
        )
        rows.append(row)
        print(
            f"{k:>2} {mean:>10.3f} {alpha_llama:>8.3f} {alpha_ours:>7.3f} {v:>6.3f} {measured:>7.2f} "
            f"{predicted:>7.2f} {predicted / measured:>9.3f}"
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
        Path(args.out).write_text(
            json.dumps({"c": c, "t_target_ms": t_target, "t_draft_ms": t_draft, "rows": rows}, indent=1)
        )
    return 1 if summary(t_start) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmarks of the decoding engine (specviz.engine.decoding) and a comparison with transformers, with PASS/FAIL.

Run from the repository root::

    python benchmarks/engine_bench.py                 # bundled pair; exit 0 even if a target fails
    python benchmarks/engine_bench.py --strict        # exit 1 if any target fails
    python benchmarks/engine_bench.py --pair DIR --new-tokens 16 --prompts 2 --repeats 1 --ks 1,2   # smoke run

Checks (targets in brackets), on the first ``--prompts`` prompts of data/prompts/stdlib_validation.jsonl:

0. (no target; context) the linear-layer backend: median cached target forward over 1 and K + 1
   tokens with the oneDNN-packed weights our engine uses on the CPU versus plain ``F.linear``
   (MKL), same process, same weights. ``--no-onednn`` runs everything below with ``F.linear``.

1. our engine, greedy, every K of ``--ks`` (``specviz.engine.bench.run_cell``: per prompt × repeat a
   target-only run and a speculative run; speedup = ratio of their decode-loop tokens/s)
   a. best-K median speedup                                               [>= 2.0x]
   b. at the best K: measured / predicted (measured-cost model: α̂, c, v, o)  [within ±10 %]
      (the ratio is printed for every K; PASS/FAIL is on the best K only)
   c. greedy output identical to target-only in every cell                [all True]
2. the same at temperature 1 (``--ks-t1``, ``--repeats-t1``): best-K median speedup     [>= 1.5x]
3. transformers on the same weights (the pair exported with ``specviz.engine.models.hf.export_pair``
   and loaded with ``AutoModelForCausalLM``, same device and dtype, eval, local files only,
   ``trust_remote_code=False``), same prompt ids (the prompt's bytes), same number of new tokens.
   Every rate here is *whole-call* tokens/s = new tokens ÷ wall time of the complete call
   (transformers: ``generate`` including its prefill; ours: ``generate_target_only`` /
   ``speculative_generate`` including prefill, with its T_p/T_q calibration steps switched off
   via ``calibration_steps=0``). Ratios are per prompt (median times over repeats), then
   the median over prompts.
   a. ours target-only vs ``generate(do_sample=False)``                   [>= 1.0x]
   b. ours speculative (K = best greedy K) vs assisted generation
      (i) ``num_assistant_tokens = K``, schedule ``"constant"``, confidence threshold 0
          (so that it drafts exactly K tokens every round, like ours)    [>= 1.5x]
      (ii) transformers' defaults                                       [>= 1.5x]
   c. the same at temperature 1: ``do_sample=True, temperature=1.0, top_k=0, top_p=1.0``
      (precondition checked: no logits warper is active)                 [>= 1.5x for (i) and (ii)]
   d. greedy cross-check: transformers generate, assisted (i) and (ii), our target-only and our
      speculative outputs identical token for token for every prompt   [all identical]

Defaults (4 prompts × 3 repeats × 128 tokens, K in 1,2,3,4,5,6,8; 2 repeats at T = 1) keep the
run to about 3 minutes on a quiet 2-core CPU with the bundled pair (≈ 3 ms per target step).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter

import numpy as np
import torch
from _report import fmt_s, machine_line, median_time, record, summary

from specviz.core import configs
from specviz.engine import bench, decoding
from specviz.engine.models import gpt, load_pair, packed, resolve_device

SEED = 0
SPEEDUP_T0 = 2.0
SPEEDUP_T1 = 1.5
PRED_TOL = 0.10
HF_BASELINE = 1.0
HF_ASSISTED = 1.5


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"K list must be comma-separated integers; got {text!r}") from None
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError(f"K list must hold integers >= 1; got {text!r}")
    return ks


# --------------------------------------------------------------------------------------
# 1, 2: our engine over K
# --------------------------------------------------------------------------------------

HEADER = (
    f"    {'K':>3} {'α̂':>6} {'α̂_ovl':>6} {'E[N]':>5} {'c':>6} {'v':>6} {'o':>6} "
    f"{'speedup [min..max]':>22} {'pred':>6} {'pred_mc':>7} {'meas/mc':>7} {'tok/s':>7} {'base':>7} exact"
)


def _row_line(r: dict) -> str:
    ratio = r["speedup_vs_predicted"]
    exact = "-" if r["greedy_exact"] is None else str(r["greedy_exact"])
    span = f"{r['speedup']:.2f}x [{r['speedup_min']:.2f}..{r['speedup_max']:.2f}]"
    return (
        f"    {r['k']:>3} {r['alpha']:>6.3f} {r['alpha_overlap']:>6.3f} {r['mean_accepted_tokens']:>5.2f} "
        f"{r['c']:>6.2f} {r['v']:>6.3f} {r['o']:>6.3f} {span:>22} {r['predicted_speedup_basic']:>6.2f} "
        f"{r['predicted_speedup_measured_cost']:>7.2f} {ratio:>7.3f} {r['tokens_per_s']:>7.0f} "
        f"{r['baseline_tokens_per_s']:>7.0f} {exact}"
    )


def engine_section(label: str, target, draft, prompts, ks, temperature, new_tokens, repeats) -> list[dict]:
    t0 = time.perf_counter()
    print(
        f"\n[{label}] our engine, T = {temperature:g}: specviz.engine.bench.run_cell over K = {','.join(map(str, ks))}; "
        f"{len(prompts)} prompts × {repeats} repeats × {new_tokens} new tokens per cell"
    )
    print(
        "    speedup = speculative / target-only decode-loop tokens/s (prefill excluded), median over runs; "
        "pred = basic model at (α̂, c); pred_mc = measured-cost model at the pooled (α̂, c, v, o); meas/mc = median over runs of each run's speedup ÷ its own measured-cost prediction; "
        "tok/s, base = median speculative / target-only tokens/s"
    )
    print(HEADER, flush=True)
    rows = []
    for k in ks:
        r = bench.run_cell(target, draft, prompts, k, temperature, new_tokens, repeats, seed=SEED)
        rows.append(r)
        print(_row_line(r), flush=True)
    first = rows[0]
    print(
        f"    T_target {first['t_target_ms']:.2f} ms/step, T_draft {first['t_draft_ms']:.2f} ms/step (medians, "
        f"K={first['k']} cell); section time {time.perf_counter() - t0:.1f} s"
    )
    return rows


def check_engine(rows0: list[dict], rows1: list[dict]) -> int:
    best = max(rows0, key=lambda r: r["speedup"])
    ratio = best["speedup_vs_predicted"]
    print(
        f"\n    greedy: best K = {best['k']}: speedup {best['speedup']:.2f}x "
        f"[{best['speedup_min']:.2f}..{best['speedup_max']:.2f}], measured-cost prediction "
        f"{best['predicted_speedup_measured_cost']:.2f}x, ratio {ratio:.3f}"
    )
    record(
        f"1a greedy best-K speedup (K={best['k']})",
        f"{best['speedup']:.2f}x",
        f">= {SPEEDUP_T0:.1f}x",
        best["speedup"] >= SPEEDUP_T0,
    )
    record(
        f"1b measured/predicted_mc at best K={best['k']}",
        f"{ratio:.3f}",
        f"{1 - PRED_TOL:.2f}..{1 + PRED_TOL:.2f}",
        abs(ratio - 1) <= PRED_TOL,
    )
    bad = [r["k"] for r in rows0 if not r["greedy_exact"]]
    record(
        "1c greedy_exact in every cell",
        "all True" if not bad else f"False at K={','.join(map(str, bad))}",
        "all True",
        not bad,
    )
    if rows1:
        best1 = max(rows1, key=lambda r: r["speedup"])
        print(
            f"    T=1: best K = {best1['k']}: speedup {best1['speedup']:.2f}x "
            f"[{best1['speedup_min']:.2f}..{best1['speedup_max']:.2f}], ratio to measured-cost prediction "
            f"{best1['speedup_vs_predicted']:.3f}"
        )
        record(
            f"2 T=1 best-K speedup (K={best1['k']})",
            f"{best1['speedup']:.2f}x",
            f">= {SPEEDUP_T1:.1f}x",
            best1["speedup"] >= SPEEDUP_T1,
        )
    return int(best["k"])


# --------------------------------------------------------------------------------------
# 3: transformers
# --------------------------------------------------------------------------------------


class _InputLengths:
    """Forward pre-hook recording how many tokens each forward of a model receives."""

    def __init__(self, model):
        self.lengths: list[int] = []
        self.handle = model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None:
            self.lengths.append(int(ids.shape[1]))

    def remove(self) -> list[int]:
        self.handle.remove()
        return self.lengths


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _timed_runs(fn, repeats: int) -> tuple[float, list[float], list[torch.Tensor]]:
    """median_time over ``repeats`` calls of ``fn(r)`` (r = 0, 1, ...; no warm-up here), keeping the outputs."""
    outs: list[torch.Tensor] = []
    med, times = median_time(lambda: outs.append(fn(len(outs))), repeats=repeats, warmup=0)
    return med, times, outs


def _first_diff(a: list[int], b: list[int]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def hf_section(args, target, draft, prompts: list[torch.Tensor], k: int) -> None:
    print(f"\n[3] transformers on the same weights, K = {k} (best greedy K of check 1)")
    if args.skip_hf:
        print("    skipped (--skip-hf)")
        record("3 transformers comparisons", "--skip-hf", "-", None)
        return
    if "," in args.pair:
        print("    skipped: the pair is already a transformers pair (nothing to export)")
        record("3 transformers comparisons", "HF pair given", "-", None)
        return
    try:
        import transformers
        from transformers import AutoModelForCausalLM
    except ImportError:
        print("    skipped: transformers is not installed (pip install -r requirements-dev.txt)")
        record("3 transformers comparisons", "transformers not installed", "-", None)
        return
    from specviz.engine.models import hf

    transformers.utils.logging.disable_progress_bar()  # "Writing model shards", "Loading weights"
    try:
        import sklearn  # noqa: F401  (transformers adapts the assistant's confidence threshold with it)

        has_sklearn = True
    except ImportError:
        has_sklearn = False

    t_sec = time.perf_counter()
    device, dtype = target.device, target.dtype
    n = args.new_tokens
    with tempfile.TemporaryDirectory(prefix="specviz_engine_bench_") as tmp:
        t0 = time.perf_counter()
        hf.export_pair(args.pair, tmp)

        def load(part: str):
            model = AutoModelForCausalLM.from_pretrained(
                f"{tmp}/{part}",
                dtype=torch.float32,
                local_files_only=True,
                trust_remote_code=False,
                use_safetensors=True,
            )
            return model.to(device=device, dtype=dtype).eval()

        hf_t = load("target")
        hf_d_k, hf_d_def = load("draft"), load("draft")  # one draft per assistant setting: each has its own config
        print(
            f"    exported and loaded in {time.perf_counter() - t0:.1f} s: transformers {transformers.__version__}, "
            f"{type(hf_t).__name__} ({hf_t.config._attn_implementation} attention), {str(dtype).removeprefix('torch.')} "
            f"on {device}; eos_token_id {hf_t.generation_config.eos_token_id} (so exactly N tokens are generated)"
        )

        # (i): the assistant's generation_config is what AssistedCandidateGenerator reads (a deep copy of
        # assistant_model.generation_config); generate(num_assistant_tokens=...) would only set the *main*
        # config and be ignored. Threshold 0 disables ConfidenceCriteria, so every round drafts exactly K.
        hf_d_k.generation_config.update(**configs.transformers.assistant_config(k))
        defaults = type(hf_d_def.generation_config)._get_default_generation_params()
        own = hf_d_def.generation_config
        eff = {
            key: getattr(own, key) if getattr(own, key) is not None else defaults[key]
            for key in ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")
        }
        print(f"    assisted (i): num_assistant_tokens={k}, schedule='constant', assistant_confidence_threshold=0")
        print(
            "    assisted (ii) transformers defaults: "
            + ", ".join(f"{a}={b!r}" for a, b in eff.items())
            + (
                " (adapted per round: scikit-learn is installed)"
                if has_sklearn
                else " (threshold fixed: scikit-learn is not installed)"
            )
        )

        ids_of = [p.to(device)[None] for p in prompts]

        def hf_gen(model, ids, seed=None, **kw):
            if seed is not None:
                torch.manual_seed(seed)
            with torch.inference_mode():
                out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, **kw)
            tokens = out[0, ids.shape[1] :].cpu()
            if tokens.numel() != n:
                raise RuntimeError(f"transformers generated {tokens.numel()} tokens, not {n}")
            return tokens

        def gen_ours(prompt, k_, temp, seed):
            g = torch.Generator(device).manual_seed(seed)
            if k_ == 0:
                return decoding.generate_target_only(target, prompt, n, temp, g)
            return decoding.speculative_generate(target, draft, prompt, k_, temp, n, g, calibration_steps=0)

        greedy = {"do_sample": False}
        t1 = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
        methods = {  # name -> fn(prompt index, repeat) -> tokens
            "hf generate": lambda i, r: hf_gen(hf_t, ids_of[i], **greedy),
            "ours target-only": lambda i, r: gen_ours(prompts[i], 0, 0.0, 0)[0],
            "hf assisted (i)": lambda i, r: hf_gen(
                hf_t, ids_of[i], **configs.transformers.generate_kwargs(hf_d_k), **greedy
            ),
            "hf assisted (ii)": lambda i, r: hf_gen(
                hf_t, ids_of[i], **configs.transformers.generate_kwargs(hf_d_def), **greedy
            ),
            "ours speculative": lambda i, r: gen_ours(prompts[i], k, 0.0, 0)[0],
            "hf assisted (i) T=1": lambda i, r: hf_gen(
                hf_t, ids_of[i], SEED + 1000 * i + r, **configs.transformers.generate_kwargs(hf_d_k), **t1
            ),
            "hf assisted (ii) T=1": lambda i, r: hf_gen(
                hf_t, ids_of[i], SEED + 1000 * i + r, **configs.transformers.generate_kwargs(hf_d_def), **t1
            ),
            "ours speculative T=1": lambda i, r: gen_ours(prompts[i], k, 1.0, SEED + 1000 * i + r)[0],
        }

        # precondition of 3c: with these flags transformers applies no logits warper (scores == raw logits)
        with torch.inference_mode():
            o = hf_t.generate(
                ids_of[0],
                attention_mask=torch.ones_like(ids_of[0]),
                max_new_tokens=2,
                return_dict_in_generate=True,
                output_scores=True,
                output_logits=True,
                **t1,
            )
        unfiltered = all(torch.equal(s, lg) for s, lg in zip(o.scores, o.logits, strict=True))
        print(f"    T=1 flags {t1}: processed scores == raw logits: {unfiltered} (5.24 defaults would apply top_k=50)")
        record("3c precondition: no top-k/top-p at T=1", str(unfiltered), "True", unfiltered)

        # warm-ups: one full call of each method; then one more untimed assisted call of each setting,
        # recording how many tokens each target forward verified (the schedule must stay constant for (i))
        t0 = time.perf_counter()
        for fn in methods.values():
            fn(0, 0)
        print(
            f"    warm-up: one full call of each method, prompt 0 ({time.perf_counter() - t0:.1f} s); a '[transformers] "
            "Passing `generation_config` together with ...' warning comes from transformers' own call of the "
            "assistant's generate and is harmless"
        )
        for name, draft_model in (("(i)", hf_d_k), ("(ii)", hf_d_def)):
            for label, kw in (("greedy", greedy), ("T=1", t1)):
                hook = _InputLengths(hf_t)
                hf_gen(hf_t, ids_of[0], SEED, **configs.transformers.generate_kwargs(draft_model), **kw)
                lengths = hook.remove()
                rounds = lengths[1:]  # the first forward is the prefill: prompt + the first drafts
                drafted = [lengths[0] - prompts[0].numel()] + [m - 1 for m in rounds]
                hist = Counter(drafted)
                line = (
                    f"    assisted {name} {label}, prompt 0: {len(lengths)} target forwards, drafts per round "
                    f"{dict(sorted(hist.items()))}, mean {np.mean(drafted):.2f}; tokens per round "
                    f"{n / len(lengths):.2f}"
                )
                if name == "(i)":
                    first_short = next((j for j, d in enumerate(drafted) if d != k), len(drafted))
                    tail = drafted[first_short:]
                    constant = all(d <= k for d in tail) and tail == sorted(tail, reverse=True)
                    line += f"; K constant until the max-length cap: {constant}"
                    if label == "greedy":
                        record(f"3b assisted (i) drafts K={k} every round", str(constant), "True", constant)
                print(line)

        # timed runs: per prompt, each method `repeats` times back to back (median_time, warmup=0)
        print(
            f"    timing: whole-call wall time (prefill included) ÷ {n} tokens; {len(prompts)} prompts × "
            f"{args.repeats} repeats per method, median per prompt"
        )
        times: dict[str, list[float]] = {m: [] for m in methods}
        outputs: dict[str, list[list[int]]] = {m: [] for m in methods}
        for i in range(len(prompts)):
            for name, fn in methods.items():
                med, _, outs = _timed_runs(lambda r, fn=fn, i=i: fn(i, r), args.repeats)
                times[name].append(med)
                outputs[name].append(outs[0].tolist())
            print(f"    prompt {i}: " + ", ".join(f"{m} {fmt_s(times[m][i])}" for m in methods), flush=True)

        # decode-loop rates of ours, for context (what check 1 measures)
        loop_rates = {
            "ours target-only": statistics.median(gen_ours(p, 0, 0.0, 0)[1].tokens_per_s for p in prompts),
            "ours speculative": statistics.median(gen_ours(p, k, 0.0, 0)[1].tokens_per_s for p in prompts),
        }

    print(f"\n    {'method':<22} {'tok/s (median over prompts, whole call)':>40}")
    for name in methods:
        extra = f"   (decode loop only: {loop_rates[name]:.0f} tok/s)" if name in loop_rates else ""
        print(f"    {name:<22} {n / statistics.median(times[name]):>40.0f}{extra}")

    def compare(check: str, ours: str, theirs: str, goal: float) -> None:
        ratios = [t / o for o, t in zip(times[ours], times[theirs], strict=True)]  # ours tok/s ÷ theirs tok/s
        med = statistics.median(ratios)
        print(
            f"    {ours} / {theirs}: {med:.2f}x [{min(ratios):.2f}..{max(ratios):.2f}] "
            f"(per prompt: {', '.join(f'{x:.2f}' for x in ratios)})"
        )
        record(f"{check} {ours} / {theirs}", f"{med:.2f}x", f">= {goal:.1f}x", med >= goal)

    print()
    compare("3a", "ours target-only", "hf generate", HF_BASELINE)
    compare("3b", "ours speculative", "hf assisted (i)", HF_ASSISTED)
    compare("3b", "ours speculative", "hf assisted (ii)", HF_ASSISTED)
    compare("3c", "ours speculative T=1", "hf assisted (i) T=1", HF_ASSISTED)
    compare("3c", "ours speculative T=1", "hf assisted (ii) T=1", HF_ASSISTED)
    print(
        "    context: ours speculative / hf generate (greedy): "
        f"{statistics.median(h / o for o, h in zip(times['ours speculative'], times['hf generate'], strict=False)):.2f}x"
    )

    # d: greedy cross-check
    names = ["hf generate", "hf assisted (i)", "hf assisted (ii)", "ours target-only", "ours speculative"]
    bad = []
    for i, prompt in enumerate(prompts):
        ref = outputs["ours target-only"][i]
        diffs = {m: _first_diff(outputs[m][i], ref) for m in names}
        diffs = {m: d for m, d in diffs.items() if d is not None}
        if not diffs:
            continue
        bad.append(i)
        j = min(diffs.values())
        with torch.inference_mode():
            seq = torch.cat([prompt, torch.tensor(ref, dtype=torch.long)]).to(device)
            logits = target(seq[None])[0, prompt.numel() - 1 + j].float()
        top2 = logits.topk(2).values
        print(
            f"    prompt {i}: differs from ours target-only at token {', '.join(f'{m} @{d}' for m, d in diffs.items())}"
            f"; our target's top-1/top-2 logit gap at token {j}: {float(top2[0] - top2[1]):.2e}"
        )
    print(
        f"    greedy cross-check ({', '.join(names)}): "
        + ("identical for every prompt" if not bad else f"differences in prompts {bad}")
    )
    record(
        "3d greedy outputs identical (5 ways)",
        f"{len(prompts) - len(bad)}/{len(prompts)} prompts",
        "all prompts",
        not bad,
    )
    print(f"    section time {time.perf_counter() - t_sec:.1f} s")


# --------------------------------------------------------------------------------------


@torch.inference_mode()
def _forward_ms(model, n_tokens: int, start: int = 200, steps: int = 40) -> float:
    """Median time of one cached forward over ``n_tokens`` tokens at position ``start``."""
    model.setup_cache(1, model.context_length)
    model(torch.zeros(1, start, dtype=torch.long, device=model.device), 0)
    block = torch.arange(n_tokens, device=model.device).view(1, -1)
    clock = decoding._Clock(model.device)
    times = []
    for i in range(steps + 5):
        t0 = clock.now()
        model(block, start)
        if i >= 5:
            times.append(clock.now() - t0)
    return 1e3 * statistics.median(times)


def backend_section(target, draft, k: int) -> None:
    """Print cached forward times with and without the oneDNN-packed linears (same weights, same run)."""
    print(
        f"\n[0] linear backend: median cached forward (ms), 1 token and K + 1 = {k + 1} tokens; "
        f"packing (specviz.engine.models.packed) applies to models with >= {packed.PACK_MIN_BYTES >> 20} MiB of fp32 "
        "linear weights"
    )
    for name, model in (("target", target), ("draft", draft)):
        if not isinstance(model, gpt.GPT):
            print(f"    {name}: not a specviz GPT (a transformers model): skipped")
            continue
        times = {"as used": (_forward_ms(model, 1), _forward_ms(model, k + 1))}
        holds = packed.holds_packs(model)
        packed.remove(model)  # plain nn.Linear, same weights
        try:
            times["F.linear"] = (_forward_ms(model, 1), _forward_ms(model, k + 1))
        finally:
            packed.apply(model)
        (a1, ak), (b1, bk) = times["as used"], times["F.linear"]
        print(
            f"    {name} ({'oneDNN packed' if holds else 'F.linear'} as used): 1 token {a1:.3f} vs F.linear "
            f"{b1:.3f} ({b1 / a1:.2f}x); {k + 1} tokens {ak:.3f} vs {bk:.3f} ({bk / ak:.2f}x)"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="bundled", help="'bundled', a folder with target/ and draft/, or 'TARGET,DRAFT'")
    ap.add_argument("--new-tokens", type=int, default=128, help="tokens generated per run")
    ap.add_argument("--prompts", type=int, default=4, help="how many benchmark prompts")
    ap.add_argument("--repeats", type=int, default=3, help="repeats per prompt (greedy and transformers)")
    ap.add_argument("--ks", type=_ks, default=[1, 2, 3, 4, 5, 6, 8], help="draft lengths, e.g. 1,2,3,4")
    ap.add_argument("--ks-t1", type=_ks, default=None, help="draft lengths at T = 1 (default: --ks)")
    ap.add_argument("--repeats-t1", type=int, default=2, help="repeats per prompt at T = 1 in check 2")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: leave torch's choice)")
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda[:N]")
    ap.add_argument("--skip-hf", action="store_true", help="skip the transformers comparisons")
    ap.add_argument(
        "--no-onednn",
        action="store_true",
        help="decode with F.linear everywhere (no oneDNN-packed weights), to see what they contribute",
    )
    ap.add_argument("--strict", action="store_true", help="exit 1 if any target fails")
    args = ap.parse_args(argv)
    if min(args.new_tokens, args.prompts, args.repeats, args.repeats_t1) < 1:
        ap.error("--new-tokens, --prompts, --repeats and --repeats-t1 must be >= 1")

    t_start = time.perf_counter()
    if args.no_onednn:
        packed.PACK_MIN_BYTES = float("inf")  # load_pair then leaves every nn.Linear as it is
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        import transformers

        hf_version = f"transformers {transformers.__version__}"
    except ImportError:
        hf_version = "transformers not installed"
    print(
        machine_line(
            f"torch threads: {torch.get_num_threads()} | torch {torch.__version__} | "
            f"numpy {np.__version__} | {hf_version}"
        )
    )
    try:
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
        if load > 0.5 * cores:
            print(
                f"note: the CPU is busy (load {load:.2f} on {cores} cores) before this run starts: timings will be "
                "slower and noisier than on a quiet machine (torch's intra-op threads suffer most; see --threads)"
            )
    except OSError:
        pass

    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        ap.error(str(exc))
    try:
        target, draft, tok = load_pair(args.pair, str(device))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    texts = bench.load_prompts()
    if args.prompts > len(texts):
        print(f"note: only {len(texts)} prompts in {bench.PROMPTS_FILE.name}; using all of them")
    prompts = [torch.tensor(tok.encode(t), dtype=torch.long) for t in texts[: args.prompts]]
    n_params = [sum(p.numel() for p in m.parameters()) for m in (target, draft)]
    print(
        f"specviz engine benchmark: pair {args.pair!r} ({n_params[0] / 1e6:.2f} M / {n_params[1] / 1e6:.2f} M "
        f"parameters), {bench.hardware_name(device)}, {str(target.dtype).removeprefix('torch.')}; "
        f"{len(prompts)} prompts of {', '.join(str(p.numel()) for p in prompts)} tokens; "
        f"{args.new_tokens} new tokens; seed {SEED}"
    )

    t0 = time.perf_counter()
    bench.warm_up(target, draft, prompts[0], k=max(args.ks))
    bench.warm_up(target, draft, prompts[0], k=min(args.ks))
    print(f"warm-up {time.perf_counter() - t0:.1f} s")
    if not args.no_onednn:
        backend_section(target, draft, max(args.ks))

    rows0 = engine_section("1", target, draft, prompts, args.ks, 0.0, args.new_tokens, args.repeats)
    rows1 = engine_section("2", target, draft, prompts, args.ks_t1 or args.ks, 1.0, args.new_tokens, args.repeats_t1)
    k_best = check_engine(rows0, rows1)

    try:
        hf_section(args, target, draft, prompts, k_best)
    except Exception as exc:
        import traceback

        traceback.print_exc()
        record("3 transformers comparisons", f"error: {type(exc).__name__}: {exc}"[:80], "runs", False)

    n_fail = summary(t_start)
    return 1 if (args.strict and n_fail) else 0


if __name__ == "__main__":
    sys.exit(main())

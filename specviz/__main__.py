"""Command line: ``python -m specviz bench|train|card|prompts|calibrate|gguf|predict ...``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from specviz.base.paths import DATA

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_PAIR_DIR = DATA / "models" / "bundled"


def _progress_factory(name: str, total: int):
    from tqdm import tqdm

    bar = tqdm(total=total, desc=f"train {name}", unit="step", dynamic_ncols=True)

    def update(step: int, bits: float) -> None:
        bar.n = step
        bar.set_postfix_str(f"train {bits:.3f} bits/byte", refresh=False)
        bar.refresh()
        if step >= total:
            bar.close()

    return update


def cmd_train(args: argparse.Namespace) -> int:
    from specviz.engine import card as model_card
    from specviz.engine import train

    common = dict(
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        seed=args.seed,
        precision=train.auto_precision(args.precision),
        micro_batches=args.micro_batches,
        eval_every=args.eval_every,
        warmup=args.warmup,
        min_lr=args.min_lr,
    )
    if args.unlikelihood_every and args.only != "target":
        raise ValueError(f"--unlikelihood-every {args.unlikelihood_every} needs --only target")
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    corpus = Path(args.corpus) if args.corpus else None
    if args.only:
        steps, lr = (args.target_steps, args.target_lr) if args.only == "target" else (args.draft_steps, args.draft_lr)
        cfg = train.TARGET if args.only == "target" else train.DRAFT
        tc = train.TrainConfig(steps=steps, lr=lr, **common)
        out, work, distil = Path(args.out), Path(args.work_dir), None
        if args.only == "draft" and args.teacher_windows:
            distil = train.DistilConfig(windows=args.teacher_windows, top_k=args.teacher_top_k)
            if not (out / "target" / "model.safetensors").is_file():
                raise ValueError(f"--teacher-windows needs the trained target in {out / 'target'}")
        progress = _progress_factory(args.only, steps)
        init = Path(args.init_from) if args.init_from else None
        ul = (
            train.UnlikelihoodConfig(every=args.unlikelihood_every, n=args.unlikelihood_n)
            if args.unlikelihood_every
            else None
        )
        record = train.train_one(args.only, cfg, tc, out, work, corpus, command, progress, distil, init, ul)
        curve = record["log"]["curve"]
        held_out = f", held-out {curve[-1][2]} bits/byte at step {curve[-1][0]}" if curve else ""
        print(f"saved {out / args.only}{held_out}")
        return 0
    target_tc = train.TrainConfig(steps=args.target_steps, lr=args.target_lr, **common)
    draft_tc = train.TrainConfig(steps=args.draft_steps, lr=args.draft_lr, **common)
    card = model_card.train_pair(
        Path(args.out),
        Path(args.work_dir),
        target_tc,
        draft_tc,
        corpus_root=corpus,
        command=command,
        progress_factory=_progress_factory,
        distil=train.DistilConfig(args.teacher_windows, args.teacher_top_k) if args.teacher_windows else None,
        extra=_text_quality,
    )
    print(
        f"saved {args.out}: target {card['target']['validation_bits_per_byte']} bits/byte, "
        f"draft {card['draft']['validation_bits_per_byte']} bits/byte, "
        f"alpha greedy {card['acceptance_on_validation']['alpha_greedy']}, "
        f"alpha T=1 {card['acceptance_on_validation']['alpha_t1']}, c {card['speed']['c']}"
    )
    return 0


def _text_quality(target, draft) -> dict:
    """The card's ``text_quality``: greedy continuations of the benchmark prompts (specviz.engine.bench)."""
    import torch

    from specviz.engine import bench
    from specviz.engine.models import ByteTokenizer

    prompts = [torch.tensor(ByteTokenizer().encode(p)) for p in bench.load_prompts()]
    return {"text_quality": bench.text_quality(target, prompts)}


def cmd_card(args: argparse.Namespace) -> int:
    from specviz.engine import card as model_card

    card = model_card.remeasure_card(Path(args.out), Path(args.corpus) if args.corpus else None, _text_quality)
    speed, acc = card["speed"], card["acceptance_on_validation"]
    print(
        f"rewrote {args.out}/README.md and card.json: T_target {speed['t_target_ms']} ms, "
        f"T_draft {speed['t_draft_ms']} ms, c {speed['c']}; alpha greedy {acc['alpha_greedy']}, "
        f"alpha T=1 {acc['alpha_t1']}; held-out bits/byte: target {card['target']['validation_bits_per_byte']}, "
        f"draft {card['draft']['validation_bits_per_byte']}; "
        f"distinct 4-grams {card['text_quality']['distinct_4gram_ratio']}"
    )
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    import torch

    from specviz.engine import calibrate
    from specviz.engine.models import BUNDLED_DIR
    from specviz.engine.models.gpt import GPT

    pair = Path(args.pair) if args.pair else BUNDLED_DIR
    models = {name: GPT.load(pair / name) for name in ("target", "draft")}
    torch.manual_seed(0)
    gpu, frame = calibrate.calibrate(
        models, args.batches, args.tokens, args.contexts, args.repeats, progress=lambda m: print(m, flush=True)
    )
    calibrate.write(gpu, frame, Path(args.out))
    err = calibrate.summary(frame)
    print(
        f"{gpu['name']}: bandwidth {gpu['bandwidth_tbs'] * 1e3:.1f} GB/s, fp32 matmul {gpu['fp32_tflops'] * 1e3:.0f} "
        f"GFLOP/s, overhead {gpu['overhead_s'] * 1e6:.0f} µs + {gpu['layer_overhead_s'] * 1e6:.0f} µs per layer"
    )
    print(
        "median |predicted / measured - 1|: "
        + ", ".join(f"{k} {v:.1%}" for k, v in err.items())
        + f"; wrote {args.out}/machine.json and steps.csv"
    )
    return 0


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers; got {text!r}") from None


def _ints(text: str) -> list[int]:
    values = _floats(text)
    if not values or any(v != int(v) or v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1; got {text!r}")
    return [int(v) for v in values]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return value


def _engines(text: str) -> list[str]:
    """``--engine``: a comma-separated list of specviz.engine.bench.ENGINES."""
    from specviz.engine.bench import ENGINES

    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or any(n not in ENGINES for n in names):
        raise argparse.ArgumentTypeError(f"expected one or more of {', '.join(ENGINES)}; got {text!r}")
    return list(dict.fromkeys(names))


BENCH_TABLE = [
    "compiled",
    "k",
    "temperature",
    "alpha",
    "mean_accepted_tokens",
    "c",
    "v",
    "speedup",
    "predicted_speedup_basic",
    "predicted_speedup_measured_cost",
    "greedy_exact",
]
TREE_TABLE = ["tree", "temperature", "mean_accepted_tokens", "predicted_tokens_per_round", "speedup"]


DTYPE_CHOICES = ("auto", "float32", "float16", "bfloat16")


def resolve_dtype(name: str, device: str):
    """The ``--dtype`` choice as a ``torch.dtype`` for ``device``; None for ``"auto"``.

    ``"auto"`` leaves the choice to :func:`specviz.engine.models.default_dtype` (fp32 on CPU, bf16 or fp16 on
    CUDA). An explicit dtype is tried on the device first (linear, layer norm, GELU, softmax: what a
    forward pass uses), so a torch build or GPU without it fails here with a ValueError, not mid-sweep.
    """
    import torch

    from specviz.engine.models import resolve_device

    if name not in DTYPE_CHOICES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}; got {name!r}")
    if name == "auto":
        return None
    dtype, dev = getattr(torch, name), resolve_device(device)
    try:
        x = torch.ones(2, 8, dtype=dtype, device=dev)
        y = torch.nn.functional.linear(
            torch.nn.functional.layer_norm(x, (8,)), torch.ones(8, 8, dtype=dtype, device=dev)
        )
        torch.softmax(torch.nn.functional.gelu(y), dim=-1).sum().item()
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"dtype {name} is not supported on device {str(dev)!r} by torch {torch.__version__} ({exc}); "
            "use --dtype auto or float32"
        ) from None
    return dtype


def cmd_bench(args: argparse.Namespace) -> int:
    import pandas as pd
    from tqdm import tqdm

    from specviz.core import policies, trees
    from specviz.engine import bench
    from specviz.engine.models import load_pair

    if args.tree and args.batch_size != [1]:
        raise ValueError("--tree drafts trees at batch size 1; drop --batch-size or --tree")
    if args.trace and (args.tree or args.batch_size != [1]):
        raise ValueError("--trace records traces of chains at batch size 1: drop --tree or --batch-size")
    if args.batch_size != [1] and args.engine != ["eager"]:
        raise ValueError("--batch-size decodes eagerly (per-row positions); drop --engine or --batch-size")
    if args.trace and max(args.k) > policies.MAX_TRACE_K:
        raise ValueError(f"--trace records at most K_max = {policies.MAX_TRACE_K} (the most a trace may hold)")
    dtype = resolve_dtype(args.dtype, args.device)
    target, draft, tokenizer = load_pair(args.pair, device=args.device, dtype=dtype)
    prompts = bench.load_prompts(args.prompts)
    if args.tree:
        for shape in args.tree:  # syntax and depth checked before any decoding (any valid p will do)
            trees.parse_shape(shape, [0.5])
        given_p = trees.parse_p(args.tree_p) if args.tree_p else None
    cells = f"K={','.join(map(str, args.k))}" if not args.tree else f"trees={' '.join(args.tree)}"
    label = args.label or f"{args.pair} {cells}"
    target_name, draft_name = (
        args.pair.split(",", 1) if "," in args.pair else (f"{args.pair}/target", f"{args.pair}/draft")
    )
    meta = {"label": label, "target_model": target_name, "draft_model": draft_name}
    if hasattr(draft, "draft_policy"):  # TARGET+ngram: no draft model
        base = args.pair.rpartition("+")[0]
        meta |= {
            "method": "ngram",
            "target_model": "bundled/target" if base in ("bundled", "bundled-target") else base,
            "draft_model": draft.name,
        }
        if args.batch_size != [1] or args.tree:
            raise ValueError("the n-gram drafter runs chains at batch size 1 (no --batch-size, no --tree)")
    rows: list[dict] = []
    if args.batch_size != [1]:
        return _bench_batches(args, target, draft, tokenizer, prompts, meta)
    total = len(args.tree or args.k) * len(args.temperature) * len(prompts) * args.repeats * len(args.engine)
    bar = tqdm(total=total, desc="bench", unit="run", dynamic_ncols=True)

    def on_pilot(temperature: float, p) -> None:
        shown = ", ".join(f"{x:.3f}" for x in p)
        bar.write(f"T = {temperature:g}: p measured by a pilot run ({bench.PILOT.describe()}): {shown}")

    try:
        for engine in args.engine:
            bench.sweep(
                target,
                draft,
                tokenizer,
                prompts,
                args.tree or args.k,
                args.temperature,
                args.new_tokens,
                args.repeats,
                args.seed,
                meta=meta,
                on_run=lambda: bar.update(1),
                on_row=lambda row, _: rows.append(row),
                tree_p=given_p if args.tree else None,
                on_pilot=on_pilot,
                engine=engine,
            )
    except KeyboardInterrupt:
        print(f"\ninterrupted: keeping the {len(rows)} finished cell(s)", file=sys.stderr)
    finally:
        bar.close()
    if not rows:
        print("no cell finished; nothing written", file=sys.stderr)
        return 1
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 40):
        shown = (TREE_TABLE if args.tree else []) + [c for c in BENCH_TABLE if c not in TREE_TABLE]
        print(table[shown].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"wrote {len(table)} rows to {args.out} ({table['hardware'].iloc[0]})")
    if args.trace:
        return _write_trace(args, target, draft, tokenizer, prompts)
    return 0


def _write_trace(args, target, draft, tokenizer, prompts: list[str]) -> int:
    """``bench --trace FILE``: at K_max = the largest --k, every prompt's greedy positional trace when
    0 is among the temperatures, else its sampled round trace at the first temperature."""
    import torch

    from specviz.core import policies
    from specviz.engine import decoding

    k_max, temperature = max(args.k), (0.0 if 0.0 in args.temperature else args.temperature[0])
    encoded = [torch.tensor(tokenizer.encode(p), dtype=torch.long) for p in prompts]
    if temperature == 0:
        traces = [decoding.greedy_trace(target, draft, p, k_max, args.new_tokens) for p in encoded]
    else:
        traces = [
            decoding.sampled_trace(
                target, draft, p, k_max, temperature, args.new_tokens, torch.Generator(target.device).manual_seed(i)
            )
            for i, p in enumerate(encoded)
        ]
    trace = policies.concat(traces)
    policies.save_trace(trace, args.trace)
    kind = f"{trace.rounds} positions" if temperature == 0 else f"{trace.rounds} rounds at T = {temperature:g}"
    what = "greedy" if temperature == 0 else "sampled"
    print(f"wrote the {what} trace ({kind} × K_max = {k_max}, {len(traces)} prompts) to {args.trace}")
    return 0


def _bench_batches(args, target, draft, tokenizer, prompts: list[str], meta: dict) -> int:
    """``bench --batch-size B1,B2,…``: one row per (B, K, temperature), decoded B sequences at a time."""
    import pandas as pd
    import torch

    from specviz.engine import bench

    encoded = [torch.tensor(tokenizer.encode(p), dtype=torch.long) for p in prompts]
    base = bench.run_columns(target, "specviz bench --batch-size", meta)
    rows = []
    cells = bench.batch_cells(args.batch_size, args.temperature, args.k)
    try:
        for (b, k, t), row in bench.batch_sweep(
            target, draft, encoded, cells, args.new_tokens, args.repeats, args.seed, base
        ):
            rows.append(row)
            print(f"B = {b}, T = {t:g}, K = {k}: speedup {row['speedup']:.3f}, α̂ {row['alpha']:.3f}", flush=True)
    except KeyboardInterrupt:
        print(f"\ninterrupted: keeping the {len(rows)} finished cell(s)", file=sys.stderr)
    if not rows:
        print("no cell finished; nothing written", file=sys.stderr)
        return 1
    pd.DataFrame(rows).to_csv(args.out, index=False)
    print(f"wrote {len(rows)} rows to {args.out} ({base['hardware']})")
    return 0


def cmd_prompts(args: argparse.Namespace) -> int:
    import json

    from specviz.engine import train

    root = Path(args.corpus) if args.corpus else train.stdlib_root()
    _, val = train.corpus_files(root, seed=args.seed)
    prompts = train.make_prompts(val, root, n=args.n, length=args.length, seed=args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
    print(f"wrote {len(prompts)} prompts from validation files to {args.out}")
    return 0


def cmd_gguf(args: argparse.Namespace) -> int:
    from specviz.engine.models.gguf import export_pair_gguf

    target, draft = export_pair_gguf(args.pair, args.out)
    print(f"wrote {target} and {draft}")
    print(
        f"serve them with: llama-server -m {target} -md {draft} --spec-type draft-simple "
        "--spec-draft-n-max 4 --spec-draft-n-min 4 --metrics --port 8080"
    )
    return 0


PREDICT_TABLE = ["batch", "k", "c", "v", "o", "t_target_ms", "t_draft_ms", "t_verify_ms", "mean_tokens", "speedup"]


def _checked(option: str, check, *args):
    """``check(*args)``, a library check; its ValueError (a ``Message``) again, led by the option it is about."""
    try:
        return check(*args)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def _profile_used(engine: str, terms: str | None, gpu: str) -> tuple:
    """(the :class:`~specviz.core.profiles.Efficiency` that prices the pair, what it is and where it comes from).

    ``terms`` (``--engine-terms``) is a custom profile (:func:`specviz.core.profiles.decode_terms`: the
    terms given, the rest the default's); else the named profile of the engine catalogue. The default
    on a calibrated machine is that machine's own figures (:func:`specviz.core.hardware.efficiency_for`),
    as on the Hardware & batch page.
    """
    from dataclasses import asdict

    from specviz.core import hardware, profiles

    if terms is not None:
        eff = _checked("--engine-terms", profiles.decode_terms, terms)  # naming the term and what it may be
        info = {"name": "custom", "label": "custom terms", "source": f"--engine-terms {terms!r}"}
        return eff, info | {"fitted_on": "", "rows": 0, "date": "", "terms": asdict(eff)}
    eff = _checked("--engine", profiles.profile, engine)  # naming the profiles when ``engine`` is none of them
    row = profiles.load_profiles().loc[engine]
    info = {"name": engine, "label": str(row["label"]), "source": str(row["source"])}
    info |= {"fitted_on": str(row["fitted_on"] or ""), "rows": int(row["rows"]), "date": str(row["date"] or "")}
    if engine == profiles.DEFAULT_PROFILE and hardware.efficiency_for(gpu) != profiles.DEFAULT_EFFICIENCY:
        eff = hardware.efficiency_for(gpu)
        info |= {"source": f"the fixed costs measured on {gpu} by python -m specviz calibrate", "rows": 0}
    return eff, info | {"terms": asdict(eff)}


def predict_rows(args: argparse.Namespace, efficiency) -> pd.DataFrame:
    """One row per (batch, K = 1..k_max): c, v, o, the step times, E[N](K) and the speedup, then K*.

    The costs are :func:`specviz.core.hardware.pair_costs` (``draft_tokens`` per draft forward,
    ``verify_tokens`` per verify forward, default K + 1); S = E[N] / (1 + v·(T − 1) + o + D / c)
    (:func:`specviz.core.hardware.round_speedup`). E[N](K) = 1 + Σ_{i≤K} Π_{j≤i} a_j
    (:func:`specviz.core.theory.expected_tokens_by_position`) from ``--alpha`` (one α, or a_1, a_2, …
    with the last repeated) or from the α whose chain of ``--k-max`` drafts yields ``--tau`` tokens per
    round (:func:`specviz.core.theory.alpha_from_mean_tokens`), so that E[N](k_max) = τ. K* is the
    first K of the largest speedup, 0 (do not speculate) where none exceeds 1, the rule of
    :func:`specviz.core.hardware.speedup_by_batch`.
    """
    import numpy as np
    import pandas as pd

    from specviz.core import hardware, theory

    k_max = args.k_max
    if args.tau is not None:
        alpha = [float(theory.alpha_from_mean_tokens(args.tau, k_max))]
    else:
        alpha = list(theory.check_alpha(np.atleast_1d(np.asarray(args.alpha, dtype=float))))
    a = np.asarray((alpha + [alpha[-1]] * k_max)[:k_max])
    mean = theory.expected_tokens_by_position(a)  # (K,)
    b = np.asarray(args.batch, dtype=float)[:, None]
    ks = np.arange(1, k_max + 1)[None, :]
    costs = hardware.pair_costs(
        args.target,
        args.draft,
        args.gpu,
        b,
        args.context,
        ks,
        dtype=args.dtype,
        tp_target=args.tp,
        tp_draft=args.tp if args.tp_draft is None else args.tp_draft,
        efficiency=efficiency,
        draft_tokens=args.draft_tokens,
        verify_tokens=args.verify_tokens,
    )
    s = np.broadcast_to(hardware.round_speedup(mean, costs), (len(args.batch), k_max))
    shape = s.shape

    def cell(name, scale=1.0):
        return (np.broadcast_to(np.asarray(costs[name], dtype=float), shape) * scale).ravel()

    frame = pd.DataFrame(
        {
            "batch": np.repeat(args.batch, k_max),
            "k": np.tile(np.arange(1, k_max + 1), len(args.batch)),
            "c": cell("c"),
            "v": cell("v"),
            "o": cell("o"),
            "draft_steps": cell("draft_steps").astype(int),
            "verify_tokens": (cell("nodes") + 1).astype(int),
            "t_target_ms": cell("t_target", 1e3),
            "t_draft_ms": cell("t_draft", 1e3),
            "t_verify_ms": cell("t_verify", 1e3),
            "mean_tokens": np.tile(mean, len(args.batch)),
            "speedup": s.ravel(),
        }
    )
    best = s.argmax(-1)  # first maximum: ties go to the smaller K
    top = s[np.arange(len(best)), best]
    frame["k_star"] = np.repeat(np.where(top > 1.0, best + 1, 0), k_max)
    frame["speedup_at_k_star"] = np.repeat(np.where(top > 1.0, top, 1.0), k_max)
    return frame


def _shown(values: list[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def _profile_lines(info: dict) -> list[str]:
    terms = ", ".join(f"{k} {v:.4g}" for k, v in info["terms"].items())
    fitted = (
        f"fitted on {info['fitted_on']} ({info['rows']} rows, {info['date']})" if info["fitted_on"] else "not fitted"
    )
    return [
        f"engine profile: {info['name']} ({info['label']}; {fitted})",
        f"  terms: {terms}",
        f"  source: {info['source']}",
    ]


def cmd_predict(args: argparse.Namespace) -> int:
    import json

    from specviz.core import hardware, heads, theory, validation

    if args.target not in hardware.load_catalog()[0].index:  # every model named (model_spec names five)
        models = ", ".join(hardware.load_catalog()[0].index)
        raise ValueError(f"--target: model {args.target!r} is not in the catalogue; choose one of {models}")
    _checked("--draft", validation.check_draft, args.draft, args.target)
    _checked("--gpu", hardware.gpu_spec, args.gpu)
    theory.check_k(args.k_max, "--k-max")
    if args.tau is not None and not 1 <= args.tau <= args.k_max + 1:
        raise ValueError(f"--tau must be in [1, --k-max + 1 = {args.k_max + 1}] (tokens per round); got {args.tau:g}")
    if heads.is_head(args.draft) and heads.head_spec(args.draft)["kind"] in heads.PARALLEL:
        n = int(heads.head_spec(args.draft)["medusa_heads"])
        if args.k_max > n:
            raise ValueError(f"--k-max must be at most the {n} heads of {args.draft!r}; got {args.k_max}")
    if args.verify_tokens is not None and args.verify_tokens < args.k_max + 1:
        raise ValueError(
            f"--verify-tokens must be at least --k-max + 1 = {args.k_max + 1} (the drafted positions and the bonus "
            f"one); got {args.verify_tokens}"
        )
    eff, info = _profile_used(args.engine, args.engine_terms, args.gpu)
    frame = predict_rows(args, eff)
    inputs = {
        "target": args.target,
        "draft": args.draft,
        "gpu": args.gpu,
        "dtype": args.dtype,
        "tp": args.tp,
        "tp_draft": args.tp if args.tp_draft is None else args.tp_draft,
        "context": args.context,
        "draft_tokens": args.draft_tokens,
        "verify_tokens": args.verify_tokens,
        "alpha": None if args.tau is not None else args.alpha,
        "tau": args.tau,
    }
    if args.format == "json":
        k_star = frame.drop_duplicates("batch")[["batch", "k_star", "speedup_at_k_star"]]
        rows = frame.drop(columns=["k_star", "speedup_at_k_star"])
        out = {"inputs": inputs, "engine": info, "rows": rows.to_dict("records"), "k_star": k_star.to_dict("records")}
        print(json.dumps(out, indent=2))
    elif args.format == "csv":
        print(frame.assign(engine=info["name"], engine_fitted_on=info["fitted_on"]).to_csv(index=False), end="")
    else:
        print(
            f"{args.target} + {args.draft} on {args.tp} × {args.gpu} ({args.dtype}), context {args.context:,}, "
            + (f"τ = {args.tau:g} at K = {args.k_max}" if args.tau is not None else f"α = {_shown(args.alpha)}")
        )
        print("\n".join(_profile_lines(info)))
        print(frame[PREDICT_TABLE].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        for row in frame.drop_duplicates("batch").itertuples():
            star = "do not speculate" if row.k_star == 0 else f"speedup {row.speedup_at_k_star:.3f}×"
            print(f"B = {row.batch}: K* = {row.k_star} ({star})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz", description="specviz command line")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train the bundled byte-level draft/target pair on the Python stdlib")
    t.add_argument("--out", default=str(DEFAULT_PAIR_DIR), help="where the trained pair is written")
    t.add_argument(
        "--work-dir",
        default=str(Path.home() / ".cache" / "specviz" / "train"),
        help="resumable checkpoints (rerun the same command to resume)",
    )
    t.add_argument("--corpus", default=None, help="folder of .py files (default: this Python's stdlib)")
    t.add_argument("--target-steps", type=int, default=900)
    t.add_argument("--draft-steps", type=int, default=3000)
    t.add_argument("--target-lr", type=float, default=1e-3)
    t.add_argument("--draft-lr", type=float, default=3e-3)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--seq-len", type=int, default=512)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument(
        "--init-from",
        default=None,
        help="with --only: start from the weights in this folder (config.json + model.safetensors), "
        "with a fresh optimiser and schedule",
    )
    t.add_argument("--only", choices=("target", "draft"), help="train one model of the pair (no card)")
    t.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="bf16: autocast matmuls; auto: bf16 where the CPU has native bf16 (AMX / AVX-512-BF16), else fp32",
    )
    t.add_argument("--micro-batches", type=int, default=1, help="gradient accumulation: passes per step")
    t.add_argument("--eval-every", type=int, default=0, help="steps between held-out evaluations (loss curve)")
    t.add_argument("--warmup", type=int, default=100, help="linear learning-rate warm-up steps")
    t.add_argument(
        "--teacher-windows",
        type=int,
        default=0,
        help="with --only draft: distil from the target in --out over this many windows (0: plain training)",
    )
    t.add_argument("--teacher-top-k", type=int, default=8, help="next bytes of the teacher kept per position")
    t.add_argument(
        "--unlikelihood-every",
        type=int,
        default=0,
        help="with --only target: make every N-th step a sequence-level unlikelihood step against greedy "
        "repeats (Welleck et al. 2019; 0: none)",
    )
    t.add_argument("--unlikelihood-n", type=int, default=16, help="length in bytes of the repeats it penalises")
    t.add_argument("--min-lr", type=float, default=1e-4, help="floor of the cosine learning-rate decay")
    t.set_defaults(func=cmd_train)

    c = sub.add_parser("card", help="re-measure a trained pair's model card (bits/byte, acceptance, speed) here")
    c.add_argument("--out", default=str(DEFAULT_PAIR_DIR), help="the pair's folder (card.json beside the weights)")
    c.add_argument("--corpus", default=None, help="folder holding the held-out files (default: this Python's stdlib)")
    c.set_defaults(func=cmd_card)

    from specviz.engine.bench import PROMPTS_FILE

    b = sub.add_parser("bench", help="measure target-only vs speculative decoding over K and temperature")
    b.add_argument("--pair", default="bundled", help="'bundled' or a folder with target/ and draft/")
    b.add_argument("--k", type=_ints, default=[1, 2, 4, 8], help="draft lengths, e.g. 1,2,4,8")
    b.add_argument("--temperature", type=_floats, default=[0.0, 1.0], help="e.g. 0,1 (0 = greedy)")
    b.add_argument("--new-tokens", type=int, default=128)
    b.add_argument("--prompts", default=str(PROMPTS_FILE), help="JSON-lines prompts file")
    b.add_argument("--repeats", type=int, default=3)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    b.add_argument(
        "--dtype",
        default="auto",
        choices=DTYPE_CHOICES,
        help="weights and activations; auto: float32 on CPU, bfloat16 (or float16 where unsupported) on CUDA",
    )
    b.add_argument(
        "--batch-size",
        type=_ints,
        default=[1],
        help="sequences decoded at once, e.g. 1,4,16 (any B > 1: batched rows, speedup of the whole batch)",
    )
    b.add_argument(
        "--tree",
        nargs="+",
        default=None,
        metavar="SHAPE",
        help="draft trees instead of K: chain:K chains:N,D topk:D,k,N optimal:N,D (topk and optimal are built "
        "from --tree-p, else from p measured by a pilot run)",
    )
    b.add_argument("--tree-p", default=None, help="positional acceptance p_1,p_2,… for building topk / optimal trees")
    b.add_argument(
        "--trace",
        default=None,
        metavar="FILE",
        help="also write the greedy positional trace (K_max = the largest --k) as JSON lines, for replaying "
        "draft-length policies (specviz.core.policies)",
    )
    b.add_argument(
        "--engine",
        type=_engines,
        default=["eager"],
        help="how the bundled GPT's steps run: eager, compiled (torch.compile; CUDA graphs on CUDA), or "
        "eager,compiled for both, one set of rows each (docs/engine.md)",
    )
    b.add_argument("--label", default=None)
    b.add_argument("--out", default="results.csv")
    b.set_defaults(func=cmd_bench)

    cal = sub.add_parser("calibrate", help="check the hardware cost model against this machine's forward times")
    cal.add_argument("--pair", default=None, help="pair folder with target/ and draft/ (default: the bundled pair)")
    cal.add_argument("--out", default="data/calibration", help="where machine.json and steps.csv are written")
    cal.add_argument("--batches", type=_ints, default=[1, 2, 4, 8, 16, 32, 64])
    cal.add_argument("--tokens", type=_ints, default=[1, 2, 3, 5, 9])
    cal.add_argument("--contexts", type=_ints, default=[64, 256, 448])
    cal.add_argument("--repeats", type=int, default=5)
    cal.set_defaults(func=cmd_calibrate)

    pr = sub.add_parser("prompts", help="write benchmark prompts drawn from the validation files")
    pr.add_argument("--out", default=str(PROMPTS_FILE))
    pr.add_argument("--corpus", default=None)
    pr.add_argument("--n", type=int, default=12)
    pr.add_argument("--length", type=int, default=192)
    pr.add_argument("--seed", type=int, default=0)
    pr.set_defaults(func=cmd_prompts)

    from specviz.core import hardware, profiles

    pp = sub.add_parser(
        "predict",
        help="price a draft/target pair on a GPU with an engine profile: c, v, o, the speedup by K and K*",
    )
    pp.add_argument("--target", required=True, help="a model of data/catalog/models.csv")
    pp.add_argument(
        "--draft",
        required=True,
        help=f"a model of the catalogue, a head of data/catalog/heads.csv, or {hardware.NGRAM}",
    )
    pp.add_argument("--gpu", default="H100-SXM5-80GB", help="an accelerator of data/catalog/gpus.csv")
    profile = pp.add_mutually_exclusive_group()
    profile.add_argument(
        "--engine",
        default=profiles.DEFAULT_PROFILE,
        help=f"engine profile of data/catalog/profiles.csv (default {profiles.DEFAULT_PROFILE}: typical CUDA-graph costs, not fitted)",
    )
    profile.add_argument(
        "--engine-terms",
        default=None,
        metavar="TERMS",
        help="a custom profile instead: name=value,… over " + ", ".join(profiles.TERMS) + " (the rest: the default's)",
    )
    pp.add_argument("--dtype", default="bf16", choices=tuple(hardware.DTYPE_BYTES))
    pp.add_argument("--tp", type=_positive, default=1, help="tensor-parallel GPUs of the target")
    pp.add_argument(
        "--tp-draft", type=_positive, default=None, help="tensor-parallel GPUs of the draft (default: --tp)"
    )
    pp.add_argument("--batch", type=_ints, default=[1], help="batch sizes, e.g. 1,8,64")
    pp.add_argument("--context", type=int, default=1024, help="tokens in the KV cache")
    acceptance = pp.add_mutually_exclusive_group(required=True)
    acceptance.add_argument("--alpha", type=_floats, help="acceptance α, or per-position a_1,a_2,… (the last repeats)")
    acceptance.add_argument("--tau", type=float, help="measured mean tokens per round (bonus included) at K = --k-max")
    pp.add_argument("--k-max", type=_positive, default=8, help="price K = 1..k_max")
    pp.add_argument("--draft-tokens", type=_positive, default=1, help="tokens per draft forward (a tree level's width)")
    pp.add_argument(
        "--verify-tokens",
        type=_positive,
        default=None,
        help="tokens per verify forward (default K + 1; a tree's nodes)",
    )
    pp.add_argument("--format", choices=("table", "csv", "json"), default="table")
    pp.set_defaults(func=cmd_predict)

    g = sub.add_parser("gguf", help="export a pair to GGUF (target.gguf, draft.gguf) for llama.cpp's llama-server")
    g.add_argument("--pair", default="bundled", help="'bundled' or a folder with target/ and draft/")
    g.add_argument("--out", required=True, help="folder to write target.gguf and draft.gguf in")
    g.set_defaults(func=cmd_gguf)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; a ValueError (bad input: a ``Message`` is one, in English) is one line on stderr, exit 2."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``python -m specviz bench``: measure target-only vs speculative decoding over K and temperature."""

from __future__ import annotations

import argparse
import sys

from specviz.cli.args import _engines, _floats, _ints

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


def add_parser(sub) -> None:
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

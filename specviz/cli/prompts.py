"""``python -m specviz prompts``: write benchmark prompts drawn from the validation files."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub) -> None:
    from specviz.engine.bench import PROMPTS_FILE

    pr = sub.add_parser("prompts", help="write benchmark prompts drawn from the validation files")
    pr.add_argument("--out", default=str(PROMPTS_FILE))
    pr.add_argument("--corpus", default=None)
    pr.add_argument("--n", type=int, default=12)
    pr.add_argument("--length", type=int, default=192)
    pr.add_argument("--seed", type=int, default=0)
    pr.set_defaults(func=cmd_prompts)


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

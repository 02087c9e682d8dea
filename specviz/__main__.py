"""Command line: ``python -m specviz train ...``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

DEFAULT_PAIR_DIR = Path(__file__).resolve().parent.parent / "data" / "models" / "bundled"


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
    from specviz.models import train

    common = dict(batch_size=args.batch_size, seq_len=args.seq_len, seed=args.seed)
    target_tc = train.TrainConfig(steps=args.target_steps, lr=args.target_lr, **common)
    draft_tc = train.TrainConfig(steps=args.draft_steps, lr=args.draft_lr, **common)
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    card = train.train_pair(Path(args.out), Path(args.work_dir), target_tc, draft_tc,
                            corpus_root=Path(args.corpus) if args.corpus else None, command=command,
                            progress_factory=_progress_factory)  # fmt: skip
    print(f"saved {args.out}: target {card['target']['validation_bits_per_byte']} bits/byte, "
          f"draft {card['draft']['validation_bits_per_byte']} bits/byte, "
          f"alpha greedy {card['acceptance_on_validation']['alpha_greedy']}, "
          f"alpha T=1 {card['acceptance_on_validation']['alpha_t1']}, c {card['speed']['c']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz", description="specviz command line")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train the bundled byte-level draft/target pair on the Python stdlib")
    t.add_argument("--out", default=str(DEFAULT_PAIR_DIR), help="where the trained pair is written")
    t.add_argument("--work-dir", default=str(Path.home() / ".cache" / "specviz" / "train"),
                   help="resumable checkpoints (rerun the same command to resume)")
    t.add_argument("--corpus", default=None, help="folder of .py files (default: this Python's stdlib)")
    t.add_argument("--target-steps", type=int, default=900)
    t.add_argument("--draft-steps", type=int, default=3000)
    t.add_argument("--target-lr", type=float, default=1e-3)
    t.add_argument("--draft-lr", type=float, default=3e-3)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--seq-len", type=int, default=512)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(func=cmd_train)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

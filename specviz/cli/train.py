"""``python -m specviz train``: train the bundled byte-level pair (or one model of it)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from specviz.cli.args import DEFAULT_PAIR_DIR
from specviz.cli.card import text_quality


def add_parser(sub) -> None:
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
        extra=text_quality,
    )
    print(
        f"saved {args.out}: target {card['target']['validation_bits_per_byte']} bits/byte, "
        f"draft {card['draft']['validation_bits_per_byte']} bits/byte, "
        f"alpha greedy {card['acceptance_on_validation']['alpha_greedy']}, "
        f"alpha T=1 {card['acceptance_on_validation']['alpha_t1']}, c {card['speed']['c']}"
    )
    return 0

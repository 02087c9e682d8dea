"""``python -m specviz calibrate``: check the hardware cost model against this machine's forward times."""

from __future__ import annotations

import argparse
from pathlib import Path

from specviz.cli.args import _ints


def add_parser(sub) -> None:
    cal = sub.add_parser("calibrate", help="check the hardware cost model against this machine's forward times")
    cal.add_argument("--pair", default=None, help="pair folder with target/ and draft/ (default: the bundled pair)")
    cal.add_argument("--out", default="data/calibration", help="where machine.json and steps.csv are written")
    cal.add_argument("--batches", type=_ints, default=[1, 2, 4, 8, 16, 32, 64])
    cal.add_argument("--tokens", type=_ints, default=[1, 2, 3, 5, 9])
    cal.add_argument("--contexts", type=_ints, default=[64, 256, 448])
    cal.add_argument("--repeats", type=int, default=5)
    cal.set_defaults(func=cmd_calibrate)


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

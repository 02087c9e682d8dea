"""``python -m specviz card``: re-measure a trained pair's model card."""

from __future__ import annotations

import argparse
from pathlib import Path

from specviz.cli.args import DEFAULT_PAIR_DIR


def add_parser(sub) -> None:
    c = sub.add_parser("card", help="re-measure a trained pair's model card (bits/byte, acceptance, speed) here")
    c.add_argument("--out", default=str(DEFAULT_PAIR_DIR), help="the pair's folder (card.json beside the weights)")
    c.add_argument("--corpus", default=None, help="folder holding the held-out files (default: this Python's stdlib)")
    c.set_defaults(func=cmd_card)


def text_quality(target, draft) -> dict:
    """The card's ``text_quality``: greedy continuations of the benchmark prompts (specviz.engine.bench)."""
    import torch

    from specviz.engine import bench
    from specviz.engine.models import ByteTokenizer

    prompts = [torch.tensor(ByteTokenizer().encode(p)) for p in bench.load_prompts()]
    return {"text_quality": bench.text_quality(target, prompts)}


def cmd_card(args: argparse.Namespace) -> int:
    from specviz.engine import card as model_card

    card = model_card.remeasure_card(Path(args.out), Path(args.corpus) if args.corpus else None, text_quality)
    speed, acc = card["speed"], card["acceptance_on_validation"]
    print(
        f"rewrote {args.out}/README.md and card.json: T_target {speed['t_target_ms']} ms, "
        f"T_draft {speed['t_draft_ms']} ms, c {speed['c']}; alpha greedy {acc['alpha_greedy']}, "
        f"alpha T=1 {acc['alpha_t1']}; held-out bits/byte: target {card['target']['validation_bits_per_byte']}, "
        f"draft {card['draft']['validation_bits_per_byte']}; "
        f"distinct 4-grams {card['text_quality']['distinct_4gram_ratio']}"
    )
    return 0

"""Quality of a trained draft/target pair: held-out bits/byte, distinct 4-grams, α — with PASS/FAIL.

Run from the repository root::

    python benchmarks/pair_quality.py                       # the shipped pair (data/models/bundled)
    python benchmarks/pair_quality.py --pair DIR            # another pair folder (target/, draft/)
    python benchmarks/pair_quality.py --against DIR         # also measure DIR, side by side

Measured on the held-out standard-library files the pair's ``card.json`` lists (read from this
Python's stdlib, or ``--corpus``):

1. held-out bits/byte of the target and the draft over every whole 512-byte window
   (``train.evaluate_all``)                                   [target <= 1.70, and below the draft]
2. text quality: mean distinct-4-gram ratio of greedy 128-byte continuations of the benchmark
   prompts (``bench.text_quality``; 1 = no repeated 4-gram)  [>= 0.6]
3. α on held-out text (``model_card.pair_agreement``, 32 windows): greedy (the draft's argmax is the
   target's) and at T = 1 (mean Σ min(p, q))                  (context)
4. α̂ as the engine measures it (``bench.run_cell``, K = 4, 4 prompts × 64 new tokens) at T = 0 and
   T = 1: accepted drafts / drafted                          (context)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from _report import machine_line, record, summary

from specviz.engine import bench, train
from specviz.engine import card as model_card
from specviz.engine.models import BUNDLED_DIR, ByteTokenizer, load_pair
from specviz.engine.models.gpt import GPT

T0 = time.perf_counter()


def measure(pair: Path, corpus: Path | None, prompts: list[torch.Tensor]) -> dict:
    """Every number of the module docstring for the pair in ``pair``."""
    card = json.loads((pair / "card.json").read_text())
    root = corpus or train.stdlib_root()
    val = train.load_bytes([root / name for name in card["corpus"]["validation_file_list"]])
    target, draft = GPT.load(pair / "target"), GPT.load(pair / "draft")
    out = {
        "target_bits": train.evaluate_all(target, val),
        "draft_bits": train.evaluate_all(draft, val),
        **bench.text_quality(target, prompts),
        **model_card.pair_agreement(target, draft, val),
    }
    t, d, _ = load_pair(str(pair))  # as the engine runs them (packed linears on the CPU)
    for temperature in (0.0, 1.0):
        row = bench.run_cell(t, d, prompts[:4], 4, temperature, 64, 1)
        out[f"alpha_hat_t{temperature:g}"] = row["alpha"]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", default=str(BUNDLED_DIR), help="pair folder (default: the shipped pair)")
    p.add_argument("--against", default=None, help="a second pair folder, measured in the same run")
    p.add_argument("--corpus", default=None, help="folder of the held-out files (default: this Python's stdlib)")
    args = p.parse_args()
    torch.manual_seed(0)
    print(machine_line(f"torch {torch.__version__}, {torch.get_num_threads()} threads"))
    tok = ByteTokenizer()
    prompts = [torch.tensor(tok.encode(text)) for text in bench.load_prompts()]
    corpus = Path(args.corpus) if args.corpus else None
    pairs = {"pair": Path(args.pair)} | ({"against": Path(args.against)} if args.against else {})
    results = {name: measure(path, corpus, prompts) for name, path in pairs.items()}

    rows = [
        ("target held-out bits/byte", "target_bits", "{:.4f}"),
        ("draft held-out bits/byte", "draft_bits", "{:.4f}"),
        ("distinct-4-gram ratio (mean)", "distinct_4gram_ratio", "{:.3f}"),
        ("distinct-4-gram ratio (lowest)", "min_distinct_4gram_ratio", "{:.3f}"),
        ("α greedy (argmax agreement)", "alpha_greedy", "{:.3f}"),
        ("α at T = 1 (Σ min(p, q))", "alpha_t1", "{:.3f}"),
        ("α̂ engine, K = 4, T = 0", "alpha_hat_t0", "{:.3f}"),
        ("α̂ engine, K = 4, T = 1", "alpha_hat_t1", "{:.3f}"),
    ]
    print(f"\n  {'':<32}" + "".join(f"{name:>34}" for name in pairs))
    for label, key, fmt in rows:
        print(f"  {label:<32}" + "".join(f"{fmt.format(r[key]):>34}" for r in results.values()))

    r = results["pair"]
    record("target held-out bits/byte", f"{r['target_bits']:.4f}", "<= 1.70", r["target_bits"] <= 1.70)
    record(
        "target below the draft",
        f"{r['target_bits']:.4f} vs {r['draft_bits']:.4f}",
        "target < draft",
        r["target_bits"] < r["draft_bits"],
    )
    ratio = r["distinct_4gram_ratio"]
    record("distinct-4-gram ratio", f"{ratio:.3f}", ">= 0.6", ratio >= 0.6)
    record("α greedy / at T = 1", f"{r['alpha_greedy']:.3f} / {r['alpha_t1']:.3f}", "(context)", None)
    return summary(T0)


if __name__ == "__main__":
    sys.exit(main())

"""Command line: ``python -m specviz bench|train|card|prompts|calibrate|gguf|predict|tune ...``."""

from __future__ import annotations

import argparse
import sys

from specviz.cli import bench, calibrate, card, gguf, predict, prompts, train, tune


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz", description="specviz command line")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (train, card, bench, calibrate, prompts, predict, gguf, tune):  # the order `--help` lists them
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; a ValueError (bad input: a ``Message`` is one, in English) is one line on stderr, exit 2."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

"""``python -m specviz gguf``: export a pair to GGUF for llama.cpp's llama-server."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    g = sub.add_parser("gguf", help="export a pair to GGUF (target.gguf, draft.gguf) for llama.cpp's llama-server")
    g.add_argument("--pair", default="bundled", help="'bundled' or a folder with target/ and draft/")
    g.add_argument("--out", required=True, help="folder to write target.gguf and draft.gguf in")
    g.set_defaults(func=cmd_gguf)


def cmd_gguf(args: argparse.Namespace) -> int:
    from specviz.core import configs
    from specviz.engine.models.gguf import export_pair_gguf

    target, draft = export_pair_gguf(args.pair, args.out)
    print(f"wrote {target} and {draft}")
    print(f"serve them with: {configs.llamacpp.command(target, draft, 4)}")
    return 0

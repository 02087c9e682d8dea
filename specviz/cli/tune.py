"""``python -m specviz tune``: measure a server over draft lengths × loads, fit it, print the K per load.

Local (default): llama-server on loopback with a pair exported to GGUF, restarted at each K. Remote
(``--server URL --k K``): a running OpenAI-compatible server at its own K; the other K are predicted from a
profile (``--profile``: a previous tune's ``answer.json``). Points are saved as they finish: run the same
command again to resume. With a price (``--usd-per-hour`` or a catalogue ``--gpu``) it also prints the cost
per million output tokens per load, with and without speculation, within an optional ``--tpot-ms`` limit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import tempfile
import threading
from functools import partial
from pathlib import Path

from specviz.cli.args import DEFAULT_PAIR_DIR, _ints, _ks


def add_parser(sub) -> None:
    t = sub.add_parser("tune", help="measure a server over K × load and print the best K per load (resumable)")
    t.add_argument("--out", required=True, help="the tune's folder: plan.json, points.jsonl, answer.json")
    t.add_argument("--server", help="a running server's URL (remote mode); without it llama-server is started")
    t.add_argument("--k", type=int, help="remote mode: the K the server runs with")
    t.add_argument("--pair", default=str(DEFAULT_PAIR_DIR), help="local mode: the pair to export and serve")
    t.add_argument("--ks", type=_ks, default=[0, 1, 2, 3, 4, 5, 6], help="local mode: draft lengths (0: none)")
    t.add_argument("--concurrency", type=_ints, default=[1, 2, 4, 8], help="requests in flight, one load each")
    t.add_argument(
        "--contexts",
        type=partial(_ints, lo=0),
        default=[0],
        help="prompt lengths in tokens, one sweep each (0: the prompts as given)",
    )
    t.add_argument("--requests", type=int, default=32, help="requests per point (at least 2 per request in flight)")
    t.add_argument("--max-tokens", type=int, default=128, help="output tokens asked per request")
    t.add_argument("--minutes", type=int, default=10, help="the whole tune stops after this")
    t.add_argument("--threads", type=int, default=1, help="local mode: llama-server threads")
    t.add_argument(
        "--shared-cpus",
        action="store_true",
        help="local mode: let llama-server and the load generator share every CPU (default: the server on CPUs of its own)",
    )
    t.add_argument("--profile", help="remote mode: answer.json of an earlier tune whose o and r to carry")
    t.add_argument("--gpu", help="the catalogue GPU the server runs on: its dated price per hour prices the tokens")
    t.add_argument("--gpus", type=int, default=1, help="GPUs the server uses (the price is per GPU-hour)")
    t.add_argument("--usd-per-hour", type=float, help="price of one GPU-hour in USD (overrides --gpu's price)")
    t.add_argument("--tpot-ms", type=float, help="TPOT limit (ms): the best K and the cheapest setup within it")
    t.set_defaults(func=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from specviz.core import tuning
    from specviz.servers import fetch, loadgen, tune

    prompts = loadgen.bundled_prompts()
    remote = args.server is not None
    if remote and args.k is None:
        raise ValueError("--server needs --k: the draft length the server runs with")
    plan = tune.TunePlan(
        "remote" if remote else "local",
        (args.k,) if remote else tuple(args.ks),
        tuple(args.concurrency),
        requests=args.requests,
        max_tokens=args.max_tokens,
        minutes=args.minutes,
        target=args.server if remote else Path(args.pair).name,
        prompts_sha=tune.prompts_sha(prompts),
        contexts=tuple(args.contexts),
    )
    out = Path(args.out)
    policy = fetch.FetchPolicy(read_timeout_s=60.0)
    if remote:
        serve = lambda k: tune.remote(args.server, plan, policy)
        points, why = tune.sweep(plan, out, serve, prompts, policy, progress=_say)
    else:
        points, why = _local(plan, out, args, prompts, policy)
    profile = tuning.read_profile(json.loads(Path(args.profile).read_text())) if args.profile else None
    answers = tuning.analyse_by_context(points, profile)
    price = _price(args)
    for n, answer in answers.items():  # answer.json: the first context's (a later remote tune reads its profile)
        if n == min(answers):
            (out / "answer.json").write_text(json.dumps(tuning.answer_json(answer), indent=1))
        if len(answers) > 1:
            print(f"\n== prompt length {n} tokens" if n else "\n== prompts as given")
        print(tuning.answer_text(answer, why, len(points), len(plan.points())))
        if price is not None:
            sla = None if args.tpot_ms is None else args.tpot_ms / 1e3
            frame = tuning.priced(answer.table, price, args.gpus)
            print(
                tuning.cost_text(tuning.cost_by_load(frame, sla), *tuning.cheapest(frame, sla), price, args.gpus, sla)
            )
    _write_run(points, out, bundled=not remote and Path(args.pair).resolve() == Path(DEFAULT_PAIR_DIR).resolve())
    if len(answers) > 1:
        print("\nbest K by prompt length (rows) and requests in flight (columns):")
        table = tuning.k_by_context(points, answers).pivot(index="context", columns="concurrency", values="k")
        print(table.to_string())
    return 0 if why == "done" else 3


def _write_run(points: list[dict], out: Path, bundled: bool) -> None:
    """run.csv: the tune as one run of the run library (``tuning.library_records``), to upload on its page."""
    import pandas as pd

    from specviz.core import tuning

    pair = tuning.bundled_pair() if bundled else {}
    records = tuning.library_records(points, label=f"tune {out.name}", **pair)
    if records:
        pd.DataFrame(records).to_csv(out / "run.csv", index=False)
        print(f"\n{out / 'run.csv'}: the tune as one run; upload it on the Run library page to compare and calibrate")


def _price(args) -> float | None:
    """USD per GPU-hour: ``--usd-per-hour``, else the catalogue's dated price of ``--gpu``; None where neither."""
    if args.usd_per_hour is not None:
        return args.usd_per_hour
    if args.gpu is None:
        return None
    from specviz.core import serving

    found = serving.gpu_price(args.gpu)
    if found is None:
        raise ValueError(f"--gpu {args.gpu!r}: the catalogue has no published price for it; give --usd-per-hour")
    print(f"price: USD {found[0]:g} per GPU-hour for {args.gpu}, {found[2]} ({found[1]})")
    return found[0]


def _local(plan, out: Path, args, prompts, policy):
    from specviz.engine.models.gguf import export_pair_gguf
    from specviz.servers import llamacpp, tune

    binary = llamacpp.find_binary()
    if binary is None:
        raise ValueError("llama-server is not built here: run scripts/build-llama-server (about 5 minutes)")
    with tempfile.TemporaryDirectory(prefix="specviz-tune-") as tmp, _sigterm_unwinds():
        target, draft = export_pair_gguf(args.pair, tmp)
        serve = tune.local(
            binary, target, draft, plan, out / "logs", threads=args.threads, isolate=not args.shared_cpus
        )
        return tune.sweep(plan, out, serve, prompts, policy, progress=_say)


@contextlib.contextmanager
def _sigterm_unwinds():
    """SIGTERM exits through the ``finally`` blocks, as Ctrl-C does, so the llama-servers this tune started stop
    with it (Python's default SIGTERM ends the process at once and they outlive it). Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _say(p) -> None:
    if p.k >= 0:
        length = f", prompts of {p.context} tokens" if p.context else ""
        print(
            f"[{p.saved}/{p.total}] K = {p.k}, {p.concurrency} in flight{length} ({p.elapsed_s:.0f} s)", file=sys.stderr
        )

"""specviz's load generator against NVIDIA's AIPerf on the same llama-server, the same prompts and the same load.

Run from the repository root, with AIPerf in a virtual environment of its own (its plotly and pandas pins
differ from specviz's)::

    python -m venv /tmp/aiperf && /tmp/aiperf/bin/pip install aiperf==0.13.0
    python benchmarks/loadgen_vs_aiperf.py --aiperf /tmp/aiperf/bin/aiperf   # --no-pin: share the CPUs

One llama-server b11434 on loopback serves the bundled pair exported to GGUF at K = 4 (the tune's
server, one slot per request in flight), with ``--no-cache-prompt`` (the tools send the prompts in different
orders; a cached prompt skips its prefill and TTFT would compare the orders). At each concurrency, in turns for ``--repeats`` rounds: our
closed loop (:func:`specviz.servers.loadgen.run_load`) and ``aiperf profile`` with the same prompts (an
``--input-file`` of the bundled prompts, each asking ``--tokens`` tokens), streamed completions, greedy,
``--use-server-token-count``. AIPerf needs a tokenizer: a byte-level one equal to the bundled pair's (UTF-8
bytes as ids 0..255) is written for it, so no model hub is asked. AIPerf's ``profile_export_aiperf.json`` is
read by specviz's own AIPerf reader (its serving figures: an upload of a run without speculative counters is
refused as a measurement row, which needs α). Compared, each the median over the rounds:
TTFT p50, TPOT p50 and p90 (AIPerf's inter-token latency, (latency − TTFT) / (OSL − 1), as ours) and output
tokens/s                                                                                      [within ±5 %]

Both tools share the machine with the server they measure. By default (``--no-pin`` to turn it off) llama-server
runs on CPU 0 and both tools on CPU 1 (``os.sched_setaffinity``; Linux), so neither tool's own work takes the
server's core: AIPerf spends about 20× our CPU per output token, and unpinned on two cores it slowed the server
it measured. Each tool's CPU time per output token (this process for ours, the finished children for AIPerf)
is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import machine_line, record, summary

from specviz.data.measurements.readers import aiperf as aiperf_reader
from specviz.engine.models.gguf import export_pair_gguf
from specviz.servers import fetch, llamacpp, loadgen, tune

CHECKS = ("ttft_p50_ms", "tpot_p50_ms", "tpot_p90_ms", "tokens_per_s")


def byte_tokenizer(folder: Path) -> Path:
    """A Hugging Face tokenizer whose ids are the text's UTF-8 bytes (the bundled pair's), for AIPerf."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    alphabet = pre_tokenizers.ByteLevel.alphabet()  # GPT-2's printable stand-ins for the 256 bytes
    stand_in = _bytes_to_unicode()
    assert sorted(stand_in.values()) == sorted(alphabet)
    tok = Tokenizer(models.BPE(vocab={stand_in[b]: b for b in range(256)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    return folder


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character map (openai/gpt-2 encoder.py ``bytes_to_unicode``)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ours(url: str, prompts: list[str], c: int, n: int, tokens: int) -> dict[str, float]:
    spec = loadgen.LoadSpec(url, prompts, max_tokens=tokens, concurrency=c, max_requests=n, max_seconds=600)
    cpu0 = time.process_time()
    r = loadgen.run_load(spec, fetch.FetchPolicy(read_timeout_s=60.0))
    cpu_s = time.process_time() - cpu0
    ok = r.records[r.records["ok"]]
    ttft, tpot = ok["ttft_s"].astype(float) * 1e3, ok["tpot_s"].astype(float) * 1e3
    return {
        "ttft_p50_ms": float(ttft.quantile(0.5)),
        "tpot_p50_ms": float(tpot.quantile(0.5)),
        "tpot_p90_ms": float(tpot.quantile(0.9)),
        "tokens_per_s": r.tokens_per_s,
        "cpu_ms_per_token": 1e3 * cpu_s / max(int(ok["completion_tokens"].sum()), 1),
    }


def aiperf(
    binary: str, url: str, tokenizer: Path, inputs: Path, c: int, n: int, tokens: int, out: Path
) -> dict[str, float]:
    cmd = [
        binary, "profile", "--model", "bundled", "--url", url, "--endpoint-type", "completions", "--streaming",
        "--tokenizer", str(tokenizer), "--input-file", str(inputs), "--custom-dataset-type", "single_turn",
        "--concurrency", str(c), "--request-count", str(n), "--use-server-token-count",
        "--extra-inputs", "temperature:0", "--random-seed", "0", "--ui-type", "none",
        "--output-artifact-dir", str(out),
    ]  # fmt: skip
    cpu0 = _children_cpu_s()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    cpu_s = _children_cpu_s() - cpu0
    exports = sorted(out.rglob("profile_export_aiperf.json"))
    if done.returncode != 0 or not exports:
        raise SystemExit(f"aiperf failed ({done.returncode}):\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    obj = json.loads(exports[-1].read_text())  # read by specviz's own AIPerf reader's functions
    run = aiperf_reader.parse_run(obj)[0]
    figures = aiperf_reader.serving_figures(obj) | {"tokens_per_s": run.tokens_per_s}
    made = n * (figures.get("output_tokens") or tokens)  # the reader's mean OSL × requests
    return {key: float(figures[key]) for key in CHECKS} | {"cpu_ms_per_token": 1e3 * cpu_s / max(made, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aiperf", default=shutil.which("aiperf"), help="the aiperf executable")
    ap.add_argument("--concurrency", default="1,4")
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=hasattr(os, "sched_setaffinity") and os.cpu_count() > 1,
        help="llama-server on CPU 0, both tools on CPU 1 (default where the OS can pin and has 2 CPUs)",
    )
    args = ap.parse_args()
    t_start = time.perf_counter()
    pinned = ", server on CPU 0 and the tools on CPU 1" if args.pin else ""
    print(machine_line(f"llama-server b11434, 1 thread, K = 4, the bundled pair{pinned}"))
    if not args.aiperf:
        record("AIPerf", "not installed", "an aiperf executable", None)
        return 1 if summary(t_start) else 0
    loads = [int(x) for x in args.concurrency.split(",")]
    prompts = loadgen.bundled_prompts()
    with tempfile.TemporaryDirectory(prefix="aiperf-bench-") as tmp:
        tmp = Path(tmp)
        target, draft = export_pair_gguf("bundled", tmp / "gguf")
        tokenizer = byte_tokenizer(tmp / "tokenizer")
        inputs = tmp / "prompts.jsonl"
        inputs.write_text("".join(json.dumps({"text": p, "output_length": args.tokens}) + "\n" for p in prompts))
        binary = llamacpp.find_binary()
        # no prompt cache: a prompt met again would skip its prefill, and the two tools send the prompts in
        # different orders, so TTFT would measure the order rather than the tool
        extra = ["--no-cache-prompt"]
        with llamacpp.serve(binary, target, draft, 4, log_dir=tmp / "logs", slots=max(loads), extra=extra) as server:
            if args.pin:  # the server's threads, then this process and the AIPerf it starts
                tune.pin_threads(server.process.pid, {0})
                os.sched_setaffinity(0, {1})
            ours(server.url, prompts, 1, 2, 8)  # warm-up, not measured
            runs: dict[tuple[str, int], list[dict]] = {}
            for i in range(args.repeats):
                for c in loads:
                    runs.setdefault(("ours", c), []).append(ours(server.url, prompts, c, args.requests, args.tokens))
                    runs.setdefault(("aiperf", c), []).append(
                        aiperf(
                            args.aiperf, server.url, tokenizer, inputs, c, args.requests, args.tokens, tmp / f"a{i}-{c}"
                        )
                    )
    print(f"{'load':>4}  {'metric':<13} {'ours':>9} {'aiperf':>9}  (medians of {args.repeats} rounds)")
    for c in loads:
        for key in CHECKS:
            a = statistics.median(r[key] for r in runs[("ours", c)])
            b = statistics.median(r[key] for r in runs[("aiperf", c)])
            print(f"{c:>4}  {key:<13} {a:9.2f} {b:9.2f}")
            record(f"{c} in flight, {key}: ours ÷ AIPerf", f"{a / b:.3f}", "within ±5 %", abs(a / b - 1) <= 0.05)
        a, b = (statistics.median(r["cpu_ms_per_token"] for r in runs[(tool, c)]) for tool in ("ours", "aiperf"))
        print(f"{c:>4}  {'client CPU':<13} {a:9.2f} {b:9.2f}  ms per output token")
    return 1 if summary(t_start) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The largest input each upload and text box accepts, and how to give it to the running app in Chromium:
shared by the browser test's hostile pass (tests/browser/test_browser.py) and ``benchmarks/upload_bench.py``.

Each :class:`Upload` is written to a folder by :func:`write_largest` at the size its cap allows (a
byte, row or K_max cap of the reader it goes through), then :func:`give` opens its page, hands the
file to the page's uploader (or types the text into its box), and waits until the page has finished
its run: no running indicator, and every chart drawn or a message shown.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _browser import APP_DRAWN_JS

from specviz.core import hardware, policies
from specviz.data.measurements import load

RENDER_BUDGET_S = 10.0  #: the largest accepted input renders within this many seconds
#: what the browser test calls a hang: the budget itself is benchmarks/upload_bench.py's target, measured there
#: (a timed assertion in a test measures the CI machine's load as much as the page)
HANG_S = 3 * RENDER_BUDGET_S
MEMORY_BUDGET_MB = 150.0  #: and adds at most this much to the server's resident memory


@dataclass(frozen=True)
class Upload:
    """One kind of input: where it goes and how its largest accepted instance is built."""

    name: str
    path: str  #: the page's URL path and query
    uploader: str | None  #: the label of the page's file uploader, or None for text typed into ``box``
    build: Callable[[], bytes]
    box: str | None = None  #: aria-label of the text box (its label), when typed
    file_name: str = "upload"
    typed: tuple[tuple[str, str], ...] = ()  #: (label, value) of inputs set before the hand-over


def _lines_up_to(max_bytes: int, line: Callable[[int], str], max_lines: int, head: str = "") -> bytes:
    """``head`` then ``line(i)`` for i = 0, 1, … while the text stays within ``max_bytes`` and ``max_lines``."""
    parts, size = [head] if head else [], len(head.encode())
    for i in range(max_lines):
        text = line(i) + "\n"
        size += len(text.encode())
        if size > max_bytes:
            break
        parts.append(text)
    return "".join(parts).encode()


def measured_csv() -> bytes:
    """200,000 rows (the loader's row cap) of label, k, alpha, c in 8 series."""
    rng = np.random.default_rng(0)
    alpha = rng.uniform(0.3, 0.95, 200_000)
    rows = (f"run {i % 8},{1 + i % 8},{a:.4f},{10 + i % 5}" for i, a in enumerate(alpha))
    return ("label,k,alpha,c\n" + "\n".join(rows) + "\n").encode()


def spec_bench_jsonl() -> bytes:
    """Spec-Bench answer lines (evaluation/eval.py's format) up to the 20 MB byte cap."""
    rng = np.random.default_rng(1)
    steps = 40

    def answer(i: int) -> str:
        acc = rng.integers(1, 6, steps).tolist()
        choice = {"index": 0, "turns": ["x" * 200], "decoding_steps": [steps], "new_tokens": [int(sum(acc))]}
        choice |= {"wall_time": [1.25], "accept_lengths": acc}
        return json.dumps(
            {"question_id": i, "category": "qa", "model_id": f"sps-temp-0.0-{i % 4}", "choices": [choice]}
        )

    return _lines_up_to(load.MAX_BYTES, answer, 200_000)


def vllm_log() -> bytes:
    """vLLM V1 ``SpecDecoding metrics`` log lines up to the row cap (200,000 lines)."""

    def line(i: int) -> str:
        accepted = 100 + i % 50
        return (
            f"INFO 12-02 10:{i // 60 % 60:02d}:{i % 60:02d} [metrics.py:96] SpecDecoding metrics: Mean acceptance "
            f"length: {1 + accepted / 100:.2f}, Accepted throughput: 12.50 tokens/s, Drafted throughput: 40.00 "
            f"tokens/s, Accepted: {accepted} tokens, Drafted: 400 tokens, Per-position acceptance rate: 0.805, "
            "0.632, 0.483, 0.320, Avg Draft acceptance rate: 31.2%"
        )

    return _lines_up_to(load.MAX_BYTES, line, 200_000)


def config_json() -> bytes:
    """Llama-3.1-8B's config.json (the preset pair's draft shares its vocabulary) padded with an id2label
    table to the 1 MB cap."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "id2label": {},
    }
    size, i = len(json.dumps(config)), 0
    while size + 40 < hardware.CONFIG_MAX_BYTES:  # an entry '"12345": "LABEL_12345", ' adds < 40 bytes
        config["id2label"][str(i)] = f"LABEL_{i}"
        size += len(json.dumps({str(i): f"LABEL_{i}"})) - 2 + 2
        i += 1
    data = json.dumps(config).encode()
    assert len(data) <= hardware.CONFIG_MAX_BYTES, len(data)
    return data


def trace_rounds() -> bytes:
    """An i.i.d. trace at K_max = 1 with the row cap of rounds (200,000)."""
    trace = policies.synthetic_trace(0.8, 1, policies.MAX_TRACE_ROUNDS, np.random.default_rng(2), "calibrated")
    return policies.trace_text(trace).encode()


def trace_wide() -> bytes:
    """A positional trace at the K_max cap (64) with as many rows as the 20 MB byte cap allows."""
    k = policies.MAX_TRACE_K
    trace = policies.synthetic_trace(0.8, k, 12_000, np.random.default_rng(3), "calibrated")
    text = policies.trace_text(policies.Trace(trace.q_token, trace.q_top, trace.accepted, trace.p_token, None, True))
    data = text.encode()
    return data[: data.rfind(b"\n", 0, policies.MAX_TRACE_BYTES) + 1]


def ngram_text() -> bytes:
    """Python source filling the n-gram box to its 20,000 characters."""
    return (("def step(x, k):\n    return [x + i for i in range(k)]\n" * 500)[:20_000]).encode()


FILES = "Benchmark files"  # the uploaders' labels (English) on the pages
TRACE_FILE = "Trace file"
K_GIVEN = (("K for files that do not state it (0 = not given)", "4"),)  # Spec-Bench files and vLLM logs need it
UPLOADS = (
    Upload("measured-data CSV", "/run-library", FILES, measured_csv, file_name="largest.csv"),
    Upload(
        "Spec-Bench JSON lines",
        "/run-library",
        FILES,
        spec_bench_jsonl,
        file_name="sb.jsonl",
        typed=K_GIVEN,
    ),
    Upload("vLLM log lines", "/run-library", FILES, vllm_log, file_name="vllm.log", typed=K_GIVEN),
    Upload("config.json", "/hardware?view=memory", "Target config.json", config_json, file_name="config.json"),
    Upload(
        "trace, 200,000 rounds",
        "/strategies?view=policies&trace_src=upload",
        TRACE_FILE,
        trace_rounds,
        file_name="rounds.jsonl",
    ),
    Upload(
        "trace, K_max 64",
        "/strategies?view=policies&trace_src=upload",
        TRACE_FILE,
        trace_wide,
        file_name="wide.jsonl",
    ),
    Upload(
        "n-gram text",
        "/strategies?view=ngram&ng_src=text",
        None,
        ngram_text,
        box="Text (UTF-8 bytes are the tokens)",
    ),
)


#: Sets ``window.__specvizRerun`` once the app's script state changes (a rerun starting or ending) after now.
WATCH_RERUN_JS = """() => {
    window.__specvizRerun = false;
    const app = document.querySelector('[data-testid="stApp"]');
    new MutationObserver(() => { window.__specvizRerun = true; })
        .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""


def write_largest(folder: Path, upload: Upload) -> Path:
    """The largest accepted instance of ``upload`` written to ``folder``; its path."""
    path = folder / upload.file_name
    if not path.exists():
        path.write_bytes(upload.build())
    return path


def give(page, base_url: str, upload: Upload, path: Path, timeout_s: float = 120.0) -> float:
    """Open ``upload``'s page, give it ``path`` (or type its text), and wait until the page has settled;
    the seconds from the hand-over to that point."""
    page.goto(base_url + upload.path)
    page.wait_for_function(APP_DRAWN_JS, timeout=timeout_s * 1000)
    for label, value in upload.typed:
        field = page.get_by_label(label, exact=True)
        field.fill(value)
        field.press("Enter")
        page.wait_for_timeout(300)
        page.wait_for_function(APP_DRAWN_JS, timeout=timeout_s * 1000)
    page.evaluate(WATCH_RERUN_JS)
    start = time.monotonic()
    if upload.uploader is None:
        box = page.get_by_label(upload.box)
        box.fill(path.read_text(encoding="utf-8"))
        box.press("Control+Enter")  # Streamlit applies a text area's value on Ctrl+Enter or blur
    else:
        widget = page.locator('[data-testid="stFileUploader"]').filter(has_text=upload.uploader)
        widget.locator('input[type="file"]').set_input_files(str(path))
    # the hand-over reruns the script: wait until that rerun has started (a busy machine may take a while
    # to send the file), then until the page has settled after it
    page.wait_for_function("() => window.__specvizRerun === true", timeout=timeout_s * 1000, polling=50)
    page.wait_for_function(APP_DRAWN_JS, timeout=timeout_s * 1000, polling=100)
    return time.monotonic() - start


def server_rss_mb(port: int) -> float | None:
    """Resident memory (MB) of the ``streamlit run`` process listening on ``port`` (None where /proc lacks it)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            if b"streamlit" not in b" ".join(cmdline) or str(port).encode() not in cmdline:
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 / 1e6
        except OSError:
            continue
    return None

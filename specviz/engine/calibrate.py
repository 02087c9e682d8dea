"""Check the roofline cost model (specviz.core.hardware) against this machine (``python -m specviz calibrate``).

1. microbenchmarks: the bandwidth one-row ``F.linear`` attains streaming weights, the fp32 matmul
   rate at the decode shape, and the per-step and per-layer fixed costs (tiny GPTs of 1–8 layers);
2. the bundled pair's cached forward timed over batch B × new tokens n × context L;
3. :func:`specviz.core.hardware.step_time`, fed only step 1's figures, predicts every cell; the CSV
   holds both, ``machine.json`` the figures.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from specviz.base import machine
from specviz.base.machine import median_time
from specviz.core import hardware
from specviz.engine.models.gpt import GPT, GPTConfig

BATCHES = (1, 2, 4, 8, 16, 32, 64)
TOKENS = (1, 2, 3, 5, 9)
CONTEXTS = (64, 256, 448)
OUT_DIR = hardware.CALIBRATION_DIR


def stream_bandwidth(megabytes: int = 256, repeats: int = 5) -> float:
    """Bytes per second of a large fp32 tensor copy (each byte read once and written once)."""
    n = megabytes * 2**20 // 4
    src, dst = torch.rand(n), torch.empty(n)
    seconds = median_time(lambda: dst.copy_(src), repeats)[0]
    return 2 * n * 4 / seconds


@torch.inference_mode()
def decode_bandwidth(width: int, megabytes: int = 96, repeats: int = 5) -> float:
    """Bytes per second a one-row ``F.linear`` attains over (4·width × width) fp32 weights cycled beyond any cache."""
    w = torch.rand(4 * width, width)
    count = max(2, megabytes * 2**20 // (w.numel() * 4))
    weights, x = [torch.rand_like(w) for _ in range(count)], torch.rand(1, width)

    def sweep() -> None:
        for m in weights:
            torch.nn.functional.linear(x, m)

    return count * w.numel() * 4 / median_time(sweep, repeats, warmup=1)[0]


@torch.inference_mode()
def decode_matmul_rate(width: int, rows: int = 64, repeats: int = 9) -> float:
    """FLOP/s of ``F.linear`` of ``rows`` rows through a (4·width × width) weight: 2 · rows · 4 · width² FLOPs."""
    x, w = torch.rand(rows, width), torch.rand(4 * width, width)
    return 2 * rows * 4 * width**2 / median_time(lambda: torch.nn.functional.linear(x, w), repeats, warmup=2)[0]


def matmul_peak(n: int = 1024, repeats: int = 5, dtype: torch.dtype = torch.float32) -> float:
    """FLOP/s of an n × n × n ``torch.mm`` (2 n³ FLOPs)."""
    a, b = torch.rand(n, n, dtype=dtype), torch.rand(n, n, dtype=dtype)
    return 2 * n**3 / median_time(lambda: torch.mm(a, b), repeats)[0]


@torch.no_grad()
def forward_seconds(model: GPT, batch: int, tokens: int, context: int, repeats: int = 5) -> float:
    """Median seconds of the cached forward of ``tokens`` tokens for ``batch`` rows after ``context`` positions."""
    model.setup_cache(batch, context + tokens)
    idx = torch.randint(0, model.cfg.vocab_size, (batch, context + tokens))
    if context:
        model(idx[:, :context], 0)
    return median_time(lambda: model(idx[:, context:], context), repeats)[0]


def engine_overheads(repeats: int = 50, layers: tuple[int, ...] = (1, 2, 4, 8)) -> tuple[float, float]:
    """(per-step, per-layer) seconds: least squares t = a + b·layers over tiny GPTs, floored at 0."""
    torch.manual_seed(0)
    times = [
        forward_seconds(GPT(GPTConfig(n_layer=n, n_head=1, n_embd=16, block_size=64)).eval(), 1, 1, 8, repeats)
        for n in layers
    ]
    per_layer, per_step = np.polyfit(np.asarray(layers, dtype=float), np.asarray(times), 1)
    return max(float(per_step), 0.0), max(float(per_layer), 0.0)


def machine_spec(bandwidth: float, flops: float, per_step: float, per_layer: float) -> dict:
    """This machine as a :func:`specviz.core.hardware.gpu_spec` dict (e = 1) with its fixed costs."""
    memory_gb = _memory_gb()
    return {
        "name": f"this machine ({machine.cpu_name()}, {torch.get_num_threads()} threads)",
        "vendor": platform.machine(),
        "memory_gb": memory_gb,
        "bandwidth_tbs": bandwidth / 1e12,
        "fp32_tflops": flops / 1e12,
        "bf16_tflops": 2 * flops / 1e12,  # unused for fp32; the catalogue's column must be present
        "fp16_tflops": 2 * flops / 1e12,
        "interconnect_gbs": 1.0,
        "overhead_s": per_step,
        "layer_overhead_s": per_layer,
        "source": "python -m specviz calibrate (microbenchmarks on this machine)",
    }


def _memory_gb() -> float:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
        return kib / 1e6 * 1.024
    except (OSError, StopIteration, ValueError):
        return 16.0


def model_spec_of(model: GPT, name: str) -> dict:
    """Our GPT as a :mod:`specviz.core.hardware` model spec (GPT-2 layout: plain MLP, tied embeddings)."""
    c = model.cfg
    return hardware.model_spec(
        {
            "name": name,
            "n_layers": c.n_layer,
            "hidden_size": c.n_embd,
            "n_heads": c.n_head,
            "n_kv_heads": c.n_head,
            "head_dim": c.n_embd // c.n_head,
            "intermediate_size": 4 * c.n_embd,
            "vocab_size": c.vocab_size,
            "tied_embeddings": 1,
            "mlp": "plain",
            "params": model.num_params(),
            "max_context": c.block_size,
        }
    )


def predicted(spec: dict, gpu: dict, batch, tokens, context) -> np.ndarray:
    """hardware.step_time in fp32 with this machine's figures as attainable (e = 1) and its fixed costs."""
    return hardware.step_time(spec, gpu, batch, context, tokens, dtype="fp32")  # its own efficiencies


def calibrate(
    models: dict[str, GPT],
    batches: Iterable[int] = BATCHES,
    tokens: Iterable[int] = TOKENS,
    contexts: Iterable[int] = CONTEXTS,
    repeats: int = 5,
    progress: Callable[[str], None] | None = None,
    stream_mb: int = 96,
) -> tuple[dict, pd.DataFrame]:
    """(this machine's spec, one row per model × B × n × L with measured and microbenchmark-predicted seconds)."""
    say = progress or (lambda _: None)
    say("microbenchmarks: decode bandwidth, decode matmul rate, engine overheads")
    width = max(model.cfg.n_embd for model in models.values())
    bandwidth, flops = decode_bandwidth(width, stream_mb), decode_matmul_rate(width)
    gpu = machine_spec(bandwidth, flops, *engine_overheads())
    rows = []
    for name, model in models.items():
        spec = model_spec_of(model, name)
        for b in batches:
            say(f"{name}: batch {b}")
            for n in tokens:
                for ctx in contexts:
                    if ctx + n > model.cfg.block_size:
                        continue
                    measured = forward_seconds(model, b, n, ctx, repeats)
                    rows.append(
                        {
                            "model": name,
                            "batch": b,
                            "tokens": n,
                            "context": ctx,
                            "measured_s": measured,
                            "predicted_s": float(predicted(spec, gpu, b, n, ctx)),
                        }
                    )
    frame = pd.DataFrame(rows)
    frame["ratio"] = frame["predicted_s"] / frame["measured_s"]
    return gpu, frame


def write(gpu: dict, frame: pd.DataFrame, out_dir: Path = OUT_DIR) -> None:
    """``machine.json`` (the figures) and ``steps.csv`` (measured vs predicted) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "machine.json").write_text(json.dumps(gpu, indent=2) + "\n")
    frame.to_csv(out_dir / "steps.csv", index=False)


def summary(frame: pd.DataFrame) -> dict:
    """Median |predicted / measured − 1| overall and per model (:func:`specviz.core.hardware.calibration_errors`)."""
    return hardware.calibration_errors(frame)


def verify_cost(frame: pd.DataFrame, model: str, context: int | None = None) -> pd.DataFrame:
    """v at B = 1 per K: (T(K + 1 tokens) / T(1) − 1) / K; columns k, v_measured, v_predicted."""
    rows = frame[(frame["model"] == model) & (frame["batch"] == 1)]
    if context is None:
        contexts = sorted(rows["context"].unique())
        context = contexts[len(contexts) // 2]
    at = rows[rows["context"] == context].set_index("tokens")
    if 1 not in at.index:
        raise ValueError(f"the grid has no one-token step of {model} at B = 1, L = {context}")
    out = []
    for n in sorted(t for t in at.index if t > 1):
        k = n - 1
        out.append(
            {
                "k": k,
                "v_measured": (at.loc[n, "measured_s"] / at.loc[1, "measured_s"] - 1) / k,
                "v_predicted": (at.loc[n, "predicted_s"] / at.loc[1, "predicted_s"] - 1) / k,
            }
        )
    return pd.DataFrame(out)


def k_star_by_batch(batched: pd.DataFrame, target: dict, draft: dict, gpu: dict, context: int) -> pd.DataFrame:
    """Measured K*(B) against the roofline's, among the benchmarked K at each B (greedy rows of ``batched``).

    Measured: the K of the best median speedup (ties: smaller K; 0 where none > 1). Predicted: the
    argmax of the roofline's speedups at the α̂ measured at that B.
    """
    rows = batched[batched["temperature"] == 0]
    out = []
    for b, cell in rows.groupby("batch_size"):
        by_k = cell.groupby("k")["speedup"].median()  # index sorted by K
        alpha = float(cell["alpha"].mean())
        frame = hardware.speedup_by_batch(
            target, draft, gpu, alpha, [int(b)], [context], int(by_k.index.max()), dtype="fp32"
        )
        predicted = pd.Series([float(frame[f"s_{int(k)}"].iloc[0]) for k in by_k.index], index=by_k.index)
        out.append(
            {
                "batch": int(b),
                "alpha": alpha,
                "k_star_measured": _best_k(by_k),
                "k_star_predicted": _best_k(predicted),
            }
        )
    return pd.DataFrame(out)


def _best_k(speedup_by_k: pd.Series) -> int:
    """The K (index, ascending) of the largest speedup, the smaller on ties; 0 when none is above 1."""
    k = speedup_by_k.idxmax()
    return int(k) if speedup_by_k[k] > 1 else 0

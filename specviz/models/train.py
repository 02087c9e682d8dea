"""Train the bundled byte-level draft/target pair on the CPython standard library.

``python -m specviz train`` runs :func:`train_pair`: it splits the standard
library's ``.py`` files (tests excluded) into train and validation sets by file
with a fixed seed, trains the target and then the draft from scratch with AdamW,
checkpoints both (safetensors, resumable), measures validation bits per byte and
the pair's acceptance, and writes ``config.json`` + ``model.safetensors`` per model
plus a model card.
"""

from __future__ import annotations

import json
import math
import platform
import random
import sysconfig
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from specviz.models.gpt import GPT, GPTConfig, bits_per_byte

TARGET = GPTConfig(n_layer=6, n_head=6, n_embd=384, block_size=512)
DRAFT = GPTConfig(n_layer=1, n_head=2, n_embd=128, block_size=512)
SEPARATOR = b"\n\n"  # between concatenated files
STORAGE_DTYPE = torch.float16  # shipped weights: half the bytes, well within fp16 range (std ≈ 0.02)


# --------------------------------------------------------------------------------------
# corpus
# --------------------------------------------------------------------------------------


def stdlib_root() -> Path:
    """Folder of this interpreter's standard library."""
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files(root: Path | None = None, seed: int = 0, val_fraction: float = 0.05) -> tuple[list[Path], list[Path]]:
    """Standard-library ``.py`` files split into (train, validation) by file.

    Test suites, idlelib and site-packages are left out. Paths are sorted before a
    seeded shuffle, so the split is the same on every machine with the same stdlib.
    """
    root = Path(root) if root else stdlib_root()
    skip = {"test", "tests", "idlelib", "site-packages", "__pycache__"}
    files = sorted(p for p in root.rglob("*.py") if not skip & set(p.relative_to(root).parts))
    if len(files) < 2:
        raise ValueError(f"corpus root {root} holds {len(files)} Python files; need at least 2")
    order = list(range(len(files)))
    random.Random(seed).shuffle(order)
    n_val = max(1, round(val_fraction * len(files)))
    val = sorted(files[i] for i in order[:n_val])
    train = sorted(files[i] for i in order[n_val:])
    return train, val


def load_bytes(files: list[Path]) -> np.ndarray:
    """The files' bytes concatenated with a blank line between them, as uint8."""
    return np.frombuffer(SEPARATOR.join(p.read_bytes() for p in files), dtype=np.uint8)


def make_prompts(files: list[Path], root: Path, n: int = 12, length: int = 192, seed: int = 0) -> list[dict]:
    """``n`` prompts of ``length`` bytes, each from a different file, starting at a line start.

    Meant for validation files (never trained on): the benchmark then measures
    acceptance on text the models have not seen. Windows that are mostly blank are skipped.
    """
    rng = random.Random(seed)
    order = list(files)
    rng.shuffle(order)
    prompts = []
    for path in order:
        data = path.read_bytes()
        starts = [0] + [i + 1 for i in range(len(data) - length) if data[i] == 10]
        rng.shuffle(starts)
        for s in starts[:20]:
            window = data[s : s + length]
            if len(window) == length and len(window.strip()) > length // 2:
                text = window.decode("utf-8", errors="ignore")
                prompts.append({"source": str(path.relative_to(root)), "offset": s, "text": text})
                break
        if len(prompts) == n:
            break
    return prompts


def batch(
    data: np.ndarray, batch_size: int, seq_len: int, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows: inputs (B, T) and next-byte targets (B, T)."""
    starts = rng.integers(0, len(data) - seq_len - 1, size=batch_size)
    windows = np.stack([data[s : s + seq_len + 1] for s in starts]).astype(np.int64)  # (B, T+1)
    w = torch.from_numpy(windows)
    return w[:, :-1], w[:, 1:]


# --------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """One model's optimisation schedule."""

    steps: int  # optimiser steps
    batch_size: int = 16  # sequences per step
    seq_len: int = 512  # bytes per sequence
    lr: float = 1e-3  # peak learning rate (AdamW)
    min_lr: float = 1e-4  # cosine decay floor
    warmup: int = 100  # linear warm-up steps
    weight_decay: float = 0.1  # AdamW, on matrices only
    grad_clip: float = 1.0  # global-norm clip
    seed: int = 0  # data order and initialisation
    checkpoint_every: int = 50  # steps between resumable checkpoints


def learning_rate(step: int, tc: TrainConfig) -> float:
    """Linear warm-up to ``lr`` then cosine decay to ``min_lr`` at the last step."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    progress = min(1.0, (step - tc.warmup) / max(1, tc.steps - tc.warmup))
    return tc.min_lr + 0.5 * (tc.lr - tc.min_lr) * (1 + math.cos(math.pi * progress))


def _optimizer(model: GPT, tc: TrainConfig) -> torch.optim.AdamW:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=tc.lr,
        betas=(0.9, 0.95),
    )


def _save_checkpoint(directory: Path, model: GPT, opt: torch.optim.Optimizer, step: int, rng_state: dict) -> None:
    """Weights, AdamW moments (safetensors) and the step + data-RNG state (JSON): no pickle."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    model.save(directory)
    moments = {}
    for i, p in enumerate(model.parameters()):
        state = opt.state.get(p, {})
        for name in ("exp_avg", "exp_avg_sq"):
            if name in state:
                moments[f"{i}.{name}"] = state[name].contiguous()
    save_file(moments, str(directory / "optimizer.safetensors"))
    tmp = directory / "progress.json.tmp"
    tmp.write_text(json.dumps({"step": step, "rng": rng_state}))
    tmp.replace(directory / "progress.json")  # the step is committed last


def _load_checkpoint(directory: Path, model: GPT, opt: torch.optim.Optimizer) -> tuple[int, dict] | None:
    from safetensors.torch import load_file

    if not (directory / "progress.json").exists():
        return None
    progress = json.loads((directory / "progress.json").read_text())
    loaded = GPT.load(directory)
    model.load_state_dict(loaded.state_dict())
    moments = load_file(str(directory / "optimizer.safetensors"))
    for i, p in enumerate(model.parameters()):
        if f"{i}.exp_avg" in moments:
            opt.state[p] = {
                "step": torch.tensor(float(progress["step"])),
                "exp_avg": moments[f"{i}.exp_avg"],
                "exp_avg_sq": moments[f"{i}.exp_avg_sq"],
            }
    return progress["step"], progress["rng"]


@torch.no_grad()
def evaluate(model: GPT, data: np.ndarray, batches: int = 8, batch_size: int = 8) -> float:
    """Mean validation cross-entropy in bits per byte over fixed (seed 1234) full-context windows."""
    seq_len = model.cfg.block_size
    model.eval()
    rng = np.random.default_rng(1234)
    losses = []
    for _ in range(batches):
        x, y = batch(data, batch_size, seq_len, rng)
        losses.append(F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item())
    model.train()
    return bits_per_byte(float(np.mean(losses)))


def train_model(
    cfg: GPTConfig,
    tc: TrainConfig,
    train_data: np.ndarray,
    work_dir: Path,
    progress: Callable[[int, float], None] | None = None,
) -> tuple[GPT, dict]:
    """Train one model from scratch (or resume from ``work_dir``); returns it and a log."""
    torch.manual_seed(tc.seed)  # initialisation only; the data order has its own generator
    model = GPT(cfg)
    opt = _optimizer(model, tc)
    rng = np.random.default_rng(tc.seed)
    start = 0
    resumed = _load_checkpoint(work_dir, model, opt)
    if resumed is not None:
        start, rng_state = resumed
        rng.bit_generator.state = rng_state
    model.train()
    t0, last_loss = time.perf_counter(), float("nan")
    for step in range(start, tc.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, tc)
        x, y = batch(train_data, tc.batch_size, tc.seq_len, rng)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
        opt.step()
        last_loss = loss.item()
        if progress is not None:
            progress(step + 1, bits_per_byte(last_loss))
        if (step + 1) % tc.checkpoint_every == 0 or step + 1 == tc.steps:
            _save_checkpoint(work_dir, model, opt, step + 1, rng.bit_generator.state)
    log = {
        "steps": tc.steps,
        "resumed_from": start,
        "seconds_this_run": round(time.perf_counter() - t0, 1),
        "final_train_bits_per_byte": round(bits_per_byte(last_loss), 4) if start < tc.steps else None,
    }
    return model.eval(), log


# --------------------------------------------------------------------------------------
# measuring the pair
# --------------------------------------------------------------------------------------


@torch.no_grad()
def pair_agreement(target: GPT, draft: GPT, data: np.ndarray, windows: int = 32) -> dict:
    """Acceptance on held-out text: greedy argmax agreement and mean Σ min(p, q) at T = 1."""
    seq_len = min(target.cfg.block_size, draft.cfg.block_size)
    rng = np.random.default_rng(4321)
    x, _ = batch(data, windows, seq_len, rng)
    p = torch.softmax(target(x).double(), -1)
    q = torch.softmax(draft(x).double(), -1)
    return {
        "alpha_greedy": round(float((p.argmax(-1) == q.argmax(-1)).double().mean()), 4),
        "alpha_t1": round(float(torch.minimum(p, q).sum(-1).mean()), 4),
        "positions": int(x.numel()),
    }


@torch.no_grad()
def decode_step_ms(model: GPT, steps: int = 100, context: int = 128) -> float:
    """Median wall time of one cached single-token decode step at ``context`` tokens, in ms."""
    context = min(context, model.cfg.block_size // 2)
    model.setup_cache(1, model.cfg.block_size)
    x = torch.randint(0, 256, (1, context))
    model(x, 0)
    times = []
    for i in range(steps):
        t = time.perf_counter()
        model(x[:, :1], context + i % context)
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def train_pair(
    out_dir: Path,
    work_dir: Path,
    target_tc: TrainConfig,
    draft_tc: TrainConfig,
    corpus_root: Path | None = None,
    target_cfg: GPTConfig = TARGET,
    draft_cfg: GPTConfig = DRAFT,
    command: str = "",
    progress_factory: Callable[[str, int], Callable[[int, float], None]] | None = None,
) -> dict:
    """Train target then draft, save both under ``out_dir`` with a model card; return the card."""
    train_files, val_files = corpus_files(corpus_root, seed=target_tc.seed)
    train_data, val_data = load_bytes(train_files), load_bytes(val_files)
    card = {
        "command": command,
        "corpus": {
            "source": f"CPython {platform.python_version()} standard library (.py files; test, tests, idlelib excluded)",
            "train_files": len(train_files),
            "validation_files": len(val_files),
            "train_bytes": len(train_data),
            "validation_bytes": len(val_data),
            "validation_file_list": [str(p.relative_to(corpus_root or stdlib_root())) for p in val_files],
        },
    }
    for name, cfg, tc in (("target", target_cfg, target_tc), ("draft", draft_cfg, draft_tc)):
        prog = progress_factory(name, tc.steps) if progress_factory else None
        model, log = train_model(cfg, tc, train_data, work_dir / name, prog)
        model.save(out_dir / name, dtype=STORAGE_DTYPE)
        card[name] = {"config": asdict(cfg), "parameters": model.num_params(), "train": asdict(tc), "log": log}
    card.update(measure_pair(out_dir, val_data, card))
    write_card(out_dir, card)
    return card


def measure_pair(out_dir: Path, val_data: np.ndarray, card: dict) -> dict:
    """Card entries measured on the pair *as shipped* (reloaded from ``out_dir``): validation bits
    per byte of each model, acceptance on held-out text, single-step times and c."""
    target, draft = GPT.load(out_dir / "target"), GPT.load(out_dir / "draft")
    out = {
        name: {
            **card[name],
            "storage_dtype": str(STORAGE_DTYPE).removeprefix("torch."),
            "validation_bits_per_byte": round(evaluate(model, val_data), 4),
        }
        for name, model in (("target", target), ("draft", draft))
    }
    out["acceptance_on_validation"] = pair_agreement(target, draft, val_data)
    t_p, t_q = decode_step_ms(target), decode_step_ms(draft)
    out["speed"] = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
        "t_target_ms": round(t_p, 3),
        "t_draft_ms": round(t_q, 3),
        "c": round(t_p / t_q, 2),
    }
    return out


def remeasure_card(out_dir: Path, corpus_root: Path | None = None) -> dict:
    """Re-run :func:`measure_pair` on a trained pair (weights untouched) and rewrite its card.

    The held-out files are the ones ``card.json`` lists, read from ``corpus_root`` (default:
    this Python's stdlib). Useful after an engine change or on another machine: the speed
    entries (T_target, T_draft, c) depend on both.
    """
    try:
        card = json.loads((out_dir / "card.json").read_text())
        names = card["corpus"]["validation_file_list"]
        if not {"target", "draft"} <= card.keys():  # measure_pair extends these entries
            raise KeyError("target/draft")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{out_dir}/card.json is missing or lacks corpus.validation_file_list, target or draft: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    root = corpus_root or stdlib_root()
    files = [root / name for name in names]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ValueError(f"{len(missing)} held-out file(s) listed in card.json are not under {root}: {missing[:3]}")
    card.update(measure_pair(out_dir, load_bytes(files), card))
    write_card(out_dir, card)
    return card


def write_card(out_dir: Path, card: dict) -> None:
    """card.json (machine-readable) and README.md (the model card) beside the weights."""
    (out_dir / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    (out_dir / "README.md").write_text(card_markdown(card))


def card_markdown(card: dict) -> str:
    """The model card as Markdown, from the card dictionary ``train_pair`` writes as card.json."""
    t, d, acc, speed, corpus = (
        card["target"],
        card["draft"],
        card["acceptance_on_validation"],
        card["speed"],
        card["corpus"],
    )

    def shape(m):
        c = m["config"]
        return f"{c['n_layer']} layers × {c['n_embd']} wide, {c['n_head']} heads, context {c['block_size']} bytes"

    def schedule(m):
        tr = m["train"]
        return (
            f"{tr['steps']} steps of {tr['batch_size']} × {tr['seq_len']} bytes, AdamW lr {tr['lr']:g} "
            f"(warm-up {tr['warmup']}, cosine to {tr['min_lr']:g}), seed {tr['seed']}"
        )

    history = "".join(f"\n{line}\n" for line in card.get("history", []))
    return f"""# Bundled draft/target pair

Byte-level GPTs (vocabulary: the 256 byte values) trained by specviz itself, so the live page and
`python -m specviz bench` work offline. Weights: `target/model.safetensors`, `draft/model.safetensors`
(safetensors, stored as {t.get("storage_dtype", "float32")}, loaded as fp32 on the CPU and bf16/fp16 on CUDA)
with `config.json` beside each. Every number below was measured on the weights as shipped.

| | target | draft |
|---|---|---|
| shape | {shape(t)} | {shape(d)} |
| parameters | {t["parameters"]:,} | {d["parameters"]:,} |
| training | {schedule(t)} | {schedule(d)} |
| validation bits per byte | {t["validation_bits_per_byte"]} | {d["validation_bits_per_byte"]} |

**Corpus.** {corpus["source"]}: {corpus["train_files"]} files ({corpus["train_bytes"]:,} bytes) for
training and {corpus["validation_files"]} other files ({corpus["validation_bytes"]:,} bytes) held out,
split by file with a fixed seed. Benchmark prompts (`data/prompts/`) come from the held-out files.

**Acceptance on held-out text** ({acc["positions"]:,} positions): greedy α (draft argmax = target
argmax) = **{acc["alpha_greedy"]}**; at temperature 1, α = mean Σ min(p, q) = **{acc["alpha_t1"]}**.

**Speed** ({speed["machine"]}): one cached decode step, as specviz's engine runs it, takes
{speed["t_target_ms"]} ms (target) and {speed["t_draft_ms"]} ms (draft), so c = T_target / T_draft ≈ **{speed["c"]}**.
Re-measure on your machine with `python -m specviz card` (weights untouched).

**Reproduce:** `{card["command"]}` (resumable: rerun the same command after an interruption).
{history}"""

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
import random
import sysconfig
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from specviz.engine.models.gpt import GPT, GPTConfig, bits_per_byte

TARGET = GPTConfig(n_layer=6, n_head=4, n_embd=256, block_size=512)
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
    seeded shuffle, so the split is the same on every machine with the same stdlib. Training uses
    the default seed for both models (their ``--seed`` sets initialisation and data order only), so a
    draft never trains on the target's held-out files.
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


@dataclass(frozen=True)
class Teacher:
    """The target's next-byte distribution on fixed windows of the training text, computed once.

    A draft distilled from it learns the target's whole distribution (which sets α at T = 1 through
    Σ min(p, q)), not only the next byte. Top-k keeps the bytes that carry almost all of p.
    """

    tokens: np.ndarray  # (W, T + 1) uint8: window w's bytes
    top_p: np.ndarray  # (W, T, k) float16: p of the k likeliest next bytes at each position
    top_i: np.ndarray  # (W, T, k) uint8: which bytes those are

    def batch(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``batch_size`` random windows: inputs (B, T), next bytes (B, T), top_p (B, T, k), top_i (B, T, k)."""
        rows = rng.integers(0, len(self.tokens), size=batch_size)
        w = torch.from_numpy(self.tokens[rows].astype(np.int64))
        p = torch.from_numpy(self.top_p[rows].astype(np.float32))
        return w[:, :-1], w[:, 1:], p, torch.from_numpy(self.top_i[rows].astype(np.int64))

    def save(self, path: Path) -> None:
        """One ``.npz`` (no pickle)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, tokens=self.tokens, top_p=self.top_p, top_i=self.top_i)

    @classmethod
    def load(cls, path: Path) -> Teacher:
        with np.load(path, allow_pickle=False) as z:
            return cls(z["tokens"], z["top_p"], z["top_i"])


@dataclass(frozen=True)
class DistilConfig:
    """How a draft learns from the target: its top-k next-byte probabilities on fixed windows."""

    windows: int = 8000  # training windows the target is run over once (each seq_len bytes)
    top_k: int = 8  # next bytes kept per position (with their probabilities)


def cached_teacher(
    target_dir: Path,
    data: np.ndarray,
    dc: DistilConfig,
    seq_len: int,
    work_dir: Path,
    seed: int = 0,
    precision: str = "fp32",
) -> Teacher:
    """:func:`teacher_outputs` of the model in ``target_dir``, cached in ``work_dir`` under a hash of
    its weights and of the training bytes (a new target or a new corpus computes it afresh)."""
    import hashlib

    digest = hashlib.sha256((target_dir / "model.safetensors").read_bytes())
    digest.update(np.ascontiguousarray(data).tobytes())
    name = f"teacher-{digest.hexdigest()[:12]}-{dc.windows}x{seq_len}-top{dc.top_k}-seed{seed}-{precision}.npz"
    path = work_dir / name
    if path.is_file():
        return Teacher.load(path)
    teacher = teacher_outputs(GPT.load(target_dir), data, dc.windows, seq_len, dc.top_k, seed, precision=precision)
    teacher.save(path)
    return teacher


@torch.no_grad()
def teacher_outputs(
    target: GPT,
    data: np.ndarray,
    windows: int,
    seq_len: int,
    top_k: int = 8,
    seed: int = 0,
    chunk: int = 16,
    precision: str = "fp32",
) -> Teacher:
    """Run ``target`` once over ``windows`` random windows of ``data`` (seeded) and keep its top-k.

    Forward passes run in ``precision`` (:data:`PRECISIONS`: "bf16" autocasts the matmuls, worth it
    only on CPUs with native bf16) with an fp32 softmax; ``chunk`` windows at a time.
    """
    dtype = PRECISIONS[precision]
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(data) - seq_len - 1, size=windows)
    tokens = np.stack([data[s : s + seq_len + 1] for s in starts])  # (W, T + 1)
    top_p = np.empty((windows, seq_len, top_k), dtype=np.float16)
    top_i = np.empty((windows, seq_len, top_k), dtype=np.uint8)
    target.eval()
    for a in range(0, windows, chunk):
        x = torch.from_numpy(tokens[a : a + chunk, :-1].astype(np.int64))
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            logits = target(x)  # (b, T, V)
        p, i = torch.softmax(logits.float(), -1).topk(top_k, dim=-1)
        top_p[a : a + chunk], top_i[a : a + chunk] = p.numpy(), i.numpy()
    return Teacher(tokens, top_p, top_i)


def lm_loss(
    logits: torch.Tensor, y: torch.Tensor, top_p: torch.Tensor | None = None, top_i: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean next-byte loss in nats: cross-entropy against the data, or against the teacher.

    With a teacher: −Σ_j p_j log q(i_j) − (1 − Σ_j p_j) log q(y), i.e. the cross-entropy to the
    teacher's top-k with the mass it leaves out given to the byte that came (a distribution that
    sums to 1, whose minimum over q is at q = that mixture). logits (B, T, V); y (B, T); top (B, T, k).
    """
    logq = torch.log_softmax(logits.float(), -1)  # (B, T, V)
    true = logq.gather(-1, y.unsqueeze(-1)).squeeze(-1)  # (B, T)
    if top_p is None:
        return -true.mean()
    soft = (top_p * logq.gather(-1, top_i)).sum(-1)  # (B, T)
    return -(soft + (1 - top_p.sum(-1)).clamp_min(0) * true).mean()


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
    eval_every: int = 0  # steps between held-out evaluations for the loss curve (0: none)
    micro_batches: int = 1  # forward/backward passes per step (gradient accumulation); divides batch_size
    precision: str = "fp32"  # "fp32", or "bf16": matmuls under torch.autocast, weights and AdamW in fp32

    def __post_init__(self):
        if self.micro_batches < 1 or self.batch_size % self.micro_batches:
            raise ValueError(
                f"micro_batches must be >= 1 and divide batch_size {self.batch_size}; got {self.micro_batches}"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}; got {self.precision!r}")


PRECISIONS = {"fp32": None, "bf16": torch.bfloat16}  #: training precision → autocast dtype (None: no autocast)
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  #: /proc/cpuinfo flags of CPUs that run bf16 matmuls natively


def native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU multiplies bf16 natively (AMX or AVX-512-BF16 in ``/proc/cpuinfo``'s flags).

    Without them bf16 matmuls are emulated and an autocast training step is many times slower than
    fp32 (docs/performance.md, train_speed), so ``auto`` precision picks fp32 there.
    ``cpuinfo`` is the file's text (default: read it; False where it cannot be read).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = {f for line in cpuinfo.splitlines() if line.startswith("flags") for f in line.split(":", 1)[1].split()}
    return any(flag in flags for flag in BF16_CPU_FLAGS)


def auto_precision(precision: str) -> str:
    """``precision``, with "auto" resolved to "bf16" on a CPU with native bf16 and "fp32" elsewhere."""
    return ("bf16" if native_bf16() else "fp32") if precision == "auto" else precision


def learning_rate(step: int, tc: TrainConfig) -> float:
    """Linear warm-up to ``lr`` then cosine decay to ``min_lr`` at the last step."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    progress = min(1.0, (step - tc.warmup) / max(1, tc.steps - tc.warmup))
    return tc.min_lr + 0.5 * (tc.lr - tc.min_lr) * (1 + math.cos(math.pi * progress))


def optimizer(model: GPT, tc: TrainConfig, fused: bool = True) -> torch.optim.AdamW:
    """AdamW (β = 0.9, 0.95): weight decay ``tc.weight_decay`` on matrices, none on norms and biases.

    ``fused`` (default) updates all parameters in one kernel: the same arithmetic as the ``foreach``
    form and, on the 2-core CPU, 0.7 s less per step of the 11 M-parameter target.
    """
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=tc.lr,
        betas=(0.9, 0.95),
        fused=fused,
        foreach=None if fused else True,
    )


def train_step(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    data: np.ndarray | Teacher,
    tc: TrainConfig,
    rng: np.random.Generator,
    precision: str | None = None,
) -> float:
    """One optimiser step on ``tc.batch_size`` random windows; returns the batch's mean loss in nats.

    ``data`` is the training text (loss: cross-entropy to the next byte) or a :class:`Teacher`
    (loss: :func:`lm_loss` against the teacher's top-k). The batch is drawn at once and split into
    ``tc.micro_batches`` equal parts, each loss scaled by 1 / micro_batches before its backward, so
    the gradient equals the whole batch's. The global gradient norm is clipped to ``tc.grad_clip``.
    ``precision`` (default ``tc.precision``) "bf16" runs forward and backward under bf16 autocast;
    the loss is computed in fp32.
    """
    dtype = PRECISIONS[precision or tc.precision]
    if isinstance(data, Teacher):
        parts = data.batch(tc.batch_size, rng)  # x, y, top_p, top_i
    else:
        parts = batch(data, tc.batch_size, tc.seq_len, rng)  # x, y: (B, T) each
    device = next(model.parameters()).device
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for x, y, *top in zip(*(t.chunk(tc.micro_batches) for t in parts), strict=True):
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            logits = model(x.to(device))  # (b, T, V)
        loss = lm_loss(logits, y.to(device), *(t.to(device) for t in top))
        (loss / tc.micro_batches).backward()
        total += loss.item() / tc.micro_batches
    torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
    opt.step()
    return total


def _save_checkpoint(
    directory: Path,
    model: GPT,
    opt: torch.optim.Optimizer,
    step: int,
    rng_state: dict,
    curve: list,
    seconds: float,
    window: list,
) -> None:
    """Weights, AdamW moments (safetensors) and the step, data-RNG state, loss curve, the training
    losses since the curve's last point and the seconds so far (JSON): no pickle."""
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
    progress = {"step": step, "rng": rng_state, "curve": curve, "seconds": round(seconds, 1), "window": window}
    tmp.write_text(json.dumps(progress))
    tmp.replace(directory / "progress.json")  # the step is committed last


def _load_checkpoint(
    directory: Path, model: GPT, opt: torch.optim.Optimizer
) -> tuple[int, dict, list, float, list[float]] | None:
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
    return (
        progress["step"],
        progress["rng"],
        progress.get("curve", []),
        progress.get("seconds", 0.0),
        progress.get("window", []),
    )


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


@torch.no_grad()
def evaluate_all(model: GPT, data: np.ndarray, batch_size: int = 16) -> float:
    """Held-out bits per byte over every whole non-overlapping ``block_size`` window of ``data``.

    Each window is scored from its start, as training scores its windows, so this measures what
    the training loss measures, on text the model never saw. Deterministic (no sampling).
    """
    t = model.cfg.block_size
    n = (len(data) - 1) // t
    windows = np.stack([data[i * t : i * t + t + 1] for i in range(n)]).astype(np.int64)  # (n, T + 1)
    model.eval()
    total = 0.0
    for a in range(0, n, batch_size):
        w = torch.from_numpy(windows[a : a + batch_size])
        logits = model(w[:, :-1])  # (b, T, V)
        total += F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten(), reduction="sum").item()
    return bits_per_byte(total / (n * t))


@dataclass(frozen=True)
class UnlikelihoodConfig:
    """Sequence-level unlikelihood fine-tuning against greedy loops (Welleck et al. 2019, "Neural Text
    Generation with Unlikelihood Training", §5.2): every ``every``-th step continues training-text
    prefixes greedily and lowers the probability of each continuation byte that sits in a repeated
    ``n``-gram (:func:`unlikelihood_step`); the other steps are plain next-byte steps, which keep the
    model's likelihood of real text.

    n = 16 bytes rather than 4: in 128-byte windows of the training text, 40 % of the bytes sit in a
    repeated 4-gram (indentation, ``self.``) against 10 % in a repeated 16-gram, while the greedy
    loops of a small byte-level model repeat 16-grams too (65 % of its continuation bytes for the
    first 6 × 256 target), so n = 16 pushes down the loops and spares ordinary code."""

    every: int = 2  # one unlikelihood step in every `every` steps (1: all of them)
    prefix: int = 128  # bytes of training text before each greedy continuation
    new_tokens: int = 128  # bytes continued greedily per prefix
    n: int = 16  # the n-gram (bytes) whose repeats are penalised: about Welleck's 4 subword tokens

    def __post_init__(self):
        for name in ("every", "prefix", "new_tokens", "n"):
            if getattr(self, name) < 1:
                raise ValueError(f"unlikelihood {name} must be >= 1; got {getattr(self, name)}")


def repeated_ngram_mask(tokens: np.ndarray, n: int = 4) -> np.ndarray:
    """Which tokens belong to an ``n``-gram that already occurred earlier in the same row.

    Position j is marked when some window tokens[i : i + n] containing j (i ≤ j < i + n) equals an
    earlier window tokens[h : h + n], h < i: the candidates of sequence-level unlikelihood as the
    authors' code marks them (Welleck et al. 2019, §5.2). tokens (B, N) → mask (B, N), bool.
    """
    mask = np.zeros(tokens.shape, dtype=bool)  # (B, N)
    for row, seq in enumerate(np.asarray(tokens).tolist()):
        seen = set()
        for i in range(len(seq) - n + 1):
            gram = tuple(seq[i : i + n])
            if gram in seen:
                mask[row, i : i + n] = True
            seen.add(gram)
    return mask


def unlikelihood_loss(logits: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean unlikelihood loss in nats: −Σ_t mask_t · log(1 − p(tokens_t)) / (B · N).

    ``logits`` (B, N, V) are the model's predictions for ``tokens`` (B, N); ``mask`` (B, N) marks the
    tokens to push down (:func:`repeated_ngram_mask`). 1 − p is floored at 1e-5 so a byte the model
    is certain of gives a finite loss.
    """
    p = torch.softmax(logits.float(), -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, N)
    return -(torch.log((1 - p).clamp_min(1e-5)) * mask).sum() / mask.numel()


def unlikelihood_step(
    model: GPT,
    opt: torch.optim.Optimizer,
    data: np.ndarray,
    tc: TrainConfig,
    uc: UnlikelihoodConfig,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """One sequence-level unlikelihood step; returns (loss in nats, share of continuation bytes in a
    repeated n-gram).

    ``tc.batch_size`` random prefixes of ``uc.prefix`` bytes are continued greedily by ``model``
    itself for ``uc.new_tokens`` bytes (KV-cached, no gradient); the whole sequence is then run
    without the cache and :func:`unlikelihood_loss` is taken over the continuation, masked by
    :func:`repeated_ngram_mask`. The gradient norm is clipped to ``tc.grad_clip``.
    """
    from specviz.engine.decoding import generate_target_only_batch

    x, _ = batch(data, tc.batch_size, uc.prefix, rng)  # (B, P)
    device = next(model.parameters()).device
    model.eval()
    cont, _ = generate_target_only_batch(model, list(x), uc.new_tokens, 0.0)  # (B, N)
    model.train()
    cont = cont.clone()  # out of inference mode, so autograd may keep it
    mask_np = repeated_ngram_mask(cont.numpy(), uc.n)  # (B, N)
    seq = torch.cat([x, cont], 1).to(device)  # (B, P + N)
    opt.zero_grad(set_to_none=True)
    logits = model(seq[:, :-1])[:, uc.prefix - 1 :]  # (B, N, V): the predictions of the continuation
    loss = unlikelihood_loss(logits, seq[:, uc.prefix :], torch.from_numpy(mask_np).to(device))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
    opt.step()
    return loss.item(), float(mask_np.mean())


def train_model(
    cfg: GPTConfig,
    tc: TrainConfig,
    train_data: np.ndarray | Teacher,
    work_dir: Path,
    progress: Callable[[int, float], None] | None = None,
    val_data: np.ndarray | None = None,
    init_from: Path | None = None,
    unlikelihood: UnlikelihoodConfig | None = None,
) -> tuple[GPT, dict]:
    """Train one model from scratch, or from the weights in ``init_from`` (a fresh optimiser and
    schedule: a warm start), or resume from ``work_dir``; returns it and a log.

    With ``tc.eval_every`` and ``val_data``, the log's ``curve`` holds one row per ``eval_every``
    steps: [step, mean training bits/byte over those steps, held-out bits/byte (:func:`evaluate`,
    4 × 8 windows)]. The curve is kept in the checkpoint, so a resumed run continues it.
    With ``unlikelihood`` (plain-text training data only), every ``unlikelihood.every``-th step is an
    :func:`unlikelihood_step` and each curve row gains a fourth entry: the mean share of greedy
    continuation bytes in a repeated n-gram over those steps (the training bits/byte are then the
    plain steps' only).
    """
    torch.manual_seed(tc.seed)  # initialisation only; the data order has its own generator
    model = GPT(cfg)
    if init_from is not None:  # a checkpoint in work_dir, if any, overrides this below
        start_from = GPT.load(init_from)
        if start_from.cfg != cfg:
            raise ValueError(f"{init_from} holds a {start_from.cfg} model; training a {cfg}")
        model.load_state_dict(start_from.state_dict())
    opt = optimizer(model, tc)
    rng = np.random.default_rng(tc.seed)
    start, curve, before, window = 0, [], 0.0, []  # window: training losses since the curve's last point
    resumed = _load_checkpoint(work_dir, model, opt)
    if resumed is not None:
        start, rng_state, curve, before, window = resumed
        rng.bit_generator.state = rng_state
    model.train()
    t0, last_loss = time.perf_counter(), float("nan")
    for step in range(start, tc.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, tc)
        if unlikelihood is not None and step % unlikelihood.every == 0:
            _, share = unlikelihood_step(model, opt, train_data, tc, unlikelihood, rng)
            window.append([share])  # a list: the window also holds the plain steps' losses (floats)
        else:
            last_loss = train_step(model, opt, train_data, tc, rng)
            window.append(last_loss)
        if progress is not None:
            progress(step + 1, bits_per_byte(last_loss))
        if tc.eval_every and val_data is not None and (step + 1) % tc.eval_every == 0:
            held_out = evaluate(model, val_data, batches=4)
            losses = [w for w in window if not isinstance(w, list)]
            row = [step + 1, round(bits_per_byte(float(np.mean(losses))), 4) if losses else None, round(held_out, 4)]
            shares = [w[0] for w in window if isinstance(w, list)]
            curve.append(row + [round(float(np.mean(shares)), 4)] if shares else row)
            window = []
        if (step + 1) % tc.checkpoint_every == 0 or step + 1 == tc.steps:
            seconds = before + time.perf_counter() - t0
            _save_checkpoint(work_dir, model, opt, step + 1, rng.bit_generator.state, curve, seconds, window)
    log = {
        "steps": tc.steps,
        "resumed_from": start,
        "seconds_this_run": round(time.perf_counter() - t0, 1),
        "seconds_all_runs": round(before + time.perf_counter() - t0, 1),  # up to the last checkpoint, plus this run
        "final_train_bits_per_byte": round(bits_per_byte(last_loss), 4) if math.isfinite(last_loss) else None,
        "curve": curve,
    }
    return model.eval(), log


def train_one(
    name: str,
    cfg: GPTConfig,
    tc: TrainConfig,
    out_dir: Path,
    work_dir: Path,
    corpus_root: Path | None = None,
    command: str = "",
    progress: Callable[[int, float], None] | None = None,
    distil: DistilConfig | None = None,
    init_from: Path | None = None,
    unlikelihood: UnlikelihoodConfig | None = None,
) -> dict:
    """Train one model of the pair (``name``: "target" or "draft") on the corpus split and save it
    (from scratch, or warm-started from the weights in ``init_from``).

    Writes ``out_dir/name/`` (config.json, model.safetensors in :data:`STORAGE_DTYPE`) and
    ``train.json`` beside them: shape, parameters, schedule, log with the loss curve, and the command.
    Checkpoints go to ``work_dir/name``; rerunning the same command resumes there.

    With ``distil``, the model learns from the target already saved in ``out_dir/target`` through
    :func:`teacher_outputs`, computed once and cached in ``work_dir`` under the target's weights hash.
    With ``unlikelihood``, training mixes in sequence-level unlikelihood steps (:func:`train_model`);
    it needs the plain text, so it cannot be combined with ``distil``.
    """
    if distil is not None and unlikelihood is not None:
        raise ValueError("unlikelihood training needs the plain text; it cannot be combined with distillation")
    train_files, val_files = corpus_files(corpus_root)  # one split for both models, whatever their seeds
    data: np.ndarray | Teacher = load_bytes(train_files)
    if distil is not None:
        data = cached_teacher(out_dir / "target", data, distil, tc.seq_len, work_dir, tc.seed, tc.precision)
    model, log = train_model(cfg, tc, data, work_dir / name, progress, load_bytes(val_files), init_from, unlikelihood)
    model.save(out_dir / name, dtype=STORAGE_DTYPE)
    record = {"config": asdict(cfg), "parameters": model.num_params(), "train": asdict(tc), "log": log}
    if distil is not None:
        record["distil"] = asdict(distil)
    if unlikelihood is not None:
        record["unlikelihood"] = asdict(unlikelihood)
    if init_from is not None:
        record["init_from"] = str(init_from)
        earlier = init_from / "train.json"  # the warm start's own training, so the card shows all of it
        if earlier.is_file():
            record["warmed_from"] = json.loads(earlier.read_text())
    (out_dir / name / "train.json").write_text(json.dumps({**record, "command": command}, indent=2) + "\n")
    return record

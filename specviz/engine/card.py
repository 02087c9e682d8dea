"""The bundled pair's model card (card.json, README.md from ``card.md.j2``, loss_curve.svg), measured as shipped."""

from __future__ import annotations

import functools
import json
import math
import platform
import time
from collections.abc import Callable
from pathlib import Path

import jinja2
import numpy as np
import torch

from specviz.engine.models.gpt import GPT, GPTConfig
from specviz.engine.train import (
    DRAFT,
    SEPARATOR,
    STORAGE_DTYPE,
    TARGET,
    DistilConfig,
    TrainConfig,
    batch,
    corpus_files,
    evaluate_all,
    load_bytes,
    stdlib_root,
    train_one,
)

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
    distil: DistilConfig | None = None,
    extra: Callable[[GPT, GPT], dict] | None = None,
) -> dict:
    """Train target then draft (:func:`train_one`), save both under ``out_dir``, return their model card."""
    for name, cfg, tc in (("target", target_cfg, target_tc), ("draft", draft_cfg, draft_tc)):
        prog = progress_factory(name, tc.steps) if progress_factory else None
        train_one(name, cfg, tc, out_dir, work_dir, corpus_root, command, prog, distil if name == "draft" else None)
    (out_dir / "card.json").unlink(missing_ok=True)  # a new pair: the card is made from its training records
    return remeasure_card(out_dir, corpus_root, extra)


def measure_pair(
    out_dir: Path, val_data: np.ndarray, card: dict, extra: Callable[[GPT, GPT], dict] | None = None
) -> dict:
    """Card entries measured on the shipped pair: bits/byte, acceptance, step times, c, plus ``extra``."""
    target, draft = GPT.load(out_dir / "target"), GPT.load(out_dir / "draft")
    out = {
        name: {
            **card[name],
            "storage_dtype": str(STORAGE_DTYPE).removeprefix("torch."),
            "validation_bits_per_byte": round(evaluate_all(model, val_data), 4),
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
    if extra is not None:
        out.update(extra(target, draft))
    return out


def stages(record: dict) -> list[dict]:
    """A model's training runs, oldest first, following ``record["warmed_from"]``."""
    earlier = record.get("warmed_from")
    return ([] if earlier is None else stages(earlier)) + [record]


def full_curve(record: dict) -> list[list[float]]:
    """The loss curve over all :func:`stages`, each stage's steps offset by the earlier ones'."""
    rows, offset = [], 0
    for stage in stages(record):
        rows += [[offset + row[0], *row[1:]] for row in stage["log"].get("curve", [])]
        offset += stage["train"]["steps"]
    return rows


def card_from_training(out_dir: Path, corpus_root: Path | None = None) -> dict:
    """A card's unmeasured part from each model's ``train.json``: corpus split, shapes, schedules, logs, commands."""
    records = {}
    for name in ("target", "draft"):
        try:
            records[name] = json.loads((out_dir / name / "train.json").read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{out_dir}/{name}/train.json is missing or unreadable: {exc}") from None
    root = corpus_root or stdlib_root()
    train_files, val_files = corpus_files(root)
    runs = [stage.get("command", "") for name in ("target", "draft") for stage in stages(records[name])]
    commands = dict.fromkeys(runs)  # in order, once
    for record in records.values():
        record.pop("command", None)
    card = {
        "command": " && ".join(c for c in commands if c),
        "corpus": corpus_summary(root, train_files, val_files),
    }
    return card | records


def card_with_training(out_dir: Path, corpus_root: Path | None = None) -> dict:
    """The card's training part, from both ``train.json`` or the old card with one entry replaced."""
    fresh = [name for name in ("target", "draft") if (out_dir / name / "train.json").exists()]
    try:
        card = json.loads((out_dir / "card.json").read_text()) if (out_dir / "card.json").exists() else {}
        if len(fresh) == 2 or not card:
            return card_from_training(out_dir, corpus_root) | {k: card[k] for k in ("history",) if k in card}
        record = json.loads((out_dir / fresh[0] / "train.json").read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{out_dir}: card.json or {fresh[0]}/train.json is unreadable: {exc}") from None
    card[fresh[0]] = record
    return card


def corpus_summary(root: Path, train_files: list[Path], val_files: list[Path]) -> dict:
    """The card's corpus entry: source, file and byte counts, and the held-out files by name."""
    return {
        "source": f"CPython {platform.python_version()} standard library (.py files; test, tests, idlelib excluded)",
        "train_files": len(train_files),
        "validation_files": len(val_files),
        "train_bytes": int(sum(p.stat().st_size for p in train_files) + len(SEPARATOR) * (len(train_files) - 1)),
        "validation_bytes": int(sum(p.stat().st_size for p in val_files) + len(SEPARATOR) * (len(val_files) - 1)),
        "validation_file_list": [str(p.relative_to(root)) for p in val_files],
    }


def remeasure_card(
    out_dir: Path, corpus_root: Path | None = None, extra: Callable[[GPT, GPT], dict] | None = None
) -> dict:
    """Re-run :func:`measure_pair` on a trained pair (weights untouched) and rewrite its card.

    Held-out files are those ``card.json`` lists, read from ``corpus_root`` (default: this stdlib).
    """
    retrained = any((out_dir / name / "train.json").exists() for name in ("target", "draft"))
    try:
        card = (
            card_with_training(out_dir, corpus_root) if retrained else json.loads((out_dir / "card.json").read_text())
        )
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
    card.update(measure_pair(out_dir, load_bytes(files), card, extra))
    write_card(out_dir, card)
    return card


def write_card(out_dir: Path, card: dict) -> None:
    """card.json (machine-readable) and, once measured, README.md (the model card) beside the weights."""
    (out_dir / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    if "speed" in card:
        (out_dir / "README.md").write_text(card_markdown(card))
    curves = {name: full_curve(card[name]) for name in ("target", "draft") if name in card}
    if any(curves.values()):
        (out_dir / "loss_curve.svg").write_text(curve_svg(curves))


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
        def one(run, more):
            tr, ul = run["train"], run.get("unlikelihood")
            unlikely = (
                f" (one step in {ul['every']}: sequence-level unlikelihood on greedy {ul['new_tokens']}-byte "
                f"continuations of {ul['prefix']}-byte prefixes, against repeated {ul['n']}-grams)"
                if ul
                else ""
            )
            return (
                f"{tr['steps']} {'more ' if more else ''}steps of {tr['batch_size']} × {tr['seq_len']} bytes{unlikely}, "
                f"AdamW lr {tr['lr']:g} (warm-up {tr['warmup']}, cosine to {tr['min_lr']:g}), seed {tr['seed']}"
            )

        runs = stages(m)
        return "; then, from those weights, ".join(one(r, i > 0) for i, r in enumerate(runs))

    def schedule_extras(m):
        tr, runs = m["train"], stages(m)
        parts = [f"{tr.get('precision', 'fp32')}"]
        if tr.get("micro_batches", 1) > 1:
            parts.append(f"{tr['micro_batches']} micro-batches")
        if "distil" in m:
            parts.append(
                f"distilled from the target's top-{m['distil']['top_k']} on {m['distil']['windows']:,} windows"
            )
        seconds = sum(r["log"].get("seconds_all_runs", 0) for r in runs)
        if seconds:
            parts.append(f"{seconds / 3600:.2f} h of training (wall clock)")
        return ", ".join(parts)

    return _template().render(
        target=t,
        draft=d,
        acc=acc,
        speed=speed,
        corpus=corpus,
        shape={"target": shape(t), "draft": shape(d)},
        schedule={"target": schedule(t), "draft": schedule(d)},
        extras={"target": schedule_extras(t), "draft": schedule_extras(d)},
        quality=card.get("text_quality"),
        has_curve=any(full_curve(m) for m in (t, d)),
        command=card["command"],
        history=card.get("history", []),
    )


@functools.cache
def _template() -> jinja2.Template:
    """``card.md.j2`` (beside this module): Markdown, so no HTML escaping; ``thousands`` writes 1,234."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent),
        autoescape=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["thousands"] = lambda n: f"{n:,}"
    return env.get_template("card.md.j2")


def curve_svg(curves: dict[str, list], width: int = 640, height: int = 320) -> str:
    """An SVG line chart of held-out bits/byte against step, one line per model of ``curves``."""
    rows = [r for c in curves.values() for r in c]
    x_max = max(r[0] for r in rows)
    y_lo, y_hi = math.floor(min(r[2] for r in rows) * 2) / 2, math.ceil(max(r[2] for r in rows) * 2) / 2
    y_hi = max(y_hi, y_lo + 0.5)
    left, right, top, bottom = 56, 16, 16, 40
    w, h = width - left - right, height - top - bottom

    def x(step: float) -> float:
        return left + w * step / x_max

    def y(bits: float) -> float:
        return top + h * (y_hi - bits) / (y_hi - y_lo)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    ticks = np.arange(y_lo, y_hi + 1e-9, 0.5 if y_hi - y_lo <= 4 else 1.0)
    for v in ticks:
        parts.append(f'<line x1="{left}" x2="{left + w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    for step in np.linspace(0, x_max, 5):
        parts.append(f'<text x="{x(step):.1f}" y="{top + h + 16}" text-anchor="middle">{step:,.0f}</text>')
    parts.append(f'<text x="{left + w / 2}" y="{height - 6}" text-anchor="middle">training step</text>')
    parts.append(
        f'<text transform="translate(14 {top + h / 2}) rotate(-90)" text-anchor="middle">held-out bits/byte</text>'
    )
    colours = {"target": "#1f77b4", "draft": "#d62728"}
    for i, (name, rows_) in enumerate(curves.items()):
        if not rows_:
            continue
        colour = colours.get(name, "#555")
        points = " ".join(f"{x(r[0]):.1f},{y(r[2]):.1f}" for r in rows_)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        last = rows_[-1]
        parts.append(
            f'<text x="{left + w - 4}" y="{top + 14 + 16 * i}" text-anchor="end" fill="{colour}">'
            f"{name}: {last[2]} at step {last[0]:,}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"

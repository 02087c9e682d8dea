"""What the live page shows about one measured cell: pure functions of the cell's ``bench.Run`` list."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from specviz.base import i18n
from specviz.base.i18n import N_
from specviz.core import theory

__all__ = [
    "SEGMENT_COLORS",
    "SEGMENT_KEYS",
    "SEGMENT_LABELS",
    "cell_details",
    "cell_label",
    "cost_breakdown",
    "exactness_message",
    "legend_html",
    "n_counts",
    "predicted_n_pmf",
    "segments_html",
    "text_segments",
]

SEGMENT_COLORS = {"accepted": "#c7e9c0", "correction": "#fdd0a2", "bonus": "#c6dbef"}
#: Catalogue keys (``specviz.base.i18n``) of each segment kind's legend label; ``live.kind.KIND`` is its short name.
SEGMENT_KEYS = {
    "accepted": N_("accepted draft tokens"),
    "correction": N_("target corrections"),
    "bonus": N_("bonus tokens"),
}
KIND_NAMES = {
    "accepted": N_("accepted"),
    "correction": N_("correction"),
    "bonus": N_("bonus"),
}  #: segment kind -> its short name
SEGMENT_LABELS = {kind: i18n.text(i18n.DEFAULT, key) for kind, key in SEGMENT_KEYS.items()}  #: in English


def n_counts(runs, k: int) -> np.ndarray:
    """Rounds emitting N = 1..K+1 tokens, pooled over the cell's runs. Shape (K+1,)."""
    counts = np.zeros(k + 1, dtype=np.int64)
    for run in runs:
        for r in run.speculative.rounds:
            counts[len(r.emitted) - 1] += 1
    return counts


def cost_breakdown(runs, k: int) -> dict[str, float]:
    """Mean per-round milliseconds: draft, verify, other; and the basic model's round T_p + D·T_q.

    The basic model prices a round at one target step plus D draft steps (D = K for a chain, a
    tree's depth); the measured round differs by the verify forward's extra cost over one step (v)
    and the overhead (o).
    """
    steps = runs[0].speculative.draft_steps
    rounds = [r for run in runs for r in run.speculative.rounds]
    t_p = float(np.median([run.baseline.t_target_ms for run in runs]))
    t_q = float(np.median([run.speculative.t_draft_ms for run in runs]))
    return {
        "draft_ms": float(np.mean([r.draft_ms for r in rounds])),
        "verify_ms": float(np.mean([r.verify_ms for r in rounds])),
        "other_ms": float(np.mean([r.other_ms for r in rounds])),
        "basic_model_ms": t_p + steps * t_q,
        "t_target_ms": t_p,
        "t_draft_ms": t_q,
    }


def text_segments(tokenizer, rounds) -> list[tuple[str, str]]:
    """The generated text as (kind, text) runs: "accepted" draft tokens, target "correction" and "bonus" tokens.

    Consecutive tokens of one kind are decoded together (so multi-byte characters survive).
    """
    kinds: list[tuple[str, int]] = []
    for r in rounds:
        kinds.extend(("accepted", t) for t in r.emitted[: r.accepted])
        kinds.append(("bonus" if r.bonus else "correction", r.emitted[-1]))
    out: list[tuple[str, list[int]]] = []
    for kind, token in kinds:
        if out and out[-1][0] == kind:
            out[-1][1].append(token)
        else:
            out.append((kind, [token]))
    return [(kind, tokenizer.decode(tokens)) for kind, tokens in out]


def segments_html(prompt: str, segments: Sequence[tuple[str, str]], lang: str = i18n.DEFAULT) -> str:
    """HTML (escaped) of the prompt in grey and the generated segments on coloured backgrounds
    (each titled with its kind's name in ``lang``)."""
    titles = {kind: html.escape(i18n.text(lang, KIND_NAMES[kind]), quote=True) for kind in SEGMENT_COLORS}

    def span(kind: str, text: str) -> str:
        return f'<span title="{titles[kind]}" style="background:{SEGMENT_COLORS[kind]}">{html.escape(text)}</span>'

    body = "".join(span(kind, text) for kind, text in segments)
    return (
        f'<pre style="white-space:pre-wrap;font-size:0.85em;line-height:1.5">'
        f'<span style="color:#888">{html.escape(prompt)}</span>{body}</pre>'
    )


def legend_html(lang: str = i18n.DEFAULT) -> str:
    """The colour key of :func:`segments_html`: one coloured label per segment kind, in ``lang``."""
    return " ".join(
        f'<span style="background:{SEGMENT_COLORS[kind]};padding:0 4px">{html.escape(i18n.text(lang, key))}</span>'
        for kind, key in SEGMENT_KEYS.items()
    )


def predicted_n_pmf(alpha: float, k: int) -> np.ndarray:
    """P(N = i), i = 1..K+1, at the measured α (theory.accepted_length_pmf)."""
    return np.asarray(theory.accepted_length_pmf(alpha, k), dtype=float)


def cell_details(row: dict, runs: list, target, tokenizer, prompts: Sequence[str]) -> dict:
    """What the page shows about one finished cell (computed outside the timed regions, on the worker thread).

    Keys: k, temperature, n_counts, the :func:`cost_breakdown` keys, prompt (of the first run),
    segments (its :func:`text_segments`), exact (T = 0 only: every run equals target-only
    decoding, else None) and divergence (the first run that differs, as ``decoding.Divergence``).
    """
    import torch

    from specviz.core import trees
    from specviz.engine import decoding

    k, t = int(row["k"]), float(row["temperature"])
    first = runs[0]
    detail = {
        "k": k,
        "tree": row.get("tree"),  # tree cells: the shape, e.g. "optimal:16,6 (16 drafts, depth 6)"
        "temperature": t,
        "n_counts": n_counts(runs, k),
        **cost_breakdown(runs, k),
        "prompt": prompts[first.prompt_index],
        "segments": text_segments(tokenizer, first.speculative.rounds),
        "exact": None,
        "divergence": None,
    }
    tree = first.speculative.tree
    if tree is not None:  # N ≤ depth + 1, and its predicted distribution is the positional model's at p̂
        detail["n_counts"] = detail["n_counts"][: tree.depth + 1]
        detail["n_pmf"] = trees.tokens_pmf(tree, [float(x) for x in str(row["tree_p"]).split(";")])
    if t == 0:
        wrong = [r for r in runs if not r.exact]
        detail["exact"] = not wrong
        if wrong:
            prompt = torch.tensor(tokenizer.encode(prompts[wrong[0].prompt_index]), dtype=torch.long)  # (T,)
            detail["divergence"] = decoding.first_divergence(
                target, prompt, wrong[0].baseline_tokens, wrong[0].speculative_tokens
            )
    return detail


def _shape(detail: dict, lang: str) -> str:
    """A cell's draft shape: "K = 4" or "tree optimal:16,6 (16 drafts, depth 6)" (the tree column's value)."""
    return i18n.text(lang, "tree {tree}", tree=detail["tree"]) if detail.get("tree") else f"K = {detail['k']}"


def cell_label(detail: dict, lang: str = i18n.DEFAULT) -> str:
    """How the page names a cell: "K = 4, T = 0" or "tree optimal:16,6 (16 drafts, depth 6), T = 1" (in ``lang``)."""
    return f"{_shape(detail, lang)}, T = {detail['temperature']:g}"


def exactness_message(detail: dict, lang: str = i18n.DEFAULT) -> tuple[bool, str] | None:
    """(passed, sentence in ``lang``) on greedy exactness for a T = 0 cell's details; None for a sampled cell."""
    if detail["exact"] is None:
        return None
    shape = _shape(detail, lang) + (f", B = {detail['batch_size']}" if "batch_size" in detail else "")
    where = i18n.text(lang, "{shape}, greedy", shape=shape)
    if detail["exact"]:
        return True, i18n.text(
            lang, "Exactness ({where}): speculative output equals target-only output in every run.", where=where
        )
    div = detail.get("divergence")
    if div is None:  # a batched cell: which row and token is not recorded
        return False, i18n.text(
            lang,
            "Exactness ({where}): some sequence's speculative output differs from its target-only output.",
            where=where,
        )
    verdict = i18n.text(
        lang,
        N_("a numerical near-tie (the top-2 logits are within 1e-3), not a bug in the rule")
        if div.near_tie
        else N_("the target's choice was clear there: a bug"),
    )
    return False, i18n.text(
        lang,
        "Exactness ({where}): outputs differ first at new token {position} (target-only {expected}, speculative {got}); the target's top-2 logit margin there is {margin} — {verdict}.",
        where=where,
        position=div.position,
        expected=div.expected,
        got=div.got,
        margin=f"{div.margin:.2e}",
        verdict=verdict,
    )

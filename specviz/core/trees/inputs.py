"""Trees and p as typed or measured: shape text (chain:K, topk:D,k,N, …), a p list, p from measured rows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.core.trees.acceptance import check_p
from specviz.core.trees.optimal import optimal_tree
from specviz.core.trees.shapes import chain, from_topk, independent_chains
from specviz.core.trees.tree import Tree

MAX_SHAPE_DEPTH = 16  #: the deepest shape :func:`parse_shape` builds by default (the bench and the live page)


def shape_needs_p(text: str) -> bool:
    """The shape ``text`` is built from a positional acceptance p (``topk:`` and ``optimal:``)."""
    return str(text).strip().partition(":")[0] in ("topk", "optimal")


def parse_shape(text: str, p=None, max_depth: int = MAX_SHAPE_DEPTH) -> Tree:
    """A shape from ``chain:K``, ``chains:N,D``, ``topk:D,k,N`` or ``optimal:N,D`` of depth ≤ ``max_depth``."""
    kind, _, args = str(text).strip().partition(":")
    arity = {"chain": 1, "chains": 2, "topk": 3, "optimal": 2}
    try:
        values = [int(a) for a in args.split(",")]
    except ValueError:
        values = []
    if kind not in arity or len(values) != arity[kind] or min(values, default=0) < 1:
        raise Message(
            "tree: {text!r} is not a draft shape; use chain:K, chains:N,D, topk:D,k,N or optimal:N,D (e.g. optimal:16,6), every number an integer >= 1",
            text=text,
        )
    if shape_needs_p(text) and p is None:
        raise Message("tree: {text!r} is built from a positional acceptance p; none was given", text=text)
    depth = {"chain": values[0], "chains": values[-1], "topk": values[0], "optimal": values[-1]}[kind]
    if depth > max_depth:
        raise Message(
            "tree: {text!r} has depth {depth}; at most {max_depth} is allowed here",
            text=text,
            depth=depth,
            max_depth=max_depth,
        )
    if kind == "chain":
        tree = chain(values[0])
    elif kind == "chains":
        tree = independent_chains(*values)
    elif kind == "topk":
        tree = from_topk(*values, p)
    else:
        tree = optimal_tree(p, *values)
    return replace(tree, name=f"{kind}:{','.join(map(str, values))}")


def p_from_measurements(frame: pd.DataFrame, what: str) -> tuple[np.ndarray, str]:
    """(p, where from): the first row's ``tree_p``, else (α,) from ``alpha_used``; ValueError if neither."""
    if "tree_p" in frame:
        for n, (text, shape) in enumerate(zip(frame["tree_p"], frame.get("tree", frame["tree_p"]), strict=True)):
            if isinstance(text, str) and text.strip():
                return check_p([float(x) for x in text.split(";")]), Phrase(
                    "{what}, row {row} (tree {shape})", what=what, row=n + 1, shape=shape
                )
    alphas = frame["alpha_used"].reset_index(drop=True).dropna() if "alpha_used" in frame else pd.Series()
    if alphas.empty:
        raise Message("{what} has no tree row with a measured p and no α: nothing to take p from", what=what)
    n = int(alphas.index[0])
    return check_p([float(alphas.iloc[0])]), Phrase(
        "{what}, row {row} (a chain: only p_1 = α is measured)", what=what, row=n + 1
    )


def parse_p(text: str) -> np.ndarray:
    """Comma-separated p_1, p_2, …; ValueError naming the field and what is allowed."""
    try:
        values = [float(x) for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise Message("p: {text!r} is not a comma-separated list of numbers (e.g. 0.6, 0.2, 0.1)", text=text) from None
    if not values:
        raise Message("p: type at least one number p_1 (e.g. 0.6, 0.2, 0.1)")
    return check_p(values)

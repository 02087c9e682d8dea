"""Where a prediction is made: engine family × draft kind × target × load, and the held-out error of each.

A prediction is only as trustworthy as the validation rows of *its own* regime. Every published row and
every page's setup map to a :class:`Regime`; the leave-one-source-out ratios predicted / measured of
the rows in that regime (``data/validation/predictions.csv``) give its band. A regime with fewer than
:data:`MIN_ROWS` rows is *unvalidated*: it borrows the widest band of the validated ones and names the
nearest validated regime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from specviz.base.i18n import N_

MIN_ROWS = 8  #: held-out rows a regime needs before its band is its own
QUANTILES = (0.1, 0.9)  #: the band: this share of the regime's held-out predicted / measured lies inside

#: engine families: how a stack runs the target (the cost terms differ by family, not by version)
ENGINES = ("hf-eager", "compiled-pytorch", "vllm", "sglang", "tensorrt-llm", "llama.cpp", "other")
ANY = "any"  #: the engine part of a profile tied to no engine (the roofline default, a fitted family, your own)
ENGINE_LABELS = {
    ANY: N_("any engine"),
    "hf-eager": N_("HF eager"),
    "compiled-pytorch": N_("compiled PyTorch"),
    "vllm": "vLLM",
    "sglang": "SGLang",
    "tensorrt-llm": "TensorRT-LLM",
    "llama.cpp": "llama.cpp",
    "other": N_("other engine"),
}
_STACK_ENGINE = {
    "hf-transformers": "hf-eager",
    "gpt-fast": "compiled-pytorch",
    "specviz": "compiled-pytorch",
    "vllm": "vllm",
    "vllm-2023": "other",  # eager, before CUDA graphs: not the vLLM deployed today
    "sglang": "sglang",
    "tensorrt-llm": "tensorrt-llm",
    "llama.cpp": "llama.cpp",
    "llama.cpp-cpu": "llama.cpp",
    "llama.cpp-metal": "llama.cpp",
}
#: draft kinds: what one round drafts with ("none": plain decoding, a step-time row)
DRAFTS = ("none", "model", "eagle", "eagle3", "mtp", "medusa", "ngram", "other")
DRAFT_LABELS = {
    "none": N_("no draft"),
    "model": N_("separate draft model"),
    "eagle": "EAGLE-1/2",
    "eagle3": "EAGLE-3",
    "mtp": "MTP",
    "medusa": "Medusa",
    "ngram": N_("n-gram / suffix"),
    "other": N_("other draft"),
}
_METHOD_DRAFT = {
    "model": "model",
    "pard": "model",
    "eagle": "eagle",
    "eagle2": "eagle",
    "eagle3": "eagle3",
    "mtp": "mtp",
    "medusa": "medusa",
    "hydra": "medusa",
    "ngram": "ngram",
    "suffix": "ngram",
    "lookahead": "ngram",
}
TARGETS = ("dense", "moe")
TARGET_LABELS = {"dense": N_("dense target"), "moe": N_("MoE target")}
#: load bins: sequences decoded together. The issue's bins are 1, 2–16 and ≥ 32; 17–31 join the last,
#: since from there on verification shares the batch's weight reads as at 32 (no bin is left out)
LOADS = ("b1", "b2-16", "b17+")
LOAD_LABELS = {"b1": "B = 1", "b2-16": "B = 2–16", "b17+": N_("B ≥ 17 or a request rate")}
LAST_SMALL_BATCH = 16
#: how far apart two regimes are, per differing part: the engine changes the cost terms most
_DISTANCE = {"engine": 4, "draft": 2, "target": 2, "load": 1}


@dataclass(frozen=True, order=True)
class Regime:
    """One cell of the design space a prediction can fall in (each part one of its tuple's names)."""

    engine: str
    draft: str
    target: str
    load: str

    @property
    def key(self) -> str:
        """A stable slug, e.g. ``vllm/eagle3/moe/b17+``."""
        return f"{self.engine}/{self.draft}/{self.target}/{self.load}"

    @classmethod
    def from_key(cls, key: str) -> Regime:
        return cls(*str(key).split("/"))


def engine_of(stack: str) -> str:
    """The engine family of a serving stack's slug (unknown stacks: "other")."""
    return _STACK_ENGINE.get(str(stack), "other")


def draft_of(method) -> str:
    """The draft kind of a drafting method ("none" or empty: plain decoding)."""
    if method is None or method != method or str(method).strip() in ("", "none"):
        return "none"
    return _METHOD_DRAFT.get(str(method).strip().lower(), "other")


def load_of(batch, request_rate=None) -> str:
    """The load bin of ``batch`` sequences decoded together; an open-loop request rate is always the last."""
    if request_rate is not None and request_rate == request_rate and float(request_rate) > 0:
        return "b17+"
    b = float(batch)
    if not np.isfinite(b) or b < 1:
        raise ValueError(f"batch must be >= 1; got {batch!r}")
    return "b1" if b < 2 else "b2-16" if b <= LAST_SMALL_BATCH else "b17+"


def regime(stack: str, method, moe: bool, batch, request_rate=None) -> Regime:
    return Regime(engine_of(stack), draft_of(method), "moe" if moe else "dense", load_of(batch, request_rate))


def distance(a: Regime, b: Regime) -> int:
    """Weighted count of the parts in which ``a`` and ``b`` differ (:data:`_DISTANCE`)."""
    return sum(w for part, w in _DISTANCE.items() if getattr(a, part) != getattr(b, part))


def of_frame(frame: pd.DataFrame, moe: pd.Series) -> pd.Series:
    """Each row's :class:`Regime` from its ``stack``, ``method``, ``batch`` (and ``request_rate`` where present);
    ``moe`` says per row whether the target is a mixture of experts."""
    rate = frame["request_rate"] if "request_rate" in frame else pd.Series(np.nan, index=frame.index)
    return pd.Series(
        [
            regime(s, m, bool(e), b, r)
            for s, m, e, b, r in zip(frame["stack"], frame["method"], moe, frame["batch"], rate, strict=True)
        ],
        index=frame.index,
        dtype=object,
    )


def summary(ratios: pd.DataFrame) -> pd.DataFrame:
    """Per regime (``ratios`` has ``regime`` and ``ratio`` = predicted / measured, and ``source_id``): rows,
    sources, median |ratio − 1|, 90th percentile, bias (median ratio − 1), lo and hi (:data:`QUANTILES`),
    validated (rows ≥ :data:`MIN_ROWS`)."""
    err = (ratios["ratio"] - 1).abs()
    frame = ratios.assign(abs_err=err, key=ratios["regime"].map(lambda r: r.key))
    out = frame.groupby("key").agg(
        regime=("regime", "first"),
        rows=("ratio", "size"),
        sources=("source_id", "nunique"),
        median_abs_err=("abs_err", "median"),
        p90_abs_err=("abs_err", lambda e: e.quantile(0.9)),
        bias=("ratio", lambda r: r.median() - 1),
        lo=("ratio", lambda r: r.quantile(QUANTILES[0])),
        hi=("ratio", lambda r: r.quantile(QUANTILES[1])),
    )
    return out.assign(validated=out["rows"] >= MIN_ROWS)


@dataclass(frozen=True)
class Band:
    """The band of a regime: ratios predicted / measured ``lo`` … ``hi`` (``lo ≤ hi``) and what they rest on."""

    regime: Regime
    lo: float
    hi: float
    median: float
    rows: int  #: held-out rows of this regime (below :data:`MIN_ROWS`: unvalidated)
    validated: bool
    nearest: Regime | None = None  #: the closest validated regime, named where this one is not validated


def band(r: Regime, table: pd.DataFrame, others: pd.DataFrame | None = None) -> Band | None:
    """``r``'s band from :func:`summary` ``table`` (one kind). Validated: its own 10–90 % range; else the
    widest validated range (the hull of every validated regime's) and the nearest validated regime, taken
    from ``others`` (a wider table) where ``table`` has none validated; None where neither has one."""
    own = table.loc[r.key] if r.key in table.index else None
    if own is not None and bool(own["validated"]):
        return Band(r, float(own["lo"]), float(own["hi"]), 1 + float(own["bias"]), int(own["rows"]), True)
    valid = table[table["validated"]]
    if valid.empty and others is not None:
        valid = others[others["validated"]]
    if valid.empty:
        return None
    nearest = min(valid["regime"], key=lambda v: (distance(r, v), -int(valid.loc[v.key, "rows"]), v.key))
    rows = 0 if own is None else int(own["rows"])
    lo, hi = float(valid["lo"].min()), float(valid["hi"].max())
    return Band(r, lo, hi, float(np.sqrt(lo * hi)), rows, False, nearest)


def label(r: Regime, t=lambda s: s) -> str:
    """``r`` in words, each part translated by ``t``: "vLLM · EAGLE-3 · MoE target · B ≥ 17 or a request rate"."""
    parts = (ENGINE_LABELS[r.engine], DRAFT_LABELS[r.draft], TARGET_LABELS[r.target], LOAD_LABELS[r.load])
    return " · ".join(t(p) for p in parts)

"""Acceptance by context length and by domain: intervals from the counts, and a fitted decay α(L).

Over R rounds with A accepted drafts the trials are A acceptances and F = R − (all-K rounds)
rejections; the likelihood α^A (1 − α)^F gives a binomial interval on A of A + F, with F taken at
its expectation R·(1 − α̂^K) since engines do not count it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import Message, Phrase
from specviz.base.paths import DATA
from specviz.core import theory

Z95 = 1.959963984540054  #: the standard normal's 97.5 % point: two-sided 95 % intervals
L_REF = 1024.0  #: the context at which the decay's intercept is read (tokens)
#: upper edges of the context buckets (tokens); the last bucket is open
BUCKET_EDGES = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
FIT_PARAM = "alpha_l"  #: the URL parameter that carries a fit to the Hardware and Serving pages


def wilson(successes, trials, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval (Wilson 1927) for ``successes`` of ``trials`` > 0, broadcast: (lo, hi)."""
    s, n = np.broadcast_arrays(np.asarray(successes, dtype=float), np.asarray(trials, dtype=float))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def alpha_interval(mean_tokens, k, rounds, z: float = Z95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(α̂, lo, hi) from E[N] over ``rounds`` rounds of K: α̂ inverts E[N]; Wilson on A = R(E[N] − 1) of A + F."""
    m, kk, r = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (mean_tokens, k, rounds)))
    alpha = np.asarray(theory.alpha_from_mean_tokens(np.minimum(m, kk + 1.0), kk.astype(int)), dtype=float)
    accepted = r * (m - 1.0)
    trials = accepted + r * (1.0 - alpha**kk)
    lo, hi = wilson(accepted, np.where(trials > 0, trials, np.nan), z)
    ok = np.isfinite(r) & (r > 0)
    return alpha, np.where(ok, lo, np.nan), np.where(ok, hi, np.nan)


def request_context(prompt, output):
    """Mean decode context of P prompt and G output tokens, P + G/2 (broadcasts; None in, None out)."""
    if prompt is None or output is None:
        return None
    return np.asarray(prompt, dtype=float) + np.asarray(output, dtype=float) / 2.0


def row_context(frame: pd.DataFrame) -> pd.Series:
    """Each row's decode context: ``context_length``, else :func:`request_context` of its tokens, else NaN."""
    given = _numeric(frame, "context_length")
    requested = request_context(
        _numeric(frame, "prompt_tokens").to_numpy(), _numeric(frame, "output_tokens").to_numpy()
    )
    return given.fillna(pd.Series(requested, index=frame.index))


def bucket_label(context: float) -> str:
    """The context's bucket as text: "≤ 256", "256–512", …, "> 128k" (k = 1024 tokens)."""
    edges = (0, *BUCKET_EDGES)
    for lo, hi in itertools.pairwise(edges):
        if context <= hi:
            return f"≤ {_short(hi)}" if lo == 0 else f"{_short(lo)}–{_short(hi)}"
    return f"> {_short(BUCKET_EDGES[-1])}"


def _short(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 else str(tokens)


def bucket_order(context: float) -> int:
    return int(np.searchsorted(BUCKET_EDGES, context, side="left"))


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce").astype(float)


def row_acceptance(frame: pd.DataFrame) -> pd.DataFrame:
    """Per row with α: k, mean_tokens (measured, else E[N](α, K)), alpha, rounds, context, domain."""
    k = _numeric(frame, "k")
    alpha = _numeric(frame, "alpha_used")
    mean = _numeric(frame, "mean_accepted_tokens")
    ok = k.ge(1) & alpha.between(0.0, 1.0)
    fallback = pd.Series(np.nan, index=frame.index)
    fallback[ok] = theory.expected_tokens(alpha[ok].to_numpy(), k[ok].to_numpy().astype(int))
    domain = frame["domain"] if "domain" in frame else pd.Series(None, index=frame.index, dtype=object)
    out = pd.DataFrame(
        {
            "k": k,
            "mean_tokens": mean.fillna(fallback),
            "alpha": alpha,
            "rounds": _numeric(frame, "rounds"),
            "context": row_context(frame),
            "domain": domain.where(domain.notna() & domain.astype(str).str.strip().ne(""), None),
        }
    )
    return out[ok].reset_index(drop=True)


def by_group(rows: pd.DataFrame, group: str, z: float = Z95) -> pd.DataFrame:
    """α and E[N] pooled per (``group`` "bucket" or "domain", K): rounds-weighted with :func:`alpha_interval`
    intervals where every row counts rounds, else a plain mean."""
    rows = rows.copy()
    if group == "bucket":
        rows = rows[rows["context"].notna() & (rows["context"] > 0)]
        rows["bucket"] = rows["context"].map(bucket_label)
        rows["order"] = rows["context"].map(bucket_order)
    elif group == "domain":
        rows = rows[rows["domain"].notna()]
        rows["domain"] = rows["domain"].astype(str)
        rows["order"] = 0
    else:
        raise ValueError(f"group must be 'bucket' or 'domain'; got {group!r}")
    cells = [
        _pooled(cell, z)
        | {group: name, "order": cell["order"].iloc[0], "k": int(k), "context": cell["context"].median()}
        for (name, k), cell in rows.groupby([group, "k"], sort=False)
    ]
    columns = [
        group,
        "order",
        "k",
        "context",
        "rows",
        "rounds",
        "mean_tokens",
        "mean_lo",
        "mean_hi",
        "alpha",
        "alpha_lo",
        "alpha_hi",
    ]
    out = pd.DataFrame(cells, columns=columns)
    return out.sort_values(["order", group, "k"]).reset_index(drop=True)


def _pooled(cell: pd.DataFrame, z: float) -> dict:
    k = int(cell["k"].iloc[0])
    counted = cell["rounds"].notna().all() and (cell["rounds"] > 0).all()
    rounds = float(cell["rounds"].sum()) if counted else math.nan
    mean = (
        float(np.average(cell["mean_tokens"], weights=cell["rounds"])) if counted else float(cell["mean_tokens"].mean())
    )
    alpha, lo, hi = (float(x) for x in alpha_interval(mean, k, rounds, z))
    mean_lo, mean_hi = (float(theory.expected_tokens(x, k)) if math.isfinite(x) else math.nan for x in (lo, hi))
    return {
        "rows": len(cell),
        "rounds": rounds,
        "mean_tokens": mean,
        "mean_lo": mean_lo,
        "mean_hi": mean_hi,
        "alpha": alpha,
        "alpha_lo": lo,
        "alpha_hi": hi,
    }


# --------------------------------------------------------------------------------------
# the decay model α(L)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecayFit:
    """A fitted decay logit α(L) = a − b ln(L / L_ref), L_ref = 1024 tokens; ``cov`` of (a, b) or None."""

    a: float
    b: float
    cov: tuple[tuple[float, float], tuple[float, float]] | None = None
    points: int = 0
    contexts: int = 0
    weighted: bool = False

    def alpha(self, context) -> np.ndarray:
        x = np.log(np.asarray(context, dtype=float) / L_REF)
        return 1.0 / (1.0 + np.exp(-(self.a - self.b * x)))

    def __call__(self, context) -> np.ndarray:
        return self.alpha(context)

    def band(self, context, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise interval of α(L): a − b·x ± z·sd on the logit scale (delta method), mapped back."""
        x = np.log(np.asarray(context, dtype=float) / L_REF)
        if self.cov is None:
            return self.alpha(context), self.alpha(context)
        (vaa, vab), (_, vbb) = self.cov
        sd = np.sqrt(np.maximum(vaa - 2 * x * vab + x * x * vbb, 0.0))
        eta = self.a - self.b * x
        return 1.0 / (1.0 + np.exp(-(eta - z * sd))), 1.0 / (1.0 + np.exp(-(eta + z * sd)))

    def to_param(self) -> str:
        """The fit as a link carries it: "a;b", four decimals."""
        return f"{self.a:.4f};{self.b:.4f}"

    @classmethod
    def from_param(cls, text: str) -> DecayFit:
        """A fit from link text "a;b"; Message naming the field, the value and what is allowed."""
        parts = str(text).replace(",", ";").split(";")
        try:
            a, b = (float(p) for p in parts)
        except ValueError:
            a = b = math.nan
        if len(parts) != 2 or not (math.isfinite(a) and math.isfinite(b)) or abs(a) > 50 or abs(b) > 50:
            raise Message(
                "{field} must be two numbers 'a;b' with |a|, |b| ≤ 50 (logit α(L) = a − b·ln(L / 1024)); got {value!r}",
                field=FIT_PARAM,
                value=str(text)[:80],
            )
        return cls(a, b)


def fit_decay(rows: pd.DataFrame, z: float = Z95) -> DecayFit:
    """Fit logit α(L) = a − b ln(L / 1024) by weighted least squares on logit α̂ ∈ [1e-3, 1 − 1e-3]; counted
    rounds: weights n·α̂(1 − α̂), n = A + F, cov = (XᵀWX)⁻¹, else equal, cov = s²(XᵀX)⁻¹. Message under two contexts."""
    rows = rows[rows["context"].notna() & (rows["context"] > 0)]
    contexts = int(rows["context"].nunique())
    if contexts < 2:
        raise Message(
            "a decay α(L) needs rows at two or more context lengths; the selection has {n}: add rows with context_length (or prompt_tokens and output_tokens)",
            n=contexts,
        )
    alpha = rows["alpha"].clip(1e-3, 1 - 1e-3).to_numpy()
    x = np.log(rows["context"].to_numpy() / L_REF)
    design = np.column_stack([np.ones_like(x), -x])  # (n, 2): η = a − b·x
    eta = np.log(alpha / (1 - alpha))
    counted = bool(rows["rounds"].notna().all() and (rows["rounds"] > 0).all())
    if counted:
        r, k = rows["rounds"].to_numpy(), rows["k"].to_numpy()
        trials = r * (rows["mean_tokens"].to_numpy() - 1.0) + r * (1.0 - alpha**k)
        w = np.maximum(trials, 1.0) * alpha * (1 - alpha)
    else:
        w = np.ones_like(x)
    info = design.T @ (w[:, None] * design)  # (2, 2)
    coef = np.linalg.solve(info, design.T @ (w * eta))
    inv = np.linalg.inv(info)
    if not counted:
        dof = len(x) - 2
        s2 = float(((eta - design @ coef) ** 2).sum() / dof) if dof > 0 else math.nan
        inv = inv * s2
    cov = ((float(inv[0, 0]), float(inv[0, 1])), (float(inv[1, 0]), float(inv[1, 1])))
    return DecayFit(float(coef[0]), float(coef[1]), cov, len(x), contexts, counted)


# --------------------------------------------------------------------------------------
# published acceptance: "is my run below the paper?"
# --------------------------------------------------------------------------------------

ACCEPTANCE_FILE = DATA / "validation" / "acceptance.csv"
MEASUREMENTS_FILE = DATA / "validation" / "measurements.csv"
REFERENCE_COLUMNS = (
    "source_id", "source", "target", "draft", "method", "k", "verify_tokens", "dataset", "domain",
    "temperature", "context_length", "mean_accepted_tokens", "alpha",
)  # fmt: skip


def load_reference(
    acceptance_file: Path = ACCEPTANCE_FILE, measurements_file: Path = MEASUREMENTS_FILE
) -> pd.DataFrame:
    """Published acceptance: ``acceptance.csv`` plus the τ of ``measurements.csv``'s speedup rows (domain "mixed");
    ``alpha`` recovered from τ for chains, NaN for trees (a tree's τ is not a chain's E[N])."""
    published = pd.read_csv(acceptance_file)
    timed = pd.read_csv(measurements_file)
    timed = timed[timed["tau"].notna()].rename(columns={"tau": "mean_accepted_tokens", "context": "context_length"})
    timed = timed.assign(
        domain="mixed", verify_tokens=timed["verify_tokens"].where(timed["verify_tokens"] != timed["k"] + 1)
    )
    frame = pd.concat([published, timed], ignore_index=True)
    chain = frame["verify_tokens"].isna() | (frame["verify_tokens"] == frame["k"] + 1)
    mean = frame["mean_accepted_tokens"].clip(upper=frame["k"] + 1)
    frame["alpha"] = np.where(
        chain, theory.alpha_from_mean_tokens(mean.where(chain, 1.0), frame["k"].astype(int)), np.nan
    )
    frame["draft"] = frame["draft"].fillna("")
    return frame[list(REFERENCE_COLUMNS)]


PRIOR_COLUMNS = ("method", "domain", "rows", "sources", "alpha", "alpha_lo", "alpha_hi", "tau", "k", "source_ids")


def domain_priors(reference: pd.DataFrame) -> pd.DataFrame:
    """Per (method, task domain) of the chain rows of :func:`load_reference`: rows, independent sources, median
    α with its range (min, max), median τ and K, and the source ids; the α to start from before measuring."""
    chains = reference[np.isfinite(reference["alpha"].to_numpy(float))]
    out = chains.groupby(["method", "domain"], sort=True).agg(
        rows=("alpha", "size"),
        sources=("source_id", "nunique"),
        alpha=("alpha", "median"),
        alpha_lo=("alpha", "min"),
        alpha_hi=("alpha", "max"),
        tau=("mean_accepted_tokens", "median"),
        k=("k", "median"),
        source_ids=("source_id", lambda ids: ", ".join(sorted(set(ids)))),
    )
    return out.reset_index()[list(PRIOR_COLUMNS)]


def model_key(name) -> str:
    """A model id as compared: its last path part, lower case."""
    return str(name).strip().rstrip("/").rsplit("/", 1)[-1].lower() if isinstance(name, str) and name.strip() else ""


def matching_reference(reference: pd.DataFrame, target: str, draft: str = "", method: str = "") -> pd.DataFrame:
    """Reference rows of the same target, closest first: same draft, then same method, then the rest."""
    rows = reference[reference["target"].map(model_key) == model_key(target)]
    same_draft = rows["draft"].map(model_key).eq(model_key(draft)) & (model_key(draft) != "")
    same_method = rows["method"].astype(str).str.lower().eq(str(method).strip().lower())
    rank = np.where(same_draft, 0, np.where(same_method, 1, 2))
    return rows.assign(rank=rank).sort_values(["rank", "k"]).drop(columns="rank")


def gap_reasons(run: dict, ref: dict, vocab=None) -> list[Phrase]:
    """Differences between ``run`` and a published ``ref`` (k, temperature, domain, context_length, draft, method)
    that usually explain an acceptance gap; ``vocab``: model → vocabulary size."""
    reasons = []

    def both(name):
        a, b = run.get(name), ref.get(name)
        known = a is not None and b is not None and not (isinstance(a, float) and math.isnan(a))
        return (a, b) if known and not (isinstance(b, float) and math.isnan(b)) else (None, None)

    a, b = both("temperature")
    if a is not None and float(a) != float(b):
        reasons.append(
            Phrase(
                "temperature {run:g} here, {ref:g} published: sampling accepts less than greedy decoding",
                run=float(a),
                ref=float(b),
            )
        )
    a, b = both("k")
    if a is not None and int(a) != int(b):
        reasons.append(
            Phrase("K = {run} here, {ref} published: E[N] grows with K, so compare α", run=int(a), ref=int(b))
        )
    a, b = both("domain")
    if a is not None and str(a).lower() != str(b).lower():
        reasons.append(
            Phrase("domain {run} here, {ref} published: code and math accept more than chat and writing", run=a, ref=b)
        )
    a, b = both("context_length")
    if a is not None and max(float(a), float(b)) > 2 * min(float(a), float(b)):
        reasons.append(
            Phrase(
                "context {run:,.0f} tokens here, {ref:,.0f} published: acceptance falls at long context",
                run=float(a),
                ref=float(b),
            )
        )
    a, b = both("method")
    if a is not None and str(a).strip().lower() != str(b).strip().lower():
        reasons.append(Phrase("method {run} here, {ref} published", run=a, ref=b))
    if vocab is not None:
        sizes = {role: vocab(run.get(role)) for role in ("target", "draft")}
        if all(sizes.values()) and sizes["target"] != sizes["draft"]:
            reasons.append(
                Message(
                    "the draft's vocabulary ({draft:,}) differs from the target's ({target:,}): tokens outside it are never proposed, or the tokenizers disagree",
                    draft=int(sizes["draft"]),
                    target=int(sizes["target"]),
                )
            )
    return reasons

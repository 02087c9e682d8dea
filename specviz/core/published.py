"""The cost model against published GPU measurements: predict each row, fit engine profiles, score.

``data/validation/measurements.csv`` holds published rows (see its ``measurements.md``): plain
decoding step times (``kind = step``) and speculative speedups with the measured mean tokens per
round τ (``kind = speedup``). For each row the roofline with an engine profile predicts

* a step row: t = step_time(target, B, L, 1); with prefill in the measured time,
  t = (t_prefill + O·t) / O over the O output tokens, t_prefill = step_time(target, B, 0, P);
* a speedup row: S = τ / (1 + v·(T − 1) + o + D / c) from :func:`specviz.core.hardware.pair_costs`
  with the row's draft (model, head or n-gram lookup), D draft forwards and T verified tokens; with
  prefill, S = (t_prefill + O·t_target) / (t_prefill + O·t_target / S).

:func:`fit_profile` fits an engine's terms (fractions and fixed costs) by least squares on
log(predicted / measured), regularised toward a prior profile so that terms a source does not
constrain stay at the prior. :func:`fit_profiles` fits in three levels: a *shared* profile on every
row (the terms of the hardware and its libraries: compute and memory fractions, the quantised-kernel
share, the all-reduce latencies over NVLink and PCIe, and the fixed costs as a starting point), then
each engine family (eager, compiled) from the shared one, then each engine from its family, the last
two fitting only the engine's own terms (:data:`ENGINE_TERMS`). :func:`leave_one_source_out`
predicts every source's rows with profiles fitted without that source.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.base.paths import DATA
from specviz.core import engines, hardware
from specviz.core.engines import DEFAULT_EFFICIENCY, Efficiency

MEASUREMENTS = DATA / "validation" / "measurements.csv"
DEFAULT_CONTEXT = 512  #: cached tokens assumed where a row states no context (flagged in ``context_assumed``)
#: Engine families (:func:`specviz.core.engines.family`), the level between the shared profile and an
#: engine's. A source's rows fall back to the family's profile when the engine has no rows outside that
#: source. (Splitting compiled into serving engines and single-user loops scored the same
#: leave-one-source-out, 2026-12-04, so it stays one.)
FAMILIES = tuple(f"family:{name}" for name in engines.FAMILY_PROFILES)
#: the terms :func:`fit_profile` fits, their bounds and the scale of the pull toward the prior
FITTED = {
    "compute": ((0.2, 1.0), 0.2),
    "memory": ((0.2, 1.0), 0.2),
    "quant_memory": ((0.2, 1.0), 0.2),
    "overhead_s": ((0.0, 0.1), 1e-3),
    "layer_overhead_s": ((0.0, 0.01), 1e-4),
    "seq_overhead_s": ((0.0, 0.01), 1e-4),
    "round_overhead_s": ((0.0, 0.1), 1e-3),
    "draft_overhead_s": ((0.0, 0.05), 1e-3),
}
#: The all-reduce latencies are not fitted: they are the interconnect's and the collective library's,
#: measured directly by all-reduce benchmarks (the defaults of :class:`Efficiency` cite them), while the
#: published step times cannot tell them from the per-layer dispatch cost (both scale with the layers).
#: Fitted, the NVLink latency rose to 26 µs without gpt-fast's rows and 5 µs with them.
#: the terms an engine family's and an engine's own fit may move away from the shared profile
ENGINE_TERMS = (
    "compute",
    "memory",
    "quant_memory",
    "overhead_s",
    "layer_overhead_s",
    "seq_overhead_s",
    "round_overhead_s",
    "draft_overhead_s",
)
SHARED = "shared"  #: the profile fitted on every row (the fallback of an engine and family no other source measures)
PRIOR_WEIGHT = 0.05  #: residual weight of one scale's departure from the prior, against one row's log error
#: the same for an engine family's and an engine's terms against the level above: a stronger pull, so that an
#: engine one source measures keeps what every source says about the rest (0.5 against 0.05: the one choice
#: made by scoring, leave-one-source-out, 2026-12-04; docs/performance.md gives both)
ENGINE_WEIGHT = 0.5
#: Published rows disagree in ways no term models (a benchmark's harness, an old release), so the fit is
#: robust: scipy's soft-L1 loss, quadratic within F_SCALE of log error (the ±15 % band) and linear beyond.
LOSS, F_SCALE = "soft_l1", 0.15
_DRAFTED = {"model", "eagle", "eagle2", "eagle3", "mtp", "medusa", "ngram"}
_DRAFT_FORWARDS = _DRAFTED - {"medusa", "ngram"}  #: methods whose rounds run draft forwards


def load_measurements(path: Path = MEASUREMENTS) -> pd.DataFrame:
    """The published rows, with ``context`` filled (prompt + output / 2, else :data:`DEFAULT_CONTEXT`)
    and ``context_assumed`` saying where it was assumed."""
    frame = pd.read_csv(path)
    ctx = frame["context"].astype(float)
    derived = frame["prompt_tokens"].astype(float) + frame["output_tokens"].astype(float) / 2
    frame["context_assumed"] = ctx.isna() & derived.isna()
    frame["context"] = ctx.fillna(derived).fillna(DEFAULT_CONTEXT).round().astype(int)
    return frame


def priceable(frame: pd.DataFrame) -> pd.Series:
    """Rows the cost model can price: a step row, or a speedup row with τ and a drafting method it knows."""
    step = (frame["kind"] == "step") & frame["t_step_ms"].notna()
    spec = (frame["kind"] == "speedup") & frame["speedup"].notna() & frame["tau"].notna()
    return step | (spec & frame["method"].isin(_DRAFTED))


def _draft(row) -> str:
    return hardware.NGRAM if row["method"] == "ngram" else row["draft"]


def _int(value, default: int) -> int:
    return default if value != value or value is None or value == "" else round(float(value))


def _prefill(row, eff: Efficiency) -> float:
    """Seconds of the row's prefill when the measured time includes it, else 0."""
    if str(row.get("includes_prefill", "")).strip().lower() != "yes" or row["prompt_tokens"] != row["prompt_tokens"]:
        return 0.0
    kw = dict(dtype=row["dtype"], tp=int(row["tp"]), efficiency=eff)
    return float(hardware.step_time(row["target"], row["gpu"], int(row["batch"]), 0, int(row["prompt_tokens"]), **kw))


def predict_row(row, eff: Efficiency) -> float:
    """The row's predicted measurement: the step time in ms (kind = step) or the speedup."""
    b, ctx, tp = int(row["batch"]), int(row["context"]), int(row["tp"])
    out = _int(row.get("output_tokens"), 0)
    prefill = _prefill(row, eff) if out else 0.0
    if row["kind"] == "step":
        t = float(hardware.step_time(row["target"], row["gpu"], b, ctx, 1, dtype=row["dtype"], tp=tp, efficiency=eff))
        return 1e3 * (prefill / out + t if prefill else t)
    k = _int(row["k"], 1)
    costs = hardware.pair_costs(
        row["target"],
        _draft(row),
        row["gpu"],
        b,
        ctx,
        k,
        dtype=row["dtype"],
        tp_target=tp,
        tp_draft=tp,
        efficiency=eff,
        draft_tokens=_int(row.get("draft_tokens"), 1),
        verify_tokens=_int(row.get("verify_tokens"), k + 1),
    )
    s = float(hardware.round_speedup(float(row["tau"]), costs))
    if not prefill:
        return s
    t = float(costs["t_target"])
    return (prefill + out * t) / (prefill + out * t / s)


def measured(row) -> float:
    """What the row measured: the step time in ms or the speedup."""
    return float(row["t_step_ms"] if row["kind"] == "step" else row["speedup"])


def predict(frame: pd.DataFrame, profiles) -> pd.DataFrame:
    """``frame`` with ``measured``, ``predicted`` and ``ratio`` = predicted / measured; ``profiles``
    maps an engine to its :class:`Efficiency` (a dict, or a function of the row)."""
    pick = profiles if callable(profiles) else (lambda row: profiles.get(row["engine"], DEFAULT_EFFICIENCY))
    out = frame.copy()
    rows = [r for _, r in frame.iterrows()]
    out["measured"] = [measured(r) for r in rows]
    out["predicted"] = [predict_row(r, pick(r)) for r in rows]
    out["ratio"] = out["predicted"] / out["measured"]
    return out


def fit_profile(
    rows: pd.DataFrame, prior: Efficiency = DEFAULT_EFFICIENCY, terms=tuple(FITTED), weight: float = PRIOR_WEIGHT
) -> Efficiency:
    """The profile that minimises Σ w_i² log²(predicted_i / measured_i) over ``rows`` plus
    ``weight``² · Σ ((θ − θ_prior) / scale)² over ``terms`` (scipy ``least_squares``,
    trust-region reflective within :data:`FITTED`'s bounds).

    w_i² = n / (S · n_s(i)) for n rows from S sources, n_s(i) of them from row i's source: every
    source weighs the same in total, so a benchmark with thirty rows cannot outvote one with three,
    and the weights still sum to n (the prior's pull keeps its meaning per row).
    """
    from scipy.optimize import least_squares

    if rows.empty:
        return prior
    seen = constrained(rows)
    names = [n for n in terms if n in seen]
    if not names:
        return prior
    lo = np.array([FITTED[n][0][0] for n in names])
    hi = np.array([FITTED[n][0][1] for n in names])
    scale = np.array([FITTED[n][1] for n in names])
    theta0 = np.array([getattr(prior, n) for n in names])
    meas = np.log([measured(r) for _, r in rows.iterrows()])
    records = [r for _, r in rows.iterrows()]
    per_source = rows["source_id"].map(rows["source_id"].value_counts()).to_numpy(dtype=float)
    w = np.sqrt(len(rows) / (rows["source_id"].nunique() * per_source))

    def residuals(theta):
        eff = replace(prior, **dict(zip(names, np.clip(theta, lo, hi), strict=True)))
        pred = np.log([predict_row(r, eff) for r in records])
        return np.concatenate([w * (pred - meas), weight * (theta - theta0) / scale])

    fit = least_squares(
        residuals, np.clip(theta0, lo, hi), bounds=(lo, hi), x_scale=scale, diff_step=1e-3, loss=LOSS, f_scale=F_SCALE
    )
    return replace(prior, **{n: float(v) for n, v in zip(names, fit.x, strict=True)})


def constrained(rows: pd.DataFrame) -> set[str]:
    """The terms of :data:`FITTED` that ``rows`` can tell anything about: a per-round cost only from
    speedups, a per-draft-forward one only from methods that run draft forwards, a per-sequence one
    only beyond batch 1, the quantised share only from weights below 16 bits."""
    spec = rows["kind"] == "speedup"
    quant = rows["dtype"].map(lambda d: hardware.DTYPE_BYTES.get(d, 2.0) < 2).astype(bool)
    seen = set(FITTED) - {"round_overhead_s", "draft_overhead_s", "seq_overhead_s", "quant_memory"}
    checks = {
        "round_overhead_s": spec.any(),
        "draft_overhead_s": (spec & rows["method"].isin(_DRAFT_FORWARDS)).any(),
        "seq_overhead_s": (rows["batch"].astype(float) > 1).any(),
        "quant_memory": quant.any(),
    }
    return seen | {name for name, yes in checks.items() if yes}


def _family(engine: str) -> str:
    """The profile family an engine falls back to (:data:`FAMILIES`)."""
    return f"family:{engines.family(engine)}"


def fit_profiles(frame: pd.DataFrame, prior: Efficiency = DEFAULT_EFFICIENCY) -> dict[str, Efficiency]:
    """The profiles of :data:`SHARED` (every row, every term, from ``prior``), of each family
    (:data:`FAMILIES`: its rows, :data:`ENGINE_TERMS`, from the shared one) and
    of each engine in ``frame`` (its rows, :data:`ENGINE_TERMS`, from its family's)."""
    shared = fit_profile(frame, prior)
    family = frame["engine"].map(_family)
    profiles = {SHARED: shared}
    for f in FAMILIES:
        profiles[f] = fit_profile(frame[family == f], shared, ENGINE_TERMS, ENGINE_WEIGHT)
    for engine, rows in frame.groupby("engine"):
        profiles[engine] = fit_profile(rows, profiles[_family(engine)], ENGINE_TERMS, ENGINE_WEIGHT)
    return profiles


def _fallback(rest: pd.DataFrame, engine: str) -> str:
    """Where a held-out row's profile comes from: its ``engine`` when ``rest`` measures it, else its
    ``family`` when ``rest`` measures another of the family, else the :data:`SHARED` fit."""
    if (rest["engine"] == engine).any():
        return "engine"
    return "family" if (rest["engine"].map(_family) == _family(engine)).any() else SHARED


def leave_one_source_out(frame: pd.DataFrame, prior: Efficiency = DEFAULT_EFFICIENCY) -> pd.DataFrame:
    """Every row predicted with profiles fitted on the other sources only: its engine's where that
    engine has rows elsewhere, else its family's, else the shared fit. Adds ``profile_from``."""
    parts = []
    for source, held in frame.groupby("source_id"):
        rest = frame[frame["source_id"] != source]
        profiles = fit_profiles(rest, prior)
        origin = {engine: _fallback(rest, engine) for engine in held["engine"].unique()}
        key = {e: {"engine": e, "family": _family(e), SHARED: SHARED}[o] for e, o in origin.items()}
        got = predict(held, lambda row, profiles=profiles, key=key: profiles[key[row["engine"]]])
        got["profile_from"] = held["engine"].map(origin)
        parts.append(got)
    return pd.concat(parts).sort_index()


def errors(predicted: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Median |predicted / measured − 1| and the share within ±15 %, per ``kind`` (and per ``by``)."""
    keys = ["kind"] + ([by] if by else [])
    err = (predicted["ratio"] - 1).abs()
    frame = predicted.assign(abs_err=err, within=err <= 0.15)
    return frame.groupby(keys).agg(
        rows=("ratio", "size"), median_abs_err=("abs_err", "median"), within_15=("within", "mean")
    )


def profile_row(name: str, eff: Efficiency, rows: pd.DataFrame, label: str, date: str) -> dict:
    """One row of ``data/catalog/engines.csv``: the profile's terms and what it was fitted on."""
    if rows.empty:
        raise Message("engine {engine!r} has no rows to fit", engine=name)
    sources = sorted(rows["source_id"].unique())
    return {
        "name": name,
        "label": label,
        **asdict(eff),
        "source": "fitted to data/validation/measurements.csv by benchmarks/validation_bench.py --write-profiles",
        "fitted_on": " ".join(sources),
        "rows": len(rows),
        "date": date,
    }


PREDICTIONS = engines.PREDICTIONS_CSV  #: every priceable row's predictions, written by validation_bench.py
PREDICTION_COLUMNS = (
    "row_id",
    "source_id",
    "kind",
    "engine",
    "method",
    "measured",
    "default_predicted",
    "fitted_predicted",
    "loso_predicted",
    "profile_from",
)


def prediction_table(default: pd.DataFrame, fitted: pd.DataFrame, loso: pd.DataFrame) -> pd.DataFrame:
    """One row per priced published row: what it measured and what the default profile, the shipped
    (fitted on every row) profiles and the profiles fitted without its source predicted; the three
    frames are :func:`predict` / :func:`leave_one_source_out` outputs over the same rows."""
    return pd.DataFrame(
        {
            **{c: default[c] for c in ("row_id", "source_id", "kind", "engine", "method", "measured")},
            "default_predicted": default["predicted"],
            "fitted_predicted": fitted["predicted"],
            "loso_predicted": loso["predicted"],
            "profile_from": loso["profile_from"],
        }
    )[list(PREDICTION_COLUMNS)]


def load_predictions(path: Path = PREDICTIONS) -> pd.DataFrame:
    """The published rows (:func:`load_measurements`) with ``measured``, ``default_predicted``,
    ``fitted_predicted``, ``loso_predicted`` and ``profile_from`` from ``predictions.csv`` (written
    by ``benchmarks/validation_bench.py --write-profiles``; the leave-one-source-out fit takes
    minutes, so pages read it). Rows the file lacks are dropped."""
    try:
        pred = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise Message(
            "the validation predictions {path} cannot be read: {error}", path=str(path), error=str(exc)
        ) from exc
    keep = ["row_id", *PREDICTION_COLUMNS[5:]]
    return load_measurements().merge(pred[keep], on="row_id", how="inner")

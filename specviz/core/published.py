"""The cost model against published GPU measurements: predict each row, fit stack profiles, score.

Rows of ``data/validation/measurements.csv`` (``measurements.md``): a step row predicts t = step_time(target,
B, L, 1); a speedup row S = τ / (1 + v·(T − 1) + o + D/c) from ``hardware.pair_costs`` (D draft forwards, T
verified tokens). With prefill (P prompt, O output tokens): t = (t_prefill + O·t) / O, S = (t_prefill + O·t_p) /
(t_prefill + O·t_p / S). Profiles fit in three levels: shared (every row, term), family, stack (:data:`STACK_TERMS`).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.base.paths import DATA
from specviz.core import hardware, heads, regimes
from specviz.core import profiles as stack_profiles
from specviz.core.profiles import DEFAULT_EFFICIENCY, Efficiency

MEASUREMENTS = DATA / "validation" / "measurements.csv"
DEFAULT_CONTEXT = 512  #: cached tokens assumed where a row states no context (flagged in ``context_assumed``)
#: Stack families (:func:`specviz.core.profiles.family`), the level between the shared profile and a
#: stack's: a source's rows fall back to it when the stack has no rows outside that source.
FAMILIES = tuple(f"family:{name}" for name in stack_profiles.FAMILY_PROFILES)
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
    "moe_layer_overhead_s": ((0.0, 0.01), 1e-4),
}
#: The all-reduce latencies are not fitted: all-reduce benchmarks measure them (the defaults of
#: :class:`Efficiency` cite them), and step times cannot tell them from per-layer dispatch cost.
#: the terms a stack family's and a stack's own fit may move away from the shared profile
STACK_TERMS = (
    "compute",
    "memory",
    "quant_memory",
    "overhead_s",
    "layer_overhead_s",
    "seq_overhead_s",
    "round_overhead_s",
    "draft_overhead_s",
    "moe_layer_overhead_s",
)
SHARED = "shared"  #: fitted on all fitted rows (the fallback of a stack and family no other source measures)
PRIOR_WEIGHT = 0.05  #: residual weight of one scale's departure from the prior, against one row's log error
#: the same for a stack family's and a stack's terms against the level above: a stronger pull, so that a
#: stack one source measures keeps what every source says about the rest (chosen by leave-one-source-out
#: scoring; docs/performance.md)
STACK_WEIGHT = 0.5
#: Published rows disagree in ways no term models (a benchmark's harness, an old release), so the fit is
#: robust: scipy's soft-L1 loss, quadratic within F_SCALE of log error (the ±15 % band) and linear beyond.
LOSS, F_SCALE = "soft_l1", 0.15
#: Sources whose speculative rows are scored held out like any other but fitted into no profile: a report of a
#: slowdown its own thread leaves unexplained, measured with a draft the catalogue does not describe
#: (data/validation/measurements.md says which and why). Their plain-decoding rows are fitted.
NOT_FITTED = frozenset({"specforge-issue-339"})
#: the draft methods a published speedup row may name (one list for the table's checks and its pricing)
METHODS = ("model", "eagle", "eagle2", "eagle3", "mtp", "medusa", "peagle", "dflash", "ngram")
_DRAFTED = set(METHODS)
_DRAFT_FORWARDS = _DRAFTED - {"medusa", "ngram"}  #: methods whose rounds run draft forwards


def load_measurements(path: Path = MEASUREMENTS) -> pd.DataFrame:
    """The published rows, ``context`` filled (prompt + output / 2, else :data:`DEFAULT_CONTEXT`)."""
    frame = pd.read_csv(path)
    ctx = frame["context"].astype(float)
    derived = frame["prompt_tokens"].astype(float) + frame["output_tokens"].astype(float) / 2
    frame["context_assumed"] = ctx.isna() & derived.isna()
    frame["context"] = ctx.fillna(derived).fillna(DEFAULT_CONTEXT).round().astype(int)
    return frame


def priceable(frame: pd.DataFrame) -> pd.Series:
    """Rows the model can price: a step row, or a speedup row with τ, a known drafting method and a draft the
    catalogues describe (a model of ``models.csv``, a head of ``heads.csv``, or none for n-gram lookup)."""
    step = (frame["kind"] == "step") & frame["t_step_ms"].notna()
    spec = (frame["kind"] == "speedup") & frame["speedup"].notna() & frame["tau"].notna()
    return step | (spec & frame["method"].isin(_DRAFTED) & described_drafts(frame))


def described_drafts(frame: pd.DataFrame) -> pd.Series:
    """Per row: its draft is n-gram lookup, a catalogue model (method "model") or a catalogue head (else)."""
    models, _ = hardware.load_catalog()
    known_heads = heads.load_heads().index
    model = frame["method"] == "model"
    return (
        (frame["method"] == "ngram")
        | (model & frame["draft"].isin(models.index))
        | (~model & frame["draft"].isin(known_heads))
    )


def _draft(row) -> str:
    return hardware.NGRAM if row["method"] == "ngram" else row["draft"]


def _int(value, default: int) -> int:
    return default if value != value or value is None or value == "" else round(float(value))


def _prefill(row, eff: Efficiency, model=None) -> float:
    if str(row.get("includes_prefill", "")).strip().lower() != "yes" or row["prompt_tokens"] != row["prompt_tokens"]:
        return 0.0
    kw = dict(dtype=row["dtype"], tp=int(row["tp"]), efficiency=eff)
    model = row["target"] if model is None else model
    return float(hardware.step_time(model, row["gpu"], int(row["batch"]), 0, int(row["prompt_tokens"]), **kw))


def running_batches(row) -> tuple[int, int]:
    """(running with speculation, without): B capped at ⌊N / slots⌋, N = ``kv_tokens``, ``plain_kv_tokens`` (else B),
    slots P + O + T (T verified: K + 1) and P + O: the length a request reaches (docs/design.md), else L."""
    b, ctx = int(row["batch"]), int(row["context"])
    prompt, out = _int(row.get("prompt_tokens"), 0), _int(row.get("output_tokens"), 0)
    ctx = prompt + out if prompt and out else ctx
    verified = _int(row.get("verify_tokens"), _int(row.get("k"), 1) + 1)  # written before acceptance

    def cap(tokens, slots: int) -> int:
        return b if tokens != tokens or tokens is None else max(1, min(b, int(float(tokens) // slots)))

    return cap(row.get("kv_tokens", float("nan")), ctx + verified), cap(row.get("plain_kv_tokens", float("nan")), ctx)


def predict_row(row, eff: Efficiency) -> float:
    """The step time in ms (kind = step) or the speedup, S·(B_s / B_p)·t(B_p) / t(B_s) where the runs held
    different batches (:func:`running_batches`: the requests beyond the KV cache wait)."""
    b, ctx, tp = int(row["batch"]), int(row["context"]), int(row["tp"])
    out = _int(row.get("output_tokens"), 0)
    prefill = _prefill(row, eff) if out else 0.0
    if row["kind"] == "step":
        t = float(hardware.step_time(row["target"], row["gpu"], b, ctx, 1, dtype=row["dtype"], tp=tp, efficiency=eff))
        return 1e3 * (prefill / out + t if prefill else t)
    k = _int(row["k"], 1)
    b, b_plain = running_batches(row)
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
    t = float(costs["t_target"])
    if b_plain != b:
        kw = dict(dtype=row["dtype"], tp=tp, efficiency=eff)
        t_plain = float(hardware.step_time(row["target"], row["gpu"], b_plain, ctx, 1, **kw))
        s, t = s * (b / b_plain) * (t_plain / t), t_plain
    if not prefill:
        return s
    dm = hardware.draft_forward_model(_draft(row), row["target"])  # its prefill too, as serving.prefill_seconds
    spec_prefill = prefill + (_prefill(row, eff, dm) if dm is not None else 0.0)
    return (prefill + out * t) / (spec_prefill + out * t / s)


def measured(row) -> float:
    """What the row measured: the step time in ms or the speedup."""
    return float(row["t_step_ms"] if row["kind"] == "step" else row["speedup"])


def predict(frame: pd.DataFrame, profiles) -> pd.DataFrame:
    """``frame`` with measured, predicted, ratio; ``profiles``: stack → Efficiency (dict, or function of a row)."""
    pick = profiles if callable(profiles) else (lambda row: profiles.get(row["stack"], DEFAULT_EFFICIENCY))
    out = frame.copy()
    rows = [r for _, r in frame.iterrows()]
    out["measured"] = [measured(r) for r in rows]
    out["predicted"] = [predict_row(r, pick(r)) for r in rows]
    out["ratio"] = out["predicted"] / out["measured"]
    return out


def fit_profile(
    rows: pd.DataFrame, prior: Efficiency = DEFAULT_EFFICIENCY, terms=tuple(FITTED), weight: float = PRIOR_WEIGHT
) -> Efficiency:
    """argmin Σ w_i² log²(pred_i / meas_i) + weight² Σ ((θ − θ_prior) / scale)² (scipy least_squares), soft-L1 loss
    within :data:`FITTED`'s bounds; w_i² = n / (S · n_s(i)) for n rows from S sources: each source weighs the same."""
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
    """The :data:`FITTED` terms ``rows`` can inform (round: speedups; draft: draft forwards; seq: B > 1; quant; MoE)."""
    spec = rows["kind"] == "speedup"
    quant = rows["dtype"].map(lambda d: hardware.DTYPE_BYTES.get(d, 2.0) < 2).astype(bool)
    optional = {"round_overhead_s", "draft_overhead_s", "seq_overhead_s", "quant_memory", "moe_layer_overhead_s"}
    checks = {
        "round_overhead_s": spec.any(),
        "draft_overhead_s": (spec & rows["method"].isin(_DRAFT_FORWARDS)).any(),
        "seq_overhead_s": (rows["batch"].astype(float) > 1).any(),
        "quant_memory": quant.any(),
        "moe_layer_overhead_s": rows["target"].map(hardware.is_moe).astype(bool).any(),
    }
    seen = set(FITTED) - optional
    return seen | {name for name, yes in checks.items() if yes}


def _family(stack: str) -> str:
    return f"family:{stack_profiles.family(stack)}"


def fitted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows profiles are fitted on: all but the speedup rows of :data:`NOT_FITTED` sources."""
    return frame[~(frame["source_id"].isin(NOT_FITTED) & (frame["kind"] == "speedup"))]


def fit_profiles(frame: pd.DataFrame, prior: Efficiency = DEFAULT_EFFICIENCY) -> dict[str, Efficiency]:
    """Profiles of :data:`SHARED` (all terms), each family and each stack (:data:`STACK_TERMS`), on fitted_rows."""
    frame = fitted_rows(frame)
    shared = fit_profile(frame, prior)
    family = frame["stack"].map(_family)
    profiles = {SHARED: shared}
    for f in FAMILIES:
        profiles[f] = fit_profile(frame[family == f], shared, STACK_TERMS, STACK_WEIGHT)
    for stack, rows in frame.groupby("stack"):
        profiles[stack] = fit_profile(rows, profiles[_family(stack)], STACK_TERMS, STACK_WEIGHT)
    return profiles


def _fallback(rest: pd.DataFrame, stack: str) -> str:
    """Where a held-out row's profile comes from: ``stack``, else ``family``, else :data:`SHARED`."""
    if (rest["stack"] == stack).any():
        return "stack"
    return "family" if (rest["stack"].map(_family) == _family(stack)).any() else SHARED


def _held_out(frame: pd.DataFrame, source: str, prior: Efficiency) -> pd.DataFrame:
    """``source``'s rows predicted with profiles fitted on every other source; adds ``profile_from``."""
    held, rest = frame[frame["source_id"] == source], frame[frame["source_id"] != source]
    profiles = fit_profiles(rest, prior)
    origin = {stack: _fallback(rest, stack) for stack in held["stack"].unique()}
    key = {e: {"stack": e, "family": _family(e), SHARED: SHARED}[o] for e, o in origin.items()}
    got = predict(held, lambda row: profiles[key[row["stack"]]])
    got["profile_from"] = held["stack"].map(origin)
    return got


def leave_one_source_out(frame: pd.DataFrame, prior: Efficiency = DEFAULT_EFFICIENCY, jobs: int = 1) -> pd.DataFrame:
    """Every row predicted with profiles fitted on the other sources (:func:`_held_out`), ``jobs`` processes."""
    sources = list(frame["source_id"].unique())
    if jobs <= 1:
        parts = [_held_out(frame, s, prior) for s in sources]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(pool.map(_held_out, [frame] * len(sources), sources, [prior] * len(sources)))
    return pd.concat(parts).sort_index()


def errors(predicted: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Median |predicted / measured − 1| and the share within ±15 %, per ``kind`` (and per ``by``)."""
    keys = ["kind"] + ([by] if by else [])
    err = (predicted["ratio"] - 1).abs()
    frame = predicted.assign(abs_err=err, within=err <= 0.15)
    return frame.groupby(keys).agg(
        rows=("ratio", "size"), median_abs_err=("abs_err", "median"), within_15=("within", "mean")
    )


def verdicts(predicted: pd.DataFrame) -> dict[str, float]:
    """How often the predicted speedup (``predicted``'s speedup rows) says "pays" (S ≥ 1) or "loses" (S < 1)
    as measured: rows, right (share), losses measured, losses flagged, false alarms (predicted to lose, won)."""
    spec = predicted[predicted["kind"] == "speedup"]
    says, was = spec["predicted"] < 1, spec["measured"] < 1
    return {
        "rows": len(spec),
        "right": float((says == was).mean()) if len(spec) else float("nan"),
        "losses": int(was.sum()),
        "flagged": int((says & was).sum()),
        "false_alarms": int((says & ~was).sum()),
    }


def profile_row(name: str, eff: Efficiency, rows: pd.DataFrame, label: str, date: str) -> dict:
    """One row of ``data/catalog/profiles.csv``: the profile's terms and what it was fitted on."""
    if rows.empty:
        raise Message("serving stack {stack!r} has no rows to fit", stack=name)
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


PREDICTIONS = stack_profiles.PREDICTIONS_CSV  #: every priceable row's predictions, written by validation_bench.py
PREDICTION_COLUMNS = (
    "row_id",
    "source_id",
    "kind",
    "stack",
    "method",
    "measured",
    "default_predicted",
    "fitted_predicted",
    "loso_predicted",
    "profile_from",
    "regime",
)


def regime_keys(frame: pd.DataFrame) -> pd.Series:
    """Each published row's regime slug (:class:`specviz.core.regimes.Regime`); step rows have the draft "none"."""
    method = frame["method"].where(frame["kind"] == "speedup", "none")
    cells = regimes.of_frame(frame.assign(method=method), frame["target"].map(hardware.is_moe))
    return cells.map(lambda r: r.key)


def prediction_table(default: pd.DataFrame, fitted: pd.DataFrame, loso: pd.DataFrame) -> pd.DataFrame:
    """Per priced row: measured and the default, shipped (fitted on all) and leave-one-source-out predictions."""
    return pd.DataFrame(
        {
            **{c: default[c] for c in ("row_id", "source_id", "kind", "stack", "method", "measured")},
            "default_predicted": default["predicted"],
            "fitted_predicted": fitted["predicted"],
            "loso_predicted": loso["predicted"],
            "profile_from": loso["profile_from"],
            "regime": regime_keys(default),
        }
    )[list(PREDICTION_COLUMNS)]


def load_predictions(path: Path = PREDICTIONS) -> pd.DataFrame:
    """The published rows joined with ``predictions.csv`` (written by ``validation_bench.py --write-profiles``)."""
    try:
        pred = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise Message(
            "the validation predictions {path} cannot be read: {error}", path=str(path), error=str(exc)
        ) from exc
    keep = ["row_id", *PREDICTION_COLUMNS[5:]]
    return load_measurements().merge(pred[keep], on="row_id", how="inner")

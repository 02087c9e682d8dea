"""``python -m specviz predict``: price a draft/target pair on a GPU: c, v, o, the speedup by K and K*."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from specviz.cli.args import _floats, _ints, _positive

if TYPE_CHECKING:
    import pandas as pd


def add_parser(sub) -> None:
    from specviz.core import hardware, profiles

    pp = sub.add_parser(
        "predict",
        help="price a draft/target pair on a GPU with an engine profile: c, v, o, the speedup by K and K*",
    )
    pp.add_argument(
        "--target", required=True, help="a model of data/catalog/models.csv, or the path of its config.json"
    )
    pp.add_argument(
        "--draft",
        required=True,
        help=f"a model of the catalogue, a head of data/catalog/heads.csv, {hardware.NGRAM}, or the path of a "
        "model's or a head's config.json (EAGLE-3, P-EAGLE, DFlash, MTP, Medusa: it drafts for --target)",
    )
    pp.add_argument("--gpu", default="H100-SXM5-80GB", help="an accelerator of data/catalog/gpus.csv")
    profile = pp.add_mutually_exclusive_group()
    profile.add_argument(
        "--profile",
        "--engine",  # the name from before "engine" meant only our engine, kept for existing scripts
        dest="profile",
        default=profiles.DEFAULT_PROFILE,
        help=f"engine profile of data/catalog/profiles.csv (default {profiles.DEFAULT_PROFILE}: typical CUDA-graph costs, not fitted)",
    )
    profile.add_argument(
        "--profile-terms",
        "--engine-terms",
        dest="profile_terms",
        default=None,
        metavar="TERMS",
        help="a custom profile instead: name=value,… over " + ", ".join(profiles.TERMS) + " (the rest: the default's)",
    )
    pp.add_argument("--dtype", default="bf16", choices=tuple(hardware.DTYPE_BYTES))
    pp.add_argument("--tp", type=_positive, default=1, help="tensor-parallel GPUs of the target")
    pp.add_argument(
        "--tp-draft", type=_positive, default=None, help="tensor-parallel GPUs of the draft (default: --tp)"
    )
    pp.add_argument("--batch", type=_ints, default=[1], help="batch sizes, e.g. 1,8,64")
    pp.add_argument("--context", type=int, default=1024, help="tokens in the KV cache")
    acceptance = pp.add_mutually_exclusive_group(required=True)
    acceptance.add_argument("--alpha", type=_floats, help="acceptance α, or per-position a_1,a_2,… (the last repeats)")
    acceptance.add_argument("--tau", type=float, help="measured mean tokens per round (bonus included) at K = --k-max")
    pp.add_argument("--k-max", type=_positive, default=8, help="price K = 1..k_max")
    pp.add_argument("--draft-tokens", type=_positive, default=1, help="tokens per draft forward (a tree level's width)")
    pp.add_argument(
        "--verify-tokens",
        type=_positive,
        default=None,
        help="tokens per verify forward (default K + 1; a tree's nodes)",
    )
    pp.add_argument("--format", choices=("table", "csv", "json"), default="table")
    pp.set_defaults(func=cmd_predict)


PREDICT_TABLE = ["batch", "k", "c", "v", "o", "t_target_ms", "t_draft_ms", "t_verify_ms", "mean_tokens", "speedup"]


def _checked(option: str, check, *args):
    """``check(*args)``, a library check; its ValueError (a ``Message``) again, led by the option it is about."""
    try:
        return check(*args)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


def _profile_used(name: str, terms: str | None, gpu: str) -> tuple:
    """(the :class:`~specviz.core.profiles.Efficiency` that prices the pair, what it is and where it comes from).

    ``terms`` (``--profile-terms``) is a custom profile (:func:`specviz.core.profiles.decode_terms`: the
    terms given, the rest the default's); else the named profile of data/catalog/profiles.csv. The default
    on a calibrated machine is that machine's own figures (:func:`specviz.core.hardware.efficiency_for`),
    as on the Hardware & batch page.
    """
    from dataclasses import asdict

    from specviz.core import hardware, profiles

    if terms is not None:
        eff = _checked("--profile-terms", profiles.decode_terms, terms)  # naming the term and what it may be
        info = {"name": "custom", "label": "custom terms", "source": f"--profile-terms {terms!r}"}
        return eff, info | {"fitted_on": "", "rows": 0, "date": "", "terms": asdict(eff)}
    eff = _checked("--profile", profiles.profile, name)  # naming the profiles when ``name`` is none of them
    row = profiles.load_profiles().loc[name]
    info = {"name": name, "label": str(row["label"]), "source": str(row["source"])}
    info |= {"fitted_on": str(row["fitted_on"] or ""), "rows": int(row["rows"]), "date": str(row["date"] or "")}
    if name == profiles.DEFAULT_PROFILE and hardware.efficiency_for(gpu) != profiles.DEFAULT_EFFICIENCY:
        eff = hardware.efficiency_for(gpu)
        info |= {"source": f"the fixed costs measured on {gpu} by python -m specviz calibrate", "rows": 0}
    return eff, info | {"terms": asdict(eff)}


def predict_rows(args: argparse.Namespace, efficiency) -> pd.DataFrame:
    """One row per (batch, K = 1..k_max): c, v, o, the step times, E[N](K) and the speedup, then K*.

    The costs are :func:`specviz.core.hardware.pair_costs` (``draft_tokens`` per draft forward,
    ``verify_tokens`` per verify forward, default K + 1); S = E[N] / (1 + v·(T − 1) + o + D / c)
    (:func:`specviz.core.hardware.round_speedup`). E[N](K) = 1 + Σ_{i≤K} Π_{j≤i} a_j
    (:func:`specviz.core.theory.expected_tokens_by_position`) from ``--alpha`` (one α, or a_1, a_2, …
    with the last repeated) or from the α whose chain of ``--k-max`` drafts yields ``--tau`` tokens per
    round (:func:`specviz.core.theory.alpha_from_mean_tokens`), so that E[N](k_max) = τ. K* is the
    first K of the largest speedup, 0 (do not speculate) where none exceeds 1, the rule of
    :func:`specviz.core.hardware.speedup_by_batch`.
    """
    import numpy as np
    import pandas as pd

    from specviz.core import hardware, theory

    k_max = args.k_max
    if args.tau is not None:
        alpha = [float(theory.alpha_from_mean_tokens(args.tau, k_max))]
    else:
        alpha = list(theory.check_alpha(np.atleast_1d(np.asarray(args.alpha, dtype=float))))
    a = np.asarray((alpha + [alpha[-1]] * k_max)[:k_max])
    mean = theory.expected_tokens_by_position(a)  # (K,)
    b = np.asarray(args.batch, dtype=float)[:, None]
    ks = np.arange(1, k_max + 1)[None, :]
    costs = hardware.pair_costs(
        args.target,
        args.draft,
        args.gpu,
        b,
        args.context,
        ks,
        dtype=args.dtype,
        tp_target=args.tp,
        tp_draft=args.tp if args.tp_draft is None else args.tp_draft,
        efficiency=efficiency,
        draft_tokens=args.draft_tokens,
        verify_tokens=args.verify_tokens,
    )
    s = np.broadcast_to(hardware.round_speedup(mean, costs), (len(args.batch), k_max))
    shape = s.shape

    def cell(name, scale=1.0):
        return (np.broadcast_to(np.asarray(costs[name], dtype=float), shape) * scale).ravel()

    frame = pd.DataFrame(
        {
            "batch": np.repeat(args.batch, k_max),
            "k": np.tile(np.arange(1, k_max + 1), len(args.batch)),
            "c": cell("c"),
            "v": cell("v"),
            "o": cell("o"),
            "draft_steps": cell("draft_steps").astype(int),
            "verify_tokens": (cell("nodes") + 1).astype(int),
            "t_target_ms": cell("t_target", 1e3),
            "t_draft_ms": cell("t_draft", 1e3),
            "t_verify_ms": cell("t_verify", 1e3),
            "mean_tokens": np.tile(mean, len(args.batch)),
            "speedup": s.ravel(),
        }
    )
    best = s.argmax(-1)  # first maximum: ties go to the smaller K
    top = s[np.arange(len(best)), best]
    frame["k_star"] = np.repeat(np.where(top > 1.0, best + 1, 0), k_max)
    frame["speedup_at_k_star"] = np.repeat(np.where(top > 1.0, top, 1.0), k_max)
    return frame


def _shown(values: list[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def _profile_lines(info: dict) -> list[str]:
    terms = ", ".join(f"{k} {v:.4g}" for k, v in info["terms"].items())
    fitted = (
        f"fitted on {info['fitted_on']} ({info['rows']} rows, {info['date']})" if info["fitted_on"] else "not fitted"
    )
    return [
        f"engine profile: {info['name']} ({info['label']}; {fitted})",
        f"  terms: {terms}",
        f"  source: {info['source']}",
    ]


def _is_config(value: str) -> bool:
    """Whether a --target or --draft value names a config.json file rather than a catalogue entry."""
    from pathlib import Path

    return value.endswith(".json") and Path(value).is_file()


def _read_config(path: str) -> str:
    from specviz.core import hardware

    with open(path, "rb") as f:
        data = f.read(hardware.CONFIG_MAX_BYTES + 1)  # the reader refuses more, naming the limit
    return data.decode("utf-8", errors="replace")


def cmd_predict(args: argparse.Namespace) -> int:
    import json

    from specviz.core import hardware, heads, theory, validation

    target_name, draft_name = args.target, args.draft
    if _is_config(args.target):
        args.target = _checked("--target", hardware.from_hf_config, _read_config(args.target), args.target)
    elif args.target not in hardware.load_catalog()[0].index:  # every model named (model_spec names five)
        models = ", ".join(hardware.load_catalog()[0].index)
        raise ValueError(f"--target: model {args.target!r} is not in the catalogue; choose one of {models}")
    if _is_config(args.draft):
        text = _read_config(args.draft)
        read = hardware.head_from_config if _checked("--draft", hardware.is_head_config, text) else None
        args.draft = (
            _checked("--draft", read, text, args.target, args.draft)
            if read
            else _checked("--draft", hardware.from_hf_config, text, args.draft)
        )
    _checked("--draft", validation.check_draft, args.draft, args.target)
    _checked("--gpu", hardware.gpu_spec, args.gpu)
    theory.check_k(args.k_max, "--k-max")
    if args.tau is not None and not 1 <= args.tau <= args.k_max + 1:
        raise ValueError(f"--tau must be in [1, --k-max + 1 = {args.k_max + 1}] (tokens per round); got {args.tau:g}")
    if heads.is_head(args.draft) and heads.head_spec(args.draft)["kind"] in heads.PARALLEL:
        n = int(heads.head_spec(args.draft)["medusa_heads"])
        if args.k_max > n:
            raise ValueError(f"--k-max must be at most the {n} heads of {draft_name!r}; got {args.k_max}")
    if args.verify_tokens is not None and args.verify_tokens < args.k_max + 1:
        raise ValueError(
            f"--verify-tokens must be at least --k-max + 1 = {args.k_max + 1} (the drafted positions and the bonus "
            f"one); got {args.verify_tokens}"
        )
    eff, info = _profile_used(args.profile, args.profile_terms, args.gpu)
    frame = predict_rows(args, eff)
    inputs = {
        "target": target_name,
        "draft": draft_name,
        "gpu": args.gpu,
        "dtype": args.dtype,
        "tp": args.tp,
        "tp_draft": args.tp if args.tp_draft is None else args.tp_draft,
        "context": args.context,
        "draft_tokens": args.draft_tokens,
        "verify_tokens": args.verify_tokens,
        "alpha": None if args.tau is not None else args.alpha,
        "tau": args.tau,
    }
    if args.format == "json":
        k_star = frame.drop_duplicates("batch")[["batch", "k_star", "speedup_at_k_star"]]
        rows = frame.drop(columns=["k_star", "speedup_at_k_star"])
        out = {"inputs": inputs, "profile": info, "rows": rows.to_dict("records"), "k_star": k_star.to_dict("records")}
        print(json.dumps(out, indent=2))
    elif args.format == "csv":
        print(frame.assign(profile=info["name"], profile_fitted_on=info["fitted_on"]).to_csv(index=False), end="")
    else:
        print(
            f"{target_name} + {draft_name} on {args.tp} × {args.gpu} ({args.dtype}), context {args.context:,}, "
            + (f"τ = {args.tau:g} at K = {args.k_max}" if args.tau is not None else f"α = {_shown(args.alpha)}")
        )
        print("\n".join(_profile_lines(info)))
        print(frame[PREDICT_TABLE].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        for row in frame.drop_duplicates("batch").itertuples():
            star = "do not speculate" if row.k_star == 0 else f"speedup {row.speedup_at_k_star:.3f}×"
            print(f"B = {row.batch}: K* = {row.k_star} ({star})")
    return 0

"""The Rejection-sampling lab's scenario (p, q, K, rounds, seed, the verification rule) and the rounds it simulates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from specviz.app import ui
from specviz.app.share import Param
from specviz.base.i18n import N_
from specviz.engine import sampling

PAGE = "lab"  #: the page's widget keys start with it
P_BUILDERS = tuple(b for b in sampling.BUILDERS if b != "tempered")
SPEC = (
    Param("v", 100, "int", 1, 5000, label=N_("V (vocabulary size)")),
    Param("p", "zipf", "choice", choices=P_BUILDERS),
    Param("p_s", 1.1, "float", 0.0, 5.0),
    Param("p_beta", 0.5, "float", 1e-3, 100.0),
    Param("p_seed", 0, "int", 0, 2**31 - 1),
    Param("p_vec", "", "text", hi=20_000),
    Param("q", "tempered", "choice", choices=tuple(sampling.BUILDERS)),
    Param("q_s", 0.8, "float", 0.0, 5.0),
    Param("q_beta", 0.5, "float", 1e-3, 100.0),
    Param("q_seed", 1, "int", 0, 2**31 - 1),
    Param("q_tau", 1.5, "float", 0.05, 20.0, label=N_("τ (draft = target at temperature τ)")),
    Param("q_vec", "", "text", hi=20_000),
    Param("k", 4, "int", 1, 32, label=N_("K (draft length)")),
    Param("rounds", 200_000, "int", 1_000, 5_000_000, label=N_("rounds")),
    Param("seed", 0, "int", 0, 2**31 - 1, label=N_("seed")),
    Param(
        "variant",
        "exact",
        "choice",
        choices=tuple(sampling.VARIANTS),
        label=N_("verification rule"),
        labels=(
            N_("exact rule"),
            N_("bug: accept the first draft unconditionally"),
            N_("bug: resample from p instead of the residual"),
            N_("bug: draft at one temperature, ratio at another"),
        ),
    ),
    Param("t_draft", 0.5, "float", 0.05, 20.0, label=N_("draft sampling temperature (ratio uses q at 1)")),
    Param(
        "view",
        "overlap",
        "choice",
        choices=("overlap", "tokens", "emitted"),
        labels=(N_("Acceptance is overlap"), N_("Tokens per round"), N_("Emitted tokens")),
    ),
)
LEVEL = 1e-3  # significance level of the χ² verdict (sampling.emitted_verdict)
SIMULATIONS = f"{PAGE}.simulations"  #: the store of simulated rounds shared by every visitor (ui.SHARED_STORES)


@dataclass(frozen=True)
class Builder:
    """One distribution as sampling.build makes it: the builder and its parameters."""

    name: str  #: "p" or "q" (named in an error)
    kind: str  #: one of sampling.BUILDERS
    s: float  #: Zipf exponent
    beta: float  #: Dirichlet concentration
    seed: int  #: Dirichlet seed
    tau: float  #: temperature of "tempered" (1 for p)
    text: str | bytes  #: the custom weights: typed text, or an uploaded file's bytes


@dataclass(frozen=True)
class Rounds:
    """What a simulation runs: K, the rounds, the seed, the verification rule and the draft's temperature."""

    k: int
    rounds: int
    seed: int
    variant: str  #: one of sampling.VARIANTS
    t_draft: float  #: the draft's sampling temperature (temperature_mismatch only)


@dataclass(frozen=True)
class Scenario:
    """The page's inputs: the vocabulary size, the target p, the draft q and the rounds."""

    v: int  #: vocabulary size V
    p: Builder
    q: Builder
    rounds: Rounds


def builder(view: dict, who: str, upload=None) -> Builder:
    """Distribution ``who`` ("p" or "q") of the controls; ``upload`` (a file) replaces the typed weights."""
    text = upload.getvalue() if upload is not None else view[f"{who}_vec"]
    return Builder(
        who,
        view[who],
        view[f"{who}_s"],
        view[f"{who}_beta"],
        view[f"{who}_seed"],
        view.get(f"{who}_tau", 1.0),
        text,
    )


def scenario(view: dict, uploads: dict) -> Scenario:
    """The page's scenario from its controls' ``view`` and the custom builders' ``uploads`` ({who: file})."""
    rounds = Rounds(view["k"], view["rounds"], view["seed"], view["variant"], view["t_draft"])
    return Scenario(view["v"], builder(view, "p", uploads.get("p")), builder(view, "q", uploads.get("q")), rounds)


def build(b: Builder, v: int, base: torch.Tensor | None = None) -> torch.Tensor:
    """The distribution over ``v`` tokens (``base``: the p that "tempered" heats); raises ValueError."""
    return sampling.build(b.kind, v, s=b.s, beta=b.beta, seed=b.seed, tau=b.tau, text=b.text, base=base, name=b.name)


def distributions(s: Scenario) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, q), p first (a bad p is named before q)."""
    p = build(s.p, s.v)
    return p, build(s.q, s.v, base=p)


def _run_key(p: torch.Tensor, q: torch.Tensor, r: Rounds) -> tuple:
    return p.numpy().tobytes(), q.numpy().tobytes(), r.k, r.rounds, r.seed, r.variant, r.t_draft


def simulated(p: torch.Tensor, q: torch.Tensor, r: Rounds) -> tuple[np.ndarray, np.ndarray] | None:
    """The (N per round, emitted tokens) of any visitor's run of these inputs, or None."""
    return ui.shared_results(SIMULATIONS).get(_run_key(p, q, r))


def simulate(
    p: torch.Tensor, q: torch.Tensor, r: Rounds, progress: Callable[[float], None] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(N per round as uint8, emitted token ids as int16): a stored run of these inputs, or a new one, stored;
    ``progress`` gets the fraction done of a new one."""
    result = simulated(p, q, r)
    if result is not None:
        return result
    n, emitted = sampling.simulate_rounds(
        p,
        q,
        r.k,
        r.rounds,
        torch.Generator().manual_seed(r.seed),
        r.variant,
        draft_temperature=r.t_draft,
        progress=progress,
    )
    # kept compact: N <= K + 1 <= 33 fits uint8 and a token id < V <= 5000 int16 (a quarter of int64)
    result = (n.numpy().astype(np.uint8), emitted.numpy().astype(np.int16))
    ui.shared_results(SIMULATIONS).put(_run_key(p, q, r), result)
    return result

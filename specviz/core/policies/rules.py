"""Draft-length rules as serving stacks implement them: how many tokens to draft each round."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from specviz.base.i18n import N_, Message, Phrase
from specviz.core import theory


@dataclass(frozen=True)
class Policy:
    """A draft-length rule: ``kind`` names it, ``params`` its settings; built by the functions below."""

    kind: str
    params: dict = field(default_factory=dict)
    label: str = ""

    @property
    def reads_confidence(self) -> bool:
        """Its stop rule reads q(x) or q_top."""
        return self.kind in ("hf_confidence", "specdecpp", "llamacpp_pmin")

    @property
    def stateful(self) -> bool:
        """Its budget depends on earlier rounds (hf_heuristic)."""
        return self.kind == "hf_heuristic"

    def budget(self, k_max: int) -> int:
        """Drafts a stateless rule allows in a round, capped at ``k_max``."""
        return int(min(self.params.get("k", k_max), k_max))

    def stop_here(self, q: Sequence[float], top: Sequence[float]) -> str | None:
        """Live rule after ``len(q)`` drafts: None (go on), ``"keep"`` or ``"drop"`` the last; as :meth:`lengths`."""
        if self.kind == "hf_confidence" and q[-1] < self.params["threshold"]:
            return "keep"
        if self.kind == "specdecpp" and 1.0 - float(np.prod(q)) > self.params["threshold"]:
            return "keep"
        if self.kind == "llamacpp_pmin" and top[-1] < self.params["p_min"]:
            return "keep" if self.params["keep_crossing"] else "drop"
        return None

    def min_drafts(self) -> int:
        """Drafts below this are not verified (llama.cpp --draft-min); 0 for other rules."""
        return int(self.params.get("n_min", 0))

    def lengths(self, q: np.ndarray, top: np.ndarray, accepted: np.ndarray, budget) -> tuple[np.ndarray, np.ndarray]:
        """(drafts verified (R,), draft forwards (R,)) for rows ``q``, ``top`` (R, K) under ``budget``."""
        rows, k = q.shape
        budget = np.broadcast_to(np.asarray(budget, dtype=np.int64), (rows,))
        if self.kind in ("constant", "hf_heuristic", "vllm_by_batch"):
            n = budget.copy()
        elif self.kind == "oracle":
            n = np.minimum(accepted + (1 if self.params["include_rejected"] else 0), budget)
        else:
            if self.kind == "hf_confidence":
                stop = q < self.params["threshold"]  # stop after this token (kept)
            elif self.kind == "specdecpp":
                stop = 1.0 - np.cumprod(q, axis=1) > self.params["threshold"]
            else:  # llamacpp_pmin
                stop = top < self.params["p_min"]
            first = np.where(stop.any(1), np.argmax(stop, axis=1), k)  # (R,) 0-based index of the stopping token
            keep = self.kind != "llamacpp_pmin" or self.params["keep_crossing"]
            n = np.minimum(first + (1 if keep else 0), budget)
            if self.kind == "llamacpp_pmin" and not keep:  # the discarded token still cost its forward
                steps = np.minimum(first + 1, budget)
                too_short = n < self.params["n_min"]
                return np.where(too_short, 0, n), steps
        steps = n.copy()
        if self.kind == "llamacpp_pmin":
            n = np.where(n < self.params["n_min"], 0, n)  # shorter than --draft-min: not verified
        return n, steps


class Schedule:
    """A policy's per-run budget in the engine: hf heuristic +2 after an all-accepted round, else −1 (floor 1)."""

    def __init__(self, policy: Policy, k_max: int):
        if policy.kind == "oracle":
            raise ValueError("the oracle policy knows the target's answers: it replays on traces, it cannot run live")
        self.policy, self.k_max = policy, int(k_max)
        self.k = min(policy.params["start"], self.k_max) if policy.stateful else policy.budget(self.k_max)

    def update(self, drafted: int, accepted: int) -> None:
        if self.policy.stateful:
            self.k = min(self.k + 2, self.k_max) if accepted == drafted else max(1, self.k - 1)


def constant(k: int) -> Policy:
    k = int(theory.check_k(k))
    return Policy("constant", {"k": k}, Phrase("constant K = {k}", k=k))


def hf_heuristic(start: int = 20, transient: bool = False) -> Policy:
    """transformers ``heuristic`` (``update_candidate_strategy``): K += 2 if all accepted, else max(1, K − 1)."""
    start = int(theory.check_k(start, "start"))  # num_assistant_tokens; transient: heuristic_transient, per segment
    name = "heuristic_transient" if transient else "heuristic"
    label = Phrase("HF {name} (start {start})", name=name, start=start)
    return Policy("hf_heuristic", {"start": start, "transient": bool(transient)}, label)


def hf_confidence(threshold: float = 0.4, k: int = 20) -> Policy:
    """transformers ``assistant_confidence_threshold``: stop after a token with q(x) < threshold (kept)."""
    threshold = float(theory.check_alpha(threshold, "threshold"))
    k = int(theory.check_k(k))
    label = Phrase("HF confidence ≥ {threshold:g}", threshold=threshold)
    return Policy("hf_confidence", {"threshold": threshold, "k": k}, label)


def llamacpp_pmin(p_min: float = 0.75, n_max: int = 16, n_min: int = 0, keep_crossing: bool = True) -> Policy:
    """llama.cpp ``--draft-p-min/--draft-max/--draft-min`` (``common/speculative.cpp``): stop at the first q_top <
    ``p_min``; 2025 builds keep that token (``keep_crossing``), later ones drop it; under ``n_min`` not verified."""
    p_min = float(theory.check_alpha(p_min, "p_min"))
    n_max = int(theory.check_k(n_max, "n_max"))
    if int(n_min) != n_min or not 0 <= n_min <= n_max:
        raise Message("n_min must be an integer in [0, n_max = {n_max}]; got {n_min}", n_max=n_max, n_min=n_min)
    return Policy(
        "llamacpp_pmin",
        {"p_min": p_min, "k": n_max, "n_min": int(n_min), "keep_crossing": bool(keep_crossing)},
        Phrase("llama.cpp p_min {p_min:g}", p_min=p_min),
    )


def specdecpp(threshold: float = 0.7, k: int = 16) -> Policy:
    """SpecDec++ (arXiv 2405.19715), draft q as acceptance estimate: stop when 1 − Π_{j≤i} q(x_j) > threshold."""
    threshold = float(theory.check_alpha(threshold, "threshold"))
    label = Phrase("SpecDec++ {threshold:g}", threshold=threshold)
    return Policy("specdecpp", {"threshold": threshold, "k": int(theory.check_k(k))}, label)


def vllm_by_batch(schedule: Sequence[Sequence[int]], batch_size: int) -> Policy:
    """vLLM ``num_speculative_tokens_per_batch_size``: K of the ``[start_bs, end_bs, K]`` holding ``batch_size``."""
    b = int(theory.check_k(batch_size, "batch_size"))
    for start, end, k in schedule:
        if int(start) <= b <= int(end):
            label = Phrase("vLLM by batch (B = {b}: K = {k})", b=b, k=k)
            return Policy("vllm_by_batch", {"k": int(k), "batch_size": b}, label)
    raise Message("batch_size {b} is in no range of the schedule {schedule}", b=b, schedule=list(map(list, schedule)))


def while_proposing(k: int) -> Policy:
    """The n-gram drafter's rule: draft while q_top ≥ 0.5, at most ``k``; a miss costs its lookup."""
    k = int(theory.check_k(k))
    label = Phrase("while proposing")
    return Policy("llamacpp_pmin", {"p_min": 0.5, "k": k, "n_min": 0, "keep_crossing": False}, label)


def oracle(include_rejected: bool = False) -> Policy:
    """Drafts exactly the accepted tokens, k = a (non-causal bound); ``include_rejected``: k = a + 1."""
    name = Phrase(N_("oracle (+ the rejected draft)") if include_rejected else N_("oracle"))
    return Policy("oracle", {"include_rejected": bool(include_rejected)}, name)


def oracle_speedup(alpha, c, include_rejected: bool = False):
    """Oracle speedup, i.i.d. α, v = o = 0: 1 / ((1 − α) + α/c); 1 / ((1 − α) + 1/c) with the rejected draft."""
    a, cc = theory.check_alpha(alpha), theory.check_positive(c, "c")
    return (1.0 / ((1.0 - a) + (1.0 if include_rejected else a) / cc))[()]

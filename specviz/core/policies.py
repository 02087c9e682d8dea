"""Draft-length policies: how many tokens to draft each round, replayed on traces (numpy, no streamlit).

A **policy** decides, token by token, "draft one more, or stop", from what the draft says about the
tokens drafted so far: q(x_i), the draft's probability of the token it drafted at position i, and
q_top, its top-1 probability there; a stateful one also looks at the rounds before. Engines differ
only in this rule:

* :func:`constant` — K every round (the chapter's model);
* :func:`hf_heuristic` — Hugging Face transformers' ``num_assistant_tokens_schedule="heuristic"``:
  K += 2 after a round whose drafts were all accepted, else K = max(1, K − 1)
  (``AssistedCandidateGenerator.update_candidate_strategy``; ``heuristic_transient`` restarts from
  the initial K at every ``generate`` call, here every trace segment);
* :func:`hf_confidence` — transformers' ``assistant_confidence_threshold`` (0.4 in current
  releases): a ``ConfidenceCriteria`` stopping criterion ends drafting after a token whose q(x) is
  below it (the token itself is kept);
* :func:`llamacpp_pmin` — llama.cpp's ``--draft-p-min``, ``--draft-max``, ``--draft-min``: stop when
  the draft's top-1 probability falls below p_min. ``common/speculative.cpp`` of the 2025 builds
  pushes the token and then tests (the crossing token is kept; defaults 0.75 / 16 / 0); later builds
  test first and discard it. A draft shorter than ``--draft-min`` is not verified at all;
* :func:`specdecpp` — SpecDec++ (arXiv 2405.19715): stop once the estimated probability that some
  draft so far is rejected, 1 − Π q(x_j), exceeds a threshold (the paper learns the acceptance
  estimate; here it is the draft's own probability);
* :func:`vllm_by_batch` — vLLM's ``num_speculative_tokens_per_batch_size``: K from the batch size;
* :func:`oracle` — drafts exactly the tokens the target will accept (non-causal: a bound).

A **trace** (:class:`Trace`) is what an engine saw at a fixed K_max with no early stop: per row and
draft position, q(x), q_top and the target's p(x), and per row the accepted count a (the index of the
first rejection; K_max when all were accepted). :func:`replay` runs a policy over it: a policy that
drafts k tokens where the trace accepted a gets min(k, a) accepted and one more token (the
correction or the bonus), and pays 1 + v·k + o target steps for the verify plus (draft forwards)/c.

Rows are rounds for an i.i.d. trace (:func:`synthetic_trace`, or sampled decoding, where a new round
is a new draw); for a greedy engine trace they are output **positions** (``positional``): row j is
the draft's K_max chain from position j of the target's greedy output, which does not depend on the
policy, so a policy's walk — j → j + min(k, a_j) + 1 — is replayed exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.core import theory

__all__ = [
    "SWEEPS",
    "Policy",
    "Replay",
    "Schedule",
    "Trace",
    "compare",
    "concat",
    "constant",
    "hf_confidence",
    "hf_heuristic",
    "llamacpp_pmin",
    "load_trace",
    "oracle",
    "oracle_speedup",
    "parse_trace",
    "replay",
    "save_trace",
    "specdecpp",
    "sweep",
    "synthetic_trace",
    "trace_text",
    "vllm_by_batch",
    "while_proposing",
]


# --------------------------------------------------------------------------------------
# traces
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trace:
    """Rounds (or positions) × K_max draft positions of one run with a fixed K_max and no early stop.

    ``q_token`` (R, K): the draft's probability of the token it drafted; ``q_top`` (R, K): its top-1
    probability (equal to ``q_token`` for greedy drafting); ``p_token`` (R, K): the target's
    probability of that token (NaN where unknown); ``accepted`` (R,): leading accepted drafts, 0..K;
    ``segment`` (R,): which prompt / generate call a row belongs to; ``positional``: rows are output
    positions of a greedy run (module docstring), not rounds.
    """

    q_token: np.ndarray
    q_top: np.ndarray
    accepted: np.ndarray
    p_token: np.ndarray | None = None
    segment: np.ndarray | None = None
    positional: bool = False

    def __post_init__(self):
        q, top, a = (np.asarray(x) for x in (self.q_token, self.q_top, self.accepted))
        if q.ndim != 2 or q.shape[1] < 1 or q.shape != top.shape:
            raise Message(
                "q_token and q_top must both be (rounds, K_max); got {q_shape} and {top_shape}",
                q_shape=q.shape,
                top_shape=top.shape,
            )
        if a.shape != (q.shape[0],) or not np.issubdtype(a.dtype, np.integer) or a.min(initial=0) < 0:
            raise Message(
                "accepted must be (rounds,) integers in [0, K_max]; got shape {shape}, dtype {dtype}",
                shape=a.shape,
                dtype=a.dtype,
            )
        if a.max(initial=0) > q.shape[1]:
            raise Message("accepted must be at most K_max = {k_max}; got {got}", k_max=q.shape[1], got=a.max())
        for name, x in (("q_token", q), ("q_top", top)):
            if not (np.all(x >= 0) and np.all(x <= 1)):
                raise Message("{name} must hold probabilities in [0, 1]", name=name)

    @property
    def rounds(self) -> int:
        return int(np.asarray(self.accepted).shape[0])

    @property
    def k_max(self) -> int:
        return int(np.asarray(self.q_token).shape[1])

    def segments(self) -> np.ndarray:
        """(R,) segment id of each row (all 0 when the trace has one)."""
        return np.zeros(self.rounds, dtype=np.int64) if self.segment is None else np.asarray(self.segment)


def concat(traces: Sequence[Trace]) -> Trace:
    """One trace of several (one per prompt): rows stacked, each input a segment of its own."""
    if not traces or len({t.k_max for t in traces}) != 1 or len({t.positional for t in traces}) != 1:
        raise ValueError("concat needs at least one trace, all of one K_max and one kind (positional or rounds)")
    stack = lambda name: np.concatenate([np.asarray(getattr(t, name)) for t in traces])
    p = None if any(t.p_token is None for t in traces) else stack("p_token")
    segment = np.concatenate([np.full(t.rounds, i, dtype=np.int64) for i, t in enumerate(traces)])
    return Trace(stack("q_token"), stack("q_top"), stack("accepted"), p, segment, traces[0].positional)


TRACE_FORMAT = "specviz trace 1"  #: the first line's ``format`` of a trace file


def trace_text(trace: Trace) -> str:
    """The JSON-lines text of a trace: a header ``{"format", "k_max", "positional"}``, then one object
    per row with its segment, accepted count and the per-position q_token, q_top and p_token (null
    where unknown)."""
    import json

    p = np.full(np.shape(trace.q_token), np.nan) if trace.p_token is None else np.asarray(trace.p_token)
    lines = [json.dumps({"format": TRACE_FORMAT, "k_max": trace.k_max, "positional": trace.positional})]
    for s, a, q, top, pt in zip(trace.segments(), trace.accepted, trace.q_token, trace.q_top, p, strict=True):
        row = {
            "segment": int(s),
            "accepted": int(a),
            "q_token": [round(float(x), 6) for x in q],
            "q_top": [round(float(x), 6) for x in top],
            "p_token": [None if np.isnan(x) else round(float(x), 6) for x in pt],
        }
        lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def save_trace(trace: Trace, path) -> None:
    """Write :func:`trace_text` to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(trace_text(trace))


MAX_TRACE_K = 64  #: largest K_max a trace may have (the page's synthetic traces go as far)
MAX_TRACE_ROUNDS = 200_000  #: most rows a trace may hold
MAX_TRACE_BYTES = 20_000_000  #: largest trace file read: the uploader's 20 MB (.streamlit/config.toml)


def load_trace(path) -> Trace:
    """A trace written by :func:`save_trace`; ValueError naming the line and what is wrong."""
    with open(path, "rb") as f:
        return parse_trace(f.read(MAX_TRACE_BYTES + 1), str(path))


def _lines(data: str | bytes):
    """(line number, text) of each non-blank line of ``data``, one at a time (no list of them all)."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    start, number = 0, 0
    while start < len(data):
        end = data.find(newline, start)
        end = len(data) if end < 0 else end
        number += 1
        line = data[start:end]
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if line.strip():
            yield number, line
        start = end + 1


def parse_trace(data: str | bytes, name: str = "trace") -> Trace:
    """A trace from the text (or bytes) of a :func:`save_trace` file (an upload); ValueError naming
    ``name``, the line and what is wrong.

    The caps are checked while reading, before the rows are parsed in full: at most
    :data:`MAX_TRACE_BYTES` bytes, a header K_max of at most :data:`MAX_TRACE_K` and at most
    :data:`MAX_TRACE_ROUNDS` rows (the row after the last one allowed stops the read)."""
    import json

    size = len(data) if isinstance(data, bytes) else len(str(data).encode("utf-8", "surrogatepass"))
    if size > MAX_TRACE_BYTES:
        raise Message(
            "{name}: the trace holds {size} bytes; at most {most} are read",
            name=name,
            size=f"{size:,}",
            most=f"{MAX_TRACE_BYTES:,}",
        )
    lines = _lines(data if isinstance(data, bytes) else str(data))
    first = next(lines, (1, ""))[1]
    try:
        head = json.loads(first) if first.lstrip().startswith("{") and len(first) < 10_000 else {}
    except (ValueError, RecursionError):
        head = {}
    if not isinstance(head, dict) or head.get("format") != TRACE_FORMAT:
        raise Message(
            "{name}: line 1 must be a {fmt!r} header (written by python -m specviz bench --trace)",
            name=name,
            fmt=TRACE_FORMAT,
        )
    k = head.get("k_max")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_TRACE_K:
        raise Message(
            "{name}: the header's k_max must be an integer from 1 to {most}; got {k!r}",
            name=name,
            k=k,
            most=MAX_TRACE_K,
        )
    seg, acc, q, top, pt = [], [], [], [], []
    for n, line in lines:
        if len(acc) == MAX_TRACE_ROUNDS:
            raise Message(
                "{name}: line {line} is past the most rows a trace may hold ({most}); replay a shorter run",
                name=name,
                line=n,
                most=f"{MAX_TRACE_ROUNDS:,}",
            )
        try:
            row = json.loads(line)
            values = [row["q_token"], row["q_top"], [np.nan if x is None else x for x in row["p_token"]]]
            if not all(isinstance(v, list) and len(v) == k for v in values) or int(row["accepted"]) != row["accepted"]:
                raise ValueError
            q.append(values[0]), top.append(values[1]), pt.append(values[2])
            seg.append(int(row["segment"])), acc.append(int(row["accepted"]))
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
            raise Message(
                "{name}: line {line} is not a trace row of K_max = {k} (segment, accepted, q_token, q_top, p_token)",
                name=name,
                line=n,
                k=k,
            ) from None
    if not acc:
        raise Message("{name}: the trace has no rows", name=name)
    try:
        arrays = [np.asarray(x, dtype=float) for x in (q, top, pt)]  # (R, K) each
        return Trace(*arrays[:2], np.asarray(acc), arrays[2], np.asarray(seg), bool(head.get("positional")))
    except (ValueError, TypeError, OverflowError) as exc:
        raise Message("{name}: {cause}", name=name, cause=exc) from None


def synthetic_trace(
    alpha,
    k_max: int,
    rounds: int,
    generator: np.random.Generator,
    confidence: str = "calibrated",
    concentration: float = 2.0,
) -> Trace:
    """An i.i.d. trace: position i of every round is accepted with probability a_i (α, or a vector).

    Draft confidences follow a stated calibration model:

    * ``"calibrated"`` — q(x_i) ~ Beta(κ a_i, κ (1 − a_i)) (mean a_i, κ = ``concentration``), and the
      position is accepted with probability q(x_i): the draft's confidence *is* its acceptance
      probability, so confidence rules have something to read;
    * ``"flat"`` — q(x_i) = a_i for every round, acceptance Bernoulli(a_i): confidence carries no
      information (every confidence rule then acts like a constant K).

    Drafting is greedy-like: q_top = q(x). Rows are rounds (``positional`` False).
    """
    k_max, rounds = int(theory.check_k(k_max, "k_max")), int(theory.check_k(rounds, "rounds"))
    a = np.broadcast_to(theory.check_alpha(alpha, "alpha"), (k_max,)).astype(float)  # (K,)
    if confidence == "calibrated":
        if not concentration > 0:
            raise Message("concentration must be > 0; got {concentration}", concentration=concentration)
        lo, hi = np.clip(concentration * a, 1e-9, None), np.clip(concentration * (1 - a), 1e-9, None)
        q = np.where((a > 0) & (a < 1), generator.beta(lo, hi, size=(rounds, k_max)), a)  # (R, K)
    elif confidence == "flat":
        q = np.broadcast_to(a, (rounds, k_max)).copy()
    else:
        raise Message("confidence must be 'calibrated' or 'flat'; got {confidence!r}", confidence=confidence)
    passed = generator.random((rounds, k_max)) < q  # (R, K)
    accepted = np.where(passed.all(1), k_max, np.argmin(passed, axis=1))  # leading passes
    return Trace(q_token=q, q_top=q.copy(), accepted=accepted.astype(np.int64))


# --------------------------------------------------------------------------------------
# policies
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """A draft-length rule (module docstring). Built by the functions below, not directly.

    ``kind`` names the rule; ``params`` its settings. :meth:`lengths` gives, for a block of rows and a
    per-row budget, the drafts each row verifies and the draft forwards it spent; stateful rules
    (``hf_heuristic``) set the budget round by round in :func:`replay`.
    """

    kind: str
    params: dict = field(default_factory=dict)
    label: str = ""

    @property
    def reads_confidence(self) -> bool:
        """Its stop rule looks at q(x) or q_top (so the engine computes them while drafting)."""
        return self.kind in ("hf_confidence", "specdecpp", "llamacpp_pmin")

    @property
    def stateful(self) -> bool:
        """Its budget depends on earlier rounds (so replay walks round by round)."""
        return self.kind == "hf_heuristic"

    def budget(self, k_max: int) -> int:
        """Drafts allowed in a round by a stateless rule (capped at the trace's K_max)."""
        return int(min(self.params.get("k", k_max), k_max))

    def stop_here(self, q: Sequence[float], top: Sequence[float]) -> str | None:
        """The live form of the rule, after drafting ``len(q)`` tokens with these q(x) and q_top:
        None (draft another, budget permitting), ``"keep"`` (stop; verify them all) or ``"drop"``
        (stop and discard the last one: llama.cpp's later builds). The same rule as :meth:`lengths`."""
        if self.kind == "hf_confidence" and q[-1] < self.params["threshold"]:
            return "keep"
        if self.kind == "specdecpp" and 1.0 - float(np.prod(q)) > self.params["threshold"]:
            return "keep"
        if self.kind == "llamacpp_pmin" and top[-1] < self.params["p_min"]:
            return "keep" if self.params["keep_crossing"] else "drop"
        return None

    def min_drafts(self) -> int:
        """Fewer drafts than this are not verified (llama.cpp's --draft-min); 0 for other rules."""
        return int(self.params.get("n_min", 0))

    def lengths(self, q: np.ndarray, top: np.ndarray, accepted: np.ndarray, budget) -> tuple[np.ndarray, np.ndarray]:
        """(drafts verified (R,), draft forwards (R,)) for rows ``q``, ``top`` (R, K) under ``budget`` (R,) or scalar."""
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
    """A policy's per-run state in the engine: the round's budget, updated from each round's outcome
    (transformers' heuristic: +2 after an all-accepted round, else −1, floor 1; others: fixed)."""

    def __init__(self, policy: Policy, k_max: int):
        if policy.kind == "oracle":
            raise ValueError("the oracle policy knows the target's answers: it replays on traces, it cannot run live")
        self.policy, self.k_max = policy, int(k_max)
        self.k = min(policy.params["start"], self.k_max) if policy.stateful else policy.budget(self.k_max)

    def update(self, drafted: int, accepted: int) -> None:
        if self.policy.stateful:
            self.k = min(self.k + 2, self.k_max) if accepted == drafted else max(1, self.k - 1)


def constant(k: int) -> Policy:
    """K drafts every round (the chapter's model)."""
    k = int(theory.check_k(k))
    return Policy("constant", {"k": k}, Phrase("constant K = {k}", k=k))


def hf_heuristic(start: int = 20, transient: bool = False) -> Policy:
    """transformers' ``heuristic`` schedule: start at ``start`` (``num_assistant_tokens``, 20 in current
    releases); K += 2 after an all-accepted round, else K = max(1, K − 1). ``transient`` restarts from
    ``start`` at each trace segment (``heuristic_transient``: every ``generate`` call)."""
    start = int(theory.check_k(start, "start"))
    name = "heuristic_transient" if transient else "heuristic"
    label = Phrase("HF {name} (start {start})", name=name, start=start)
    return Policy("hf_heuristic", {"start": start, "transient": bool(transient)}, label)


def hf_confidence(threshold: float = 0.4, k: int = 20) -> Policy:
    """transformers' ``assistant_confidence_threshold``: after drafting a token whose q(x) < threshold,
    stop (that token is kept); at most ``k`` (``num_assistant_tokens``) drafts."""
    threshold = float(theory.check_alpha(threshold, "threshold"))
    k = int(theory.check_k(k))
    label = Phrase("HF confidence ≥ {threshold:g}", threshold=threshold)
    return Policy("hf_confidence", {"threshold": threshold, "k": k}, label)


def llamacpp_pmin(p_min: float = 0.75, n_max: int = 16, n_min: int = 0, keep_crossing: bool = True) -> Policy:
    """llama.cpp's draft loop: stop at the first token whose top-1 probability is below ``p_min``
    (``--draft-p-min``); at most ``n_max`` (``--draft-max``); a draft shorter than ``n_min``
    (``--draft-min``) is not verified. ``keep_crossing``: the 2025 builds push that token before the
    test (kept); later builds test first (discarded, its forward still spent). Defaults: the 2025
    builds' 0.75 / 16 / 0."""
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
    """SpecDec++'s stopping rule with the draft's probabilities as the acceptance estimate: after
    drafting token i, stop when 1 − Π_{j ≤ i} q(x_j) > ``threshold``; at most ``k`` drafts."""
    threshold = float(theory.check_alpha(threshold, "threshold"))
    label = Phrase("SpecDec++ {threshold:g}", threshold=threshold)
    return Policy("specdecpp", {"threshold": threshold, "k": int(theory.check_k(k))}, label)


def vllm_by_batch(schedule: Sequence[Sequence[int]], batch_size: int) -> Policy:
    """vLLM's K by batch size: ``schedule`` as ``[[start_bs, end_bs, K], …]``; the K of the range holding
    ``batch_size`` (0: do not speculate)."""
    b = int(theory.check_k(batch_size, "batch_size"))
    for start, end, k in schedule:
        if int(start) <= b <= int(end):
            label = Phrase("vLLM by batch (B = {b}: K = {k})", b=b, k=k)
            return Policy("vllm_by_batch", {"k": int(k), "batch_size": b}, label)
    raise Message("batch_size {b} is in no range of the schedule {schedule}", b=b, schedule=list(map(list, schedule)))


def while_proposing(k: int) -> Policy:
    """Draft while the drafter proposes a token (q_top ≥ 0.5), at most ``k``: the n-gram drafter's rule
    (:class:`specviz.engine.models.ngram.NgramDraft` has q_top = 1 on a proposal and 1/V without one). The
    call that finds no proposal costs its lookup but drafts nothing."""
    k = int(theory.check_k(k))
    label = Phrase("while proposing")
    return Policy("llamacpp_pmin", {"p_min": 0.5, "k": k, "n_min": 0, "keep_crossing": False}, label)


def oracle(include_rejected: bool = False) -> Policy:
    """Drafts exactly the tokens the target accepts (non-causal, a bound): k = a; with
    ``include_rejected``, k = a + 1 (it also drafts the first rejected token, as a causal rule must
    to see the rejection), the bound 1 / ((1 − α) + 1/c) of :func:`oracle_speedup`."""
    name = Phrase(N_("oracle (+ the rejected draft)") if include_rejected else N_("oracle"))
    return Policy("oracle", {"include_rejected": bool(include_rejected)}, name)


def oracle_speedup(alpha, c, include_rejected: bool = False):
    """The oracle's speedup under i.i.d. α and unbounded K_max (v = o = 0).

    A round drafts the a accepted tokens (geometric, E[a] = α / (1 − α)) and emits a + 1, so
    S = E[a + 1] / (1 + E[a]/c) = 1 / ((1 − α) + α/c); drafting the rejected token too costs one more
    draft step per round: S = 1 / ((1 − α) + 1/c).
    """
    a, cc = theory.check_alpha(alpha), theory.check_positive(c, "c")
    return (1.0 / ((1.0 - a) + (1.0 if include_rejected else a) / cc))[()]


# --------------------------------------------------------------------------------------
# replay
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """A policy replayed on a trace: per round the drafts verified (k), draft forwards, accepted and
    emitted tokens and the cost in target steps; the speedup Σ tokens / Σ cost over target-only."""

    policy: str
    k: np.ndarray  # (rounds,) drafts verified (0: a plain target step)
    draft_steps: np.ndarray  # (rounds,)
    accepted: np.ndarray  # (rounds,)
    tokens: np.ndarray  # (rounds,) accepted + 1
    cost: np.ndarray  # (rounds,) target steps

    @property
    def speedup(self) -> float:
        return float(self.tokens.sum() / self.cost.sum())

    @property
    def tokens_per_round(self) -> float:
        return float(self.tokens.mean())

    @property
    def drafted_per_round(self) -> float:
        return float(self.draft_steps.mean())

    @property
    def wasted(self) -> int:
        """Draft forwards whose token was not accepted (rejected, discarded or never verified)."""
        return int((self.draft_steps - self.accepted).sum())


def _cost(k: np.ndarray, steps: np.ndarray, c: float, v: float, o: float) -> np.ndarray:
    """Target steps of rounds that verify k drafts after ``steps`` draft forwards: 1 + v·k + o + steps/c
    (k = 0: one plain target step, plus the draft forwards spent)."""
    return np.where(k > 0, 1.0 + v * k + o, 1.0) + steps / c


def replay(policy: Policy, trace: Trace, c: float, v: float = 0.0, o: float = 0.0) -> Replay:
    """Run ``policy`` over ``trace`` (module docstring) at costs c, v, o.

    A stateless rule's drafts are computed for every row at once; a round trace then needs no walk.
    A positional trace is walked row → row + accepted + 1 (restarting at each segment), and the
    stateful ``hf_heuristic`` round by round, in plain scalar loops.
    """
    c = float(theory.check_positive(c, "c"))
    v, o = float(theory.check_nonnegative(v, "v")), float(theory.check_nonnegative(o, "o"))
    q, top, a = np.asarray(trace.q_token), np.asarray(trace.q_top), np.asarray(trace.accepted)
    if not policy.stateful:
        k_all, steps_all = policy.lengths(q, top, a, policy.budget(trace.k_max))
        if not trace.positional:
            acc = np.minimum(k_all, a)
            return Replay(policy.label, k_all, steps_all, acc, acc + 1, _cost(k_all, steps_all, c, v, o))
    visited, ks = _walk(policy, trace, None if policy.stateful else k_all.tolist())
    k = np.asarray(ks, dtype=np.int64)
    steps = k if policy.stateful else steps_all[visited]
    acc = np.minimum(k, a[visited])
    return Replay(policy.label, k, steps, acc, acc + 1, _cost(k, steps, c, v, o))


def _walk(policy: Policy, trace: Trace, k_all: list[int] | None) -> tuple[np.ndarray, list[int]]:
    """(rows visited, drafts verified at each): the rows a run takes, with ``k_all[row]`` drafts for a
    stateless rule, or hf_heuristic's budget (+2 after an all-accepted round, else −1, floor 1)."""
    accepted, segments = trace.accepted.tolist(), trace.segments().tolist()
    start = min(policy.params.get("start", 1), trace.k_max)
    transient = policy.params.get("transient", False)
    rows, ks, budget, row = [], [], start, 0
    while row < trace.rounds:
        if transient and rows and segments[row] != segments[rows[-1]]:
            budget = start
        k = budget if k_all is None else k_all[row]
        rows.append(row)
        ks.append(k)
        got = min(k, accepted[row])
        if k_all is None:
            budget = min(budget + 2, trace.k_max) if got == k else max(1, budget - 1)
        if not trace.positional:
            row += 1
        elif row + got + 1 < trace.rounds and segments[row + got + 1] == segments[row]:
            row += got + 1
        else:  # the segment's output ends here: the next prompt's first position
            row = _next(segments, row)
    return np.asarray(rows, dtype=np.int64), ks


def compare(trace: Trace, rules: Sequence[Policy], c: float, v: float = 0.0, o: float = 0.0) -> pd.DataFrame:
    """Each rule, the best constant K (1..K_max) and the oracle replayed on ``trace``: one row each with
    policy, speedup, tokens per round, drafts per round, wasted drafts per round, and ``kind``
    ("rule", "best static K", "oracle")."""
    static = [replay(constant(k), trace, c, v, o) for k in range(1, trace.k_max + 1)]
    best = max(static, key=lambda r: r.speedup)
    rows = [(replay(rule, trace, c, v, o), "rule") for rule in rules]
    rows += [(best, "best static K"), (replay(oracle(), trace, c, v, o), "oracle")]
    return pd.DataFrame(
        {
            "policy": pd.Series([r.policy for r, _ in rows], dtype=object),  # labels keep their i18n.Phrase
            "kind": [kind for _, kind in rows],
            "speedup": [r.speedup for r, _ in rows],
            "tokens_per_round": [r.tokens_per_round for r, _ in rows],
            "drafts_per_round": [r.drafted_per_round for r, _ in rows],
            "wasted_per_round": [r.wasted / len(r.k) for r, _ in rows],
        }
    )


#: The rules a :func:`sweep` can vary: name → build(parameter value, K_max).
SWEEPS = {
    "llama.cpp p_min": lambda x, k: llamacpp_pmin(x, n_max=k),
    "HF confidence threshold": lambda x, k: hf_confidence(x, k),
    "SpecDec++ threshold": lambda x, k: specdecpp(x, k),
}


def sweep(name: str, values: Sequence[float], trace: Trace, c: float, v: float = 0.0, o: float = 0.0) -> pd.DataFrame:
    """The speedup of one rule (a key of :data:`SWEEPS`) at each value of its parameter on ``trace``:
    columns value, speedup, drafts_per_round, tokens_per_round."""
    if name not in SWEEPS:
        raise Message("sweep: {name!r} is not one of {allowed}", name=name, allowed=list(SWEEPS))
    results = [replay(SWEEPS[name](float(x), trace.k_max), trace, c, v, o) for x in values]
    return pd.DataFrame(
        {
            "value": np.asarray(values, dtype=float),
            "speedup": [r.speedup for r in results],
            "drafts_per_round": [r.drafted_per_round for r in results],
            "tokens_per_round": [r.tokens_per_round for r in results],
        }
    )


def _next(segments: list[int], row: int) -> int:
    """The first row of the next segment after ``row``'s (len(segments) when there is none)."""
    return next((r for r in range(row + 1, len(segments)) if segments[r] != segments[row]), len(segments))

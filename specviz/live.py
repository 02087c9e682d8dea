"""The live benchmark's logic (no streamlit): deployment limits, request checks, the run queue,
and what the page shows about each measured cell.

The measuring itself is :func:`specviz.bench.sweep` — the code path of ``python -m specviz bench``
— so the page and the CLI time exactly the same thing.

Configuration (environment variables; documented in the README's deploy section):

``SPECVIZ_HOSTED``          "1": hosted mode — only the bundled pair and the allow-listed HF ids,
                            no local paths, the lower caps below.
``SPECVIZ_HF_ALLOWLIST``    comma-separated Hugging Face "TARGET,DRAFT" pairs allowed in hosted
                            mode, pairs separated by ";" (e.g. ``gpt2-large,gpt2;org/t,org/d``).
``SPECVIZ_MAX_NEW_TOKENS``, ``SPECVIZ_MAX_REPEATS``, ``SPECVIZ_MAX_PROMPTS``,
``SPECVIZ_MAX_CELLS``, ``SPECVIZ_MAX_WALL_S``
                            per-run caps (defaults: 1024 / 10 / 32 / 64 / 900 s; hosted: 256 / 3 /
                            12 / 16 / 120 s).
"""

from __future__ import annotations

import html
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from specviz import theory

__all__ = [
    "RUN_QUEUE",
    "Limits",
    "RunQueue",
    "Worker",
    "check_pair",
    "check_request",
    "cost_breakdown",
    "limits_from_env",
    "n_counts",
    "segments_html",
    "text_segments",
    "wait",
]

_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Limits:
    """What one live run may ask for, from the deployment's configuration."""

    hosted: bool = False  #: hosted mode: bundled pair + allow-listed HF ids only
    hf_allowlist: tuple[str, ...] = ()  #: "TARGET,DRAFT" pairs allowed in hosted mode
    max_new_tokens: int = 1024
    max_repeats: int = 10
    max_prompts: int = 32
    max_cells: int = 64  #: (K, temperature) cells per run
    max_wall_s: float = 900.0  #: the run stops (keeping finished cells) after this long


HOSTED_DEFAULTS = Limits(hosted=True, max_new_tokens=256, max_repeats=3, max_prompts=12, max_cells=16, max_wall_s=120.0)


def _env_number(environ: Mapping[str, str], name: str, default, kind=int):
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{name} must be a positive {'integer' if kind is int else 'number'}; got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be a positive {'integer' if kind is int else 'number'}; got {raw!r}")
    return value


def limits_from_env(environ: Mapping[str, str] | None = None) -> Limits:
    """:class:`Limits` from ``SPECVIZ_*`` variables (module docstring); ValueError naming a bad one."""
    environ = os.environ if environ is None else environ
    hosted = environ.get("SPECVIZ_HOSTED", "").strip().lower() in _TRUE
    base = HOSTED_DEFAULTS if hosted else Limits()
    allow = tuple(p.strip().replace(" ", "") for p in environ.get("SPECVIZ_HF_ALLOWLIST", "").split(";") if p.strip())
    for pair in allow:
        if pair.count(",") != 1 or not all(pair.split(",")):
            raise ValueError(f"SPECVIZ_HF_ALLOWLIST entries must be 'TARGET,DRAFT' separated by ';'; got {pair!r}")
    return replace(
        base,
        hosted=hosted,
        hf_allowlist=allow,
        max_new_tokens=_env_number(environ, "SPECVIZ_MAX_NEW_TOKENS", base.max_new_tokens),
        max_repeats=_env_number(environ, "SPECVIZ_MAX_REPEATS", base.max_repeats),
        max_prompts=_env_number(environ, "SPECVIZ_MAX_PROMPTS", base.max_prompts),
        max_cells=_env_number(environ, "SPECVIZ_MAX_CELLS", base.max_cells),
        max_wall_s=_env_number(environ, "SPECVIZ_MAX_WALL_S", base.max_wall_s, float),
    )


def _looks_local(name: str) -> bool:
    return name.startswith((".", "/", "~", "\\")) or ":" in name or Path(name).expanduser().exists()


def check_pair(spec: str, limits: Limits) -> str:
    """The normalised pair spec, or ValueError saying why this deployment refuses it.

    "bundled" is always allowed. "TARGET,DRAFT" (Hugging Face ids or local folders) only when not
    hosted, or, hosted, when the pair is on the allow-list and neither part is a local path.
    A bare folder (our own format) is refused in hosted mode.
    """
    spec = (spec or "").strip().replace(" ", "")
    if not spec:
        raise ValueError("pair must be 'bundled' or 'TARGET,DRAFT' (Hugging Face ids); got an empty value")
    if spec == "bundled":
        return spec
    if not limits.hosted:
        if "," in spec and not all(spec.split(",")):
            raise ValueError(f"pair must be 'bundled' or 'TARGET,DRAFT'; got {spec!r}")
        return spec
    if "," not in spec or spec.count(",") != 1:
        raise ValueError(
            f"pair {spec!r} is not allowed on this hosted deployment: local folders are refused; use "
            f"'bundled' or one of the allowed Hugging Face pairs: {_allowed(limits)}"
        )
    if any(_looks_local(part) for part in spec.split(",")):
        raise ValueError(
            f"pair {spec!r}: local paths are not allowed on this hosted deployment; allowed: {_allowed(limits)}"
        )
    if spec not in limits.hf_allowlist:
        raise ValueError(
            f"pair {spec!r} is not on this deployment's allow-list (SPECVIZ_HF_ALLOWLIST); allowed: {_allowed(limits)}"
        )
    return spec


def _allowed(limits: Limits) -> str:
    return ", ".join(["bundled", *limits.hf_allowlist])


def check_request(
    ks: Sequence[int],
    temperatures: Sequence[float],
    new_tokens: int,
    repeats: int,
    prompts: Sequence[str],
    limits: Limits,
) -> None:
    """ValueError naming the field, the value and the allowed range, for anything over the caps."""
    if not ks:
        raise ValueError("K values: choose at least one draft length")
    for k in ks:
        if not 1 <= int(k) <= 64:
            raise ValueError(f"K values: {k} is outside [1, 64]")
    if not temperatures:
        raise ValueError("temperatures: choose at least one (0 = greedy)")
    for t in temperatures:
        if not 0 <= float(t) <= 2:
            raise ValueError(f"temperatures: {t} is outside [0, 2]")
    cells = len(ks) * len(temperatures)
    if cells > limits.max_cells:
        raise ValueError(f"K values × temperatures: {cells} cells; this deployment allows at most {limits.max_cells}")
    if not 1 <= new_tokens <= limits.max_new_tokens:
        raise ValueError(f"new tokens: {new_tokens}; allowed 1 to {limits.max_new_tokens}")
    if not 1 <= repeats <= limits.max_repeats:
        raise ValueError(f"repeats: {repeats}; allowed 1 to {limits.max_repeats}")
    if not prompts or not any(p.strip() for p in prompts):
        raise ValueError("prompts: the prompt is empty; type some text or use the bundled prompts")
    if len(prompts) > limits.max_prompts:
        raise ValueError(f"prompts: {len(prompts)}; this deployment allows at most {limits.max_prompts}")


# --------------------------------------------------------------------------------------
# one run at a time
# --------------------------------------------------------------------------------------


class RunQueue:
    """Serialises live runs across the browser sessions of one server process.

    ``with queue.hold(who, on_wait):`` blocks until no other run holds the queue, calling
    ``on_wait(message)`` about every ``poll_s`` while queued, so the page can say
    "queued behind another run" instead of failing. Release is guaranteed (finally), also when
    the waiting or holding script is interrupted by a Stop or a rerun.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: tuple[str, float] | None = None

    def busy(self) -> str | None:
        """A description of the run holding the queue, or None."""
        holder = self._holder
        if holder is None:
            return None
        return f"{holder[0]}, running for {time.monotonic() - holder[1]:.0f} s"

    @contextmanager
    def hold(self, who: str, on_wait: Callable[[str], None] | None = None, poll_s: float = 0.5) -> Iterator[float]:
        """Hold the queue; yields the seconds spent waiting."""
        t0 = time.monotonic()
        while not self._lock.acquire(timeout=poll_s):
            if on_wait is not None:
                on_wait(
                    f"Queued behind another run ({self.busy() or 'finishing'}); waited {time.monotonic() - t0:.0f} s."
                )
        try:
            self._holder = (who, time.monotonic())
            yield time.monotonic() - t0
        finally:
            self._holder = None
            self._lock.release()


RUN_QUEUE = RunQueue()  #: the process-wide queue the page uses


def wait(future: Future, tick: Callable[[], None], interval_s: float = 0.2):
    """Call ``tick()`` about every ``interval_s`` until ``future`` is done; return its result (or raise its error).

    The page's progress bar updates in ``tick``; that is also where Streamlit interrupts the
    script when the person presses Stop.
    """
    while not future.done():
        tick()
        time.sleep(interval_s)
    return future.result()


class Worker:
    """The one thread on which the live page does all its torch work: loading pairs and measuring.

    PyTorch's CPU thread pool (OpenMP) belongs to the thread that calls into it. Streamlit runs each
    rerun of a page on a new thread; when a pair loaded on one thread is run from another, the idle
    pools contend for the cores and decoding measured 15–40 % slower on a 2-core CPU (a thread that
    loads and runs alike is as fast as the CLI's main thread). So every load and every run goes
    through this single worker thread; loaded pairs are kept (at most ``max_pairs``, oldest dropped).
    """

    def __init__(self, max_pairs: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specviz-live")
        self._pairs: dict[tuple, tuple] = {}
        self._max_pairs = max_pairs

    def submit(self, fn: Callable, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` on the worker thread (after any job already queued)."""
        return self._pool.submit(fn, *args, **kwargs)

    def pair(self, spec: str, device: str, dtype) -> tuple:
        """``load_pair(spec, device, dtype)``, cached; call it from a job running on this worker."""
        from specviz.models import load_pair

        key = (spec, device, str(dtype))
        if key not in self._pairs:
            while len(self._pairs) >= self._max_pairs:
                self._pairs.pop(next(iter(self._pairs)))
            self._pairs[key] = load_pair(spec, device=device, dtype=dtype)
        return self._pairs[key]


# --------------------------------------------------------------------------------------
# what the page shows about a cell (pure functions of bench.Run lists)
# --------------------------------------------------------------------------------------


def n_counts(runs, k: int) -> np.ndarray:
    """Rounds emitting N = 1..K+1 tokens, pooled over the cell's runs. Shape (K+1,)."""
    counts = np.zeros(k + 1, dtype=np.int64)
    for run in runs:
        for r in run.speculative.rounds:
            counts[len(r.emitted) - 1] += 1
    return counts


def cost_breakdown(runs, k: int) -> dict[str, float]:
    """Mean per-round milliseconds: draft, verify, other; and the basic model's round T_p + K·T_q.

    The basic model prices a round at one target step plus K draft steps; the measured round
    differs by the verify forward's extra cost over one step (v) and the overhead (o).
    """
    rounds = [r for run in runs for r in run.speculative.rounds]
    t_p = float(np.median([run.baseline.t_target_ms for run in runs]))
    t_q = float(np.median([run.speculative.t_draft_ms for run in runs]))
    return {
        "draft_ms": float(np.mean([r.draft_ms for r in rounds])),
        "verify_ms": float(np.mean([r.verify_ms for r in rounds])),
        "other_ms": float(np.mean([r.other_ms for r in rounds])),
        "basic_model_ms": t_p + k * t_q,
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


SEGMENT_COLORS = {"accepted": "#c7e9c0", "correction": "#fdd0a2", "bonus": "#c6dbef"}


def segments_html(prompt: str, segments: Sequence[tuple[str, str]]) -> str:
    """HTML (escaped) of the prompt in grey and the generated segments on coloured backgrounds."""

    def span(kind: str, text: str) -> str:
        return f'<span title="{kind}" style="background:{SEGMENT_COLORS[kind]}">{html.escape(text)}</span>'

    body = "".join(span(kind, text) for kind, text in segments)
    return (
        f'<pre style="white-space:pre-wrap;font-size:0.85em;line-height:1.5">'
        f'<span style="color:#888">{html.escape(prompt)}</span>{body}</pre>'
    )


def predicted_n_pmf(alpha: float, k: int) -> np.ndarray:
    """P(N = i), i = 1..K+1, at the measured α (theory.accepted_length_pmf)."""
    return np.asarray(theory.accepted_length_pmf(alpha, k), dtype=float)

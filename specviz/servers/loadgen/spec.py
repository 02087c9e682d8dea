"""What a load run sends (:class:`LoadSpec`) and when: a closed loop, or Poisson arrivals at a rate."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from specviz.base.i18n import N_, Message

#: Allowed ranges (inclusive) of :class:`LoadSpec`'s bounds.
LIMITS: Mapping[str, tuple[int, int]] = {
    "concurrency": (1, 64),
    "max_requests": (1, 10_000),
    "max_seconds": (1, 3600),
    "max_tokens": (1, 4096),
    "seed": (0, 2**32 - 1),
}
TEMPERATURE_RANGE = (0.0, 2.0)  #: the OpenAI API's range
RATE_RANGE = (0.01, 1000.0)  #: allowed open-loop arrival rates, requests/s (inclusive)


def _is_int(x) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


@dataclass(frozen=True)
class LoadSpec:
    """What one load run sends; ValueError naming the field, the value and its range (:data:`LIMITS`)."""

    base_url: str  #: ``http://host:port``, ``…/v1`` or ``…/v1/completions``
    prompts: Sequence[str]  #: request i sends prompts[i mod len]
    model: str | None = None  #: the ``model`` field (llama.cpp ignores it); None or "": none sent
    max_tokens: int | Sequence[int] = 128  #: tokens asked, or one number per request in turn
    temperature: float = 0.0  #: 0: greedy
    concurrency: int = 4  #: requests in flight: always (closed loop), at most (open loop)
    max_requests: int = 100
    max_seconds: float = 60.0  #: no request starts after this
    stream: bool = True  #: False: whole answers, so TTFT, ITL and TPOT are NaN
    rate: float | None = None  #: None: a closed loop; else Poisson arrivals, requests/s
    seed: int = 0  #: seeds the arrival times

    def __post_init__(self) -> None:
        if isinstance(self.prompts, str) or not isinstance(self.prompts, Sequence):
            raise Message("prompts must be a list of strings; got {prompts!r:.80}", prompts=self.prompts)
        object.__setattr__(self, "prompts", tuple(self.prompts))
        if isinstance(self.max_tokens, Sequence) and not isinstance(self.max_tokens, str):
            object.__setattr__(self, "max_tokens", tuple(self.max_tokens))
        if isinstance(self.model, str):
            object.__setattr__(self, "model", self.model.strip() or None)
        self.check()

    def check(self) -> None:
        """ValueError naming the first field out of its range (:data:`LIMITS`)."""
        if not isinstance(self.base_url, str) or not self.base_url.strip():
            raise Message(
                "base_url must be the server's URL, e.g. http://localhost:8000; got {url!r}", url=self.base_url
            )
        if not self.prompts:
            raise Message("prompts must hold at least one prompt; got none")
        for i, p in enumerate(self.prompts):
            if not isinstance(p, str) or not p.strip():
                raise Message("prompts[{i}] must be a non-empty string; got {prompt!r:.80}", i=i, prompt=p)
        if self.model is not None and not isinstance(self.model, str):
            raise Message("model must be a model name or None; got {model!r}", model=self.model)
        if isinstance(self.max_tokens, tuple) and not self.max_tokens:
            raise Message("max_tokens must hold at least one number of tokens; got none")
        for name, (lo, hi) in LIMITS.items():
            values = getattr(self, name)
            value = (
                next((v for v in values if not (_is_int(v) and lo <= v <= hi)), values[0])
                if isinstance(values, tuple)
                else values
            )
            number = _is_int(value) or (name == "max_seconds" and isinstance(value, float) and math.isfinite(value))
            if not number or not lo <= value <= hi:
                key = (
                    N_("{name} must be a number of seconds in {lo}..{hi}; got {value!r}")
                    if name == "max_seconds"
                    else N_("{name} must be an integer in {lo}..{hi}; got {value!r}")
                )
                raise Message(key, name=name, lo=lo, hi=hi, value=value)
        t, (lo, hi) = self.temperature, TEMPERATURE_RANGE
        if isinstance(t, bool) or not isinstance(t, int | float) or not lo <= t <= hi:
            raise Message("temperature must be a number in {lo:g}..{hi:g}; got {t!r}", lo=lo, hi=hi, t=t)
        if not isinstance(self.stream, bool):
            raise Message("stream must be True or False; got {value!r}", value=self.stream)
        if self.rate is not None:
            _check_rate(self.rate)

    def tokens_asked(self, request: int) -> int:
        """The completion tokens request number ``request`` asks for (:attr:`max_tokens`, in turn)."""
        if isinstance(self.max_tokens, tuple):
            return int(self.max_tokens[request % len(self.max_tokens)])
        return int(self.max_tokens)

    @property
    def mode(self) -> str:
        """``"open"`` (arrivals at ``rate``) or ``"closed"`` (``concurrency`` requests always in flight)."""
        return "closed" if self.rate is None else "open"


def _check_rate(value) -> float:
    """``value`` as a rate in :data:`RATE_RANGE`; else the Message naming the field, the value and the range."""
    lo, hi = RATE_RANGE
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not lo <= value <= hi:
        raise Message(
            "rate must be a number of requests per second in {lo:g}..{hi:g}, or none for a closed loop; got {value!r}",
            lo=lo,
            hi=hi,
            value=value,
        )
    return float(value)


def parse_rate(text: str) -> float | None:
    """A rate typed on a page: empty → None (a closed loop), else a number in :data:`RATE_RANGE` (ValueError)."""
    typed = str(text).strip()
    if not typed:
        return None
    try:
        value = float(typed)
    except ValueError:
        value = typed  # not a number: the message quotes what was typed
    return _check_rate(value)


def arrival_times(rate: float, n: int, seed: int = 0) -> np.ndarray:
    """(n,) Poisson arrival times, seconds: t_i = g_1 + … + g_i, g_j ~ Exp(λ = ``rate``) from ``default_rng(seed)``.

    As vllm/benchmarks/serve.py ``get_request`` (burstiness 1), but not rescaled so that the last falls at n / λ.
    """
    rate = _check_rate(rate)
    if not _is_int(n) or n < 0:
        raise Message("n must be an integer >= 0; got {n!r}", n=n)
    return np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, size=int(n)))


def bundled_prompts() -> list[str]:
    """The prompts bundled with specviz (:func:`specviz.engine.bench.load_prompts`)."""
    from specviz.engine import bench  # imports torch: only when asked for

    return bench.load_prompts()


def padded_prompts(prompts: list[str], tokens: int, chars_per_token: float) -> list[str]:
    """Each prompt brought to about ``tokens`` tokens, ⌈``tokens`` · ``chars_per_token``⌉ characters: after a
    preamble of the others (from the next one on, in turn, repeated as needed), the prompt kept whole at the
    end; a prompt already longer keeps its last characters. Each preamble starts elsewhere, so no two
    requests share a long prefix."""
    if not prompts or any(not p for p in prompts):
        raise Message("padding needs non-empty prompts")
    if not (math.isfinite(chars_per_token) and chars_per_token > 0):
        raise Message("chars per token must be a number > 0; got {value}", value=chars_per_token)
    want = math.ceil(tokens * chars_per_token)
    out = []
    for i, prompt in enumerate(prompts):
        if len(prompt) >= want:
            out.append(prompt[len(prompt) - want :])
            continue
        need = want - len(prompt) - 2
        parts, size, j = [], 0, i + 1
        while size < need:
            parts.append(prompts[j % len(prompts)])
            size += len(parts[-1]) + 2
            j += 1
        preamble = "\n\n".join(parts)[: max(need, 0)]
        out.append(f"{preamble}\n\n{prompt}" if preamble else prompt)
    return out

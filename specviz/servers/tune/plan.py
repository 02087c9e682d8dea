"""What a tune measures (:class:`TunePlan`): draft lengths × loads, how much per point, and its bounds."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from specviz.base.i18n import Message

#: Inclusive ranges of a plan's numbers.
LIMITS = {
    "k": (0, 16),
    "concurrency": (1, 64),
    "requests": (1, 2000),
    "max_tokens": (2, 2048),
    "minutes": (1, 240),
    "contexts": (0, 131072),
}
MODES = ("local", "remote")  #: local: specviz starts llama-server per K; remote: a running server at its own K


def _int_in(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise Message("{name} must be an integer in {lo}..{hi}; got {value!r}", name=name, lo=lo, hi=hi, value=value)
    return value


@dataclass(frozen=True)
class TunePlan:
    """A sweep: every K of ``ks`` at every load of ``concurrency`` (closed loops) and every prompt length of
    ``contexts`` (tokens; 0: the prompts as they are), ``requests`` each (at least 2 per request in flight),
    answers of ``max_tokens``, the whole bounded by ``minutes``."""

    mode: str
    ks: tuple[int, ...]  #: local: draft lengths to start the server with (0: no draft); remote: the server's one K
    concurrency: tuple[int, ...]
    requests: int = 16
    max_tokens: int = 64
    minutes: int = 10
    target: str = ""  #: local: the pair's name or folder; remote: the server's URL
    prompts: str = "bundled"  #: "bundled" or the prompts file's name
    prompts_sha: str = ""  #: sha256 of the prompts sent, so a resumed tune sends the same ones
    contexts: tuple[int, ...] = (0,)  #: prompt lengths in tokens, each a prompt padded to it (0: as given)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise Message("mode must be one of {allowed}; got {value!r}", allowed=", ".join(MODES), value=self.mode)
        for name in ("ks", "concurrency", "contexts"):
            values = getattr(self, name)
            if isinstance(values, str) or not isinstance(values, Sequence) or not values:
                raise Message("{name} must list at least one integer; got {value!r}", name=name, value=values)
            lo, hi = LIMITS["k" if name == "ks" else name]
            object.__setattr__(self, name, tuple(sorted({_int_in(name, v, lo, hi) for v in values})))
        if self.mode == "remote" and len(self.ks) != 1:
            raise Message("a remote server runs at one K; got ks = {value!r}", value=self.ks)
        for name in ("requests", "max_tokens", "minutes"):
            _int_in(name, getattr(self, name), *LIMITS[name])

    def points(self) -> list[tuple[int, int, int]]:
        """(K, concurrency, context) in the order measured: every K at one load before the next load, so that a
        slow drift of the machine moves the K compared at a load together; one context after another."""
        return [(k, c, n) for n in self.contexts for c in self.concurrency for k in self.ks]

    def requests_at(self, concurrency: int) -> int:
        """Requests sent at a load: ``requests``, and at least two per request in flight."""
        return max(self.requests, 2 * concurrency)

    def to_json(self) -> dict:
        d = {**asdict(self), "ks": list(self.ks), "concurrency": list(self.concurrency)}
        d["contexts"] = list(self.contexts)
        if self.contexts == (0,):  # a plan of the prompts as given reads (and hashes) as before contexts existed
            del d["contexts"]
        return d

    @classmethod
    def from_json(cls, d: dict) -> TunePlan:
        lists = {name: tuple(d[name]) for name in ("ks", "concurrency", "contexts") if name in d}
        return cls(**{**d, **lists})

    def digest(self) -> str:
        """A short hash of the plan: a tune resumes only into the plan it started with."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:12]


def prompts_sha(prompts: Sequence[str]) -> str:
    """sha256 of the prompts, in order."""
    return hashlib.sha256("\x00".join(prompts).encode()).hexdigest()

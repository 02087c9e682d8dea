"""Engine profiles: what a serving stack adds to the roofline, and how close it gets to the datasheet.

A roofline prices the bytes and FLOPs of a forward. A real stack also spends fixed time that the
roofline does not see, and how much depends on the stack far more than on the GPU:

* ``overhead_s``: per forward (kernel launches of a CUDA graph replay, sampling, the scheduler);
* ``layer_overhead_s``: per layer and forward (eager PyTorch dispatches every operator from Python;
  0 where a CUDA graph or a compiled C++ loop replays the layers);
* ``seq_overhead_s``: per sequence and forward (per-request scheduling, sampling, detokenising);
* ``round_overhead_s``: per speculative round (rejection sampling, tree building, KV bookkeeping);
* ``compute`` and ``memory``: the fractions of dense peak FLOP/s and of HBM bandwidth reached.

One forward of ``n_layers`` layers for ``B`` sequences costs roofline(B, L, n) + overhead_s +
layer_overhead_s·n_layers + seq_overhead_s·B; a speculative round adds round_overhead_s
(:func:`specviz.core.hardware.pair_costs`). The profiles in ``data/catalog/engines.csv`` are
fitted by ``benchmarks/validation_bench.py --write-profiles`` to the published measurements in
``data/validation/measurements.csv``; each row names the sources it was fitted on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import Message
from specviz.base.paths import DATA

ENGINES_CSV = DATA / "catalog" / "engines.csv"
DEFAULT_ENGINE = "roofline"  #: the profile of :data:`DEFAULT_EFFICIENCY`: the roofline with a CUDA-graph step cost
FRACTIONS = ("compute", "memory", "network")
OVERHEADS = ("overhead_s", "allreduce_latency_s", "layer_overhead_s", "seq_overhead_s", "round_overhead_s")


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of the datasheet figures, and the fixed costs of a step and a round.

    The defaults are typical of a tuned serving engine on a data-centre GPU (decode kernels reach
    70–85 % of HBM bandwidth; large GEMMs 60–75 % of dense peak; a CUDA-graph decode step costs
    a few hundred µs of launch and host work). :func:`profile` gives a named engine's.
    """

    compute: float = 0.7  #: e_c: fraction of dense peak FLOP/s reached
    memory: float = 0.8  #: e_m: fraction of HBM bandwidth reached
    network: float = 0.7  #: fraction of interconnect bandwidth an all-reduce reaches
    overhead_s: float = 3e-4  #: fixed per-forward cost (launches, sampling, scheduling), seconds
    allreduce_latency_s: float = 1e-5  #: fixed latency of one all-reduce, seconds
    layer_overhead_s: float = 0.0  #: fixed cost per layer and forward (eager dispatch; 0 with CUDA graphs), seconds
    seq_overhead_s: float = 0.0  #: fixed cost per sequence and forward (scheduling, sampling per request), seconds
    round_overhead_s: float = 0.0  #: fixed cost per speculative round (acceptance, tree, bookkeeping), seconds

    def __post_init__(self):
        for name in FRACTIONS:
            value = getattr(self, name)
            if not (0 < value <= 1):
                raise Message("efficiency.{name} must be in (0, 1]; got {value}", name=name, value=value)
        for name in OVERHEADS:
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise Message("efficiency.{name} must be a finite number >= 0; got {value}", name=name, value=value)


DEFAULT_EFFICIENCY = Efficiency()
TERMS = tuple(f.name for f in fields(Efficiency))


@cache
def _read(path: str) -> pd.DataFrame:
    frame = pd.read_csv(path).set_index("name", drop=False)
    missing = [t for t in TERMS if t not in frame.columns]
    if missing:
        raise Message("{path} lacks the engine terms {missing}", path=path, missing=missing)
    return frame


def load_engines(path: Path = ENGINES_CSV) -> pd.DataFrame:
    """The engine catalogue: one row per profile (name, label, the :data:`TERMS`, source, fitted_on,
    rows, date), the default roofline first."""
    default = pd.DataFrame(
        [
            {
                "name": DEFAULT_ENGINE,
                "label": "Roofline (CUDA graphs, defaults)",
                **asdict(DEFAULT_EFFICIENCY),
                "source": "typical figures, not fitted",
                "fitted_on": "",
                "rows": 0,
                "date": "",
            }
        ]
    ).set_index("name", drop=False)
    if not Path(path).exists():
        return default
    return pd.concat([default, _read(str(path))])


def engine_names(path: Path = ENGINES_CSV) -> tuple[str, ...]:
    """The profile names, :data:`DEFAULT_ENGINE` first."""
    return tuple(load_engines(path).index)


def profile(name: str, path: Path = ENGINES_CSV) -> Efficiency:
    """The :class:`Efficiency` of the engine profile ``name`` (see :func:`engine_names`)."""
    frame = load_engines(path)
    if name not in frame.index:
        raise Message("engine must be one of {allowed}; got {value!r}", allowed=list(frame.index), value=name)
    row = frame.loc[name]
    return Efficiency(**{t: float(row[t]) for t in TERMS})


def as_efficiency(efficiency: Efficiency | str | dict | None) -> Efficiency | None:
    """An :class:`Efficiency` from itself, a profile name, or a dict of terms (a custom profile);
    None stays None (the caller's default)."""
    if efficiency is None or isinstance(efficiency, Efficiency):
        return efficiency
    if isinstance(efficiency, str):
        return profile(efficiency)
    if isinstance(efficiency, dict):
        unknown = sorted(set(efficiency) - set(TERMS))
        if unknown:
            raise Message(
                "engine profile terms must be among {allowed}; got {value}", allowed=list(TERMS), value=unknown
            )
        return Efficiency(**{k: float(v) for k, v in efficiency.items()})
    raise Message("engine must be a profile name or its terms; got {value!r}", value=type(efficiency).__name__)

"""Engine profiles: what a serving stack adds to the roofline, and how close it gets to the datasheet.

A roofline prices the bytes and FLOPs of a forward. A real stack also spends fixed time that the
roofline does not see, and how much depends on the stack far more than on the GPU:

* ``overhead_s``: per forward (kernel launches of a CUDA graph replay, sampling, the scheduler);
* ``layer_overhead_s``: per layer and forward (eager PyTorch dispatches every operator from Python;
  0 where a CUDA graph or a compiled C++ loop replays the layers);
* ``seq_overhead_s``: per sequence and forward (per-request scheduling, sampling, detokenising);
* ``round_overhead_s``: per speculative round (rejection sampling, tree building, KV bookkeeping);
* ``draft_overhead_s``: per draft forward, on top of the forward's own fixed cost (the draft loop's
  top-k, tree expansion and host bookkeeping between draft steps; a Medusa pass or an n-gram lookup
  pays it once);
* ``compute`` and ``memory``: the fractions of dense peak FLOP/s and of HBM bandwidth reached;
  ``quant_memory``: the share of ``memory`` that kernels reading weights stored below 16 bits reach
  (int8, int4, fp8 GEMV/GEMM dequantise or rescale on the fly);
* ``allreduce_latency_s`` and ``pcie_allreduce_latency_s``: the fixed latency of one tensor-parallel
  all-reduce within an NVLink-class board and over PCIe (GPUs without a peer-to-peer fabric, NCCL rings
  through the host bridge, or a group spanning nodes through their network cards: an order of magnitude
  slower for the small messages of decoding). Both come from all-reduce benchmarks and are not fitted.

One forward of ``n_layers`` layers for ``B`` sequences costs roofline(B, L, n) + overhead_s +
layer_overhead_s·n_layers + seq_overhead_s·B; a speculative round adds round_overhead_s and
draft_overhead_s per draft forward (:func:`specviz.core.hardware.pair_costs`). The profiles in ``data/catalog/engines.csv`` are
fitted by ``benchmarks/validation_bench.py --write-profiles`` to the published measurements in
``data/validation/measurements.csv``; each row names the sources it was fitted on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.base.paths import DATA

ENGINES_CSV = DATA / "catalog" / "engines.csv"
DEFAULT_ENGINE = "roofline"  #: the profile of :data:`DEFAULT_EFFICIENCY`: the roofline with a CUDA-graph step cost
#: Engine families: eager (every operator dispatched from Python) and compiled (CUDA graphs or a compiled
#: loop: every other engine). Each is also a catalogue profile, fitted on all of its engines' rows: the
#: profile of an engine the catalogue does not list (LMDeploy, DeepSpeed-MII, …).
EAGER = ("hf-transformers",)
FAMILY_PROFILES = ("compiled", "eager")
#: the family profiles' labels (engines.csv's ``label``; shown translated)
FAMILY_LABELS = {
    "compiled": N_("Any compiled engine (CUDA graphs or a compiled loop; fitted on all of them)"),
    "eager": N_("Any eager PyTorch stack (fitted on all of them)"),
}
FRACTIONS = ("compute", "memory", "network", "quant_memory")
OVERHEADS = (
    "overhead_s",
    "allreduce_latency_s",
    "pcie_allreduce_latency_s",
    "layer_overhead_s",
    "seq_overhead_s",
    "round_overhead_s",
    "draft_overhead_s",
)


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
    #: fixed latency of one all-reduce over NVLink, seconds: vLLM's custom all-reduce takes 9–12 µs for
    #: 512 B–32 KB on 2–8 × H100 and SGLang's 4–8 µs (sgl-project/sglang PR #2904, tests/test_trt_reduce.py);
    #: NCCL with CUDA graphs about 6 µs on 2 × H100, 128 B–64 KB (NVIDIA/nccl issue #1259)
    allreduce_latency_s: float = 1e-5
    layer_overhead_s: float = 0.0  #: fixed cost per layer and forward (eager dispatch; 0 with CUDA graphs), seconds
    seq_overhead_s: float = 0.0  #: fixed cost per sequence and forward (scheduling, sampling per request), seconds
    round_overhead_s: float = 0.0  #: fixed cost per speculative round (acceptance, tree, bookkeeping), seconds
    draft_overhead_s: float = 0.0  #: fixed cost per draft forward beyond the forward's own (draft loop), seconds
    quant_memory: float = 1.0  #: share of ``memory`` reached by kernels reading weights below 16 bits
    #: fixed latency of one all-reduce over PCIe or across nodes, seconds: NCCL's all_reduce_perf gives
    #: 54 µs on 8 × RTX 3090 and 43 µs on 8 × RTX 4090 over PCIe for 8 bytes (NVIDIA/nccl issues #1439, #1530)
    pcie_allreduce_latency_s: float = 5e-5

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


def family(engine: str) -> str:
    """The family profile (:data:`FAMILY_PROFILES`) of the engine named ``engine``: ``eager`` for an
    eager PyTorch stack (:data:`EAGER`), else ``compiled``."""
    return "eager" if engine in EAGER else "compiled"


def profile_for(engine: str, path: Path = ENGINES_CSV) -> Efficiency:
    """The profile an engine named ``engine`` is priced with: its own catalogue profile, else its
    family's (:func:`family`), else the default."""
    names = engine_names(path)
    for name in (engine, family(engine)):
        if name in names:
            return profile(name, path)
    return DEFAULT_EFFICIENCY


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


#: what a value of each term may be, as :func:`decode_terms` states it
_ALLOWED_VALUE = {
    **{name: N_("a number in (0, 1]") for name in FRACTIONS},
    **{name: N_("a finite number >= 0 (seconds)") for name in OVERHEADS},
}
MAX_TERMS_CHARS = 400  #: the longest terms text accepted (every term at full precision is ≈ 250 characters)


def encode_terms(eff: Efficiency, digits: int | None = None) -> str:
    """A custom profile as text: ``"overhead_s=0.0003,layer_overhead_s=0.00016"``.

    Only the terms that differ from :data:`DEFAULT_EFFICIENCY` are written, in :data:`TERMS` order,
    joined by ``,`` (URL-safe: letters, digits, ``_ . = , - +``). Each value is Python's shortest
    round-trip repr, so ``decode_terms(encode_terms(e)) == e``; ``digits`` rounds each to that many
    significant digits first (a fitted profile is not known better than that). The default profile
    encodes as ``""``.
    """
    parts = []
    for name in TERMS:
        value = float(getattr(eff, name))
        if digits is not None:
            value = float(f"{value:.{digits}g}")
        if value != getattr(DEFAULT_EFFICIENCY, name):
            parts.append(f"{name}={value!r}")
    return ",".join(parts)


def decode_terms(text: str) -> Efficiency:
    """The :class:`Efficiency` of a terms text from :func:`encode_terms`: the terms given, the rest
    from :data:`DEFAULT_EFFICIENCY`; ``""`` is the default profile.

    Raises
    ------
    Message
        The text is too long, a part is not ``name=value``, a name is not a term (the allowed ones
        listed), a term is given twice, or a value is not a number in its range (named with what is
        allowed).
    """
    text = str(text).strip()
    if len(text) > MAX_TERMS_CHARS:
        raise Message("engine terms must be at most {most} characters; got {n}", most=MAX_TERMS_CHARS, n=len(text))
    given: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = (s.strip() for s in part.partition("="))
        if not sep:
            raise Message("engine term {part!r} must be written name=value, e.g. overhead_s=0.0003", part=part)
        if name not in TERMS:
            raise Message("engine term {name!r} is not one of {allowed}", name=name, allowed=", ".join(TERMS))
        if name in given:
            raise Message("engine term {name!r} is given twice", name=name)
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        low_ok = number > 0 if name in FRACTIONS else number >= 0
        if not (np.isfinite(number) and low_ok and (name not in FRACTIONS or number <= 1)):
            raise Message(
                "engine term {name} = {value!r} is not allowed; allowed: {allowed}",
                name=name,
                value=value,
                allowed=Phrase(_ALLOWED_VALUE[name]),
            )
        given[name] = number
    return replace(DEFAULT_EFFICIENCY, **given)


PREDICTIONS_CSV = DATA / "validation" / "predictions.csv"  #: written by benchmarks/validation_bench.py
BAND_QUANTILES = (0.1, 0.9)  #: the error band: this share of held-out rows' predicted / measured lies inside
MIN_BAND_ROWS = 3  #: fewer held-out rows of an engine than this: the band of every engine's rows instead


@cache
def _predictions(path: str) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path)
    except (OSError, ValueError):
        return None


def error_band(name: str, kind: str, path: Path = PREDICTIONS_CSV) -> dict | None:
    """How far a prediction priced with profile ``name`` typically is from a measurement of ``kind``
    (``"step"`` or ``"speedup"``), from the published rows of ``data/validation/predictions.csv``.

    The ratio predicted / measured of the rows *held out* from the fit (leave-one-source-out) of
    the engine ``name`` (of every engine of the family, for a family profile); for the default
    roofline profile, of every row with the default profile.
    Where the engine has fewer than :data:`MIN_BAND_ROWS` rows of ``kind``, every engine's held-out
    rows stand in (``basis = "all"``).

    Returns
    -------
    dict or None
        ``lo``, ``hi`` (the :data:`BAND_QUANTILES` of the ratio), ``median``, ``rows`` and ``basis``
        (``"engine"`` or ``"all"``); None where no predictions file or no row of ``kind`` exists.
    """
    if kind not in ("step", "speedup"):
        raise Message("kind must be 'step' or 'speedup'; got {value!r}", value=kind)
    frame = _predictions(str(path))
    if frame is None:
        return None
    frame = frame[frame["kind"] == kind]
    column = "default_predicted" if name == DEFAULT_ENGINE else "loso_predicted"
    if name == DEFAULT_ENGINE:
        mine = frame
    elif name in FAMILY_PROFILES:  # a family's profile stands for any of its engines
        mine = frame[frame["engine"].map(family) == name]
    else:
        mine = frame[frame["engine"] == name]
    basis = "engine"
    if len(mine) < MIN_BAND_ROWS:
        mine, basis = frame, "all"
    if mine.empty:
        return None
    ratio = mine[column] / mine["measured"]
    lo, hi = ratio.quantile(list(BAND_QUANTILES))
    return {"lo": float(lo), "hi": float(hi), "median": float(ratio.median()), "rows": len(mine), "basis": basis}

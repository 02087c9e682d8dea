"""Stack profiles (the UI's "engine profiles"): the fixed costs a serving stack adds to the roofline, and the share of the datasheet it reaches.

One forward of B sequences: roofline(B, L, n) + overhead_s + layer_overhead_s·n_layers + moe_layer_overhead_s·n_moe
+ seq_overhead_s·B; a round
adds round_overhead_s, and draft_overhead_s per draft forward (:func:`specviz.core.hardware.pair_costs`). Profiles
(``data/catalog/profiles.csv``) are fitted by ``benchmarks/validation_bench.py --write-profiles`` to
``data/validation/measurements.csv`` (each row names its sources); all-reduce latencies (cited) are not fitted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from specviz.base.i18n import N_, Message, Phrase
from specviz.base.paths import DATA

PROFILES_CSV = DATA / "catalog" / "profiles.csv"
DEFAULT_PROFILE = "roofline"  #: the profile of :data:`DEFAULT_EFFICIENCY`: the roofline with a CUDA-graph step cost
#: the profile Hardware & batch and Serving open on: fitted to measured rows, and its held-out band straddles
#: its predictions (the unfitted roofline's lies on one side: steps measured slower, speedups lower)
SERVER_PROFILE = "vllm"
DEFAULT_LABEL = N_("Roofline (CUDA graphs, defaults)")  #: its label (the catalogue's others are names)
#: Stack families: eager (every operator dispatched from Python) and compiled (CUDA graphs or a compiled
#: loop: every other stack). Each is also a catalogue profile, fitted on all of its stacks' rows: the
#: profile of a stack the catalogue does not list (LMDeploy, DeepSpeed-MII, …).
#: vLLM before CUDA graphs (vllm-project/vllm PR #1926, merged 2023-12-17) ran every step eagerly: its 2023 rows
#: are the stack ``vllm-2023``, priced with the eager family
EAGER = ("hf-transformers", "vllm-2023")
FAMILY_PROFILES = ("compiled", "eager")
#: the family profiles' labels (profiles.csv's ``label``; shown translated)
FAMILY_LABELS = {
    "compiled": N_("Any compiled serving stack (CUDA graphs or a compiled loop; fitted on all of them)"),
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
    "moe_layer_overhead_s",
)


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of the datasheet figures and the fixed costs of a step and a round; the defaults
    are a tuned stack with CUDA graphs on a data-centre GPU (:func:`profile` gives a named stack's)."""

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
    #: fixed cost per mixture-of-experts layer and forward beyond a dense layer's: the router, top-k, the tokens'
    #: permutation to their experts and back and the grouped expert GEMMs are several kernels where a dense MLP
    #: is two or three; fitted on MoE rows (0 for a dense model), seconds
    moe_layer_overhead_s: float = 0.0

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


def load_profiles(path: Path = PROFILES_CSV) -> pd.DataFrame:
    """The profile catalogue, one row per profile (name, label, :data:`TERMS`, source, …), default first."""
    return _catalogue(str(path)).copy()  # built once per path: pages read it for every choice's label


@cache
def _catalogue(path: str) -> pd.DataFrame:
    default = pd.DataFrame(
        [
            {
                "name": DEFAULT_PROFILE,
                "label": DEFAULT_LABEL,
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
    return pd.concat([default, _read(path)])


def profile_names(path: Path = PROFILES_CSV) -> tuple[str, ...]:
    """The profile names, :data:`DEFAULT_PROFILE` first."""
    return tuple(_catalogue(str(path)).index)


def family(stack: str) -> str:
    """``eager`` for an eager PyTorch stack (:data:`EAGER`), else ``compiled`` (:data:`FAMILY_PROFILES`)."""
    return "eager" if stack in EAGER else "compiled"


def profile_for(stack: str, path: Path = PROFILES_CSV) -> Efficiency:
    """The profile ``stack`` is priced with: its own, else its :func:`family`'s, else the default."""
    names = profile_names(path)
    for name in (stack, family(stack)):
        if name in names:
            return profile(name, path)
    return DEFAULT_EFFICIENCY


def profile(name: str, path: Path = PROFILES_CSV) -> Efficiency:
    """The :class:`Efficiency` of the profile ``name`` (see :func:`profile_names`)."""
    frame = _catalogue(str(path))
    if name not in frame.index:
        raise Message("engine must be one of {allowed}; got {value!r}", allowed=list(frame.index), value=name)
    row = frame.loc[name]
    return Efficiency(**{t: float(row[t]) for t in TERMS})


def as_efficiency(efficiency: Efficiency | str | dict | None) -> Efficiency | None:
    """An :class:`Efficiency` from itself, a profile name or a dict of terms; None stays None."""
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
#: the longest terms text accepted: every term at full precision, the longest float repr (24 characters) each, is
#: at most 480 characters
MAX_TERMS_CHARS = 480


def encode_terms(eff: Efficiency, digits: int | None = None) -> str:
    """A custom profile as URL-safe text, ``"overhead_s=0.0003,layer_overhead_s=0.00016"``: the :data:`TERMS` that
    differ from :data:`DEFAULT_EFFICIENCY`, each its shortest round-trip repr (or to ``digits`` digits); default ""."""
    parts = []
    for name in TERMS:
        value = float(getattr(eff, name))
        if digits is not None:
            value = float(f"{value:.{digits}g}")
        if value != getattr(DEFAULT_EFFICIENCY, name):
            parts.append(f"{name}={value!r}")
    return ",".join(parts)


def decode_terms(text: str) -> Efficiency:
    """The :class:`Efficiency` of an :func:`encode_terms` text (missing terms at their defaults); a Message
    names a text too long, a part not ``name=value``, an unknown or repeated term, or a value out of range."""
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

"""Distributions over V tokens for the lab: Zipf, Dirichlet, uniform, tempered, typed or uploaded."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import torch

from specviz.base.i18n import Message, Phrase


def normalised(weights: torch.Tensor) -> torch.Tensor:
    r"""``weights`` (finite, ≥ 0, not all 0) scaled to sum to 1 in float64, as (w / max w) / Σ (w / max w).

    Dividing by the maximum first keeps Σ in [1, V]: no overflow near 1e308, no underflow at 5e-324.
    """
    w = weights.to(torch.float64)
    w = w / w.max()
    return w / w.sum()


def as_distribution(x: torch.Tensor, name: str) -> torch.Tensor:
    if x.ndim != 1 or x.numel() == 0:
        raise Message(
            "{name} must be a 1-D tensor of probabilities; got shape {shape}", name=name, shape=tuple(x.shape)
        )
    if not torch.isfinite(x).all() or (x < 0).any():
        raise Message("{name} must hold finite, non-negative probabilities", name=name)
    if not x.max() > 0:
        raise Message("{name} must not be all zero", name=name)
    return normalised(x)


def _check_size(v: int) -> int:
    if int(v) != v or v < 1:
        raise Message("V (vocabulary size) must be an integer >= 1; got {v!r}", v=v)
    return int(v)


def zipf(v: int, s: float) -> torch.Tensor:
    r"""Zipf(s) over V tokens: p(i) ∝ 1 / i^s, i = 1..V (s ≥ 0; s = 0 is uniform)."""
    v = _check_size(v)
    if not (math.isfinite(s) and s >= 0):
        raise Message("s (Zipf exponent) must be a finite number >= 0; got {s!r}", s=s)
    w = torch.arange(1, v + 1, dtype=torch.float64) ** -float(s)
    return w / w.sum()


def dirichlet(v: int, beta: float, seed: int) -> torch.Tensor:
    r"""A draw from Dirichlet(β, ..., β) over V tokens with its own seeded generator (β > 0)."""
    v = _check_size(v)
    if not (math.isfinite(beta) and beta > 0):
        raise Message("beta (Dirichlet concentration) must be a finite number > 0; got {beta!r}", beta=beta)
    # Normalised Gamma(β) draws; torch's gamma sampler takes no generator, numpy's does.
    x = np.random.default_rng(int(seed)).gamma(float(beta), size=v)
    if x.sum() <= 0:  # all underflowed (tiny β): put the mass on the largest draw
        x = np.eye(v)[int(np.argmax(x))]
    return torch.as_tensor(x / x.sum(), dtype=torch.float64)


def uniform(v: int) -> torch.Tensor:
    """Uniform distribution over V tokens."""
    v = _check_size(v)
    return torch.full((v,), 1.0 / v, dtype=torch.float64)


def tempered_probs(p: torch.Tensor, temperature: float) -> torch.Tensor:
    r"""p at temperature τ: softmax(log p / τ) ∝ p^{1/τ} (τ > 0; zero entries stay zero)."""
    return tempered(torch.log(p.to(torch.float64)), temperature)


def tempered(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    r"""softmax(logits / τ): "draft = target at temperature τ" from one set of logits."""
    if not (math.isfinite(temperature) and temperature > 0):
        raise Message("temperature must be a finite number > 0; got {temperature!r}", temperature=temperature)
    return torch.softmax(logits.to(torch.float64) / float(temperature), -1)


_BYTES_PER_WEIGHT = 64  #: most characters one weight of a typed or uploaded vector may take, separator included


def parse_distribution(data: str | bytes, v: int, name: str = "distribution") -> torch.Tensor:
    """A typed or uploaded distribution (numbers split by commas, spaces, newlines, or a one-column CSV), normalised.

    Raises ValueError naming ``name`` for more than 64 · V + 1024 characters (before parsing), an
    entry that is no number, negative or non-finite, all zeros, or a length other than V.
    """
    v = _check_size(v)
    most = _BYTES_PER_WEIGHT * v + 1024  # room for a header and generous spacing, never megabytes
    if len(data) > most:
        raise Message(
            "{name}: {size} characters is more than a vector of V = {v} weights needs (at most {most})",
            name=name,
            size=f"{len(data):,}",
            most=f"{most:,}",
            v=v,
        )
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise Message("{name}: the file is not UTF-8 text", name=name) from None
    rows = [
        [c.strip() for cell in row for c in cell.split()] for row in csv.reader(io.StringIO(data.replace(";", ",")))
    ]
    rows = [[c for c in row if c] for row in rows]
    rows = [row for row in rows if row]
    if len(rows) > 1 and len(rows[0]) == 1 and not _is_number(rows[0][0]):  # a one-column CSV's header, e.g. "p"
        rows = rows[1:]
    cells = [c for row in rows for c in row]
    if not cells:
        raise Message("{name}: no numbers found; enter V = {v} comma-separated non-negative numbers", name=name, v=v)
    values = []
    for i, cell in enumerate(cells, 1):
        if not _is_number(cell):
            raise Message("{name}: entry {i} is {cell!r}, not a number", name=name, i=i, cell=cell)
        values.append(float(cell))
    x = np.asarray(values)
    if np.isnan(x).any() or np.isinf(x).any():
        i = int(np.flatnonzero(~np.isfinite(x))[0]) + 1
        raise Message(
            "{name}: entry {i} is {value!r}; every entry must be a finite number >= 0",
            name=name,
            i=i,
            value=values[i - 1],
        )
    if (x < 0).any():
        i = int(np.flatnonzero(x < 0)[0]) + 1
        raise Message("{name}: entry {i} is {value!r}; every entry must be >= 0", name=name, i=i, value=values[i - 1])
    if x.size != v:
        raise Message("{name}: has {n} entries but V = {v}; enter exactly {v} numbers", name=name, n=x.size, v=v)
    if not x.max() > 0:
        raise Message("{name}: all entries are zero; at least one must be > 0", name=name)
    return normalised(torch.as_tensor(x, dtype=torch.float64))


BUILDERS = {  # name -> what it builds (an i18n.Phrase)
    "zipf": Phrase("Zipf(s)"),
    "dirichlet": Phrase("Dirichlet(β), seeded"),
    "uniform": Phrase("uniform"),
    "tempered": Phrase("target at temperature τ (same logits)"),
    "custom": Phrase("my own vector"),
}


def build(
    kind: str,
    v: int,
    *,
    s: float = 1.0,
    beta: float = 1.0,
    seed: int = 0,
    tau: float = 1.0,
    text: str | bytes = "",
    base: torch.Tensor | None = None,
    name: str = "p",
) -> torch.Tensor:
    """A distribution over V tokens by one of :data:`BUILDERS`; ``"tempered"`` is softmax(log ``base`` / τ)."""
    if kind == "zipf":
        return zipf(v, s)
    if kind == "dirichlet":
        return dirichlet(v, beta, seed)
    if kind == "uniform":
        return uniform(v)
    if kind == "tempered":
        if base is None:
            raise Message("{name}: 'target at temperature τ' needs a target distribution", name=name)
        return tempered_probs(base, tau)
    if kind == "custom":
        return parse_distribution(text, v, name)
    raise Message("{name} builder must be one of {allowed}; got {kind!r}", name=name, allowed=list(BUILDERS), kind=kind)


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True

"""What a token costs: a GPU's rental price (a dated default from the catalogue, or the user's) over the tokens
per second it serves."""

from __future__ import annotations

import numpy as np

from specviz.base.i18n import Message
from specviz.core.hardware.catalog import gpu_spec

SECONDS_PER_HOUR = 3600.0


def gpu_price(gpu) -> tuple[float, str, str] | None:
    """(USD per GPU-hour, the date it was listed, provider and URL) of a catalogue GPU, or None where the catalogue
    has no published price (data/catalog/gpus.csv: usd_per_hour, price_date, price_source)."""
    g = gpu_spec(gpu)
    price = g.get("usd_per_hour")
    try:
        value = float(price)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(value) or value <= 0:
        return None
    return value, str(g.get("price_date") or ""), str(g.get("price_source") or "")


def usd_per_million_tokens(usd_per_gpu_hour, gpus, tokens_per_s) -> np.ndarray:
    """Cost of a million output tokens: price × GPUs / (tokens/s × 3600) × 10⁶ (USD). Broadcasts; infinite where
    nothing is served."""
    price = np.asarray(usd_per_gpu_hour, dtype=float)
    n = np.asarray(gpus, dtype=float)
    rate = np.asarray(tokens_per_s, dtype=float)
    for value, name in ((price, "price per GPU-hour"), (n, "GPUs")):
        if not np.all(np.isfinite(value) & (value > 0)):
            raise Message("{name} must be a finite number > 0; got {value}", name=name, value=f"{np.min(value):g}")
    with np.errstate(divide="ignore"):
        cost = np.where(rate > 0, price * n / (rate * SECONDS_PER_HOUR) * 1e6, np.inf)
    return np.asarray(cost)[()]

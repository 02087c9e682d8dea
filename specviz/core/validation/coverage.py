"""What the published table covers, against the regimes teams deploy (rows, sources, engines, MoE, load, losses)."""

from __future__ import annotations

import pandas as pd

from specviz.core import hardware, regimes

SERVING_ENGINES = ("vllm", "sglang", "tensorrt-llm")  #: the engine families the table must mostly come from
#: measure → (the least, "share" or "count"): at least 250 rows from 25 sources, 60 % from a serving engine,
#: 60 with an MoE target, 80 under load, 30 where speculation loses
TARGETS = {
    "rows": (250, "count"),
    "sources": (25, "count"),
    "serving engine": (0.60, "share"),
    "MoE target": (60, "count"),
    "under load": (80, "count"),
    "speculation loses": (30, "count"),
}


def under_load(frame: pd.DataFrame) -> pd.Series:
    """More than one sequence in flight, or an open-loop request rate: a load bin other than B = 1
    (:func:`specviz.core.regimes.load_of`, the one rule)."""
    rate = frame["request_rate"] if "request_rate" in frame else pd.Series(float("nan"), index=frame.index)
    bins = [regimes.load_of(b, r) for b, r in zip(frame["batch"], rate, strict=True)]
    return pd.Series([b != "b1" for b in bins], index=frame.index, dtype=bool)


def _values(frame: pd.DataFrame) -> dict[str, float]:
    engine = frame["stack"].map(regimes.engine_of)
    loses = (frame["kind"] == "speedup") & (frame["speedup"].astype(float) < 1)
    return {
        "rows": len(frame),
        "sources": frame["source_id"].nunique(),
        "serving engine": float(engine.isin(SERVING_ENGINES).mean()) if len(frame) else 0.0,
        "MoE target": int(frame["target"].map(hardware.is_moe).astype(bool).sum()),
        "under load": int(under_load(frame).sum()),
        "speculation loses": int(loses.sum()),
    }


def coverage(frame: pd.DataFrame, priced: pd.Series | None = None) -> pd.DataFrame:
    """Per :data:`TARGETS` measure: value over every row, target, met; priced: over the ``priced`` mask's rows."""
    values = _values(frame)
    priced_values = _values(frame[priced] if priced is not None else frame)
    return pd.DataFrame(
        [
            {
                "measure": name,
                "value": values[name],
                "priced": priced_values[name],
                "target": least,
                "unit": unit,
                "met": values[name] >= least,
            }
            for name, (least, unit) in TARGETS.items()
        ]
    )

"""The Server monitor's scenario (endpoints, polling, K, where c comes from) and the design map it draws."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from specviz.app import overlays, ui
from specviz.app.share import Param
from specviz.base.i18n import N_
from specviz.core import hardware
from specviz.servers import monitor

PAGE = "server-monitor"  #: the page's widget keys start with it
C_SOURCES = ("typed", "hardware", "loadgen")  #: where c comes from (slugs: a link names them)
PAIRS = hardware.preset_pairs().set_index("name")
GPUS = tuple(hardware.load_catalog()[1].index)
SPEC = (
    Param("endpoints", "", "text", hi=4000, label=N_("Endpoints, one per line")),
    Param("poll", True, "bool", label=N_("Poll")),
    Param("every", 2.0, "float", 1.0, 60.0, label=N_("Every (s)")),
    Param("k", 4, "int", 1, 64, label=N_("K to assume")),
    Param(
        "c_src",
        "typed",
        "choice",
        choices=C_SOURCES,
        label=N_("c (T_target / T_draft) from"),
        labels=(N_("typed"), N_("the Hardware page's model"), N_("measured by the load generator")),
    ),
    Param("c", 8.0, "float", 1.0, 1000.0),
    Param("pair", PAIRS.index[0], "choice", choices=tuple(PAIRS.index), label=N_("Pair")),
    Param("gpu", "H100-SXM5-80GB", "choice", choices=GPUS),
    Param("batch", 1, "int", 1, 512, label=N_("Batch")),
    Param("ctx", 2048, "int", 1, 131072, label=N_("Context")),
    Param("detail", 1, "int", 1, monitor.MAX_ENDPOINTS),
    Param("lg_spec", "", "text", hi=500, label=N_("With speculation")),
    Param("lg_base", "", "text", hi=500, label=N_("Target only (optional)")),
    Param("lg_draft", "", "text", hi=500, label=N_("Draft only (optional)")),
    Param("lg_model", "", "text", hi=200, label=N_("Model name (vLLM, SGLang, TensorRT-LLM)")),
    Param("lg_conc", 1, "int", 1, 64, label=N_("Concurrency")),
    Param("lg_req", 16, "int", 1, 10000, label=N_("Requests (max)")),
    Param("lg_sec", 60, "int", 1, 3600, label=N_("Seconds (max)")),
    Param("lg_tokens", 64, "int", 1, 4096, label=N_("Tokens per request")),
    Param("lg_rate", "", "text", hi=20, label=N_("Rate (requests/s; empty = closed loop)")),
    Param("lg_seed", 0, "int", 0, 2**32 - 1, label=N_("Seed")),
)


@dataclass(frozen=True)
class CSource:
    """Where c = T_target / T_draft comes from (``src``, one of C_SOURCES) and the inputs of each source."""

    src: str
    typed: float  #: the typed c, also used while the load generator has measured none
    pair: str  #: a preset pair's name (PAIRS), for the roofline model
    gpu: str  #: a catalogue GPU's name
    batch: int
    ctx: int  #: context length, tokens


@dataclass(frozen=True)
class Scenario:
    """The page's inputs: the endpoints' text, polling, the K assumed, the c source and the endpoint detailed."""

    endpoints: str  #: one endpoint per line, each a URL optionally followed by its serving stack
    poll: bool
    every: float  #: seconds between polls
    k: int  #: K where the serving stack does not state its own
    source: CSource
    detail: int  #: which endpoint's details are shown, counted from 1


def scenario(view: dict) -> Scenario:
    """The page's scenario from its controls' ``view``."""
    source = CSource(view["c_src"], view["c"], view["pair"], view["gpu"], view["batch"], view["ctx"])
    return Scenario(view["endpoints"], view["poll"], view["every"], view["k"], source, view["detail"])


def assumed_c(s: Scenario, measured: float | None) -> tuple[float, str, bool]:
    """(the c to place servers with, where it came from, whether the load generator's c was asked for but
    ``measured`` is none, so the typed c stands in). The roofline c is hardware.pair_costs' at the scenario's K."""
    src = s.source
    if src.src == "hardware":
        pair = PAIRS.loc[src.pair]
        c = float(hardware.pair_costs(pair["target"], pair["draft"], src.gpu, src.batch, src.ctx, s.k)["c"])
        note = ui.t(
            "c = {c} from the roofline model of {pair} on one {gpu} (batch {batch})",
            c=f"{c:.3g}",
            pair=src.pair,
            gpu=src.gpu,
            batch=src.batch,
        )
        return c, note, False
    if src.src == "loadgen" and measured:
        note = ui.t("c = {c} measured by the load generator (draft-only ÷ target-only tokens/s)", c=f"{measured:.3g}")
        return measured, note, False
    return float(src.typed), ui.t("c = {c} (typed)", c=f"{src.typed:g}"), src.src == "loadgen"


@ui.cached
def design_grid(k: int, c: float):
    """S(α, c) at the server's K = ``k`` around this c (the map behind the server's point)."""
    return overlays.heatmap_grid(k, pd.Series([c]))

"""SGLang ``/metrics`` gauges and ``/server_info`` → a reading over the last logging interval.

Gauges (SGLang metrics_collector.py): ``sglang:spec_accept_length`` (E[N], bonus counted),
``sglang:spec_accept_rate`` (r only in SGLang ≥ 0.5.11, :func:`sglang_rate_meaning`),
``sglang:spec_num_draft_tokens`` (K + 1, SGLang ≥ 0.5.13), ``sglang:gen_throughput`` (tokens/s).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from specviz.base.i18n import N_
from specviz.servers.readers.checks import TelemetryError, _json, _model, _now, _number
from specviz.servers.readers.prometheus import _no_spec, prometheus_samples
from specviz.servers.telemetry import Telemetry

#: ``sglang:spec_accept_rate``'s HELP text in each meaning (SGLang metrics_collector.py, 0.5.10 and 0.5.23)
_SGLANG_RATE_HELP = {
    "accepted / proposed": re.compile(r"^# HELP sglang:spec_accept_rate .*accepted drafts / proposed drafts", re.M),
    "accept length / draft tokens": re.compile(
        r"^# HELP sglang:spec_accept_rate .*accepted tokens / total draft tokens", re.M
    ),
}
#: what the reading says about ``sglang:spec_accept_rate``, by the meaning found (None: not found)
_SGLANG_RATE_NOTE = {
    "accepted / proposed": N_(
        "sglang:spec_accept_rate read as accepted / proposed drafts (its meaning since SGLang 0.5.11, PR #23530)"
    ),
    "accept length / draft tokens": N_(
        "sglang:spec_accept_rate not used as r: here it is accept length / draft tokens (SGLang 0.5.10 and before)"
    ),
    None: N_(
        "sglang:spec_accept_rate not used as r: the body does not say which meaning it has (it changed in SGLang 0.5.11)"
    ),
}
_SGLANG_GAUGES = (
    "sglang:spec_accept_length",
    "sglang:spec_accept_rate",
    "sglang:gen_throughput",
    "sglang:spec_num_steps",
    "sglang:spec_num_draft_tokens",
)


def sglang_rate_meaning(text: str, has_k_gauges: bool) -> str | None:
    """Which meaning ``sglang:spec_accept_rate`` has in this body, or None where it does not say.

    SGLang PR #23530 (0.5.11) changed it from accept length / draft tokens (E[N] / (K + 1) for a chain)
    to accepted / proposed drafts (r); the HELP line names the formula, and the K gauges
    (``sglang:spec_num_steps``, ``sglang:spec_num_draft_tokens``, 0.5.13) imply the new one.
    """
    for meaning, help_line in _SGLANG_RATE_HELP.items():
        if help_line.search(text):
            return meaning
    return "accepted / proposed" if has_k_gauges else None


def read_sglang(text: str, *, now: float | None = None) -> Telemetry:
    """The speculative gauges averaged over label sets; K = ``spec_num_draft_tokens`` − 1; no counts.

    The label ``spec_accept_rate_meaning`` says which meaning of ``spec_accept_rate`` applied, or none.
    """
    samples = prometheus_samples(text)
    gauges: dict[str, list[float]] = defaultdict(list)
    model = ""
    for name, labels, value in samples:
        if name in _SGLANG_GAUGES:
            if math.isfinite(value):
                gauges[name].append(value)
            model = model or _model(labels.get("model_name", ""))
    if not gauges.get("sglang:spec_accept_length") and not gauges.get("sglang:spec_accept_rate"):
        raise _no_spec("sglang", samples)

    def avg(name):
        vals = gauges.get(name)
        return sum(vals) / len(vals) if vals else None

    length, rate, tokens = (
        avg("sglang:spec_accept_length"),
        avg("sglang:spec_accept_rate"),
        avg("sglang:spec_num_draft_tokens"),
    )
    k = round(tokens) - 1 if tokens is not None and round(tokens) >= 2 else None
    meaning = sglang_rate_meaning(text, "sglang:spec_num_steps" in gauges or tokens is not None)
    labels = (
        {}
        if rate is None
        else {"spec_accept_rate": f"{rate:g}", "spec_accept_rate_meaning": _SGLANG_RATE_NOTE[meaning]}
    )
    return Telemetry(
        stack="sglang",
        model=model,
        k=k,
        end=_now(now),
        mean_acceptance_length=length if length and length >= 1.0 else None,
        acceptance_rate=rate if meaning == "accepted / proposed" and rate is not None and 0 <= rate <= 1 else None,
        tokens_per_s=avg("sglang:gen_throughput"),
        cumulative=False,
        labels=labels,
    )


def read_sglang_server_info(body: dict | str, *, now: float | None = None) -> Telemetry:
    """``/server_info``'s ``internal_states[0].avg_spec_accept_length`` (E[N], bonus counted)."""
    data = _json(body, "SGLang /server_info")
    states = data.get("internal_states") if isinstance(data, dict) else None
    state = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    length = state.get("avg_spec_accept_length")
    if length is None:
        raise TelemetryError("SGLang /server_info: no internal_states[0].avg_spec_accept_length (speculation off?)")
    return Telemetry(
        stack="sglang",
        model=_model(data.get("served_model_name", data.get("model_path", ""))),
        end=_now(now),
        mean_acceptance_length=_number(length, "SGLang /server_info", "internal_states[0].avg_spec_accept_length"),
        cumulative=False,
    )

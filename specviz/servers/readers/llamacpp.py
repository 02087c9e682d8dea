"""llama.cpp's server: ``/metrics`` (run with ``--metrics``) and one completion's ``timings`` → a reading.

``/metrics`` has vLLM's spec-decode counters under ``llamacpp:`` (no labels) plus
``llamacpp:tokens_predicted_total``; a completion's ``timings`` has ``draft_n`` and ``draft_n_accepted``
(tools/server/server-common.cpp, llama.cpp b11434).
"""

from __future__ import annotations

from specviz.base.i18n import Phrase
from specviz.servers.readers.checks import TelemetryError, _json, _model, _now, _number
from specviz.servers.readers.prometheus import _no_spec, _prometheus_counters, prometheus_samples
from specviz.servers.telemetry import Telemetry


def read_llamacpp(text: str, *, now: float | None = None) -> Telemetry:
    """Counters since the server started; K is the per-position series' length (``--spec-draft-n-max``)."""
    samples = prometheus_samples(text)
    groups = _prometheus_counters(samples, "llamacpp:", "llamacpp", _now(now), lambda lb: "")
    if not groups:
        raise _no_spec("llamacpp", samples)
    return groups[""]


def read_llamacpp_timings(body: dict | str, *, k: int | None = None, now: float | None = None) -> Telemetry:
    """One completion's drafts: proposed ``draft_n``, accepted ``draft_n_accepted``; tokens/s from ``predicted_*``.

    Rounds are not given, so E[N] needs K (rounds = draft_n / K).
    """
    data = _json(body, Phrase("llama.cpp completion"))
    timings = data.get("timings") if isinstance(data, dict) else None
    if not isinstance(timings, dict):
        raise TelemetryError("llama.cpp completion: no 'timings' object in the response")
    if "draft_n" not in timings:
        raise TelemetryError("llama.cpp completion: 'timings' has no draft_n (the server runs without a draft)")
    what = Phrase("llama.cpp completion")

    def count(name: str, default=None) -> float | None:
        value = timings.get(name, default)
        return None if value is None else _number(value, what, f"timings.{name}")

    n, ms, tps = count("predicted_n"), count("predicted_ms"), count("predicted_per_second")
    end = _now(now)
    return Telemetry(
        stack="llamacpp",
        model=_model(data.get("model", "")),
        k=k,
        start=end - ms / 1000.0 if ms else None,
        end=end,
        draft_tokens=count("draft_n"),
        accepted_tokens=count("draft_n_accepted", 0),
        generated_tokens=n,
        tokens_per_s=tps or None,
        cumulative=False,
    )

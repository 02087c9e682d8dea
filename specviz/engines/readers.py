"""One reader per engine endpoint: the body it serves → one :class:`Telemetry`.

- vLLM V1 ``/metrics`` (Prometheus text): counters ``vllm:spec_decode_num_drafts_total``,
  ``…_num_draft_tokens_total``, ``…_num_accepted_tokens_total``,
  ``…_num_accepted_tokens_per_pos_total{position="i"}`` (i from 0: drafts that accepted at least
  i + 1 tokens) and ``vllm:generation_tokens_total``; labels ``model_name`` and ``engine`` (one
  per data-parallel engine), in any order. Engines are summed, or one is picked.
- llama.cpp ``/metrics`` (``--metrics``): the same counters under ``llamacpp:`` (no labels), plus
  ``llamacpp:tokens_predicted_total``; and each completion's ``timings.draft_n`` /
  ``draft_n_accepted`` (tools/server/server-common.cpp of llama.cpp b11434).
- SGLang ``/metrics``: gauges ``sglang:spec_accept_length`` (accepted drafts + bonus per forward,
  over the last logging interval), ``sglang:spec_accept_rate``, ``sglang:gen_throughput``; and
  ``/server_info``'s ``internal_states[0].avg_spec_accept_length``.
- TensorRT-LLM ``trtllm-serve`` ``/metrics``: a JSON list of iteration stats, each with
  ``specDecodingStats {numDraftTokens, numAcceptedTokens, numRequestsWithDraftTokens,
  acceptanceLength, draftOverhead}`` (the stats since the last call); newer builds also serve
  Prometheus counters ``trtllm_spec_decode_num_draft_tokens_total``,
  ``…_num_accepted_tokens_total`` and the gauge ``trtllm_spec_decode_acceptance_length``.

Prometheus text is parsed by ``prometheus_client``'s parser. Every failure is a
:class:`TelemetryError` whose message says what the body is and what was expected.
"""

from __future__ import annotations

import json
import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from specviz.engines.telemetry import ENGINES, Telemetry, combine
from specviz.i18n import Message, Phrase


class TelemetryError(Message):
    """A body that is not the telemetry expected (wrong format, engine, or speculation off).

    A :class:`~specviz.i18n.Message` (so a ValueError): ``TelemetryError(key, **fields)``; ``str()`` is English.
    """

    def __reduce__(self):  # pickling keeps the class
        return _telemetry_error, (self.key, self.fields)


def _telemetry_error(key: str, fields: dict) -> TelemetryError:
    return TelemetryError(key, **fields)


SPEC_COUNTERS = {  # our field -> the counter's name after the engine's prefix
    "drafts": "spec_decode_num_drafts_total",
    "draft_tokens": "spec_decode_num_draft_tokens_total",
    "accepted_tokens": "spec_decode_num_accepted_tokens_total",
}
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
GENERATED = {"vllm:": "generation_tokens_total", "llamacpp:": "tokens_predicted_total"}


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


def prometheus_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(sample name, labels, value) for every sample of a Prometheus text exposition.

    Raises TelemetryError when the body is not Prometheus text.
    """
    head = text.lstrip()[:1]
    if head in ("{", "[", "<"):
        kind = {"{": "JSON", "[": "JSON", "<": "HTML"}[head]
        raise TelemetryError("err.engines.readers.body_kind", kind=kind)
    try:
        return [
            (s.name, dict(s.labels), float(s.value))
            for fam in text_string_to_metric_families(text)
            for s in fam.samples
        ]
    except (ValueError, TypeError, IndexError) as exc:
        first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
        raise TelemetryError("err.engines.readers.not_prometheus", error=str(exc), line=first[:80]) from None


def _prometheus_counters(
    samples, prefix: str, engine: str, now: float, group: Callable[[dict[str, str]], str]
) -> dict[str, Telemetry]:
    """The spec-decode counters of ``prefix`` grouped by ``group(labels)``, one cumulative Telemetry per group."""
    fields: dict[str, dict[str, float]] = defaultdict(dict)
    per_pos: dict[str, dict[int, float]] = defaultdict(dict)
    models: dict[str, str] = {}
    wanted = {prefix + name: key for key, name in SPEC_COUNTERS.items()}
    if prefix in GENERATED:
        wanted[prefix + GENERATED[prefix]] = "generated_tokens"
    for name, labels, value in samples:
        key = group(labels)
        if name in wanted:
            fields[key][wanted[name]] = fields[key].get(wanted[name], 0.0) + value
            models.setdefault(key, labels.get("model_name", ""))
        elif name == prefix + PER_POSITION:
            pos = labels.get("position", labels.get("pos"))
            if pos is None or not pos.isdigit():
                raise TelemetryError("err.engines.readers.no_position", name=name, labels=labels)
            per_pos[key][int(pos)] = per_pos[key].get(int(pos), 0.0) + value
    out = {}
    for key, f in fields.items():
        if not any(k in f for k in SPEC_COUNTERS):
            continue
        positions = per_pos.get(key, {})
        series = tuple(positions.get(i, 0.0) for i in range(max(positions) + 1)) if positions else ()
        out[key] = Telemetry(
            engine=engine,
            model=models.get(key, ""),
            k=len(series) or None,
            end=now,
            accepted_per_position=series,
            cumulative=True,
            labels={"group": key} if key else {},
            **f,
        )
    return out


def _no_spec(engine: str, samples) -> TelemetryError:
    names = {n for n, _, _ in samples}
    if not names:
        return TelemetryError("err.engines.readers.no_samples", engine=ENGINES[engine])
    prefix = {"vllm": "vllm:", "llamacpp": "llamacpp:", "sglang": "sglang:", "trtllm": "trtllm_"}[engine]
    own = sum(n.startswith(prefix) for n in names)
    if own:
        return TelemetryError("err.engines.readers.spec_off", engine=ENGINES[engine], own=own, prefix=prefix)
    try:
        other = ENGINES[detect_engine_from_names(names)]
    except TelemetryError:
        return TelemetryError("err.engines.readers.unknown_engine", engine=ENGINES[engine])
    return TelemetryError("err.engines.readers.other_engine", engine=ENGINES[engine], other=other)


def vllm_engines(text: str) -> list[str]:
    """The ``engine`` label values of a vLLM /metrics body that carry spec-decode counters."""
    groups = _prometheus_counters(prometheus_samples(text), "vllm:", "vllm", 0.0, lambda lb: lb.get("engine", ""))
    return sorted(groups)


def read_vllm(text: str, *, engine_index: str | None = None, now: float | None = None) -> Telemetry:
    """vLLM V1 /metrics → counters since the server started, summed over its engines (or one).

    Parameters
    ----------
    engine_index : str, optional
        Keep only the engine with this ``engine`` label (data-parallel rank); None sums them.
    """
    samples = prometheus_samples(text)
    groups = _prometheus_counters(samples, "vllm:", "vllm", _now(now), lambda lb: lb.get("engine", ""))
    if not groups:
        raise _no_spec("vllm", samples)
    if engine_index is not None:
        if engine_index not in groups:
            raise TelemetryError("err.engines.readers.engine_index", index=engine_index, engines=sorted(groups))
        return groups[engine_index]
    return combine(list(groups.values())) if len(groups) > 1 else next(iter(groups.values()))


def read_llamacpp(text: str, *, now: float | None = None) -> Telemetry:
    """llama.cpp /metrics (server run with ``--metrics``) → counters since the server started.

    Its per-position series has one entry per draft position up to ``--spec-draft-n-max``,
    so K is its length (only when the draft length is fixed is that the K of every round).
    """
    samples = prometheus_samples(text)
    groups = _prometheus_counters(samples, "llamacpp:", "llamacpp", _now(now), lambda lb: "")
    if not groups:
        raise _no_spec("llamacpp", samples)
    return groups[""]


def read_llamacpp_timings(body: dict | str, *, k: int | None = None, now: float | None = None) -> Telemetry:
    """One llama.cpp completion response → the drafts of that request (``timings``).

    ``draft_n`` is the draft tokens proposed and ``draft_n_accepted`` those accepted; the
    number of rounds is not given, so E[N] needs K (rounds = draft_n / K with a fixed K).
    ``predicted_n`` / ``predicted_ms`` give the request's generation throughput.
    """
    data = _json(body, Phrase("note.engines.readers.llamacpp_completion"))
    timings = data.get("timings") if isinstance(data, dict) else None
    if not isinstance(timings, dict):
        raise TelemetryError("err.engines.readers.no_timings")
    if "draft_n" not in timings:
        raise TelemetryError("err.engines.readers.no_draft_n")
    n, ms = timings.get("predicted_n"), timings.get("predicted_ms")
    end = _now(now)
    return Telemetry(
        engine="llamacpp",
        model=str(data.get("model", "")),
        k=k,
        start=end - ms / 1000.0 if ms else None,
        end=end,
        draft_tokens=float(timings["draft_n"]),
        accepted_tokens=float(timings.get("draft_n_accepted", 0)),
        generated_tokens=float(n) if n is not None else None,
        tokens_per_s=float(timings["predicted_per_second"]) if timings.get("predicted_per_second") else None,
        cumulative=False,
    )


def read_sglang(text: str, *, now: float | None = None) -> Telemetry:
    """SGLang /metrics → its speculative gauges (the last logging interval), averaged over label sets.

    ``sglang:spec_accept_length`` is E[N] (bonus counted); ``sglang:gen_throughput`` tokens/s.
    ``sglang:spec_accept_rate`` changed meaning in April 2026 (SGLang PR #23530): before, accept
    length / draft tokens per forward (E[N] / (K + 1) for a chain); since, accepted / proposed. A
    body does not say which, so it is kept as the label ``spec_accept_rate`` and not used as r.
    Counts are not exposed.
    """
    samples = prometheus_samples(text)
    gauges: dict[str, list[float]] = defaultdict(list)
    model = ""
    for name, labels, value in samples:
        if name in ("sglang:spec_accept_length", "sglang:spec_accept_rate", "sglang:gen_throughput"):
            if math.isfinite(value):
                gauges[name].append(value)
            model = model or labels.get("model_name", "")
    if not gauges.get("sglang:spec_accept_length") and not gauges.get("sglang:spec_accept_rate"):
        raise _no_spec("sglang", samples)

    def avg(name):
        vals = gauges.get(name)
        return sum(vals) / len(vals) if vals else None

    length, rate = avg("sglang:spec_accept_length"), avg("sglang:spec_accept_rate")
    return Telemetry(
        engine="sglang",
        model=model,
        end=_now(now),
        mean_acceptance_length=length if length and length >= 1.0 else None,
        tokens_per_s=avg("sglang:gen_throughput"),
        cumulative=False,
        labels={"spec_accept_rate": f"{rate:g}"} if rate is not None else {},
    )


def read_sglang_server_info(body: dict | str, *, now: float | None = None) -> Telemetry:
    """SGLang /server_info → ``internal_states[0].avg_spec_accept_length`` (E[N], bonus counted)."""
    data = _json(body, "SGLang /server_info")
    states = data.get("internal_states") if isinstance(data, dict) else None
    state = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    length = state.get("avg_spec_accept_length")
    if length is None:
        raise TelemetryError("err.engines.readers.sglang_no_length")
    return Telemetry(
        engine="sglang",
        model=str(data.get("served_model_name", data.get("model_path", ""))),
        end=_now(now),
        mean_acceptance_length=float(length),
        cumulative=False,
    )


def read_trtllm(text: str, *, k: int | None = None, now: float | None = None) -> Telemetry:
    """TensorRT-LLM /metrics → the drafts of the iterations in the body (JSON), or its counters (Prometheus).

    JSON: every iteration's ``specDecodingStats`` is summed (drafts = numRequestsWithDraftTokens),
    a window since the previous call. Prometheus: cumulative draft/accepted counters; rounds
    are then proposed / K.
    """
    if text.lstrip()[:1] not in ("[", "{"):
        samples = prometheus_samples(text)
        groups = _prometheus_counters(
            [(n.replace("trtllm_spec_decode_", "trtllm:spec_decode_"), lb, v) for n, lb, v in samples],
            "trtllm:",
            "trtllm",
            _now(now),
            lambda lb: "",
        )
        if not groups:
            raise _no_spec("trtllm", samples)
        lengths = [v for n, _, v in samples if n == "trtllm_spec_decode_acceptance_length"]
        return _with(groups[""], k=k, mean_acceptance_length=lengths[0] if lengths else None)
    data = _json(text, "TensorRT-LLM /metrics")
    stats = data if isinstance(data, list) else [data]
    readings = []
    for it in stats:
        spec = it.get("specDecodingStats") if isinstance(it, dict) else None
        if not isinstance(spec, dict) or not spec.get("numDraftTokens"):
            continue
        readings.append(
            Telemetry(
                engine="trtllm",
                k=k,
                end=_now(now),
                drafts=float(spec.get("numRequestsWithDraftTokens", 0)) or None,
                draft_tokens=float(spec["numDraftTokens"]),
                accepted_tokens=float(spec.get("numAcceptedTokens", 0)),
                cumulative=False,
            )
        )
    if not readings:
        if not any(isinstance(it, dict) and "iter" in it for it in stats):
            raise TelemetryError("err.engines.readers.trtllm_not_stats")
        raise TelemetryError("err.engines.readers.trtllm_no_spec")
    return combine(readings)


def _with(t: Telemetry, **changes) -> Telemetry:
    return replace(t, **{k: v for k, v in changes.items() if v is not None})


def _json(body: dict | list | str, what: str):
    """``body`` parsed as JSON; TelemetryError naming ``what`` (the endpoint, a str or Phrase) when it is not JSON."""
    if isinstance(body, (dict, list)):
        return body
    try:
        return json.loads(body)
    except (json.JSONDecodeError, TypeError) as exc:
        raise TelemetryError(
            "err.engines.readers.not_json", what=what, error_type=exc.__class__.__name__, error=str(exc)
        ) from None


READERS: dict[str, Callable[..., Telemetry]] = {
    "vllm": read_vllm,
    "llamacpp": read_llamacpp,
    "sglang": read_sglang,
    "trtllm": read_trtllm,
}


def detect_engine(text: str) -> str:
    """Which engine served this /metrics body: by its metric prefixes, or TensorRT-LLM's JSON.

    Raises TelemetryError naming what the body looks like when no engine matches.
    """
    head = text.lstrip()[:1]
    if head in ("[", "{"):
        data = _json(text, "/metrics")
        items = data if isinstance(data, list) else [data]
        if any(isinstance(it, dict) and ("specDecodingStats" in it or "iterLatencyMS" in it) for it in items):
            return "trtllm"
        raise TelemetryError("err.engines.readers.json_not_trtllm")
    return detect_engine_from_names({n for n, _, _ in prometheus_samples(text)})


def detect_engine_from_names(names: set[str]) -> str:
    """The engine whose metric prefix the sample names carry."""
    for engine, prefix in (("vllm", "vllm:"), ("llamacpp", "llamacpp:"), ("sglang", "sglang:"), ("trtllm", "trtllm_")):
        if any(n.startswith(prefix) for n in names):
            return engine
    sample = ", ".join(sorted(names)[:3])
    if not sample:
        raise TelemetryError("err.engines.readers.unknown_metrics_empty")
    raise TelemetryError("err.engines.readers.unknown_metrics", sample=sample)


def read_metrics(text: str, engine: str = "auto", *, k: int | None = None, now: float | None = None) -> Telemetry:
    """Any engine's /metrics body → Telemetry (``engine="auto"`` detects it); K fills in where the engine is silent."""
    kind = detect_engine(text) if engine == "auto" else engine
    if kind not in READERS:
        raise TelemetryError("err.engines.readers.engine_choice", engine=engine, allowed=", ".join(["auto", *READERS]))
    t = READERS[kind](text, k=k, now=now) if kind == "trtllm" else READERS[kind](text, now=now)
    return t if t.k or not k else _with(t, k=k)

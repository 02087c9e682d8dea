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
  over the last logging interval), ``sglang:spec_accept_rate`` (r where the body shows SGLang's
  post-0.5.11 meaning), ``sglang:spec_num_draft_tokens`` (K + 1), ``sglang:gen_throughput``; and
  ``/server_info``'s ``internal_states[0].avg_spec_accept_length``.
- TensorRT-LLM ``trtllm-serve`` ``/metrics``: a JSON list of iteration stats, each with
  ``iterLatencyMS`` and ``specDecodingStats {numDraftTokens, numAcceptedTokens,
  numRequestsWithDraftTokens, acceptanceLength, iterLatencyMS, draftOverhead}`` (the stats since
  the last call); newer builds also serve Prometheus counters
  ``trtllm_spec_decode_num_draft_tokens_total``, ``…_num_accepted_tokens_total`` and the gauges
  ``trtllm_spec_decode_acceptance_length`` and ``trtllm_spec_decode_draft_overhead``.

Prometheus text is parsed by ``prometheus_client``'s parser. Every failure is a
:class:`TelemetryError` whose message says what the body is and what was expected.

What a hostile or broken server's body cannot do (tests/servers/test_hostile_servers.py): hold the parser for
long or fill memory (at most :data:`MAX_SERIES` sample lines, each at most :data:`MAX_LINE` characters,
positions below :data:`MAX_POSITION`), make a reading of NaN, infinite or negative counts, count a
duplicated series twice, or put a name longer than :data:`MAX_MODEL` characters on the page. Each is a
TelemetryError naming the series or field, the value and what is allowed.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from specviz.base.i18n import N_, Message, Phrase
from specviz.servers.telemetry import ENGINES, Telemetry, combine


class TelemetryError(Message):
    """A body that is not the telemetry expected (wrong format, engine, or speculation off).

    A :class:`~specviz.base.i18n.Message` (so a ValueError): ``TelemetryError(key, **fields)``; ``str()`` is English.
    """

    def __reduce__(self):  # pickling keeps the class
        return _telemetry_error, (self.msgid, self.fields)


def _telemetry_error(key: str, fields: dict) -> TelemetryError:
    return TelemetryError(key, **fields)


SPEC_COUNTERS = {  # our field -> the counter's name after the engine's prefix
    "drafts": "spec_decode_num_drafts_total",
    "draft_tokens": "spec_decode_num_draft_tokens_total",
    "accepted_tokens": "spec_decode_num_accepted_tokens_total",
}
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
GENERATED = {"vllm:": "generation_tokens_total", "llamacpp:": "tokens_predicted_total"}
MAX_SERIES = 20_000  #: sample lines read from a body (vLLM: hundreds to a few thousand; 20,000 parse in 0.5 s)
MAX_LINE = 64 * 2**10  #: characters of one line of a body (a label value this long is no engine's)
MAX_POSITION = 1024  #: per-position series read (position labels 0 … MAX_POSITION − 1); K is far below
MAX_MODEL = 160  #: characters of a model name kept (the run's label is "<engine> <model>", at most 200)
_SHOWN = 160  #: characters of a series, value or parser error quoted in a message
_DIGITS = re.compile(r"[0-9]+")


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


def _cut(text: object, limit: int = _SHOWN) -> str:
    """``text`` as a message quotes it: at most ``limit`` characters (… when cut)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _series(name: str, labels: dict[str, str]) -> str:
    """``name{a="b",…}`` as a message quotes a series (cut to :data:`_SHOWN` characters)."""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return _cut(f"{name}{{{inner}}}" if inner else name)


def _check_size(text: str) -> None:
    """TelemetryError when ``text`` holds more than :data:`MAX_SERIES` sample lines or a line over
    :data:`MAX_LINE` characters: what the parser would otherwise take seconds and memory over."""
    samples = 0
    for n, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_LINE:
            raise TelemetryError(
                "line {n} of the body is {chars} characters long; at most {max} are read: is this the right endpoint?",
                n=n,
                chars=len(line),
                max=MAX_LINE,
            )
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            samples += 1
    if samples > MAX_SERIES:
        raise TelemetryError(
            "the body holds {n} samples; at most {max} are read: is this the right endpoint?", n=samples, max=MAX_SERIES
        )


def prometheus_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(sample name, labels, value) for every sample of a Prometheus text exposition.

    Raises TelemetryError when the body is not Prometheus text, or is larger than what is read
    (:data:`MAX_SERIES` sample lines, :data:`MAX_LINE` characters a line).
    """
    head = text.lstrip()[:1]
    if head in ("{", "[", "<"):
        kind = {"{": "JSON", "[": "JSON", "<": "HTML"}[head]
        raise TelemetryError("the body is {kind}, not Prometheus text (# HELP / name{{labels}} value lines)", kind=kind)
    _check_size(text)
    try:
        return [
            (s.name, dict(s.labels), float(s.value))
            for fam in text_string_to_metric_families(text)
            for s in fam.samples
        ]
    except (ValueError, TypeError, IndexError) as exc:
        first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
        raise TelemetryError(
            "not Prometheus text ({error}); first sample line: {line!r}", error=_cut(exc), line=first[:80]
        ) from None


def _counter(name: str, labels: dict[str, str], value: float) -> float:
    """``value`` of the counter ``name{labels}``; TelemetryError naming the series unless a finite number ≥ 0."""
    if not (math.isfinite(value) and value >= 0):
        raise TelemetryError(
            "{series} is {value}; a counter is a finite number ≥ 0", series=_series(name, labels), value=f"{value:g}"
        )
    return value


def _model(name: object) -> str:
    """A served model's name as kept: at most :data:`MAX_MODEL` characters."""
    return _cut(name, MAX_MODEL) if name else ""


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
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for name, labels, value in samples:
        if name not in wanted and name != prefix + PER_POSITION:
            continue
        series = (name, tuple(sorted(labels.items())))
        if series in seen:  # summed twice it would double the counts
            raise TelemetryError(
                "the series {series} appears more than once in the body; each series may appear once",
                series=_series(name, labels),
            )
        seen.add(series)
        value = _counter(name, labels, value)
        key = group(labels)
        if name in wanted:
            fields[key][wanted[name]] = fields[key].get(wanted[name], 0.0) + value
            models.setdefault(key, _model(labels.get("model_name", "")))
        else:
            pos = labels.get("position", labels.get("pos"))
            if pos is None or not _DIGITS.fullmatch(pos):
                raise TelemetryError(
                    "{name}: a sample without a numeric position label ({labels})", name=name, labels=_cut(labels)
                )
            if len(pos) > 9 or int(pos) >= MAX_POSITION:
                raise TelemetryError(
                    "{series}: position {pos} is beyond the {max} positions read",
                    series=_series(name, labels),
                    pos=_cut(pos, 20),
                    max=MAX_POSITION,
                )
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
        return TelemetryError("{engine} /metrics: the body has no samples", engine=ENGINES[engine])
    prefix = {"vllm": "vllm:", "llamacpp": "llamacpp:", "sglang": "sglang:", "trtllm": "trtllm_"}[engine]
    own = sum(n.startswith(prefix) for n in names)
    if own:
        return TelemetryError(
            "{engine} /metrics: no speculative-decoding series among its {own} {prefix} metrics: speculation is off on this server",
            engine=ENGINES[engine],
            own=own,
            prefix=prefix,
        )
    try:
        other = ENGINES[detect_engine_from_names(names)]
    except TelemetryError:
        return TelemetryError(
            "{engine} /metrics: these are not {engine} metrics (they look like no engine specviz knows's)",
            engine=ENGINES[engine],
        )
    return TelemetryError(
        "{engine} /metrics: these are not {engine} metrics (they look like {other}'s)",
        engine=ENGINES[engine],
        other=other,
    )


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
            raise TelemetryError(
                "vLLM /metrics: engine {index!r} not found; engines: {engines}",
                index=engine_index,
                engines=sorted(groups),
            )
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
        engine="llamacpp",
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

    SGLang PR #23530 (first released in 0.5.11) changed it from accept length / draft tokens per
    forward (E[N] / (K + 1) for a chain, bonus counted) to accepted / proposed drafts (r). The HELP
    line names the formula in each; the K gauges (``sglang:spec_num_steps``,
    ``sglang:spec_num_draft_tokens``) first appeared in 0.5.13, so a body with them has the new one.
    """
    for meaning, help_line in _SGLANG_RATE_HELP.items():
        if help_line.search(text):
            return meaning
    return "accepted / proposed" if has_k_gauges else None


def read_sglang(text: str, *, now: float | None = None) -> Telemetry:
    """SGLang /metrics → its speculative gauges (the last logging interval), averaged over label sets.

    ``sglang:spec_accept_length`` is E[N] (bonus counted); ``sglang:gen_throughput`` tokens/s;
    ``sglang:spec_num_draft_tokens`` (SGLang ≥ 0.5.13) the tokens verified per step with the root,
    so K = it − 1. ``sglang:spec_accept_rate`` is used as r only where the body says it has the
    meaning of SGLang ≥ 0.5.11 (:func:`sglang_rate_meaning`); the meaning applied, or that none
    could be, is the label ``spec_accept_rate_meaning``. Counts are not exposed.
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
        engine="sglang",
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
    """SGLang /server_info → ``internal_states[0].avg_spec_accept_length`` (E[N], bonus counted)."""
    data = _json(body, "SGLang /server_info")
    states = data.get("internal_states") if isinstance(data, dict) else None
    state = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    length = state.get("avg_spec_accept_length")
    if length is None:
        raise TelemetryError("SGLang /server_info: no internal_states[0].avg_spec_accept_length (speculation off?)")
    return Telemetry(
        engine="sglang",
        model=_model(data.get("served_model_name", data.get("model_path", ""))),
        end=_now(now),
        mean_acceptance_length=_number(length, "SGLang /server_info", "internal_states[0].avg_spec_accept_length"),
        cumulative=False,
    )


_TRTLLM_OVERHEAD = "trtllm_spec_decode_draft_overhead"


def read_trtllm(text: str, *, k: int | None = None, now: float | None = None) -> Telemetry:
    """TensorRT-LLM /metrics → the drafts of the iterations in the body (JSON), or its counters (Prometheus).

    JSON: every iteration's ``specDecodingStats`` is summed (drafts = numRequestsWithDraftTokens),
    a window since the previous call. Prometheus: cumulative draft/accepted counters; rounds
    are then proposed / K.

    Draft overhead, where the body has it. TensorRT-LLM defines ``draftOverhead`` as
    "iterLatencyMS (specdec) / iterLatencyMS (total)" (cpp/include/tensorrt_llm/executor/types.h,
    ``struct SpecDecodingStats``, lines 311–314 @ a98a9061d72f6fd39f5d055ebdd2c6878a100e2c): the
    time one iteration spent producing draft tokens over that iteration's whole latency. The
    PyTorch executor computes it per iteration as ``specdec_stats.iter_latency_ms / iter_latency_ms``
    (0 when the iteration took no time), in ``PyExecutor._update_iter_stats``
    (tensorrt_llm/_torch/pyexecutor/py_executor.py @ 9521caf4696c1fb79b0f946f0d980f8f0ebd3e64), and
    its own test requires 0 ≤ draftOverhead ≤ 1. So over several iterations the share of time spent
    drafting is Σ draft ms / Σ iteration ms, i.e. each iteration's ``draftOverhead`` weighted by its
    top-level ``iterLatencyMS`` (plainly averaged where an iteration lacks it); the iterations
    averaged are those with drafts, the ones whose acceptance is read. Prometheus:
    ``trtllm_spec_decode_draft_overhead`` is a gauge holding the last iteration's ``draftOverhead``
    (``MetricsCollector.log_iteration_stats``, tensorrt_llm/metrics/collector.py @
    050f80def8df236e326949c8bd9dee10fd896a83); several label sets are averaged. A draft overhead
    that is not a number from 0 to 1, or an ``iterLatencyMS`` that is not a finite number ≥ 0, is a
    TelemetryError naming the field.
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
        lengths = [v for n, _, v in samples if n == "trtllm_spec_decode_acceptance_length" and math.isfinite(v)]
        overheads = [
            _fraction(v, "TensorRT-LLM /metrics", _series(n, lb)) for n, lb, v in samples if n == _TRTLLM_OVERHEAD
        ]
        return _with(
            groups[""],
            k=k,
            mean_acceptance_length=lengths[0] if lengths else None,
            draft_overhead=sum(overheads) / len(overheads) if overheads else None,
        )
    what = "TensorRT-LLM /metrics"
    data = _json(text, what)
    stats = data if isinstance(data, list) else [data]
    readings = []
    for i, it in enumerate(stats):
        spec = it.get("specDecodingStats") if isinstance(it, dict) else None
        if not isinstance(spec, dict) or not spec.get("numDraftTokens"):
            continue

        def count(name: str, i=i, spec=spec) -> float:
            return _number(spec.get(name, 0), what, f"[{i}].specDecodingStats.{name}")

        overhead = spec.get("draftOverhead")
        latency = it.get("iterLatencyMS")
        readings.append(
            Telemetry(
                engine="trtllm",
                k=k,
                end=_now(now),
                drafts=count("numRequestsWithDraftTokens") or None,
                draft_tokens=count("numDraftTokens"),
                accepted_tokens=count("numAcceptedTokens"),
                cumulative=False,
                draft_overhead=(
                    None if overhead is None else _fraction(overhead, what, f"[{i}].specDecodingStats.draftOverhead")
                ),
                iteration_ms=None if latency is None else _milliseconds(latency, what, f"[{i}].iterLatencyMS"),
            )
        )
    if not readings:
        if not any(isinstance(it, dict) and "iter" in it for it in stats):
            raise TelemetryError("TensorRT-LLM /metrics: the JSON is not a list of iteration stats")
        raise TelemetryError(
            "TensorRT-LLM /metrics: no iteration with specDecodingStats.numDraftTokens > 0 since the last call (speculation off, idle, or enable_iter_perf_stats not set)"
        )
    return combine(readings)


def _with(t: Telemetry, **changes) -> Telemetry:
    return replace(t, **{k: v for k, v in changes.items() if v is not None})


def _json(body: dict | list | str, what: str):
    """``body`` parsed as JSON; TelemetryError naming ``what`` (the endpoint, a str or Phrase) when it is not JSON
    (an integer of more digits than Python converts, or arrays nested deeper than it recurses, included)."""
    if isinstance(body, (dict, list)):
        return body
    try:
        return json.loads(body)
    except (ValueError, TypeError, RecursionError) as exc:
        raise TelemetryError(
            "{what}: the body is not JSON ({error_type}: {error})",
            what=what,
            error_type=exc.__class__.__name__,
            error=_cut(exc),
        ) from None


def _number(value: object, what: str, field: str) -> float:
    """``value`` of a JSON body's ``field`` as a count: a finite number ≥ 0 (a numeric string too);
    TelemetryError naming ``what`` (the endpoint), the field and the value otherwise."""
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise TelemetryError(
            "{what}: {field} is {value}; a count is a finite number ≥ 0",
            what=what,
            field=field,
            value=_cut(repr(value), 60),
        )
    return number


def _checked(value: object, ok, message: str, what: str, field: str) -> float:
    """``value`` of ``field`` as a float where it is a number (not a string or a bool) that ``ok`` accepts;
    else TelemetryError ``message`` naming ``what`` (the endpoint), the field and the value."""
    if not (isinstance(value, int | float) and not isinstance(value, bool) and ok(value)):  # NaN fails ok too
        raise TelemetryError(message, what=what, field=field, value=_cut(repr(value), 60))
    return float(value)


def _fraction(value: object, what: str, field: str) -> float:
    """``value`` of ``field`` as a share of time, a number from 0 to 1."""
    return _checked(
        value,
        lambda v: 0.0 <= v <= 1.0,
        N_("{what}: {field} is {value}; a share of time is a number from 0 to 1"),
        what,
        field,
    )


def _milliseconds(value: object, what: str, field: str) -> float:
    """``value`` of ``field`` as a duration, a finite number of milliseconds ≥ 0."""
    return _checked(
        value,
        lambda v: math.isfinite(v) and v >= 0,
        N_("{what}: {field} is {value}; a duration is a finite number of milliseconds ≥ 0"),
        what,
        field,
    )


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
        raise TelemetryError("/metrics: JSON, but not TensorRT-LLM iteration stats")
    return detect_engine_from_names({n for n, _, _ in prometheus_samples(text)})


def detect_engine_from_names(names: set[str]) -> str:
    """The engine whose metric prefix the sample names carry."""
    for engine, prefix in (("vllm", "vllm:"), ("llamacpp", "llamacpp:"), ("sglang", "sglang:"), ("trtllm", "trtllm_")):
        if any(n.startswith(prefix) for n in names):
            return engine
    sample = ", ".join(sorted(names)[:3])
    if not sample:
        raise TelemetryError("/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has no samples)")
    raise TelemetryError(
        "/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has {sample})", sample=sample
    )


def read_metrics(text: str, engine: str = "auto", *, k: int | None = None, now: float | None = None) -> Telemetry:
    """Any engine's /metrics body → Telemetry (``engine="auto"`` detects it); K fills in where the engine is silent."""
    kind = detect_engine(text) if engine == "auto" else engine
    if kind not in READERS:
        raise TelemetryError(
            "engine {engine!r} is not one of {allowed}", engine=engine, allowed=", ".join(["auto", *READERS])
        )
    t = READERS[kind](text, k=k, now=now) if kind == "trtllm" else READERS[kind](text, now=now)
    return t if t.k or not k else _with(t, k=k)

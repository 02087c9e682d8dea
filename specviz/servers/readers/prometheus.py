"""Prometheus text → capped samples → the spec-decode counters of one stack prefix, grouped into readings.

Caps against a hostile body (tests/servers/test_hostile_servers.py): at most :data:`MAX_SERIES` sample
lines of at most :data:`MAX_LINE` characters, positions below :data:`MAX_POSITION`, counters finite and
≥ 0, each series once; else a TelemetryError naming the series, the value and the limit.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from specviz.servers.readers.checks import TelemetryError, _cut, _model
from specviz.servers.telemetry import STACKS, Telemetry

SPEC_COUNTERS = {  # our field -> the counter's name after the stack's prefix
    "drafts": "spec_decode_num_drafts_total",
    "draft_tokens": "spec_decode_num_draft_tokens_total",
    "accepted_tokens": "spec_decode_num_accepted_tokens_total",
}
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
GENERATED = {"vllm:": "generation_tokens_total", "llamacpp:": "tokens_predicted_total"}
MAX_SERIES = 20_000  #: sample lines read from a body (vLLM serves hundreds to a few thousand)
MAX_LINE = 64 * 2**10  #: characters of one line of a body
MAX_POSITION = 1024  #: per-position series read (position labels 0 … MAX_POSITION − 1)
_DIGITS = re.compile(r"[0-9]+")
_PREFIXES = (("vllm", "vllm:"), ("llamacpp", "llamacpp:"), ("sglang", "sglang:"), ("trtllm", "trtllm_"))


def _series(name: str, labels: dict[str, str]) -> str:
    """``name{a="b",…}`` as a message quotes a series (cut)."""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return _cut(f"{name}{{{inner}}}" if inner else name)


def _check_size(text: str) -> None:
    """TelemetryError when ``text`` has over :data:`MAX_SERIES` sample lines or a line over :data:`MAX_LINE`."""
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
    """(sample name, labels, value) of every sample (``prometheus_client``'s parser).

    Raises TelemetryError when the body is not Prometheus text or is over the caps.
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
    """``value`` when a finite number ≥ 0; else TelemetryError naming the series."""
    if not (math.isfinite(value) and value >= 0):
        raise TelemetryError(
            "{series} is {value}; a counter is a finite number ≥ 0", series=_series(name, labels), value=f"{value:g}"
        )
    return value


def _prometheus_counters(
    samples, prefix: str, stack: str, now: float, group: Callable[[dict[str, str]], str]
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
            stack=stack,
            model=models.get(key, ""),
            k=len(series) or None,
            end=now,
            accepted_per_position=series,
            cumulative=True,
            labels={"group": key} if key else {},
            **f,
        )
    return out


def _no_spec(stack: str, samples) -> TelemetryError:
    """Why ``stack``'s body has no speculative series: empty, speculation off, or another stack's metrics."""
    names = {n for n, _, _ in samples}
    if not names:
        return TelemetryError("{engine} /metrics: the body has no samples", engine=STACKS[stack])
    prefix = dict(_PREFIXES)[stack]
    own = sum(n.startswith(prefix) for n in names)
    if own:
        return TelemetryError(
            "{engine} /metrics: no speculative-decoding series among its {own} {prefix} metrics: speculation is off on this server",
            engine=STACKS[stack],
            own=own,
            prefix=prefix,
        )
    try:
        other = STACKS[detect_stack_from_names(names)]
    except TelemetryError:
        return TelemetryError(
            "{engine} /metrics: these are not {engine} metrics (they look like no serving stack specviz knows's)",
            engine=STACKS[stack],
        )
    return TelemetryError(
        "{engine} /metrics: these are not {engine} metrics (they look like {other}'s)",
        engine=STACKS[stack],
        other=other,
    )


def detect_stack_from_names(names: set[str]) -> str:
    """The stack whose metric prefix the sample names carry; TelemetryError when none does."""
    for stack, prefix in _PREFIXES:
        if any(n.startswith(prefix) for n in names):
            return stack
    sample = ", ".join(sorted(names)[:3])
    if not sample:
        raise TelemetryError("/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has no samples)")
    raise TelemetryError(
        "/metrics: not vLLM, llama.cpp, SGLang or TensorRT-LLM metrics (it has {sample})", sample=sample
    )

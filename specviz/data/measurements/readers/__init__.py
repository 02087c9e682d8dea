"""The registry of input formats: one module per format, each returning a :class:`RawTable`.

A :class:`Reader` has a name (``LoadReport.format``), the spellings ``format=`` accepts, a ``detect`` rule,
whether it needs the caller's K, and ``read(text, ctx) -> RawTable``. ``"auto"`` takes the first of
:data:`READERS` whose ``detect`` matches, so CSV comes last. A new format: ``readers/<format>.py`` with a
``READER``, listed before ``csv``, and its headers in :data:`specviz.data.measurements.aliases.ALIASES`.
"""

from __future__ import annotations

from specviz.data.measurements.readers import (
    aiperf,
    csv,
    llamacpp_log,
    schema_jsonl,
    sglang_bench,
    sglang_log,
    spec_bench,
    speculation_profile,
    vllm_bench,
    vllm_log,
    vllm_request,
)
from specviz.data.measurements.readers.base import ReadContext, Reader

__all__ = ["READERS", "ReadContext", "Reader", "detect", "formats"]

#: Every format, in detection order (the first whose rule matches reads the text; CSV matches anything).
#: The engine logs come first: each claims only text with its own engine's lines (and a log whose
#: lines are JSON must not go to Spec-Bench), and vLLM V1 before V0 so a log with both needs k=. A vllm bench serve
#: result and an SGLang bench_speculative line are JSON objects too: they go before Spec-Bench's JSON lines,
#: which claim any '{'; JSON lines in the measurement schema (keys K, an acceptance figure or speedup, no
#: Spec-Bench ``choices``) go just before it.
READERS: dict[str, Reader] = {
    r.name: r
    for r in (
        vllm_log.READER,
        vllm_log.READER_V0,
        sglang_log.READER,
        llamacpp_log.READER,
        vllm_bench.READER,
        sglang_bench.READER,
        aiperf.READER,
        speculation_profile.READER,
        vllm_request.READER,
        schema_jsonl.READER,
        spec_bench.READER,
        csv.READER,
    )
}


def formats() -> dict[str, str]:
    """``format=`` spellings -> reader name, from :data:`READERS` as it stands ("auto": detect)."""
    return {"auto": "auto"} | {s: r.name for r in READERS.values() for s in (r.name, *r.spellings)}


def detect(text: str) -> Reader:
    """The first reader of :data:`READERS` whose detection rule matches ``text`` (CSV matches anything)."""
    return next(r for r in READERS.values() if r.detect(text))

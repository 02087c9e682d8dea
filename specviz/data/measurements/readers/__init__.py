"""The registry of input formats: one module per format, each returning a :class:`RawTable`.

A reader is a :class:`Reader`: its name (``LoadReport.format``), the spellings ``format=``
accepts, its auto-detection rule on the decoded text, whether it needs the caller's K, and
``read(text, ctx) -> RawTable``. :data:`READERS` lists them in detection order: ``"auto"``
takes the first whose ``detect`` matches, so the catch-all CSV reader comes last. The engine
log readers share :mod:`~specviz.data.measurements.readers.log_lines` (their row record, the
per-position conversion, the K checks and the table).

To add an engine's format: write ``readers/<format>.py`` with a ``READER = Reader(...)`` whose
``read`` returns a :class:`RawTable` of canonical (or aliased) columns, add it to
:data:`READERS` before ``csv``, and add the engine's headers to
:data:`specviz.data.measurements.aliases.ALIASES`. Validation and derived columns need no change.
"""

from __future__ import annotations

from specviz.data.measurements.readers import (
    aiperf,
    csv,
    llamacpp_log,
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
#: which claim any '{'.
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

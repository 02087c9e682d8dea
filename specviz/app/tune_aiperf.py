"""AIPerf's profile exports as a tune's points: one ``profile_export_aiperf.json`` per (K, load), read by the run
library's AIPerf reader, so a load AIPerf drove is fitted like one ``specviz tune`` drove."""

from __future__ import annotations

import json

from specviz.base.i18n import Message
from specviz.data.measurements.load import MAX_BYTES
from specviz.data.measurements.readers import aiperf
from specviz.data.measurements.readers.log_lines import json_count, json_number

MS = 1e-3


def _avg(obj: dict, metric: str) -> float | None:
    value = obj.get(metric)
    return json_number(value, "avg") if isinstance(value, dict) else None


def aiperf_point(data: bytes, name: str, k_given: int) -> dict:
    """A tune point (the fields :func:`specviz.servers.tune.measure_point` writes) from one AIPerf export.

    TPOT and TTFT are AIPerf's means of ``inter_token_latency`` and ``time_to_first_token`` (ms → s), tokens/s
    its ``output_token_throughput``, the load its ``--concurrency``; K and the shares u_i (steps accepting
    ≥ i drafts / steps) come from the speculative totals vLLM writes with ``--per-request-spec-decode-metrics``,
    K from ``k_given`` where the steps drafted unequally. An export without those totals is K = 0 only where
    ``k_given`` is 0. Message naming the file and what it lacks."""
    if len(data) > MAX_BYTES:
        raise Message("{name}: {size:,} bytes; at most {most:,} are read", name=name, size=len(data), most=MAX_BYTES)
    text = data.decode("utf-8", errors="replace")
    if not aiperf.detect(text):
        raise Message("{name} is not an AIPerf profile export (profile_export_aiperf.json)", name=name)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Message("{name} is not valid JSON: {why}", name=name, why=str(exc)) from None
    row, issues = aiperf.parse_run(obj)
    figures = aiperf.serving_figures(obj)
    concurrency = figures.get("concurrency")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise Message("{name}: run_info.cli_command names no --concurrency; tune points are closed loops", name=name)
    speculative = not issues and row.mean is not None
    if not speculative and k_given > 0:
        raise Message(
            "{name}: no speculative totals (vLLM writes them with --per-request-spec-decode-metrics); with them missing the file is read only as K = 0",
            name=name,
        )
    k = (int(row.k) if row.k is not None else k_given) if speculative else 0
    if speculative and k < 1:
        raise Message("{name}: its steps drafted unequally; give the K the server ran with", name=name)
    tpot, ttft = _avg(obj, "inter_token_latency"), _avg(obj, "time_to_first_token")
    tokens_per_s = _avg(obj, "output_token_throughput")
    if tpot is None or ttft is None or tokens_per_s is None:
        raise Message(
            "{name}: needs inter_token_latency, time_to_first_token and output_token_throughput averages", name=name
        )
    count = obj.get("request_count")
    shares = list(row.positions or [])[:k] if k else []
    return {
        "k": k,
        "concurrency": concurrency,
        "context": 0,
        "prompt_tokens": _avg(obj, "input_sequence_length"),
        "started": str(obj.get("start_time", "")),
        "requests": (json_count(count, "avg") if isinstance(count, dict) else None) or 0,
        "failed": len(obj.get("error_summary") or []),
        "tokens_per_s": tokens_per_s,
        "tpot_s": tpot * MS,
        "ttft_s": ttft * MS,
        "output_tokens": _avg(obj, "output_sequence_length"),
        "shares": shares,
        "mean_accepted": row.mean if speculative else None,
        "server_k": k if speculative else None,
        "source": f"AIPerf {obj.get('aiperf_version', '?')}: {name}",
    }


def aiperf_points(files: list[tuple[str, bytes]], k_given: int) -> list[dict]:
    """:func:`aiperf_point` of each (name, bytes); Message where two files measure the same (K, load)."""
    points, seen = [], {}
    for name, data in files:
        p = aiperf_point(data, name, k_given)
        where = (p["k"], p["concurrency"])
        if where in seen:
            raise Message(
                "{first} and {second} both measure K = {k} at {c} in flight; keep one",
                first=seen[where],
                second=name,
                k=p["k"],
                c=p["concurrency"],
            )
        seen[where] = name
        points.append(p)
    return points

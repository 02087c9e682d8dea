"""The live benchmark without streamlit: deployment limits, request checks, the run controller
(queue, worker thread, Stop, progress, wall-time cap), the run's rows in the measurement schema,
and what the page shows about each measured cell.

The measuring itself is :func:`specviz.engine.bench.sweep` — the code path of ``python -m specviz bench``
— so the page and the CLI time exactly the same thing.

Modules: :mod:`~specviz.app.live.request` (limits, controls, checks), :mod:`~specviz.app.live.worker`
(the run queue and the torch worker thread), :mod:`~specviz.app.live.run` (the controller, and the run's rows in
the measurement schema), :mod:`~specviz.app.live.cells` (per-cell details), :mod:`~specviz.app.live.tables`
(the page's columns and tabs); :mod:`~specviz.app.live.views` draws the results and is the one module that
imports streamlit (not imported here).

Configuration (environment variables; see docs/deploy.md):

``SPECVIZ_HOSTED``          "1": hosted mode — only the bundled pair and the allow-listed HF ids,
                            no local paths, the lower caps below.
``SPECVIZ_HF_ALLOWLIST``    comma-separated Hugging Face "TARGET,DRAFT" pairs allowed in hosted
                            mode, pairs separated by ";" (e.g. ``gpt2-large,gpt2;org/t,org/d``).
``SPECVIZ_MAX_NEW_TOKENS``, ``SPECVIZ_MAX_REPEATS``, ``SPECVIZ_MAX_PROMPTS``,
``SPECVIZ_MAX_CELLS``, ``SPECVIZ_MAX_WALL_S``
                            per-run caps (defaults: 1024 / 10 / 32 / 64 / 900 s; hosted: 256 / 3 /
                            12 / 16 / 120 s).
"""

from specviz.app.live.cells import (
    SEGMENT_COLORS,
    SEGMENT_KEYS,
    SEGMENT_LABELS,
    cell_details,
    cell_label,
    cost_breakdown,
    exactness_message,
    legend_html,
    n_counts,
    predicted_n_pmf,
    segments_html,
    text_segments,
)
from specviz.app.live.request import (
    DTYPES,
    HOSTED_DEFAULTS,
    Limits,
    Request,
    check_pair,
    check_request,
    controls,
    limits_from_env,
    make_request,
    pair_choices,
)
from specviz.app.live.run import LiveRun, canonical, execute, kept_after_error, measure, progress_bar
from specviz.app.live.session import LAST_RUN_KEY, compare_ngram_to_draft, keep_run, last_run
from specviz.app.live.worker import (
    LIVE_QUOTA,
    LOADGEN_QUEUE,
    LOADGEN_QUOTA,
    RUN_QUEUE,
    HourlyQuota,
    RunQueue,
    Worker,
    gpu_summary,
    shared_worker,
    torch_dtype,
    wait,
)

__all__ = [
    "DTYPES",
    "HOSTED_DEFAULTS",
    "LAST_RUN_KEY",
    "LIVE_QUOTA",
    "LOADGEN_QUEUE",
    "LOADGEN_QUOTA",
    "RUN_QUEUE",
    "SEGMENT_COLORS",
    "SEGMENT_KEYS",
    "SEGMENT_LABELS",
    "HourlyQuota",
    "Limits",
    "LiveRun",
    "Request",
    "RunQueue",
    "Worker",
    "canonical",
    "cell_details",
    "cell_label",
    "check_pair",
    "check_request",
    "compare_ngram_to_draft",
    "controls",
    "cost_breakdown",
    "exactness_message",
    "execute",
    "gpu_summary",
    "keep_run",
    "kept_after_error",
    "last_run",
    "legend_html",
    "limits_from_env",
    "make_request",
    "measure",
    "n_counts",
    "pair_choices",
    "predicted_n_pmf",
    "progress_bar",
    "segments_html",
    "shared_worker",
    "text_segments",
    "torch_dtype",
    "wait",
]

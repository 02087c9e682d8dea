"""The live page's last run in a session as other pages read it, and the Drafting strategies page's n-gram run.

No streamlit: ``state`` is ``st.session_state`` (any mapping); the n-gram comparison runs through the
live page's queue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping

import pandas as pd

from specviz.app.live.request import controls, limits_from_env, make_request
from specviz.app.live.run import LiveRun, execute, progress_bar
from specviz.base.i18n import Message, Phrase

__all__ = ["LAST_RUN_KEY", "compare_ngram_to_draft", "keep_run", "last_run"]

LAST_RUN_KEY = "live.result"  #: session_state key of the live page's last run (the page's ``key("result")``)
NGRAM_PAIRS = ("bundled-target+ngram", "bundled")  #: the n-gram drafter, then the bundled draft model


def last_run(state: Mapping) -> LiveRun | None:
    """The live page's last run in this session (finished, stopped or failed), or None."""
    return state.get(LAST_RUN_KEY)


def keep_run(state: MutableMapping, run: LiveRun | None) -> None:
    """Make ``run`` this session's last live run (what :func:`last_run` returns)."""
    state[LAST_RUN_KEY] = run


def compare_ngram_to_draft(
    k: int, text: str | None = None, on_progress: Callable[[float, str], None] = lambda share, pair: None
) -> pd.DataFrame:
    """α̂, E[N], c, the speedup and greedy exactness of the bundled target with n-gram drafts and with the
    bundled draft model, at draft length ``k`` on the bundled prompts (``text`` None) or ``text``, greedy,
    through the live page's queue and worker (:func:`~specviz.app.live.run.execute`) within the
    deployment's limits. ``on_progress(share done, pair)`` follows the runs.

    Raises
    ------
    ValueError
        A :class:`~specviz.base.i18n.Message` naming the pair whose run measured no cell, and why.
    """
    limits = limits_from_env()
    rows = []
    for i, pair in enumerate(NGRAM_PAIRS):
        values = {p.key: p.default for p in controls(limits)} | {
            "pair": pair,
            "ks": [k],
            "temps": [0.0],
            "new_tokens": min(64, limits.max_new_tokens),
            "prompts": "custom" if text else "bundled",
            "text": text or "",
        }
        run = LiveRun(make_request(values, limits))
        execute(run, lambda i=i, run=run, pair=pair: on_progress((i + progress_bar(run)[0]) / 2, pair))
        if not run.rows:
            why = Phrase(run.stop_reason[0], **run.stop_reason[1]) if run.stop_reason else Phrase("no result")
            raise Message("{pair}: no cell finished ({why})", pair=pair, why=why)
        row = run.frame().iloc[0]
        rows.append(
            {
                "drafter": "n-gram (prompt lookup)" if "+ngram" in pair else "bundled draft model",
                "α̂": row["alpha"],
                "E[N] measured": row["mean_accepted_tokens"],
                "c": row["c_used"],
                "speedup": row["speedup"],
                "greedy_exact": row["greedy_exact"],
            }
        )
    return pd.DataFrame(rows).round(3)

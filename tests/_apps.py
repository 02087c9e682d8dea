"""AppTest helpers shared by the page tests."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
#: a Serving TTFT limit (s) the default setup meets without speculation (down to 37 ms) and with no K
#: (K = 1 needs about 45 ms: the draft's prefill comes first); it moves when the engine profiles are refitted
SERVING_NO_K_TTFT = "0.040"
#: a GPU on which the Serving page's default pair's best K falls to 0 at large batches (at α = 0.75 it only falls:
#: a schedule every engine takes); on the default H100 the per-request cost a round amortises keeps K ≥ 2 to 256
SWITCHING_GPU = "A100-SXM4-80GB"


def open_app(path: str, timeout: float = 60, **query: str) -> AppTest:
    """Run the page at ``path`` (relative to the repository) with ``query`` as its URL parameters; no exception."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=timeout)
    for name, value in query.items():
        at.query_params[name] = value
    return rerun(at)


def rerun(at: AppTest) -> AppTest:
    """Run the script again (after a widget change) and check that it raised nothing."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def click(at: AppTest, label: str) -> AppTest:
    """Click the one button labelled ``label`` and rerun."""
    matches = [b for b in at.button if b.label == label]
    assert len(matches) == 1, f"want one button {label!r}; have {[b.label for b in at.button]}"
    matches[0].click()
    return rerun(at)


def shown_errors(at: AppTest) -> list[str]:
    """The st.error texts as a person reads them (ui.show_error escapes Markdown: ``\\[`` shows as ``[``)."""
    return [re.sub(r"\\([\\`*_\[\]<>&])", r"\1", e.value) for e in at.error]

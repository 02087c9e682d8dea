"""Sample files a new user can load in one click, and a CSV template of the canonical columns."""

from __future__ import annotations

import csv
import io

from specviz.base.i18n import Phrase
from specviz.base.paths import DATA
from specviz.data.measurements.schema import COLUMNS

SAMPLES_DIR = DATA / "samples"

#: Sample measurement files (in data/samples/) a new user can load in one click: file -> what it is.
SAMPLES: dict[str, str] = {  # the descriptions are i18n.Phrase: English as a str, any language on a page
    "specviz_bench_bundled_cpu.csv": Phrase(
        'our own "python -m specviz bench" output: the bundled pair on a 2-core CPU'
    ),
    "published_leviathan2023.csv": Phrase("published figures: Leviathan et al. 2023 (T5-XXL), not our measurements"),
    "published_chen2023.csv": Phrase(
        "published figures: Chen et al. 2023 (Chinchilla 70B; speedups only), not our measurements"
    ),
    "published_spec_bench.csv": Phrase("published figures: Spec-Bench leaderboard rows, not our measurements"),
}

#: The illustrative row of :func:`template_csv` (its label and notes say it is not a measurement).
_EXAMPLE = {
    "label": "example — replace with your run",
    "k": "4",
    "mean_accepted_tokens": "2.9",
    "t_target_ms": "22.0",
    "t_draft_ms": "1.1",
    "t_verify_ms": "24.5",
    "speedup": "2.1",
    "temperature": "0",
    "batch_size": "1",
    "target_model": "my-target",
    "draft_model": "my-draft",
    "hardware": "my GPU",
    "method": "draft model",
    "notes": "illustrative values, not a measurement",
}


def available_samples() -> dict[str, str]:
    return {name: what for name, what in SAMPLES.items() if (SAMPLES_DIR / name).is_file()}


def template_csv() -> str:
    """A CSV template: every canonical column, one illustrative row (label says it is not a measurement)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerow([_EXAMPLE.get(c, "") for c in COLUMNS])
    return buf.getvalue()

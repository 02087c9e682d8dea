"""Where specviz's files live: the repository root and its data/ and docs/ folders.

specviz runs from its repository (or an editable install of it): data/ holds the bundled pair, the
catalogues, the chapter's tables and the samples; every module finds them from here.
"""

from __future__ import annotations

from pathlib import Path

#: the repository root: the folder that holds app.py, specviz/, data/ and docs/
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
DOCS = ROOT / "docs"

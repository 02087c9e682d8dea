"""The closed forms of speculative decoding: E[N] and speedup (``theory``), token trees (``trees``),
draft-length policies (``policies``), the roofline cost model of a pair on a GPU (``hardware``), the
source chapter's tables (``chapter``) and its glossary (``glossary``). numpy and pandas only: no torch,
plotly or streamlit (import-linter contracts in pyproject.toml)."""

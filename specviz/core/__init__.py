"""Speculative decoding's math and cost model (numpy and pandas only: no torch, plotly or streamlit)."""

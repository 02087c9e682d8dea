"""The published table's coverage against the regimes teams deploy (issue 57's growth targets)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specviz.core import published
from specviz.core.validation.coverage import TARGETS, coverage, under_load


def _rows() -> pd.DataFrame:
    # four rows: a vLLM step at B = 1 (dense), an SGLang EAGLE-3 loss at B = 8 (MoE),
    # an HF eager win at B = 1, a TensorRT-LLM step at a request rate with B = 1 (MoE)
    return pd.DataFrame(
        {
            "source_id": ["a", "b", "b", "c"],
            "kind": ["step", "speedup", "speedup", "step"],
            "stack": ["vllm", "sglang", "hf-transformers", "tensorrt-llm"],
            "target": [
                "meta-llama/Llama-3.1-8B-Instruct",
                "Qwen/Qwen3-30B-A3B",
                "lmsys/vicuna-7b-v1.3",
                "deepseek-ai/DeepSeek-R1",
            ],
            "batch": [1, 8, 1, 1],
            "request_rate": [np.nan, np.nan, np.nan, 2.0],
            "speedup": [np.nan, 0.9, 1.5, np.nan],
        }
    )


def test_each_measure_counts_what_it_names():
    got = coverage(_rows()).set_index("measure")["value"]
    assert got["rows"] == 4
    assert got["sources"] == 3
    assert got["serving engine"] == 0.75  # vllm, sglang, tensorrt-llm of four
    assert got["MoE target"] == 2
    assert got["under load"] == 2  # B = 8 and the request rate
    assert got["speculation loses"] == 1  # 0.9×, not the step rows' empty speedups


def test_priced_counts_only_the_rows_the_mask_keeps():
    frame = _rows()
    table = coverage(frame, frame["kind"] == "step").set_index("measure")
    assert table.loc["rows", "priced"] == 2
    assert table.loc["speculation loses", "priced"] == 0
    assert table.loc["speculation loses", "value"] == 1


def test_a_request_rate_is_load_and_batch_one_is_not():
    assert under_load(_rows()).tolist() == [False, True, False, True]


def test_met_follows_the_target():
    table = coverage(_rows()).set_index("measure")
    assert list(table.index) == list(TARGETS)
    assert not table.loc["rows", "met"]  # 4 < 250
    assert table.loc["serving engine", "met"]  # 75 % >= 60 %


def test_the_shipped_table_meets_the_size_targets():
    table = coverage(published.load_measurements()).set_index("measure")
    for measure in ("rows", "sources", "MoE target", "under load"):
        assert table.loc[measure, "met"], (measure, table.loc[measure, "value"])

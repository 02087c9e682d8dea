"""Errors and notes of specviz.app.share, specviz.data.measurements, specviz.data.store and specviz.app.overlays in English and Chinese.

Each error a page can show is an :class:`specviz.base.i18n.Message` (a ValueError; ``str()`` is the English text it
always had) and each returned note a :class:`specviz.base.i18n.Phrase` (a str, English); a page shows either with
``ui.message`` in its language. Each case pins what a person reads for one bad input (the fields filled in
the English text) and that the Chinese keeps every number and quoted input; that every message is
translated with the same fields is the catalogue check's job (specviz.base.catalogues).
"""

from __future__ import annotations

import codecs
import pickle
import re
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from specviz.app import overlays, share
from specviz.base import i18n
from specviz.data import library_file, measurements, store
from specviz.data.measurements import (
    READERS,
    Conversion,
    LoadReport,
    MeasurementError,
    RawColumn,
    RawTable,
    checks,
    load_measurements,
    load_records,
)
from specviz.data.measurements import load as load_module
from specviz.data.measurements.readers import log_lines
from specviz.data.measurements.schema import ALLOWED

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    ROOT / "specviz" / "app" / "share.py",
    *sorted((ROOT / "specviz" / "data" / "store").rglob("*.py")),
    ROOT / "specviz" / "app" / "overlays.py",
    *sorted((ROOT / "specviz" / "data" / "measurements").rglob("*.py")),
]
CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"(?<![\w])[A-Za-z]{3,}(?![\w])")  #: an English word (tests/base/test_i18n.py's rule)
#: Quoted texts that are themselves translated: how the report names an empty or a repeated header.
TRANSLATED_QUOTES = {"'(empty header, column 4)'", "'alpha [column 6]'"}


def load(text, **kw):
    return load_measurements(text.encode() if isinstance(text, str) else text, kw.pop("name", "t"), **kw)


def report(text, **kw):
    return load(text, **kw)[1]


def allowed(text, **kw):
    """The allowed texts of the bad cells of a file, as loaded (or as the error's report holds them)."""
    try:
        rep = report(text, **kw)
    except ValueError as exc:
        rep = exc.report
    return [e.allowed for e in rep.row_errors]


class Unreadable:
    def read(self, n=-1):
        raise OSError("disk on fire")


V1 = "SpecDecoding metrics: Mean acceptance length: 2.50, Accepted: 150 tokens, Drafted: 300 tokens"
V1_POS = (
    "SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 100 tokens, Drafted: 200 tokens, "
    "Per-position acceptance rate: 0.600, 0.300"
)
V0 = (
    "Speculative metrics: Draft acceptance rate: 0.607, System efficiency: 0.510, Number of speculative tokens: 4, "
    "Number of accepted tokens: 1200, Number of draft tokens: 1976, Number of emitted tokens: 2070."
)
SG = "Decode batch, #running-req: 3, #token: 1234, token usage: 0.05, accept len: 2.54, accept rate: 0.51, gen throughput (token/s): 87.12, #queue-req: 0"
SG_TREE = "Decode batch, #running-req: 3, #token: 1234, token usage: 0.05, accept len: 3.00, accept rate: 0.30, gen throughput (token/s): 87.12, #queue-req: 0"
LL = "draft acceptance = 0.64479 (  167 accepted /   259 generated), mean acceptance length = 2.92, acceptance rate per position = (0.805, 0.632, 0.483)"
LL_SHORT = "draft acceptance rate = 0.50000 (  100 accepted /   200 generated), mean acceptance length = 2.00"
JSON_OK = '{"model_id": "m-temp-0.0", "choices": [{"accept_lengths": [2, 3], "new_tokens": [10], "wall_time": [1.0]}]}'
BAD_ROWS = "label,k,alpha\n" + "".join(f"r{i},0,0.5\n" for i in range(7))

SAMPLE = str(measurements.SAMPLES_DIR / "published_chen2023.csv")
STR_IS_A_PATH = (
    f"upload: a str is read as the file's text, and {SAMPLE!r} is a file name; pass pathlib.Path({SAMPLE!r}) "
    "to read the file"
)

#: id -> (raise it, the English text a person reads)
ERRORS = {
    "share.check_work": (
        lambda: share.check_work("frontier", {"curves": 1500, "K values": 64}, 1024),
        "frontier: 1,500 curves × 64 K values = 96,000; at most 1,024 per view",
    ),
    "share.check_work_hint": (
        lambda: share.check_work("measurements to overlay", {"rows": 6000}, 5000, "select fewer runs"),
        "measurements to overlay: 6,000 rows; at most 5,000 per view: select fewer runs",
    ),
    "share.check_items": (
        lambda: share.check_items(share.Param("ks", [], "ints", lo=1, hi=64, max_items=3), [1, 2, 3, 4]),
        "ks: 4 values; at most 3 per view",
    ),
    "cells.empty": (lambda: load("  \n"), "t: the file is empty"),
    "cells.nul_bytes": (
        lambda: load(b"label,k\x00,alpha\n"),
        "t: this is not a text file (it holds NUL bytes); upload a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines",
    ),
    "cells.bad_bom": (
        lambda: load(codecs.BOM_UTF16_LE + b"a"),
        "t: this is not a text file (it starts with a utf-16 byte-order mark but is not valid utf-16: truncated data at byte 2); upload a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines",
    ),
    "cells.control": (
        lambda: load("label,k,alpha\n\x01\x02\x03\x04,2,0.5\n"),
        "t: this is not a text file (4 of its 25 characters are control characters); upload a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines",
    ),
    "cells.too_big": (
        lambda: load("label,k,alpha\nx,2,0.5\n", max_bytes=10),
        "t: the file is 22 bytes; the limit is max_bytes = 10 bytes (1e-05 MB)",
    ),
    "cells.str_is_a_path": (
        lambda: load_measurements(str(measurements.SAMPLES_DIR / "published_chen2023.csv")),
        STR_IS_A_PATH,
    ),
    "cells.no_file": (
        lambda: load_measurements(Path("/nonexistent/runs.csv"), "runs.csv"),
        "runs.csv: file '/nonexistent/runs.csv' does not exist or is not a file",
    ),
    "cells.data_type": (
        lambda: load_measurements(123),
        "data must be bytes, a str holding the file's text, or a path (os.PathLike); got int",
    ),
    "cells.file_object": (
        lambda: load_measurements(Unreadable(), "upload.csv"),
        "upload.csv: cannot read the file object: disk on fire",
    ),
    "load.name": (
        lambda: load_measurements(b"label,k,alpha\nx,2,0.5\n", ""),
        "name must be a non-empty str; got ''",
    ),
    "load.format": (
        lambda: load("label,k,alpha\nx,2,0.5\n", format="xlsx"),
        "format must be one of ['aiperf', 'aiperf_profile', 'auto', 'bench_speculative', 'csv', 'jsonl', 'llama.cpp', 'llama_cpp', 'llamacpp', 'llamacpp_log', 'log', 'modelopt', 'per_request_spec_decode_metrics', 'profile_export_aiperf', 'sglang', 'sglang-bench', 'sglang_bench', 'sglang_bench_speculative', 'sglang_log', 'spec-bench', 'spec_bench', 'speculation-profile', 'speculation_profile', 'speculation_profile.json', 'vllm', 'vllm bench serve', 'vllm-bench', 'vllm-request', 'vllm_bench', 'vllm_bench_serve', 'vllm_log', 'vllm_per_request', 'vllm_request', 'vllm_v0', 'vllm_v0_log']; got 'xlsx'",
    ),
    "load.k": (
        lambda: load("label,k,alpha\nx,2,0.5\n", k=2.5),
        "k must be an integer in [1, 2147483647]; got 2.5",
    ),
    "load.no_bonus": (
        lambda: load("label,k,alpha\nx,2,0.5\n", mean_tokens_without_bonus="yes"),
        "mean_tokens_without_bonus must be True or False; got 'yes'",
    ),
    "load.positive_int": (
        lambda: load("label,k,alpha\nx,2,0.5\n", max_rows=0),
        "max_rows must be an integer >= 1; got 0",
    ),
    "load.k_required": (
        lambda: load(V1),
        "t: k (the draft length K) is required for vLLM log lines, which do not state it; got k=None. Pass k=<integer >= 1>",
    ),
    "records.unknown": (
        lambda: load_records([{"label": "a", "k": 2, "bogus": 1}], "live"),
        "live: unknown column(s) ['bogus']; allowed: the measurement columns ['label', 'k', 'alpha', 'mean_accepted_tokens', 'acceptance_rate', 'c', 't_target_ms', 't_draft_ms', 't_verify_ms', 'speedup', 'tokens_per_s', 'baseline_tokens_per_s', 'temperature', 'batch_size', 'target_model', 'draft_model', 'hardware', 'method', 'notes'] …",
    ),
    "records.name": (
        lambda: load_records([{"label": "a", "k": 2, "alpha": 0.5}], " "),
        "name must be a non-empty str; got ' '",
    ),
    "csv.max_rows": (
        lambda: load("label,k,alpha\n" + "x,2,0.5\n" * 3, max_rows=2),
        "t: more than max_rows = 2 data rows; split the file or raise the limit",
    ),
    "csv.line": (
        lambda: load('label,k,alpha\n"' + "x" * 140000 + '",2,0.5\n'),
        "t: CSV line 2: field larger than field limit (131072)",
    ),
    "csv.missing_k": (
        lambda: load("label,alpha\nx,0.5\n"),
        "t: missing required column(s): k (draft length K; also read from: num_speculative_tokens, gamma, n_draft, draft_max, num_assistant_tokens, speculative_num_steps, …; or pass k=). Found columns: 'label', 'alpha'",
    ),
    "csv.missing_acceptance": (
        lambda: load("label,k,c\nx,2,5\n"),
        "t: missing required column(s): one of alpha, mean_accepted_tokens (mean acceptance length, accept_length, tau, …), acceptance_rate (draft_acceptance_rate, accept %, …), or a measured speedup (speedup, or tokens_per_s with baseline_tokens_per_s). Found columns: 'label', 'k', 'c'",
    ),
    "csv.missing_both": (
        lambda: load("label,notes\nx,y\n"),
        "t: missing required column(s): k (draft length K; also read from: num_speculative_tokens, gamma, n_draft, draft_max, num_assistant_tokens, speculative_num_steps, …; or pass k=); one of alpha, mean_accepted_tokens (mean acceptance length, accept_length, tau, …), acceptance_rate (draft_acceptance_rate, accept %, …), or a measured speedup (speedup, or tokens_per_s with baseline_tokens_per_s). Found columns: 'label', 'notes'",
    ),
    "csv.no_data_rows": (
        lambda: load("label,k,alpha\n"),
        "t: no data rows (only a header?)",
    ),
    "csv.no_usable_row": (
        lambda: load("label,k,alpha\nx,0,0.5\ny,2,1.5\n"),
        "t: no usable row — all 2 row(s) have errors: row 2, k: '0' — allowed: an integer in [1, 2147483647]; row 3, alpha: '1.5' — allowed: [0, 1] (a column wholly in percent is read as percent)",
    ),
    "csv.no_usable_row_more": (
        lambda: load(BAD_ROWS),
        "t: no usable row — all 7 row(s) have errors: row 2, k: '0' — allowed: an integer in [1, 2147483647]; row 3, k: '0' — allowed: an integer in [1, 2147483647]; row 4, k: '0' — allowed: an integer in [1, 2147483647]; row 5, k: '0' — allowed: an integer in [1, 2147483647]; row 6, k: '0' — allowed: an integer in [1, 2147483647] (and 2 more)",
    ),
    "checks.no_k": (
        lambda: checks.check_table(
            RawTable([2], {"alpha": RawColumn("alpha", "alpha", ["0.5"])}), LoadReport("t"), "t", False, None
        ),
        "t: no draft length K (column 'k') and no k given",
    ),
    "log.max_rows": (
        lambda: load("\n".join([V1] * 3), k=3, max_rows=2),
        "t: more than max_rows = 2 'SpecDecoding metrics' (vLLM V1) or 'Speculative metrics' (vLLM V0) lines",
    ),
    "log.no_line": (
        lambda: load("nothing here", format="vllm_log", k=3),
        "t: no 'SpecDecoding metrics' (vLLM V1) or 'Speculative metrics' (vLLM V0) line found",
    ),
    "log.no_line_llamacpp": (
        lambda: load("nothing here", format="llamacpp", k=3),
        "t: no llama.cpp 'draft acceptance' or 'statistics' line found",
    ),
    "sglang.no_accept_len": (
        lambda: load(
            "Decode batch, #running-req: 1, #token: 10, token usage: 0.01, gen throughput (token/s): 5.0, #queue-req: 0",
            format="sglang",
            k=3,
        ),
        "t: no SGLang 'Decode batch' line has 'accept len' (speculative decoding was off); a metrics line looks like 'Decode batch, #running-req: 3, …, accept len: 2.54, …'",
    ),
    "spec_bench.max_rows": (
        lambda: load(JSON_OK + "\n" + JSON_OK, k=2, max_rows=1),
        "t: more than max_rows = 1 JSON lines",
    ),
    "spec_bench.no_usable_row": (
        lambda: load('{"x": 1}\n', k=2),
        "t: no usable row — all 1 row(s) have errors: row 1, choices: 'null' — allowed: a non-empty list of objects (Spec-Bench answer file)",
    ),
    "store.bad_url": (
        lambda: store.open_library("not a url::"),
        "SPECVIZ_DB_URL must be a SQLAlchemy database URL such as sqlite:///path/runs.sqlite; got 'not a url::'",
    ),
    "store.in_memory": (
        lambda: store.open_library("sqlite://"),
        "SPECVIZ_DB_URL=sqlite://: an in-memory SQLite database is private to one connection, so sessions would not share it; give a file, e.g. sqlite:////srv/specviz/runs.sqlite",
    ),
    "store.no_driver": (
        lambda: store.open_library("postgresql+nosuchdriver://u@h/db"),
        "the database driver for 'postgresql+nosuchdriver' (SPECVIZ_DB_URL) is not installed: Can't load plugin: sqlalchemy.dialects:postgresql.nosuchdriver",
    ),
    "store.empty_run": (
        lambda: store.save_run(None, pd.DataFrame(), label="x", source="s"),
        "a run needs at least one measurement row; got an empty table",
    ),
    "store.unknown_columns": (
        lambda: store.save_run(None, pd.DataFrame({"zz": [1]}), label="x", source="s"),
        "columns ['zz'] are not measurement columns; allowed: the columns of specviz.data.measurements (load the file with load_measurements first)",
    ),
    "store.required_column": (
        lambda: store.save_run(None, pd.DataFrame({"label": ["a"]}), label="x", source="s"),
        "column 'k' is required in a saved run",
    ),
    "store.run_name": (
        lambda: store.save_run(None, pd.DataFrame({"label": ["a"], "k": [2]}), label=" ", source="s"),
        "run name must be 1 to 200 characters; got ''",
    ),
    "store.surrogate_note": (
        lambda: store.save_run(None, pd.DataFrame({"label": ["a"], "k": [2]}), label="a", source="s", note="n\udc00"),
        "note 'n\\udc00' is not valid Unicode text (it holds a lone surrogate)",
    ),
    "overlays.rows": (
        lambda: overlays.with_series(
            pd.DataFrame({"label": ["a"] * 5001, "k": [2] * 5001, "alpha_used": [0.5] * 5001, "c_used": [5.0] * 5001})
        ),
        "measurements to overlay: 5,001 rows; at most 5,000 per view: select fewer runs",
    ),
}

#: id -> (return it, the English text a person reads)
PHRASES = {
    "share.decode": (
        lambda: share.decode((share.Param("alpha", 0.8, lo=0.0, hi=1.0),), {"alpha": "1.5"})[1]["alpha"],
        "Ignored URL parameter alpha='1.5': it must be a number in [0, 1]. Using the default 0.8.",
    ),
    "share.decode_empty": (
        lambda: share.decode((share.Param("t", "", "text", hi=4),), {"t": "x" * 70})[1]["t"],
        "Ignored URL parameter t='xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'… (70 characters): it must be text of at most 4 characters. Using the default (empty).",
    ),
    "share.decode_choice": (
        lambda: share.decode((share.Param("view", "Map", "choice", choices=("Map", "Curves")),), {"view": "Pie"})[1][
            "view"
        ],
        "Ignored URL parameter view='Pie': it must be one of Map, Curves. Using the default Map.",
    ),
    "share.decode_range": (
        lambda: share.decode((share.Param("r", (0.0, 1.0), "range", lo=0.0, hi=1.0),), {"r": "0.5"})[1]["r"],
        "Ignored URL parameter r='0.5': it must be two numbers lo,hi with lo < hi in [0, 1]. Using the default 0,1.",
    ),
    "share.allowed_ints": (
        lambda: share.Param("ks", [], "ints", lo=1, hi=64, max_items=3).allowed(),
        "at most 3 comma-separated integers in [1, 64]",
    ),
    "share.clean_list": (
        lambda: share.clean_list(
            share.Param("ks", [], "ints", lo=1, hi=64, max_items=3), ["a", "b", "c", "d", "e", "f", 1, 2, 3, 4, 5]
        )[1],
        "Ignored ks value(s) 'a', 'b', 'c', 'd', 'e' and 1 more: each must be an integer in [1, 64]. Kept the first 3 of 5 ks values: at most 3 are allowed.",
    ),
    "share.clean_list_kept": (
        lambda: share.clean_list(share.Param("cs", [1.0], "floats", lo=0.5, hi=100.0, max_items=2), [1, 2, 3])[1],
        "Kept the first 2 of 3 cs values: at most 2 are allowed.",
    ),
    "report.headline": (
        lambda: report("name;K;accept %\nx;2;50,5\n").headline,
        "t: read 1 row(s) (csv, utf-8, delimiter ';', decimal comma); loaded 1, skipped 0.",
    ),
    "report.headline_tab": (
        lambda: report("label\tk\talpha\nx\t2\t0.5\n").headline,
        "t: read 1 row(s) (csv, utf-8, delimiter tab); loaded 1, skipped 0.",
    ),
    "report.mapped": (
        lambda: report("name,K,accept %\nx,2,50\n").mapped_text,
        "Mapped columns: 'name' → label, 'K' → k, 'accept %' → acceptance_rate.",
    ),
    "report.conversions": (
        lambda: report("label,K,alpha (%),t_target_s,c_L\nx,2,50,0.01,0.2\n").conversions_text,
        "Conversions: 'alpha (%)': percent (the header says percent) divided by 100; 't_target_s': ms = s × 1000; 'c_L': c = 1 / c_L.",
    ),
    "report.ignored": (
        lambda: report("label,k,alpha,,junk,alpha,speedup_ratio,K\nx,2,0.5,,1,0.6,1,3\n").ignored_text,
        "Ignored columns: '(empty header, column 4)' (empty header), 'junk' (unknown column), 'speedup_ratio' (derived column, recomputed on load), 'alpha [column 6]' (duplicate of 'alpha' (both map to alpha; the first is used)), 'K' (duplicate of 'k' (both map to k; the first is used)).",
    ),
    "report.row_error": (
        lambda: report("label,k,alpha\nx,2,0.5\ny,2,1.5\n").row_errors[0].phrase(),
        "row 3, alpha: '1.5' — allowed: [0, 1] (a column wholly in percent is read as percent)",
    ),
    "checks.number": (
        lambda: allowed("label,k,alpha,c\nx,2,0.5,abc\ny,2,0.5,5\n")[0],
        "a number; a finite number > 0",
    ),
    "checks.required": (
        lambda: allowed("label,k,alpha\nx,,0.5\ny,2,0.5\n")[0],
        "required: an integer in [1, 2147483647]",
    ),
    "checks.k_plus_one": (
        lambda: allowed("label,speculative_num_draft_tokens,alpha\nx,1,0.5\ny,3,0.5\n")[0],
        "an integer >= 2 (= K + 1; speculative_num_draft_tokens counts the root token)",
    ),
    "checks.no_bonus": (
        lambda: allowed("label,k,mean_tokens_no_bonus\nx,4,9\ny,4,2\n")[0],
        "[0, 4] (mean acceptance length without the bonus token; E[N] = value + 1 in [1, 5])",
    ),
    "checks.mean": (
        lambda: allowed("label,k,mean_accepted_tokens\nx,2,3.5\ny,2,2\n")[0],
        "[1, 3] (E[N], bonus token counted, K = 2)",
    ),
    "checks.efficiency": (
        lambda: allowed("label,k,system_efficiency\nx,3,0.1\ny,3,0.5\n")[0],
        "[1/4, 1] (E[N] / (K + 1))",
    ),
    "checks.per_round": (
        lambda: allowed("label,k,alpha,predicted_tokens_per_round\nx,4,0.5,9\ny,4,0.5,2\n")[0],
        "[1, 5] (tokens per round, K = 4)",
    ),
    "checks.depth": (
        lambda: allowed("label,k,alpha,tree_depth\nx,4,0.5,9\ny,4,0.5,2\n")[0],
        "an integer in [1, 4] (a tree of K = 4 drafts)",
    ),
    "checks.unit": (
        lambda: allowed("label,k,alpha,t_target_s\nx,4,0.5,-1\ny,4,0.5,2\n")[0],
        "a finite number > 0 (s)",
    ),
    "checks.percent": (
        lambda: allowed("label,k,alpha\nx,4,-0.5\ny,4,0.5\n")[0],
        "[0, 1] (a column wholly in percent is read as percent)",
    ),
    "checks.positions": (
        lambda: allowed("label,k,alpha,per_position_acceptance\nx,3,0.5,0.5;0.4\ny,3,0.5,\n")[0],
        "3 numbers in [0, 1] (or nan) separated by ';'",
    ),
    "checks.bool": (
        lambda: allowed("label,k,alpha,greedy_exact\nx,3,0.5,maybe\ny,3,0.5,\n")[0],
        "true / false (or empty)",
    ),
    "checks.measure": (
        lambda: allowed("label,k,alpha\nx,3,\ny,3,0.5\n")[0],
        "one of alpha, mean_accepted_tokens, acceptance_rate or speedup (all empty in this row)",
    ),
    "checks.c_l_inverse": (
        lambda: allowed("label,k,alpha,c_L\nx,3,0.5,1e-320\ny,3,0.5,0.5\n")[0],
        "a c_L whose inverse c = 1 / c_L is finite",
    ),
    "checks.percent_mixed": (
        lambda: report("label,k,alpha\nx,2,0.5\ny,2,50\n").warnings[0],
        "'alpha' mixes values in (0, 1) (e.g. row 2) with values > 1, so it is not read as percent and the values > 1 are errors; if the column is in percent, write '%' in its header",
    ),
    "checks.speedup_only": (
        lambda: report("label,k,alpha,speedup\nx,2,,1.5\ny,2,0.5,1.2\n").warnings[0],
        "row(s) 2 give a speedup but no acceptance figure (alpha, mean accepted tokens or acceptance rate): loaded as speedup-only rows, without α or a prediction",
    ),
    "checks.disagree": (
        lambda: report("label,k,mean_accepted_tokens,acceptance_rate\nx,4,2.0,0.9\n").warnings[0],
        "mean_accepted_tokens and acceptance_rate disagree (E[N] ≠ 1 + r·K by more than 2 %) in row(s) 2; alpha_used comes from mean_accepted_tokens",
    ),
    "checks.disagree_sglang": (
        lambda: report("label,k,mean_accepted_tokens,acceptance_rate\nx,3,2.0,0.5\n").warnings[0],
        "mean_accepted_tokens and acceptance_rate disagree (E[N] ≠ 1 + r·K by more than 2 %) in row(s) 2; alpha_used comes from mean_accepted_tokens — they fit E[N] / (K + 1), SGLang's 'accept rate': name that column 'sglang_accept_rate'",
    ),
    "checks.labels": (
        lambda: report("label,k,alpha\n,2,0.5\n").conversions_text,
        "Conversions: 1 empty label set to 't'.",
    ),
    "derive.v": (
        lambda: report("label,k,alpha,c,t_target_ms,t_verify_ms\nx,2,0.5,5,10,12\n").conversions_text,
        "Conversions: v = max(0, (t_verify_ms / t_target_ms − 1) / K) for 1 row(s).",
    ),
    "csv.extra_fields": (
        lambda: allowed("label,k,alpha\nx,2,0.5,extra\ny,2,0.5\n")[0],
        "at most 3 fields (the header's count); this row has 4",
    ),
    "csv.k_given": (
        lambda: report("label,k,alpha\nx,2,0.5\n", k=3).warnings[0],
        "k = 3 was given but the file has a K column ('k'); the file's values are used",
    ),
    "csv.speedup_ratio": (
        lambda: report("label,k,alpha,speedup_ratio\nx,2,0.5,1.2\n").warnings[0],
        "'speedup_ratio' is read as specviz's derived speedup_ratio (measured ÷ predicted) and recomputed; name a measured speedup column 'speedup'",
    ),
    "csv.mixed_decimal": (
        lambda: report("label;k;alpha;c\nx;2;0,5;5.5\ny;2;0.5;5\n").warnings[0],
        "numeric cells use both ',' (1) and '.' (2) as decimal separator; cells with ',' are not read as numbers",
    ),
    "log.positions_length": (
        lambda: allowed(V1_POS, k=4)[0],
        "the K this line was logged with: its per-position acceptance rate lists 2 per-position rates",
    ),
    "log.k_mismatch": (
        lambda: allowed(V1, k=5)[0],
        "the K this line was logged with: mean length 2.5 and accepted/drafted 0.5 imply K ≈ 3.00 (E[N] = 1 + K·accepted/drafted)",
    ),
    "log.stated_k": (
        lambda: allowed(V0, k=3)[0],
        "the K this line states (Number of speculative tokens: 4); k=3 was given",
    ),
    "log.positions_sum": (
        lambda: report(V1_POS, k=2).warnings[0],
        "vLLM: the per-position rates do not sum to mean length − 1, as unconditional rates p_i must (Σ p_i = E[N] − 1); they are read as unconditional all the same (line(s) 1)",
    ),
    "log.conversions": (
        lambda: report(V1_POS, k=2).conversions_text,
        "Conversions: per-position acceptance (unconditional p_i, as the engine logs it) → conditional a_i = p_i / p_(i−1); k = 2 (given by the caller) for the lines that do not state K; no label column: label = 't' for every row.",
    ),
    "vllm.v0_counts": (
        lambda: report(V0).warnings[0],
        "vLLM V0 line whose counts contradict its printed ratios (system efficiency ≠ E / (R·(K + 1)), draft acceptance rate ≠ A / D, or accepted prefixes E − R > accepted positions A); E[N] and r come from the counts (line(s) 1)",
    ),
    "sglang.k": (
        lambda: allowed(SG, k=5)[0],
        "the K this line was logged with: accept len 2.54 / accept rate 0.51 = 4.87–5.09 verified tokens per round, fewer than K + 1 = 6",
    ),
    "sglang.tree": (
        lambda: report(SG_TREE, k=3).warnings[0],
        "SGLang: accept len / accept rate (= speculative_num_draft_tokens) is more than K + 1: a tree (--speculative-eagle-topk > 1) verifies more tokens than its depth + 1, or k is less than --speculative-num-steps; accept len is read as E[N] of depth K (line(s) 1)",
    ),
    "llamacpp.k": (
        lambda: allowed(LL.replace("acceptance rate per position = (0.805, 0.632, 0.483)", ""), k=2)[0],
        "the K this line was logged with: mean length 2.92 and accepted/generated 0.6448 imply 2.98 drafted tokens per round (E[N] − 1) / r, more than K",
    ),
    "llamacpp.short_drafts": (
        lambda: report(LL_SHORT, k=4).warnings[0],
        "llama.cpp drafted fewer than K tokens per round on average (drafts stopped early: --draft-p-min, n-gram drafts), so E[N] ≠ 1 + K·r and the chain model's α is approximate (line(s) 1)",
    ),
    "spec_bench.skipped": (
        lambda: report(JSON_OK + "\nnot json\n[1]\n", k=2).warnings[0],
        "2 JSON lines skipped (see row errors); the rows pool the others",
    ),
    "spec_bench.allowed0": (
        lambda: allowed(JSON_OK + "\nnot json\n[1]\n", k=2)[0],
        "one JSON object per line",
    ),
    "spec_bench.allowed1": (
        lambda: allowed(JSON_OK + "\nnot json\n[1]\n", k=2)[1],
        "a JSON object ({...}) per line",
    ),
    "spec_bench.conversions": (
        lambda: report(JSON_OK, k=2).conversions_text,
        "Conversions: temperature 0.0 read from model_id 'm-temp-0.0'; Spec-Bench: mean_accepted_tokens = mean of accept_lengths over all steps (bonus counted); tokens_per_s = mean over questions of Σ new_tokens / Σ wall_time; k = 2 for every row (given by the caller).",
    ),
}

#: Case-id prefixes whose errors keep their own ValueError subclass (callers catch it by name).
ERROR_TYPES = {
    "cells.": MeasurementError,
    "csv.": MeasurementError,
    "log.": MeasurementError,
    "sglang.": MeasurementError,
    "spec_bench.": MeasurementError,
    "checks.": MeasurementError,
    "load.k_required": MeasurementError,
    "store.": store.StoreError,
}
KEY_LITERAL = re.compile(r"""["']((?:err|note)\.(?:share|measurements|store|overlays)\.[\w.]+)["']""")


def quoted_and_numbers(english: str) -> list[str]:
    """The quoted inputs ('…') and numbers of an English text: the Chinese must show each as it is."""
    return [t for t in re.findall(r"(?<![A-Za-z])'[^']*'|\d+(?:[.,]\d+)*", english) if t not in TRANSLATED_QUOTES]


def assert_chinese(item: i18n.Message | i18n.Phrase, english: str) -> None:
    zh = item.text("zh")
    assert CJK.search(zh) or not WORD.search(english), zh
    missing = [t for t in quoted_and_numbers(english) if t not in zh]
    assert not missing, f"{missing} not in {zh!r}"


def in_both_catalogues(msgid: str) -> bool:
    return i18n.translated("zh", msgid)


@pytest.mark.parametrize("case", ERRORS)
def test_an_error_reads_as_before_in_english_and_shows_in_chinese(case):
    make, english = ERRORS[case]
    with pytest.raises(ValueError) as info:
        make()
    exc = info.value
    assert str(exc) == english
    assert isinstance(exc, i18n.Message) and in_both_catalogues(exc.msgid)
    for prefix, kind in ERROR_TYPES.items():
        if case.startswith(prefix):
            assert isinstance(exc, kind), type(exc)
    assert i18n.localized(exc, "en") == english
    assert_chinese(exc, english)


@pytest.mark.parametrize("case", PHRASES)
def test_a_note_reads_as_before_in_english_and_shows_in_chinese(case):
    make, english = PHRASES[case]
    note = make()
    assert note == english and isinstance(note, i18n.Phrase) and in_both_catalogues(note.msgid)
    assert i18n.localized(note, "en") == english
    assert_chinese(note, english)


def test_every_hover_label_is_translated():
    for column, label in overlays.HOVER_FIELDS.items():
        assert overlays.hover_label(column) == label and in_both_catalogues(overlays.HOVER_LABELS[column])


def test_texts_that_are_also_data_keep_their_english():
    """Conversion values, ALLOWED (docs), reader titles and POSITIONS_SUM_WARNING read as before."""
    for conversion in Conversion:
        assert conversion.phrase == conversion.value
    assert isinstance(Conversion.ADD_BONUS.phrase, i18n.Phrase) and CJK.search(Conversion.ADD_BONUS.phrase.text("zh"))
    for column, text in ALLOWED.items():
        assert checks.allowed_phrase(column) == text, column
    for reader in READERS.values():
        assert load_module._title(reader) == reader.title
    assert log_lines.positions_sum_warning("vLLM") == "vLLM: " + log_lines.POSITIONS_SUM_WARNING


def test_a_report_and_its_errors_survive_pickling_in_both_languages():
    """Pages cache parsed uploads (pickled): the report's texts, and errors, keep their key and fields."""
    rep = report("label,k,alpha (%),junk\nx,2,50,1\n,2,0.5,1\ny,0,0.5,1\n")
    again = pickle.loads(pickle.dumps(rep))
    for a, b in [
        (rep.headline, again.headline),
        (rep.conversions_text, again.conversions_text),
        (rep.ignored_text, again.ignored_text),
        (rep.row_errors[0].allowed, again.row_errors[0].allowed),
    ]:
        assert a == b and a.text("zh") == b.text("zh") and CJK.search(b.text("zh"))
    with pytest.raises(MeasurementError) as info:
        load("label,k,alpha\n")
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is MeasurementError and str(back) == str(info.value) and back.text("zh") == info.value.text("zh")
    assert back.report.name == "t"
    plain = MeasurementError("plain text")  # still built from a plain str, as before
    assert plain.text("zh") == str(plain) == "plain text" and plain.report is None


def test_store_errors_keep_their_class_and_read_in_chinese(tmp_path):
    path = str(tmp_path / "runs.sqlite")
    Path(path).touch()
    gone = library_file.problem(path + "-moved", (1, 2))
    assert gone.startswith(f"the run library file {path}-moved was deleted while the server was running")
    assert CJK.search(gone.text("zh")) and path in gone.text("zh")
    with pytest.raises(store.StoreError) as info, store.errors.reported("listing the run library failed: {cause}"):
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("database is locked"))
    assert str(info.value) == "listing the run library failed: database is locked"
    assert info.value.text("zh") == "列出运行库失败：database is locked"
    engine = store.open_library(f"sqlite:///{tmp_path / 'lib.sqlite'}")
    with pytest.raises(store.StoreError) as info:
        store.load_runs(engine, [7, 8])
    assert str(info.value) == "run id(s) [7, 8] are not in the library (deleted by someone else?)"
    assert info.value.text("zh") == "运行 [7, 8] 不在运行库中（已被别人删除？）"
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is store.StoreError and back.text("zh") == info.value.text("zh")
    engine.dispose()
    plain = store.StoreError("cannot open the run library at x: y")  # a plain text, as before
    assert str(plain) == plain.text("zh") == "cannot open the run library at x: y"
    assert str(pickle.loads(pickle.dumps(plain))) == str(plain)


def test_overlay_hover_labels_in_the_pages_language():
    frame = load("label,k,alpha,c\nrun a,2,0.5,5\n")[0]
    assert overlays.hover_text(frame).iloc[0].startswith("label: run a<br>K: 2<br>")
    zh = overlays.with_series(frame, lang="zh")["hover"].iloc[0]
    assert zh.startswith("标签: run a<br>K: 2<br>") and "所用 α: 0.5" in zh


def _url_and_list_notes_app():
    from specviz.app import share, ui

    ui.restore("p", (share.Param("alpha", 0.8, lo=0.0, hi=1.0),))
    ui.multiselect("p", share.Param("ks", [], "ints", lo=1, hi=64, max_items=3), "K", [1, 2, 100])


@pytest.mark.parametrize(
    ("lang", "url_note", "list_note"),
    [
        (
            "en",
            "Ignored URL parameter alpha='1.5': it must be a number in [0, 1]. Using the default 0.8.",
            "Ignored ks value(s) '100': each must be an integer in [1, 64].",
        ),
        (
            "zh",
            "忽略了 URL 参数 alpha='1.5'：它必须是 [0, 1] 内的数。改用默认值 0.8。",
            "忽略了 ks 的值 '100'：每个值都必须是 [1, 64] 内的整数。",
        ),
    ],
)
def test_restore_and_multiselect_show_their_notes_in_the_sessions_language(lang, url_note, list_note):
    at = AppTest.from_function(_url_and_list_notes_app)
    at.query_params["lang"] = lang
    at.query_params["alpha"] = "1.5"
    at.run()
    assert not at.exception and [w.value for w in at.warning] == [url_note]
    at.multiselect[0].set_value([1, 100]).run()
    assert not at.exception and at.multiselect[0].value == [1]
    assert list_note in [w.value for w in at.warning]

"""Errors and notes of specviz.app.share, specviz.data.measurements, specviz.data.store and specviz.app.overlays in English and Chinese.

Each error a page can show is an :class:`specviz.base.i18n.Message` (a ValueError; ``str()`` is the English text it
always had) and each returned note a :class:`specviz.base.i18n.Phrase` (a str, English); a page shows either with
``ui.message`` in its language. Each case pins what a person reads for one bad input (the fields filled in
the English text) and that the Chinese keeps every number and quoted input; that every message is
translated with the same fields is the catalogue check's job (specviz.base.catalogues).
"""

from __future__ import annotations

import codecs
import csv
import pickle
import re
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from _messages import Raised, caught, expect, inner, joined
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

CJK = re.compile(r"[\u4e00-\u9fff]")


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

#: id -> (raise it, msgid, fields, what both the English and the Chinese text show)
ERRORS = {
    "share.check_work": (
        lambda: share.check_work("frontier", {"curves": 1500, "K values": 64}, 1024),
        "{what}: {terms} = {work:,}; at most {cap:,} per view",
        {
            "what": "frontier",
            "terms": inner(
                "{a} × {b}", a=inner("{n:,} {u}", n=1500, u="curves"), b=inner("{n:,} {u}", n=64, u="K values")
            ),
            "work": 96000,
            "cap": 1024,
        },
        ("frontier", "1,500", "curves", "64", "K values", "96,000", "1,024"),
    ),
    "share.check_work_hint": (
        lambda: share.check_work("measurements to overlay", {"rows": 6000}, 5000, "select fewer runs"),
        "{what}: {terms}; at most {cap:,} per view: {hint}",
        {
            "what": "measurements to overlay",
            "terms": inner("{n:,} {u}", n=6000, u="rows"),
            "cap": 5000,
            "hint": "select fewer runs",
        },
        ("measurements to overlay", "6,000", "rows", "5,000", "select fewer runs"),
    ),
    "share.check_items": (
        lambda: share.check_items(share.Param("ks", [], "ints", lo=1, hi=64, max_items=3), [1, 2, 3, 4]),
        "{what}: {terms}; at most {cap:,} per view",
        {"what": "ks", "terms": inner("{n:,} {u}", n=4, u=inner("values")), "cap": 3},
        ("ks", "4", "3"),
    ),
    "cells.empty": (lambda: load("  \n"), "{name}: the file is empty", {"name": "t"}, ()),
    "cells.nul_bytes": (
        lambda: load(b"label,k\x00,alpha\n"),
        "{name}: this is not a text file ({why}); upload a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines",
        {"name": "t", "why": inner("it holds NUL bytes")},
        (),
    ),
    "cells.bad_bom": (
        lambda: load(codecs.BOM_UTF16_LE + b"a"),
        "{name}: this is not a text file ({why}); upload a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines",
        {
            "name": "t",
            "why": inner(
                "it starts with a {encoding} byte-order mark but is not valid {encoding}: {reason} at byte {byte}",
                encoding="utf-16",
                reason="truncated data",
                byte=2,
            ),
        },
        ("utf-16", "truncated data", "2"),
    ),
    "cells.control": (
        lambda: load("label,k,alpha\n\x01\x02\x03\x04,2,0.5\n"),
        "{name}: this is not a text file ({why}); upload a CSV (comma, semicolon or tab), Spec-Bench JSON lines, or vLLM 'SpecDecoding metrics' log lines",
        {"name": "t", "why": inner("{bad} of its {chars} characters are control characters", bad=4, chars=25)},
        ("4", "25"),
    ),
    "cells.too_big": (
        lambda: load("label,k,alpha\nx,2,0.5\n", max_bytes=10),
        "{name}: the file is {size:,} bytes; the limit is max_bytes = {max_bytes:,} bytes ({mb:g} MB)",
        {"name": "t", "size": 22, "max_bytes": 10, "mb": 1e-05},
        ("22", "10", "1e-05"),
    ),
    "cells.str_is_a_path": (
        lambda: load_measurements(str(measurements.SAMPLES_DIR / "published_chen2023.csv")),
        "{name}: a str is read as the file's text, and {data!r} is a file name; pass pathlib.Path({data!r}) to read the file",
        {"name": "upload", "data": SAMPLE},
        ("upload", repr(SAMPLE)),
    ),
    "cells.no_file": (
        lambda: load_measurements(Path("/nonexistent/runs.csv"), "runs.csv"),
        "{name}: file {path!r} does not exist or is not a file",
        {"name": "runs.csv", "path": "/nonexistent/runs.csv"},
        ("'/nonexistent/runs.csv'",),
    ),
    "cells.data_type": (
        lambda: load_measurements(123),
        "data must be bytes, a str holding the file's text, or a path (os.PathLike); got {type}",
        {"type": "int"},
        ("int",),
    ),
    "cells.file_object": (
        lambda: load_measurements(Unreadable(), "upload.csv"),
        "{name}: cannot read the file object: {cause}",
        {"name": "upload.csv", "cause": Raised(OSError, "disk on fire")},
        ("upload.csv", "disk on fire"),
    ),
    "load.name": (
        lambda: load_measurements(b"label,k,alpha\nx,2,0.5\n", ""),
        "name must be a non-empty str; got {name!r}",
        {"name": ""},
        ("''",),
    ),
    "load.format": (
        lambda: load("label,k,alpha\nx,2,0.5\n", format="xlsx"),
        "format must be one of {formats}; got {format!r}",
        {
            "formats": [
                "aiperf",
                "aiperf_profile",
                "auto",
                "bench_speculative",
                "csv",
                "jsonl",
                "llama.cpp",
                "llama_cpp",
                "llamacpp",
                "llamacpp_log",
                "log",
                "measurement_jsonl",
                "modelopt",
                "per_request_spec_decode_metrics",
                "profile_export_aiperf",
                "schema-jsonl",
                "schema_jsonl",
                "sglang",
                "sglang-bench",
                "sglang_bench",
                "sglang_bench_speculative",
                "sglang_log",
                "spec-bench",
                "spec_bench",
                "speculation-profile",
                "speculation_profile",
                "speculation_profile.json",
                "vllm",
                "vllm bench serve",
                "vllm-bench",
                "vllm-request",
                "vllm_bench",
                "vllm_bench_serve",
                "vllm_log",
                "vllm_per_request",
                "vllm_request",
                "vllm_v0",
                "vllm_v0_log",
            ],
            "format": "xlsx",
        },
        ("'xlsx'",),
    ),
    "load.k": (
        lambda: load("label,k,alpha\nx,2,0.5\n", k=2.5),
        "k must be an integer in [1, {limit}]; got {k!r}",
        {"limit": 2147483647, "k": 2.5},
        ("2147483647", "2.5"),
    ),
    "load.no_bonus": (
        lambda: load("label,k,alpha\nx,2,0.5\n", mean_tokens_without_bonus="yes"),
        "mean_tokens_without_bonus must be True or False; got {value!r}",
        {"value": "yes"},
        ("'yes'",),
    ),
    "load.positive_int": (
        lambda: load("label,k,alpha\nx,2,0.5\n", max_rows=0),
        "{what} must be an integer >= 1; got {value!r}",
        {"what": "max_rows", "value": 0},
        ("max_rows", "0"),
    ),
    "load.k_required": (
        lambda: load(V1),
        "{name}: {title} do not state the draft length K, and no K was given: set K for files that do not state it (a whole number of at least 1)",
        {"name": "t", "title": inner("vLLM log lines")},
        (),
    ),
    "records.unknown": (
        lambda: load_records([{"label": "a", "k": 2, "bogus": 1}], "live"),
        "{name}: unknown column(s) {unknown}; allowed: the measurement columns {allowed} …",
        {
            "name": "live",
            "unknown": ["bogus"],
            "allowed": [
                "label",
                "k",
                "alpha",
                "mean_accepted_tokens",
                "acceptance_rate",
                "c",
                "t_target_ms",
                "t_draft_ms",
                "t_verify_ms",
                "speedup",
                "tokens_per_s",
                "baseline_tokens_per_s",
                "temperature",
                "batch_size",
                "target_model",
                "draft_model",
                "hardware",
                "method",
                "notes",
            ],
        },
        ("live", "['bogus']"),
    ),
    "records.name": (
        lambda: load_records([{"label": "a", "k": 2, "alpha": 0.5}], " "),
        "name must be a non-empty str; got {name!r}",
        {"name": " "},
        ("' '",),
    ),
    "csv.max_rows": (
        lambda: load("label,k,alpha\n" + "x,2,0.5\n" * 3, max_rows=2),
        "{name}: more than max_rows = {max_rows:,} data rows; split the file or raise the limit",
        {"name": "t", "max_rows": 2},
        ("2",),
    ),
    "csv.line": (
        lambda: load('label,k,alpha\n"' + "x" * 140000 + '",2,0.5\n'),
        "{name}: CSV line {line}: {cause}",
        {"name": "t", "line": 2, "cause": Raised(csv.Error, "field larger than field limit (131072)")},
        ("field larger than field limit (131072)",),
    ),
    "csv.missing_k": (
        lambda: load("label,alpha\nx,0.5\n"),
        "{name}: missing required column(s): k (draft length K; also read from: num_speculative_tokens, gamma, n_draft, draft_max, num_assistant_tokens, speculative_num_steps, …; or pass k=). Found columns: {found}",
        {"name": "t", "found": "'label', 'alpha'"},
        ("'label', 'alpha'",),
    ),
    "csv.missing_acceptance": (
        lambda: load("label,k,c\nx,2,5\n"),
        "{name}: missing required column(s): one of alpha, mean_accepted_tokens (mean acceptance length, accept_length, tau, …), acceptance_rate (draft_acceptance_rate, accept %, …), or a measured speedup (speedup, or tokens_per_s with baseline_tokens_per_s). Found columns: {found}",
        {"name": "t", "found": "'label', 'k', 'c'"},
        ("'label', 'k', 'c'",),
    ),
    "csv.missing_both": (
        lambda: load("label,notes\nx,y\n"),
        "{name}: missing required column(s): k (draft length K; also read from: num_speculative_tokens, gamma, n_draft, draft_max, num_assistant_tokens, speculative_num_steps, …; or pass k=); one of alpha, mean_accepted_tokens (mean acceptance length, accept_length, tau, …), acceptance_rate (draft_acceptance_rate, accept %, …), or a measured speedup (speedup, or tokens_per_s with baseline_tokens_per_s). Found columns: {found}",
        {"name": "t", "found": "'label', 'notes'"},
        ("'label', 'notes'",),
    ),
    "csv.no_data_rows": (
        lambda: load("label,k,alpha\n"),
        "{name}: no data rows (only a header?)",
        {"name": "t"},
        (),
    ),
    "csv.no_usable_row": (
        lambda: load("label,k,alpha\nx,0,0.5\ny,2,1.5\n"),
        "{name}: no usable row — all {rows} row(s) have errors: {errors}",
        {
            "name": "t",
            "rows": 2,
            "errors": joined(
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=2,
                    column="k",
                    value="0",
                    allowed=inner("an integer in [1, {hi}]", hi=2147483647),
                ),
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=3,
                    column="alpha",
                    value="1.5",
                    allowed=inner("{allowed} (a column wholly in percent is read as percent)", allowed=inner("[0, 1]")),
                ),
            ),
        },
        ("'0'", "2147483647", "alpha", "'1.5'"),
    ),
    "csv.no_usable_row_more": (
        lambda: load(BAD_ROWS),
        "{name}: no usable row — all {rows} row(s) have errors: {errors} (and {more} more)",
        {
            "name": "t",
            "rows": 7,
            "errors": joined(
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=2,
                    column="k",
                    value="0",
                    allowed=inner("an integer in [1, {hi}]", hi=2147483647),
                ),
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=3,
                    column="k",
                    value="0",
                    allowed=inner("an integer in [1, {hi}]", hi=2147483647),
                ),
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=4,
                    column="k",
                    value="0",
                    allowed=inner("an integer in [1, {hi}]", hi=2147483647),
                ),
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=5,
                    column="k",
                    value="0",
                    allowed=inner("an integer in [1, {hi}]", hi=2147483647),
                ),
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=6,
                    column="k",
                    value="0",
                    allowed=inner("an integer in [1, {hi}]", hi=2147483647),
                ),
            ),
            "more": 2,
        },
        ("'0'", "2147483647"),
    ),
    "checks.no_k": (
        lambda: checks.check_table(
            RawTable([2], {"alpha": RawColumn("alpha", "alpha", ["0.5"])}), LoadReport("t"), "t", False, None
        ),
        "{name}: no draft length K (column 'k') and no k given",
        {"name": "t"},
        (),
    ),
    "log.max_rows": (
        lambda: load("\n".join([V1] * 3), k=3, max_rows=2),
        "{name}: more than max_rows = {max_rows:,} {what} lines",
        {
            "name": "t",
            "max_rows": 2,
            "what": inner("'SpecDecoding metrics' (vLLM V1) or 'Speculative metrics' (vLLM V0)"),
        },
        ("2",),
    ),
    "log.no_line": (
        lambda: load("nothing here", format="vllm_log", k=3),
        "{name}: no {what} line found",
        {"name": "t", "what": inner("'SpecDecoding metrics' (vLLM V1) or 'Speculative metrics' (vLLM V0)")},
        (),
    ),
    "log.no_line_llamacpp": (
        lambda: load("nothing here", format="llamacpp", k=3),
        "{name}: no {what} line found",
        {"name": "t", "what": inner("llama.cpp 'draft acceptance' or 'statistics'")},
        (),
    ),
    "sglang.no_accept_len": (
        lambda: load(
            "Decode batch, #running-req: 1, #token: 10, token usage: 0.01, gen throughput (token/s): 5.0, #queue-req: 0",
            format="sglang",
            k=3,
        ),
        "{name}: no SGLang 'Decode batch' line has 'accept len' (speculative decoding was off); a metrics line looks like 'Decode batch, #running-req: 3, …, accept len: 2.54, …'",
        {"name": "t"},
        (),
    ),
    "spec_bench.max_rows": (
        lambda: load(JSON_OK + "\n" + JSON_OK, k=2, max_rows=1),
        "{name}: more than max_rows = {max_rows:,} JSON lines",
        {"name": "t", "max_rows": 1},
        ("1",),
    ),
    "spec_bench.no_usable_row": (
        lambda: load('{"x": 1}\n', k=2),
        "{name}: no usable row — all {rows} row(s) have errors: {errors}",
        {
            "name": "t",
            "rows": 1,
            "errors": joined(
                inner(
                    "row {row}, {column}: {value!r} — allowed: {allowed}",
                    row=1,
                    column="choices",
                    value="null",
                    allowed=inner("a non-empty list of objects (Spec-Bench answer file)"),
                )
            ),
        },
        ("1", "choices", "'null'"),
    ),
    "store.bad_url": (
        lambda: store.open_library("not a url::"),
        "{env} must be a SQLAlchemy database URL such as sqlite:///path/runs.sqlite; got {url!r}",
        {"env": "SPECVIZ_DB_URL", "url": "not a url::"},
        ("SPECVIZ_DB_URL", "'not a url::'"),
    ),
    "store.in_memory": (
        lambda: store.open_library("sqlite://"),
        "{env}={url}: an in-memory SQLite database is private to one connection, so sessions would not share it; give a file, e.g. sqlite:////srv/specviz/runs.sqlite",
        {"env": "SPECVIZ_DB_URL", "url": "sqlite://"},
        ("SPECVIZ_DB_URL", "sqlite://"),
    ),
    "store.no_driver": (
        lambda: store.open_library("postgresql+nosuchdriver://u@h/db"),
        "the database driver for {driver!r} ({env}) is not installed: {cause}",
        {
            "driver": "postgresql+nosuchdriver",
            "env": "SPECVIZ_DB_URL",
            "cause": Raised(sa.exc.NoSuchModuleError, "Can't load plugin: sqlalchemy.dialects:postgresql.nosuchdriver"),
        },
        (
            "'postgresql+nosuchdriver'",
            "SPECVIZ_DB_URL",
            "Can't load plugin: sqlalchemy.dialects:postgresql.nosuchdriver",
        ),
    ),
    "store.empty_run": (
        lambda: store.save_run(None, pd.DataFrame(), label="x", source="s"),
        "a run needs at least one measurement row; got an empty table",
        {},
        (),
    ),
    "store.unknown_columns": (
        lambda: store.save_run(None, pd.DataFrame({"zz": [1]}), label="x", source="s"),
        "columns {columns} are not measurement columns; allowed: the columns of specviz.data.measurements (load the file with load_measurements first)",
        {"columns": ["zz"]},
        ("['zz']",),
    ),
    "store.required_column": (
        lambda: store.save_run(None, pd.DataFrame({"label": ["a"]}), label="x", source="s"),
        "column {column!r} is required in a saved run",
        {"column": "k"},
        ("'k'",),
    ),
    "store.run_name": (
        lambda: store.save_run(None, pd.DataFrame({"label": ["a"], "k": [2]}), label=" ", source="s"),
        "run name must be 1 to {most} characters; got {label!r}",
        {"most": 200, "label": ""},
        ("200", "''"),
    ),
    "store.surrogate_note": (
        lambda: store.save_run(None, pd.DataFrame({"label": ["a"], "k": [2]}), label="a", source="s", note="n\udc00"),
        "note {text!r} is not valid Unicode text (it holds a lone surrogate)",
        {"text": "n\udc00"},
        ("'n\\udc00'",),
    ),
    "overlays.rows": (
        lambda: overlays.with_series(
            pd.DataFrame({"label": ["a"] * 5001, "k": [2] * 5001, "alpha_used": [0.5] * 5001, "c_used": [5.0] * 5001})
        ),
        "{what}: {terms}; at most {cap:,} per view: {hint}",
        {
            "what": inner("measurements to overlay"),
            "terms": inner("{n:,} {u}", n=5001, u=inner("rows")),
            "cap": 5000,
            "hint": inner("select fewer runs"),
        },
        ("5,001", "5,000"),
    ),
}

#: id -> (return it, msgid, fields, what both the English and the Chinese text show)
PHRASES = {
    "share.decode": (
        lambda: share.decode((share.Param("alpha", 0.8, lo=0.0, hi=1.0),), {"alpha": "1.5"})[1]["alpha"],
        "Ignored URL parameter {param}={value}: it must be {allowed}. Using the default {default}.",
        {
            "param": "alpha",
            "value": "'1.5'",
            "allowed": inner("a number in {interval}", interval="[0, 1]"),
            "default": "0.8",
        },
        ("alpha", "'1.5'", "[0, 1]", "0.8"),
    ),
    "share.decode_empty": (
        lambda: share.decode((share.Param("t", "", "text", hi=4),), {"t": "x" * 70})[1]["t"],
        "Ignored URL parameter {param}={value}: it must be {allowed}. Using the default (empty).",
        {
            "param": "t",
            "value": inner(
                "{value!r}… ({chars:,} characters)",
                value="xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                chars=70,
            ),
            "allowed": inner("text of at most {n} characters", n=4),
        },
        ("'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'", "70", "4"),
    ),
    "share.decode_choice": (
        lambda: share.decode((share.Param("view", "Map", "choice", choices=("Map", "Curves")),), {"view": "Pie"})[1][
            "view"
        ],
        "Ignored URL parameter {param}={value}: it must be {allowed}. Using the default {default}.",
        {
            "param": "view",
            "value": "'Pie'",
            "allowed": inner("one of {choices}", choices="Map, Curves"),
            "default": "Map",
        },
        ("view", "'Pie'", "Map, Curves"),
    ),
    "share.decode_range": (
        lambda: share.decode((share.Param("r", (0.0, 1.0), "range", lo=0.0, hi=1.0),), {"r": "0.5"})[1]["r"],
        "Ignored URL parameter {param}={value}: it must be {allowed}. Using the default {default}.",
        {
            "param": "r",
            "value": "'0.5'",
            "allowed": inner("two numbers lo,hi with lo < hi in {interval}", interval="[0, 1]"),
            "default": "0,1",
        },
        ("'0.5'", "[0, 1]", "0,1"),
    ),
    "share.allowed_ints": (
        lambda: share.Param("ks", [], "ints", lo=1, hi=64, max_items=3).allowed(),
        "at most {n} comma-separated integers in {interval}",
        {"n": 3, "interval": "[1, 64]"},
        ("3", "[1, 64]"),
    ),
    "share.clean_list": (
        lambda: share.clean_list(
            share.Param("ks", [], "ints", lo=1, hi=64, max_items=3), ["a", "b", "c", "d", "e", "f", 1, 2, 3, 4, 5]
        )[1],
        "Ignored {param} value(s) {shown}: each must be an integer in {interval}. Kept the first {n} of {total} {param} values: at most {n} are allowed.",
        {
            "param": "ks",
            "shown": inner("{shown} and {more} more", shown="'a', 'b', 'c', 'd', 'e'", more=1),
            "interval": "[1, 64]",
            "n": 3,
            "total": 5,
        },
        ("ks", "'a', 'b', 'c', 'd', 'e'", "[1, 64]", "3", "5"),
    ),
    "share.clean_list_kept": (
        lambda: share.clean_list(share.Param("cs", [1.0], "floats", lo=0.5, hi=100.0, max_items=2), [1, 2, 3])[1],
        "Kept the first {n} of {total} {param} values: at most {n} are allowed.",
        {"param": "cs", "n": 2, "total": 3},
        ("cs", "2", "3"),
    ),
    "report.headline": (
        lambda: report("name;K;accept %\nx;2;50,5\n").headline,
        "{name}: read {read} row(s) ({how}); loaded {loaded}, skipped {skipped}.",
        {
            "name": "t",
            "read": 1,
            "how": joined(
                "csv", "utf-8", inner("delimiter {delimiter!r}", delimiter=";"), inner("decimal comma"), sep=", "
            ),
            "loaded": 1,
            "skipped": 0,
        },
        ("1", "csv", "utf-8", "';'", "0"),
    ),
    "report.headline_tab": (
        lambda: report("label\tk\talpha\nx\t2\t0.5\n").headline,
        "{name}: read {read} row(s) ({how}); loaded {loaded}, skipped {skipped}.",
        {
            "name": "t",
            "read": 1,
            "how": joined("csv", "utf-8", inner("delimiter tab"), sep=", "),
            "loaded": 1,
            "skipped": 0,
        },
        ("1", "csv", "utf-8", "0"),
    ),
    "report.mapped": (
        lambda: report("name,K,accept %\nx,2,50\n").mapped_text,
        "Mapped columns: {pairs}.",
        {"pairs": joined("'name' → label", "'K' → k", "'accept %' → acceptance_rate", sep=", ")},
        ("'name' → label", "'K' → k", "'accept %' → acceptance_rate"),
    ),
    "report.conversions": (
        lambda: report("label,K,alpha (%),t_target_s,c_L\nx,2,50,0.01,0.2\n").conversions_text,
        "Conversions: {conversions}.",
        {
            "conversions": joined(
                inner("{header!r}: percent (the header says percent) divided by 100", header="alpha (%)"),
                inner("{header!r}: {how}", header="t_target_s", how=inner("ms = s × 1000")),
                inner("{header!r}: {how}", header="c_L", how=inner("c = 1 / c_L")),
            )
        },
        ("'alpha (%)'", "'t_target_s'", "'c_L'"),
    ),
    "report.ignored": (
        lambda: report("label,k,alpha,,junk,alpha,speedup_ratio,K\nx,2,0.5,,1,0.6,1,3\n").ignored_text,
        "Ignored columns: {columns}.",
        {
            "columns": joined(
                inner(
                    "{header!r} ({why})",
                    header=inner("(empty header, column {column})", column=4),
                    why=inner("empty header"),
                ),
                inner("{header!r} ({why})", header="junk", why=inner("unknown column")),
                inner("{header!r} ({why})", header="speedup_ratio", why=inner("derived column, recomputed on load")),
                inner(
                    "{header!r} ({why})",
                    header=inner("{header} [column {column}]", header="alpha", column=6),
                    why=inner(
                        "duplicate of {first!r} (both map to {column}; the first is used)",
                        first="alpha",
                        column="alpha",
                    ),
                ),
                inner(
                    "{header!r} ({why})",
                    header="K",
                    why=inner(
                        "duplicate of {first!r} (both map to {column}; the first is used)", first="k", column="k"
                    ),
                ),
                sep=", ",
            )
        },
        ("4", "'junk'", "'speedup_ratio'"),
    ),
    "report.row_error": (
        lambda: report("label,k,alpha\nx,2,0.5\ny,2,1.5\n").row_errors[0].phrase(),
        "row {row}, {column}: {value!r} — allowed: {allowed}",
        {
            "row": 3,
            "column": "alpha",
            "value": "1.5",
            "allowed": inner("{allowed} (a column wholly in percent is read as percent)", allowed=inner("[0, 1]")),
        },
        ("3", "alpha", "'1.5'"),
    ),
    "checks.number": (
        lambda: allowed("label,k,alpha,c\nx,2,0.5,abc\ny,2,0.5,5\n")[0],
        "a number; {allowed}",
        {"allowed": inner("a finite number > 0")},
        (),
    ),
    "checks.required": (
        lambda: allowed("label,k,alpha\nx,,0.5\ny,2,0.5\n")[0],
        "required: {allowed}",
        {"allowed": inner("an integer in [1, {hi}]", hi=2147483647)},
        ("2147483647",),
    ),
    "checks.k_plus_one": (
        lambda: allowed("label,speculative_num_draft_tokens,alpha\nx,1,0.5\ny,3,0.5\n")[0],
        "an integer >= 2 (= K + 1; {header} counts the root token)",
        {"header": "speculative_num_draft_tokens"},
        ("speculative_num_draft_tokens",),
    ),
    "checks.no_bonus": (
        lambda: allowed("label,k,mean_tokens_no_bonus\nx,4,9\ny,4,2\n")[0],
        "[0, {k}] (mean acceptance length without the bonus token; E[N] = value + 1 in [1, {k1}])",
        {"k": "4", "k1": "5"},
        ("4", "5"),
    ),
    "checks.mean": (
        lambda: allowed("label,k,mean_accepted_tokens\nx,2,3.5\ny,2,2\n")[0],
        "[1, {k1}] (E[N], bonus token counted, K = {k})",
        {"k": "2", "k1": "3"},
        ("2", "3"),
    ),
    "checks.efficiency": (
        lambda: allowed("label,k,system_efficiency\nx,3,0.1\ny,3,0.5\n")[0],
        "[1/{k1}, 1] (E[N] / (K + 1))",
        {"k1": "4"},
        ("4",),
    ),
    "checks.per_round": (
        lambda: allowed("label,k,alpha,predicted_tokens_per_round\nx,4,0.5,9\ny,4,0.5,2\n")[0],
        "[1, {k1}] (tokens per round, K = {k})",
        {"k": "4", "k1": "5"},
        ("4", "5"),
    ),
    "checks.depth": (
        lambda: allowed("label,k,alpha,tree_depth\nx,4,0.5,9\ny,4,0.5,2\n")[0],
        "an integer in [1, {k}] (a tree of K = {k} drafts)",
        {"k": "4"},
        ("4",),
    ),
    "checks.unit": (
        lambda: allowed("label,k,alpha,t_target_s\nx,4,0.5,-1\ny,4,0.5,2\n")[0],
        "a finite number > 0 ({unit})",
        {"unit": "s"},
        (),
    ),
    "checks.percent": (
        lambda: allowed("label,k,alpha\nx,4,-0.5\ny,4,0.5\n")[0],
        "{allowed} (a column wholly in percent is read as percent)",
        {"allowed": inner("[0, 1]")},
        (),
    ),
    "checks.positions": (
        lambda: allowed("label,k,alpha,per_position_acceptance\nx,3,0.5,0.5;0.4\ny,3,0.5,\n")[0],
        "{n} numbers in [0, 1] (or nan) separated by ';'",
        {"n": "3"},
        ("3",),
    ),
    "checks.bool": (
        lambda: allowed("label,k,alpha,greedy_exact\nx,3,0.5,maybe\ny,3,0.5,\n")[0],
        "true / false (or empty)",
        {},
        (),
    ),
    "checks.measure": (
        lambda: allowed("label,k,alpha\nx,3,\ny,3,0.5\n")[0],
        "one of alpha, mean_accepted_tokens, acceptance_rate or speedup (all empty in this row)",
        {},
        (),
    ),
    "checks.c_l_inverse": (
        lambda: allowed("label,k,alpha,c_L\nx,3,0.5,1e-320\ny,3,0.5,0.5\n")[0],
        "a c_L whose inverse c = 1 / c_L is finite",
        {},
        (),
    ),
    "checks.percent_mixed": (
        lambda: report("label,k,alpha\nx,2,0.5\ny,2,50\n").warnings[0],
        "{header!r} mixes values in (0, 1) (e.g. row {row}) with values > 1, so it is not read as percent and the values > 1 are errors; if the column is in percent, write '%' in its header",
        {"header": "alpha", "row": 2},
        ("'alpha'", "2"),
    ),
    "checks.speedup_only": (
        lambda: report("label,k,alpha,speedup\nx,2,,1.5\ny,2,0.5,1.2\n").warnings[0],
        "row(s) {rows} give a speedup but no acceptance figure (alpha, mean accepted tokens or acceptance rate): loaded as speedup-only rows, without α or a prediction",
        {"rows": "2"},
        ("2",),
    ),
    "checks.disagree": (
        lambda: report("label,k,mean_accepted_tokens,acceptance_rate\nx,4,2.0,0.9\n").warnings[0],
        "mean_accepted_tokens and acceptance_rate disagree (E[N] ≠ 1 + r·K by more than 2 %) in row(s) {rows}; alpha_used comes from mean_accepted_tokens",
        {"rows": "2"},
        ("2",),
    ),
    "checks.disagree_sglang": (
        lambda: report("label,k,mean_accepted_tokens,acceptance_rate\nx,3,2.0,0.5\n").warnings[0],
        "mean_accepted_tokens and acceptance_rate disagree (E[N] ≠ 1 + r·K by more than 2 %) in row(s) {rows}; alpha_used comes from mean_accepted_tokens — they fit E[N] / (K + 1), SGLang's 'accept rate': name that column 'sglang_accept_rate'",
        {"rows": "2"},
        ("2",),
    ),
    "checks.labels": (
        lambda: report("label,k,alpha\n,2,0.5\n").conversions_text,
        "Conversions: {conversions}.",
        {"conversions": joined(inner("{n} empty label set to {name!r}", n=1, name="t"))},
        ("1", "'t'"),
    ),
    "derive.v": (
        lambda: report("label,k,alpha,c,t_target_ms,t_verify_ms\nx,2,0.5,5,10,12\n").conversions_text,
        "Conversions: {conversions}.",
        {"conversions": joined(inner("v = max(0, (t_verify_ms / t_target_ms − 1) / K) for {rows} row(s)", rows=1))},
        ("1",),
    ),
    "csv.extra_fields": (
        lambda: allowed("label,k,alpha\nx,2,0.5,extra\ny,2,0.5\n")[0],
        "at most {width} fields (the header's count); this row has {fields}",
        {"width": 3, "fields": 4},
        ("3", "4"),
    ),
    "csv.k_given": (
        lambda: report("label,k,alpha\nx,2,0.5\n", k=3).warnings[0],
        "k = {k} was given but the file has a K column ({header!r}); the file's values are used",
        {"k": 3, "header": "k"},
        ("3", "'k'"),
    ),
    "csv.speedup_ratio": (
        lambda: report("label,k,alpha,speedup_ratio\nx,2,0.5,1.2\n").warnings[0],
        "{header!r} is read as specviz's derived speedup_ratio (measured ÷ predicted) and recomputed; name a measured speedup column 'speedup'",
        {"header": "speedup_ratio"},
        ("'speedup_ratio'",),
    ),
    "csv.mixed_decimal": (
        lambda: report("label;k;alpha;c\nx;2;0,5;5.5\ny;2;0.5;5\n").warnings[0],
        "numeric cells use both ',' ({comma}) and '.' ({dot}) as decimal separator; cells with ',' are not read as numbers",
        {"comma": 1, "dot": 2},
        ("1", "2"),
    ),
    "log.positions_length": (
        lambda: allowed(V1_POS, k=4)[0],
        "the K this line was logged with: its {what} lists {n} per-position rates",
        {"what": inner("per-position acceptance rate"), "n": 2},
        ("2",),
    ),
    "log.k_mismatch": (
        lambda: allowed(V1, k=5)[0],
        "the K this line was logged with: mean length {mean:g} and accepted/drafted {rate:.4g} imply K ≈ {implied:.2f} (E[N] = 1 + K·accepted/drafted)",
        {"mean": 2.5, "rate": 0.5, "implied": 3.0},
        ("2.5", "0.5", "3.0"),
    ),
    "log.stated_k": (
        lambda: allowed(V0, k=3)[0],
        "the K this line states ({field}: {stated}); k={given} was given",
        {"field": "Number of speculative tokens", "stated": 4, "given": 3},
        ("Number of speculative tokens", "4", "3"),
    ),
    "log.positions_sum": (
        lambda: report(V1_POS, k=2).warnings[0],
        "{warning} (line(s) {lines})",
        {
            "warning": inner(
                "{engine}: the per-position rates do not sum to mean length − 1, as unconditional rates p_i must (Σ p_i = E[N] − 1); they are read as unconditional all the same",
                engine="vLLM",
            ),
            "lines": "1",
        },
        ("vLLM", "1"),
    ),
    "log.conversions": (
        lambda: report(V1_POS, k=2).conversions_text,
        "Conversions: {conversions}.",
        {
            "conversions": joined(
                inner(
                    "per-position acceptance (unconditional p_i, as the serving stack logs it) → conditional a_i = p_i / p_(i−1)"
                ),
                inner("k = {k} (given by the caller) for the lines that do not state K", k=2),
                inner("no label column: label = {name!r} for every row", name="t"),
            )
        },
        ("2", "'t'"),
    ),
    "vllm.v0_counts": (
        lambda: report(V0).warnings[0],
        "{warning} (line(s) {lines})",
        {
            "warning": inner(
                "vLLM V0 line whose counts contradict its printed ratios (system efficiency ≠ E / (R·(K + 1)), draft acceptance rate ≠ A / D, or accepted prefixes E − R > accepted positions A); E[N] and r come from the counts"
            ),
            "lines": "1",
        },
        ("1",),
    ),
    "sglang.k": (
        lambda: allowed(SG, k=5)[0],
        "the K this line was logged with: accept len {mean:g} / accept rate {rate:g} = {low:.2f}–{high:.2f} verified tokens per round, fewer than K + 1 = {k1}",
        {
            "mean": 2.54,
            "rate": 0.51,
            # the quotient's interval given 2-decimal rounding, widened by 0.05 (sglang_log.verified_per_round)
            "low": pytest.approx((2.54 - 0.005) / (0.51 + 0.005) - 0.05),
            "high": pytest.approx((2.54 + 0.005) / (0.51 - 0.005) + 0.05),
            "k1": 6,
        },
        ("2.54", "0.51", "4.87", "5.09", "6"),
    ),
    "sglang.tree": (
        lambda: report(SG_TREE, k=3).warnings[0],
        "{warning} (line(s) {lines})",
        {
            "warning": inner(
                "SGLang: accept len / accept rate (= speculative_num_draft_tokens) is more than K + 1: a tree (--speculative-eagle-topk > 1) verifies more tokens than its depth + 1, or k is less than --speculative-num-steps; accept len is read as E[N] of depth K"
            ),
            "lines": "1",
        },
        ("1",),
    ),
    "llamacpp.k": (
        lambda: allowed(LL.replace("acceptance rate per position = (0.805, 0.632, 0.483)", ""), k=2)[0],
        "the K this line was logged with: mean length {mean:g} and accepted/generated {rate:.4g} imply {implied:.2f} drafted tokens per round (E[N] − 1) / r, more than K",
        {"mean": 2.92, "rate": pytest.approx(167 / 259), "implied": pytest.approx((2.92 - 1) / (167 / 259))},
        ("2.92", "0.6448", "2.98"),
    ),
    "llamacpp.short_drafts": (
        lambda: report(LL_SHORT, k=4).warnings[0],
        "{warning} (line(s) {lines})",
        {
            "warning": inner(
                "llama.cpp drafted fewer than K tokens per round on average (drafts stopped early: --draft-p-min, n-gram drafts), so E[N] ≠ 1 + K·r and the chain model's α is approximate"
            ),
            "lines": "1",
        },
        ("1",),
    ),
    "spec_bench.skipped": (
        lambda: report(JSON_OK + "\nnot json\n[1]\n", k=2).warnings[0],
        "{n} JSON lines skipped (see row errors); the rows pool the others",
        {"n": 2},
        ("2",),
    ),
    "spec_bench.allowed0": (
        lambda: allowed(JSON_OK + "\nnot json\n[1]\n", k=2)[0],
        "one JSON object per line",
        {},
        (),
    ),
    "spec_bench.allowed1": (
        lambda: allowed(JSON_OK + "\nnot json\n[1]\n", k=2)[1],
        "a JSON object ({example}) per line",
        {"example": "{...}"},
        ("{...}",),
    ),
    "spec_bench.conversions": (
        lambda: report(JSON_OK, k=2).conversions_text,
        "Conversions: {conversions}.",
        {
            "conversions": joined(
                inner("temperature {t} read from model_id {model_id!r}", t="0.0", model_id="m-temp-0.0"),
                inner(
                    "Spec-Bench: mean_accepted_tokens = mean of accept_lengths over all steps (bonus counted); tokens_per_s = mean over questions of Σ new_tokens / Σ wall_time"
                ),
                inner("k = {k} for every row (given by the caller)", k=2),
            )
        },
        ("'m-temp-0.0'", "2"),
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


@pytest.mark.parametrize("case", ERRORS)
def test_an_error_names_its_values_in_english_and_chinese(case):
    make, msgid, fields, shows = ERRORS[case]
    exc = caught(make)
    expect(exc, msgid, fields, shows)
    for prefix, kind in ERROR_TYPES.items():
        if case.startswith(prefix):
            assert isinstance(exc, kind), type(exc)
    assert i18n.localized(exc, "en") == str(exc)


@pytest.mark.parametrize("case", PHRASES)
def test_a_note_names_its_values_in_english_and_chinese(case):
    make, msgid, fields, shows = PHRASES[case]
    note = make()
    expect(note, msgid, fields, shows)
    assert i18n.localized(note, "en") == str(note)


def test_every_hover_label_is_translated():
    for column, label in overlays.HOVER_FIELDS.items():
        assert overlays.hover_label(column) == label and i18n.translated("zh", overlays.HOVER_LABELS[column])


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
    expect(gone, LIBRARY_GONE, {"path": path + "-moved"}, (path + "-moved",))
    with pytest.raises(store.StoreError) as info, store.errors.reported("listing the run library failed: {cause}"):
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("database is locked"))
    expect(
        info.value,
        "listing the run library failed: {cause}",
        {"cause": Raised(Exception, "database is locked")},
        ("database is locked",),
    )
    engine = store.open_library(f"sqlite:///{tmp_path / 'lib.sqlite'}")
    exc = caught(store.load_runs, engine, [7, 8])
    assert type(exc) is store.StoreError
    expect(exc, "run id(s) {ids} are not in the library (deleted by someone else?)", {"ids": [7, 8]}, ("[7, 8]",))
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is store.StoreError and back.text("zh") == exc.text("zh")
    engine.dispose()
    plain = store.StoreError("cannot open the run library at x: y")  # a plain text, as before
    assert str(plain) == plain.text("zh") == "cannot open the run library at x: y"
    assert str(pickle.loads(pickle.dumps(plain))) == str(plain)


LIBRARY_GONE = (
    "the run library file {path} was deleted while the server was running, so this server stopped using it. "
    "Move the file back (this server then carries on), or restore it from a backup and restart the server "
    "(with no file there, a restart starts a new, empty library)"
)


def test_overlay_hover_labels_in_the_pages_language():
    frame = load("label,k,alpha,c\nrun a,2,0.5,5\n")[0]
    assert overlays.hover_text(frame).iloc[0].startswith("label: run a<br>K: 2<br>")
    zh = overlays.with_series(frame, lang="zh")["hover"].iloc[0]
    assert zh.startswith("标签: run a<br>K: 2<br>") and "所用 α: 0.5" in zh


def _url_and_list_notes_app():
    from specviz.app import share, ui

    ui.restore("p", (share.Param("alpha", 0.8, lo=0.0, hi=1.0),))
    ui.multiselect("p", share.Param("ks", [], "ints", lo=1, hi=64, max_items=3), "K", [1, 2, 100])


#: The notes of an alpha of 1.5 in the URL and of a K of 100 chosen in the list, in the session's language.
URL_NOTE = i18n.Phrase(
    "Ignored URL parameter {param}={value}: it must be {allowed}. Using the default {default}.",
    param="alpha",
    value="'1.5'",
    allowed=i18n.Phrase("a number in {interval}", interval="[0, 1]"),
    default="0.8",
)
LIST_NOTE = i18n.Phrase(
    "Ignored {param} value(s) {shown}: each must be an integer in {interval}.",
    param="ks",
    shown="'100'",
    interval="[1, 64]",
)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_restore_and_multiselect_show_their_notes_in_the_sessions_language(lang):
    at = AppTest.from_function(_url_and_list_notes_app)
    at.query_params["lang"] = lang
    at.query_params["alpha"] = "1.5"
    at.run()
    assert not at.exception and [w.value for w in at.warning] == [URL_NOTE.text(lang)]
    at.multiselect[0].set_value([1, 100]).run()
    assert not at.exception and at.multiselect[0].value == [1]
    assert LIST_NOTE.text(lang) in [w.value for w in at.warning]
    assert (CJK.search(URL_NOTE.text(lang)) is not None) == (lang == "zh")

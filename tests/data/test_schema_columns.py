"""One record per measurement column (measurements.schema.TABLE): its facts are not repeated elsewhere.

Adding a column is one line of TABLE. The test adds one, in a copy of the package, and checks that the loader
reads and range-checks it, the run library stores it with the right type, and the reference document lists it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.data.measurements import schema

ROOT = Path(__file__).resolve().parents[2]
NEW_LINE = (
    '    Column("queue_ms", "input", "positive", "ms", "time a request waited before its first token, ms > 0"),\n'
)


def test_every_column_has_one_record_and_a_known_rule():
    assert len({c.name for c in schema.TABLE}) == len(schema.TABLE)
    assert all(c.rule in schema.RULES and c.role in ("input", "bench", "derived", "internal") for c in schema.TABLE)
    assert all(schema.BY_NAME[c.feeds].role == "input" for c in schema.TABLE if c.role == "internal")
    # every checked (non-text) rule states what it allows; derived columns are never checked
    checked = [c for c in schema.TABLE if c.role != "derived" and schema.RULES[c.rule].kind != "text"]
    assert checked and all(schema.RULES[c.rule].allowed for c in checked)
    assert not any(schema.RULES[c.rule].allowed for c in schema.TABLE if c.role == "derived")


CHILD = """
import json, sys
from specviz.data import store
from specviz.data.measurements import load_measurements, reference, schema

csv = b"label,k,alpha,queue_ms\\na,4,0.7,12.5\\nb,4,0.7,-3\\nc,4,0.7,7%\\n"
frame, report = load_measurements(csv, "q.csv")
errors = [str(e) for e in report.row_errors]
engine = store.open_library("sqlite:///" + sys.argv[1])
run_id = store.save_run(engine, frame, label="q", source="test")
back = store.load_run(engine, run_id)
import sqlalchemy as sa
types = {c["name"]: str(c["type"]) for c in sa.inspect(engine).get_columns("measurements")}
doc = reference.columns_block(schema.COLUMNS)
print(json.dumps({
    "values": frame["queue_ms"].tolist(), "errors": errors, "stored": back["queue_ms"].tolist(),
    "type": types.get("queue_ms"), "unit": schema.UNITS.get("queue_ms"),
    "doc": [line for line in doc.splitlines() if "queue_ms" in line],
}))
"""


@pytest.mark.slow
def test_a_column_added_in_one_line_is_read_checked_stored_and_documented(tmp_path):
    shutil.copytree(ROOT / "specviz", tmp_path / "specviz", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("data", "docs"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    path = tmp_path / "specviz" / "data" / "measurements" / "schema.py"
    source = path.read_text(encoding="utf-8")
    anchor = '    Column("notes", "input", "text", "", "free text"),\n'
    assert source.count(anchor) == 1
    path.write_text(source.replace(anchor, anchor + NEW_LINE), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "lib.sqlite")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["values"][0] == 12.5 and len(got["values"]) == 1  # the -3 and the 7 % rows are refused
    assert any("queue_ms" in e and "-3" in e and "> 0" in e for e in got["errors"]), got["errors"]
    assert got["stored"] == [12.5] and got["type"] in ("FLOAT", "REAL", "DOUBLE PRECISION", "FLOAT(53)")
    assert got["unit"] == "ms" and got["doc"] and "a finite number > 0" in got["doc"][0]

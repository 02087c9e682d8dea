"""specviz.app.ui: its caches, and the test harness's fenced use of Streamlit and pytest internals."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.app import ui


def test_shared_results_evict_the_least_recently_used_past_the_byte_cap():
    import numpy as np

    cache = ui.SharedResults(max_bytes=3 * 800)
    one = lambda i: (np.full(100, i, dtype=np.float64),)  # 800 bytes
    for i in range(3):
        cache.put(i, one(i))
    assert cache.get(0)[0][0] == 0  # 0 is now the most recently used
    cache.put(3, one(3))  # over the cap: 1, the least recently used, goes
    assert cache.get(1) is None and [cache.get(i)[0][0] for i in (0, 2, 3)] == [0, 2, 3]
    cache.put(3, one(30))  # replacing an entry does not count it twice
    assert cache.get(0) is not None and cache.get(3)[0][0] == 30
    cache.put("big", (np.zeros(400),))  # larger than the cap: not kept, nothing evicted
    assert cache.get("big") is None and all(cache.get(i) is not None for i in (0, 2, 3))


def test_shared_results_measure_with_their_size_function_and_drop_by_key():
    cache = ui.SharedResults(max_bytes=10, size=len)
    cache.put("a", "xxxx")
    cache.put("b", "xxxx")
    cache.put("c", "xxxx")  # 12 > 10: "a" goes
    assert cache.get("a") is None and cache.nbytes == 8
    assert cache.drop(lambda k: k == "b") == 1 and cache.get("b") is None and cache.nbytes == 4
    cache.put("c", "x" * 11)  # a new value too large for the cache: the old one under that key goes too
    assert cache.get("c") is None and cache.nbytes == 0


def _streamlit_caches(tree):
    """(line, keyword names) of every use of st.cache_data / st.cache_resource in a module's AST.

    A use that is not called (a bare ``@st.cache_data``) has no keywords.
    """
    import ast

    called = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("cache_data", "cache_resource"):
            call = called.get(id(node))
            yield node.lineno, {k.arg for k in call.keywords} if call is not None else set()


@pytest.mark.slow
def test_every_streamlit_cache_in_the_code_is_bounded():
    """Each st.cache_data / st.cache_resource call names max_entries (a bare decorator has no bound).

    Was a defect: a server grew from 736 MB to 1.25 GB over a series of page views.
    """
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [root / "app.py", *sorted((root / "specviz").rglob("*.py")), *sorted((root / "pages").glob("*.py"))]
    found = [
        (f"{path.relative_to(root)}:{line}", keywords)
        for path in files
        for line, keywords in _streamlit_caches(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert len(found) >= 3, f"the scan found too few caches to be looking at the code: {found}"
    assert not [where for where, keywords in found if "max_entries" not in keywords]


@pytest.mark.slow
def test_the_test_harness_scans_for_components_once_and_gets_a_fresh_scans_answer():
    """conftest.one_component_scan: AppTest's per-instance package scan is memoised, not changed."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    assert hasattr(scan, "cache_info"), "the scan is not memoised: every AppTest rescans every installed package"
    assert scan() == scan.__wrapped__()


def test_the_test_harness_imports_hypothesis_without_rewriting_its_asserts():
    """conftest.NOT_REWRITTEN: hypothesis is loaded by the plain importer, as outside pytest."""
    import hypothesis.core
    from _pytest.assertion.rewrite import AssertionRewritingHook

    assert not isinstance(hypothesis.core.__spec__.loader, AssertionRewritingHook)


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: the quick tier stays in one process")
def test_the_quick_tier_is_spread_over_workers_and_n_0_keeps_one_process():
    """conftest.spread_over_workers: a run without ``-n`` runs on xdist workers; ``-n 0`` does not."""
    pytest.importorskip("xdist", reason="needs pytest-xdist (requirements-dev.txt)")
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not slow and not browser"]
    command += ["tests/base/test_font.py", "-k", "theme"]
    spread = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    assert spread.returncode == 0, spread.stdout + spread.stderr
    workers = min(len(os.sched_getaffinity(0)), 4)
    assert f"created: {workers}/{workers} workers" in spread.stdout, spread.stdout
    alone = subprocess.run([*command, "-n", "0"], cwd=root, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "workers" not in alone.stdout and " passed" in alone.stdout, alone.stdout


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: the run stays in one process")
def test_a_spread_run_keeps_the_tests_of_one_shared_server_on_one_worker():
    """conftest.SERIAL_GROUPS: the PostgreSQL cases share a worker (xdist's loadgroup, its ``@group`` node ids),
    which the workers only learn from conftest (xdist hands them the command line, not the options set)."""
    pytest.importorskip("xdist", reason="needs pytest-xdist (requirements-dev.txt)")
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "tests/data/test_store_conflicts.py"]
    env = os.environ | {"SPECVIZ_TEST_POSTGRES_URL": "postgresql://nobody@127.0.0.1:9/none"}  # collected, not run
    ran = subprocess.run([*command, "-k", "rename"], cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert "[postgres]@postgres" in ran.stdout and "[sqlite]@" not in ran.stdout, ran.stdout


def _boolean_controls():
    import streamlit as st

    from specviz.app import ui
    from specviz.app.share import Param

    spec = (Param("on", False, "bool", label="On"), Param("live", True, "bool", label="Live"))
    ui.restore("t", spec)
    ui.checkbox("t", spec[0])
    ui.toggle("t", spec[1])
    ui.publish("t", spec, "t")
    st.write(ui.values("t", spec))


def test_checkbox_and_toggle_are_bound_to_their_params_and_mirrored_in_the_url():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_boolean_controls)
    at.query_params["on"] = "true"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.checkbox(key="t.on").value is True and at.toggle(key="t.live").value is True
    assert at.checkbox(key="t.on").label == "On"
    at.toggle(key="t.live").set_value(False).run()
    assert dict(at.query_params) == {"on": "true", "live": "false"}


def test_a_checkbox_needs_a_boolean_param():
    from specviz.app.share import Param

    with pytest.raises(ValueError, match="'n' is of kind 'int'"):
        ui.checkbox("t", Param("n", 1, "int", 0, 2, label="N"))

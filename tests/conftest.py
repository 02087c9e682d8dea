"""Shared pytest fixtures, the rule of the gpu tier, and the quick tier's smaller property tests."""

import functools
import sys
from pathlib import Path

import _tiers
import pytest
import torch

# pytest rewrites the asserts of every test module as it imports it, about 9 s of each worker's collection,
# and caches the result as bytecode (tests/__pycache__, ignored by git) only where bytecode may be written.
# Where PYTHONDONTWRITEBYTECODE is set (this project's machines set it) every run paid it again.
sys.dont_write_bytecode = False

#: Packages pytest marks for assertion rewriting only because they ship a pytest plugin. Their own asserts
#: are no test's concern, and without a bytecode cache (PYTHONDONTWRITEBYTECODE) rewriting hypothesis's
#: 78 modules costs about 2 s of every run.
NOT_REWRITTEN = frozenset({"hypothesis"})


#: Most worker processes a run spreads over (each imports torch, Streamlit and collects every module).
WORKERS = 4

#: Tests that share one outside resource run in one worker, one after another (xdist's ``loadgroup``): the
#: PostgreSQL tests drop every table of the one test database, the browser tests each drive a Chromium and an
#: app server, and the llama.cpp tests time real servers, which a second server on the same cores would slow.
SERIAL_GROUPS = ("postgres", "browser", "llamacpp")


def pytest_configure(config):
    """A run that deselects slow tests is the quick developer tier: property tests explore less (:mod:`_tiers`).
    Every run, quick or whole, is spread over one pytest-xdist worker per core (at most :data:`WORKERS`) where
    xdist is installed and no ``-n`` was given: :func:`spread_over_workers`.

    Also keeps :data:`NOT_REWRITTEN` out of assertion rewriting. The set of marked names is private pytest
    API: where it is missing nothing changes, and ``test_ui`` checks that hypothesis is imported unrewritten.
    """
    _tiers.QUICK = "not slow" in (config.getoption("markexpr") or "")
    spread_over_workers(config)
    marked = getattr(getattr(config.pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if isinstance(marked, set):
        marked.difference_update(NOT_REWRITTEN)


def spread_over_workers(config) -> None:
    """Run the tests on pytest-xdist workers, as ``-n <cores> --dist loadgroup`` would, unless the command chose
    otherwise.

    On 2 cores two workers take the quick tier from about 62 s to about 51 s of wall time and the whole suite
    in about 16 minutes (docs/testing.md). xdist turns ``-n`` into its session in its own
    ``pytest_configure``, which runs last (``trylast``), so setting the same options here, first, is ``-n``
    given late. Those are xdist's command-line options; a given ``-n`` (``-n 0`` keeps one process),
    ``--pdb``, ``--collect-only`` or an xdist without them leave the run as it is. A worker only learns
    ``loadgroup`` here. ``test_ui`` checks the spread and the grouping.
    """
    import os

    option = config.option
    if hasattr(config, "workerinput"):  # xdist hands its workers the command line, not the options set here:
        argv = config.workerinput.get("mainargv", [])  # a run spread here groups, as ``--dist loadgroup`` would
        if not any(a.startswith(("-n", "--numprocesses", "--dist")) for a in argv[1:]):
            option.loadgroup = True
        return
    if getattr(option, "numprocesses", "absent") is not None:
        return
    if config.getoption("usepdb", False) or config.getoption("collectonly", False):
        return
    if not hasattr(option, "tx") or not hasattr(option, "dist"):
        return
    workers = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, WORKERS)
    if workers < 2:
        return
    option.numprocesses = workers
    option.dist = "loadgroup" if option.dist == "no" else option.dist
    option.tx = ["popen"] * workers


def pytest_ignore_collect(collection_path, config):
    """A run that deselects browser tests (``-m`` with ``not browser``) does not import tests/browser/ either:
    every test there is marked ``browser``, and its modules import Playwright, Flask and an OpenID provider."""
    browser_dir = Path(__file__).resolve().parent / "browser"
    if "not browser" in (config.getoption("markexpr") or "") and Path(collection_path).resolve() == browser_dir:
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the node ids under loadgroup
def pytest_collection_modifyitems(config, items):
    """Tests marked with one of :data:`SERIAL_GROUPS` share a worker (xdist's ``xdist_group``; the first such
    mark wins). Tests marked ``gpu`` run only where torch sees a CUDA device; elsewhere they are skipped, saying
    why."""
    grouped = config.pluginmanager.hasplugin("xdist")
    for item in items if grouped else ():
        group = next((name for name in SERIAL_GROUPS if item.get_closest_marker(name) is not None), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device (torch.cuda.is_available() is False): the gpu tier needs one")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def one_component_scan():
    """Scan the installed packages for Streamlit components once per test process, not once per AppTest.

    Every new ``AppTest`` reads the metadata of every installed distribution (0.2–0.3 s; most of a
    page test's time) to find custom components, of which specviz has none. A test process never
    installs packages, so the first scan's answer holds for all. The scanner is private Streamlit
    API: the patch applies only where it exists, and ``test_ui`` checks it answers as a fresh scan.
    """
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # another Streamlit: AppTest then works as it ships
        yield
        return
    scan = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = functools.cache(scan)
    yield
    manifest_scanner.scan_component_manifests = scan


@pytest.fixture(scope="session", autouse=True)
def no_ahead_of_time_steps():
    """The CPU one-token step compiled ahead of time builds a C++ library on its first use (20–30 s a model
    shape): off for the suite, on for the tests of that path (``ahead_of_time``)."""
    from specviz.engine.models import compiled

    compiled.AHEAD_OF_TIME = False
    yield
    compiled.AHEAD_OF_TIME = True


@pytest.fixture(scope="session")
def aoti_home(tmp_path_factory):
    """One package cache for the tests of the ahead-of-time step (each model shape built once)."""
    return tmp_path_factory.mktemp("aoti-cache")


@pytest.fixture
def ahead_of_time(monkeypatch, aoti_home):
    """The one-token step compiled ahead of time, its packages kept in a folder of the test session's."""
    from specviz.engine.models import compiled

    monkeypatch.setattr(compiled, "AHEAD_OF_TIME", True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(aoti_home))
    return aoti_home


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models: intra-op threads only add synchronisation (10× slower on a busy 2-core CPU)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def db_url(tmp_path, monkeypatch) -> str:
    """A throw-away run library (SPECVIZ_DB_URL) and no deployment limits from the environment."""
    from specviz.data import store

    url = f"sqlite:///{tmp_path / 'library.sqlite'}"
    monkeypatch.setenv(store.ENV_URL, url)
    for name in ("SPECVIZ_HOSTED", "SPECVIZ_HF_ALLOWLIST", "SPECVIZ_MAX_WALL_S", "SPECVIZ_MAX_NEW_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    return url


# --- llama.cpp's server on the bundled pair (tests/servers/test_llamacpp.py, the engine monitor's browser test) ---

LLAMA_K = 4  #: the draft length the shared server runs with (--spec-draft-n-min = --spec-draft-n-max)


@pytest.fixture(scope="session")
def llama_binary():
    """llama-server built by scripts/build-llama-server; skips, saying why, where there is none.

    With ``SPECVIZ_REQUIRE_LLAMA=1`` (``.ci/run`` sets it once the build succeeded) a missing
    binary fails instead.
    """
    import os

    from specviz.servers import llamacpp

    binary = llamacpp.find_binary()
    if binary is None:
        why = "llama-server not built here: run scripts/build-llama-server (about 5 minutes on 2 cores)"
        if os.environ.get("SPECVIZ_REQUIRE_LLAMA") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return binary


@pytest.fixture(scope="session")
def gguf_pair(tmp_path_factory):
    """The bundled pair exported to GGUF (target.gguf, draft.gguf)."""
    from specviz.engine.models.gguf import export_pair_gguf

    return export_pair_gguf("bundled", tmp_path_factory.mktemp("gguf"))


@pytest.fixture(scope="session")
def llama_server(llama_binary, gguf_pair, tmp_path_factory):
    """One llama-server on loopback running the bundled pair with K = :data:`LLAMA_K` and --metrics."""
    from specviz.servers import llamacpp

    target, draft = gguf_pair
    with llamacpp.serve(llama_binary, target, draft, LLAMA_K, log_dir=tmp_path_factory.mktemp("llama")) as server:
        yield server

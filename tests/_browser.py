"""Start a ``streamlit run`` server and headless Chromium: shared by the browser tests and
``benchmarks/browser_bench.py`` (one implementation of both).

Chromium is Debian's ``chromium`` on PATH (``playwright install`` is never run).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1400, "height": 1000}
STARTUP_TIMEOUT_S = 60


# True once the app has finished a script run and drawn its result: a run has happened
# (the state is "initial" before the first one), none is in progress or requested, the
# "Running..." icon is gone, no element is stale (greyed out, awaiting a rerun), no
# lazily loaded component still shows its loading skeleton, every visible plotly chart
# (those in inactive tabs are hidden) holds its svg and every dataframe its canvas. What
# sits in a collapsed expander (a closed <details>: laid out, never painted, so never
# drawn) is not waited for.
APP_DRAWN_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (document.querySelector('[data-testid="stStatusWidgetRunningIcon"], [data-stale="true"]')) return false;
    if (document.querySelector('[data-testid="stAppSkeleton"], [data-testid="stSkeleton"]')) return false;
    const shown = sel => [...document.querySelectorAll(sel)]
        .filter(e => e.getClientRects().length > 0 && !e.closest('details:not([open])'));
    return shown('[data-testid="stPlotlyChart"]').every(c => c.querySelector('.js-plotly-plot svg.main-svg'))
        && shown('[data-testid="stDataFrame"]').every(d => d.querySelector('canvas'));
}"""


class ServerError(RuntimeError):
    """The server exited or did not become healthy; the message holds its output."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    """True when Streamlit's health endpoint at ``url`` answers ``ok``."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200 and r.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def streamlit_server(
    script: str | Path,
    log_path: Path,
    *,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    timeout_s: float = STARTUP_TIMEOUT_S,
) -> Iterator[str]:
    """``streamlit run script`` on a free localhost port; yields its base URL once healthy.

    The server runs in its own process group (stopped as a whole on exit) with its output
    in ``log_path``. Raises :class:`ServerError` with that output if it exits or is not
    healthy within ``timeout_s``.
    """
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    try:
        health = f"http://127.0.0.1:{port}/_stcore/health"
        deadline = time.monotonic() + timeout_s
        while not healthy(health):
            if proc.poll() is not None or time.monotonic() > deadline:
                why = (
                    f"exited with code {proc.returncode}"
                    if proc.poll() is not None
                    else f"not healthy after {timeout_s} s"
                )
                raise ServerError(f"streamlit server {why}; its output:\n{log_path.read_text(errors='replace')}")
            time.sleep(0.25)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """Terminate the server's whole process group, then kill it if it lingers."""
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    # the leader is reaped; make sure nothing else of its group survived it
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def launch_chromium(playwright):
    """Headless Debian Chromium through Playwright."""
    if CHROMIUM is None:
        raise RuntimeError("needs a chromium executable on PATH (apt-get install chromium)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@contextlib.contextmanager
def app_server(tmp_path_factory, library: str | None = None) -> Iterator[str]:
    """``streamlit run app.py`` on the run library at the URL ``library`` (default: a throw-away SQLite
    file); yields its base URL (a server that does not start fails the test, with its log)."""
    import pytest

    library = library or f"sqlite:///{tmp_path_factory.mktemp('library') / 'runs.sqlite'}"
    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    try:
        with streamlit_server("app.py", log_path, env={"SPECVIZ_DB_URL": library}) as url:
            yield url
    except ServerError as exc:
        pytest.fail(str(exc))


def page_fixture(browser, timeout_ms: float) -> Iterator:
    """A test's Playwright page in a fresh context of ``browser`` (``VIEWPORT``, ``timeout_ms`` for
    every wait), closed at the end."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(timeout_ms)
    try:
        yield context.new_page()
    finally:
        context.close()


def browser_fixture():
    """A module's Chromium (``browser = pytest.fixture(scope="module")(browser_fixture)``), closed at the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_chromium(p)
        try:
            yield b
        finally:
            b.close()

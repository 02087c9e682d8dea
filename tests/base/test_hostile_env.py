"""Operator faults: malformed ``SPECVIZ_*`` settings, and a run library whose file or folder is read-only,
removed, not SQLite, damaged, or whose saving process is killed. Each page starts and shows a message that
names the variable or file, the value and what is allowed, never a traceback; nothing stored is lost.

The read-only cases run the page or the store as ``nobody`` where the tests run as root (root writes
read-only files regardless): in a world-readable temporary folder, after a first run as root has
imported everything the page needs (the interpreter may live under /root).
"""

from __future__ import annotations

import contextlib
import ctypes.util  # noqa: F401 - imported here, as root: the page imports it lazily (specviz.base.machine)
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from _apps import ROOT, open_app, rerun, shown_errors

from specviz.app import live
from specviz.base import hosting
from specviz.data import store
from specviz.servers import fetch

LIVE, MONITOR, MEASURED = "pages/live.py", "pages/server-monitor.py", "pages/measured-data.py"
UPLOAD = b"label,k,alpha\nupload,3,0.7\n"


def errors_and_warnings(at) -> list[str]:
    return shown_errors(at) + [w.value.replace("\\", "") for w in at.warning]


@pytest.fixture
def env(db_url, monkeypatch):
    """A throw-away library and no SPECVIZ_* limits; returns monkeypatch to set the variable under test."""
    for name in ("SPECVIZ_MAX_REPEATS", "SPECVIZ_MAX_PROMPTS", "SPECVIZ_MAX_CELLS", "SPECVIZ_MAX_BATCH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(fetch.ENV_HOSTS, raising=False)
    return monkeypatch


# --- SPECVIZ_MAX_*: the live page's limits ---------------------------------------------------------

INT_LIMITS = (
    "SPECVIZ_MAX_NEW_TOKENS",
    "SPECVIZ_MAX_REPEATS",
    "SPECVIZ_MAX_PROMPTS",
    "SPECVIZ_MAX_CELLS",
    "SPECVIZ_MAX_BATCH",
)
ALL_LIMITS = (*INT_LIMITS, "SPECVIZ_MAX_WALL_S")
#: malformed value -> what the message says is allowed (None: the default is used, with no message)
MALFORMED = {
    "": None,
    "   ": None,
    "-1": "must be a positive",
    "0": "must be a positive",
    "nan": "must be a positive",
    "NaN": "must be a positive",
    "abc": "must be a positive",
    "true": "must be a positive",
    "yes": "must be a positive",
    "1e400": None,  # an int variable: not an integer; SPECVIZ_MAX_WALL_S: infinite (both refused, below)
    "99999999999999999999": "at most 1,000,000,000",
    "inf": None,
}


@pytest.mark.parametrize("name", ALL_LIMITS)
@pytest.mark.parametrize("raw", list(MALFORMED))
def test_every_limit_refuses_every_malformed_value_naming_it(name, raw):
    """Before: 20-digit integers were taken (the live page then raised on its widget bound, 2**53), and
    SPECVIZ_MAX_WALL_S=1e400 or inf was an infinite wall-time cap."""
    if not raw.strip():
        assert live.limits_from_env({name: raw}) == live.Limits()
        return
    with pytest.raises(ValueError) as err:
        live.limits_from_env({name: raw})
    said = str(err.value)
    assert said.startswith(f"{name} must be a positive") and repr(raw.strip()) in said, said
    if MALFORMED[raw] is not None:
        assert MALFORMED[raw] in said, said


def test_the_largest_limit_allowed_is_taken():
    limits = live.limits_from_env({"SPECVIZ_MAX_NEW_TOKENS": "1000000000", "SPECVIZ_MAX_WALL_S": "1e9"})
    assert (limits.max_new_tokens, limits.max_wall_s) == (10**9, 1e9)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("SPECVIZ_MAX_NEW_TOKENS", "99999999999999999999"),
        ("SPECVIZ_MAX_REPEATS", "9007199254740993"),
        ("SPECVIZ_MAX_PROMPTS", "-3"),
        ("SPECVIZ_MAX_CELLS", "1e400"),
        ("SPECVIZ_MAX_BATCH", "many"),
        ("SPECVIZ_MAX_WALL_S", "1e400"),
        ("SPECVIZ_MAX_WALL_S", "nan"),
        ("SPECVIZ_MAX_NEW_TOKENS", "0"),
    ],
)
def test_the_live_page_names_a_malformed_limit_instead_of_a_traceback(env, name, raw):
    """Before: SPECVIZ_MAX_NEW_TOKENS=99999999999999999999 and SPECVIZ_MAX_REPEATS=9007199254740993 raised
    StreamlitAPIException (`max_value` must be <= (1 << 53) - 1) on the page."""
    env.setenv(name, raw)
    (error,) = shown_errors(open_app(LIVE))
    assert error.startswith(f"{name} must be a positive") and repr(raw) in error, error


@pytest.mark.parametrize(("name", "raw"), [("SPECVIZ_MAX_NEW_TOKENS", "abc"), ("SPECVIZ_HOSTED", "enabled")])
@pytest.mark.slow
def test_the_strategies_pages_live_run_names_a_malformed_setting(env, name, raw):
    """The Strategies page's n-gram run reads the live limits only when clicked: the message, not a traceback."""
    env.setenv(name, raw)
    at = open_app("pages/strategies.py", view="ngram")
    [run] = [b for b in at.button if b.label.startswith("Run the bundled target with n-gram drafts")]
    run.click()
    errors = shown_errors(rerun(at))
    assert any(e.startswith(f"{name} must be") and repr(raw) in e for e in errors), errors


@pytest.mark.parametrize("raw", ["", "  "])
def test_the_live_page_uses_the_default_for_a_blank_limit(env, raw):
    env.setenv("SPECVIZ_MAX_NEW_TOKENS", raw)
    at = open_app(LIVE)
    assert not at.error and at.number_input(key="live.new_tokens").max == live.Limits().max_new_tokens


@pytest.mark.parametrize("raw", ["a,b,c", "gpt2", ",gpt2", "gpt2,"])
def test_the_live_page_names_a_malformed_hf_allowlist(env, raw):
    env.setenv("SPECVIZ_HF_ALLOWLIST", raw)
    (error,) = shown_errors(open_app(LIVE))
    assert "SPECVIZ_HF_ALLOWLIST entries must be 'TARGET,DRAFT' separated by ';'" in error, error


@pytest.mark.slow
def test_an_hf_allowlist_of_separators_only_is_empty(env):
    env.setenv("SPECVIZ_HF_ALLOWLIST", " ; ;; ")
    assert live.limits_from_env().hf_allowlist == () and not open_app(LIVE).error


# --- SPECVIZ_HOSTED: a yes/no switch whose misspelling must not open a public server ----------------


@pytest.mark.parametrize(
    ("raw", "hosted"),
    [("1", True), ("TRUE", True), (" Yes ", True), ("on", True), ("0", False), ("False", False), (" no", False)]
    + [("OFF", False), ("", False), ("   ", False)],
)
def test_hosted_yes_and_no_values_in_any_case(raw, hosted):
    env = {"SPECVIZ_HOSTED": raw}
    assert hosting.is_hosted(env) is hosted and hosting.hosted_problem(env) is None
    assert live.limits_from_env(env).hosted is hosted


@pytest.mark.parametrize("raw", ["enabled", "ture", "2", "-1", "y", "hosted", "1.0", "nan"])
def test_a_misspelt_hosted_value_means_hosted_and_says_so(raw):
    """Before: any value but 1/true/yes/on was *not hosted*, silently: SPECVIZ_HOSTED=enabled left a public
    server fetching any URL and running any local model."""
    env = {"SPECVIZ_HOSTED": raw}
    assert hosting.is_hosted(env) is True
    problem = hosting.hosted_problem(env)
    assert problem is not None and "SPECVIZ_HOSTED must be one of 1, true, yes, on (hosted mode)" in str(problem)
    assert repr(raw) in str(problem) and "runs in hosted mode, the stricter" in str(problem)
    with pytest.raises(ValueError, match="SPECVIZ_HOSTED must be one of"):
        live.limits_from_env(env)


def test_a_misspelt_hosted_value_on_the_pages(env, tmp_path):
    env.setenv("SPECVIZ_HOSTED", "enabled")
    env.setenv(fetch.ENV_HOSTS, "vllm.internal:8000")
    (error,) = shown_errors(open_app(LIVE))  # the live page waits until the operator says which
    assert "SPECVIZ_HOSTED must be one of" in error and "'enabled'" in error
    at = open_app(MONITOR, endpoints="http://127.0.0.1:9/metrics")  # hosted: the allow-list applies
    assert any("SPECVIZ_HOSTED must be one of" in w for w in errors_and_warnings(at))
    assert any("is not on the allow-list of serving-stack hosts" in e for e in shown_errors(at)), shown_errors(at)
    at = open_app(MEASURED)
    assert any("SPECVIZ_HOSTED must be one of" in w for w in errors_and_warnings(at)) and not at.error


# --- SPECVIZ_ENGINE_HOSTS --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("http://vllm:8000", "SPECVIZ_ENGINE_HOSTS entries are host or host:port"),
        ("vllm/metrics", "SPECVIZ_ENGINE_HOSTS entries are host or host:port"),
        ("[::1", "SPECVIZ_ENGINE_HOSTS entries are host or host:port"),
        ("vllm:0", "(ports are 1..65535)"),
        ("vllm:99999", "(ports are 1..65535)"),
        ("vllm:port", "SPECVIZ_ENGINE_HOSTS entries are host or host:port"),
        ("a" * 300, "SPECVIZ_ENGINE_HOSTS entries are host or host:port"),
        ("x" * 64 + ".example", "SPECVIZ_ENGINE_HOSTS entries are host or host:port"),
        ("user@vllm", "SPECVIZ_ENGINE_HOSTS entries are host or host:port"),
    ],
    ids=["scheme", "path", "bracket", "port-0", "port-big", "port-word", "300-chars", "64-char-label", "userinfo"],
)
def test_the_monitor_names_a_malformed_engine_host_entry(env, raw, said):
    """Before: a 300-character host name (or a 64-character label: no DNS name) was taken as an entry."""
    env.setenv("SPECVIZ_HOSTED", "1")
    env.setenv(fetch.ENV_HOSTS, f"ok.example:8000,{raw}")
    at = open_app(MONITOR, endpoints="http://ok.example:8000/metrics")
    errors = shown_errors(at)
    assert len(errors) == 1 and said in errors[0], errors


@pytest.mark.parametrize("raw", ["", "  ", " , ,"])
def test_an_empty_engine_host_list_refuses_every_endpoint_saying_how_to_set_it(env, raw):
    env.setenv("SPECVIZ_HOSTED", "1")
    env.setenv(fetch.ENV_HOSTS, raw)
    (error,) = shown_errors(open_app(MONITOR, endpoints="http://127.0.0.1:9/metrics"))
    assert "the allow-list SPECVIZ_ENGINE_HOSTS is empty" in error and "SPECVIZ_ENGINE_HOSTS=" in error


# --- SPECVIZ_DB_URL --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("not a url", "SPECVIZ_DB_URL must be a SQLAlchemy database URL"),
        ("http://example.com/x", "the database driver for 'http' (SPECVIZ_DB_URL) is not installed"),
        ("sqlite:///", "an in-memory SQLite database is private to one connection"),
        ("sqlite:///:memory:", "an in-memory SQLite database is private to one connection"),
        ("sqlite:////proc/no-such-dir/runs.sqlite", "cannot open the run library at"),
        ("postgresql+psycopg://u:p@db.example:notaport/x", "notaport"),
    ],
    ids=["words", "http", "sqlite-empty", "memory", "unwritable-dir", "bad-port"],
)
def test_the_measured_page_names_a_malformed_library_url(env, raw, said):
    env.setenv(store.ENV_URL, raw)
    at = open_app(MEASURED)
    errors = shown_errors(at)
    assert len(errors) == 1 and said in errors[0], errors
    at.file_uploader(key="measured.files").upload("u.csv", UPLOAD, "text/csv")  # files can still be checked
    rerun(at)
    assert at.dataframe and not [b for b in at.button if b.label == "Save to library"]


@pytest.mark.parametrize("raw", ["", "   "])
def test_a_blank_library_url_is_the_default_file(env, tmp_path, raw):
    env.setenv(store.ENV_URL, raw)
    env.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    at = open_app(MEASURED)
    assert not at.error and (tmp_path / "data" / "specviz" / "runs.sqlite").is_file()


@contextlib.contextmanager
def silent_server():
    """A TCP port on 127.0.0.1 that accepts connections and never answers (a hung database)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        listener.close()


@pytest.mark.slow  # a subprocess or a timeout: about 1-3 s
def test_a_database_server_that_never_answers_fails_the_open_after_the_timeout(env, monkeypatch):
    """Before: open_library waited for ever (libpq has no connect timeout by default), and so did every
    page that lists the library."""
    pytest.importorskip("psycopg")
    monkeypatch.setattr(store.connection, "PG_CONNECT_TIMEOUT_S", 1)
    with silent_server() as port:
        env.setenv(store.ENV_URL, f"postgresql+psycopg://u:secret@127.0.0.1:{port}/specviz")
        t0 = time.perf_counter()
        at = open_app(MEASURED)
        took = time.perf_counter() - t0
    (error,) = shown_errors(at)
    assert "cannot open the run library" in error and "timeout" in error and "secret" not in error, error
    assert took < 5


# --- the run library's file: read-only, removed, not SQLite, damaged --------------------------------

NOBODY = 65534


@contextlib.contextmanager
def unprivileged():
    """Run the block as ``nobody`` when the tests run as root (whom file modes do not stop); else as is."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def frame(label: str, n: int = 1) -> pd.DataFrame:
    return pd.DataFrame({"label": [label] * n, "k": [3] * n, "alpha": [0.5 + i / (2 * n + 2) for i in range(n)]})


def labels_on_disk(path: Path) -> list[str]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("SELECT label FROM runs ORDER BY id")]
    finally:
        con.close()


@pytest.fixture
def shared_library(monkeypatch, db_url):
    """A library at <world-readable tmp>/lib/runs.sqlite holding run "first", SPECVIZ_DB_URL naming it, and
    the measured page run once (as root: every module it imports is loaded) on another library."""
    top = Path(tempfile.mkdtemp(prefix="specviz-hostile-"))
    top.chmod(0o755)
    folder = top / "lib"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    path = folder / "runs.sqlite"
    engine = store.open_library(f"sqlite:///{path}")
    store.save_run(engine, frame("first", 3), label="first", source="s")
    engine.dispose()
    warm = open_app(MEASURED)  # db_url's library
    warm.file_uploader(key="measured.files").upload("u.csv", UPLOAD, "text/csv")
    rerun(warm)
    monkeypatch.setenv(store.ENV_URL, f"sqlite:///{path}")
    yield path
    for p in (top, folder, *folder.iterdir()):
        p.chmod(0o777)
    shutil.rmtree(top)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["file", "folder", "both"])
def test_a_read_only_library_is_a_clear_message_and_keeps_its_runs(shared_library, what):
    """Before: "cannot open the run library at …: (sqlite3.OperationalError) attempt to write a readonly
    database [SQL: UPDATE specviz_info …] [parameters: …] (Background on this error at: …)"."""
    path = shared_library
    before = path.read_bytes()
    if what in ("file", "both"):
        path.chmod(0o444)
    if what in ("folder", "both"):
        path.parent.chmod(0o555)
    with unprivileged():
        at = open_app(MEASURED)
        at.file_uploader(key="measured.files").upload("u.csv", UPLOAD, "text/csv")
        rerun(at)
    (error,) = shown_errors(at)
    assert f"this server may not write the run library file {path} or its folder {path.parent}" in error, error
    assert "Runs already stored are unchanged" in error and "[SQL:" not in error and "sqlalche.me" not in error
    assert not [b for b in at.button if b.label == "Save to library"] and at.dataframe  # the upload is still read
    assert path.read_bytes() == before and labels_on_disk(path) == ["first"]


def test_a_library_made_read_only_while_the_server_runs_keeps_saving_until_a_restart(shared_library):
    """The server's open connections keep writing (file modes are checked when a file is opened): every save
    it confirms is on disk; after a restart the open says the file is read-only, and the runs are there."""
    path = shared_library
    engine = store.open_library(f"sqlite:///{path}")
    store.list_runs(engine)  # a pooled connection, opened read-write
    path.chmod(0o444)
    path.parent.chmod(0o555)
    with unprivileged():
        run_id = store.save_run(engine, frame("second"), label="second", source="s")
        engine.dispose()
        with pytest.raises(store.StoreError, match="this server may not write the run library file"):
            store.open_library(f"sqlite:///{path}")
    assert run_id == 2 and labels_on_disk(path) == ["first", "second"]


def test_a_save_refused_as_read_only_says_so_and_works_again_once_the_file_is_writable(shared_library):
    """A connection SQLite opened read-only refuses every write for as long as it lives. Before: the pooled
    connection stayed, so saves kept failing after the operator fixed the modes, until a restart; now the
    pool replaces it at its next use."""
    path = shared_library
    engine = store.open_library(f"sqlite:///{path}")
    engine.dispose()  # the next connection opens the file as it is then
    path.chmod(0o444)
    with unprivileged():
        with pytest.raises(store.StoreError) as err:
            store.save_run(engine, frame("second"), label="second", source="s")
        assert "saving run 'second' failed, nothing was stored: this server may not write" in str(err.value)
        assert store.list_runs(engine)["label"].tolist() == ["first"]  # reading still works
    assert path.with_name(path.name + "-shm").stat().st_mode & 0o777 == 0o444  # SQLite made it as the database
    for f in path.parent.iterdir():  # what the message asks the operator to do
        f.chmod(0o666)
    with unprivileged():
        assert store.save_run(engine, frame("third"), label="third", source="s") == 2
    engine.dispose()
    assert labels_on_disk(path) == ["first", "third"]


def test_a_library_folder_removed_while_the_page_runs_is_an_error_on_the_page(db_url):
    path = Path(store.default_url().removeprefix("sqlite:///"))
    at = open_app(MEASURED)
    shutil.rmtree(path.parent)
    at.file_uploader(key="measured.files").upload("u.csv", UPLOAD, "text/csv")
    rerun(at)
    errors = shown_errors(at)
    assert any(f"the folder {path.parent} of the run library {path} was deleted" in e for e in errors), errors
    assert not path.parent.exists() and not [b for b in at.button if b.label == "Save to library"]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"this is not an SQLite database\n" * 200, "is not an SQLite database file, so it was left as it is"),
        (b"\x00" * 4096, "is not an SQLite database file"),
        (b"SQLite format 3\x00" + b"\xff" * 84, "is not an SQLite database file"),
    ],
    ids=["text", "zeros", "bad-header"],
)
def test_a_file_that_is_no_library_is_named_and_left_as_it_is(env, tmp_path, content, said):
    """Before: the message quoted SQLAlchemy's wrapper ("(sqlite3.DatabaseError) … (Background on this error
    at: https://sqlalche.me/e/20/4xp6)") and said nothing of what to do."""
    path = tmp_path / "junk.sqlite"
    path.write_bytes(content)
    env.setenv(store.ENV_URL, f"sqlite:///{path}")
    (error,) = shown_errors(open_app(MEASURED))
    assert str(path) in error and said in error and "sqlalche.me" not in error, error
    assert path.read_bytes() == content


@pytest.mark.slow  # a subprocess or a timeout: about 1-3 s
def test_a_damaged_library_is_named_and_its_file_left_as_it_is(env, tmp_path):
    path = tmp_path / "runs.sqlite"
    engine = store.open_library(f"sqlite:///{path}")
    store.save_run(engine, frame("big", 20_000), label="big", source="s")
    engine.dispose()
    damaged = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(damaged)
    env.setenv(store.ENV_URL, f"sqlite:///{path}")
    (error,) = shown_errors(open_app(MEASURED))
    assert f"the SQLite file {path} is damaged" in error and "Restore it from a backup" in error, error
    assert path.read_bytes() == damaged


# --- the process killed mid-save -------------------------------------------------------------------

SAVER = textwrap.dedent(
    """
    import sys, time
    import numpy as np, pandas as pd, sqlalchemy as sa
    from specviz.data import store

    url, where = sys.argv[1], sys.argv[2]
    engine = store.open_library(url)
    rows = 50_000
    big = pd.DataFrame({"label": "half", "k": 3, "alpha": np.linspace(0.01, 0.99, rows)})

    def hold(message):
        print(message, flush=True)
        time.sleep(120)  # the parent kills this process here

    if where == "before-commit":  # every row inserted, not committed
        sa.event.listen(engine, "commit", lambda conn: hold("committing"))
    elif where == "mid-insert":  # the run's row inserted, its measurements not yet
        def before(conn, cursor, statement, params, context, many):
            if statement.startswith("INSERT INTO measurements"):
                hold("inserting")
        sa.event.listen(engine, "before_cursor_execute", before)
    if where == "loop":  # save run after run; the parent kills at some moment
        for i in range(1000):
            store.save_run(engine, big.iloc[: 2000 + 37 * i], label=f"loop{i}", source="s")
            print(f"saved loop{i}", flush=True)
    else:
        print("ready", flush=True)
        store.save_run(engine, big, label="half", source="s")
        print("saved half", flush=True)
    """
)


def kill_mid_save(url: str, where: str, wait_for: str, after_s: float = 0.0) -> list[str]:
    """Run :data:`SAVER` in a child process, SIGKILL it once it printed ``wait_for`` (and ``after_s`` more
    seconds passed); what it printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", SAVER, url, where], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    said = []
    try:
        for line in child.stdout:
            said.append(line.strip())
            if line.startswith(wait_for):
                break
        time.sleep(after_s)
        child.send_signal(signal.SIGKILL)
        said += [line.strip() for line in child.stdout]
    finally:
        child.kill()
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, (child.returncode, said)
    return said


def library_is_whole(path: Path) -> dict[str, int]:
    """{label: rows} of every run, after checking with plain sqlite3 that the file is intact and that each
    run holds exactly its n_rows measurements (no run half saved)."""
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = con.execute("SELECT id, label, n_rows FROM runs ORDER BY id").fetchall()
        for run_id, label, n_rows in runs:
            have = con.execute("SELECT count(*) FROM measurements WHERE run_id = ?", (run_id,)).fetchone()[0]
            assert have == n_rows, f"run {label!r} holds {have} of its {n_rows} rows"
        orphans = con.execute("SELECT count(*) FROM measurements WHERE run_id NOT IN (SELECT id FROM runs)")
        assert orphans.fetchone()[0] == 0
        return {label: n for _, label, n in runs}
    finally:
        con.close()


@pytest.mark.slow  # a subprocess or a timeout: about 1-3 s
@pytest.mark.parametrize(("where", "wait_for"), [("before-commit", "committing"), ("mid-insert", "inserting")])
def test_a_save_killed_before_its_commit_leaves_no_trace(tmp_path, where, wait_for):
    path = tmp_path / "runs.sqlite"
    url = f"sqlite:///{path}"
    engine = store.open_library(url)
    store.save_run(engine, frame("first", 3), label="first", source="s")
    engine.dispose()
    said = kill_mid_save(url, where, wait_for)
    assert "saved half" not in said
    assert library_is_whole(path) == {"first": 3}
    engine = store.open_library(url)  # the next server: the library opens, and the next id follows "first"
    assert store.list_runs(engine)["label"].tolist() == ["first"]
    assert store.save_run(engine, frame("second"), label="second", source="s") == 2
    assert store.load_run(engine, 1)["alpha"].tolist() == frame("first", 3)["alpha"].tolist()
    engine.dispose()


@pytest.mark.slow  # a subprocess or a timeout: about 1-3 s
def test_a_process_killed_while_saving_run_after_run_keeps_every_confirmed_run_whole(tmp_path):
    path = tmp_path / "runs.sqlite"
    url = f"sqlite:///{path}"
    store.open_library(url).dispose()
    said = kill_mid_save(url, "loop", "saved loop2", after_s=0.15)
    confirmed = [line.removeprefix("saved ") for line in said if line.startswith("saved ")]
    stored = library_is_whole(path)
    assert set(confirmed) <= set(stored) and len(stored) <= len(confirmed) + 1  # one committed, not yet printed
    engine = store.open_library(url)
    assert sorted(store.list_runs(engine)["label"]) == sorted(stored)
    engine.dispose()


@pytest.mark.slow  # a subprocess or a timeout: about 1-3 s
def test_the_measured_page_after_a_killed_save_lists_the_earlier_runs(env, tmp_path):
    path = tmp_path / "runs.sqlite"
    url = f"sqlite:///{path}"
    engine = store.open_library(url)
    store.save_run(engine, frame("first", 3), label="first", source="s")
    engine.dispose()
    kill_mid_save(url, "before-commit", "committing")
    env.setenv(store.ENV_URL, url)
    at = open_app(MEASURED)
    assert not at.error and at.dataframe[0].value["label"].tolist() == ["first"]

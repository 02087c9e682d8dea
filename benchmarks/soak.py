"""Soak test: the server's memory and the pages' exceptions under many visitors, valid and hostile.

Two modes. Run from the repository root::

    python benchmarks/soak.py                            # one process, 200 views (exit 0 even if a target fails)
    python benchmarks/soak.py --sessions 50 --minutes 30 # concurrent: a real server, 50 sessions, 30 minutes
    python benchmarks/soak.py ... --strict               # exit 1 if a target fails

**One process** (the default): every view is a new visitor (a fresh ``AppTest``, whose script runs in
this process and shares its caches, as on a server) opening a page of :data:`PAGES` in turn with query
parameters drawn at random (seeded), the run library pages against a temporary SQLite library holding
the sample files of data/samples, and half of the Run library's views also uploading one of them. The
resident set size (``VmRSS``) is printed at the start, after a warm-up (two views of every page) and every
50 views. Target: the growth after the warm-up stays within 150 MB (every cache is bounded, so memory
levels off once they fill; a growth beyond the caches' sizes is a leak).

**Concurrent** (``--sessions N``, with ``--minutes M``): ``streamlit run app.py`` as deployed, and N
visitors at once, each a Streamlit session driven over the server's WebSocket by ``_sessions.Session``
(the protocol the browser speaks: a rerun per page view, uploads through the upload URL and the
uploader's widget state). Half the links, and most uploads, come from the hostile corpus in
tests/fixtures/hostile/ (out-of-range, NaN/inf, huge, unicode, injection-looking values on a page's keys
and unknown keys; malformed, empty, binary and wrong-typed files). It reports the exception boxes the
pages sent (``st.exception`` elements; target 0), the server's memory (RSS of the server process, the
only one that holds sessions and caches) against its level after the warm-up (target: at most 20 %
more at the end) next to what each kind of cache holds (Streamlit's ``/_stcore/metrics``), and the p50/p95
time of a rerun (a page view or an upload, request to end of run).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _report import ROOT, machine_line, record, summary

SEED = 20261201
VIEWS = 200
TARGET_MB = 150.0
SESSIONS, MINUTES = 50, 30.0  # the concurrent mode's defaults
TARGET_GROWTH = 0.20  # the concurrent mode: server RSS at the end <= 1.2 x its level after the warm-up
HOSTILE = ROOT / "tests" / "fixtures" / "hostile"
LINKS = ROOT / "tests" / "fixtures" / "links"


@dataclass(frozen=True)
class Page:
    """A page the soak visits: its file (AppTest opens it), its URL path on the server, and the query that
    shows its file uploader (None: no upload)."""

    file: str
    path: str
    upload: dict[str, str] | None = None


#: Every page the soak visits: a new page is one line. The home page links to the others, which only
#: resolves inside the router: it is opened as app.py.
PAGES = (
    Page("app.py", ""),
    Page("pages/design-space.py", "design-space"),
    Page("pages/break-even.py", "break-even"),
    Page("pages/sampling-lab.py", "sampling-lab"),
    Page("pages/converter.py", "converter"),
    Page("pages/hardware.py", "hardware", upload={}),
    Page("pages/validation.py", "validation", upload={"mine": "upload"}),
    Page("pages/serving.py", "serving"),
    Page("pages/strategies.py", "strategies", upload={"trace_src": "upload"}),
    Page("pages/server-monitor.py", "server-monitor"),
    Page("pages/tune.py", "tune"),
    Page("pages/run-library.py", "run-library", upload={}),
    Page("pages/compare-runs.py", "compare-runs"),
    Page("pages/published-acceptance.py", "published-acceptance"),
    Page("pages/live.py", "live"),
)


def recorded_links() -> dict[str, list[dict[str, str]]]:
    """page file -> the valid queries recorded for it in tests/fixtures/links (every control set)."""
    found: dict[str, list[dict[str, str]]] = {}
    for path in sorted(LINKS.glob("*.json")):
        for link in json.loads(path.read_text(encoding="utf-8"))["links"]:
            found.setdefault(link["page"], []).append({k: str(v) for k, v in link["query"].items()})
    return found


def rss_mb() -> float | None:
    """Resident set size of this process in MB (VmRSS of /proc/self/status), or None where there is none."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return None


def rss_after_malloc_trim() -> float | None:
    """RSS after glibc's ``malloc_trim(0)`` hands freed heap pages back (None without glibc): what the
    objects alive still hold. A server never calls it, so the check uses the RSS before it."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return None
    return rss_mb()


def fmt_mb(mb: float | None) -> str:
    return "n/a" if mb is None else f"{mb:,.1f} MB"


def _nums(values) -> str:
    return ",".join(f"{v:g}" for v in values)


def random_query(page: str, rng: random.Random, run_ids: list[int]) -> dict[str, str]:
    """Valid query parameters for ``page``, drawn from ``rng`` (sizes a visitor would ask for)."""
    conv = rng.choice(["c", "c_L"])
    c_lo = round(rng.uniform(0.3, 5.0), 2)
    c_range = {"conv": conv, "c_min": f"{c_lo:g}", "c_max": f"{c_lo * rng.choice([10, 40, 200]):g}"}
    if page == "pages/design-space.py":
        lo = round(rng.uniform(0.0, 0.5), 2)
        return {
            "view": rng.choice(["Heatmap", "3-D surface"]),
            "map": rng.choice(["Speedup over (α, c)", "Speedup over (α, K)", "E[N] over (α, K)"]),
            "alpha": _nums([lo, round(rng.uniform(lo + 0.1, 1.0), 2)]),
            "k": str(rng.randint(1, 16)),
            "k_max": str(rng.randint(2, 32)),
            "c_fix": f"{round(rng.uniform(1, 50), 1):g}",
            "v": f"{round(rng.uniform(0, 0.5), 2):g}",
            "o": f"{round(rng.uniform(0, 1), 2):g}",
            **c_range,
        }
    if page == "pages/break-even.py":
        return {
            "view": rng.choice(["Break-even frontier", "Optimal K", "Chapter numbers"]),
            "opt_map": rng.choice(["K*(α, c)", "Speedup at K*"]),
            "k_max": str(rng.randint(2, 64)),
            "curves": _nums(sorted(rng.sample([0.5, 1, 2, 4, 8, 16, 32, 64, 100], rng.randint(1, 6)))),
            "v": f"{round(rng.uniform(0, 0.5), 2):g}",
            "f_alpha": f"{round(rng.uniform(0.2, 0.95), 2):g}",
            **c_range,
        }
    if page == "pages/sampling-lab.py":
        return {
            "view": rng.choice(["Acceptance is overlap", "Tokens per round", "Emitted tokens"]),
            "v": str(rng.choice([10, 100, 1000])),
            "p": rng.choice(["zipf", "dirichlet", "uniform"]),
            "q": rng.choice(["tempered", "zipf", "dirichlet", "uniform"]),
            "p_seed": str(rng.randint(0, 5)),
            "k": str(rng.randint(1, 8)),
            "rounds": str(rng.choice([20_000, 50_000, 100_000, 200_000])),
            "seed": str(rng.randint(0, 5)),
            "variant": rng.choice(["exact", "accept_first", "resample_p", "temperature_mismatch"]),
        }
    if page == "pages/converter.py":
        metric = rng.choice(["alpha", "acceptance_rate", "mean_tokens", "mean_tokens_no_bonus", "system_efficiency"])
        value = {"mean_tokens": rng.uniform(1.0, 4.0), "mean_tokens_no_bonus": rng.uniform(0.0, 3.0)}
        return {
            "metric": metric,
            "value": f"{round(value.get(metric, rng.uniform(0.05, 0.95)), 3):g}",
            "k": str(rng.randint(4, 8)),
            "conv": conv,
            "ratio": f"{round(rng.uniform(2, 50), 1):g}",
        }
    if page in ("pages/run-library.py", "pages/compare-runs.py"):
        chosen = sorted(rng.sample(run_ids, rng.randint(0, min(3, len(run_ids)))))
        if page == "pages/run-library.py":
            return {"runs": ",".join(map(str, chosen)), "filter": rng.choice(["", "", "bench", "published"])}
        return {"runs": ",".join(map(str, chosen)), "hk": str(rng.choice([0, 0, 2, 4, 7]))}
    if page == "pages/live.py":
        return {
            "device": rng.choice(["auto", "cpu"]),
            "ks": _nums(sorted(rng.sample(range(1, 9), rng.randint(1, 4)))),
            "temps": _nums(sorted(rng.sample([0.0, 0.5, 1.0], rng.randint(1, 2)))),
            "n_prompts": str(rng.randint(1, 4)),
            "new_tokens": str(rng.choice([16, 32, 64])),
            "seed": str(rng.randint(0, 99)),
        }
    if page == "pages/tune.py":  # the example's answer, or a plan's form (a query never starts a tune)
        loads = sorted(rng.sample([1, 2, 4, 8], rng.randint(1, 4)))
        return {
            "source": rng.choice(["example", "example", "local", "remote"]),
            "name": rng.choice(["soak", "night-run", "t1"]),
            "ks": _nums(sorted(rng.sample(range(0, 9), rng.randint(1, 5)))),
            "conc": _nums(loads),
            "mix": rng.choice(["", "1: 1", "1: 0.5, 8: 0.5", "2: 1, 4: 3"]),
            "algorithm": rng.choice(["EAGLE3", "EAGLE"]),
        }
    if page in RECORDED:  # a newer page: one of its recorded links
        return dict(rng.choice(RECORDED[page]))
    return {}


RECORDED = recorded_links()


def hostile_query(page: Page, rng: random.Random, run_ids: list[int], corpus: dict) -> dict[str, str]:
    """A valid query for ``page`` with one to three values, on its own keys or unknown ones, from ``corpus``."""
    query = random_query(page.file, rng, run_ids)
    keys = sorted({*query, *(k for q in RECORDED.get(page.file, []) for k in q)} - {"lang"})
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(keys) if keys and rng.random() < 0.8 else rng.choice(corpus["unknown_keys"])
        query[name] = rng.choice(corpus["values"])
    if rng.random() < 0.2:
        query["lang"] = rng.choice(corpus["lang"])
    return query


def view(page: str, query: dict[str, str], upload: tuple[str, bytes] | None = None) -> int:
    """Open ``page`` as a new visitor with ``query`` (then upload ``upload``, if given); the page's exceptions."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / page), default_timeout=180)
    for name, value in query.items():
        if value != "":
            at.query_params[name] = value
    at.run()
    if upload is not None and not at.exception:
        at.file_uploader(key="measured.files").upload(upload[0], upload[1], "text/csv")
        at.run()
    for exc in at.exception:
        print(f"  exception on {page} {query} (upload: {upload[0] if upload else None}): {exc.value}")
    return len(at.exception)


def seed_library(url: str) -> tuple[list[int], list[tuple[str, bytes]]]:
    """Save every sample file as a run in the library at ``url``: (run ids, [(file name, content)])."""
    from specviz.data import measurements, store

    engine = store.open_library(url)
    ids, files = [], []
    for name in measurements.available_samples():
        data = (measurements.SAMPLES_DIR / name).read_bytes()
        frame, report = measurements.load_measurements(data, name=name)
        ids.append(store.save_run(engine, frame, label=Path(name).stem, source=name, report=report.summary()))
        files.append((name, data))
    engine.dispose()
    return ids, files


def cache_line() -> str:
    """What the bounded caches hold now: st.cache_data (pickled bytes), the run cache, the sampling lab's results."""
    from streamlit.runtime.caching import get_data_cache_stats_provider

    from specviz.app import ui

    stats = [s for family in get_data_cache_stats_provider().get_stats().values() for s in family]
    functions = {s.cache_name for s in stats}
    lab = ui.shared_results("lab.simulations")  # the sampling lab's store
    return (
        f"st.cache_data {sum(s.byte_length for s in stats) / 1e6:,.1f} MB over {len(functions)} functions; "
        f"run cache {ui._RUNS.nbytes / 1e6:,.1f} MB; "
        f"sampling lab results {lab.nbytes / 1e6:,.1f} MB"
    )


def quiet_streamlit() -> None:
    """No "missing ScriptRunContext" warnings: the report stays quotable."""
    import streamlit.config
    import streamlit.logger

    streamlit.config.set_option("logger.level", "critical")
    streamlit.logger.set_log_level("CRITICAL")


def single(args) -> None:
    """The one-process mode: ``args.views`` AppTest views after a warm-up, RSS of this process."""
    tmp = tempfile.TemporaryDirectory(prefix="specviz-soak-")
    os.environ["SPECVIZ_DB_URL"] = f"sqlite:///{Path(tmp.name) / 'library.sqlite'}"
    os.environ["SPECVIZ_TUNE_DIR"] = str(Path(tmp.name) / "tunes")
    start = rss_mb()
    import streamlit

    quiet_streamlit()
    print(machine_line(f"streamlit {streamlit.__version__}"))
    print(
        f"specviz soak: {args.views} page views after a warm-up, seed={SEED}, pages in turn: {', '.join(p.file for p in PAGES)}"
    )
    run_ids, files = seed_library(os.environ["SPECVIZ_DB_URL"])
    rng = random.Random(args.seed)

    exceptions = 0
    t0 = time.perf_counter()
    library = "pages/run-library.py"  # its views upload a sample file half the time
    for page in (p.file for p in PAGES):  # warm-up: defaults, then random parameters
        exceptions += view(page, {})
        exceptions += view(page, random_query(page, rng, run_ids), rng.choice(files) if page == library else None)
    gc.collect()
    warm = rss_mb()
    print(
        f"\nRSS at start {fmt_mb(start)}; after the warm-up ({2 * len(PAGES)} views, {time.perf_counter() - t0:.1f} s) "
        f"{fmt_mb(warm)}"
    )

    t0 = time.perf_counter()
    for i in range(args.views):
        page = PAGES[i % len(PAGES)].file
        upload = rng.choice(files) if page == library and rng.random() < 0.5 else None
        exceptions += view(page, random_query(page, rng, run_ids), upload)
        if (i + 1) % 50 == 0 or i + 1 == args.views:
            gc.collect()
            rss = rss_mb()
            growth = "" if rss is None or warm is None else f" (+{rss - warm:,.1f} MB since the warm-up)"
            print(f"  after {i + 1:>3} views ({time.perf_counter() - t0:6.1f} s): RSS {fmt_mb(rss)}{growth}")
            print(f"      {cache_line()}")
    end = rss_mb()
    tmp.cleanup()
    trimmed = rss_after_malloc_trim()
    if trimmed is not None and end is not None:
        print(
            f"  context: RSS after malloc_trim(0) {fmt_mb(trimmed)} ({end - trimmed:,.1f} MB freed but held by the allocator)"
        )

    print()
    if warm is None or end is None:
        record(f"RSS growth over {args.views} views", "n/a (no /proc/self/status)", f"<= {TARGET_MB:g} MB", None)
    else:
        growth = end - warm
        record(
            f"RSS growth over {args.views} views",
            f"{growth:+,.1f} MB ({fmt_mb(warm)} -> {fmt_mb(end)})",
            f"<= {TARGET_MB:g} MB",
            growth <= TARGET_MB,
        )
    record("page exceptions", str(exceptions), "0", exceptions == 0)


@dataclass
class Tally:
    """What the concurrent sessions saw: rerun times, exception boxes (with where), refusals, RSS samples."""

    seconds: list[float] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    errors: int = 0
    timeouts: int = 0
    not_found: int = 0
    views: int = 0
    uploads: int = 0
    hostile: int = 0
    failures: list[str] = field(default_factory=list)  # a session that broke off (its error), then reopened

    def add(self, v, where: str) -> None:
        self.views += 1
        self.seconds.append(v.seconds)
        self.errors += v.errors
        self.timeouts += v.timed_out
        self.not_found += v.not_found
        self.exceptions += [f"{where}: {e}" for e in v.exceptions]


def hostile_upload(rng: random.Random, samples: list[tuple[str, bytes]], types: list[str]) -> tuple[str, bytes]:
    """A file for an uploader accepting ``types``: mostly from the hostile corpus, else a valid sample file;
    named with an accepted extension, as anyone can rename a file. (The frontend refuses other extensions
    before uploading; a client that skips it gets Streamlit's own "Invalid file extension" exception box.)"""
    if samples and rng.random() < 0.25:
        name, data = rng.choice(samples)
    else:
        path = rng.choice(sorted((HOSTILE / "uploads").iterdir()))
        name, data = path.name, path.read_bytes()
    stem, ext = Path(name).stem, Path(name).suffix
    if types and ext not in types:
        ext = rng.choice(types)
    return f"{stem}{ext}", data


async def visitor(n: int, base: str, until: float, seed: int, ctx: dict, tally: Tally) -> None:
    """One visitor after another in one seat: page views (half hostile), uploads, a new session every 8 views."""
    from _sessions import Session

    rng = random.Random(seed * 1000 + n)
    await asyncio.sleep(rng.uniform(0, 5))  # not all at the same instant
    session, in_session = None, 0
    while time.monotonic() < until:
        page = rng.choice(PAGES)
        try:
            if session is None or in_session >= 8:
                if session is not None:
                    await session.close()
                session, in_session = Session(base), 0
                await session.open()
            hostile = rng.random() < 0.5
            query = (hostile_query if hostile else lambda p, r, i, c: random_query(p.file, r, i))(
                page, rng, ctx["run_ids"], ctx["corpus"]
            )
            tally.hostile += hostile
            upload = page.upload is not None and rng.random() < 0.5
            if upload:
                query = {**query, **page.upload}
            v = await session.run(page.path, query)
            tally.add(v, f"/{page.path}?{session.query}")
            in_session += 1
            if upload and v.uploaders:
                uploader = rng.choice(sorted(v.uploaders))
                name, data = hostile_upload(rng, ctx["samples"], v.uploaders[uploader])
                tally.uploads += 1
                tally.add(await session.upload(page.path, uploader, name, data), f"/{page.path} upload {name}")
        except Exception as exc:  # the connection broke: counted, and the seat opens a new session
            tally.failures.append(f"/{page.path}: {type(exc).__name__}: {exc}"[:200])
            session = None
        await asyncio.sleep(rng.uniform(0.5, 3.0))  # a person reads the page
    if session is not None:
        await session.close()


async def drive(base: str, pid: int, sessions: int, minutes: float, seed: int, ctx: dict) -> tuple:
    """Warm-up (each page once, then all seats for a fifth of the time), then the rest; RSS every 10 s."""
    from _sessions import Session, rss_mb

    warm_tally, tally = Tally(), Tally()
    session = Session(base)
    await session.open()
    for page in PAGES:  # every page once with its defaults: imports, fonts, first caches
        warm_tally.add(await session.run(page.path, {}), f"/{page.path} (warm-up)")
    await session.close()
    t0 = time.monotonic()
    warm_until, until = t0 + 60 * minutes / 5, t0 + 60 * minutes
    samples: list[tuple[float, float]] = []

    async def sample() -> None:
        while time.monotonic() < until:
            rss = rss_mb(pid)
            if rss is not None:
                samples.append((time.monotonic() - t0, rss))
            if len(samples) % 6 == 0:
                held = await asyncio.to_thread(server_caches, base)
                print(f"  {samples[-1][0] / 60:5.1f} min: server RSS {rss:,.1f} MB; {fmt_caches(held)}", flush=True)
            await asyncio.sleep(10)

    sampler = asyncio.create_task(sample())
    seats = [asyncio.create_task(visitor(n, base, warm_until, seed, ctx, warm_tally)) for n in range(sessions)]
    await asyncio.gather(*seats)
    warm = rss_mb(pid)
    held = await asyncio.to_thread(server_caches, base)
    print(f"  warm-up done ({warm_tally.views} views): server RSS {warm:,.1f} MB; {fmt_caches(held)}", flush=True)
    seats = [asyncio.create_task(visitor(n, base, until, seed + 1, ctx, tally)) for n in range(sessions)]
    await asyncio.gather(*seats)
    end = rss_mb(pid)
    sampler.cancel()
    print(f"  end: server RSS {end:,.1f} MB; {fmt_caches(await asyncio.to_thread(server_caches, base))}", flush=True)
    return warm_tally, tally, warm, end, samples


_METRIC = re.compile(r'^cache_memory_bytes\{cache_type="([^"]*)"(?:,cache="([^"]*)")?\} (\S+)$')


def server_caches(base: str) -> tuple[dict[str, float], dict[str, float]] | None:
    """(MB held per cache kind: st.cache_data, st.cache_resource, session state, uploads, media; MB per cached
    function) in the server, from Streamlit's public ``/_stcore/metrics`` endpoint; the server runs with
    ``server.enableExpensiveMemoryStats`` so objects are measured in bytes, not counted. None if unreachable."""
    import httpx

    try:
        text = httpx.get(f"{base}/_stcore/metrics", params={"families": "cache_memory_bytes"}, timeout=60).text
    except httpx.HTTPError:
        return None
    kinds: dict[str, float] = {}
    functions: dict[str, float] = {}
    for line in text.splitlines():
        if m := _METRIC.match(line):
            kinds[m[1]] = kinds.get(m[1], 0.0) + float(m[3]) / 1e6
            if m[2]:
                functions[m[2]] = functions.get(m[2], 0.0) + float(m[3]) / 1e6
    return kinds, functions


def fmt_caches(held: tuple[dict[str, float], dict[str, float]] | None) -> str:
    if held is None:
        return "caches: n/a"
    kinds, functions = held
    largest = sorted(functions.items(), key=lambda kv: -kv[1])[:3]
    return (
        "caches: "
        + ", ".join(f"{k} {v:,.1f} MB" for k, v in sorted(kinds.items()))
        + f" (sum {sum(kinds.values()):,.1f} MB; largest: "
        + ", ".join(f"{k.rsplit('.', 1)[-1]} {v:,.1f} MB" for k, v in largest)
        + ")"
    )


def concurrent(sessions: int, minutes: float, seed: int) -> None:
    """The concurrent mode: ``streamlit run app.py`` and ``sessions`` WebSocket sessions for ``minutes``."""
    sys.path.insert(0, str(ROOT / "tests"))
    import streamlit
    from _browser import streamlit_server
    from _sessions import server_pid

    print(machine_line(f"streamlit {streamlit.__version__}"))
    print(
        f"specviz soak, concurrent: {sessions} sessions for {minutes:g} min against streamlit run app.py, "
        f"seed={seed}; pages: {', '.join('/' + p.path for p in PAGES)}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="specviz-soak-"))
    url = f"sqlite:///{tmp / 'library.sqlite'}"
    run_ids, samples = seed_library(url)
    ctx = {"run_ids": run_ids, "samples": samples, "corpus": json.loads((HOSTILE / "links.json").read_text("utf-8"))}
    # The client carries no XSRF cookie (a browser would); every other setting is the deployed default.
    # The cache sizes come from the metrics endpoint, in bytes (not entry counts) with expensive stats on.
    env = {
        "SPECVIZ_DB_URL": url,
        "SPECVIZ_TUNE_DIR": str(tmp / "tunes"),
        "STREAMLIT_SERVER_ENABLE_XSRF_PROTECTION": "false",
        "STREAMLIT_SERVER_ENABLE_EXPENSIVE_MEMORY_STATS": "true",
    }
    t0 = time.perf_counter()
    with streamlit_server("app.py", tmp / "server.log", env=env, timeout_s=120) as base:
        pid = server_pid(int(base.rsplit(":", 1)[1]))
        warm_tally, tally, warm, end, rss = asyncio.run(drive(base, pid, sessions, minutes, seed, ctx))
    wall = time.perf_counter() - t0
    both = [warm_tally, tally]
    exceptions = [e for t in both for e in t.exceptions]
    times = sorted(tally.seconds)
    p50 = statistics.median(times) if times else float("nan")
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))] if times else float("nan")
    print(
        f"\n{sum(t.views for t in both)} reruns in {wall / 60:.1f} min ({sum(t.uploads for t in both)} uploads, "
        f"{sum(t.hostile for t in both)} hostile links); {sum(t.errors for t in both)} error messages shown "
        f"(refusals in words); {sum(t.not_found for t in both)} page-not-found; "
        f"{sum(t.timeouts for t in both)} reruns over 180 s; {sum(len(t.failures) for t in both)} broken connections"
    )
    print(f"after the warm-up: rerun p50 {p50:.2f} s, p95 {p95:.2f} s, max {times[-1] if times else 0:.2f} s")
    if rss:
        print(
            f"server RSS: peak {max(r for _, r in rss):,.1f} MB; samples (min, MB): "
            + ", ".join(f"{t / 60:.0f}:{r:.0f}" for t, r in rss[:: max(1, len(rss) // 12)])
        )
    for line in sorted(set(exceptions))[:20]:
        print(f"  exception box: {line}")
    for line in sorted({f for t in both for f in t.failures})[:10]:
        print(f"  broken connection: {line}")
    print()
    record("exception boxes", str(len(exceptions)), "0", not exceptions)
    if warm is None or end is None:
        record("server RSS growth", "n/a (no /proc)", f"<= {TARGET_GROWTH:.0%}", None)
    else:
        growth = end / warm - 1
        record(
            "server RSS growth after the warm-up",
            f"{growth:+.1%} ({warm:,.1f} MB -> {end:,.1f} MB)",
            f"<= {TARGET_GROWTH:.0%}",
            growth <= TARGET_GROWTH,
        )
    record("rerun p95 (p50)", f"{p95:.2f} s ({p50:.2f} s) over {len(times)} reruns", "(reported)", None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target fails")
    ap.add_argument("--views", type=int, default=VIEWS, help="one process: page views after the warm-up")
    ap.add_argument("--sessions", type=int, help=f"concurrent: sessions at once against a server (e.g. {SESSIONS})")
    ap.add_argument("--minutes", type=float, help=f"concurrent: how long (default {MINUTES:g}; implies --sessions)")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    for name in ("SPECVIZ_HOSTED", "SPECVIZ_HF_ALLOWLIST", "SPECVIZ_MAX_WALL_S", "SPECVIZ_MAX_NEW_TOKENS"):
        os.environ.pop(name, None)
    if args.sessions is None and args.minutes is None:
        single(args)
    else:
        concurrent(args.sessions or SESSIONS, MINUTES if args.minutes is None else args.minutes, args.seed)
    n_fail = summary(t_start)
    return 1 if (args.strict and n_fail) else 0


if __name__ == "__main__":
    sys.exit(main())

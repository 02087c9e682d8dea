"""Soak test: the server's resident memory over 200 page views with varied parameters.

Run from the repository root::

    python benchmarks/soak.py            # exit 0 even if the target fails
    python benchmarks/soak.py --strict   # exit 1 if it fails

Every view is a new visitor (a fresh ``AppTest``, whose script runs in this process and shares its
caches, as on a server) opening a page with query parameters drawn at random (seeded): the pages in turn,
the Measured data page against a run library in a temporary SQLite file holding the sample files
of data/samples, and half of its views also uploading one of those files. The resident set size
(``VmRSS`` of /proc/self/status) is printed at the start, after a warm-up (two views of every
page with its defaults and with random parameters: imports, fonts, templates) and every 50 views.

Target: the growth after the warm-up stays within 150 MB. Every cache is bounded (``max_entries``
of each ``st.cache_data`` / ``st.cache_resource``, byte caps of ``ui.SharedResults`` and the run
cache), so memory levels off once they fill; a growth beyond the caches' sizes is a leak. The
whole run takes a few minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from _report import ROOT, machine_line, record, summary

SEED = 20261201
VIEWS = 200
TARGET_MB = 150.0
PAGES = (  # the home page links to the others, which only resolves inside the router: open it as app.py
    "app.py",
    "pages/design-space.py",
    "pages/break-even.py",
    "pages/sampling-lab.py",
    "pages/converter.py",
    "pages/run-library.py",
    "pages/compare-runs.py",
    "pages/live.py",
)


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
    return {}


def view(page: str, query: dict[str, str], upload: tuple[str, bytes] | None = None) -> int:
    """Open ``page`` as a new visitor with ``query`` (then upload ``upload``, if given); the page's exceptions."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strict", action="store_true", help="exit 1 if the target fails")
    ap.add_argument("--views", type=int, default=VIEWS, help="page views after the warm-up")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    tmp = tempfile.TemporaryDirectory(prefix="specviz-soak-")
    os.environ["SPECVIZ_DB_URL"] = f"sqlite:///{Path(tmp.name) / 'library.sqlite'}"
    for name in ("SPECVIZ_HOSTED", "SPECVIZ_HF_ALLOWLIST", "SPECVIZ_MAX_WALL_S", "SPECVIZ_MAX_NEW_TOKENS"):
        os.environ.pop(name, None)
    start = rss_mb()
    import streamlit

    quiet_streamlit()
    print(machine_line(f"streamlit {streamlit.__version__}"))
    print(f"specviz soak: {args.views} page views after a warm-up, seed={SEED}, pages in turn: {', '.join(PAGES)}")
    run_ids, files = seed_library(os.environ["SPECVIZ_DB_URL"])
    rng = random.Random(SEED)

    exceptions = 0
    t0 = time.perf_counter()
    for page in PAGES:  # warm-up: defaults, then random parameters
        exceptions += view(page, {})
        exceptions += view(page, random_query(page, rng, run_ids), rng.choice(files) if "measured" in page else None)
    gc.collect()
    warm = rss_mb()
    print(
        f"\nRSS at start {fmt_mb(start)}; after the warm-up ({2 * len(PAGES)} views, {time.perf_counter() - t0:.1f} s) "
        f"{fmt_mb(warm)}"
    )

    t0 = time.perf_counter()
    for i in range(args.views):
        page = PAGES[i % len(PAGES)]
        upload = rng.choice(files) if "measured" in page and rng.random() < 0.5 else None
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
    n_fail = summary(t_start)
    return 1 if (args.strict and n_fail) else 0


if __name__ == "__main__":
    sys.exit(main())

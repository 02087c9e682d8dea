"""The Server monitor's A/B load comparison: what one load run sends, the counters read around each run,
the speedup and c measured from the runs, their rows for the run library and for the table."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from specviz.app import ui
from specviz.base.i18n import N_
from specviz.data import store
from specviz.data.measurements import load_records as measurement_records
from specviz.servers import Telemetry, Window, fetch, loadgen, monitor, window

PAGE = "server-monitor"
LOAD = ui.key(PAGE, "_load")  #: session state: the last comparison (its stop event, results, records, speedup, c)

RUN_KEYS = {
    "with speculation": N_("with speculation"),
    "target only": N_("target only"),
    "draft only": N_("draft only"),
}  #: the runs of a comparison -> their names as shown
LOAD_READ_TIMEOUT_S = 120.0  #: a completion may wait this long for its first chunk (a long prompt's prefill, a queue)
#: The serving statistics of the load table: its column header → (the LoadResult statistic, its field).
NO_COUNTERS = N_("the server reports no speculative-decoding counters")
LATENCY_COLUMNS = {
    f"{name} {q} (ms)": (stat, q)
    for name, stat in (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"))
    for q in ("p50", "p90", "p99")
}


@dataclass(frozen=True)
class LoadPlan:
    """One comparison as the page's controls give it: the endpoint of each run (``RUN_KEYS`` order, empty:
    not run), the model, the load's shape (tokens, concurrency, caps, Poisson rate in requests/s or None,
    seed), the K assumed for counters that give none, and the prompts (empty: the bundled ones)."""

    urls: tuple[tuple[str, str], ...]
    model: str
    tokens: int
    concurrency: int
    requests: int
    seconds: int
    rate: float | None
    seed: int
    k: int
    prompts: tuple[str, ...] = ()

    @classmethod
    def of(cls, view: Mapping, rate: float | None, prompts_text: str) -> LoadPlan:
        given = {"with speculation": view["lg_spec"], "target only": view["lg_base"], "draft only": view["lg_draft"]}
        return cls(
            tuple((name, u.strip()) for name, u in given.items() if u.strip()),
            view["lg_model"],
            view["lg_tokens"],
            view["lg_conc"],
            view["lg_req"],
            view["lg_sec"],
            rate,
            view["lg_seed"],
            view["k"],
            tuple(p for p in prompts_text.splitlines() if p.strip()),
        )

    def spec(self, url: str) -> loadgen.LoadSpec:
        """The load sent to ``url`` (ValueError naming a field out of range)."""
        return loadgen.LoadSpec(
            url,
            list(self.prompts) or loadgen.bundled_prompts(),
            model=self.model,
            max_tokens=self.tokens,
            concurrency=self.concurrency,
            max_requests=self.requests,
            max_seconds=float(self.seconds),
            rate=self.rate,
            seed=self.seed,
        )


def policy() -> fetch.FetchPolicy:
    """This deployment's fetch rules (the hosted allow-list from the environment)."""
    return fetch.policy_from_env()


def load_policy() -> fetch.FetchPolicy:
    """The fetch rules for completions: a whole completion is one answer, so the read timeout is longer."""
    return dataclasses.replace(policy(), read_timeout_s=LOAD_READ_TIMEOUT_S)


@st.cache_resource(max_entries=4)
def http_client(policy: fetch.FetchPolicy):
    """One pooled HTTP client per fetch policy, shared by every session of this server."""
    return fetch.make_client(policy, max_connections=2 * monitor.MAX_ENDPOINTS)


def counters(url: str, k: int) -> Telemetry | None:
    """The speculative counters of the server behind completions URL ``url`` (its /metrics); None where
    it has none to read (no /metrics, speculation off, an engine without counters)."""
    endpoint = monitor.Endpoint(loadgen.metrics_url(url))
    return monitor.poll(endpoint, policy(), k, client=http_client(policy())).reading


def counters_window(before: Telemetry | None, after: Telemetry | None) -> Window | None:
    """The window of two readings of a server's counters around a run (None without both)."""
    if before is None or after is None:
        return None
    try:
        return window(before, after)
    except ValueError:  # the readings name two stacks: the server was replaced during the run
        return None


def load_records(results: dict, windows: dict, urls: Mapping[str, str], k: int) -> dict:
    """Each run as a row of the run library (:func:`loadgen.load_record`), or the message saying why it
    cannot be one (a run without speculation has no acceptance figure). The run with speculation carries
    the measured speedup when the target-only run was made."""
    records = {}
    for name, result in results.items():
        w = windows.get(name)
        mode = f"{result.rate:g} req/s" if result.rate is not None else f"concurrency {result.concurrency}"
        try:
            records[name] = loadgen.load_record(
                result,
                label=f"load {name}, {mode}: {urls[name]}"[:200],
                k=(w.k if w is not None and w.k else k),
                window=w,
                baseline=results.get("target only") if name == "with speculation" else None,
                source="engine monitor",
            )
        except ValueError as exc:
            records[name] = exc
    return records


def compared(results: dict) -> dict:
    """The measured speedup (with ÷ without speculation, tokens/s) and c (draft-only ÷ target-only tokens/s,
    = T_target / T_draft) of the runs that were made; ValueError naming a run without tokens."""
    out = {}
    if "target only" in results:
        out["speedup"] = loadgen.measured_speedup(results["with speculation"], results["target only"])
    if "target only" in results and "draft only" in results:
        draft_tps, target_tps = results["draft only"].tokens_per_s, results["target only"].tokens_per_s
        if draft_tps > 0 and target_tps > 0:
            out["c"] = draft_tps / target_tps
    return out


def load_rows(results: dict, t: Callable[..., str]) -> list[dict]:
    """The load table: one row per run, headers and names in the language of ``t``."""
    return [
        {
            t("endpoint"): t(RUN_KEYS[name]),
            t("load"): (
                t("{rate} requests/s, at most {n} in flight", rate=f"{r.rate:g}", n=r.concurrency)
                if r.rate is not None
                else t("{n} in flight", n=r.concurrency)
            ),
            t("requests"): r.done,
            t("failed"): r.failed,
            t("tokens"): r.tokens,
            "tokens/s": r.tokens_per_s,
            t("requests/s"): r.requests_per_s,
            t("p50 latency (ms)"): r.latency_p50_s * 1e3,
            **{header: getattr(getattr(r, stat), q) * 1e3 for header, (stat, q) in LATENCY_COLUMNS.items()},
            t("draft acceptance"): r.draft_acceptance,
        }
        for name, r in results.items()
    ]


def run_load(plan: LoadPlan) -> None:
    """Run the load on each endpoint given, with a progress bar; keep the results in the session.

    Each endpoint's /metrics is read before and after its run: the window of its speculative counters
    over the run (where the server has them) goes into the run's row of the run library.
    """
    urls = dict(plan.urls)
    if "with speculation" not in urls:
        st.error(ui.t("Load generator: 'With speculation' is empty; give the URL of the server to load."))
        return
    stop = threading.Event()
    st.session_state[LOAD] = {"stop": stop}
    results, windows = {}, {}
    for name, url in urls.items():
        shown = ui.t(RUN_KEYS[name])
        bar = st.progress(0.0, text=ui.t("{run}: starting", run=shown))
        try:
            spec = plan.spec(url)
            before = counters(url, plan.k)
            results[name] = loadgen.run_load(
                spec,
                load_policy(),
                stop=stop,
                progress=lambda p, bar=bar, shown=shown, spec=spec: bar.progress(
                    min(p.done / spec.max_requests, 1.0),
                    text=ui.t(
                        "{run}: {done} requests, {tps} tokens/s", run=shown, done=p.done, tps=f"{p.tokens_per_s:.1f}"
                    ),
                ),
            )
            windows[name] = counters_window(before, counters(url, plan.k))
        except ValueError as exc:
            ui.show_error(exc)
            return
        finally:
            bar.empty()
        if stop.is_set():
            break
    entry = {"stop": stop, "results": results, "records": load_records(results, windows, urls, plan.k)}
    try:
        entry |= compared(results)
    except ValueError as exc:
        ui.show_error(exc)
    st.session_state[LOAD] = entry


def show_load(results: dict, who) -> None:
    """The load runs' table (headers in the session's language), their errors, the speedup and c, and a
    button per run that saves it to the run library."""
    entry = st.session_state[LOAD]
    frame = pd.DataFrame(load_rows(results, ui.t))
    ms = ui.Col(kind="number", digits=1)
    counts = dict.fromkeys((ui.t("requests"), ui.t("failed"), ui.t("tokens")), ui.Col(kind="int"))
    ui.table(
        frame,
        counts
        | dict.fromkeys([ui.t("p50 latency (ms)"), *LATENCY_COLUMNS, "tokens/s"], ms)
        | {ui.t("requests/s"): ui.Col(kind="number", digits=2)}
        | {ui.t("draft acceptance"): ui.Col(kind="percent", digits=1, missing=NO_COUNTERS)},
    )
    save_buttons(entry.get("records", {}), who)
    for name, r in results.items():
        if r.errors:
            st.warning(ui.t("{run}: {summary}", run=ui.t(RUN_KEYS[name]), summary=ui.message(r.summary())))
    parts = []
    if "speedup" in entry:
        parts.append(ui.t("measured speedup {s}×", s=f"{entry['speedup']:.2f}"))
    if "c" in entry:
        parts.append(
            ui.t(
                "measured c = {c} (choose '{source}' above to use it)",
                c=f"{entry['c']:.2f}",
                source=ui.t("measured by the load generator"),
            )
        )
    if parts:
        st.success("; ".join(parts), icon=":material/speed:")


def save_buttons(records: dict, who) -> None:
    """A button per run that can be a row of the run library; for the others, why not."""
    for name, record in records.items():
        shown = ui.t(RUN_KEYS[name])
        if isinstance(record, Exception):
            st.caption(ui.t("{run}: not saved to the run library: {why}", run=shown, why=ui.message(record)))
            continue
        slug = name.replace(" ", "_")
        if st.button(
            ui.t("Save the run '{run}' to the run library", run=shown),
            icon=":material/save:",
            key=ui.key(PAGE, f"lg_save_{slug}"),
        ):
            save_record(record, who)


def save_record(record: dict, who) -> None:
    """Validate ``record`` as any upload is, and store it as one run."""
    engine = ui.library()
    if engine is None:
        return
    try:
        frame, _ = measurement_records([record], name=record["label"])
        run_id = store.save_run(
            engine, frame, label=record["label"], source="engine monitor load generator", who=who, page=PAGE
        )
    except ValueError as exc:
        ui.show_error(exc)
        return
    st.success(
        ui.t("Saved as run #{run}: [open it on the Compare runs page](compare-runs?runs={run}).", run=run_id),
        icon=":material/check_circle:",
    )

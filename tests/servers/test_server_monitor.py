"""The Server monitor page (AppTest) and its logic, against local fake engines over loopback."""

from __future__ import annotations

import base64
import json
import threading
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from _apps import click, open_app, rerun, shown_errors
from _http import FakeEngine, closed_port, send_bytes, serve, vllm_metrics

from specviz.core import theory
from specviz.data import store
from specviz.servers import Telemetry, fetch, monitor

PAGE = "pages/server-monitor.py"
#: TensorRT-LLM's JSON iteration stats (draftOverhead 0.248 over 12.5 ms and 0.252 over 12.7 ms; K = 3)
TRTLLM_STATS = json.dumps(
    json.loads((Path(__file__).parents[1] / "fixtures" / "stacks" / "trtllm-iteration-stats.json").read_text())["body"]
)


class GrowingVLLM:
    """A vLLM /metrics whose counters grow by one interval's worth at every scrape (K = 3).

    Each scrape adds 100 drafts, 300 draft tokens, 180 accepted tokens (per position 80, 60, 40)
    and 400 generated tokens; ``restart()`` sets them back to one interval.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scrapes = 0

    def restart(self) -> None:
        with self.lock:
            self.scrapes = 0

    def text(self) -> str:
        with self.lock:
            self.scrapes += 1
            n = self.scrapes
        return vllm_metrics(n)

    def route(self, h) -> None:
        send_bytes(h, self.text().encode(), content_type="text/plain; version=0.0.4")


@pytest.fixture
def engine(db_url):
    fake = GrowingVLLM()
    with serve({("GET", "/metrics"): fake.route}) as url:
        yield fake, url


def metric_values(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


# --- logic ----------------------------------------------------------------------------------


def test_parse_endpoints_adds_metrics_and_checks_each_line():
    policy = fetch.FetchPolicy()
    got = monitor.parse_endpoints("http://a:8000\n\n# comment\nhttp://b:30000/metrics sglang\nhttp://a:8000", policy)
    assert got == [monitor.Endpoint("http://a:8000/metrics"), monitor.Endpoint("http://b:30000/metrics", "sglang")]
    with pytest.raises(ValueError, match=r"line 2: serving stack 'tgi' is not one of auto, vllm"):
        monitor.parse_endpoints("http://a:8000\nhttp://b tgi", policy)
    with pytest.raises(ValueError, match="line 1"):
        monitor.parse_endpoints("ftp://a/metrics", policy)
    hosted = fetch.FetchPolicy(allowed_hosts=("gpu-1",), hosted=True)
    assert monitor.parse_endpoints("http://gpu-1:8000", hosted)[0].url == "http://gpu-1:8000/metrics"
    with pytest.raises(ValueError, match="refused"):
        monitor.parse_endpoints("http://169.254.169.254/latest", hosted)


def test_poll_all_reads_every_endpoint_and_keeps_failures_apart(engine):
    _fake, url = engine
    dead = f"http://127.0.0.1:{closed_port()}/metrics"
    endpoints = [monitor.Endpoint(url + "/metrics"), monitor.Endpoint(dead)]
    history = monitor.History()
    for _ in range(3):
        history.add(monitor.poll_all(endpoints, fetch.FetchPolicy(), 3))
    assert "nothing is listening" in history.errors[dead]
    s = monitor.summary(history.of(url + "/metrics"), 4)
    assert s.k == 3 and s.latest.drafts == 100 and s.overall.drafts == 200
    assert s.overall.mean_acceptance_length == pytest.approx(2.8)
    rates = monitor.rates(history.of(url + "/metrics"))
    assert len(rates) == 2 and list(rates["mean_length"]) == pytest.approx([2.8, 2.8])
    assert (rates["accepted_per_s"] > 0).all()


def test_design_point_places_the_window_and_finds_the_best_k(engine):
    _fake, url = engine
    t = monitor.poll(monitor.Endpoint(url + "/metrics"), fetch.FetchPolicy(), None).reading
    w = monitor.summary([t], 3).overall
    point = monitor.design_point(w, 3, 8.0, label="fake")
    assert point.alpha == pytest.approx(theory.alpha_from_mean_tokens(2.8, 3))
    best = theory.optimal_k(point.alpha, 8.0, k_max=16)
    assert (point.best_k, point.best_speedup) == (int(best.k), pytest.approx(float(best.speedup)))
    assert point.frame["c_used"].iloc[0] == 8.0


# --- the page -------------------------------------------------------------------------------


@pytest.mark.slow
def test_page_without_endpoints_says_how_to_start(db_url):
    at = open_app(PAGE)
    assert at.title[0].value == "Server monitor"
    assert "python -m specviz gguf" in at.info[0].value


@pytest.mark.slow
def test_page_polls_an_engine_and_shows_its_figures(engine):
    _fake, url = engine
    at = open_app(PAGE, endpoints=url, k="4", c="8")
    m = metric_values(at)
    assert m["Mean acceptance length"] == "2.800"
    assert m["α at K = 3"] == f"{theory.alpha_from_mean_tokens(2.8, 3):.3f}"  # the engine's K, not the assumed 4
    assert m["Acceptance rate"] == "0.600"
    rerun(at)  # a second poll: the window since monitoring started, and tokens/s
    assert metric_values(at)["Mean acceptance length"] == "2.800"
    assert metric_values(at)["Tokens/s (last interval)"] != "—"
    assert any("best K" in c.value for c in at.caption)
    # vLLM reports no draft overhead: no metric, no series
    assert "Draft overhead" not in metric_values(at)
    assert "fig_overhead" not in [c.key for c in at.get("plotly_chart")]


@pytest.mark.slow
def test_page_shows_tensorrt_llm_draft_overhead_and_its_series(db_url):
    body = TRTLLM_STATS.encode()
    with serve({("GET", "/metrics"): lambda h: send_bytes(h, body, content_type="application/json")}) as url:
        at = open_app(PAGE, endpoints=f"{url} trtllm", k="3")
        m = metric_values(at)
        assert m["Draft overhead"] == "25.0%"  # (0.248 · 12.5 + 0.252 · 12.7) / 25.2, iteration-time weighted
        assert m["Mean acceptance length"] == "2.750"
        rerun(at)  # a second reading: a second point of the series
    charts = {c.key: c for c in at.get("plotly_chart")}
    assert "fig_overhead" in charts
    (trace,) = json.loads(charts["fig_overhead"].proto.spec)["data"]
    y = trace["y"]  # plotly's typed array: {"dtype": "f8", "bdata": base64}
    values = np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]) if isinstance(y, dict) else y
    assert list(values) == pytest.approx([(0.248 * 12.5 + 0.252 * 12.7) / 25.2] * 2)


@pytest.mark.slow
def test_page_reacts_to_c(engine):
    _fake, url = engine
    at = open_app(PAGE, endpoints=url, c="2")
    slow = metric_values(at)["S at K = 3"]
    at.number_input(key="server-monitor.c").set_value(20.0)
    rerun(at)
    fast = metric_values(at)["S at K = 3"]
    alpha = theory.alpha_from_mean_tokens(2.8, 3)
    assert (slow, fast) == (
        f"{float(theory.speedup(alpha, 2.0, 3)):.2f}×",
        f"{float(theory.speedup(alpha, 20.0, 3)):.2f}×",
    )


def test_page_restores_from_query_params(engine):
    fake, url = engine
    at = open_app(PAGE, endpoints=f"{url} vllm", every="5", k="6", c_src="hardware", poll="false")
    assert at.text_area(key="server-monitor.endpoints").value == f"{url} vllm"
    assert at.number_input(key="server-monitor.every").value == 5.0
    assert at.number_input(key="server-monitor.k").value == 6
    assert at.toggle(key="server-monitor.poll").value is False
    assert at.selectbox(key="server-monitor.c_src").value == "hardware"
    assert fake.scrapes == 0  # polling off: nothing fetched


def test_a_bad_endpoint_line_is_an_error_naming_it(db_url):
    at = open_app(PAGE, endpoints="http://localhost:8000\nlocalhost:9000")
    assert any("line 2" in e and "no scheme" in e for e in shown_errors(at))


def test_a_dead_endpoint_is_a_message_on_its_card_while_others_poll(engine):
    _fake, url = engine
    at = open_app(PAGE, endpoints=f"http://127.0.0.1:{closed_port()}\n{url}")
    assert any("nothing is listening" in e for e in shown_errors(at))
    assert metric_values(at)["Mean acceptance length"] == "2.800"


def test_an_engine_with_speculation_off_says_so(db_url):
    body = b'vllm:generation_tokens_total{engine="0",model_name="m"} 5\n'
    with serve({("GET", "/metrics"): lambda h: send_bytes(h, body)}) as url:
        at = open_app(PAGE, endpoints=url)
    assert any("speculation is off" in e for e in shown_errors(at))


def test_hosted_mode_refuses_hosts_off_the_allow_list(engine, monkeypatch):
    fake, url = engine
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    monkeypatch.setenv("SPECVIZ_ENGINE_HOSTS", "gpu-node-1:8000")
    at = open_app(PAGE, endpoints=url)
    assert any("refused" in e for e in shown_errors(at))
    assert fake.scrapes == 0


@pytest.mark.slow
def test_a_counter_reset_is_reported_on_the_card(engine):
    fake, url = engine
    at = open_app(PAGE, endpoints=url)
    rerun(at)
    fake.restart()
    rerun(at)
    assert any("restarted" in w.value for w in at.warning)


@pytest.mark.slow
def test_save_a_window_to_the_run_library(engine, db_url):
    _fake, url = engine
    at = open_app(PAGE, endpoints=url, c="8")
    click(at, "Save this window to the run library")
    assert any("Saved as run #1" in s.value for s in at.success)
    runs = store.list_runs(store.open_library(db_url))
    assert len(runs) == 1 and runs["source"].iloc[0] == "engine monitor"
    frame = store.load_run(store.open_library(db_url), 1)
    assert frame["k"].iloc[0] == 3 and frame["mean_accepted_tokens"].iloc[0] == pytest.approx(2.8)


@pytest.mark.slow
def test_load_generator_measures_speedup_and_c(db_url):
    fast, slow, draft = FakeEngine(tokens=8), FakeEngine(tokens=8, delay_s=0.05), FakeEngine(tokens=8)
    with ExitStack() as stack:
        urls = [stack.enter_context(e.running()) for e in (fast, slow, draft)]
        at = open_app(PAGE, lg_spec=urls[0], lg_base=urls[1], lg_draft=urls[2], lg_req="6", lg_conc="2")
        at.session_state["server-monitor._lg"] = True
        rerun(at)
        at.text_area(key="server-monitor.lg_prompts").set_value("def f(x):\nclass A:")
        click(at, "Run load")
    assert len(fast.bodies) == len(slow.bodies) == len(draft.bodies) == 6
    assert any("measured speedup" in s.value and "measured c" in s.value for s in at.success)
    table = at.dataframe[0].value
    assert list(table["requests"]) == [6, 6, 6] and (table["tokens"] == 48).all()


def test_load_generator_without_a_url_is_an_error(db_url):
    at = open_app(PAGE)
    at.session_state["server-monitor._lg"] = True
    rerun(at)
    click(at, "Run load")
    assert any("'With speculation' is empty" in e for e in shown_errors(at))


def test_draft_overheads_over_time_only_where_reported():
    with_it = [
        Telemetry("trtllm", end=10.0, drafts=2, draft_overhead=0.2, cumulative=False),
        Telemetry("trtllm", end=12.0, drafts=2, cumulative=False),  # an interval without the field
        Telemetry("trtllm", end=14.0, drafts=2, draft_overhead=0.3, cumulative=False),
    ]
    series = monitor.draft_overheads(with_it)
    assert list(series["time"]) == [0.0, 4.0] and list(series["draft_overhead"]) == [0.2, 0.3]
    without = [Telemetry("vllm", end=float(t), drafts=10.0 * t) for t in range(3)]
    assert monitor.draft_overheads(without).empty and monitor.draft_overheads([]).empty


def test_an_idle_server_shows_its_counters_since_it_started():
    a = Telemetry("vllm", "m", 3, None, 0.0, 100.0, 300.0, 180.0, (80.0, 60.0, 40.0))
    b = Telemetry("vllm", "m", 3, None, 2.0, 100.0, 300.0, 180.0, (80.0, 60.0, 40.0))
    s = monitor.summary([a, b], 4)
    assert s.overall.rounds == 100 and s.overall.start is None  # since the server started
    assert s.latest.rounds == 0

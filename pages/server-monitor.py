"""Server monitor: the speculation of running vLLM, SGLang, llama.cpp and TensorRT-LLM servers, live."""

import threading

import numpy as np
import streamlit as st

from specviz.app import figures, monitor_load, overlays, queues, router, ui
from specviz.app.scenarios import monitor as scenarios
from specviz.app.scenarios.monitor import PAGE, SPEC
from specviz.app.share import by_key
from specviz.base import access, hosting
from specviz.base.i18n import N_, Phrase
from specviz.core import theory
from specviz.data import store
from specviz.servers import STACKS, loadgen, monitor

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

URL = "server-monitor"
P = by_key(SPEC)
HISTORY, LOAD = ui.key(PAGE, "_history"), monitor_load.LOAD


def setup() -> None:
    """Endpoints, polling, and the K and c to assume."""
    ui.text_box(
        PAGE,
        P["endpoints"],
        area=True,
        placeholder="http://localhost:8000/metrics\nhttp://gpu-node-2:30000 sglang",
        help=ui.t(
            "A server's URL (/metrics is added when the URL has no path), optionally followed by its serving stack: {kinds}. The stack is detected from the answer otherwise.",
            kinds=", ".join(monitor.KINDS),
        ),
        height=110,
    )
    c1, c2, c3, c4 = st.columns([1, 1, 1, 2])
    with c1:
        ui.toggle(PAGE, P["poll"])
    with c2:
        ui.number_input(PAGE, P["every"], step=1.0)
    with c3:
        ui.number_input(PAGE, P["k"], help=ui.t("Used where the serving stack does not state its K"))
    with c4:
        ui.selectbox(PAGE, P["c_src"])
    src = scenarios.scenario(ui.values(PAGE, SPEC)).source.src
    if src == "typed":
        ui.number_input(PAGE, P["c"], "c", step=1.0)
    elif src == "hardware":
        h1, h2, h3, h4 = st.columns([3, 2, 1, 1])
        with h1:
            ui.selectbox(PAGE, P["pair"])
        with h2:
            ui.selectbox(PAGE, P["gpu"], "GPU")
        with h3:
            ui.number_input(PAGE, P["batch"])
        with h4:
            ui.number_input(PAGE, P["ctx"])


def endpoint_card(e: monitor.Endpoint, history: monitor.History, k: int, c: float) -> None:
    """One endpoint: its figures since monitoring started, or why there are none."""
    with st.container(border=True):
        s = monitor.summary(history.of(e.url), k)
        engine = STACKS.get(s.overall.stack, "") if s else (STACKS.get(e.kind, "") if e.kind != "auto" else "")
        name = engine or ui.t("endpoint")
        st.markdown(f"**{ui.plain(name)}** · `{e.url}`")  # the person's own input, shown back
        if e.url in history.errors:
            st.error(ui.plain(ui.public_message(ui.message(history.errors[e.url]))), icon=":material/error:")
        if s is None:
            return
        w = s.overall
        for note in dict.fromkeys(filter(None, (s.latest.reset, w.reset))):
            st.warning(ui.message(note), icon=":material/restart_alt:")
        if w.reading_note:  # e.g. which SGLang version's meaning of its accept rate was applied
            st.caption(ui.t(w.reading_note))
        alpha = w.alpha(s.k)
        cols = st.columns(5 if w.draft_overhead is None else 6)
        cols[0].metric(
            ui.t("Mean acceptance length"),
            _num(w.mean_acceptance_length, ".3f"),
            help=ui.t("E[N] = 1 + accepted / drafts"),
        )
        cols[1].metric(
            ui.t("α at K = {k}", k=s.k),
            _num(alpha, ".3f"),
            help=ui.t("the α whose E[N] at K equals the serving stack's"),
        )
        cols[2].metric(
            ui.t("Acceptance rate"), _num(w.acceptance_rate, ".3f"), help=ui.t("accepted / proposed draft tokens")
        )
        cols[3].metric(ui.t("Tokens/s (last interval)"), _num(s.latest.tokens_per_s, ".1f"))
        if alpha is not None:
            best = theory.optimal_k(alpha, c, k_max=16)
            cols[4].metric(
                ui.t("S at K = {k}", k=s.k),
                f"{float(theory.speedup(alpha, c, s.k)):.2f}×",
                help=ui.t("best K = {k}", k=int(best.k)),
            )
        if w.draft_overhead is not None:  # only engines that report it (TensorRT-LLM)
            cols[5].metric(
                ui.t("Draft overhead"),
                _num(w.draft_overhead, ".1%"),
                help=ui.t(
                    "share of iteration time spent drafting, as the serving stack reports it (TensorRT-LLM's draftOverhead)"
                ),
            )
        st.caption(
            ui.t("{model} · {drafts} drafts", model=w.model or ui.t("model not named"), drafts=f"{w.rounds or 0:,.0f}")
            + " "
            + (ui.t("over {s} s", s=f"{w.seconds:.0f}") if w.seconds else ui.t("since the server started"))
        )


def _num(x, fmt: str) -> str:
    return "—" if x is None or not np.isfinite(x) else format(x, fmt)


def details(e: monitor.Endpoint, history: monitor.History, k: int, c: float, c_note: str) -> None:
    """Per-position acceptance, tokens/s and the draft overhead (where reported) over time, and the engine's
    point on the design space."""
    s = monitor.summary(history.of(e.url), k)
    if s is None or s.overall.mean_acceptance_length is None:
        st.info(ui.t("No drafts from this endpoint yet: send it traffic (the load generator below can)."))
        return
    w = s.overall
    left, right = st.columns(2)
    with left:
        if len(w.unconditional):
            ui.chart(
                figures.acceptance_by_position(w.unconditional, w.conditional, lang=ui.language()), key="fig_positions"
            )
        else:
            st.caption(ui.t("{engine} does not report acceptance per position.", engine=STACKS[w.stack]))
    with right:
        rates = monitor.rates(history.of(e.url))
        if len(rates):
            ui.chart(figures.stack_rates(rates, lang=ui.language()), key="fig_rates")
        else:
            st.caption(ui.t("Tokens/s over time appear after two polls of a server with counters."))
    overheads = monitor.draft_overheads(history.of(e.url))
    if len(overheads):  # only engines that report it (TensorRT-LLM)
        ui.chart(figures.draft_overhead(overheads, lang=ui.language()), key="fig_overhead")
    try:
        point = monitor.design_point(w, s.k, c, label=f"{STACKS[w.stack]} {w.model}".strip())
    except ValueError as exc:
        ui.show_error(exc)
        return
    frame = point.frame.assign(hover=overlays.hover_text(point.frame, lang=ui.language()))
    grid = scenarios.design_grid(s.k, float(c))
    ui.chart(figures.overlay_alpha_c(grid, frame, s.k, lang=ui.language()), key="fig_point")
    st.caption(
        ui.t(
            "{c_note}. At α = {alpha} the server's K = {k} gives S = {s}×; the best K is {best_k} (S = {best_s}×). Below the black S = 1 line speculation costs time.",
            c_note=c_note,
            alpha=f"{point.alpha:.3f}",
            k=s.k,
            s=f"{point.speedup:.2f}",
            best_k=point.best_k,
            best_s=f"{point.best_speedup:.2f}",
        )
    )
    if st.button(ui.t("Save this window to the run library"), icon=":material/save:", key=ui.key(PAGE, "save")):
        engine = ui.library()
        if engine is not None:
            try:
                run_id = store.save_run(
                    engine, point.frame, label=point.frame["label"].iloc[0], source="engine monitor", who=WHO, page=URL
                )
            except ValueError as exc:
                ui.show_error(exc)
            else:
                st.success(
                    ui.t(
                        "Saved as run #{run}: [open it on the Compare runs page](compare-runs?runs={run}).",
                        run=run_id,
                    ),
                    icon=":material/check_circle:",
                )


def monitor_section(endpoints: list[monitor.Endpoint], k: int, c: float, c_note: str) -> None:
    """Poll (when on), then draw every endpoint's card and the chosen one's details."""
    s = scenarios.scenario(ui.values(PAGE, SPEC))  # the fragment reruns alone: its controls read anew
    history = st.session_state.setdefault(HISTORY, monitor.History())
    history.keep([e.url for e in endpoints])
    if s.poll:
        history.add(
            monitor.poll_all(
                endpoints, monitor_load.policy(), k, client=monitor_load.http_client(monitor_load.policy())
            )
        )
    for e in endpoints:
        endpoint_card(e, history, k, c)
    if len(endpoints) > 1:
        ui.number_input(PAGE, P["detail"], ui.t("Details of endpoint number (1–{n})", n=len(endpoints)))
    chosen = endpoints[min(s.detail, len(endpoints)) - 1]
    st.subheader(ui.t("Details: `{url}`", url=chosen.url))
    details(chosen, history, k, c, c_note)


def load_section() -> None:
    """Send prompts to one to three endpoints and measure tokens/s, the speedup and c."""
    st.caption(
        ui.t(
            "Sends the bundled prompts (or yours) to OpenAI-compatible /v1/completions endpoints, one after the other: the server with speculation, the same target without it, and optionally the draft model alone. Speedup = tokens/s with ÷ without; c = draft-only ÷ target-only tokens/s (run at concurrency 1)."
        )
    )
    a, b, d = st.columns(3)
    with a:
        ui.text_box(PAGE, P["lg_spec"], placeholder="http://localhost:8080")
    with b:
        ui.text_box(PAGE, P["lg_base"])
    with d:
        ui.text_box(PAGE, P["lg_draft"])
    m, n1, n2, n3, n4 = st.columns([2, 1, 1, 1, 1])
    with m:
        ui.text_box(PAGE, P["lg_model"])
    with n1:
        ui.number_input(PAGE, P["lg_conc"], help=ui.t("Requests in flight: always (closed loop), at most (open loop)"))
    with n2:
        ui.number_input(PAGE, P["lg_req"])
    with n3:
        ui.number_input(PAGE, P["lg_sec"])
    with n4:
        ui.number_input(PAGE, P["lg_tokens"])
    r1, r2, _ = st.columns([2, 1, 2])
    with r1:
        ui.text_box(
            PAGE,
            P["lg_rate"],
            placeholder="2.5",
            help=ui.t(
                "Open loop: requests arrive as a Poisson process at this rate, each sent at its arrival whether or not earlier ones have finished (as vllm bench serve --request-rate). Empty: a closed loop, a new request as soon as one ends."
            ),
        )
    with r2:
        ui.number_input(PAGE, P["lg_seed"], help=ui.t("The same seed gives the same arrival times"))
    own = st.text_area(ui.t("Your prompts, one per line (empty: the bundled prompts)"), key=ui.key(PAGE, "lg_prompts"))
    view = ui.values(PAGE, SPEC)
    try:
        rate = loadgen.parse_rate(view["lg_rate"])
    except ValueError as exc:
        ui.show_error(exc)
        rate = None
        bad_rate = True
    else:
        bad_rate = False
    go, stop_col = st.columns([1, 5])
    if stop_col.button(ui.t(N_("Stop")), icon=":material/stop:", key=ui.key(PAGE, "lg_stop")):
        st.session_state.get(LOAD, {}).get("stop", threading.Event()).set()
    refused = ui.refusal(WHO, "loadgen")
    if refused is not None:
        st.caption(refused)
    if go.button(
        ui.t("Run load"),
        icon=":material/send:",
        type="primary",
        key=ui.key(PAGE, "lg_go"),
        disabled=bad_rate or refused is not None,
    ):
        try:
            access.require(WHO, "loadgen")  # the button is off for those refused; a stale page is refused here
            queues.LOADGEN_QUOTA.take(WHO.name, hosted=hosting.is_hosted())
        except ValueError as exc:
            ui.show_error(exc)
        else:
            with queues.LOADGEN_QUEUE.hold(
                Phrase("a load run"), on_wait=lambda m: st.toast(ui.message(m)), user=WHO.name
            ):
                monitor_load.run_load(monitor_load.LoadPlan.of(view, rate, own))
    results = st.session_state.get(LOAD, {}).get("results")
    if results:
        monitor_load.show_load(results, WHO)


st.title(ui.t("Server monitor"))
st.caption(
    ui.t(
        "Reads the speculative-decoding telemetry that running vLLM, SGLang, llama.cpp and TensorRT-LLM servers expose on /metrics, and places each server on the design space: its mean acceptance length, α, acceptance per position, tokens/s, and whether its K pays at your c."
    )
)
if (misspelt := hosting.hosted_problem()) is not None:  # read as hosted mode: the allow-list applies
    st.warning(ui.plain(ui.message(misspelt)), icon=":material/warning:")
try:
    WHO = ui.identity()  # who saves runs and sends load: the library and the load queue act for this person
except ValueError as exc:  # a sign-in that gave no e-mail address
    ui.show_error(exc)
    WHO = access.anonymous()
ui.restore(PAGE, SPEC)
setup()
s = scenarios.scenario(ui.values(PAGE, SPEC))
try:
    endpoints = monitor.parse_endpoints(s.endpoints, monitor_load.policy())
except ValueError as exc:
    ui.show_error(exc)
    endpoints = []
if not endpoints:
    st.info(
        ui.t(
            "Add an endpoint to start. To try it on this machine: `python -m specviz gguf --out pair` exports the bundled pair, then `llama-server -m pair/target.gguf -md pair/draft.gguf --spec-type draft-simple --metrics --port 8080` serves it; add http://localhost:8080 here."
        ),
        icon=":material/info:",
    )
else:
    c, c_note, unmeasured = scenarios.assumed_c(s, st.session_state.get(LOAD, {}).get("c"))
    if unmeasured:
        st.warning(ui.t("No c measured yet: run the load generator with a draft-only endpoint. Using the typed c."))
    st.fragment(monitor_section, run_every=s.every if s.poll else None)(endpoints, s.k, c, c_note)

box = st.expander(ui.t("Load generator"), icon=":material/send:", key=ui.key(PAGE, "_lg"), on_change="rerun")
with box:
    if box.open:
        load_section()
ui.publish(PAGE, SPEC, URL)

"""Rejection-sampling lab: simulate rounds, see E[N] and losslessness — and what breaks them."""

import numpy as np
import streamlit as st
import torch

from specviz.app import figures, router, ui
from specviz.app.scenarios import lab as scenarios
from specviz.app.scenarios.lab import LEVEL, SPEC, Rounds, Scenario
from specviz.app.share import by_key
from specviz.core import theory
from specviz.engine import sampling

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = scenarios.PAGE, "sampling-lab"
PROGRESS_FROM = 500_000  # show a progress bar for runs at least this long
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def builder_controls(who: str) -> None:
    """Controls of one distribution builder (p or q), shown for the chosen kind only."""
    kind = ui.selectbox(
        PAGE, P[who], ui.t("{who} builder", who=who), format_func=lambda b: ui.message(sampling.BUILDERS[b])
    )
    if kind == "zipf":
        ui.number_input(PAGE, P[f"{who}_s"], ui.t("{who}: Zipf exponent s", who=who), step=0.1)
    elif kind == "dirichlet":
        ui.number_input(PAGE, P[f"{who}_beta"], ui.t("{who}: Dirichlet β", who=who), step=0.1, format="%.3g")
        ui.number_input(PAGE, P[f"{who}_seed"], ui.t("{who}: seed", who=who))
    elif kind == "tempered":
        ui.number_input(PAGE, P["q_tau"], step=0.1)
    elif kind == "custom":
        ui.text_box(
            PAGE,
            P[f"{who}_vec"],
            ui.t("{who}: V comma-separated weights", who=who),
            area=True,
            height=80,
            help=ui.t("Non-negative numbers, normalised for you. Or upload a one-column CSV below."),
        )
        ui.file_uploader(ui.t("{who}: one-column CSV", who=who), ["csv", "txt"], key=f"{PAGE}.{who}_file")


def uploads(view: dict) -> dict:
    """The custom builders' uploaded files ({who: file}); drawn after this runs, so read from session_state."""
    return {who: st.session_state.get(f"{PAGE}.{who}_file") if view[who] == "custom" else None for who in ("p", "q")}


def simulate(p: torch.Tensor, q: torch.Tensor, r: Rounds) -> tuple[np.ndarray, np.ndarray]:
    """Run the simulation for these inputs, or reuse it from any visitor's run; shows progress for long runs."""
    result = scenarios.simulated(p, q, r)
    if result is not None:
        return result
    bar = st.progress(0.0, text=ui.t("Simulating rounds…")) if r.rounds >= PROGRESS_FROM else None
    result = scenarios.simulate(
        p,
        q,
        r,
        progress=(lambda f: bar.progress(f, text=ui.t("Simulating rounds… {pct}", pct=f"{f:.0%}"))) if bar else None,
    )
    if bar:
        bar.empty()
    return result


def sidebar_controls() -> None:
    """The controls, drawn after the first chart (their values are read from session_state before)."""
    with st.sidebar:
        st.header(ui.t("Distributions"))
        ui.number_input(PAGE, P["v"])
        builder_controls("p")
        builder_controls("q")
        st.header(ui.t("Simulation"))
        ui.slider(PAGE, P["k"])
        ui.number_input(PAGE, P["rounds"], step=50_000)
        ui.number_input(PAGE, P["seed"])
        ui.selectbox(PAGE, P["variant"])
        if st.session_state[key("variant")] == "temperature_mismatch":
            ui.number_input(PAGE, P["t_draft"], step=0.1)


def overlap_tab(p: torch.Tensor, q: torch.Tensor, s: Scenario) -> None:
    """The two distributions, what is accepted and what the residual puts back; α = 1 − TV(p, q)."""
    p_np, q_np = p.numpy(), q.numpy()
    alpha = float(sampling.overlap(p, q))
    tv = 0.5 * float(np.abs(p_np - q_np).sum())
    ui.chart(ui.figure(figures.distribution_bars, p_np, q_np, lang=ui.language()), key="fig_bars")
    st.caption(
        ui.t("Green is accepted directly, orange is what the residual puts back: together they rebuild p exactly.")
    )
    c1, c2, c3 = st.columns(3)
    c1.metric(ui.t("α = Σ min(p, q)"), f"{alpha:.4f}")
    c2.metric(ui.t("TV(p, q) = ½ Σ |p − q|"), f"{tv:.4f}")
    c3.metric("1 − TV", f"{1 - tv:.4f}", help=ui.t("Equals α: the chapter's §4.2 identity."))
    st.caption(ui.t("The simulated rounds (K, rounds, seed, verification rule) are in the next two tabs."))


def tokens_tab(p: torch.Tensor, q: torch.Tensor, s: Scenario) -> None:
    """Simulated tokens per round against E[N] = (1 − α^(K+1)) / (1 − α), with its 95 % interval."""
    n, _ = simulate(p, q, s.rounds)
    k, alpha = s.rounds.k, float(sampling.overlap(p, q))
    e_formula = float(theory.expected_tokens(alpha, k))
    mean_n, half = sampling.mean_with_ci(torch.from_numpy(n))
    counts = np.bincount(n, minlength=k + 2)[1:]
    ui.chart(
        ui.figure(figures.n_histogram, counts, theory.accepted_length_pmf(alpha, k), len(n), lang=ui.language()),
        key="fig_hist",
    )
    c1, c2, c3 = st.columns(3)
    c1.metric(
        ui.t("simulated mean N"),
        f"{mean_n:.4f} ± {half:.4f}",
        help=ui.t("95 % confidence interval, 1.96 · s / √rounds"),
    )
    c2.metric(ui.t("formula E[N]"), f"{e_formula:.4f}")
    c3.metric(
        ui.t("formula inside the 95 % CI"),
        ui.t("yes") if abs(mean_n - e_formula) <= half else ui.t("no"),
        delta=f"{(mean_n - e_formula) / max(half / 1.96, 1e-300):+.1f} σ",
        delta_color="off",
    )
    variant_note(s.rounds.variant)


def emitted_tab(p: torch.Tensor, q: torch.Tensor, s: Scenario) -> None:
    """The emitted tokens' frequencies against p, with a χ² goodness-of-fit verdict."""
    _, emitted = simulate(p, q, s.rounds)
    p_np = p.numpy()
    gof = sampling.chi_square_gof(torch.from_numpy(emitted), p)
    verdict = sampling.emitted_verdict(gof, s.rounds.variant, level=LEVEL)
    freq = np.bincount(emitted, minlength=len(p_np)) / len(emitted)
    ui.chart(ui.figure(figures.emitted_vs_target, freq, p_np, q.numpy(), lang=ui.language()), key="fig_emitted")
    c1, c2, c3 = st.columns(3)
    c1.metric(ui.t("emitted tokens"), f"{len(emitted):,}")
    c2.metric(ui.t("TV(emitted, p)"), f"{gof.tv:.4f}")
    c3.metric(
        ui.t("χ² p-value"),
        f"{gof.p_value:.3g}",
        help=ui.t("Pearson χ², {dof} degrees of freedom (sparse bins pooled)", dof=gof.dof),
    )
    (st.success if verdict.ok else st.warning)(ui.message(verdict.text))
    variant_note(s.rounds.variant)


def variant_note(variant: str) -> None:
    if variant != "exact":
        st.info(ui.t("**What this variant does:** {what}", what=ui.message(sampling.VARIANTS[variant])))


TABS = {"overlap": overlap_tab, "tokens": tokens_tab, "emitted": emitted_tab}
st.title(ui.t("Rejection-sampling lab"))
st.caption(
    ui.t(
        "Draft K tokens from q, accept each with min(1, p/q), correct from the residual (p − q)⁺ at the first rejection, add a bonus token from p when all K pass. Simulate many rounds and check the two claims: E[N] = (1 − α^(K+1)) / (1 − α), and the emitted tokens follow p exactly."
    )
)
ui.restore(PAGE, SPEC)

view = ui.values(PAGE, SPEC)
s = scenarios.scenario(view, uploads(view))
try:
    p, q = scenarios.distributions(s)
except ValueError as exc:
    ui.show_error(exc)
    sidebar_controls()
    ui.publish(PAGE, SPEC, URL)
    st.stop()


# One tab's content per script run (lazy tabs): a link opens with one chart to draw, and a simulation
# runs only when its results are shown. The open tab's chart is sent before the controls.
ui.show_open_tab(PAGE, P["view"], TABS, p, q, s)
sidebar_controls()
ui.publish(PAGE, SPEC, URL)

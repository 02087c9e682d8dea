"""What the Hardware page says of a setup beside its figures: warnings, the memory plan and why speculation loses."""

from __future__ import annotations

import pandas as pd

from specviz.app import ui
from specviz.app.scenarios.hardware import ROLES, Scenario, is_model
from specviz.base.i18n import N_
from specviz.core import hardware


def context_warnings(s: Scenario) -> list[str]:
    """What the page warns of, in this session's language: a model whose window the context passes, or a
    setup that does not fit its GPUs (:func:`memory_note`)."""
    found = []
    for name, model, _tp in (("target", s.target_spec, s.tp_t), ("draft", s.draft_spec, s.tp_d))[
        : 1 + is_model(s.draft_spec)
    ]:
        fields = dict(name=ui.t(ROLES[name]), ctx=f"{s.ctx:,}")
        window = hardware.model_spec(model).get("max_context")
        if window and window == window and s.ctx + s.k_max + 1 > window:
            found.append(
                ui.t(
                    "A context {ctx} + K + 1 is beyond the {name}'s window of {window} tokens: the figures extrapolate.",
                    window=f"{int(window):,}",
                    **fields,
                )
            )
    plan = memory(s)
    if not plan.fits:
        found.append(memory_note(s, plan))
    return found


#: the parts of a round's extra cost (:data:`specviz.core.hardware.ROUND_TERMS`) as the page names them
ROUND_TERM_NAMES = {
    "verify": N_("verifying K + 1 tokens instead of one"),
    "draft": N_("the draft forwards"),
    "overhead": N_("the round's fixed overhead"),
}


def loss_reason(s: Scenario, batch: int) -> str:
    """Why speculation loses at ``batch``, in words: even the cheapest round, K = 1, gains E[N] − 1 tokens over a
    plain step and costs more than that in target steps (:func:`specviz.core.hardware.round_terms`), term by term."""
    costs = hardware.pair_costs(s.target_spec, s.draft_spec, s.gpu_spec, batch, s.ctx, 1, **s.pricing_kw())
    got = hardware.round_terms(float(hardware._mean_tokens(s.alpha, 1)[0]), costs)
    parts = "; ".join(f"{ui.t(ROUND_TERM_NAMES[n])}: {got[n]:.2f}" for n in hardware.ROUND_TERMS)
    return ui.t(
        "Speculation loses at B = {b}: even a round of K = 1 gains {gained} tokens over a plain step and costs {extra} target steps more ({parts}). The largest term is {largest}.",
        b=f"{batch:,}",
        gained=f"{got['gained']:.2f}",
        extra=f"{sum(got[n] for n in hardware.ROUND_TERMS):.2f}",
        parts=parts,
        largest=ui.t(ROUND_TERM_NAMES[got["largest"]]),
    )


def memory(s: Scenario) -> hardware.MemoryPlan:
    """The setup's :func:`specviz.core.hardware.memory_plan` at the step view's batch, the context and K max."""
    kw = dict(dtype=s.dtype, tp_target=s.tp_t, tp_draft=s.tp_d)
    return hardware.memory_plan(s.target_spec, s.draft_spec, s.gpu_spec, s.batch, s.ctx, s.k_max, **kw)


def memory_note(s: Scenario, plan: hardware.MemoryPlan) -> str:
    """The memory plan in words: what one GPU holds against what it has, and the largest batch that fits."""
    gb = lambda x: f"{x / 1e9:,.1f}"
    fields = dict(
        b=f"{s.batch:,}",
        ctx=f"{s.ctx:,}",
        k=s.k_max,
        target=gb(plan.target_weights),
        draft=gb(plan.draft_weights),
        kv=gb(plan.kv_target + plan.kv_draft),
        need=gb(plan.need),
        usable=gb(plan.usable),
        gpu=hardware.gpu_spec(s.gpu_spec).get("name", "custom"),
    )
    said = ui.t(
        "Memory per GPU at B = {b}, L = {ctx}, K = {k}: target weights {target} GB + draft {draft} GB + KV cache of both with the K + 1 verify slots {kv} GB = {need} GB of the {usable} GB usable on {gpu}.",
        **fields,
    )
    if plan.max_batch == 0:
        return said + " " + ui.t("The weights alone do not fit: raise the TP or choose a smaller dtype.")
    most = dict(most=f"{plan.max_batch:,}", plain=f"{plan.max_batch_plain:,}")
    if not plan.fits:
        return (
            said
            + " "
            + ui.t("It does not fit: the largest batch that fits is {most} ({plain} without speculation).", **most)
        )
    return said + " " + ui.t("Fits up to B = {most} ({plain} without speculation).", **most)


def memory_table(plan: hardware.MemoryPlan) -> pd.DataFrame:
    """What one GPU holds, GB: each part of :class:`specviz.core.hardware.MemoryPlan`, the total and the usable."""
    parts = (
        (N_("Target weights"), plan.target_weights),
        (N_("Draft weights (a head: only its own layers)"), plan.draft_weights),
        (N_("Target KV cache, L + K + 1 slots per sequence"), plan.kv_target),
        (N_("Draft KV cache, L + K slots per sequence"), plan.kv_draft),
        (N_("Total"), plan.need),
        (N_("Usable"), plan.usable),
    )
    return pd.DataFrame({ui.t("Memory per GPU"): [ui.t(n) for n, _ in parts], "GB": [v / 1e9 for _, v in parts]})

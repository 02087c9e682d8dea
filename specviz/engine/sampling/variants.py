"""The verification variants: the exact rule, three real implementation mistakes, and how a χ² result reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from specviz.base.i18n import Phrase

if TYPE_CHECKING:
    from specviz.engine.sampling.stats import GofResult

#: name -> what it breaks (chapter exercise 5)
VARIANTS: dict[str, str] = {  # name -> what it does (an i18n.Phrase: English as a str, any language on a page)
    "exact": Phrase("The exact rule: accept with min(1, p/q), correct from the residual (p − q)⁺, bonus from p."),
    "accept_first": Phrase(
        "Accepts the first draft token unconditionally (a common 'speed trick'): the first emitted token of every round is a draw from q, not p, so the output leans towards q."
    ),
    "resample_p": Phrase(
        "After a rejection, resamples from p instead of the residual (p − q)⁺: tokens the draft already covers get emitted twice over, so the output over-weights the overlap min(p, q)."
    ),
    "temperature_mismatch": Phrase(
        "Samples drafts from q at one temperature but computes the ratio p/q with q at another: the acceptance test no longer matches the proposal, so the output is biased."
    ),
}


class Verdict(NamedTuple):
    ok: bool
    text: str


def emitted_verdict(gof: GofResult, variant: str, level: float = 1e-3) -> Verdict:
    """Plain-language reading of a χ² result for the lab page (its text an i18n.Phrase)."""
    if gof.impossible:
        return Verdict(
            False,
            Phrase(
                "biased: {n} emitted tokens have p = 0 — the target would never emit them. {why}",
                n=gof.impossible,
                why=VARIANTS[variant],
            ),
        )
    stats = {"level": f"{level:g}", "tv": f"{gof.tv:.4f}"}
    if gof.p_value >= level:
        return Verdict(
            True,
            Phrase(
                "consistent with p (χ² p-value {p_value} ≥ {level}; TV = {tv}).", p_value=f"{gof.p_value:.3g}", **stats
            ),
        )
    why = VARIANTS[variant] if variant != "exact" else Phrase("Unexpected for the exact rule — check the inputs.")
    return Verdict(
        False,
        Phrase(
            "biased: χ² p-value {p_value} < {level}, TV = {tv}. {why}", p_value=f"{gof.p_value:.2g}", why=why, **stats
        ),
    )

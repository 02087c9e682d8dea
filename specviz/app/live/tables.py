"""The live page's tables and tabs: the columns each kind of run shows under which heading, and the tabs' titles."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from specviz.app.ui.display import Col
from specviz.base.i18n import N_

NO_COST = N_("no step cost measured for this cell")
FORMATS = {
    "k": Col(kind="int"),
    "batch_size": Col(kind="int"),
    "temperature": Col(kind="number", digits=1),
    "speedup": Col(unit="×", digits=2),
    "predicted_speedup": Col(unit="×", digits=2),
    "predicted_speedup_measured_cost": Col(unit="×", digits=2, missing=NO_COST),
    "c": Col(missing=NO_COST),
    "v": Col(missing=NO_COST),
    "o": Col(missing=NO_COST),
    "tokens_per_s": Col(kind="number", digits=1),
    "baseline_tokens_per_s": Col(kind="number", digits=1),
}  #: formats of the live tables' columns (the rest follow their values)
T_CHOICES = (0.0, 0.5, 0.7, 1.0)  #: offered temperatures (a linked one outside them is kept)
TABLE = {  # shown column → its heading: a msgid, or a symbol shown as it is
    "compiled": N_("compiled"),
    "k": "k",
    "temperature": N_("temperature"),
    "alpha": "α̂ = A/(A+R)",
    "alpha_overlap": N_("α̂ = mean Σmin(p,q)"),
    "c": "c",
    "v": "v",
    "o": "o",
    "mean_accepted_tokens": N_("E[N] measured"),
    "speedup": N_("speedup"),
    "predicted_speedup": N_("predicted (basic)"),
    "predicted_speedup_measured_cost": N_("predicted (measured cost)"),
    "greedy_exact": N_("greedy_exact"),
}
TREE_TABLE = {  # the tree cells' columns
    "tree": N_("tree"),
    "temperature": N_("temperature"),
    "mean_accepted_tokens": N_("tokens/round measured"),
    "predicted_tokens_per_round": N_("F(T) at measured p"),
    "tree_p": N_("p̂ by rank"),
    "c": "c",
    "v": "v",
    "speedup": N_("speedup"),
    "predicted_speedup_measured_cost": N_("predicted (measured cost)"),
    "greedy_exact": N_("greedy_exact"),
}
BATCH_TABLE = {  # the batched cells' columns
    "batch_size": "B",
    "k": "k",
    "temperature": N_("temperature"),
    "alpha": "α̂ = A/(A+R)",
    "mean_accepted_tokens": N_("E[N] measured"),
    "speedup": N_("speedup (whole batch)"),
    "tokens_per_s": N_("tokens/s (speculative)"),
    "baseline_tokens_per_s": N_("tokens/s (target only)"),
    "greedy_exact": N_("greedy_exact"),
}
TAB_TITLES = {
    "speedup_k": N_("Speedup vs K"),
    "en_k": N_("E[N] vs K"),
    "n_round": N_("N per round"),
    "per_position": N_("Per position"),
    "cost": N_("Cost per round"),
    "text": N_("Text"),
    "tokens_round": N_("Tokens per round"),
    "speedup": N_("Speedup"),
}  #: chart tab -> its title


def columns(table: dict[str, str]) -> dict[str, Col]:
    """The columns of ``table`` as :func:`specviz.app.ui.table` shows them: heading (a msgid, or a symbol such as
    k, c, α̂ shown as it is) and format (the downloaded CSV keeps the canonical names and raw numbers)."""
    return {c: replace(FORMATS.get(c, Col()), heading=h) for c, h in table.items()}


def choice_labels(choices: Iterable[str], t: Callable[[str], str]) -> dict[str, str]:
    """Each choice's label in the language of ``t`` ("auto" translated, the rest as they are), computed now:
    a widget's format_func looks them up."""
    return {c: t("auto") if c == "auto" else c for c in choices}

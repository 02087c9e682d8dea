"""Column headings (msgids) of the measured-data pages' tables and the titles of their chart tabs."""

from specviz.base.i18n import N_

ERROR_COLUMNS = {
    "row": N_("row"),
    "column": N_("column"),
    "file header": N_("file header"),
    "value": N_("value"),
    "allowed": N_("allowed"),
}  #: the row-error table's columns -> headings
LIBRARY_COLUMNS = {
    "id": N_("id"),
    "label": N_("label"),
    "source": N_("source"),
    "note": N_("note"),
    "n_rows": N_("n_rows"),
    "target_model": N_("target_model"),
    "draft_model": N_("draft_model"),
    "hardware": N_("hardware"),
    "method": N_("method"),
    "created_by": N_("saved by"),
}  #: the library table's columns (store.list_runs) -> headings
FACETS = {
    "target_model": N_("target model"),
    "hardware": N_("hardware"),
    "method": N_("method"),
    "created_by": N_("saved by"),
}  #: filter -> its label
TRASH_COLUMNS = {
    "id": N_("id"),
    "label": N_("label"),
    "n_rows": N_("n_rows"),
    "created_by": N_("saved by"),
    "trashed_by": N_("trashed by"),
}  #: trash table -> headings
AUDIT_COLUMNS = {
    "who": N_("who"),
    "role": N_("role"),
    "action": N_("action"),
    "runs": N_("runs"),
    "page": N_("page"),
    "detail": N_("detail"),
}  #: audit table -> headings
SERIES_COLUMNS = {
    "series": N_("series"),
    "alpha": N_("alpha"),
    "has_cost": N_("has_cost"),
    "k_min": N_("k_min"),
    "k_max": N_("k_max"),
    "n": N_("n"),
}  #: the series table's columns (overlays.series_params) -> headings; c, v, o are symbols
TAB_TITLES = {
    "speedup": N_("Speedup vs K"),
    "map": N_("(α, c) map"),
    "tokens": N_("E[N] vs K"),
    "parity": N_("Measured vs predicted"),
    "position": N_("Per position"),
    "context": N_("By context and domain"),
}  #: chart tab -> its title
GROUP_COLUMNS = {
    "bucket": N_("context (tokens)"),
    "domain": N_("domain"),
    "k": "K",
    "rows": N_("rows"),
    "rounds": N_("rounds"),
    "mean_tokens": "E[N]",
    "mean_lo": N_("E[N] low"),
    "mean_hi": N_("E[N] high"),
    "alpha": "α",
    "alpha_lo": N_("α low"),
    "alpha_hi": N_("α high"),
}  #: acceptance-by-group table -> headings
REFERENCE_COLUMNS = {
    "series": N_("series"),
    "alpha": "α",
    "published_alpha": N_("published α"),
    "alpha_ratio": N_("α ÷ published"),
    "mean_accepted_tokens": "E[N]",
    "published_tokens": N_("published E[N]"),
    "published_k": N_("published K"),
    "published_draft": N_("published draft"),
    "dataset": N_("dataset"),
    "published_temperature": N_("published temperature"),
    "differences": N_("differences that usually explain a gap"),
    "source": N_("source"),
}  #: reference comparison -> headings

PRIOR_METHODS = {
    "eagle3": "EAGLE3",
    "mtp": "MTP",
    "ngram": "n-gram",
    "model": N_("draft model"),
    "other": N_("other (parallel or block drafting)"),
}  #: acceptance.csv method -> as shown
PRIOR_DOMAINS = {
    "chat": N_("chat"),
    "code": N_("code"),
    "math": N_("math"),
    "qa": N_("questions and reasoning"),
    "rag": N_("retrieval and extraction"),
    "summarisation": N_("summarisation"),
    "translation": N_("translation"),
    "mixed": N_("mixed tasks"),
}  #: acceptance.csv domain -> as shown

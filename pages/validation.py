"""Validation: the cost model against published GPU measurements and your runs; a profile calibrated from a run."""

import pandas as pd
import streamlit as st

from specviz.app import profiles, router, ui
from specviz.app.figures import validation as figures
from specviz.app.scenarios import validation as scenarios
from specviz.app.share import Param, by_key
from specviz.base.i18n import N_
from specviz.core import hardware, published, regimes, validation
from specviz.core import profiles as stack_profiles

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

PAGE, URL = "validation", "validation"
MODELS, GPUS = hardware.load_catalog()
VIEWS = ("parity", "regimes", "errors", "runs", "calibrate")  #: the tabs (slugs: a link names them)
VIEW_LABELS = (N_("Parity"), N_("Regimes"), N_("Errors"), N_("Your runs"), N_("Calibrate"))
PREDICTOR_LABELS = (
    N_("held-out (leave-one-source-out)"),
    N_("shipped profiles (fitted on all rows)"),
    N_("default roofline"),
)
MINE = ("none", "upload", "library")  #: where your rows come from
MINE_LABELS = (N_("none"), N_("an uploaded CSV"), N_("a run in the library"))
BY = {"stack": N_("By serving stack"), "source_id": N_("By source"), "method": N_("By method")}
STATISTICS = {
    "median_abs_err": N_("median |predicted / measured − 1|"),
    "within_15": N_("share of rows within ±15 %"),
}
KIND_NAMES = {"speedup": N_("speedup"), "step": N_("step time")}
#: the headers of the row, terms and saved-profile tables (English: the column's own name, or :data:`SAID`'s)
SAID = {"stack": N_("serving stack")}
FORMATS = {"row_id": {"kind": "int"}, "batch": {"kind": "int"}, "n_rows": {"kind": "int"}, "changed": {"kind": "bool"}}
ERROR_COLUMNS = {
    **{"kind": N_("kind"), "stack": N_("serving stack"), "source_id": N_("source"), "method": N_("method")},
    **{"rows": N_("rows"), "median_abs_err": N_("median |err|"), "within_15": N_("within ±15 %")},
    **{"default_median_abs_err": N_("default: median |err|"), "default_within_15": N_("default: within ±15 %")},
}
_PERCENT = {"kind": "percent", "digits": 1, "missing": N_("no row of this kind")}
ERROR_FORMATS = {"rows": {"kind": "int"}, "method": {"missing": N_("step times: measured with no drafting method")}}
ERROR_FORMATS |= dict.fromkeys(list(ERROR_COLUMNS)[5:], _PERCENT)
#: the split measured / predicted columns (scenarios.by_unit): a heading and a unit each
SPLIT = {
    **{"measured speedup": N_("measured speedup"), "measured step": N_("measured step time")},
    **{"predicted speedup": N_("predicted speedup"), "predicted step": N_("predicted step time")},
    **{"base_predicted speedup": N_("base profile: speedup"), "base_predicted step": N_("base profile: step time")},
}
HEADERS = (
    *(
        N_("row_id"),
        N_("source_id"),
        N_("source"),
        N_("kind"),
        "stack",
        N_("target"),
        N_("draft"),
        N_("method"),
        N_("gpu"),
        N_("batch"),
    ),
    *(N_("measured"), N_("predicted"), N_("ratio"), N_("base_predicted"), N_("base_ratio")),
    *(N_("term"), N_("fitted"), N_("base"), N_("changed")),
    *(N_("name"), N_("terms"), N_("base_engine"), N_("n_rows"), N_("created_at")),
)
SPEC = (
    Param("view", "parity", "choice", choices=VIEWS, labels=VIEW_LABELS),
    Param("regime", "", "text", hi=80, label=N_("Rows behind a regime")),
    Param("pred", "loso", "choice", choices=validation.PREDICTORS, label=N_("Predicted by"), labels=PREDICTOR_LABELS),
    Param("engines", "", "text", hi=400, label=N_("Serving stacks (all when none is chosen)")),
    Param("sources", "", "text", hi=1000, label=N_("Sources (all when none is chosen)")),
    Param("mine", "none", "choice", choices=MINE, label=N_("Your rows from"), labels=MINE_LABELS),
    Param("run", 1, "int", 1, 2**31 - 1, label=N_("Run id (Measured data lists them)")),
    Param("r_target", "meta-llama/Llama-3.1-8B-Instruct", "choice", choices=tuple(MODELS.index), label=N_("Target")),
    Param("r_draft", "meta-llama/Llama-3.2-1B-Instruct", "choice", choices=tuple(MODELS.index), label=N_("Draft")),
    Param("r_gpu", "H100-SXM5-80GB", "choice", choices=tuple(GPUS.index), label=N_("GPU")),
    Param("r_dtype", "bf16", "choice", choices=tuple(hardware.DTYPE_BYTES), label=N_("dtype")),
    Param("r_tp", 1, "int", 1, 64, label=N_("Target TP")),
    Param("r_ctx", published.DEFAULT_CONTEXT, "int", 1, 2**21, label=N_("Context length L (tokens)")),
    Param("r_method", "model", "choice", choices=validation.METHODS, label=N_("Drafting method")),
    Param(
        "base",
        stack_profiles.DEFAULT_PROFILE,
        "choice",
        choices=stack_profiles.profile_names(),
        label=N_("Base profile (prior)"),
    ),
    Param("p_name", "", "text", hi=80, label=N_("Profile name")),
)
P = by_key(SPEC)


def key(name: str) -> str:
    return ui.key(PAGE, name)


def filter_box(name: str, options: list[str]) -> None:
    """A multiselect over ``options`` mirrored in the text control ``name`` (comma-separated; none: all)."""
    picker = key(f"{name}._pick")
    chosen = validation.names_in(st.session_state[key(name)])
    unknown = [c for c in chosen if c not in options]
    if unknown:
        st.warning(
            ui.t("Not in the published rows, left out: {names}", names=", ".join(unknown)), icon=":material/warning:"
        )
    if picker not in st.session_state:
        st.session_state[picker] = [c for c in chosen if c in options]
    picked = st.multiselect(ui.t(P[name].label), options, key=picker, placeholder=ui.placeholder())
    st.session_state[key(name)] = ",".join(picked)


MAX_SHOWN_PROBLEMS = 20


def your_rows(s: scenarios.Scenario) -> pd.DataFrame | None:
    """Your checked rows (None when there are none), with an st.error for every bad cell."""
    try:
        table = scenarios.your_table(s.yours, st.session_state.get(key("upload")))
        if table is None:
            return None
        rows, problems = validation.check_rows(table)
    except ValueError as exc:
        ui.show_error(exc)
        return None
    for old, new in validation.renamed_columns(table).items():
        st.caption(ui.t("Your column {old} is read as {new}, its current name.", old=old, new=new))
    for problem in problems[:MAX_SHOWN_PROBLEMS]:
        ui.show_error(problem)
    if len(problems) > MAX_SHOWN_PROBLEMS:
        st.caption(ui.t("… and {n} more problems.", n=len(problems) - MAX_SHOWN_PROBLEMS))
    if problems:
        st.caption(ui.t("{good} of {total} rows are valid and used.", good=len(rows), total=len(table)))
    return rows if len(rows) else None


def predictor_caption(s: scenarios.Scenario) -> None:
    captions = {
        "loso": N_(
            "Held out: each source's rows are priced with engine profiles fitted on the other sources only (a serving stack no other source measures falls back to its family's profile, then to the default)."
        ),
        "shipped": N_(
            "The shipped profiles of data/catalog/profiles.csv, fitted on all rows: a row's own source is in its profile's fit, so this is an in-sample score."
        ),
        "default": N_("The default roofline profile for every row: no fitted term."),
    }
    st.caption(ui.t(captions[s.published.pred]))


def parity_section(s: scenarios.Scenario, yours) -> None:
    frame = scenarios.chosen(s.published)
    mine = validation.predict_yours(yours, s.published.pred) if yours is not None else None
    left, right = st.columns(2)
    for column, kind in ((left, "speedup"), (right, "step")):
        with column:
            st.subheader(ui.t(KIND_NAMES[kind]).capitalize())
            fig = ui.figure(figures.parity, frame, mine, kind, validation.WITHIN, lang=ui.language())
            ui.chart(fig, key=f"fig_parity_{kind}")
    predictor_caption(s)
    st.caption(
        ui.t(
            "{n} published rows drawn ({speedups} speedups, {steps} step times) of {total} priceable; the band is ±15 %. Every row's source is in its hover and in the Errors view's CSV.",
            n=len(frame),
            speedups=int((frame["kind"] == "speedup").sum()),
            steps=int((frame["kind"] == "step").sum()),
            total=len(scenarios.all_rows()),
        )
    )


REGIME_COLUMNS = {
    **{"label": N_("regime"), "rows": N_("rows"), "sources": N_("sources")},
    **{"median_abs_err": N_("median |err|"), "p90_abs_err": N_("90th percentile |err|"), "bias": N_("bias")},
}


def regimes_section(s: scenarios.Scenario, yours) -> None:
    tables = scenarios.regime_tables(s.published)
    predictor_caption(s)
    st.caption(
        ui.t(
            "A regime is an engine family × draft kind × target (dense or MoE) × load. With fewer than {n} rows a regime is unvalidated: there the pages show the widest validated band and name the nearest validated regime. Bias is the median of predicted / measured − 1.",
            n=regimes.MIN_ROWS,
        )
    )
    for kind in validation.KINDS_SCORED:
        table = tables[kind]
        st.subheader(ui.t(KIND_NAMES[kind]).capitalize())
        ui.table(scenarios.regime_grid(table), key=f"tbl_grid_{kind}")
        shown = table.assign(label=table["regime"].map(lambda r: regimes.label(r, ui.t)))
        specs = {c: ui.Col(h, kind="percent", digits=1) for c, h in REGIME_COLUMNS.items()}
        specs |= {
            c: ui.Col(REGIME_COLUMNS[c], kind=k) for c, k in (("label", "text"), ("rows", "int"), ("sources", "int"))
        }
        ui.table(shown[list(REGIME_COLUMNS)], specs, key=f"tbl_regimes_{kind}")
    keys = [k for t in tables.values() for k in t.index]
    if not keys:
        return
    if st.session_state[key("regime")] not in keys:
        st.session_state[key("regime")] = keys[0]
    label = {k: regimes.label(regimes.Regime.from_key(k), ui.t) for k in keys}
    st.selectbox(ui.t(P["regime"].label), keys, key=key("regime"), format_func=label.get)
    rows = scenarios.rows_in(s.published, st.session_state[key("regime")])
    shown = ["row_id", "kind", "source_id", "stack", "target", "draft", "gpu", "batch", "measured", "predicted"]
    headed(scenarios.by_unit(rows[[*shown, "ratio", "source"]], ("measured", "predicted")), "tbl_regime_rows")
    if unfitted := scenarios.not_fitted(rows):
        st.caption(
            ui.t(
                "The speedup rows of {sources} are scored here but fitted into no engine profile: a report of a slowdown its own thread leaves unexplained, measured with a draft the catalogue does not describe.",
                sources=", ".join(unfitted),
            )
        )


def headed(frame: pd.DataFrame, key: str) -> None:
    """Show ``frame`` with the headers of :data:`HEADERS` in this session's language."""
    specs = {c: ui.Col(SAID.get(c, c), **FORMATS.get(c, {})) for c in frame.columns if c in HEADERS}
    for column, heading in SPLIT.items():
        kind = column.rsplit(" ", 1)[1]
        other = N_("a step-time row") if kind == "speedup" else N_("a speedup row")
        specs[column] = ui.Col(heading, scenarios.KIND_UNITS[kind], kind="number", missing=other)
    ui.table(frame, {c: col for c, col in specs.items() if c in frame.columns}, key=key)


def errors_table(frame: pd.DataFrame, key: str) -> None:
    """Show an error summary: rows and |error| statistics, the fractions as percentages."""
    if "method" in frame:  # step-time rows have no drafting method: the data say "none"
        frame = frame.assign(method=frame["method"].replace("none", None))
    ui.table(frame, {c: ui.Col(h, **ERROR_FORMATS.get(c, {})) for c, h in ERROR_COLUMNS.items()}, key=key)


def errors_section(s: scenarios.Scenario, yours) -> None:
    if scenarios.chosen(s.published).empty:
        st.info(ui.t("No published row is left by the filters."), icon=":material/filter_alt_off:")
        return
    tables = scenarios.errors(s.published)
    predictor_caption(s)
    st.subheader(ui.t("Targets"))
    verdicts = tables["verdicts"]
    ui.table(
        pd.DataFrame(
            {
                "kind": [ui.t(KIND_NAMES[k]) for k in verdicts["kind"]],
                "statistic": [ui.t(STATISTICS[s]) for s in verdicts["statistic"]],
                "value": verdicts["value"],
                "target": [
                    ("≤ " if m else "≥ ") + f"{b:.0%}"
                    for b, m in zip(verdicts["bound"], verdicts["at_most"], strict=True)
                ],
                "verdict": [None if p is None else ui.t("PASS") if p else ui.t("FAIL") for p in verdicts["passed"]],
            }
        ),
        {
            "kind": ui.Col(N_("kind"), kind="text"),
            "statistic": ui.Col(N_("statistic"), kind="text"),
            "value": ui.Col(N_("value"), kind="percent", digits=1, missing=N_("no row of this kind")),
            "target": ui.Col(N_("target"), kind="text"),
            "verdict": ui.Col(N_("verdict"), kind="text", missing=N_("no row of this kind")),
        },
        key="tbl_targets",
    )
    st.caption(
        ui.t(
            "The targets of benchmarks/validation_bench.py, stated for held-out predictions: speedup median |S_pred / S_meas − 1| ≤ 10 % and ≥ 75 % of speedup rows within ±15 %; step-time median error ≤ 15 %."
        )
    )
    st.subheader(ui.t("Overall"))
    errors_table(tables["overall"], "tbl_all")
    for by, title in BY.items():
        st.subheader(ui.t(title))
        errors_table(tables["by"][by], f"tbl_{by}")
    per_row = tables["per_row"]
    ui.csv_download(ui.t("Download the per-row table (CSV)"), lambda: per_row, "validation_rows.csv", key="dl_rows")


def runs_section(s: scenarios.Scenario, yours) -> None:
    if yours is None:
        st.info(
            ui.t(
                "Choose your rows in the sidebar: an uploaded CSV in the columns of data/validation/measurements.csv (kind, target, draft, method, gpu, tp, dtype, stack, batch, context, k, tau, speedup, t_step_ms), or a run of the library with the pair and GPU it was measured on."
            ),
            icon=":material/upload_file:",
        )
        return
    mine = validation.predict_yours(yours, s.published.pred)
    st.metric(ui.t("Your rows"), f"{len(mine)}")
    err = published.errors(mine)
    errors_table(err.reset_index(), "tbl_yours_err")
    for kind in ("speedup", "step"):
        if (mine["kind"] == kind).any():
            fig = ui.figure(
                figures.parity, scenarios.chosen(s.published), mine, kind, validation.WITHIN, lang=ui.language()
            )
            ui.chart(fig, key=f"fig_yours_{kind}")
    st.caption(
        ui.t(
            "Your rows are in no profile's fit: each is priced with its serving stack's shipped profile (the default where the catalogue has none), or with the default roofline when that is the predictor."
        )
    )
    shown = ["row_id", "kind", "stack", "target", "draft", "method", "gpu", "batch", "measured", "predicted", "ratio"]
    headed(scenarios.by_unit(mine[shown], ("measured", "predicted")), "tbl_yours")


def calibrate_section(s: scenarios.Scenario, yours) -> None:
    if yours is None:
        st.info(
            ui.t("Calibration fits an engine profile to your rows: choose them in the sidebar first."),
            icon=":material/tune:",
        )
        return
    ui.selectbox(PAGE, P["base"], format_func=profiles.profile_label)
    base = stack_profiles.profile(st.session_state[key("base")])
    with st.spinner(ui.t("Fitting …")):
        eff, table = scenarios.fitted(yours.to_csv(index=False), st.session_state[key("base")])
    terms = stack_profiles.encode_terms(eff)
    err = validation.fit_errors(table)
    left, right = st.columns(2)
    for column, name, which in ((left, ui.t("base profile"), "base"), (right, ui.t("fitted profile"), "fitted")):
        column.metric(ui.t("median |err|, {name}", name=name), f"{err[which]:.1%}")
    st.subheader(ui.t("Fitted terms"))
    headed(validation.terms_table(eff, base), "tbl_terms")
    st.code(terms or ui.t("(the default terms)"), language=None)
    ui.chart(ui.figure(figures.fit_parity, table, validation.WITHIN, lang=ui.language()), key="fig_fit")
    shown = ["row_id", "kind", "measured", "predicted", "ratio", "base_predicted", "base_ratio"]
    headed(scenarios.by_unit(table[shown], ("measured", "predicted", "base_predicted")), "tbl_residuals")
    st.caption(
        ui.t(
            "published.fit_profile: least squares on log(predicted / measured), pulled toward the base profile where your rows do not constrain a term; terms rounded to 4 significant digits, so the profile saved and linked is exactly this one."
        )
    )
    summary = validation.fit_summary(yours)
    profiles.save_section(PAGE, P["p_name"], st.session_state[key("base")], summary, terms, URL, headed)


SECTIONS = dict(
    zip(VIEWS, (parity_section, regimes_section, errors_section, runs_section, calibrate_section), strict=True)
)


def sidebar_controls() -> None:
    rows = scenarios.all_rows()
    with st.sidebar:
        st.header(ui.t("Published rows"))
        ui.radio(PAGE, P["pred"])
        filter_box("engines", sorted(rows["stack"].unique()))
        filter_box("sources", sorted(rows["source_id"].unique()))
        st.header(ui.t("Your rows"))
        ui.radio(PAGE, P["mine"])
        mine = st.session_state[key("mine")]
        if mine == "upload":
            ui.file_uploader(ui.t("CSV in the columns of measurements.csv"), ["csv"], key=key("upload"))
        elif mine == "library":
            ui.number_input(PAGE, P["run"])
            st.caption(ui.t("The pair, GPU and set-up the run was measured on:"))
            for name in ("r_target", "r_draft", "r_gpu", "r_dtype"):
                ui.selectbox(PAGE, P[name])
            ui.number_input(PAGE, P["r_tp"])
            ui.number_input(PAGE, P["r_ctx"])
            ui.selectbox(PAGE, P["r_method"])


st.title(ui.t("Validation"))
st.caption(
    ui.t(
        "How well does the cost model predict real GPUs? Each published measurement of data/validation/measurements.csv (step times of plain decoding, speedups with their measured τ) against what the roofline and an engine profile predict for it; your own runs beside them; and a profile fitted to your run."
    )
)
ui.restore(PAGE, SPEC)
sidebar_controls()
s = scenarios.scenario(ui.values(PAGE, SPEC))
yours = your_rows(s)
ui.show_open_tab(PAGE, P["view"], SECTIONS, s, yours)
ui.publish(PAGE, SPEC, URL)

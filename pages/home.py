"""Home: the three quantities, the two formulas, and a link to every page."""

import streamlit as st

from specviz.app import router, ui
from specviz.base.i18n import N_

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

st.title("specviz")
st.markdown(
    ui.t(
        "**Speculative decoding** lets a small *draft* model propose **K** tokens that the large *target* model checks in a single forward pass. Rejection sampling keeps the output distribution exactly the target's, so the only question is speed — and that is decided by three numbers."
    )
)

col_a, col_k, col_c = st.columns(3)
col_a.markdown(
    ui.t(
        "#### α — acceptance rate\n"
        "Probability that the target accepts a draft token: α = Σₓ min(p(x), q(x)) = 1 − TV(p, q). Depends on how alike draft and target are."
    )
)
col_k.markdown(
    ui.t(
        "#### K — draft length\n"
        "Tokens the draft proposes per round (γ in Leviathan et al.). More tokens per round, but every extra draft step costs time."
    )
)
col_c.markdown(
    ui.t(
        "#### c — speed ratio\n"
        "c = T_target / T_draft: how many draft steps fit in one target step. Leviathan et al. use the inverse, c_L = T_draft / T_target = 1/c."
    )
)

st.subheader(ui.t(N_("Tokens per round")))
st.latex(r"E[N] = \sum_{i=0}^{K} \alpha^i = \frac{1 - \alpha^{K+1}}{1 - \alpha}")
st.caption(
    ui.t("Each round yields the accepted draft prefix plus one token from the target (a correction or a bonus).")
)

st.subheader(ui.t("Wall-clock speedup"))
st.latex(r"S = \frac{E[N]\, T_p}{T_p + K\,T_q} = \frac{E[N]\, c}{c + K}")
st.caption(
    ui.t(
        "Speculation pays when E[N] > 1 + K/c. The measured-cost model adds the extra cost v of verifying each extra token and a fixed overhead o per round: S = E[N] / (1 + vK + o + K/c)."
    )
)

LINKS = {
    "design-space": N_("Design space — E[N] and speedup maps, point inspector"),
    "break-even": N_("Break-even & optimal K — where speculation stops paying"),
    "sampling-lab": N_("Rejection-sampling lab — why the method is lossless"),
    "hardware": N_("Hardware & batch — c, v, the speedup and K* of a real pair on a real GPU, by batch and context"),
    "validation": N_("Validation — the cost model against published GPU measurements and your runs"),
    "strategies": N_("Drafting strategies — token trees: tokens per round of chains, top-k and Sequoia-optimal trees"),
    "live": N_("Live benchmark — run a draft/target pair here, see it on the curves"),
    "server-monitor": N_("Server monitor — live acceptance from your vLLM, SGLang, llama.cpp or TensorRT-LLM servers"),
    "tune": N_("Tune — measure your server over K and load, get the K per load and each stack's schedule"),
    "run-library": N_(
        "Run library — your serving stack's numbers from any benchmark file, in a library shared by the team"
    ),
    "compare-runs": N_("Compare runs — measured runs on the theory: by K, per position, by context and domain"),
    "published-acceptance": N_("Against published acceptance — a run beside the published acceptance of its target"),
    "converter": N_("Metric converter & glossary — what each serving stack reports"),
}  #: page -> the link's text
st.subheader(ui.t("Pages"))
for name, icon in (
    ("design-space", ":material/map:"),
    ("break-even", ":material/balance:"),
    ("sampling-lab", ":material/casino:"),
    ("hardware", ":material/memory:"),
    ("validation", ":material/fact_check:"),
    ("strategies", ":material/account_tree:"),
    ("live", ":material/play_circle:"),
    ("server-monitor", ":material/monitor_heart:"),
    ("tune", ":material/tune:"),
    ("run-library", ":material/table_chart:"),
    ("compare-runs", ":material/stacked_line_chart:"),
    ("published-acceptance", ":material/menu_book:"),
    ("converter", ":material/sync_alt:"),
):
    st.page_link(f"pages/{name}.py", label=ui.t(LINKS[name]), icon=icon)
st.caption(
    ui.t(
        "Source of the math: Leviathan, Kalman & Matias, *Fast Inference from Transformers via Speculative Decoding*, ICML 2023 (arXiv 2211.17192), as worked through in the chapter bundled with this project."
    )
)

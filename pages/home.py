"""Home: the three quantities, the two formulas, and a link to every page."""

import streamlit as st

from specviz import ui

ui.hand_over_to_router()  # first thing: see the function (a shared link on a fresh server)

st.title("specviz")
st.markdown(
    "**Speculative decoding** lets a small *draft* model propose **K** tokens that the large "
    "*target* model checks in a single forward pass. Rejection sampling keeps the output "
    "distribution exactly the target's, so the only question is speed — and that is decided by "
    "three numbers."
)

col_a, col_k, col_c = st.columns(3)
col_a.markdown(
    "#### α — acceptance rate\nProbability that the target accepts a draft token: "
    "α = Σₓ min(p(x), q(x)) = 1 − TV(p, q). Depends on how alike draft and target are."
)
col_k.markdown(
    "#### K — draft length\nTokens the draft proposes per round (γ in Leviathan et al.). "
    "More tokens per round, but every extra draft step costs time."
)
col_c.markdown(
    "#### c — speed ratio\nc = T_target / T_draft: how many draft steps fit in one target step. "
    "Leviathan et al. use the inverse, c_L = T_draft / T_target = 1/c."
)

st.subheader("Tokens per round")
st.latex(r"E[N] = \sum_{i=0}^{K} \alpha^i = \frac{1 - \alpha^{K+1}}{1 - \alpha}")
st.caption("Each round yields the accepted draft prefix plus one token from the target (a correction or a bonus).")

st.subheader("Wall-clock speedup")
st.latex(r"S = \frac{E[N]\, T_p}{T_p + K\,T_q} = \frac{E[N]\, c}{c + K}")
st.caption(
    "Speculation pays when E[N] > 1 + K/c. The measured-cost model adds the extra cost v of verifying "
    "each extra token and a fixed overhead o per round: S = E[N] / (1 + vK + o + K/c)."
)

st.subheader("Pages")
st.page_link(
    "pages/design-space.py", label="Design space — E[N] and speedup maps, point inspector", icon=":material/map:"
)
st.page_link(
    "pages/break-even.py",
    label="Break-even & optimal K — where speculation stops paying",
    icon=":material/balance:",
)
st.page_link(
    "pages/sampling-lab.py", label="Rejection-sampling lab — why the method is lossless", icon=":material/casino:"
)
st.page_link(
    "pages/hardware.py",
    label="Hardware & batch — c, v, the speedup and K* of a real pair on a real GPU, by batch and context",
    icon=":material/memory:",
)
st.page_link(
    "pages/strategies.py",
    label="Drafting strategies — token trees: tokens per round of chains, top-k and Sequoia-optimal trees",
    icon=":material/account_tree:",
)
st.page_link(
    "pages/live.py",
    label="Live benchmark — run a draft/target pair here, see it on the curves",
    icon=":material/play_circle:",
)
st.page_link(
    "pages/engine-monitor.py",
    label="Engine monitor — live acceptance from your vLLM, SGLang, llama.cpp or TensorRT-LLM servers",
    icon=":material/monitor_heart:",
)
st.page_link(
    "pages/measured-data.py",
    label="Measured data — your engine's numbers on the theory, in a shared run library",
    icon=":material/table_chart:",
)
st.page_link(
    "pages/converter.py", label="Metric converter & glossary — what each engine reports", icon=":material/sync_alt:"
)
st.caption(
    "Source of the math: Leviathan, Kalman & Matias, *Fast Inference from Transformers via Speculative "
    "Decoding*, ICML 2023 (arXiv 2211.17192), as worked through in the chapter bundled with this project."
)

"""Home: the three quantities, the two formulas, and a link to every page."""

import streamlit as st

from specviz.app import router, ui

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

st.title("specviz")
st.markdown(ui.t("home.intro"))

col_a, col_k, col_c = st.columns(3)
col_a.markdown(ui.t("home.alpha"))
col_k.markdown(ui.t("home.k"))
col_c.markdown(ui.t("home.c"))

st.subheader(ui.t("home.tokens_per_round"))
st.latex(r"E[N] = \sum_{i=0}^{K} \alpha^i = \frac{1 - \alpha^{K+1}}{1 - \alpha}")
st.caption(ui.t("home.tokens_caption"))

st.subheader(ui.t("home.speedup"))
st.latex(r"S = \frac{E[N]\, T_p}{T_p + K\,T_q} = \frac{E[N]\, c}{c + K}")
st.caption(ui.t("home.speedup_caption"))

st.subheader(ui.t("home.pages"))
for name, icon in (
    ("design-space", ":material/map:"),
    ("break-even", ":material/balance:"),
    ("sampling-lab", ":material/casino:"),
    ("hardware", ":material/memory:"),
    ("strategies", ":material/account_tree:"),
    ("live", ":material/play_circle:"),
    ("engine-monitor", ":material/monitor_heart:"),
    ("measured-data", ":material/table_chart:"),
    ("converter", ":material/sync_alt:"),
):
    st.page_link(f"pages/{name}.py", label=ui.t(f"home.link.{name}"), icon=icon)
st.caption(ui.t("home.source"))

"""specviz — router: page config, navigation over pages/, shared sidebar."""

import streamlit as st

st.set_page_config(
    page_title="specviz — speculative decoding design space", page_icon=":material/speed:", layout="wide"
)

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="home", default=True),
    st.Page("pages/design_space.py", title="Design space", icon=":material/map:", url_path="design-space"),
    st.Page("pages/break_even.py", title="Break-even & optimal K", icon=":material/balance:", url_path="break-even"),
    st.Page("pages/sampling_lab.py", title="Rejection-sampling lab", icon=":material/casino:", url_path="sampling-lab"),
    st.Page("pages/live.py", title="Live benchmark", icon=":material/play_circle:", url_path="live"),
    st.Page("pages/measured_data.py", title="Measured data", icon=":material/table_chart:", url_path="measured-data"),
    st.Page(
        "pages/converter.py", title="Metric converter & glossary", icon=":material/sync_alt:", url_path="converter"
    ),
]

page = st.navigation(PAGES)
with st.sidebar:
    st.caption(
        "specviz: where speculative decoding pays, by how much, and why. "
        "Every control is mirrored in the URL: copy it to share the exact view."
    )
page.run()

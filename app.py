"""specviz — router: page config, navigation over pages/, shared sidebar.

Each page file is named by its URL path (``pages/design-space.py`` for ``/design-space``) and starts
with ``ui.hand_over_to_router()``: on the first request after a server start Streamlit still runs the
``pages/`` folder as a legacy multipage app, and a shared link must land on its page through this
router without a "Page not found" dialog (see :func:`specviz.ui.hand_over_to_router`).
"""

import streamlit as st

st.set_page_config(
    page_title="specviz — speculative decoding design space", page_icon=":material/speed:", layout="wide"
)

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="main", default=True),
    st.Page("pages/design-space.py", title="Design space", icon=":material/map:", url_path="design-space"),
    st.Page("pages/break-even.py", title="Break-even & optimal K", icon=":material/balance:", url_path="break-even"),
    st.Page("pages/sampling-lab.py", title="Rejection-sampling lab", icon=":material/casino:", url_path="sampling-lab"),
    st.Page("pages/hardware.py", title="Hardware & batch", icon=":material/memory:", url_path="hardware"),
    st.Page("pages/strategies.py", title="Drafting strategies", icon=":material/account_tree:", url_path="strategies"),
    st.Page("pages/live.py", title="Live benchmark", icon=":material/play_circle:", url_path="live"),
    st.Page(
        "pages/engine-monitor.py", title="Engine monitor", icon=":material/monitor_heart:", url_path="engine-monitor"
    ),
    st.Page("pages/measured-data.py", title="Measured data", icon=":material/table_chart:", url_path="measured-data"),
    st.Page(
        "pages/converter.py", title="Metric converter & glossary", icon=":material/sync_alt:", url_path="converter"
    ),
    # Home is served at "/" (the default page's url_path is never shown); "/home", its file's name and the
    # path a legacy multipage app gave it, opens it too, without a "Page not found" dialog.
    st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="home", visibility="hidden"),
]

page = st.navigation(PAGES)
with st.sidebar:
    st.caption(
        "specviz: where speculative decoding pays, by how much, and why. "
        "Every control is mirrored in the URL: copy it to share the exact view."
    )
page.run()

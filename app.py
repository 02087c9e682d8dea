"""specviz — router: page config, navigation over pages/, shared sidebar.

Each page file is named by its URL path (``pages/design-space.py`` for ``/design-space``) and starts
with ``ui.hand_over_to_router()``: on the first request after a server start Streamlit still runs the
``pages/`` folder as a legacy multipage app, and a shared link must land on its page through this
router without a "Page not found" dialog (see :func:`specviz.app.ui.hand_over_to_router`).
"""

import streamlit as st

from specviz.app import ui

st.set_page_config(page_title=ui.t("app.page_title"), page_icon=":material/speed:", layout="wide")


def page(path: str, name: str, icon: str, url_path: str | None = None, **kwargs):
    """A page of the navigation, titled in this session's language; its URL path (``name``) stays English."""
    return st.Page(path, title=ui.t(f"nav.{name}"), icon=icon, url_path=url_path or name, **kwargs)


PAGES = [
    page("pages/home.py", "home", ":material/home:", url_path="main", default=True),
    page("pages/design-space.py", "design-space", ":material/map:"),
    page("pages/break-even.py", "break-even", ":material/balance:"),
    page("pages/sampling-lab.py", "sampling-lab", ":material/casino:"),
    page("pages/hardware.py", "hardware", ":material/memory:"),
    page("pages/strategies.py", "strategies", ":material/account_tree:"),
    page("pages/live.py", "live", ":material/play_circle:"),
    page("pages/engine-monitor.py", "engine-monitor", ":material/monitor_heart:"),
    page("pages/measured-data.py", "measured-data", ":material/table_chart:"),
    page("pages/converter.py", "converter", ":material/sync_alt:"),
    # Home is served at "/" (the default page's url_path is never shown); "/home", its file's name and the
    # path a legacy multipage app gave it, opens it too, without a "Page not found" dialog.
    page("pages/home.py", "home", ":material/home:", url_path="home", visibility="hidden"),
]

current = st.navigation(PAGES)
with st.sidebar:
    ui.language_switch()
    st.caption(ui.t("app.sidebar"))
current.run()

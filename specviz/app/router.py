"""The app's navigation: page config, the pages, the shared sidebar; for app.py and for a page Streamlit runs
on its own.

While no ``st.navigation`` call has happened in a server process, Streamlit treats the ``pages/`` folder
beside app.py as a legacy multipage app: when a shared link is the first request after a start, it finds
``pages/<url path>.py`` by its file name and runs that file directly, without app.py. Every page therefore
starts with :func:`enter`. In a run that came through :func:`run` (app.py) it does nothing. Otherwise it
calls ``st.navigation`` itself; when the page the navigation resolves is this very file (the legacy lookup
found it by its URL path), it runs it as app.py would — page config, navigation, sidebar, the page inside
``StreamlitPage.run`` — and stops the outer run there (``st.stop``). Only public Streamlit API is used, and
from that call on Streamlit no longer takes the legacy path. Page files are named by their URL path
(``pages/design-space.py`` for ``/design-space``) for the legacy lookup to find them; ``tests/pages/test_pages.py``
checks both rules and the browser test opens a deep link first on a fresh server.
"""

from __future__ import annotations

import contextvars
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from specviz.app import ui
from specviz.base import machine
from specviz.base.i18n import N_
from specviz.base.paths import ROOT

if TYPE_CHECKING:  # what st.Page and st.navigation return
    from streamlit.navigation.page import StreamlitPage

__all__ = ["PAGES", "Route", "enter", "forward", "page", "run"]

PAGE_DIR = ROOT / "pages"


@dataclass(frozen=True)
class Route:
    """A page of the navigation: its file ``pages/<name>.py``, its title (:data:`TITLES`), its icon and URL path."""

    name: str
    icon: str
    url_path: str | None = None  #: the URL path; ``name`` unless given
    default: bool = False
    hidden: bool = False

    @property
    def file(self) -> Path:
        return PAGE_DIR / f"{self.name}.py"


PAGES: tuple[Route, ...] = (
    Route("home", ":material/home:", url_path="main", default=True),
    Route("design-space", ":material/map:"),
    Route("break-even", ":material/balance:"),
    Route("sampling-lab", ":material/casino:"),
    Route("hardware", ":material/memory:"),
    Route("validation", ":material/fact_check:"),
    Route("serving", ":material/dns:"),
    Route("strategies", ":material/account_tree:"),
    Route("live", ":material/play_circle:"),
    Route("server-monitor", ":material/monitor_heart:"),
    Route("tune", ":material/tune:"),
    Route("run-library", ":material/table_chart:"),
    Route("compare-runs", ":material/stacked_line_chart:"),
    Route("published-acceptance", ":material/menu_book:"),
    Route("converter", ":material/sync_alt:"),
    # Home is served at "/" (the default page's url_path is never shown); "/home", its file's name and the
    # path a legacy multipage app gave it, opens it too, without a "Page not found" dialog.
    Route("home", ":material/home:", url_path="home", hidden=True),
    # The page the three above were split from: its links open the one their query names (:func:`forward`).
    Route("measured-data", ":material/table_chart:", hidden=True),
    # The Server monitor's old address: its links open the Server monitor (:func:`forward`).
    Route("engine-monitor", ":material/monitor_heart:", hidden=True),
)

#: True while :func:`run` runs a page: that page's :func:`enter` then has nothing to do.
_ROUTED: contextvars.ContextVar[bool] = contextvars.ContextVar("specviz_routed", default=False)


TITLES = {
    "home": N_("Home"),
    "design-space": N_("Design space"),
    "break-even": N_("Break-even & optimal K"),
    "sampling-lab": N_("Rejection-sampling lab"),
    "hardware": N_("Hardware & batch"),
    "validation": N_("Validation"),
    "serving": N_("Serving"),
    "strategies": N_("Drafting strategies"),
    "live": N_("Live benchmark"),
    "server-monitor": N_("Server monitor"),
    "tune": N_("Tune"),
    "run-library": N_("Run library"),
    "compare-runs": N_("Compare runs"),
    "published-acceptance": N_("Against published acceptance"),
    "measured-data": N_("Measured data"),
    "converter": N_("Metric converter & glossary"),
    "engine-monitor": N_("Server monitor"),
}  #: page name -> its title in the navigation


def _navigation() -> tuple[StreamlitPage, dict[str, Path]]:
    """Page config and ``st.navigation`` over :data:`PAGES`, titled in this session's language.

    Returns the page Streamlit chose and each URL path's file (the default page's is ``""``).
    """
    st.set_page_config(
        page_title=ui.t("specviz — speculative decoding design space"), page_icon=":material/speed:", layout="wide"
    )
    pages = [
        st.Page(
            r.file,
            title=ui.t(TITLES[r.name]),
            icon=r.icon,
            url_path=r.url_path or r.name,
            default=r.default,
            visibility="hidden" if r.hidden else "visible",
        )
        for r in PAGES
    ]
    files = {("" if r.default else r.url_path or r.name): r.file for r in PAGES}
    return st.navigation(pages), files


def _run(current: StreamlitPage) -> None:
    """The chosen page, marked as routed, with the shared sidebar above the page's own sidebar.

    The shared sidebar is sent after the page (into a slot made before it): a fresh browser then starts
    loading the page's first chart before the language switch's code (docs/performance.md, browser_bench).
    """
    with st.sidebar:
        ui.headline_style()  # a style only: no element before the page's first chart
        shared = st.container()
    token = _ROUTED.set(True)
    try:
        current.run()
    finally:
        _ROUTED.reset(token)
        with shared:
            ui.language_switch()
            ui.identity_sidebar()
            st.caption(
                ui.t(
                    "specviz: where speculative decoding pays, by how much, and why. Every control is mirrored in the URL: copy it to share the exact view."
                )
            )


def run() -> None:
    """app.py: page config, navigation, sidebar and the page the URL names; the server's heap trimmer started."""
    machine.start_heap_trimmer()
    current, _ = _navigation()
    _run(current)


def enter(page_file: str) -> None:
    """First call of every page (``router.enter(__file__)``): hands a run that bypassed app.py to the router.

    A run of ``page_file`` that did not come through :func:`run` calls ``st.navigation``. Where the page it
    resolves is ``page_file`` (Streamlit's legacy lookup ran this file for its URL path), the page is run
    through the router and the outer run stops. Otherwise (the file opened on its own, as ``AppTest`` does)
    the page goes on alone.
    """
    if _ROUTED.get():
        return
    current, files = _navigation()
    if files.get(current.url_path) == Path(page_file).resolve():
        _run(current)
        st.stop()


def page(name: str) -> StreamlitPage:
    """Page ``name`` of :data:`PAGES` as ``st.page_link`` and ``st.switch_page`` take it, wherever the running
    file is (a path like ``pages/x.py`` is read relative to the entry point, which ``AppTest`` makes the page)."""
    route = next(r for r in PAGES if r.name == name)
    return st.Page(route.file, url_path=route.url_path or route.name)


def forward(name: str) -> None:
    """An old page's run: open page ``name`` with this URL's query parameters instead.

    Routed (app.py, or :func:`enter` on a fresh server), ``st.switch_page`` takes the browser to the page's
    own URL path. A file opened on its own (``AppTest``) runs the page's file in place, as routed; its later
    reruns run the same page, as they would at the URL path switched to.
    """
    if _ROUTED.get():
        st.switch_page(page(name), query_params=st.query_params.to_dict())
    name = st.session_state.setdefault("_specviz_forwarded", name)
    route = next(r for r in PAGES if r.name == name)
    token = _ROUTED.set(True)
    try:
        runpy.run_path(str(route.file), run_name="__main__")
    finally:
        _ROUTED.reset(token)

"""Streamlit glue shared by the pages: URL-mirrored controls, share link, errors.

The only module of ``specviz`` that imports streamlit. A page declares its
controls as a tuple of :class:`specviz.app.share.Param`, calls :func:`restore` before
drawing its widgets (each widget uses ``key=ui.key(PAGE, name)`` and no
``value=``), and :func:`publish` after them.

One module per job: :mod:`.language`, :mod:`.controls`, :mod:`.display` (text, tables in one unit per column, errors),
:mod:`.caches` and :mod:`.frontend` (Streamlit's own texts). The package re-exports their names.
"""

from specviz.app.ui.caches import _RUNS as _RUNS
from specviz.app.ui.caches import (
    CACHED_ENTRIES,
    FIGURE_ENTRIES,
    RUN_CACHE_BYTES,
    SHARED_STORES,
    SharedResults,
    cached,
    delete_runs,
    derived_runs,
    figure,
    library,
    library_runs,
    load_runs,
    parsed_upload,
    shared_results,
)
from specviz.app.ui.controls import (
    chart,
    checkbox,
    csv_download,
    headline_style,
    key,
    multiselect,
    number_input,
    publish,
    radio,
    restore,
    selectbox,
    share_key,
    show_open_tab,
    slider,
    tabs,
    text_box,
    toggle,
    values,
)
from specviz.app.ui.display import (
    MISSING,
    Col,
    cell_text,
    headings,
    markdown_table,
    message,
    number,
    plain,
    public_message,
    reported_errors,
    show_error,
    shown_cells,
    static_table,
    table,
)
from specviz.app.ui.frontend import file_uploader, placeholder
from specviz.app.ui.identity import current as identity
from specviz.app.ui.identity import refusal
from specviz.app.ui.identity import sidebar as identity_sidebar
from specviz.app.ui.language import LANG_KEY, LANG_PARAM, language, language_switch, session_language, t

__all__ = [
    "CACHED_ENTRIES",
    "FIGURE_ENTRIES",
    "LANG_KEY",
    "LANG_PARAM",
    "MISSING",
    "RUN_CACHE_BYTES",
    "SHARED_STORES",
    "Col",
    "SharedResults",
    "cached",
    "cell_text",
    "chart",
    "checkbox",
    "csv_download",
    "delete_runs",
    "derived_runs",
    "figure",
    "file_uploader",
    "headings",
    "headline_style",
    "identity",
    "identity_sidebar",
    "key",
    "language",
    "language_switch",
    "library",
    "library_runs",
    "load_runs",
    "markdown_table",
    "message",
    "multiselect",
    "number",
    "number_input",
    "parsed_upload",
    "placeholder",
    "plain",
    "public_message",
    "publish",
    "radio",
    "refusal",
    "reported_errors",
    "restore",
    "selectbox",
    "session_language",
    "share_key",
    "shared_results",
    "show_error",
    "show_open_tab",
    "shown_cells",
    "slider",
    "static_table",
    "t",
    "table",
    "tabs",
    "text_box",
    "toggle",
    "values",
]

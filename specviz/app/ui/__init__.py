"""Streamlit glue shared by the pages: URL-mirrored controls, share link, errors.

The only module of ``specviz`` that imports streamlit. A page declares its
controls as a tuple of :class:`specviz.app.share.Param`, calls :func:`restore` before
drawing its widgets (each widget uses ``key=ui.key(PAGE, name)`` and no
``value=``), and :func:`publish` after them.

One module per job: :mod:`.language`, :mod:`.controls`, :mod:`.display` (text, tables, errors) and
:mod:`.caches`. The package re-exports their names.
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
    markdown_table,
    message,
    plain,
    public_message,
    reported_errors,
    show_error,
    static_table,
)
from specviz.app.ui.identity import current as identity
from specviz.app.ui.identity import refusal
from specviz.app.ui.identity import sidebar as identity_sidebar
from specviz.app.ui.language import LANG_KEY, LANG_PARAM, language, language_switch, session_language, t

__all__ = [
    "CACHED_ENTRIES",
    "FIGURE_ENTRIES",
    "LANG_KEY",
    "LANG_PARAM",
    "RUN_CACHE_BYTES",
    "SHARED_STORES",
    "SharedResults",
    "cached",
    "chart",
    "checkbox",
    "csv_download",
    "delete_runs",
    "derived_runs",
    "figure",
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
    "number_input",
    "parsed_upload",
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
    "slider",
    "static_table",
    "t",
    "tabs",
    "text_box",
    "toggle",
    "values",
]

"""The Streamlit app's library: widgets, language and error display (``ui``), shareable links
(``share``), figures (``figures``, one module per page family), grids and overlays of measured runs
(``grids``, ``overlays``) and the live page's controller (``live``). The only layer that imports
streamlit; pages import from here and from the layers below."""

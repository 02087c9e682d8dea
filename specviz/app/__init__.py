"""The Streamlit app's library, the only layer that imports streamlit and plotly.

Widgets, language and error display (``ui``), shareable links (``share``), one frozen scenario per page
(``scenarios``, ``measured``), figures (``figures``), grids and overlays of measured runs and the live
page's controller (``live``); pages import from here and from the layers below."""

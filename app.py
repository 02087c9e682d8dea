"""specviz — router: page config, navigation over pages/, shared sidebar (specviz.app.router).

Each page file is named by its URL path (``pages/design-space.py`` for ``/design-space``) and starts
with ``router.enter(__file__)``: on the first request after a server start Streamlit still runs the
``pages/`` folder as a legacy multipage app, and a shared link must land on its page through this
router without a "Page not found" dialog (see :mod:`specviz.app.router`).
"""

from specviz.app import router

router.run()

"""The Server monitor's old address: a link to it opens the Server monitor with the same controls."""

from specviz.app import router

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

router.forward("server-monitor")

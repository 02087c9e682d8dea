"""Measured runs: the measurement schema, readers and cell checks (``measurements``) and the shared run library (``store``)."""

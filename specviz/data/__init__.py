"""Measured runs: the measurement schema, readers of the ecosystem's logs and files, validation
(``measurements``) and the shared run library in SQLite or PostgreSQL (``store``)."""

"""Alembic's environment for the run library: always run on a connection the library hands over."""

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:  # the alembic command line: a URL in alembic.ini or -x url=…
    import sqlalchemy as sa

    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    connection = sa.create_engine(url).connect()
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

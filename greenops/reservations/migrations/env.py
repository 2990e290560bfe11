"""Alembic environment: migrations run on the connection the store hands over (no alembic.ini)."""

from alembic import context

from greenops.reservations.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()

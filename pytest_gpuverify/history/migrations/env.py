"""Alembic's environment: always on the connection ``db.migrate`` hands over (in its transaction, under its
lock), never from an ini file or a URL of its own."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, render_as_batch=True)
with context.begin_transaction():  # the caller's transaction: nothing is committed here
    context.run_migrations()

"""Alembic's migrations of the history store, shipped in the package: ``db.migrate`` runs them."""

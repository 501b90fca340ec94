"""The history store: every checked artifact remembered (a SQLite file, or a team's PostgreSQL database),
compared against and plotted.

The store's API, for the commands and services built on it:

- ``names.locate(text)``: a store as named by an option, ini key or environment (a ``Path``, or a URL str);
  ``names.shown(name)``: how a message names it (a URL's password masked);
- ``db.open_store(name, reading)`` / ``db.connect(name)``: a SQLAlchemy ``Connection``, the schema migrated;
  ``db.guard(name)``: any database error within as one ``StoreError`` line; ``db.transaction(conn)``: one
  write transaction (SQLite's write lock taken at its start);
- ``store.insert`` / ``insert_many`` (idempotent by artifact sha256), ``runs``, ``targets``, ``count``;
- ``schema``: the tables; a schema change is a new ``migrations/versions/000N_*.py`` (revision ``"000N"``)
  and ``db.SCHEMA_VERSION = N``.
"""

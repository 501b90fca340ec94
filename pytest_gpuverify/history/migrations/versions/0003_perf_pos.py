"""Schema 3: each perf row's place in its run, read back in that order on every database (PostgreSQL has no
rowid: the rows of a SQLite store before this one take theirs, which is the order they were stored in).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("perf", sa.Column("pos", sa.Integer))
    if op.get_bind().dialect.name == "sqlite":
        op.execute("UPDATE perf SET pos = rowid")
        op.execute("PRAGMA user_version = 3")

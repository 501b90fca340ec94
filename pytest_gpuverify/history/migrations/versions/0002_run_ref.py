"""Schema 2: the branch or tag a run's commit was on, so history can be read per ref (e.g. main).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("ref", sa.Text))
    op.create_index("runs_target", "runs", ["target", "ref", "ts"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version = 2")

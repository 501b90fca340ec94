"""Schema 1: the runs and their perf rows.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("artifact_sha256", sa.Text, nullable=False, unique=True),
        sa.Column("artifact_path", sa.Text, nullable=False),
        sa.Column("target", sa.Text),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("ticket", sa.Text),
        sa.Column("host", sa.Text),
        sa.Column("facts", sa.Text, nullable=False),
        sa.Column("image_digest", sa.Text),
        sa.Column("sha", sa.Text),
        sa.Column("dirty", sa.Integer),
        sa.Column("ts", sa.Text, nullable=False),
        sa.Column("verdict", sa.Text, nullable=False),
        sa.Column("watch", sa.Text, nullable=False),
        sa.Column("added", sa.Text, nullable=False),
    )
    op.create_table(
        "perf",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("tbl", sa.Text),
        sa.Column("shape", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("stat", sa.Text),
        sa.Column("metric", sa.Text, nullable=False),
        sa.Column("direction", sa.Text),
        sa.Column("run_values", sa.Text, nullable=False),
        sa.Column("median", sa.Float, nullable=False),
        sa.Column("min", sa.Float, nullable=False),
        sa.Column("max", sa.Float, nullable=False),
        sa.Column("cv", sa.Float),
    )
    op.create_index("perf_run", "perf", ["run_id"])
    _user_version(1)


def _user_version(version: int) -> None:
    # SQLite stores before Alembic kept their version here: an older gpuverify still reads it (and refuses a newer)
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"PRAGMA user_version = {version}")

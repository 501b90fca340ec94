"""Schema 5: the health of the machines. ``gpu_runs``: per run, one row per GPU it held (by UUID) with what
befell the run there (a timeout, an interrupt, a container that died) and the GPU's ECC error counts as
its reader gave them; a run that got no GPU (NO_GPU) is one row with no UUID, kept per host.
``gpu_clears``: who cleared a GPU's record and when (a GPU is judged on its runs after its last clear).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gpu_runs",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("gpu_uuid", sa.Text),
        sa.Column("gpu_index", sa.Integer),
        sa.Column("gpu_name", sa.Text),
        sa.Column("host", sa.Text),
        sa.Column("ts", sa.Text, nullable=False),
        sa.Column("timed_out", sa.Integer, nullable=False),
        sa.Column("interrupted", sa.Text),
        sa.Column("container_died", sa.Integer, nullable=False),
        sa.Column("no_gpu", sa.Integer, nullable=False),
        sa.Column("ecc_corrected", sa.Integer),
        sa.Column("ecc_uncorrected", sa.Integer),
    )
    op.create_index("gpu_runs_gpu", "gpu_runs", ["gpu_uuid", "ts"])
    op.create_index("gpu_runs_host", "gpu_runs", ["host", "ts"])
    op.create_index("gpu_runs_run", "gpu_runs", ["run_id"])
    op.create_table(
        "gpu_clears",
        sa.Column("gpu_uuid", sa.Text, nullable=False),
        sa.Column("cleared_by", sa.Text, nullable=False),
        sa.Column("cleared_at", sa.Text, nullable=False),
        sa.Column("ecc_uncorrected", sa.Integer),  # the count when cleared: only errors past it count again
    )
    op.create_index("gpu_clears_gpu", "gpu_clears", ["gpu_uuid", "cleared_at"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version = 5")

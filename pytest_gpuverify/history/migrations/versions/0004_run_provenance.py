"""Schema 4: who wrote each run, as the ingest service records it: the signer the allowed-signers file named,
the CI run's URL, the runner (its upload token's name) and when it was uploaded; NULL for runs added on the
host itself (``history add``, a session's ``--gpu-history FILE``).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for name in ("signer", "ci_run_url", "runner", "uploaded"):
        op.add_column("runs", sa.Column(name, sa.Text))
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version = 4")

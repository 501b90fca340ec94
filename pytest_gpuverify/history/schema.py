"""The store's tables as SQLAlchemy Core ``Table``s: what the queries of ``store.py`` are written against.
The migrations (``migrations/versions/``) make these tables; each schema version is one of them."""

from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Index, Integer, MetaData, Table, Text

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("artifact_sha256", Text, nullable=False, unique=True),  # one run per artifact, however many writers
    Column("artifact_path", Text, nullable=False),
    Column("target", Text),
    Column("topic", Text, nullable=False),
    Column("ticket", Text),
    Column("host", Text),
    Column("facts", Text, nullable=False),  # JSON, sorted keys: like facts are equal text
    Column("image_digest", Text),
    Column("sha", Text),
    Column("dirty", Integer),  # 0, 1 or NULL (unknown), as SQLite stored it before PostgreSQL stores existed
    Column("ts", Text, nullable=False),
    Column("verdict", Text, nullable=False),
    Column("watch", Text, nullable=False),
    Column("added", Text, nullable=False),
    Column("ref", Text),
    # written by the ingest service only (NULL for a run added on the host itself): who sent the run
    Column("signer", Text),  # the allowed-signers principal whose key signed the artifact
    Column("ci_run_url", Text),
    Column("runner", Text),  # the name of the upload token the runner held
    Column("uploaded", Text),
)
Index("runs_target", runs.c.target, runs.c.ref, runs.c.ts)

perf = Table(
    "perf",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("tbl", Text),
    Column("shape", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("stat", Text),
    Column("metric", Text, nullable=False),
    Column("direction", Text),
    Column("run_values", Text, nullable=False),  # JSON list of the run's values
    Column("median", Float, nullable=False),
    Column("min", Float, nullable=False),
    Column("max", Float, nullable=False),
    Column("cv", Float),
    Column("pos", Integer),  # the row's place in its run's artifact (PostgreSQL keeps no insertion order)
)
Index("perf_run", perf.c.run_id)

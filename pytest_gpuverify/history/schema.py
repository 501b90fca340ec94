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

# the health of the machines (migration 0005): per run, a row per GPU it held (by UUID), or one row without a
# UUID for a run that got no GPU (NO_GPU, kept per host)
gpu_runs = Table(
    "gpu_runs",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("gpu_uuid", Text),
    Column("gpu_index", Integer),
    Column("gpu_name", Text),
    Column("host", Text),
    Column("ts", Text, nullable=False),  # the run's
    Column("timed_out", Integer, nullable=False),
    Column("interrupted", Text),
    Column("container_died", Integer, nullable=False),
    Column("no_gpu", Integer, nullable=False),
    Column("ecc_corrected", Integer),  # since the driver loaded, as the GPU's reader gave them; NULL: not read
    Column("ecc_uncorrected", Integer),
)
Index("gpu_runs_gpu", gpu_runs.c.gpu_uuid, gpu_runs.c.ts)
Index("gpu_runs_host", gpu_runs.c.host, gpu_runs.c.ts)
Index("gpu_runs_run", gpu_runs.c.run_id)

gpu_clears = Table(
    "gpu_clears",
    metadata,
    Column("gpu_uuid", Text, nullable=False),
    Column("cleared_by", Text, nullable=False),
    Column("cleared_at", Text, nullable=False),
    Column("ecc_uncorrected", Integer),  # the count when cleared: only errors past it count again
)
Index("gpu_clears_gpu", gpu_clears.c.gpu_uuid, gpu_clears.c.cleared_at)

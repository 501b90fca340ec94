"""The frozen field sets of the current schema version are exactly what the engine's models write:
a field added to a model without its schema entry would make `check` refuse every new artifact."""

from pytest_gpuverify.records import artifact

from pytest_gpuverify.verify import schemas


def test_current_schema_lists_every_model_field():
    version = artifact.SCHEMA_VERSION
    assert set(artifact.Artifact.model_fields) == schemas.TOP_FIELDS[version]
    nested = schemas.NESTED[version]
    assert set(artifact.RunRecord.model_fields) == nested["run"]
    assert set(artifact.TargetRecord.model_fields) == nested["target"]
    assert set(artifact.GpuRecord.model_fields) == nested["gpu"]
    assert set(artifact.Correctness.model_fields) == nested["correctness"]
    from pytest_gpuverify.records.builds import BuildRecord

    assert set(BuildRecord.model_fields) == schemas.BUILD_KEYS

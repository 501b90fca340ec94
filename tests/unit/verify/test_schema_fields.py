"""The frozen field sets of the current schema version are exactly what the engine's models write:
a field added to a model without its schema entry would make `check` refuse every new artifact."""

from pytest_gpuverify.records import artifact
from pytest_gpuverify.verify import schemas


def test_current_schema_lists_every_model_field():
    version = artifact.SCHEMA_VERSION
    assert set(artifact.Artifact.model_fields) == schemas.TOP_FIELDS[version] | schemas.LATER.get(version, frozenset())
    nested = schemas.NESTED[version]
    later = schemas.NESTED_LATER.get(version, {})
    assert set(artifact.RunRecord.model_fields) == nested["run"] | later.get("run", frozenset())
    assert set(artifact.TargetRecord.model_fields) == nested["target"]
    assert set(artifact.GpuRecord.model_fields) == nested["gpu"]
    assert set(artifact.Correctness.model_fields) == nested["correctness"]
    from pytest_gpuverify.records.builds import BuildRecord

    assert set(BuildRecord.model_fields) == schemas.BUILD_KEYS


def test_a_field_added_later_may_be_there_or_not_and_nothing_else_may():
    """shard and scheduler joined schema 5 with defaults: artifacts of 5 written before them still check."""
    import json

    data = json.loads(artifact.dump_artifact(artifact.Artifact(topic="t", ts="2026-01-01T00:00:00.000Z")))
    data.update(
        run={
            "blocked": [],
            "ran": False,
            "exit_code": None,
            "timed_out": False,
            "interrupted": None,
            "container_died": False,
            "output_problems": [],
            "unknowns": [],
            "leftovers": [],
            "output_parsed": False,
            "shared": [],
        },
        target={k: v for k, v in artifact.TargetRecord(name="t", kind="aiter-op-test").model_dump().items()},
    )
    assert schemas.schema_problems(data) == []
    older = {k: v for k, v in data.items() if k not in ("shard", "scheduler")}
    assert schemas.schema_problems(older) == []
    assert schemas.schema_problems({**data, "sharded": 1}) == ["field sharded is not in schema 5"]
    # run.imports_outside and import_origins joined schema 5 with defaults: with them or without, it checks
    recorded = {**data, "import_origins": {}, "run": {**data["run"], "imports_outside": []}}
    assert schemas.schema_problems(recorded) == []
    assert schemas.schema_problems({**data, "run": {**data["run"], "outside": []}}) == [
        "field run.outside is not in schema 5"
    ]

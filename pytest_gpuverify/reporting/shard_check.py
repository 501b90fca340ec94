"""Did every shard of a split run arrive, once? Read from the artifacts' ``shard`` records
(config/shards.py): each names its shard, the count, the run, the split's digest, how many GPU
targets every shard was given, and the session that ran it. A shard given no target has no
artifact and is not missing; a shard's artifacts from two sessions are that shard run twice.

A CI re-run ("Re-run failed jobs" on GitHub) keeps the run id and counts the attempt up: the shards of
all attempts are one run, and where a shard ran in several attempts its latest attempt's artifacts
count; the earlier ones are superseded (merge sets them aside, naming them)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pytest_gpuverify.config.shards import logical_run
from pytest_gpuverify.records.scheduling import ShardRecord


def _group(record: ShardRecord) -> tuple[str, int]:
    """(the run's name, the attempt) of a record."""
    run, attempt = logical_run(record.run, record.run_from, record.attempt)
    return (f"run {run}" if run else f"split {record.plan}"), attempt


def superseded(records: Iterable[tuple[ShardRecord, Path]]) -> dict[Path, str]:
    """Artifacts of a shard that a later attempt of its run ran again -> why they do not count."""
    latest: dict[tuple[str, int], int] = {}
    records = list(records)
    for record, _ in records:
        name, attempt = _group(record)
        latest[(name, record.index)] = max(attempt, latest.get((name, record.index), 0))
    out = {}
    for record, path in records:
        name, attempt = _group(record)
        newest = latest[(name, record.index)]
        if attempt < newest:
            out[path] = (
                f"shard {record.index}/{record.count} of {name} ran again in attempt {newest}; "
                f"this is attempt {attempt}'s"
            )
    return out


def shard_lines(records: Iterable[tuple[ShardRecord, Path]]) -> tuple[list[str], bool]:
    """(one line per run, and one per problem; whether every shard arrived once and whole), each shard
    counted from its latest attempt."""
    records = list(records)
    old = superseded(records)
    groups: dict[str, list[tuple[ShardRecord, Path]]] = {}
    attempts: dict[str, set[int]] = {}
    for record, path in records:
        name, attempt = _group(record)
        attempts.setdefault(name, set()).add(attempt)
        if path not in old:
            groups.setdefault(name, []).append((record, path))
    lines: list[str] = []
    whole = True
    for name, members in sorted(groups.items()):
        splits = sorted({(r.count, r.plan) for r, _ in members})
        if len(splits) > 1:
            whole = False
            shown = ", ".join(f"{count} shards (split {plan})" for count, plan in splits)
            lines.append(
                f"SHARDS {name}: split in different ways ({shown}): every shard of a run must collect the "
                "same GPU targets with the same --gpu-shard count; rerun the odd ones"
            )
            continue
        count, sizes = members[0][0].count, members[0][0].sizes
        problems = _group_problems(name, count, sizes, members)
        whole = whole and not problems
        arrived = len({r.index for r, _ in members} | {i for i in range(count) if i >= len(sizes) or not sizes[i]})
        tried = sorted(attempts[name] - {0})
        after = f" (attempts {', '.join(map(str, tried))}: the latest of each shard counts)" if len(tried) > 1 else ""
        lines += problems or [f"shards of {name}: {arrived} of {count} arrived, each once and whole{after}"]
    return lines, whole


def _group_problems(name: str, count: int, sizes: list[int], members: list[tuple[ShardRecord, Path]]) -> list[str]:
    sessions: dict[int, dict[str, list[Path]]] = {}
    for record, path in members:
        sessions.setdefault(record.index, {}).setdefault(record.session, []).append(path)
    problems = []
    for index in range(count):
        ran = sessions.get(index, {})
        want = sizes[index] if index < len(sizes) else 0
        if not ran and want:
            problems.append(
                f"MISSING shard {index}/{count} of {name}: none of its {want} GPU target(s) has an artifact"
            )
        elif len(ran) > 1:
            where = "; ".join(
                f"session {s}: {', '.join(sorted({str(p.parent) for p in ps}))}" for s, ps in sorted(ran.items())
            )
            problems.append(f"TWICE shard {index}/{count} of {name}: it ran in {len(ran)} sessions ({where})")
        elif ran and len({p.name for p in next(iter(ran.values()))}) < want:
            got = len({p.name for p in next(iter(ran.values()))})
            problems.append(
                f"INCOMPLETE shard {index}/{count} of {name}: {got} of its {want} GPU target(s) have an artifact"
            )
    return problems

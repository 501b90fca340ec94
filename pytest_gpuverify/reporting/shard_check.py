"""Did every shard of a split run arrive, once? Read from the artifacts' ``shard`` records
(config/shards.py): each names its shard, the count, the run, the split's digest, how many GPU
targets every shard was given, and the session that ran it. A shard given no target has no
artifact and is not missing; a shard's artifacts from two sessions are that shard run twice."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from pytest_gpuverify.records.scheduling import ShardRecord


def shard_lines(records: Iterable[tuple[ShardRecord, Path]]) -> tuple[list[str], bool]:
    """(one line per run, and one per problem; whether every shard arrived once and whole)."""
    groups: dict[str, list[tuple[ShardRecord, Path]]] = {}
    for record, path in records:
        groups.setdefault(f"run {record.run}" if record.run else f"split {record.plan}", []).append((record, path))
    lines: list[str] = []
    whole = True
    for name, members in sorted(groups.items()):
        splits = sorted({(r.count, r.plan) for r, _ in members})
        if len(splits) > 1:
            whole = False
            shown = ", ".join(f"{count} shards (split {plan})" for count, plan in splits)
            lines.append(f"SHARDS {name}: split in different ways ({shown}): every shard of a run must collect the "
                         "same GPU targets with the same --gpu-shard count; rerun the odd ones")
            continue
        count, sizes = members[0][0].count, members[0][0].sizes
        problems = _group_problems(name, count, sizes, members)
        whole = whole and not problems
        arrived = len({r.index for r, _ in members} | {i for i in range(count) if i >= len(sizes) or not sizes[i]})
        lines += problems or [f"shards of {name}: {arrived} of {count} arrived, each once and whole"]
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
            problems.append(f"MISSING shard {index}/{count} of {name}: none of its {want} GPU target(s) has an artifact")
        elif len(ran) > 1:
            where = "; ".join(f"session {s}: {', '.join(sorted({str(p.parent) for p in ps}))}"
                              for s, ps in sorted(ran.items()))
            problems.append(f"TWICE shard {index}/{count} of {name}: it ran in {len(ran)} sessions ({where})")
        elif ran and len({p.name for p in next(iter(ran.values()))}) < want:
            got = len({p.name for p in next(iter(ran.values()))})
            problems.append(f"INCOMPLETE shard {index}/{count} of {name}: {got} of its "
                            f"{want} GPU target(s) have an artifact")
    return problems

"""Whether a run's warm compile caches already held builds: known, or looked into once per worktree."""

from pytest_gpuverify.place.caches import CacheProbe, plan_caches


def test_a_cold_run_asks_nothing_and_records_none():
    probe = CacheProbe.of(plan_caches("/w", True, "r1", "aiter-op"), {})
    assert probe.folders == () and probe.answer(None) is None


def test_the_first_run_of_a_worktree_looks_and_the_next_knows():
    seen: dict[str, bool] = {}
    plan = plan_caches("/w", False, "r1", "aiter-op")
    first = CacheProbe.of(plan, seen)
    assert set(first.folders) == set(plan.dirs.values())
    assert first.answer(False) is False and seen == {plan.root: False}
    second = CacheProbe.of(plan, seen)
    assert second.folders == () and second.answer(None) is True, "this session's earlier run filled them"


def test_a_command_that_never_started_leaves_the_next_run_to_look():
    seen: dict[str, bool] = {}
    plan = plan_caches("/w", False, "r1", "triton")
    assert CacheProbe.of(plan, seen).answer(None) is None and seen == {}
    assert CacheProbe.of(plan, seen).folders, "asked again"

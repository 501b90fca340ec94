"""What the face's in-process tests share: an env file, the plugin's arguments, and an engine that runs
no GPU, given to the session through the stash where the role would build the real one.

Each test runs pytest in this process (``pytester.runpytest_inprocess``): the options, the role's choice,
the collectors, the hooks and the summary are the plugin's own; only the engine is a stand-in."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_gpuverify.cli.demo import EnvSpec, render_env_file
from pytest_gpuverify.config.targets import Target
from pytest_gpuverify.engine.session import VerifySession
from pytest_gpuverify.face.stash_keys import ENGINE_KEY
from pytest_gpuverify.records.artifact import Artifact

# the inner sessions load no plugin of the environment's by itself (their warnings and hooks are theirs,
# not the face's): the plugin is named, as pytest loads it from its entry point
PLUGIN_ARGS = ("-p", "pytest_gpuverify.plugin")


@pytest.fixture(autouse=True)
def no_other_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@dataclass
class Outcome:
    target: Target
    artifact: Artifact
    artifact_path: Path
    stored_path: Path | None = None
    test_decides: bool = False  # a test of one's own ran it (kernel_container) and judges it


@dataclass
class StandInEngine:
    """What the roles and collectors call on an engine, with no GPU, container or lock behind it: a
    target's verdict is ``verdicts[topic]`` (PASS when not named); its artifact is written as JSON."""

    out_dir: Path
    verdicts: dict[str, str] = field(default_factory=dict)
    topic: str | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    write_problems: list[str] = field(default_factory=list)
    leftover_problems: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # what was called, in order
    shard: object = None

    @property
    def options(self):
        return SimpleNamespace(topic=self.topic, wait_s=0.0)

    def start_in_background(self) -> None:
        self.calls.append("start_in_background")

    def start(self) -> None:
        self.calls.append("start")

    def mark_collected(self) -> None:
        self.calls.append("mark_collected")

    fails_session = VerifySession.fails_session  # the session's own rule, on this engine's outcomes

    def run(self, target: Target, grant=None, test_decides: bool = False) -> Outcome:
        self.calls.append(f"run {target.topic}")
        verdict = self.verdicts.get(target.topic, "PASS")
        reasons = [] if verdict == "PASS" else [f"{target.topic}: the stand-in engine's {verdict}"]
        art = Artifact(topic=target.topic, ts="2025-01-01T00:00:00Z", verdict=verdict, reasons=reasons, host="sim")
        path = self.out_dir / f"bench_{target.topic}.json"
        path.write_text(art.model_dump_json(), encoding="utf-8")
        outcome = Outcome(target, art, path, test_decides=test_decides)
        self.outcomes.append(outcome)
        return outcome

    def close(self) -> None:
        self.calls.append("close")


class EngineInStash:
    """A plugin of the inner session's: its pytest_configure runs before the plugin's (trylast) and
    puts the engine where the role takes it."""

    def __init__(self, engine: StandInEngine) -> None:
        self.engine = engine
        self.roles: list[str] = []  # the registered role's class, seen at the session's start

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[ENGINE_KEY] = self.engine

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        role = session.config.pluginmanager.get_plugin("gpuverify-role")
        self.roles.append(type(role).__name__)


@pytest.fixture
def env_file(tmp_path: Path) -> Path:
    """An env file as `gpuverify demo` writes it: this host, 8 GPUs, a lock folder; no repo rows."""
    root = tmp_path / "host"
    for sub in ("tickets", "locks", "repos"):
        (root / sub).mkdir(parents=True)
    spec = EnvSpec(
        tickets=root / "tickets",
        repos=root / "repos",
        locks=root / "locks",
        repo_rows=[],
        containers=[],
        hostname=socket.gethostname(),
    )
    path = root / "env.md"
    path.write_text(render_env_file(spec), encoding="utf-8")
    return path


@pytest.fixture
def engine(tmp_path: Path) -> StandInEngine:
    out = tmp_path / "artifacts"
    out.mkdir()
    return StandInEngine(out)


@pytest.fixture
def gpu_args(env_file: Path) -> tuple[str, ...]:
    """The plugin switched on, on this host (no container), with the test's env file."""
    return (*PLUGIN_ARGS, "--gpu-verify", "--gpu-container", "none", f"--gpu-env={env_file}", "-p", "no:cacheprovider")


@pytest.fixture
def op_test(pytester: pytest.Pytester) -> Path:
    """A GPU test file of aiter's layout (op_tests/test_*.py): collected as a target, never imported."""
    path = pytester.mkdir("op_tests") / "test_gemm.py"
    path.write_text("import torch  # the host has no torch: importing this file would fail\n", encoding="utf-8")
    return path

"""Container resolution (place/resolve.py) against the real Docker Engine.

Every container here is made by the test (sandbox label, unique name) and removed in teardown.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from pytest_gpuverify.cli import demo
from pytest_gpuverify.config.envfile import parse_env_text
from pytest_gpuverify.place.resolve import Resolution, map_to_container, names_ticket, resolve_container

pytestmark = pytest.mark.docker
HOST = "gvr-host"


class World:
    """A tickets root, a repo folder, containers of our own and an env file naming them."""

    def __init__(self, root: Path, client) -> None:
        self.root, self.client = root.resolve(), client
        self.started = __import__("time").time()
        self.tickets = self.root / "tickets"
        self.repos = self.root / "repos"
        self.repo = self.repos / "aiter"
        self.target = self.repo / "op_tests" / "test_gemm.py"
        self.target.parent.mkdir(parents=True)
        self.target.write_text("print('hi')\n")
        self.tickets.mkdir()
        self.tag = uuid.uuid4().hex[:8]
        self.ticket = f"T-{uuid.uuid4().hex[:8].upper()}"  # not part of the container names
        self.names: list[str] = []
        self.images: list[str] = []

    def name(self, suffix: str) -> str:
        return f"gvr-{self.tag}-{suffix}"

    def container(
        self,
        name: str,
        *,
        running: bool = True,
        labels: dict | None = None,
        mounts: dict | None = None,
        image: str | None = None,
    ) -> str:
        """``mounts``: host path -> container path (default: the repo at /workspace/aiter)."""
        volumes = {d: {"bind": d, "mode": "ro"} for d in demo.HOST_DIRS if os.path.exists(d)}
        mounts = {str(self.repo): "/workspace/aiter"} if mounts is None else mounts
        for host_path, container_path in mounts.items():
            volumes[str(host_path)] = {"bind": container_path, "mode": "rw"}
        kwargs = dict(name=name, volumes=volumes, labels={**(labels or {}), demo.SANDBOX_LABEL: "1"})
        self.names.append(name)
        image = image or demo.ensure_rootfs_image(self.client)
        if running:
            self.client.containers.run(image, ["/bin/sleep", "infinity"], detach=True, **kwargs)
        else:
            self.client.containers.create(image, ["/bin/sleep", "infinity"], **kwargs)
        return name

    def tagged_image(self, tag: str) -> str:
        ref = f"gvr-img-{self.tag}:{tag}"
        self.client.images.get(demo.ensure_rootfs_image(self.client)).tag(f"gvr-img-{self.tag}", tag)
        self.images.append(ref)
        return ref

    def env(self, containers=(), repo_container: str | None = None, mount: str = "/workspace/aiter"):
        """``containers``: names, or (name, image, host) tuples."""
        rows = [(c, demo.ROOTFS_IMAGE, HOST) if isinstance(c, str) else c for c in containers]
        text = "\n".join(
            [
                "## Resources",
                "",
                "| resource | path |",
                "|---|---|",
                f"| tickets | {self.tickets} |",
                f"| repos | {self.repos} |",
                "",
                "## Repos",
                "",
                "| repo | path | container | mount |",
                "|---|---|---|---|",
                f"| aiter | {self.repo} | {repo_container or 'not set'} | {mount} |",
                "",
                "## Containers",
                "",
                "| name | image | host |",
                "|---|---|---|",
                *[f"| {n} | {i or 'not set'} | {h or 'not set'} |" for n, i, h in rows],
                "",
            ]
        )
        return parse_env_text(text, self.root / "env.md")

    def devcontainer(self, text: str, where: str = ".devcontainer/devcontainer.json") -> Path:
        path = self.tickets / self.ticket / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def resolve(self, env, **kwargs) -> Resolution:
        kwargs.setdefault("ticket", self.ticket)
        kwargs.setdefault("repo_row", env.repo("aiter"))
        kwargs.setdefault("target_path", self.target)
        return resolve_container(env, docker_client=self.client, host_name=HOST, **kwargs)

    def running(self, name: str) -> bool:
        return bool(self.client.api.inspect_container(name)["State"]["Running"])

    def exec_ids(self, name: str) -> list:
        """Commands exec'd in ``name`` since the world was made (docker events: ExecIDs forgets ended execs)."""
        return demo.exec_commands(self.client, name, self.started)


@pytest.fixture
def world(tmp_path, docker_client):
    w = World(tmp_path, docker_client)
    yield w
    demo.remove_sandbox_containers(docker_client, w.names)
    for ref in w.images:
        try:
            docker_client.images.remove(ref, noprune=True)  # only the tag this test added
        except Exception:
            pass


def named(name: str, *extra: str) -> str:
    args = ", ".join(f'"{a}"' for a in ("--device=/dev/kfd", *extra, f"--name={name}"))
    return '{"runArgs": [%s]}' % args


# -- the order of the sources ------------------------------------------------------------------
def test_override_wins_over_devcontainer_and_repos_row(world):
    a, b, c = (world.container(world.name(s)) for s in "abc")
    world.devcontainer(named(a))
    res = world.resolve(world.env([a, b, c], repo_container=b), override=c)
    assert (res.name, res.source, res.problem) == (c, "option", None)
    assert res.mounts == [(str(world.repo), "/workspace/aiter")]
    assert res.image == demo.ROOTFS_IMAGE and not res.started


def test_devcontainer_jsonc_beats_repos_row_and_maps_workspace_mount(world):
    a = world.container(world.name("dev"), mounts={str(world.repos): "/ws"})
    b = world.container(world.name("row"))
    config = world.devcontainer(
        """{
  // the ticket's container; comments, trailing commas and URLs are all fine
  "name": "aiter dev",
  "image": "https://registry.example.com//rocm/aiter:latest", /* not a comment: // inside a string */
  "runArgs": ["--device=/dev/kfd", "--group-add=video", "--name=%s",],
  "workspaceMount": "source=${localWorkspaceFolder}/../../repos,target=/ws,type=bind,consistency=cached",
  "workspaceFolder": "/ws",
}"""
        % a
    )
    res = world.resolve(world.env([a, b], repo_container=b))
    assert (res.name, res.source, res.problem) == (a, "devcontainer", None)
    assert res.config_file == config
    assert res.mounts == [(str(world.repos), "/ws")]
    assert map_to_container(res.mounts, world.target) == "/ws/aiter/op_tests/test_gemm.py"


@pytest.mark.parametrize("where", [".devcontainer.json", ".devcontainer/gpu/devcontainer.json"])
def test_other_config_locations_and_two_token_name(world, where):
    a = world.container(world.name("dev"))
    world.devcontainer('{"runArgs": ["--name", "%s", "--ipc=host"]}' % a, where)
    res = world.resolve(world.env([a]))
    assert (res.name, res.source, res.problem) == (a, "devcontainer", None)


def test_config_location_precedence(world):
    a, b = world.container(world.name("first")), world.container(world.name("second"))
    world.devcontainer(named(b), ".devcontainer.json")
    world.devcontainer(named(b), ".devcontainer/gpu/devcontainer.json")
    world.devcontainer(named(a))
    assert world.resolve(world.env([a, b])).name == a


def test_two_sub_folder_configs_are_ambiguous(world):
    a = world.container(world.name("a"))
    world.devcontainer(named(a), ".devcontainer/one/devcontainer.json")
    world.devcontainer(named(a), ".devcontainer/two/devcontainer.json")
    res = world.resolve(world.env([a], repo_container=a))
    assert res.name is None and "one/devcontainer.json" in res.problem and "two/devcontainer.json" in res.problem


def test_devcontainer_without_name_is_found_by_its_label(world, monkeypatch):
    folder = world.tickets / world.ticket
    monkeypatch.setenv("GVR_SRC", str(world.repos))
    a = world.container(
        world.name("labelled"),
        labels={"devcontainer.local_folder": str(folder)},
        mounts={str(world.repos): f"/w/{world.ticket}"},
    )
    world.container(world.name("row"))
    world.devcontainer("""{
  "image": "rocm/pytorch", // no --name: the CLI labels the container instead
  "workspaceMount": "source=${localEnv:GVR_SRC},target=${containerWorkspaceFolder},type=bind",
  "workspaceFolder": "/w/${localWorkspaceFolderBasename}",
}""")
    res = world.resolve(world.env([a, world.name("row")], repo_container=world.name("row")))
    assert (res.name, res.source, res.problem) == (a, "devcontainer", None)
    assert res.mounts == [(str(world.repos), f"/w/{world.ticket}")]
    assert any("label" in note for note in res.notes)


def test_two_labelled_containers_are_ambiguous(world):
    label = {"devcontainer.local_folder": str(world.tickets / world.ticket)}
    a = world.container(world.name("one"), labels=label)
    b = world.container(world.name("two"), labels=label, running=False)
    world.devcontainer('{"image": "rocm/pytorch"}')
    res = world.resolve(world.env([a, b], repo_container=a))
    assert res.name is None and res.source == "devcontainer"
    assert res.problem.startswith(f"ambiguous: {a} and {b} both carry the label")


def test_devcontainer_naming_nothing_falls_through_to_repos_row(world):
    b = world.container(world.name("row"))
    world.devcontainer('{"image": "rocm/pytorch"}')
    res = world.resolve(world.env([b], repo_container=b))
    assert (res.name, res.source, res.problem) == (b, "repos", None)
    assert any("no --name" in note for note in res.notes)


def test_repos_row_when_no_devcontainer(world):
    b = world.container(world.name("row"))
    res = world.resolve(world.env([b], repo_container=b))
    assert (res.name, res.source, res.problem, res.started) == (b, "repos", None, False)
    assert res.mounts == [(str(world.repo), "/workspace/aiter")]
    assert map_to_container(res.mounts, world.target) == "/workspace/aiter/op_tests/test_gemm.py"


# -- running containers of the table -----------------------------------------------------------
def test_running_match_by_ticket_key_in_name(world):
    hit = world.container(world.name(world.ticket.lower()))
    other = world.container(world.name("other"), image=world.tagged_image("unrelated"))
    res = world.resolve(world.env([hit, (other, "some/other:1", HOST)]))
    assert (res.name, res.source, res.problem) == (hit, "running", None)


def test_running_match_by_ticket_key_in_image_tag(world):
    hit = world.container(world.name("x"), image=world.tagged_image(world.ticket))
    res = world.resolve(world.env([(hit, None, HOST)]))
    assert (res.name, res.source, res.problem) == (hit, "running", None)


def test_running_match_by_row_image_and_key_beats_image(world):
    by_image = world.container(world.name("img"))
    res = world.resolve(world.env([by_image]))
    assert (res.name, res.source, res.problem) == (by_image, "running", None)
    by_key = world.container(world.name(f"{world.ticket}-dev"))
    assert world.resolve(world.env([by_image, by_key])).name == by_key


def test_two_matches_are_ambiguous_and_name_both(world):
    a = world.container(world.name(f"{world.ticket}-a"))
    b = world.container(world.name(f"{world.ticket}-b"))
    res = world.resolve(world.env([a, b]))
    assert res.name is None and res.source == "running"
    assert res.problem == f"ambiguous: {a} and {b} both match {world.ticket}; pass --gpu-container"


def test_other_users_and_stopped_containers_are_never_matched(world):
    world.container(world.name(f"{world.ticket}-theirs"))  # not in the table
    mine = world.container(world.name(f"{world.ticket}-stopped"), running=False)
    res = world.resolve(world.env([mine]), allow_start=True)
    assert res.name is None and res.source is None and not res.started
    assert res.problem.startswith(f"no container found for ticket {world.ticket}")
    assert f"`docker start {mine}`" in res.problem
    assert res.problem.endswith(
        "Fix: set the Repos row's container, add .devcontainer/devcontainer.json to the ticket, or pass --gpu-container"
    )
    assert not world.running(mine)


def test_nothing_found(world):
    res = world.resolve(world.env([]), ticket=None)
    assert res.name is None and not res.ok
    assert "no container found" in res.problem and "pass --gpu-container" in res.problem
    assert "\n" not in res.problem


# -- rules for every candidate -----------------------------------------------------------------
def test_container_not_in_table_gets_no_exec_and_is_not_started(world):
    theirs = world.container(world.name("theirs"), running=False)
    res = world.resolve(world.env([]), override=theirs, allow_start=True)
    assert res.name == theirs and not res.started
    assert "not in the Containers table" in res.problem and "not yours" in res.problem
    assert not world.running(theirs) and world.exec_ids(theirs) == []
    running = world.container(world.name("theirs-up"))
    res = world.resolve(world.env([]), repo_row=world.env([], repo_container=running).repo("aiter"))
    assert res.source == "repos" and "not in the Containers table" in res.problem
    assert world.exec_ids(running) == []


def test_stopped_container_needs_the_users_ok(world):
    mine = world.container(world.name("mine"), running=False)
    env = world.env([mine], repo_container=mine)
    res = world.resolve(env)
    assert res.problem == f"container {mine} is stopped. Fix: `docker start {mine}`, or pass --gpu-start-container"
    assert not res.started and not world.running(mine)
    res = world.resolve(env, allow_start=True)
    assert (res.name, res.problem, res.started) == (mine, None, True)
    assert f"started stopped container {mine} (--gpu-start-container)" in res.notes
    assert world.running(mine) and world.exec_ids(mine) == []


def test_container_of_another_host(world):
    mine = world.container(world.name("elsewhere"))
    res = world.resolve(world.env([(mine, demo.ROOTFS_IMAGE, "other-box")], repo_container=mine))
    assert "belongs to host other-box" in res.problem and HOST in res.problem


def test_a_containers_row_names_its_host_short_or_long(world):
    """The host cell is compared as every other host name is (config/hosts.py: the first label, any
    case): ``GVR-HOST.lab.example`` is this host ``gvr-host``; ``gvr-host2.lab`` is not."""
    mine = world.container(world.name("fqdn"))
    res = world.resolve(world.env([(mine, demo.ROOTFS_IMAGE, f"{HOST.upper()}.lab.example")], repo_container=mine))
    assert (res.name, res.problem) == (mine, None)
    res = world.resolve(world.env([(mine, demo.ROOTFS_IMAGE, f"{HOST}2.lab")], repo_container=mine))
    assert res.problem and f"belongs to host {HOST}2.lab" in res.problem


def test_missing_container(world):
    ghost = world.name("ghost")
    world.devcontainer(named(ghost))
    res = world.resolve(world.env([ghost]))
    assert res.source == "devcontainer" and "does not exist" in res.problem


def test_malformed_devcontainer_is_a_problem_naming_the_file(world):
    b = world.container(world.name("row"))
    config = world.devcontainer('{\n  "runArgs": ["--name=x"\n  "workspaceFolder": "/ws"\n}')
    res = world.resolve(world.env([b], repo_container=b))
    assert res.name is None and res.source == "devcontainer"
    assert f"cannot parse {config}" in res.problem and "line" in res.problem
    assert world.exec_ids(b) == []


def test_target_outside_the_containers_mounts(world):
    bare = world.container(world.name("bare"), mounts={})
    res = world.resolve(world.env([bare], repo_container=bare))
    assert res.name == bare and "not in any folder bind-mounted" in res.problem


def test_real_bind_mounts_win_over_a_wrong_row(world):
    mine = world.container(world.name("moved"), mounts={str(world.repo): "/src/aiter"})
    res = world.resolve(world.env([mine], repo_container=mine, mount="/workspace/aiter"))
    assert res.problem is None
    assert map_to_container(res.mounts, world.target) == "/src/aiter/op_tests/test_gemm.py"
    assert any("/src/aiter" in note for note in res.notes)


def test_override_none_runs_on_the_host(world):
    res = world.resolve(world.env([]), override="none")
    assert (res.name, res.source, res.problem, res.mounts) == (None, "option", None, [])


# -- the path mapping --------------------------------------------------------------------------
def test_map_to_container_longest_prefix_whole_components(tmp_path):
    repos, aiter = tmp_path / "repos", tmp_path / "repos" / "aiter"
    mounts = [(str(repos), "/ws"), (str(aiter), "/workspace/aiter")]
    assert map_to_container(mounts, aiter / "op_tests" / "t.py") == "/workspace/aiter/op_tests/t.py"
    assert map_to_container(mounts, aiter) == "/workspace/aiter"
    assert map_to_container(mounts, tmp_path / "repos" / "aiter2" / "t.py") == "/ws/aiter2/t.py"
    assert map_to_container([(str(aiter), "/w")], tmp_path / "repos" / "aiter2") is None
    assert map_to_container([(str(aiter) + "/", "/w/")], aiter / "x") == "/w/x"
    assert map_to_container([], aiter) is None


@pytest.mark.parametrize(
    ("text", "ticket", "named"),
    [
        ("aiter-T-1-2978be", "T-1", True),
        ("rocm/pytorch:t-1", "T-1", True),
        ("dev_T-1.local", "T-1", True),
        ("gv-test-10423672", "T-1", False),  # "...t-1" inside a word
        ("aiter-T-10", "T-1", False),
        ("aiter-T-1", "T-10", False),
        ("aiter-ABC-123+x", "ABC-123+x", True),  # a key is matched as text, not as a pattern
        ("aiter-ABC-123xx", "ABC-123+x", False),
    ],
)
def test_a_ticket_key_is_matched_as_a_word_of_its_own(text, ticket, named):
    assert names_ticket(text, ticket) is named


def test_container_none_is_decided_in_one_place_in_any_case():
    from types import SimpleNamespace

    from pytest_gpuverify.config.containers import runs_on_host
    from pytest_gpuverify.place.container_checks import ContainerPlaces

    assert [runs_on_host(v) for v in ("none", " NONE ", "None", "nonesuch", "", None)] == [True] * 3 + [False] * 3
    places = ContainerPlaces(None, SimpleNamespace(container="None"), "h", lambda: None, "amd", None)
    assert (
        places.on_host
        and not ContainerPlaces(None, SimpleNamespace(container="c1"), "h", lambda: None, "amd", None).on_host
    )

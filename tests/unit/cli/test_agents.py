"""The shipped skill page (one text: the package's file, `gpuverify skill` and docs/agents.md) and what an
agent may name as a target (real checkouts on disk)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_gpuverify.cli.agents.places import Refused, split_targets
from pytest_gpuverify.cli.agents.skill import skill_text
from pytest_gpuverify.cli.main import main

DOCS = Path(__file__).resolve().parents[3] / "docs" / "agents.md"


def test_the_skill_page_has_front_matter_and_the_order_of_proofs():
    text = skill_text()
    front = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert front, text[:200]
    assert re.search(r"^name: [a-z-]+$", front.group(1), re.M)
    assert re.search(r"^description: .{40,}$", front.group(1), re.M)
    order = [text.index(f"**`{tool}`**") for tool in ("doctor", "verify", "check", "handoff")]
    assert order == sorted(order), order
    for never in ("edit", "tolerance", "retype" if "retype" in text else "type a number"):
        assert never in text.split("## Never", 1)[1], never


def test_gpuverify_skill_prints_the_page(capsys):
    assert main(["skill"]) == 0
    assert capsys.readouterr().out == skill_text()


def test_the_docs_quote_the_same_page():
    quoted = re.search(r"^````markdown\n(.*?)^````$", DOCS.read_text(encoding="utf-8"), re.S | re.M)
    assert quoted, "docs/agents.md has no ````markdown block"
    assert quoted.group(1) == skill_text(), (
        "docs/agents.md quotes another text than pytest_gpuverify/cli/agents/SKILL.md"
    )


@pytest.fixture
def checkout(tmp_path) -> Path:
    (tmp_path / "op_tests").mkdir()
    (tmp_path / "op_tests" / "test_gemm.py").write_text("print('ok')\n")
    (tmp_path / "gpuverify.toml").write_text(
        '[[targets]]\nname = "gemm-sweep"\nkind = "bench"\ncommand = "python3 op_tests/test_gemm.py"\n'
    )
    return tmp_path


def test_declared_names_and_files_of_the_checkout_are_targets(checkout):
    assert split_targets(checkout, ["gemm-sweep", "op_tests/test_gemm.py", "op_tests/test_gemm.py::t"]) == (
        ["gemm-sweep"],
        ["op_tests/test_gemm.py", "op_tests/test_gemm.py::t"],
    )


@pytest.mark.parametrize(
    "target, said",
    [
        ("python3 op_tests/test_gemm.py", "neither a declared target"),
        ("op_tests/test_gemm.py; rm -rf ~", "neither a declared target"),
        ("-p", "neither a declared target"),
        ("--gpu-allow-dirty", "neither a declared target"),
        ("../outside.py", "outside the repo checkout"),
        ("/etc/passwd", "outside the repo checkout"),
        ("op_tests/test_nope.py", "no "),
    ],
)
def test_anything_else_is_refused_with_a_fix(checkout, target, said):
    (checkout.parent / "outside.py").write_text("")
    with pytest.raises(Refused) as info:
        split_targets(checkout, [target])
    assert said in info.value.refused and info.value.fix


def test_a_verify_session_is_pytest_gpu_verify_with_only_the_run_options(tmp_path, checkout):
    from pytest_gpuverify.cli.agents.places import Places
    from pytest_gpuverify.cli.agents.session import VerifyRequest, session_command
    from pytest_gpuverify.cli.demo import EnvSpec, render_env_file
    from pytest_gpuverify.config.envfile import load_env_file

    for sub in ("tickets", "locks"):
        (tmp_path / sub).mkdir()
    spec = EnvSpec(tmp_path / "tickets", tmp_path, tmp_path / "locks", [("lab", checkout, None, "/w")], [])
    (tmp_path / "env.md").write_text(render_env_file(spec))
    places = Places(load_env_file(tmp_path / "env.md"))
    req = VerifyRequest("T-9", ["gemm-sweep", "op_tests/test_gemm.py"], repeats=5, ab_base="HEAD~1", wait_s=30.0)
    cmd = session_command(places, req, checkout, tmp_path / "s.xml")
    assert cmd[1:3] == ["-m", "pytest"] and "--gpu-verify" in cmd
    assert cmd[cmd.index("--ticket") + 1] == "T-9" and cmd[cmd.index("--gpu-target") + 1] == "gemm-sweep"
    assert cmd[cmd.index("--gpu-repeats") + 1] == "5" and cmd[cmd.index("--gpu-ab") + 1] == "HEAD~1"
    assert cmd[cmd.index("--gpu-wait") + 1] == "30" and cmd[-1] == "op_tests/test_gemm.py"
    assert not any("allow-dirty" in a or "container" in a for a in cmd)
    assert places.repo(None)[1] == checkout.resolve()
    with pytest.raises(Refused):
        places.ticket("../T-9", must_exist=False)

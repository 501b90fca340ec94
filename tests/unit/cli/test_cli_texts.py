"""`gpuverify --version`, the version in doctor's report, and `sim install`'s checks of its numbers."""

from __future__ import annotations

import pytest

from pytest_gpuverify import __version__
from pytest_gpuverify.cli.main import main


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"pytest-gpuverify {__version__}"


def test_doctor_names_the_plugins_version(tmp_path, capsys):
    env = tmp_path / "env.md"
    env.write_text(
        "## Hosts\n| host | ssh alias | arch | gpus |\n|---|---|---|---|\n| far | far-alias | gfx942 | 8 |\n"
    )
    main(["doctor", "--gpu-env", str(env)])
    assert f"plugin    pytest-gpuverify {__version__}" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    "args,said",
    [
        (["--gpus", "0"], "--gpus 0: a host has at least one GPU"),
        (["--gpus", "-2"], "--gpus -2: a host has at least one GPU"),
        (["--arch", "gfx999"], "--arch gfx999: not an arch the simulator knows"),
    ],
)
def test_sim_install_refuses_a_host_it_cannot_be(tmp_path, capsys, args, said):
    assert main(["sim", "install", str(tmp_path / "sim"), *args]) == 2
    err = capsys.readouterr().err
    assert said in err and "Fix:" in err and err.count("\n") == 1, err
    assert not (tmp_path / "sim").exists(), "nothing installed"


def test_one_shape_is_singular_in_the_ci_summary():
    from pytest_gpuverify.reporting.ci_summary import key_numbers

    assert key_numbers({"gpuverify_shapes": "1"}).startswith("1 shape") and "1 shapes" not in key_numbers(
        {"gpuverify_shapes": "1"}
    )
    assert key_numbers({"gpuverify_shapes": "3"}).startswith("3 shapes")

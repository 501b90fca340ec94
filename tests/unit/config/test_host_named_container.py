"""A container named like the host itself (``host``, ``none``) would have its commands run on the
host, not in the container: its Containers row is refused with the fix."""

from __future__ import annotations

import pytest

from pytest_gpuverify.config.envfile import EnvFileError, load_env_file

ENV = """## Hosts
| host | ssh alias | arch | gpus |
|---|---|---|---|
| mi355x-07 | local | gfx950 | 8 |

## Repos
| repo | path | container | mount |
|---|---|---|---|
| aiter | /home/dev/repos/aiter | {name} | /workspace/aiter |

## Containers
| name | image | host |
|---|---|---|
| {name} | rocm/pytorch:latest | mi355x-07 |
"""


@pytest.mark.parametrize("name", ["host", "HOST", "none"])
def test_a_container_named_as_the_host_is_refused_with_the_fix(tmp_path, name):
    env = tmp_path / "env.md"
    env.write_text(ENV.format(name=name))
    with pytest.raises(EnvFileError) as err:
        load_env_file(env)
    msg = str(err.value)
    assert f"container {name!r} has the name of the host itself" in msg and f"docker rename {name}" in msg, msg
    assert str(env) in msg and "Containers" in msg and "\n" not in msg, msg


def test_other_names_are_kept(tmp_path):
    env = tmp_path / "env.md"
    env.write_text(ENV.format(name="hostile-dev"))
    assert load_env_file(env).container("hostile-dev") is not None

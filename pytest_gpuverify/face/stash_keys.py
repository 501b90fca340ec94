"""What one hook leaves for another on ``config.stash`` (typed keys), and the names of what xdist
workers and their controller hand each other (``workerinput``/``workeroutput``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gpuverify.face.role_base import Role

if TYPE_CHECKING:  # the engine is imported by the roles that build one
    from pytest_gpuverify.config.declarations import Declarations  # noqa: F401 (named in a key's type)
    from pytest_gpuverify.config.envfile import EnvFile
    from pytest_gpuverify.engine.session import VerifySession  # noqa: F401 (named in a key's type)
    from pytest_gpuverify.remote.controller import RemoteController  # noqa: F401 (named in a key's type)


ROLE_KEY = pytest.StashKey[Role]()  # this process's role, from pytest_configure to pytest_unconfigure
ENGINE_KEY = pytest.StashKey["VerifySession"]()  # Central and DistWorker: this process's engine
DECLARED_KEY = pytest.StashKey["Declarations | None"]()  # the repo's declared targets
ENV_KEY = pytest.StashKey[tuple[Path, "EnvFile"]]()  # (path, env file) as read before the initial conftests
NO_CONFTEST_KEY = pytest.StashKey[str]()  # the kernel repo whose conftest.py files are not imported
REMOTE_KEY = pytest.StashKey["RemoteController"]()  # planned in pytest_cmdline_main: workers on GPU hosts
CLAIMS_VARIABLE = "gpuverify_topic_claims"  # workerinput: the folder where workers claim artifact names
STORED_KEY = "gpuverify_stored"  # workeroutput: asked artifact path -> where it was written
WRITE_PROBLEMS_KEY = "gpuverify_write_problems"  # workeroutput: artifacts not written where asked

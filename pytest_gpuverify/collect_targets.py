"""The collection hooks of a role that collects GPU targets: one that runs them (roles.EngineRole) or
one that submits them to Slurm (slurm_role.SlurmController)."""

from __future__ import annotations

from pathlib import Path

import pytest


class CollectsTargets:
    """The collection hooks of a role that collects GPU targets (one that runs them, or submits them)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector):
        """GPU test files become targets instead of modules: the host has no torch to import them."""
        from pytest_gpuverify.plugin import GpuTargetFile, kind_of

        if kind_of(module_path, parent.config) is None:
            return None
        return GpuTargetFile.from_parent(parent, path=module_path)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        """The declaration file, when named on the command line or selected through --gpu-target."""
        from pytest_gpuverify.plugin import DeclarationFile

        from pytest_gpuverify.roles import DECLARED_KEY

        decls = parent.config.stash.get(DECLARED_KEY, None)
        if decls is None or file_path.resolve() != Path(decls.path).resolve():
            return None
        return DeclarationFile.from_parent(parent, path=file_path)

"""What a session loads while its commands run, so that the work after them starts at once: the
artifact's validator (deferred to first use by every model of the plugin), a kind's recognizers, and on
an xdist controller what taking the hosts' files in needs. Each in a fresh python, where nothing
has built or imported them yet."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from pytest_gpuverify.records.artifact import Artifact
before = (Artifact.__pydantic_complete__, "pytest_gpuverify.reporting.merge" in sys.modules,
          "pytest_gpuverify.parsers.recognizers.aiter_checks" in sys.modules)
{warm}
after = (Artifact.__pydantic_complete__, "pytest_gpuverify.reporting.merge" in sys.modules,
         "pytest_gpuverify.parsers.recognizers.aiter_checks" in sys.modules)
print(before, after)
"""


def probe(warm: str) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE.format(warm=warm)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_artifacts_validator_is_built_at_first_use_not_at_import():
    assert probe("pass") == "(False, False, False) (False, False, False)"


def test_the_parser_warm_up_builds_the_artifacts_validator_too():
    warm = "from pytest_gpuverify.parsers.reader import warm\nwarm('aiter-op-test')"
    assert probe(warm) == "(False, False, False) (True, False, True)"


def test_the_controllers_collector_loads_merge_and_the_validator_before_the_first_files(tmp_path):
    warm = (
        f"from pytest_gpuverify.remote.collect import ArtifactCollector\nc = ArtifactCollector({str(tmp_path)!r})\n"
        "c.warm(); c.warm(); c._loading.wait()\nassert c.landed() == (0, [])"
    )
    assert probe(warm) == "(False, False, False) (True, True, False)"

"""Posting runs to a team's ingest service (``--gpu-history https://...``, ``history add --store https://...``):
each artifact's bundle (:mod:`.bundle`) with the runner's upload token from :data:`TOKEN_ENV` and the CI run's
URL, tried :data:`TRIES` times with a growing pause when the service cannot be reached or answers 5xx. The
standard library's HTTP client: a GPU host needs nothing more installed to post."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_gpuverify.history.add import ADDED, KNOWN, REFUSED, Added, artifact_files, branch_of
from pytest_gpuverify.history.bundle import PATH_HEADER, REF_HEADER, RUN_URL_HEADER, make_bundle

TOKEN_ENV = "GPUVERIFY_HISTORY_TOKEN"
RUN_URL_ENV = "GPUVERIFY_RUN_URL"  # the CI run's URL where the CI is not one recognised below
TRIES = 3
PAUSE_S = 1.0  # before the second try; doubled before each next
TIMEOUT_S = 60.0  # one try: the service checks the artifact and verifies its signatures before it answers


class ServiceError(Exception):
    """The service cannot take runs from here (not reached, no valid token); the message names the fix."""


def run_url(env: Mapping[str, str] = os.environ) -> str | None:
    """The CI run's URL: :data:`RUN_URL_ENV`, else GitHub Actions' or GitLab CI's own variables."""
    if env.get(RUN_URL_ENV):
        return env[RUN_URL_ENV]
    if all(env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")):
        return f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
    return env.get("CI_JOB_URL") or None


def _ref_of(path: Path) -> str | None:
    from pydantic import ValidationError

    from pytest_gpuverify.records.artifact import Artifact

    try:
        return branch_of(Artifact.model_validate_json(path.read_bytes()))
    except (OSError, ValueError, ValidationError):
        return None  # the service's check names what is wrong with the artifact


def _post_once(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return answer.status, answer.read().decode("utf-8", "replace").strip()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace").strip()


def post_file(service: str, path: Path, token: str, ref: str | None = None, sleep=time.sleep) -> Added:
    """Post one artifact's bundle; ServiceError when the service is not reached in :data:`TRIES` tries, or
    refuses the token (every other artifact would be refused alike)."""
    endpoint = service.rstrip("/") + "/v1/runs"
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/gzip",
        PATH_HEADER: str(path.resolve()),
    }
    found_ref = ref or _ref_of(path)
    if found_ref:
        headers[REF_HEADER] = found_ref
    url = run_url()
    if url:
        headers[RUN_URL_HEADER] = url
    data = make_bundle(path)
    why = ""
    for attempt in range(TRIES):
        if attempt:
            sleep(PAUSE_S * 2 ** (attempt - 1))
        try:
            status, line = _post_once(endpoint, data, headers)
        except (OSError, urllib.error.URLError) as exc:  # refused, reset, timed out, a name not resolved
            why = str(getattr(exc, "reason", exc))
            continue
        if status >= 500:
            why = f"{status} {line}"
            continue
        if status == 401:
            raise ServiceError(
                f"{service}: the upload token was refused ({line}). Fix: set ${TOKEN_ENV} to a token "
                "the service's --tokens file lists"
            )
        if status in (200, 201):
            return Added(path, ADDED if status == 201 else KNOWN)
        return Added(path, REFUSED, f"{status} {line.split(': refused: ', 1)[-1]}")
    raise ServiceError(f"{service}: not reached in {TRIES} tries ({why}). Fix: check the URL and that the service runs")


def post_files(service: str, paths: Iterable[Path], ref: str | None = None) -> list[Added]:
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ServiceError(f"{service}: no upload token. Fix: set ${TOKEN_ENV} to this runner's token")
    return [post_file(service, p, token, ref) for p in artifact_files(paths)]

"""Posting runs to a team's ingest service (``--gpu-history https://...``, ``history add --store https://...``):
each artifact's bundle (:mod:`.bundle`) with the runner's upload token from :data:`TOKEN_ENV` and the CI run's
URL, tried :data:`TRIES` times with a growing pause when the service cannot be reached or answers 5xx. And
reading its runs back (:class:`ServiceReader`, ``GET /v1/runs`` a page at a time) for the readers. The
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
from pytest_gpuverify.history.records import StoredRun

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


# --- reading: GET /v1/runs, a page at a time ---

PAGE = 500  # runs a page asks for; the service answers at most its own MAX_PAGE


class ServiceReader:
    """A team's store read through its ingest service (``GET /v1/runs``, ``GET /v1/targets``) with the token
    of :data:`TOKEN_ENV` (a read-only token will do): :class:`~pytest_gpuverify.history.reader.Reader`'s
    answers, so every reader works alike on a service, a file or a database. Faults are one StoreError each."""

    def __init__(self, service: str, token: str | None = None, page: int = PAGE) -> None:
        from pytest_gpuverify.history.db import StoreError

        self.name, self.base, self.page = service, service.rstrip("/"), page
        self.token = (token if token is not None else os.environ.get(TOKEN_ENV, "")).strip()
        if not self.token:
            raise StoreError(
                f"{service}: no token to read the service with. Fix: set ${TOKEN_ENV} (a read token will do)"
            )

    def _get(self, path: str, query: dict[str, str]) -> object:
        import json
        import urllib.parse

        from pytest_gpuverify.history.db import StoreError

        url = f"{self.base}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        why = ""
        for attempt in range(TRIES):
            if attempt:
                time.sleep(PAUSE_S * 2 ** (attempt - 1))
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                    return json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                line = exc.read().decode("utf-8", "replace").strip()
                if exc.code < 500:
                    fix = f"set ${TOKEN_ENV} to a token the service's --tokens file lists" if exc.code == 401 else ""
                    raise StoreError(f"{self.name}: {exc.code} {line}" + (f". Fix: {fix}" if fix else "")) from None
                why = f"{exc.code} {line}"
            except (OSError, urllib.error.URLError) as exc:
                why = str(getattr(exc, "reason", exc))
            except ValueError as exc:
                raise StoreError(f"{self.name}: not the service's answer ({exc}). Fix: check the URL") from None
        raise StoreError(
            f"{self.name}: not reached in {TRIES} tries ({why}). Fix: check the URL and that the service runs"
        )

    def runs(
        self,
        target: str | None = None,
        ref: str | None = None,
        verdict: str | None = None,
        newest_first: bool = False,
        watch: bool = True,
        newest_commits: int | None = None,
        since: str | None = None,
    ) -> list[StoredRun]:
        asked = {"target": target, "ref": ref, "verdict": verdict, "since": since}
        query = {k: v for k, v in asked.items() if v is not None}
        query.update({"newest_first": str(int(newest_first)), "watch": str(int(watch)), "limit": str(self.page)})
        if newest_commits is not None:
            query["newest_commits"] = str(newest_commits)
        found: list[StoredRun] = []
        after: str | None = None
        while True:
            answer = self._get("/v1/runs", {**query, **({"after": after} if after else {})})
            if not isinstance(answer, dict) or not isinstance(answer.get("runs"), list):
                from pytest_gpuverify.history.db import StoreError

                raise StoreError(f"{self.name}: GET /v1/runs did not answer runs. Fix: check the URL")
            found += [StoredRun.model_validate(r) for r in answer["runs"]]
            after = answer.get("next")
            if not after:
                return found

    def targets(self) -> list[str]:
        answer = self._get("/v1/targets", {})
        return [str(t) for t in answer] if isinstance(answer, list) else []

    def close(self) -> None:
        pass

"""``gpuverify history serve``: the ingest service a team's CI runners post their runs to, so that they hold an
upload token, never the database's credentials, and only verified runs get in.

``POST /v1/runs`` takes one run's bundle (:mod:`.bundle`: a gzipped tar) with ``Authorization: Bearer TOKEN``;
the runner's name is its token's name in the tokens file. The service unpacks it into a temporary folder,
runs ``gpuverify check``'s checks on the artifact (its raw output re-parsed, its verdict re-derived), verifies
each file's signature against the allowed-signers file (an unsigned run is refused unless the service allows
them), and stores it with who sent it: the signer, the CI run's URL (header ``X-Gpuverify-Run-Url``), the
runner and the upload time. Answers, each with one line saying why: 201 stored, 200 already stored (one run
per artifact sha256, however often it is sent), 400 not a bundle, 401 no valid token, 403 its signature
refused, 413 too large, 422 it fails the check, 503 the store cannot be used. ``GET /v1/health``: 200.
"""

from __future__ import annotations

import hmac
import sys
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from pytest_gpuverify.history.bundle import MAX_BYTES, PATH_HEADER, REF_HEADER, RUN_URL_HEADER, BundleError, unpack
from pytest_gpuverify.history.db import StoreError, StoreName, connect, guard, shown


class SettingsError(Exception):
    """A setting the service cannot start with; the message names the file or option and the fix."""


@dataclass(frozen=True)
class Settings:
    store: StoreName
    allowed_signers: Path
    tokens: dict[str, str] = field(repr=False)  # runner's name -> its upload token
    allow_unsigned: bool = False
    max_bytes: int = MAX_BYTES


def read_tokens(path: Path) -> dict[str, str]:
    """The tokens file: one ``NAME TOKEN`` a line (blank lines and ``#`` comments skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"--tokens {path}: cannot be read ({exc}). Fix: name a readable file") from None
    tokens: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise SettingsError(
                f"{path}:{number}: {len(parts)} words; a line is `NAME TOKEN`. Fix: one runner's name and its "
                "token (e.g. from `openssl rand -hex 32`)"
            )
        name, token = parts
        if name in tokens:
            raise SettingsError(f"{path}:{number}: {name} is named twice. Fix: one line a runner")
        if len(token) < 16:
            raise SettingsError(
                f"{path}:{number}: {name}'s token is {len(token)} characters. Fix: 16 or more (openssl rand -hex 32)"
            )
        tokens[name] = token
    if not tokens:
        raise SettingsError(f"--tokens {path}: no `NAME TOKEN` line. Fix: one line a runner")
    return tokens


def settings_problem(settings: Settings) -> str | None:
    """Why the service cannot start with ``settings`` (one line naming the option and the fix); None if it can."""
    if not settings.allowed_signers.is_file():
        return (
            f"--allowed-signers {settings.allowed_signers}: no such file. Fix: one `PRINCIPAL ssh-ed25519 KEY` line "
            "per signer (ssh-keygen's allowed-signers format)"
        )
    try:
        connect(settings.store).close()  # made and migrated now, not at the first upload
    except StoreError as exc:
        return str(exc)
    return None


def runner_of(authorization: str | None, tokens: dict[str, str]) -> str | None:
    """The runner whose token the ``Authorization: Bearer`` header holds; None for none or an unknown one."""
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return None
    found = None
    for name, token in tokens.items():  # every token compared, in constant time each: no timing says which
        if hmac.compare_digest(given.strip().encode(), token.encode()):
            found = name
    return found


def ingest(
    settings: Settings, data: bytes, runner: str, run_url: str | None, ref: str | None, sent_as: str | None
) -> tuple[int, str]:
    """Check, verify and store one bundle: the answer's status and its one line."""
    from pytest_gpuverify.compare.command import Refused, checked
    from pytest_gpuverify.history.records import stored_run
    from pytest_gpuverify.history.store import insert
    from pytest_gpuverify.records.artifact import sha256_file, utc_now
    from pytest_gpuverify.verify.check import signature_problems

    with tempfile.TemporaryDirectory(prefix="gpuverify-ingest-") as tmp:
        try:
            path = unpack(data, Path(tmp), settings.max_bytes)
        except BundleError as exc:
            return 400, f"not a run's bundle: {exc}"
        name = f"{path.parent.name}/{path.name}"
        try:
            art = checked(str(path))
        except Refused as exc:
            return 422, f"{name}: refused: {str(exc).removeprefix(f'{path}: ')}"
        signer = None
        if art.signed_by or not settings.allow_unsigned:
            problems = signature_problems(art, path, settings.allowed_signers)
            if problems:
                return 403, f"{name}: refused: {problems[0]} (allowed signers: {settings.allowed_signers.name})"
            signer = art.signed_by
        run = stored_run(art, Path(sent_as or name), sha256_file(path), ref).model_copy(
            update={"signer": signer, "ci_run_url": run_url, "runner": runner, "uploaded": utc_now()}
        )
        try:
            with closing(connect(settings.store)) as conn, guard(settings.store):
                new = insert(conn, run)
        except StoreError as exc:
            return 503, f"{name}: not stored: {exc}"
    by = f"signed by {signer}" if signer else "unsigned"
    return (201, f"{name}: stored ({by}, from {runner})") if new else (200, f"{name}: already stored")


def _answer(status: int, line: str) -> PlainTextResponse:
    return PlainTextResponse(line + "\n", status_code=status)


def create_app(settings: Settings) -> Starlette:
    """The service's ASGI app, all its settings in ``settings``."""

    async def health(request: Request) -> PlainTextResponse:
        return _answer(200, f"ok: {shown(settings.store)}")

    async def post_run(request: Request) -> PlainTextResponse:
        runner = runner_of(request.headers.get("authorization"), settings.tokens)
        if runner is None:
            return _answer(
                401, "no valid upload token. Fix: send `Authorization: Bearer TOKEN` with a token of --tokens"
            )
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > settings.max_bytes:
            return _answer(413, f"the bundle is {declared} bytes, over the {settings.max_bytes} this service takes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > settings.max_bytes:
                return _answer(413, f"the bundle is over the {settings.max_bytes} bytes this service takes")
        headers = request.headers
        status, line = await run_in_threadpool(
            ingest,
            settings,
            bytes(body),
            runner,
            headers.get(RUN_URL_HEADER),
            headers.get(REF_HEADER),
            headers.get(PATH_HEADER),
        )
        print(f"gpuverify history serve: {runner}: {status} {line}", file=sys.stderr, flush=True)
        return _answer(status, line)

    return Starlette(routes=[Route("/v1/health", health), Route("/v1/runs", post_run, methods=["POST"])])


def serve(settings: Settings, host: str, port: int) -> int:
    """Serve until stopped; 2 (said in one line) when the settings cannot serve."""
    import uvicorn

    problem = settings_problem(settings)
    if problem:
        print(f"gpuverify history serve: {problem}", file=sys.stderr)
        return 2
    print(
        f"gpuverify history serve: {shown(settings.store)} on http://{host}:{port}, {len(settings.tokens)} runner "
        f"token(s), {'unsigned runs allowed' if settings.allow_unsigned else 'signed runs only'}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", proxy_headers=True)
    return 0

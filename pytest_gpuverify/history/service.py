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

Reads, with any listed token (a ``read`` token may only read): ``GET /v1/runs`` answers the stored runs as JSON
``{"runs": [...], "next": CURSOR}``, a page at a time (``limit``, at most :data:`MAX_PAGE`; ``after=CURSOR``
for the next page, ``next`` null at the last), asked by ``target``, ``ref``, ``verdict``, ``since`` (an ISO
time), ``newest_first``, ``watch`` (0: without the GPU watch records) and ``newest_commits``; each run as an
export's line holds it. ``GET /v1/targets``: the targets' names, a JSON list. 400 names a bad parameter.
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
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from pytest_gpuverify.history.bundle import MAX_BYTES, PATH_HEADER, REF_HEADER, RUN_URL_HEADER, BundleError, unpack
from pytest_gpuverify.history.db import StoreError, StoreName, connect, connect_reading, guard, shown

READ, WRITE = "read", "write"  # a token's role in the tokens file: read the runs; read them and post runs
MAX_PAGE = 2000  # runs one GET /v1/runs answers at most


class SettingsError(Exception):
    """A setting the service cannot start with; the message names the file or option and the fix."""


@dataclass(frozen=True)
class Settings:
    store: StoreName
    allowed_signers: Path
    tokens: dict[str, str] = field(repr=False)  # runner's name -> its upload token
    read_only: frozenset[str] = frozenset()  # the names whose tokens may read, not post
    allow_unsigned: bool = False
    max_bytes: int = MAX_BYTES


def read_tokens(path: Path) -> dict[str, str]:
    """The tokens file's ``NAME -> TOKEN`` (:func:`read_token_roles`)."""
    return read_token_roles(path)[0]


def read_token_roles(path: Path) -> tuple[dict[str, str], frozenset[str]]:
    """The tokens file: one ``NAME TOKEN [write|read]`` a line (blank lines and ``#`` comments skipped); the
    tokens by name, and the names of ``read`` tokens (a token without a role is ``write``: it posts and reads)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"--tokens {path}: cannot be read ({exc}). Fix: name a readable file") from None
    tokens: dict[str, str] = {}
    readers: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) not in (2, 3):
            raise SettingsError(
                f"{path}:{number}: {len(parts)} words; a line is `NAME TOKEN [write|read]`. Fix: one runner's "
                "name and its token (e.g. from `openssl rand -hex 32`)"
            )
        name, token = parts[:2]
        role = parts[2] if len(parts) == 3 else WRITE
        if role not in (READ, WRITE):
            raise SettingsError(
                f"{path}:{number}: role {role!r}. Fix: write (posts runs and reads) or read (reads only)"
            )
        if name in tokens:
            raise SettingsError(f"{path}:{number}: {name} is named twice. Fix: one line a runner")
        if len(token) < 16:
            raise SettingsError(
                f"{path}:{number}: {name}'s token is {len(token)} characters. Fix: 16 or more (openssl rand -hex 32)"
            )
        tokens[name] = token
        if role == READ:
            readers.add(name)
    if not tokens:
        raise SettingsError(f"--tokens {path}: no `NAME TOKEN` line. Fix: one line a runner")
    return tokens, frozenset(readers)


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


class BadQuery(Exception):
    """A read's parameter this service cannot take; the message names it and the fix."""


def _flag(query, name: str, default: bool) -> bool:
    value = query.get(name)
    if value is None:
        return default
    if value not in ("0", "1", "true", "false"):
        raise BadQuery(f"{name}={value}: not a flag. Fix: 1 or 0")
    return value in ("1", "true")


def _count(query, name: str, default: int | None, most: int | None = None) -> int | None:
    value = query.get(name)
    if value is None:
        return default
    if not value.isdigit() or int(value) < 1:
        raise BadQuery(f"{name}={value}: not a count. Fix: a whole number, 1 or more")
    return min(int(value), most) if most else int(value)


def _cursor(value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    ts, _, run_id = value.rpartition("|")
    if not ts or not run_id.isdigit():
        raise BadQuery(f"after={value}: not a page's cursor. Fix: the `next` the previous page answered")
    return ts, int(run_id)


def read_page(settings: Settings, query) -> tuple[int, dict | str]:
    """One page of ``GET /v1/runs``: its status and its JSON (or the one line of a refusal)."""
    from pytest_gpuverify.history.store import runs_page

    try:
        asked = {k: query.get(k) for k in ("target", "ref", "verdict", "since")}
        page = _count(query, "limit", MAX_PAGE, MAX_PAGE)
        newest_first, watch = _flag(query, "newest_first", False), _flag(query, "watch", True)
        newest_commits = _count(query, "newest_commits", None)
        after = _cursor(query.get("after"))
    except BadQuery as exc:
        return 400, str(exc)
    try:
        with closing(connect_reading(settings.store)) as conn, guard(settings.store, writing=False):
            found, nxt = runs_page(
                conn,
                **asked,
                newest_first=newest_first,
                watch=watch,
                newest_commits=newest_commits,
                after=after,
                limit=page,
            )
    except StoreError as exc:
        return 503, f"not read: {exc}"
    return 200, {
        "runs": [run.model_dump(mode="json") for run in found],
        "next": f"{nxt[0]}|{nxt[1]}" if nxt else None,
    }


def read_targets(settings: Settings) -> tuple[int, list[str] | str]:
    from pytest_gpuverify.history.store import targets

    try:
        with closing(connect_reading(settings.store)) as conn, guard(settings.store, writing=False):
            return 200, targets(conn)
    except StoreError as exc:
        return 503, f"not read: {exc}"


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
        if runner in settings.read_only:
            return _answer(403, f"{runner}'s token may read, not post runs. Fix: give the runner a write token")
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

    async def get_runs(request: Request) -> JSONResponse | PlainTextResponse:
        if runner_of(request.headers.get("authorization"), settings.tokens) is None:
            return _answer(401, "no valid token. Fix: send `Authorization: Bearer TOKEN` with a token of --tokens")
        status, body = await run_in_threadpool(read_page, settings, request.query_params)
        return JSONResponse(body, status_code=status) if status == 200 else _answer(status, str(body))

    async def get_targets(request: Request) -> JSONResponse | PlainTextResponse:
        if runner_of(request.headers.get("authorization"), settings.tokens) is None:
            return _answer(401, "no valid token. Fix: send `Authorization: Bearer TOKEN` with a token of --tokens")
        status, body = await run_in_threadpool(read_targets, settings)
        return JSONResponse(body, status_code=status) if status == 200 else _answer(status, str(body))

    return Starlette(
        routes=[
            Route("/v1/health", health),
            Route("/v1/runs", post_run, methods=["POST"]),
            Route("/v1/runs", get_runs, methods=["GET"]),
            Route("/v1/targets", get_targets, methods=["GET"]),
        ]
    )


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

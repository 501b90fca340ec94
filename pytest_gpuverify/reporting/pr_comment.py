"""``gpuverify pr-comment`` and ``gpuverify issue-body``: GitHub-flavoured markdown from the JSON that
``gpuverify compare --json`` writes (one file per target).

The PR comment lists every REGRESSED and IMPROVED row, none cut: the first screenful of each section
shows, the rest folds into ``<details>``. Each row carries its ratio and interval, whether an A/B
re-measured it (``compare --confirm``) and the artifact it came from. A hidden marker line lets a CI
step find the comment it wrote before and update it in place. The issue body is for main: the
confirmed regressions only, with the commit range they landed in."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_gpuverify.common import markdown as md

MARKER = "<!-- gpuverify-pr-comment -->"
SCREENFUL = 20  # rows a section shows before the rest folds into <details>
GITHUB_BODY_LIMIT = 65536  # characters GitHub takes in one comment or issue body
REGRESSED, IMPROVED, INCONCLUSIVE = "REGRESSED", "IMPROVED", "INCONCLUSIVE"


class ComparedRow(BaseModel):
    """One row of ``compare --json``'s ``pairs``: the fields the comment shows."""

    model_config = ConfigDict(extra="ignore")

    table: str | None = None
    shape: str
    name: str
    stat: str | None = None
    metric: str
    direction: str | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    call: str
    why: str = ""
    confirmed: bool | None = None  # set by compare --confirm; absent: not re-measured


class CompareRule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    confidence: float = 0.95


class CompareDoc(BaseModel):
    """``gpuverify compare --json``'s output, as far as the comment reads it."""

    model_config = ConfigDict(extra="ignore")

    pairs: list[ComparedRow]
    rule: CompareRule = CompareRule()
    notes: list[str] = []
    target: str | None = None
    artifacts: dict[str, str] = {}
    commits: dict[str, str | None] = {}


class InputProblem(Exception):
    """A compare JSON that cannot be read; the message names the file and the fix."""


def load(path: Path) -> CompareDoc:
    fix = "Fix: write it with `gpuverify compare --json ... > FILE`"
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputProblem(f"{path}: {exc.strerror or exc}") from None
    try:
        return CompareDoc.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputProblem(f"{path}: not JSON (line {exc.lineno}: {exc.msg}). {fix}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputProblem(f"{path}: not a compare's JSON ({where}: {first['msg']}). {fix}") from None


def confirmation(row: ComparedRow) -> str:
    return {True: "confirmed", False: "not confirmed"}.get(row.confirmed, "not re-measured")  # type: ignore[arg-type]


def change(row: ComparedRow) -> float:
    """How far the head is from the base, as a fraction (0.2: 20 % apart), whichever way is better."""
    if row.ratio is None or row.ratio <= 0:
        return 0.0
    return max(row.ratio, 1 / row.ratio) - 1


def artifact_link(path: str | None, url_base: str | None) -> str:
    """A link to the artifact under ``url_base`` (an absolute path by its file name, a relative one as
    it is), else the path as code: a path in a comment does not open."""
    if not path:
        return "-"
    if not url_base:
        return md.code(path)
    tail = Path(path).name if Path(path).is_absolute() else path.lstrip("./")
    return f"[{md.text(Path(path).name)}]({url_base.rstrip('/')}/{quote(tail)})"


def _cell(text: str) -> str:
    """Free text in a cell (a shape or a row name a kernel printed), inert."""
    return md.text(text)


def _ratio(row: ComparedRow) -> str:
    if row.ratio is None:
        return "-"
    interval = f" [{row.ci_low:.3f}, {row.ci_high:.3f}]" if row.ci_low is not None and row.ci_high is not None else ""
    return f"{row.ratio:.3f}{interval}"


HEAD = ("target", "row", "metric", "head/base ratio [interval]", "apart", "confirmation", "artifact")


def _table(rows: list[tuple[CompareDoc, ComparedRow]], url_base: str | None) -> list[str]:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for doc, row in rows:
        label = " / ".join(x for x in (row.table, row.shape, row.name) if x)
        metric = row.metric if row.stat in (None, "median") else f"{row.stat} {row.metric}"
        arrow = {"higher": " ↑", "lower": " ↓"}.get(row.direction or "", "")
        cells = (
            _cell(doc.target or "-"),
            _cell(label),
            _cell(metric) + arrow,
            _ratio(row),
            f"{change(row):.1%}",
            confirmation(row),
            artifact_link(doc.artifacts.get("head"), url_base),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def section(
    title: str, rows: list[tuple[CompareDoc, ComparedRow]], url_base: str | None, fold: bool = False
) -> list[str]:
    """A heading, the first screenful of rows, the rest (or, with ``fold``, all) in ``<details>``."""
    if not rows:
        return []
    shown = [] if fold else rows[:SCREENFUL]
    rest = rows[len(shown) :]
    out = [f"### {title} ({len(rows)})", ""]
    if shown:
        out += _table(shown, url_base) + [""]
    if rest:
        more = f"{len(rest)} more" if shown else f"all {len(rest)}"
        out += [f"<details><summary>{more} ({title.lower()})</summary>", ""] + _table(rest, url_base)
        out += ["", "</details>", ""]
    return out


def _of_call(docs: list[CompareDoc], call: str) -> list[tuple[CompareDoc, ComparedRow]]:
    rows = [(d, r) for d in docs for r in d.pairs if r.call == call]
    return sorted(rows, key=lambda dr: (dr[1].confirmed is not True, -change(dr[1])))  # confirmed, then worst


# the start of a compare's note that the machine changed between its sides (compare/identity.py's
# CHANGE_NOTE_START: reporting reads the JSON, not the compare package)
MACHINE_CHANGES = ("the driver changed from ", "the GPU firmware (VBIOS) changed from ")


def machine_changes(doc: CompareDoc) -> list[str]:
    """The compare's notes that the driver or firmware changed between its sides: said with its rows, so a
    step there is not read as a commit's."""
    return [n for n in doc.notes if n.startswith(MACHINE_CHANGES)]


def _compares(docs: list[CompareDoc]) -> list[str]:
    lines = []
    for doc in docs:
        commits = doc.commits
        span = (
            f"{(commits.get('base') or '?')[:12]}..{(commits.get('head') or '?')[:12]}"
            if commits.get("base") or commits.get("head")
            else "commits not recorded"
        )
        base = md.text(doc.artifacts.get("base", "?"))
        lines.append(
            f"- {md.code(doc.target or '?', in_table=False)}: {md.text(span)}, base {base}, {len(doc.pairs)} row(s)"
        )
        lines += [f"  - :warning: {_cell(n)}" for n in machine_changes(doc)]
    return lines


def pr_comment(docs: list[CompareDoc], url_base: str | None = None) -> str:
    regressed, improved = _of_call(docs, REGRESSED), _of_call(docs, IMPROVED)
    inconclusive = _of_call(docs, INCONCLUSIVE)
    confirmed = sum(r.confirmed is True for _, r in regressed)
    total = sum(len(d.pairs) for d in docs)
    others = total - len(regressed) - len(improved) - len(inconclusive)
    level = f"{round(docs[0].rule.confidence * 100, 6):g}%" if docs else "95%"
    lines = [
        MARKER,
        "## gpuverify: "
        + (f"{len(regressed)} regressed ({confirmed} confirmed)" if regressed else "no regression")
        + f", {len(improved)} improved",
        "",
        f"{total} row(s) compared: {len(regressed)} regressed, {len(improved)} improved, "
        f"{len(inconclusive)} could not be told, {others} same or not compared. The ratio is head / base "
        f"with its {level} interval; confirmation says whether an A/B of the two commits re-measured a row "
        "(`gpuverify compare --confirm`).",
        "",
        *_compares(docs),
        "",
    ]
    lines += section("Regressions", regressed, url_base)
    lines += section("Improvements", improved, url_base)
    lines += section("Could not tell", inconclusive, url_base, fold=True)
    return "\n".join(lines).rstrip() + "\n"


def issue_body(docs: list[CompareDoc], url_base: str | None = None, run_url: str | None = None) -> str | None:
    """The title line, a blank line, then the body: the confirmed regressions of ``docs``; None when
    there is none."""
    rows = [(d, r) for d, r in _of_call(docs, REGRESSED) if r.confirmed is True]
    if not rows:
        return None
    targets = list(dict.fromkeys(d.target or "?" for d, _ in rows))
    heads = list(dict.fromkeys((d.commits.get("head") or "?")[:12] for d, _ in rows))
    title = (
        f"Perf regression: {len(rows)} row(s) of {', '.join(targets[:3])}"
        + (f" and {len(targets) - 3} more" if len(targets) > 3 else "")
        + f" at {', '.join(heads)}"
    )
    lines = [title, "", "Confirmed by an A/B of the two commits on one GPU (`gpuverify compare --confirm`).", ""]
    lines += [f"Run: {run_url}", ""] if run_url else []
    lines += ["Commit range (the regression landed in it):", ""]
    for doc in [d for d in docs if any(x is d for x, _ in rows)]:
        base, head = doc.commits.get("base") or "?", doc.commits.get("head") or "?"
        log = f"git log --first-parent {base[:12]}..{head[:12]}"
        lines.append(
            f"- {md.code(doc.target or '?', in_table=False)}: {md.code(f'{base}..{head}', in_table=False)} "
            f"({md.code(log, in_table=False)}), artifact {artifact_link(doc.artifacts.get('head'), url_base)}, "
            f"base {md.text(doc.artifacts.get('base', '?'))}"
        )
        lines += [f"  - :warning: {_cell(n)}" for n in machine_changes(doc)]
    lines += [""] + section("Regressions", rows, url_base)
    return "\n".join(lines).rstrip() + "\n"

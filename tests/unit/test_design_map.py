"""docs/design.md is the package's map: it names every room (each folder with an ``__init__.py`` and
each top-level module) by its backticked name, so a room added without a line there fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_gpuverify"
DESIGN = ROOT / "docs" / "design.md"


def rooms() -> list[str]:
    folders = [f"{p.parent.name}/" for p in PACKAGE.glob("*/__init__.py")]
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    return sorted(folders + modules)


def missing_from(text: str) -> list[str]:
    return [room for room in rooms() if f"`{room}`" not in text]


def test_the_package_has_the_rooms_the_map_test_reads():
    # guards the glob itself: a moved package or a changed layout would make the next test vacuous
    found = rooms()
    assert "engine/" in found and "plugin.py" in found and len(found) >= 10, found


def test_design_md_names_every_folder_and_top_level_module():
    missing = missing_from(DESIGN.read_text(encoding="utf-8"))
    assert not missing, (
        f"docs/design.md does not name {', '.join(missing)}. Fix: add a row for each (its backticked name and "
        "what it holds) to the table of its layer or to 'The pytest face'."
    )


def test_a_room_without_a_line_is_found():
    # the same check over the map with one room's name taken out: it finds that room, and only it more
    text = DESIGN.read_text(encoding="utf-8")
    assert missing_from(text.replace("`engine/`", "engine")) == sorted({*missing_from(text), "engine/"})


DOC_POINTER = re.compile(r'docs/([\w-]+\.md)(?:,\s+"([^"]+)")?')


def test_the_docs_pages_and_sections_the_package_points_at_exist():
    # comments say where a rule is written down: a page of docs/ (which mkdocs builds) and its section
    seen, broken = 0, []
    for module in sorted(PACKAGE.rglob("*.py")):
        for page, section in DOC_POINTER.findall(module.read_text(encoding="utf-8")):
            seen += 1
            section = " ".join(section.split())  # a docstring may wrap it
            doc = ROOT / "docs" / page
            headings = re.findall(r"^#+ (.+)$", doc.read_text(encoding="utf-8"), re.M) if doc.is_file() else None
            if headings is None or (section and section not in headings):
                broken.append(f"{module.relative_to(ROOT)}: docs/{page}" + (f', "{section}"' if section else ""))
    assert seen >= 5, "no pointers found: the pattern no longer matches how the package cites its docs"
    assert not broken, "pointers to no such page or section: " + "; ".join(broken)

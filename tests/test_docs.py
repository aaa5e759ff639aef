"""Docs that CI holds to the code: every FUNES_* variable the package reads has a row in README's table."""

from __future__ import annotations

import re

from conftest import REPO

_READ = re.compile(r"\b(FUNES_[A-Z0-9_]+)\b")


def _variables_read() -> set[str]:
    found: set[str] = set()
    for path in (REPO / "pipeline").rglob("*.py"):
        found |= set(_READ.findall(path.read_text(encoding="utf-8")))
    return found


def _documented() -> set[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    return {m for line in section.splitlines() if line.startswith("| `") for m in _READ.findall(line.split("|")[1])}


def test_every_funes_variable_has_a_readme_row():
    read = _variables_read()
    assert {"FUNES_HOME", "FUNES_EMBED_MODEL", "FUNES_KINGFISHER"} <= read  # the scan finds real reads
    missing = sorted(read - _documented())
    assert not missing, f"FUNES_* variables read in pipeline/ without a row in README's configuration table: {missing}"


def test_the_table_documents_nothing_the_code_does_not_read():
    assert not sorted(_documented() - _variables_read())

"""`.ci/run` (the CI entry point) runs `make check` and `make test` and fails when either fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO


def _ci(tmp_path, check: int, test: int) -> subprocess.CompletedProcess:
    """The real script in a scratch tree whose Makefile records each target and exits as told."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "Makefile").write_text(
        f"check:\n\t@echo check >> ran.txt; exit {check}\ntest:\n\t@echo test >> ran.txt; exit {test}\n",
        encoding="utf-8",
    )
    return subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("check", "test", "ok"), [(0, 0, True), (1, 0, False), (0, 1, False), (1, 1, False)])
def test_ci_runs_both_and_fails_when_either_fails(tmp_path, check, test, ok):
    out = _ci(tmp_path, check, test)
    assert (out.returncode == 0) is ok, out.stderr
    assert (tmp_path / "ran.txt").read_text().split() == ["check", "test"]  # a failed check still runs the suite


def test_every_test_runs_in_an_isolated_home(tmp_path):
    """conftest's funes_home is autouse: a test that does not ask for it still cannot reach ~/.funes."""
    from funes import paths

    assert Path.home() == tmp_path / "home" and paths.home() == tmp_path / "home" / ".funes"


def test_make_check_runs_every_rule():
    targets = subprocess.run(["make", "-n", "check"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for tool in ("ruff format --check", "ruff check", "mypy", "lint-imports", "tests/test_cli_light.py"):
        assert tool in targets, tool

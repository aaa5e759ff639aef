"""The wheel users install: built from this tree, installed (not editable) into a fresh venv, and run.

No network: the wheel is built without build isolation, installed with --no-deps, and the fresh
venv sees the dependencies through a path entry to this venv's site-packages (a plain path line,
so this venv's editable-install hook is not run and only the installed wheel provides `funes`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow
_NOT_SOURCE = (
    ".git",
    ".venv",
    ".agent-clis",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    "out",
    ".funes-sample",
)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """bin/ of a fresh venv holding the funes wheel built from this tree."""
    tmp = tmp_path_factory.mktemp("wheel")
    # build from a copy of the tree: an in-tree build would reuse build/lib, stale files included
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(src), "-w", str(tmp)])
    (wheel,) = tmp.glob("funes-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        shipped = {n for n in zf.namelist() if n.startswith("funes/") and n.endswith(".py")}
    tree = {p.relative_to(REPO / "pipeline").as_posix() for p in (REPO / "pipeline" / "funes").rglob("*.py")}
    assert shipped == tree  # every module of the tree, and nothing stale
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    target = venv / "bin" / "python"
    site = _run([str(target), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    (Path(site) / "deps-of-the-test-venv.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    _run([sys.executable, "-m", "pip", "--python", str(target), "install", "-q", "--no-deps", "--no-index", str(wheel)])
    return venv / "bin"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(home), FUNES_HOME=str(home / ".funes"), HF_HUB_OFFLINE="1", FUNES_RERANK="off")
    return env


def test_installed_wheel_indexes_the_samples_and_recalls(installed, funes_home, tmp_path):
    env = _env(funes_home.parent)
    where = _run(
        [str(installed / "python"), "-c", "import funes.paths as p; print(p.__file__, p.schemas_dir(), p.cards_dir())"],
        env=env,
        cwd=tmp_path,
    )
    module, schemas, cards = where.stdout.split()
    assert module.startswith(str(installed.parent)), module  # the installed copy, not this checkout
    assert Path(schemas).is_relative_to(installed.parent) and (Path(schemas) / "chunks.json").is_file()
    assert Path(cards).is_relative_to(installed.parent) and (Path(cards) / "README.md").is_file()
    assert "recall" in _run([str(installed / "funes"), "--help"], env=env, cwd=tmp_path).stdout
    index = _run([str(installed / "funes"), "index", "--auto", "--yes"], env=env, cwd=tmp_path)
    assert "bundled sample sessions" in index.stdout
    recall = _run([str(installed / "funes"), "recall", "streaming parser", "-k", "2"], env=env, cwd=tmp_path)
    assert "→ get " in recall.stdout and "--memory local" in recall.stdout

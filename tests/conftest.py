"""Shared fixtures: an isolated FUNES_HOME/HOME for every test (autouse) and the optional ../shared data."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# ONNX exports of the models are derived and keyed by weights sha: build them once per machine,
# not once per test (every test gets a fresh HOME, which would otherwise re-export each time)
os.environ.setdefault("FUNES_MODEL_CACHE", str(Path(tempfile.gettempdir()) / f"funes-test-models-{os.getuid()}"))

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def funes_home(tmp_path, monkeypatch) -> Path:
    """An empty FUNES_HOME and HOME for every test (autouse), so none can reach the developer's real sessions."""
    home = tmp_path / "home"
    home.mkdir()
    fh = home / ".funes"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FUNES_HOME", str(fh))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return fh


@pytest.fixture
def corpus() -> Path:
    """../shared/corpus, or skip cleanly when the shared data is not beside the repo."""
    path = SHARED / "corpus"
    if not path.is_dir():
        pytest.skip("../shared/corpus is not present")
    return path


@pytest.fixture
def benchdata() -> Path:
    path = SHARED / "benchdata"
    if not path.is_dir():
        pytest.skip("../shared/benchdata is not present")
    return path


def subprocess_env(funes_home: Path, **extra: str) -> dict[str, str]:
    """Environment for running the real `funes` console script in a subprocess."""
    env = dict(os.environ)
    env.update({"FUNES_HOME": str(funes_home), "HOME": str(funes_home.parent), "HF_HUB_OFFLINE": "1"})
    env.update(extra)
    return env
